"""Run control in the window: send, stop (Esc), regenerate, edit, branches, approvals, and the
bridge's events on their way to the chat."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from ui.chat.view.chat import UserMessage
    from ui.main_window import MainWindow
    from workspace import events as ev
    from workspace.approval import ApprovalDecision, ApprovalRequest


class Runs:
    """What the composer, the chat's buttons and the Thread menu do to runs."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window

    def connect(self) -> None:
        w, b, c, chat = self.window, self.window.bridge, self.window.controller, self.window.chat
        b.view_event.connect(chat.presenter.feed)  # the chat shows what its presenter makes of the events
        b.usage_reported.connect(c.on_usage_event)
        b.run_ended.connect(self.on_run_ended)
        b.running_changed.connect(self.on_running_changed)
        c.approval_needed.connect(self.on_approval_needed)
        c.problem.connect(lambda text: w.banner.show_message(text))
        c.notice.connect(lambda text: w.toast.show_message(text))
        w.composer.send_requested.connect(self.send)
        w.composer.stop_requested.connect(c.stop)
        chat.edit_submitted.connect(c.edit_and_resend)
        chat.regenerate_requested.connect(c.regenerate)
        chat.continue_requested.connect(self.continue_answer)
        chat.review_requested.connect(w.docks.review_changes)
        chat.branch_requested.connect(c.switch_branch)
        chat.example_clicked.connect(self.send)
        chat.keyboard_released.connect(w.composer.focus)  # an approval answered: typing goes to the message box
        chat.connect_requested.connect(w.settings_flow.open_settings)

    # -- the user's commands ---------------------------------------------------------------------------
    def send(self, text: str) -> None:
        w, c = self.window, self.window.controller
        if c.running:
            w.toast.show_message("A run is in progress: press Esc to stop it first.")
            w.composer.set_text(text)
            return
        attachments = w.composer.attachments()
        problem = c.attachment_problem(attachments)
        if problem:  # a model that cannot see the images: nothing is sent, nothing is lost
            w.banner.show_message(problem)
            w.composer.set_text(text)
            return
        presenter = w.chat.presenter
        if c.session is None:
            w.chat.clear()
        turn = presenter.add_user(text)
        if not c.send(text, attachments=attachments):
            presenter.remove_turn(turn)  # nothing was sent: the text goes back to the box (the chips stay)
            w.composer.set_text(text)
            return
        w.composer.clear_attachments()
        turn_id = getattr(c.last_run, "turn_id", None)
        pane = w.docks.changes_pane
        # the review outcome that went in front of the message shows above it
        presenter.set_user(turn, turn_id=turn_id, note=pane.note_for(turn_id) if pane is not None else None)
        # The thread list shows the thread on top once the run is under way (on_running_changed): the
        # message goes to the model first.

    def continue_answer(self) -> None:
        """The Continue of an answer cut off at the token limit: a new turn asks the model to go on."""
        w, c = self.window, self.window.controller
        if c.running:
            w.toast.show_message("A run is in progress: press Esc to stop it first.")
            return
        from workspace.agent import CONTINUE_PROMPT

        presenter = w.chat.presenter
        turn = presenter.add_user(CONTINUE_PROMPT)
        if not c.continue_():
            presenter.remove_turn(turn)
            return
        presenter.set_user(turn, turn_id=getattr(c.last_run, "turn_id", None))

    def escape(self) -> None:
        """Esc: close the palette or an edit box first; otherwise stop the run."""
        w, c = self.window, self.window.controller
        if w.command_palette.isVisible():
            w.command_palette.hide()
            return
        if c.running or c.pending_approvals:
            c.stop()
            return
        for msg in w.chat.user_messages():
            if msg.editor is not None:
                msg._edit_finish(False)
                return

    def last_user(self) -> UserMessage | None:
        """The last user message with a stored turn."""
        users = [m for m in self.window.chat.user_messages() if m.turn_id]
        return users[-1] if users else None

    def regenerate_last(self) -> None:
        last = self.last_user()
        if last is not None and last.turn_id:
            self.window.controller.regenerate(last.turn_id)

    def copy_last_answer(self) -> str:
        """Put the last answer's Markdown on the clipboard (and return it; "" when there is none)."""
        from PySide6.QtGui import QGuiApplication

        w = self.window
        for turn in reversed(w.chat.presenter.state.turns):
            for run in reversed(turn.top_runs):
                text = run.answer_text
                if text.strip():
                    QGuiApplication.clipboard().setText(text)
                    w.toast.show_message("Copied the answer as Markdown.", seconds=3)
                    return text
        w.toast.show_message("No answer to copy yet.", seconds=3)
        return ""

    def edit_last(self) -> None:
        last = self.last_user()
        if last is not None:
            self.window.chat.ensureWidgetVisible(last)
            last.begin_edit()

    def branch_last(self, direction: int) -> None:
        forked = [m for m in self.window.chat.user_messages() if m.sibling_count > 1 and m.turn_id]
        if forked:
            self.window.controller.switch_branch(forked[-1].turn_id or "", direction)

    def focus_approval(self) -> None:
        chat = self.window.chat
        panel = chat.pending_approval()
        if panel is not None:
            chat.ensureWidgetVisible(panel)
            panel.setFocus()

    # -- from the controller and the bridge ------------------------------------------------------------
    def on_approval_needed(self, request: ApprovalRequest, future: asyncio.Future[ApprovalDecision]) -> None:
        self.window.chat.ask_approval(request, future)

    def on_run_ended(self, event: ev.TerminalEvent) -> None:
        from workspace import events as ev

        w = self.window
        w.status.set_connection("error" if isinstance(event, ev.RunFailed) else "idle")
        w.status.probe_server(again=True)  # the server may have been started (or stopped) since
        # Sibling counts and turn ids of the last user message (a fork shows "‹ 2/2 ›").
        session = w.controller.session
        presenter = w.chat.presenter
        last = presenter.last_user_turn()
        if session is not None and last is not None:
            turns: list[Any]
            try:
                turns = session.transcript()
            except Exception:
                turns = []
            if turns:
                t = turns[-1]
                presenter.set_user(last, turn_id=t.id, sibling_index=t.sibling_index, sibling_count=t.sibling_count)

    def on_running_changed(self, running: bool) -> None:
        w = self.window
        w.composer.set_running(running)
        if running:
            w.status.connection_state = "running"
        elif w.status.connection_state == "running":
            w.status.connection_state = "idle"
        w.status.update_connection()
        w.commands.update()
        w.robots.update_picker()
        if running:  # a message went out: its thread comes first in the list (a new one appears there)
            w.threads.refresh()
