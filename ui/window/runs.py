"""Run control in the window: send, stop (Esc), regenerate, edit, branches, approvals, and the
bridge's events on their way to the chat."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from ui.window.asked import show_asked, waits_for_its_call

if TYPE_CHECKING:
    import asyncio

    from ui.chat.composer.composer import Composer
    from ui.chat.view.chat import ChatView, UserMessage
    from ui.services import Services
    from ui.widgets.palette import CommandPalette
    from workspace import events as ev
    from workspace.approval import ApprovalDecision, ApprovalRequest


class Runs(QObject):
    """What the composer, the chat's buttons and the Thread menu do to runs."""

    #: A run ended (its terminal event): the status bar says how, after the chat.
    ended = Signal(object)

    def __init__(self, services: Services) -> None:
        super().__init__(services.shell)
        self.services = services
        #: The review note put in front of a sent message, by its turn id (the Changes dock's, once made).
        self.review_note: Callable[[str | None], str | None] = lambda _turn_id: None

    def set_review_notes(self, note_for: Callable[[str | None], str | None]) -> None:
        """Where the review notes come from (the Changes dock, once made)."""
        self.review_note = note_for

    def attach(self, *, composer: Composer, chat: ChatView, palette: CommandPalette) -> None:
        """The widgets it works on: the message box, the chat (its presenter shows the runs), the palette."""
        self.composer, self.chat, self.palette = composer, chat, palette

    def follow(self) -> None:
        """The bridge's events to the chat; the composer's and the chat's requests to the session."""
        s, chat, composer = self.services, self.chat, self.composer
        b, c = s.bridge, s.session
        # The chat shows what its presenter makes of the events; an approval goes to it with the event that asks it.
        b.view_event.connect(lambda event: show_asked(chat, event, c.waiting_approvals))
        c.run_resumed.connect(chat.presenter.follow_live)  # a run that went on while its thread was not open
        b.usage_reported.connect(c.on_usage_event)
        b.run_ended.connect(self.on_run_ended)
        b.running_changed.connect(composer.set_running)
        c.approval_needed.connect(self.on_approval_needed)
        c.approvals_reshown.connect(self.on_approvals_reshown)
        c.problem.connect(lambda text: s.notices.banner(text))
        c.notice.connect(lambda text: s.notices.toast(text))
        composer.send_requested.connect(self.send)
        composer.stop_requested.connect(c.stop)
        # Work delegated in the background that goes on after its run: Stop stays at hand, and its lanes say so.
        c.background_changed.connect(self.sync_background)
        c.thread_opened.connect(lambda _session: self.sync_background())
        c.delegations_stopped.connect(self.on_delegations_stopped)
        chat.edit_submitted.connect(c.edit_and_resend)
        chat.regenerate_requested.connect(c.regenerate)
        chat.continue_requested.connect(self.continue_answer)
        chat.branch_requested.connect(c.switch_branch)
        chat.example_clicked.connect(self.send)
        chat.keyboard_released.connect(composer.focus)  # an approval answered: typing goes to the message box

    def sync_background(self) -> None:
        """The message box's button stops the open thread's background work while it runs and the box is empty."""
        c = self.services.session
        self.composer.set_background(bool(c.delegations_running(c.thread_id)))

    def on_delegations_stopped(self, thread_id: str, run_ids: list[str], reason: str) -> None:
        """Stop (or deleting the thread) stopped what a thread's robots delegated: in the open thread, their lanes
        say so, with ``reason``."""
        if thread_id == self.services.session.thread_id:
            self.chat.presenter.delegations_stopped(run_ids, reason=reason)

    # -- the user's commands ---------------------------------------------------------------------------
    def send(self, text: str) -> None:
        c = self.services.session
        if c.running:
            self.services.notices.toast("A run is in progress: press Esc to stop it first.")
            self.composer.set_text(text)
            return
        attachments = self.composer.attachments()
        problem = c.attachment_problem(attachments)
        if problem:  # a model that cannot see the images: nothing is sent, nothing is lost
            self.services.notices.banner(problem)
            self.composer.set_text(text)
            return
        presenter = self.chat.presenter
        if c.session is None:
            self.chat.clear()
        turn = presenter.add_user(text)
        if not c.send(text, attachments=attachments):
            presenter.remove_turn(turn)  # nothing was sent: the text goes back to the box (the chips stay)
            self.composer.set_text(text)
            return
        self.composer.clear_attachments()
        turn_id = getattr(c.last_run, "turn_id", None)
        # the review outcome that went in front of the message shows above it
        presenter.set_user(turn, turn_id=turn_id, note=self.review_note(turn_id))
        # The thread list shows the thread on top once the run is under way (on_running_changed): the
        # message goes to the model first.

    def continue_answer(self) -> None:
        """The Continue of an answer cut off at the token limit: a new turn asks the model to go on."""
        c = self.services.session
        if c.running:
            self.services.notices.toast("A run is in progress: press Esc to stop it first.")
            return
        from workspace.agent import CONTINUE_PROMPT

        presenter = self.chat.presenter
        turn = presenter.add_user(CONTINUE_PROMPT)
        if not c.continue_():
            presenter.remove_turn(turn)
            return
        presenter.set_user(turn, turn_id=getattr(c.last_run, "turn_id", None))

    def escape(self) -> None:
        """Esc: close the palette or an edit box first; otherwise stop the run, and what the thread's robots
        delegated in the background (still going after its run ended, too)."""
        c = self.services.session
        if self.palette.isVisible():
            self.palette.hide()
            return
        if c.running or c.pending_approvals:
            c.stop()  # the run, and what its robots delegated in the background
            return
        for msg in self.chat.user_messages():
            if msg.editor is not None:
                msg._edit_finish(False)
                return
        if c.delegations_running(c.thread_id):
            c.stop()

    def last_user(self) -> UserMessage | None:
        """The last user message with a stored turn."""
        users = [m for m in self.chat.user_messages() if m.turn_id]
        return users[-1] if users else None

    def regenerate_last(self) -> None:
        last = self.last_user()
        if last is not None and last.turn_id:
            self.services.session.regenerate(last.turn_id)

    def copy_last_answer(self) -> str:
        """Put the last answer's Markdown on the clipboard (and return it; "" when there is none)."""
        from PySide6.QtGui import QGuiApplication

        for turn in reversed(self.chat.presenter.state.turns):
            for run in reversed(turn.top_runs):
                text = run.answer_text
                if text.strip():
                    QGuiApplication.clipboard().setText(text)
                    self.services.notices.toast("Copied the answer as Markdown.", seconds=3)
                    return text
        self.services.notices.toast("No answer to copy yet.", seconds=3)
        return ""

    def edit_last(self) -> None:
        last = self.last_user()
        if last is not None:
            self.chat.ensureWidgetVisible(last)
            last.begin_edit()

    def branch_last(self, direction: int) -> None:
        forked = [m for m in self.chat.user_messages() if m.sibling_count > 1 and m.turn_id]
        if forked:
            self.services.session.switch_branch(forked[-1].turn_id or "", direction)

    def focus_approval(self) -> bool:
        """Scroll to the open thread's first approval waiting and give it the keyboard (False: none shows)."""
        chat = self.chat
        panel = chat.pending_approval()
        if panel is not None:
            chat.ensureWidgetVisible(panel)
            panel.setFocus()
        return panel is not None

    # -- from the controller and the bridge ------------------------------------------------------------
    def on_approval_needed(self, request: ApprovalRequest, future: asyncio.Future[ApprovalDecision]) -> None:
        c = self.services.session
        if c.approval_thread(request) not in (None, c.thread_id):
            return  # asked in a thread that is not open: it waits there (Ctrl+J goes to it)
        if waits_for_its_call(self.chat, request, streaming=c.running):
            return  # the run's events bring its call, then the event that asks it (ui.window.asked)
        self.chat.ask_approval(request, future)

    def on_approvals_reshown(self, waiting: list[tuple[ApprovalRequest, asyncio.Future[ApprovalDecision]]]) -> None:
        """A thread opened with approvals waiting: their cards, in the stored tool calls (or the run's, as it
        goes on live)."""
        for request, future in waiting:
            self.on_approval_needed(request, future)

    def on_run_ended(self, event: ev.TerminalEvent) -> None:
        self.ended.emit(event)
        # What still waits in the thread is not in a stream the chat follows: its cards, from the requests.
        c = self.services.session
        for _thread, request, future in c.waiting_approvals(c.thread_id) if c.thread_id is not None else []:
            self.chat.ask_approval(request, future)
        # Sibling counts and turn ids of the last user message (a fork shows "‹ 2/2 ›").
        session = self.services.session.session
        presenter = self.chat.presenter
        last = presenter.last_user_turn()
        if session is not None and last is not None:
            place: tuple[str, int, int] | None
            try:  # the turn's place alone, not the branch's events (the thread may have thousands of turns)
                place = session.current_turn_place()
            except Exception:
                place = None
            if place is not None:
                turn_id, index, count = place
                presenter.set_user(last, turn_id=turn_id, sibling_index=index, sibling_count=count)
