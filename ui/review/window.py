"""The full-size review: a large window (never a modal ``exec()``) with the file list on the left and
the diff of the selected file, unified or side by side, on the right.

It shares its :class:`~ui.review.model.ChangeReviewModel` with the Changes dock, so a
decision taken in one shows in the other. With a :class:`~ui.review.model.ChangeActions`
it can apply (and resolve conflicts); without, it only shows (a thread's net diff, two
results or answers compared).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QItemSelectionModel, QSize, Qt
from PySide6.QtGui import QCloseEvent, QKeySequence, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui.review.conflict import ConflictView
from ui.review.files import file_list
from ui.review.verify import VerifyStrip
from ui.review.view import DiffView
from ui.screen import size_to_screen
from ui.widgets.eliding import ElidesOnResize, elide_text
from workspace.changes import PENDING

if TYPE_CHECKING:
    from ui.review.model import ChangeActions, ChangeReviewModel
    from workspace.changes import Conflict

#: The review window's size on a big screen; a smaller one gets the share of it the main window would.
PREFERRED_SIZE = QSize(1280, 820)
#: Narrower than this, Previous / Next show only their arrows.
COMPACT_BELOW = 1100
KEY_HINTS = ("]c / [c  next / previous hunk   ·   j / k   ·   a accept   ·   r reject   ·   e edit   ·   "
             "u undo decision   ·   s side by side")


def summary_text(model: ChangeReviewModel) -> str:
    """``3 files · +12 −4 · 7 hunks: 4 pending, 2 accepted, 1 rejected`` (or what settled)."""
    counts = model.counts()
    if model.read_only:
        n = counts.files
        return f"{n} file{'s' if n != 1 else ''} · +{counts.added} −{counts.removed} · {counts.hunks} " \
               f"change{'s' if counts.hunks != 1 else ''}"
    if not counts.files:
        settled = model.files
        if settled:
            applied = sum(1 for f in settled if f.state == "applied")
            if model.undone and applied:
                return (f"Undone: {applied} file{'s' if applied != 1 else ''} back as before these changes "
                        "(Redo writes them again)")
            return f"Settled: {applied} of {len(settled)} file{'s' if len(settled) != 1 else ''} written"
        return "No changes proposed yet"
    n = counts.files
    return (f"{n} file{'s' if n != 1 else ''} · +{counts.added} −{counts.removed} · {counts.hunks} hunk"
            f"{'s' if counts.hunks != 1 else ''}: {counts.pending} pending, {counts.accepted} accepted, "
            f"{counts.rejected} rejected")


def wrapping(label: QLabel) -> QLabel:
    """A word-wrapping label that never widens the window (it takes the width it is given)."""
    policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    policy.setHeightForWidth(True)
    label.setSizePolicy(policy)
    label.setWordWrap(True)
    return label


class StatusLabel(QLabel):
    """The footer's status: shown only while it has a text (empty, it takes no room from the key hints)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.setVisible(False)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setVisible(bool(text))


class TitleLabel(ElidesOnResize, QLabel):
    """The review's title on one line, ending in "…" when the window is narrow (the tooltip has it all)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:
        self._full = text
        self._elide()

    def text(self) -> str:
        return self._full

    def full_width(self) -> int:
        return self.fontMetrics().horizontalAdvance(self._full)

    def _elide(self) -> None:
        shown = elide_text(self.fontMetrics(), self._full, self.width())
        super().setText(shown)
        self.setToolTip(self._full if shown != self._full else "")


def segmented(parent: QWidget, labels: tuple[str, ...], *, checked: int = 0) -> tuple[QFrame, QButtonGroup]:
    frame = QFrame(parent)
    frame.setObjectName("Segmented")
    row = QHBoxLayout(frame)
    row.setContentsMargins(2, 2, 2, 2)
    row.setSpacing(0)
    group = QButtonGroup(frame)
    group.setExclusive(True)
    for i, label in enumerate(labels):
        button = QToolButton(frame)
        button.setObjectName("SegmentButton")
        button.setText(label)
        button.setCheckable(True)
        button.setChecked(i == checked)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        group.addButton(button, i)
        row.addWidget(button)
    return frame, group


class ReviewWindow(QWidget):
    """File list + diff view, full size; Apply when given the change set's commands."""

    def __init__(self, model: ChangeReviewModel, commands: ChangeActions | None = None,
                 parent: QWidget | None = None, *, title: str = "Review changes") -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("ReviewWindow")
        self.setWindowTitle(f"{title} — RobotLab Workspace")
        self.model = model
        self.commands = commands
        #: The question Apply asked last (hunks were still undecided), or None.
        self.apply_question: ApplyQuestion | None = None
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)

        # -- header
        header = QFrame(self)
        header.setObjectName("ReviewHeader")
        hl = QHBoxLayout(header)
        hl.setContentsMargins(16, 10, 12, 10)
        hl.setSpacing(10)
        titles = QVBoxLayout()
        titles.setSpacing(1)
        # Both give way (the title ends in "…", the summary wraps) so the buttons stay on a 1024-wide screen.
        self.title_label = TitleLabel(header)
        self.title_label.setObjectName("ReviewTitle")
        self.summary = wrapping(QLabel("", header))
        self.summary.setObjectName("Muted")
        titles.addWidget(self.title_label)
        titles.addWidget(self.summary)
        hl.addLayout(titles, 1)
        seg, self.layout_group = segmented(header, ("Unified", "Side by side"))
        self.layout_group.idClicked.connect(lambda i: self.view.set_split(i == 1))
        hl.addWidget(seg)
        self.whole_file = QToolButton(header)
        self.whole_file.setObjectName("ToggleButton")
        self.whole_file.setText("Whole file")
        self.whole_file.setCheckable(True)
        self.whole_file.setCursor(Qt.CursorShape.PointingHandCursor)
        self.whole_file.setToolTip("Show every line of the file, not only the lines around each change")
        self.whole_file.toggled.connect(lambda on: self.view.set_whole_file(on))
        hl.addWidget(self.whole_file)
        self.prev_button = QPushButton("↑  Previous", header)
        self.prev_button.setToolTip("Previous hunk ([c or k)")
        self.prev_button.setAccessibleName("Previous hunk")
        self.next_button = QPushButton("↓  Next", header)
        self.next_button.setToolTip("Next hunk (]c or j)")
        self.next_button.setAccessibleName("Next hunk")
        self.prev_button.clicked.connect(lambda: (self.view.prev_hunk(), self.view.setFocus()))
        self.next_button.clicked.connect(lambda: (self.view.next_hunk(), self.view.setFocus()))
        hl.addWidget(self.prev_button)
        hl.addWidget(self.next_button)
        self.reject_all_button = QPushButton("Reject all", header)
        self.reject_all_button.setObjectName("DangerButton")
        self.accept_all_button = QPushButton("Accept all", header)
        self.apply_button = QPushButton("Apply", header)
        self.apply_button.setObjectName("PrimaryButton")
        self.apply_button.setToolTip("Write the accepted hunks (Ctrl+Enter); with hunks still undecided it asks first")
        self.reject_all_button.clicked.connect(lambda: self.model.reject_all())
        self.accept_all_button.clicked.connect(lambda: self.model.accept_all())
        self.apply_button.clicked.connect(self.apply)
        for b in (self.reject_all_button, self.accept_all_button, self.apply_button):
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            hl.addWidget(b)
        outer.addWidget(header)

        # -- body
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.setObjectName("ReviewSplitter")
        left = QWidget(splitter)
        left.setObjectName("ReviewFiles")
        ll = QVBoxLayout(left)
        ll.setContentsMargins(10, 10, 6, 10)
        ll.setSpacing(6)
        files_title = QLabel("FILES", left)
        files_title.setObjectName("SidebarSection")
        ll.addWidget(files_title)
        self.files = file_list(model, left)
        ll.addWidget(self.files, 1)
        file_buttons = QHBoxLayout()
        self.accept_file_button = QPushButton("Accept file", left)
        self.reject_file_button = QPushButton("Reject file", left)
        self.reject_file_button.setObjectName("DangerButton")
        self.accept_file_button.clicked.connect(self._accept_file)
        self.reject_file_button.clicked.connect(self._reject_file)
        file_buttons.addWidget(self.accept_file_button)
        file_buttons.addWidget(self.reject_file_button)
        ll.addLayout(file_buttons)
        #: The verify result on what Apply would write (the Changes dock's strip, mirrored: ChangesPane).
        self.verify_strip = VerifyStrip(left)
        ll.addWidget(self.verify_strip)
        right = QWidget(splitter)
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.setSpacing(0)
        file_bar = QFrame(right)
        file_bar.setObjectName("ReviewFileBar")
        fbl = QHBoxLayout(file_bar)
        fbl.setContentsMargins(14, 6, 14, 6)
        self.file_title = QLabel("", file_bar)
        self.file_title.setObjectName("ReviewFileTitle")
        self.file_title.setTextFormat(Qt.TextFormat.RichText)
        fbl.addWidget(self.file_title, 1)
        rl.addWidget(file_bar)
        self.stack = QStackedWidget(right)
        self.view: DiffView = DiffView(model, self.stack)
        self.conflicts = ConflictView(self.stack)
        self.stack.addWidget(self.view)
        self.stack.addWidget(self.conflicts)
        rl.addWidget(self.stack, 1)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([290, 990])
        outer.addWidget(splitter, 1)

        # -- footer
        footer = QFrame(self)
        footer.setObjectName("ReviewFooter")
        fl = QHBoxLayout(footer)
        fl.setContentsMargins(16, 6, 16, 6)
        # The key hints have the row while there is no status (one line from about 800 px); a status shows
        # beside them, taking a third of the row (both wrap; the footer grows to their height).
        self.hints = wrapping(QLabel(KEY_HINTS, footer))
        self.hints.setObjectName("Muted")
        fl.addWidget(self.hints, 2)
        self.status = wrapping(StatusLabel(footer))
        self.status.setObjectName("Muted")
        self.status.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        fl.addWidget(self.status, 1)
        outer.addWidget(footer)

        # -- wiring
        self.files.selectionModel().currentRowChanged.connect(self._on_file_selected)
        self.view.file_shown.connect(self._on_view_file)
        self.view.split_changed.connect(lambda on: self.layout_group.button(1 if on else 0).setChecked(True))
        self.view.all_decided.connect(self._on_all_decided)
        model.changed.connect(self._refresh)
        model.source_changed.connect(self._refresh)
        model.problem.connect(lambda text: self.status.setText(text))
        self.conflicts.action_requested.connect(self._on_conflict_action)
        if commands is not None:
            commands.conflicts_found.connect(self.show_conflicts)
            commands.conflicts_cleared.connect(self.show_diff)
            commands.applied.connect(lambda _r: self.show_diff())
            commands.busy_changed.connect(lambda _b: self._refresh())
            commands.message.connect(lambda text, _kind: self.status.setText(text))
        QShortcut(QKeySequence("Ctrl+Return"), self).activated.connect(self.apply)
        self.view.apply_requested.connect(self.apply)
        QShortcut(QKeySequence("Esc"), self).activated.connect(self._escape)
        self._refresh()
        self._on_view_file(self.view.fc.id if self.view.fc is not None else "")
        size_to_screen(self, PREFERRED_SIZE)

    # -- state ---------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        model = self.model
        self.title_label.setText(model.title or "Changes")
        self.summary.setText(summary_text(model))
        decidable = not model.read_only and bool(model.pending_files)
        busy = self.commands is not None and self.commands.busy
        for b in (self.accept_all_button, self.reject_all_button):
            b.setVisible(not model.read_only)
            b.setEnabled(decidable and not busy)
        self.apply_button.setVisible(self.commands is not None and not model.read_only)
        self.apply_button.setEnabled(decidable and not busy)
        fc = self.view.fc
        self.accept_file_button.setVisible(not model.read_only)
        self.reject_file_button.setVisible(not model.read_only)
        self.accept_file_button.setEnabled(model.decidable(fc) and not busy)
        self.reject_file_button.setEnabled(model.decidable(fc) and not busy)
        self.hints.setText(KEY_HINTS if not model.read_only else "]c / [c  next / previous change   ·   "
                           "s side by side")
        if self.view.fc is not None:
            self._on_view_file(self.view.fc.id)

    def _on_file_selected(self, current: object, _previous: object = None) -> None:
        row = getattr(current, "row", lambda: -1)()
        if 0 <= row < self.model.rowCount():
            fc = self.model.file(row)
            if fc is not self.view.fc:
                self.view.show_file(fc)
        self._refresh_file_buttons()

    def _on_view_file(self, file_id: str) -> None:
        row = self.model.row_of(file_id) if file_id else -1
        sel = self.files.selectionModel()
        if row >= 0 and sel.currentIndex().row() != row:
            sel.setCurrentIndex(self.model.index(row), QItemSelectionModel.SelectionFlag.ClearAndSelect)
        self._refresh_file_buttons()

    def _refresh_file_buttons(self) -> None:
        busy = self.commands is not None and self.commands.busy
        fc = self.view.fc
        self.file_title.setText(file_title_html(fc))
        self.accept_file_button.setEnabled(self.model.decidable(fc) and not busy)
        self.reject_file_button.setEnabled(self.model.decidable(fc) and not busy)

    def _accept_file(self) -> None:
        if self.view.fc is not None:
            self.model.accept_file(self.view.fc.id)

    def _reject_file(self) -> None:
        if self.view.fc is not None:
            self.model.reject_file(self.view.fc.id)

    def _on_all_decided(self) -> None:
        if self.commands is not None and not self.model.read_only:
            self.status.setText("Every hunk is decided — Apply (Ctrl+Enter) writes the accepted ones.")

    def _escape(self) -> None:
        if self.view.overlay is not None:
            self.view.overlay.cancel()
        else:
            self.close()

    # -- actions ---------------------------------------------------------------------------------------
    def apply(self) -> None:
        """Apply (Ctrl+Enter); with hunks still undecided it asks first (:func:`ask_before_apply`)."""
        if self.commands is not None and not self.model.read_only:
            if self.apply_question is not None and self.apply_question.isVisible():
                self.apply_question.raise_()  # asked already (Ctrl+Enter again)
                return
            self.apply_question = ask_before_apply(self, self.model, self.commands, self._go_back)

    def _go_back(self, hunk_id: str) -> None:
        self.show_diff()
        self.view.select_hunk(hunk_id)
        self.view.setFocus()

    def show_conflicts(self, conflicts: list[Conflict]) -> None:
        self.conflicts.set_conflicts(conflicts)
        self.stack.setCurrentWidget(self.conflicts)

    def show_diff(self) -> None:
        self.stack.setCurrentWidget(self.view)

    def _on_conflict_action(self, action: str, key: str) -> None:
        if self.commands is not None:
            resolve_conflict(self.commands, action, key)

    def open(self, *, hunk_id: str | None = None, file_id: str | None = None) -> None:
        """Show the window (raised, not modal) at a hunk or file."""
        if hunk_id:
            self.view.select_hunk(hunk_id)
        elif file_id:
            row = self.model.row_of(file_id)
            if row >= 0:
                self.view.show_file(self.model.file(row))
        if not self.isVisible():  # the main window may be on another (smaller) screen since
            size_to_screen(self, self.size().expandedTo(PREFERRED_SIZE))
        self.show()
        self.raise_()
        self.activateWindow()
        self.view.setFocus()

    def retheme(self) -> None:
        self.view.retheme()
        self.conflicts.retheme()
        self.files.viewport().update()

    def resizeEvent(self, event: QResizeEvent) -> None:
        # A narrow window (a 1024-wide screen) keeps the arrows of Previous / Next: the title keeps its room.
        compact = event.size().width() < COMPACT_BELOW
        self.prev_button.setText("↑" if compact else "↑  Previous")
        self.next_button.setText("↓" if compact else "↓  Next")
        super().resizeEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.view.overlay is not None:
            self.view.overlay.cancel()
        super().closeEvent(event)


def file_title_html(fc: object) -> str:
    """``<b>path</b> · modify · +4 −7 · utf-8, LF`` for the bar above a file's diff."""
    if fc is None:
        return ""
    from html import escape

    from ui import theme

    c = theme.colors()
    counts = fc.counts()  # type: ignore[attr-defined]
    fmt = getattr(fc, "format", None)
    encoding = fmt.label if fmt is not None else "binary"
    state = {"applied": " · applied", "rejected": " · not applied", "conflict": " · conflict"}.get(
        getattr(fc, "state", ""), "")
    return (f"<b>{escape(fc.display_path)}</b> <span style='color:{c.muted}'>· {fc.action}{state} · "  # type: ignore[attr-defined]
            f"</span><span style='color:{c.success}'>+{counts['added']}</span> "
            f"<span style='color:{c.error}'>−{counts['removed']}</span><span style='color:{c.muted}'> · "
            f"{counts['hunks']} hunk{'s' if counts['hunks'] != 1 else ''} · {escape(encoding)}</span>")


class ApplyQuestion(QMessageBox):
    """Apply with hunks still undecided: "N hunks are still undecided: reject them and apply / go back"."""

    def __init__(self, undecided: int, parent: QWidget | None) -> None:
        s = "s" if undecided != 1 else ""
        super().__init__(QMessageBox.Icon.Question, "Apply changes",
                         f"{undecided} hunk{s} {'are' if s else 'is'} still undecided: reject {'them' if s else 'it'} "
                         "and apply?", QMessageBox.StandardButton.NoButton, parent)
        self.setInformativeText("Only the accepted hunks are written; the robot is told the others were rejected. "
                                "Go back to decide them one by one.")
        self.button_apply = self.addButton(f"Reject {'them' if s else 'it'} and apply",
                                           QMessageBox.ButtonRole.AcceptRole)
        self.button_back = self.addButton("Go back", QMessageBox.ButtonRole.RejectRole)
        self.setDefaultButton(self.button_back)
        self.setEscapeButton(self.button_back)


def ask_before_apply(parent: QWidget, model: ChangeReviewModel, commands: ChangeActions,
                     go_back: Callable[[str], None]) -> ApplyQuestion | None:
    """Apply the decided hunks; with hunks still undecided, ask first (not modal): "Reject them and
    apply" rejects them, then applies; "Go back" applies nothing and shows the first undecided hunk
    (``go_back(hunk_id)``). Returns the question when one is asked."""
    undecided = [h.id for fc in model.pending_files for h in fc.hunks if h.status == PENDING]
    if not undecided:
        commands.apply()
        return None
    box = ApplyQuestion(len(undecided), parent)

    def answered(button: object) -> None:
        if button is box.button_apply:
            if model.reject(*[hid for hid in undecided if _still_pending(model, hid)]):
                commands.apply()
        else:
            first = next((hid for hid in undecided if _still_pending(model, hid)), None)
            if first is not None:
                go_back(first)

    box.buttonClicked.connect(answered)
    box.open()
    return box


def _still_pending(model: ChangeReviewModel, hunk_id: str) -> bool:
    found = model.locate(hunk_id)
    return found is not None and found[1].status == PENDING


def resolve_conflict(commands: ChangeActions, action: str, key: str) -> None:
    """A conflict view's button: rebase / overwrite / skip / cancel."""
    if action == "rebase":
        commands.rebase(key)
    elif action == "overwrite":
        commands.rebase(key, overwrite=True)
    elif action == "skip":
        commands.skip(key)
    else:
        commands.cancel_conflicts()


def compare_window(old: str, new: str, *, name: str, title: str, parent: QWidget | None = None,
                   split: bool = True) -> ReviewWindow:
    """A window comparing any two texts (two tool results, two answers) in the review view."""
    from ui.review.model import ChangeReviewModel
    from workspace.changes import compare_texts

    model = ChangeReviewModel()
    fc = compare_texts(old, new, name=name)
    model.set_files([fc], title=title)
    window = ReviewWindow(model, None, parent, title=title)
    model.setParent(window)
    window.view.set_split(split)
    file_list_pane = window.files.parentWidget()
    if file_list_pane is not None:
        file_list_pane.setVisible(False)
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    size_to_screen(window, QSize(1100, 720))
    return window


def answers_to_compare(session: object) -> tuple[str, str, str] | None:
    """(older text, newer text, title) of two answers of a thread: the last answer and its previous
    version when it was regenerated or edited, else the two last answers. None when there are not two."""
    if session is None:
        return None
    try:
        turns = session.transcript()  # type: ignore[attr-defined]
    except Exception:
        return None
    answered = [t for t in turns if t.text]
    if not answered:
        return None
    last = turns[-1]
    if last.sibling_count > 1 and last.text:
        other_id = last.previous_sibling or last.next_sibling
        try:
            other = session.transcript(other_id)[-1]  # type: ignore[attr-defined]
        except Exception:
            other = None
        if other is not None and other.text:
            first, second = (other, last) if last.previous_sibling else (last, other)
            a, b = first.sibling_index + 1, second.sibling_index + 1
            return first.text, second.text, f"Answer version {a} vs version {b}"
    if len(answered) < 2:
        return None
    first, second = answered[-2], answered[-1]
    return first.text, second.text, "The last two answers"


__all__ = ["KEY_HINTS", "ApplyQuestion", "ReviewWindow", "answers_to_compare", "ask_before_apply", "compare_window", "resolve_conflict", "segmented", "summary_text"]

