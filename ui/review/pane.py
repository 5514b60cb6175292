"""The inspector's Changes dock: the current thread's proposed changes, reviewed before anything is written.

File list with counts, accept / reject per file or all, a unified diff of the selected
file (the same keys as the full review: ``]c`` ``[c`` ``a`` ``r`` ``e`` ``u``), Apply (off
the event loop), the three versions of a conflicting file with Merge / Overwrite / Skip,
Undo / Redo of applied changes (restores are undoable too), and "All changes in this
thread" — the net diff since the thread's first change. "Open review" shows the same
review full size (:class:`~ui.review.window.ReviewWindow`).

The pane follows the controller: the session's change set is bound when a thread opens
and when a run proposes changes. It never touches the chat: what the chat's change cards
show (a decision, the composed files, an undo or redo) leaves as its signals, and the
chat's owner applies them (:class:`ui.window.change_cards.ChangeCards`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.review.conflict import ConflictView
from ui.review.files import file_list
from ui.review.memory_writes import MemoryWritesBox
from ui.review.model import ChangeActions, ChangeReviewModel
from ui.review.pane_actions import ChangesPaneActions
from ui.review.verify import VerifyFailedQuestion, VerifyStrip
from ui.review.view import DiffView
from ui.review.window import (
    ApplyQuestion,
    ReviewWindow,
    segmented,
    summary_text,
)
from ui.widgets.common import ElidedLabel
from ui.widgets.flow import FlowRow
from ui.widgets.staged import StagedBuild
from workspace.sandbox import display_path

if TYPE_CHECKING:
    from ui.controller import Controller
    from ui.services import DockContext
    from workspace.changes import ChangeSet, Conflict, FileChange, RestoreResult
    from workspace.session import ThreadSession

MODE_NOTES = {
    "review": "Every change waits for your review before it is written.",
    "auto": "Auto-apply: changes are written as the robot makes them (undo below).",
    "readonly": "Read-only: robots cannot change files (Settings › File changes).",
}


class ChangesPane(ChangesPaneActions, StagedBuild):
    """The Changes dock's widget (registered as ``changes``)."""

    #: A ChangeDecided event of an apply made here (the chat's change card shows it).
    decided = Signal(object)
    #: A pending change set's files as this pane counts them: change set id, the files' summaries with
    #: their "pending", "accepted" and "rejected" hunk counts (the chat's pending card lists them).
    files_counted = Signal(str, list)
    #: A message for the window's toast (the pane's own line says it too).
    notice = Signal(str)
    #: The number of hunks waiting for a decision changed (the status bar's badge shows it).
    pending_changed = Signal(int)

    def __init__(self, controller: Controller, parent: QWidget | None = None, *, staged: bool = False) -> None:
        """``staged``: made in parts, the first now and the rest by :meth:`build_steps` (a start-up step each, so
        that none holds the window more than a frame; the pane shows and counts the changes once they are done);
        else whole."""
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.controller = controller
        self.model = ChangeReviewModel(self)
        self.commands = ChangeActions(lambda: self.controller.session, controller.tasks, self)
        self.review_window: ReviewWindow | None = None
        #: The question Apply asked last (hunks were still undecided), or None.
        self.apply_question: ApplyQuestion | None = None
        #: What Apply asked last when the accepted hunks failed the verify command, or None.
        self.verify_question: VerifyFailedQuestion | None = None
        self._verify_thread: str | None = None
        #: Change sets seen in this window, by id (a card may ask for an earlier one).
        self._sets: dict[str, ChangeSet] = {}
        self._showing_net = False
        self._restore_refused: tuple[RestoreResult, str] | None = None
        self._pending_shown = -1
        #: Change sets whose written changes were all undone (from the thread's change history).
        self.undone_sets: set[str] = set()
        self._start_build(staged=staged)

    # -- construction ---------------------------------------------------------------------------------
    def _construct(self) -> Iterator[None]:
        controller = self.controller
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        self._build_top(layout)
        yield
        self._build_actions(layout)
        yield
        splitter = self._build_files(layout)
        yield
        self._build_diff(splitter)
        yield
        self._build_history(layout)
        self.memory_writes.set_pending(controller.pending_memory_writes())
        controller.memory_write_proposed.connect(self.memory_writes.add)
        controller.memory_write_proposed.connect(lambda _pending: self._refresh())
        self.memory_writes.decided.connect(lambda _pending: controller.learnt_changed.emit())
        self.memory_writes.decided.connect(lambda _pending: self._refresh())
        self.memory_writes.notice.connect(self.notice)
        self.setFocusProxy(self.view)  # its shortcut goes to the diff: a, r, e, u, ]c, [c, Ctrl+Enter applies
        self._connect()
        self.sync()
        yield  # (the pane is whole: what made it in steps goes on in a step of its own)

    def _build_top(self, layout: QVBoxLayout) -> None:
        """The title, the summary, the mode and the scope."""
        c = theme.colors()
        top = QHBoxLayout()
        top.setSpacing(6)
        # The title ends in "…" when the dock is narrow; the summary wraps across the whole pane below it.
        self.title = ElidedLabel("Changes", self, min_chars=7, tooltip=True)
        self.title.setObjectName("PaneTitle")
        self.summary = QLabel("", self)
        self.summary.setObjectName("Muted")
        self.summary.setWordWrap(True)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        top.addWidget(self.title, 1)
        self.open_button = QPushButton("Open review", self)
        self.open_button.setIcon(theme.icon("diff", c.muted, 16))
        self.open_button.setToolTip("Open the full-size review: file list, unified or side by side")
        self.open_button.clicked.connect(lambda: self.open_review())
        top.addWidget(self.open_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(top)
        layout.addWidget(self.summary)

        self.mode_note = QLabel("", self)
        self.mode_note.setObjectName("ModeNote")
        self.mode_note.setWordWrap(True)
        layout.addWidget(self.mode_note)

        seg, self.scope = segmented(self, ("Proposed", "Whole thread"))
        self.scope.button(1).setToolTip("All changes in this thread: the net diff since its first change")
        self.scope.idClicked.connect(lambda i: self.show_net(i == 1))
        layout.addWidget(seg)

    def _build_actions(self, layout: QVBoxLayout) -> None:
        """The buttons for every change, the memory writes and the verify strip."""
        bar = FlowRow(spacing=6)  # the buttons wrap onto two rows in a narrow dock, never cut
        self.reject_all_button = QPushButton("Reject all", self)
        self.reject_all_button.setObjectName("DangerButton")
        self.accept_all_button = QPushButton("Accept all", self)
        self.apply_button = QPushButton("Apply", self)
        self.apply_button.setObjectName("PrimaryButton")
        self.apply_button.setToolTip("Write the accepted hunks; with hunks still undecided it asks first")
        self.reject_all_button.clicked.connect(lambda: self.model.reject_all())
        self.accept_all_button.clicked.connect(lambda: self.model.accept_all())
        self.apply_button.clicked.connect(self.apply)
        bar.addWidget(self.reject_all_button)
        bar.addWidget(self.accept_all_button)
        bar.addWidget(self.apply_button)
        layout.addLayout(bar)
        # Memory writes a robot proposed (review.memory: ask), reviewed beside the files.
        self.memory_writes = MemoryWritesBox(self)
        layout.addWidget(self.memory_writes)

        self.verify_strip = VerifyStrip(self)
        layout.addWidget(self.verify_strip)

    def _build_files(self, layout: QVBoxLayout) -> QSplitter:
        """The files, with the buttons for the selected one, in the splitter the diff goes below them in."""
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        files_box = QWidget(splitter)
        fl = QVBoxLayout(files_box)
        fl.setContentsMargins(0, 0, 0, 0)
        fl.setSpacing(4)
        self.files = file_list(self.model, files_box)
        fl.addWidget(self.files, 1)
        file_row = FlowRow(spacing=6)
        self.file_label = ElidedLabel("", files_box, tooltip=True)
        self.file_label.setObjectName("Muted")
        self.file_label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        file_row.addWidget(self.file_label)
        self.reject_file_button = QPushButton("Reject file", files_box)
        self.accept_file_button = QPushButton("Accept file", files_box)
        self.reject_file_button.clicked.connect(self._reject_file)
        self.accept_file_button.clicked.connect(self._accept_file)
        file_row.addWidget(self.reject_file_button)
        file_row.addWidget(self.accept_file_button)
        fl.addLayout(file_row)
        splitter.addWidget(files_box)
        layout.addWidget(splitter, 1)
        return splitter

    def _build_diff(self, splitter: QSplitter) -> None:
        """The diff, below the files."""
        self.stack = QStackedWidget(splitter)
        self.view = DiffView(self.model, self.stack)
        self.view.placeholder = "No proposed changes.\n\nWhen a robot edits files in the opened folder, its " \
                                "changes wait here for your review."
        self._conflicts: ConflictView | None = None  # made when first needed (see conflicts)
        self.stack.addWidget(self.view)
        # The three versions of a conflict need room; in a narrow or short dock they scroll and shrink
        # rather than push the dock (and the window) past the screen. The review window has room.
        self.stack.setMinimumSize(80, 80)
        splitter.addWidget(self.stack)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([170, 420])

    def _build_history(self, layout: QVBoxLayout) -> None:
        """The pane's message line and the history bar (undo, redo)."""
        self.message = QLabel("", self)
        self.message.setObjectName("PaneMessage")
        self.message.setWordWrap(True)
        self.message.setVisible(False)
        layout.addWidget(self.message)

        history = QFrame(self)
        history.setObjectName("HistoryBar")
        hl = QHBoxLayout(history)
        hl.setContentsMargins(0, 4, 0, 0)
        hl.setSpacing(6)
        self.undo_button = QPushButton("Undo", self)
        self.redo_button = QPushButton("Redo", self)
        self.undo_button.clicked.connect(lambda: self.commands.undo())
        self.redo_button.clicked.connect(lambda: self.commands.redo())
        self.history_label = QLabel("", self)
        self.history_label.setObjectName("Muted")
        self.history_label.setWordWrap(True)
        hl.addWidget(self.undo_button)
        hl.addWidget(self.redo_button)
        hl.addWidget(self.history_label, 1)
        layout.addWidget(history)

    @property
    def conflicts(self) -> ConflictView:
        """The three versions of each conflicting file, with Merge / Overwrite / Skip: made the first time a
        conflict shows (two more diff views; building them with the pane held up the window's start)."""
        if self._conflicts is None:
            view = self._conflicts = ConflictView(self.stack)
            self.stack.addWidget(view)
            view.action_requested.connect(self._on_conflict_action)
        return self._conflicts

    def _connect(self) -> None:
        c = self.controller
        c.thread_opened.connect(lambda _s: self.sync())
        bridge = getattr(c, "bridge", None)
        if bridge is not None:
            bridge.change_proposed.connect(lambda _e: self.sync(history=False))
            bridge.change_decided.connect(lambda _e: self._after_settled())
            bridge.run_ended.connect(lambda _e: self.sync())
            bridge.run_started.connect(lambda _e: self.show_message("", "info"))  # "applied…" is old news now
        self.model.changed.connect(self._refresh)
        self.model.source_changed.connect(self._refresh)
        self.model.problem.connect(lambda text: self.show_message(text, "error"))
        self.files.selectionModel().currentRowChanged.connect(self._on_file_selected)
        self.view.apply_requested.connect(self.apply)
        self.view.file_shown.connect(self._on_view_file)
        a = self.commands
        a.busy_changed.connect(lambda _b: self._refresh())
        a.conflicts_found.connect(self.show_conflicts)
        a.conflicts_cleared.connect(self._show_diff)
        a.applied.connect(lambda _r: self._show_diff())
        a.decided.connect(self.decided)
        a.restored.connect(self._on_restored)
        a.restore_refused.connect(self._on_restore_refused)
        a.history_changed.connect(self._on_history)
        a.net_changes_ready.connect(self._on_net_changes)
        a.message.connect(self.show_message)
        a.verify_failed.connect(self._ask_verify_failed)
        self.verify_strip.verify_requested.connect(self.verify_again)
        progress = getattr(c, "verify_progress", None)
        if progress is not None:
            progress.connect(self._on_verify_progress)

    # -- following the controller ---------------------------------------------------------------------
    @property
    def session(self) -> ThreadSession | None:
        return self.controller.session

    def sync(self, *, history: bool = True) -> None:
        """Bind the current session's change set (a run may have started a new one); refresh the history
        (read in a worker thread) unless ``history`` is False (every proposal of a run calls this)."""
        session = self.session
        changes = getattr(session, "changes", None) if session is not None else None
        if changes is not None:
            self._sets[changes.id] = changes
            self._update_card_files(changes)
        if self._showing_net:
            self._refresh()
            return
        shown = self.model.change_set
        if (changes is not None and not changes.files and shown is not None and shown.files
                and shown.thread_id == changes.thread_id):
            # A new run starts a new, empty set: keep showing the last one (settled) until it gets files.
            self.model.refresh()
            if history:
                self.commands.refresh_history()
            self._refresh()
            self._sync_verify()
            return
        if changes is not self.model.change_set or (changes is None and self.model.files):
            self.model.bind(changes)
            self._show_diff()
        else:
            self.model.refresh()
        if history:
            self.commands.refresh_history()
        self._refresh()
        self._sync_verify()

    def _update_card_files(self, changes: ChangeSet | None) -> None:
        """A pending card lists the composed totals (events of parallel calls race) and counts what this
        pane counts: each file's undecided, accepted and rejected hunks."""
        if changes is None:
            return
        files = []
        for fc in changes.pending_files:
            counts = fc.counts()
            files.append({**fc.summary(), "pending": counts["pending"], "accepted": counts["accepted"],
                          "rejected": counts["rejected"]})
        self.files_counted.emit(changes.id, files)

    def _after_settled(self) -> None:
        self.model.refresh()
        self.commands.refresh_history()

    def show_change_set(self, change_set_id: str) -> None:
        """Show a change set (a chat card's "Review changes")."""
        if self._showing_net:
            self._set_scope(net=False)
        changes = self._sets.get(change_set_id)
        session = self.session
        current = getattr(session, "changes", None) if session is not None else None
        if current is not None and current.id == change_set_id:
            changes = current
        folder = getattr(self.controller, "folder", None)
        if changes is not None and folder is not None and Path(changes.folder) != Path(folder):
            text = (f"Those changes wait in {display_path(changes.folder)}: open that folder (File > Open Folder) to review "
                    "them. They are kept until then.")
            self.show_message(text, "info")
            self.notice.emit(text)
            return
        if changes is None:
            text = ("Those changes were settled in an earlier session; “Whole thread” shows what "
                    "the thread changed.")
            self.show_message(text, "info")
            self.notice.emit(text)
            self._set_scope(net=True)
            return
        if changes is not self.model.change_set:
            self.model.bind(changes)
        self._show_diff()
        first = next((h for fc in changes.pending_files for h in fc.hunks if h.status == "pending"), None)
        if first is not None:
            self.view.select_hunk(first.id)
        self.view.setFocus()

    # -- showing ---------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        model = self.model
        if not model.read_only:
            self._update_card_files(model.change_set)
        busy = self.commands.busy
        session = self.session
        folder = getattr(getattr(session, "workspace", None), "folder", None) if session is not None else None
        folder = folder or getattr(self.controller, "folder", None)
        if self._showing_net:
            self.title.setText("All changes in this thread")
        else:
            self.title.setText(model.title if model.change_set is not None else "Changes")
        self.summary.setText(summary_text(model) if (model.files or self._showing_net) else (
            "No folder is open: File > Open Folder (Ctrl+O) lets robots read and propose edits there."
            if folder is None else "No file changes proposed in this thread yet: the memory writes below wait for you."
            if self.memory_writes.rows else "No changes proposed in this thread yet."))
        mode = self._mode()
        self.mode_note.setText(MODE_NOTES.get(mode, ""))
        self.mode_note.setProperty("mode", mode)
        self.mode_note.style().unpolish(self.mode_note)
        self.mode_note.style().polish(self.mode_note)
        decidable = not model.read_only and bool(model.pending_files)
        for b in (self.accept_all_button, self.reject_all_button, self.apply_button):
            b.setEnabled(decidable and not busy)
            b.setVisible(not self._showing_net)
        self.apply_button.setText("Applying…" if busy and decidable else "Apply")
        fc = self.view.fc
        for b in (self.accept_file_button, self.reject_file_button):
            b.setEnabled(model.decidable(fc) and not busy)
            b.setVisible(not self._showing_net)
        self.file_label.setText(self._file_text(fc))
        history = self.commands.history
        self.undo_button.setEnabled(history.undo is not None and not busy)
        self.redo_button.setEnabled(history.redo is not None and not busy)
        self.undo_button.setToolTip(f"Undo: {history.undo.summary}" if history.undo else "Nothing to undo")
        self.redo_button.setToolTip(f"Redo: {history.redo.summary}" if history.redo else "Nothing to redo")
        self.refresh_title()

    def _file_text(self, fc: FileChange | None) -> str:
        if fc is None:
            return ""
        c = fc.counts()
        state = {"applied": " · applied", "undone": " · undone", "rejected": " · not applied",
                 "conflict": " · conflict"}.get(self.model.state_of(fc), "")
        return f"{fc.action} · {c['hunks']} hunk{'s' if c['hunks'] != 1 else ''}{state}"

    def _mode(self) -> str:
        changes = self.model.change_set
        if changes is not None:
            return str(changes.mode)
        try:
            return str(self.controller.config.get("review.mode", "review"))
        except Exception:
            return "review"

    @property
    def pending(self) -> int:
        """Hunks of the proposed changes waiting for a decision."""
        return self.model.counts().pending if not self.model.read_only else 0

    def refresh_title(self) -> None:
        """The dock's tab says how many changes wait ("Changes · 3"); the status bar's badge too."""
        pending = self.pending
        dock = self.parentWidget()
        if isinstance(dock, QDockWidget):
            dock.setWindowTitle(f"Changes · {pending}" if pending else "Changes")
            dock.toggleViewAction().setText("Show Changes")
        if pending != self._pending_shown:
            self._pending_shown = pending
            self.pending_changed.emit(pending)

    def show_message(self, text: str, kind: str = "info") -> None:
        self.message.setText(text)
        self.message.setProperty("kind", kind)
        self.message.style().unpolish(self.message)
        self.message.style().polish(self.message)
        self.message.setVisible(bool(text))

    def _on_file_selected(self, current: QModelIndex | None, _previous: QModelIndex | None = None) -> None:
        row = current.row() if current is not None else -1
        if 0 <= row < self.model.rowCount():
            fc = self.model.file(row)
            if fc is not self.view.fc:
                self.view.show_file(fc)
        self._refresh()

    def _on_view_file(self, file_id: str) -> None:
        row = self.model.row_of(file_id) if file_id else -1
        sel = self.files.selectionModel()
        if row >= 0 and sel.currentIndex().row() != row:
            sel.setCurrentIndex(self.model.index(row), QItemSelectionModel.SelectionFlag.ClearAndSelect)
        self._refresh()

    def _accept_file(self) -> None:
        if self.view.fc is not None:
            self.model.accept_file(self.view.fc.id)

    def _reject_file(self) -> None:
        if self.view.fc is not None:
            self.model.reject_file(self.view.fc.id)

    def _show_diff(self) -> None:
        self.stack.setCurrentWidget(self.view)

    def show_conflicts(self, conflicts: list[Conflict]) -> None:
        self._restore_refused = None
        self.conflicts.set_conflicts(conflicts)
        self.stack.setCurrentWidget(self.conflicts)
        self._raise_dock()

    def _raise_dock(self) -> None:
        dock = self.parentWidget()
        if isinstance(dock, QDockWidget):
            dock.show()
            dock.raise_()

    # -- the thread's net change -------------------------------------------------------------------------
    def _set_scope(self, *, net: bool) -> None:
        button = self.scope.button(1 if net else 0)
        if button is not None and not button.isChecked():
            button.setChecked(True)
        self.show_net(net)

    def show_net(self, on: bool) -> None:
        """Show "All changes in this thread" (the net diff since its first change), or the proposal."""
        if on == self._showing_net:
            if on:
                self.commands.load_net_changes()
            return
        self._showing_net = on
        if on:
            self.model.set_files([], title="All changes in this thread")
            self.view.placeholder = "This thread has not changed any file yet."
            self.commands.load_net_changes()
        else:
            self.view.placeholder = "No proposed changes."
            session = self.session
            self.model.bind(getattr(session, "changes", None) if session is not None else None)
        self._show_diff()
        self._refresh()

    def _on_net_changes(self, files: list[Any]) -> None:
        if self._showing_net:
            self.model.set_files(files, title="All changes in this thread")
            self._refresh()

    # -- the full-size review ---------------------------------------------------------------------------------
    def open_review(self, *, hunk_id: str | None = None) -> ReviewWindow:
        if self.review_window is None:
            self.review_window = ReviewWindow(self.model, self.commands, self.window())
            self.review_window.verify_strip.verify_requested.connect(self.verify_again)
        window = self.review_window
        window.open(hunk_id=hunk_id or (self.view.current_hunk.id if self.view.current_hunk else None))
        self._mirror_verify()
        return window

    def note_for(self, turn_id: str | None) -> str | None:
        """The ``<change-review>`` note the session put in front of a sent message (None: none)."""
        store = getattr(self.controller, "store", None)
        if not turn_id or store is None:
            return None
        from workspace.changes import split_user_message

        try:
            return split_user_message(store.get_turn(turn_id).user_text)[0]
        except Exception:
            return None

    def compare_answers(self) -> ReviewWindow | None:
        """Diff two answers of the thread: the last one and its previous version (regenerated or edited),
        else the two last answers."""
        from ui.review.window import answers_to_compare, compare_window

        found = answers_to_compare(self.session)
        if found is None:
            self.show_message("Compare needs two answers in this thread (regenerate one, or ask again).", "info")
            return None
        old, new, title = found
        window = compare_window(old, new, name="answer.md", title=title, parent=self.window())
        window.show()
        window.raise_()
        return window

    def retheme(self) -> None:
        c = theme.colors()
        self.open_button.setIcon(theme.icon("diff", c.muted, 16))
        self.view.retheme()
        if self._conflicts is not None:
            self._conflicts.retheme()
        self.files.viewport().update()
        if self.review_window is not None:
            self.review_window.retheme()


def make_pane(context: DockContext) -> ChangesPane:
    return ChangesPane(context.services.session, context.parent, staged=True)


__all__ = ["ChangesPane", "make_pane"]
