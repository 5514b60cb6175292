"""The change card: a robot proposed file changes; the files with their size, where to review them,
then what was decided (applied, rejected, undone) with Undo / Redo."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QBoxLayout, QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ui import markdown, theme
from ui.widgets.common import ElidedLabel, RichLabel, card_frame, elided_robot_chip, pill
from ui.widgets.flow import shrinkable
from workspace.sandbox import display_path

if TYPE_CHECKING:
    from ui.chat.model.state import ChangeItem


#: The narrowest the note beside the card's buttons gets (px); narrower, it goes above them.
NOTE_MIN_WIDTH = 160


class ChangeCard(QFrame):
    """A robot proposed file changes: the files with their size, and where to review them."""

    review_requested = Signal(str)  # change set id
    #: Undo (or redo) what this card's changes wrote: (change set id, checkpoint id or "", redo).
    undo_requested = Signal(str, str, bool)

    def __init__(self, *, change_set_id: str, robot: str, files: list[Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ToolCard")
        self.change_set_id = change_set_id
        self.files = list(files)
        self.status = "pending"
        #: The state shown (see :meth:`apply`).
        self.item: ChangeItem | None = None
        #: The checkpoint taken before the changes were written, and the outcome by path.
        self.checkpoint_id: str | None = None
        self.outcome: dict[str, Any] = {}
        self.undone = False
        c = theme.colors()
        outer, header, hl = card_frame(self, "diff", c.muted, spacing=6)
        # When narrow, "Proposed changes" ends in "…" and "· 3 files" goes (the tooltip has both): never
        # wider than the card.
        self.title = ElidedLabel("Proposed changes", header, min_chars=8)
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        hl.addWidget(self.title)
        self.count = ElidedLabel("", header, whole=True)
        hl.addWidget(self.count, 1)
        hl.addWidget(elided_robot_chip(robot, header))
        self._pill_holder = QHBoxLayout()
        hl.addLayout(self._pill_holder)
        self._pill: QLabel | None = None
        outer.addWidget(header)
        body = QWidget(self)
        bl = QVBoxLayout(body)
        bl.setContentsMargins(12, 8, 12, 10)
        bl.setSpacing(4)
        self.listing = shrinkable(RichLabel("", body))
        bl.addWidget(self.listing)
        self._show_files()
        #: The note beside the buttons; in a narrow card (a comparison's column) the note above them, so it
        #: is not squeezed to a word a line (:meth:`resizeEvent`).
        row = self._row = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self.note = shrinkable(QLabel("Nothing is written until you review it.", body))
        self.note.setObjectName("Muted")
        row.addWidget(self.note, 1)
        self.undo_button = QPushButton("Undo", body)
        self.undo_button.setToolTip("Restore the files as they were before these changes (redo stays possible)")
        self.undo_button.clicked.connect(
            lambda: self.undo_requested.emit(self.change_set_id, self.checkpoint_id or "", self.undone))
        self.undo_button.setVisible(False)
        row.addWidget(self.undo_button)
        self.review_button = QPushButton("Review changes", body)
        self.review_button.setObjectName("PrimaryButton")
        self.review_button.clicked.connect(lambda: self.review_requested.emit(self.change_set_id))
        row.addWidget(self.review_button)
        bl.addLayout(row)
        outer.addWidget(body)
        self._set_pill(self._pending_text(), c.warning, c.warning_bg)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_row()

    def _fit_row(self) -> None:
        """The note beside the buttons when it keeps at least :data:`NOTE_MIN_WIDTH` px there (or its whole
        text), else above them."""
        buttons = sum(b.sizeHint().width() + 8 for b in (self.undo_button, self.review_button) if not b.isHidden())
        note = min(NOTE_MIN_WIDTH, self.note.fontMetrics().horizontalAdvance(self.note.text()))
        wanted = (QBoxLayout.Direction.LeftToRight if self.width() - 24 >= note + buttons
                  else QBoxLayout.Direction.TopToBottom)
        if self._row.direction() != wanted:
            self._row.setDirection(wanted)

    def _counts(self) -> tuple[int, int, int, int]:
        """(hunks, undecided, accepted, rejected) of the files, as the Changes dock counts them (a file's
        decisions come from the dock; a file without them is all undecided)."""
        hunks = sum(int(f.get("hunks", 0) or 0) for f in self.files)
        pending = sum(int(f.get("pending", f.get("hunks", 0)) or 0) for f in self.files)
        accepted = sum(int(f.get("accepted", 0) or 0) for f in self.files)
        rejected = sum(int(f.get("rejected", 0) or 0) for f in self.files)
        return hunks, pending, accepted, rejected

    def _pending_text(self) -> str:
        """The pending pill: how many changes (hunks) wait for a decision, the status bar's number."""
        hunks, pending, _accepted, _rejected = self._counts()
        if pending:
            return f"{pending} change{'s' if pending != 1 else ''} to review"
        return "ready to apply" if hunks else "review pending"

    def _pending_note(self) -> str:
        hunks, pending, accepted, rejected = self._counts()
        if not hunks or pending == hunks:
            return "Nothing is written until you review it."
        return (f"{hunks} hunk{'s' if hunks != 1 else ''}: {pending} pending, {accepted} accepted, {rejected} "
                "rejected. Nothing is written until you apply.")

    def _show_files(self) -> None:
        c = theme.colors()
        count = len(self.files)
        self.count.setText(f"· {count} file{'s' if count != 1 else ''}")
        self.title.setToolTip(f"Proposed changes · {count} file{'s' if count != 1 else ''}")
        rows = []
        for f in self.files[:12]:
            name = str(f.get("path", "?"))
            if f.get("new_path"):
                name = f"{name} → {f['new_path']}"
            path = markdown._esc(display_path(name))
            action = markdown._esc(str(f.get("action", "modify")))
            added, removed = int(f.get("added", 0) or 0), int(f.get("removed", 0) or 0)
            rows.append(f'<span style="font-family:{theme.mono_family()}">{path}</span> '
                        f'<span style="color:{c.muted}">{action}</span> '
                        f'<span style="color:{c.success}">+{added}</span> <span style="color:{c.error}">−{removed}</span>')
        if len(self.files) > 12:
            rows.append(f'<span style="color:{c.muted}">… and {len(self.files) - 12} more</span>')
        self.listing.setText("<br>".join(rows))

    def _set_pill(self, text: str, fg: str, bg: str) -> None:
        if self._pill is not None:
            self._pill_holder.removeWidget(self._pill)
            self._pill.deleteLater()
        self._pill = pill(text, fg, bg, self, min_chars=3)
        self._pill_holder.addWidget(self._pill)

    def apply(self, item: ChangeItem) -> None:
        """Show the change set's state: its files, then what was decided (and whether it was undone)."""
        self.item = item
        if item.files != self.files:
            self.files = list(item.files)
            self._show_files()
        self.status = item.status
        self.outcome = dict(item.outcome)
        self.checkpoint_id = item.checkpoint_id
        self.undone = item.undone
        if item.status == "pending":
            c = theme.colors()
            self._set_pill(self._pending_text(), c.warning, c.warning_bg)
            self.note.setText(self._pending_note())
            self._fit_row()
            return
        c = theme.colors()
        accepted, rejected = item.accepted, item.rejected
        if item.undone:
            self._set_pill("undone", c.muted, c.card_header)
            self.note.setText("Undone: the files are as they were before these changes.")
            self.undo_button.setText("Redo")
        else:
            if accepted and not rejected:
                self._set_pill("applied", c.success, c.card_header)
            elif rejected and not accepted:
                self._set_pill("rejected", c.error, c.error_bg)
            else:
                self._set_pill(f"{accepted} applied · {rejected} rejected", c.accent, c.card_header)
            self.note.setText(f"{accepted} hunk{'s' if accepted != 1 else ''} applied, {rejected} rejected.")
            self.undo_button.setText("Undo")
        self.undo_button.setVisible(item.can_undo)
        if self.review_button.objectName():
            self.review_button.setText("Show changes")
            self.review_button.setObjectName("")
            self.review_button.style().unpolish(self.review_button)
            self.review_button.style().polish(self.review_button)
        self._fit_row()


__all__ = ["ChangeCard"]
