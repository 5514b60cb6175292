"""What the Changes dock (:class:`~ui.review.pane.ChangesPane`) does: Apply and its questions, conflicts and
refused restores, undo / redo of applied changes and what the history says was undone, and the verify strip
(a verify going or ended, "Verify again", Apply refused by a failed verify)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QStackedWidget, QWidget

from ui.review.conflict import RESTORE_ACTIONS, ConflictView
from ui.review.model import ChangeActions, ChangeReviewModel, HistoryState
from ui.review.verify import VerifyFailedQuestion, VerifyStrip
from ui.review.view import DiffView
from ui.review.window import ApplyQuestion, ReviewWindow, ask_before_apply, resolve_conflict

if TYPE_CHECKING:
    from ui.controller import Controller
    from workspace import events as ev
    from workspace.changes import HistoryEntry, RestoreResult
    from workspace.session import ThreadSession
    from workspace.session.verify import VerifyProgress


class ChangesPaneActions(QWidget):
    """The Changes dock's actions; :class:`~ui.review.pane.ChangesPane` builds the widgets and shows the changes."""

    #: An undo (True) or redo (False) of a change set's written changes settled: change set id,
    #: checkpoint id ("" when unknown), undone.
    undone_changed = Signal(str, str, bool)
    #: The thread's change history as read: whether each applied checkpoint is undone (by its
    #: checkpoint id), and the change sets whose written changes were all undone.
    history_undone = Signal(dict, set)
    #: A verify of the open thread's changes ended (its VerifyFinished): the chat adds its line.
    verified = Signal(object)

    # What the pane makes (its __init__ and _build).
    controller: Controller
    model: ChangeReviewModel
    commands: ChangeActions
    view: DiffView
    stack: QStackedWidget
    history_label: QLabel
    verify_strip: VerifyStrip
    review_window: ReviewWindow | None
    apply_question: ApplyQuestion | None
    verify_question: VerifyFailedQuestion | None
    undone_sets: set[str]
    _verify_thread: str | None
    _showing_net: bool
    _restore_refused: tuple[RestoreResult, str] | None

    if TYPE_CHECKING:  # the pane's own
        @property
        def session(self) -> ThreadSession | None: ...
        @property
        def conflicts(self) -> ConflictView: ...
        def show_message(self, text: str, kind: str = "info") -> None: ...
        def _refresh(self) -> None: ...
        def _show_diff(self) -> None: ...
        def _raise_dock(self) -> None: ...

    # -- actions ---------------------------------------------------------------------------------------
    def apply(self) -> None:
        """Apply (the button, Ctrl+Enter); with hunks still undecided it asks first."""
        if self._showing_net:
            return
        self.show_message("", "info")
        if self.apply_question is not None and self.apply_question.isVisible():
            self.apply_question.raise_()  # asked already (Ctrl+Enter again)
            return
        self.apply_question = ask_before_apply(self, self.model, self.commands, self._go_back)

    def _go_back(self, hunk_id: str) -> None:
        self._show_diff()
        self.view.select_hunk(hunk_id)
        self.view.setFocus()

    def _on_conflict_action(self, action: str, key: str) -> None:
        refused = self._restore_refused
        if refused is not None:
            result, op = refused
            self._restore_refused = None
            self._show_diff()
            if action == "force":
                entry_id = result.entry.id if result.entry is not None else None
                (self.commands.undo if op == "undo" else self.commands.redo)(entry_id, force=True)
            return
        resolve_conflict(self.commands, action, key)

    def _on_restore_refused(self, result: RestoreResult, op: str) -> None:
        self.conflicts.set_conflicts(
            result.conflicts, actions=RESTORE_ACTIONS,
            title=f"<b>Not {'undone' if op == 'undo' else 'redone'}:</b> "
                  f"{len(result.conflicts)} file(s) changed since. Overwriting saves their current state first "
                  "(a checkpoint), so it can be recovered.")
        self._restore_refused = (result, op)
        self.stack.setCurrentWidget(self.conflicts)
        self._raise_dock()

    def _on_restored(self, result: RestoreResult, op: str) -> None:
        entry = result.entry
        if entry is not None and entry.change_set_id:
            self.undone_changed.emit(entry.change_set_id, entry.before or "", op == "undo")
        if self._showing_net:
            self.commands.load_net_changes()

    def undo_from_card(self, change_set_id: str, checkpoint_id: str = "", redo: bool = False) -> None:
        """A change card's Undo / Redo (auto mode writes at once; its card offers to undo)."""
        if checkpoint_id:
            (self.commands.redo if redo else self.commands.undo)(checkpoint_id)
        else:
            self.commands.undo_change_set(change_set_id, redo=redo)

    def _on_history(self, state: HistoryState) -> None:
        applied = [e for e in state.entries if e.state in ("applied", "applying")]
        if state.undo is not None:
            self.history_label.setText(f"Last applied: {state.undo.summary}" if state.undo.summary
                                       else "Last change applied.")
        elif state.redo is not None:
            self.history_label.setText(f"Undone: {state.redo.summary}")
        else:
            self.history_label.setText("Nothing applied in this thread yet." if not state.entries else "")
        self.history_label.setToolTip(f"{len(applied)} applied change set(s) in this thread")
        self._follow_undo(state)
        self._refresh()

    def _follow_undo(self, state: HistoryState) -> None:
        """What the history says was undone shows everywhere: this pane's files and the chat's cards
        (a reopened thread too: the history is kept with the folder's checkpoints)."""
        by_set: dict[str, list[HistoryEntry]] = {}
        for entry in state.entries:
            if entry.change_set_id and entry.kind == "apply" and entry.state != "failed":
                by_set.setdefault(entry.change_set_id, []).append(entry)
        self.undone_sets = {cs for cs, entries in by_set.items() if all(e.state == "undone" for e in entries)}
        shown = self.model.change_set
        self.model.set_undone(shown is not None and shown.id in self.undone_sets)
        by_checkpoint = {e.before: e.state == "undone" for entries in by_set.values() for e in entries}
        self.history_undone.emit(by_checkpoint, set(self.undone_sets))

    # -- verify ------------------------------------------------------------------------------------------------
    def _mirror_verify(self) -> None:
        """The full-size review's strip shows what this one shows."""
        if self.review_window is not None:
            self.review_window.verify_strip.show_like(self.verify_strip)

    def _verify_command(self) -> str | None:
        session = self.session
        setting = getattr(session, "verify_setting", None) if session is not None else None
        if setting is None:
            return None
        try:
            return setting().command
        except Exception:  # a robot file gone or unreadable: no verify shown
            return None

    def _sync_verify(self) -> None:
        """The strip follows the open thread: its verify going or last ended, else the command in force."""
        strip = self.verify_strip
        session = self.session
        command = self._verify_command()
        thread_id = session.thread_id if session is not None else None
        if thread_id != self._verify_thread:
            self._verify_thread = thread_id
            strip.clear()  # another thread's result is not this one's
        if session is None or command is None or self._showing_net:
            strip.clear()
            self._mirror_verify()
            return
        progress = getattr(session, "verifying", None)
        shown = strip.progress
        if progress is not None and progress.thread_id == session.thread_id:
            if progress is not shown:
                strip.show_progress(progress)
        elif strip.result is None and not strip.running:
            strip.show_command(command)
        self._mirror_verify()

    def _on_verify_progress(self, progress: VerifyProgress) -> None:
        session = self.session
        if session is None or progress.thread_id != session.thread_id:
            return  # another thread's verify (it ran on; its result is with that thread)
        if progress.superseded and self.verify_strip.progress is not None and \
                self.verify_strip.progress.started != progress.started and self.verify_strip.running:
            return  # a newer verify already shows
        self.verify_strip.show_progress(progress)
        self._mirror_verify()
        if progress.event is not None:
            self.verified.emit(progress.event)

    def verify_again(self) -> None:
        """"Verify again": on the accepted hunks when some are accepted, else on everything proposed."""
        session = self.session
        if session is None or self.commands.busy:
            return
        subset = "accepted" if self.model.counts().accepted else "proposed"
        try:
            started = session.start_verify(subset)
        except Exception as exc:
            self.show_message(f"Could not verify: {exc}", "error")
            return
        if started is None:
            self.show_message("Nothing to verify: no verify command, or no change waits for review.", "info")

    def _ask_verify_failed(self, event: ev.VerifyFinished) -> None:
        """Apply refused because the accepted hunks failed the verify: ask "Apply anyway" / "Cancel"."""
        self.verify_strip.show_result(event)
        self._mirror_verify()
        parent: QWidget = self.review_window if self.review_window is not None and \
            self.review_window.isVisible() else self
        box = self.verify_question = VerifyFailedQuestion(event, parent)

        def answered(button: object) -> None:
            self.verify_question = None
            if button is box.button_apply:
                self.commands.apply(verify=False)  # with the result shown: the accepted set is what failed
            else:
                self.show_message("Not applied: the accepted hunks failed the verify command. Nothing was written.",
                                  "info")

        box.buttonClicked.connect(answered)
        box.open()
