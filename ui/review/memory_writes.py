"""The Changes dock's Memory group: durable memory writes a robot proposed, reviewed like file hunks.

With ``review.memory: ask`` a robot's ``learn`` or ``record_knowledge`` is proposed, not stored
(:class:`~workspace.knowledge.PendingMemoryWrite`), and so is each key a run changed in a shared memory that
outlives it (its old value in the heading, the new one editable; :mod:`workspace.memory_review`). Each proposal shows here with its robot and its
text, which can be edited before it is accepted; Reject takes a reason. Accept and Reject call the
proposal's own ``accept(text)`` / ``reject(reason)``: the core stores it (or not) and tells the robot
the outcome (a waiting ``record_knowledge`` at once, a ``learn`` in its next run). The group hides
when nothing waits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QLineEdit, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from ui.widgets.flow import FlowRow, shrinkable

if TYPE_CHECKING:
    from workspace.knowledge import PendingMemoryWrite


class MemoryWriteRow(QFrame):
    """One proposal: who proposes what, the text (editable), a reason, Reject and Accept."""

    #: The proposal was decided here (the write; its status says how).
    decided = Signal(object)

    def __init__(self, pending: PendingMemoryWrite, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("MemoryWrite")
        self.pending = pending
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.setSpacing(4)
        if pending.kind == "memory":  # a key its run changed in a memory that outlives it: old → new
            verb = "delete" if pending.deleted else "set"
            what = f"to {verb} memory '{pending.key}' (now {pending.shown_previous()})"
        else:
            what = "to learn" if pending.kind == "learn" else "to record as knowledge"
        self.heading = shrinkable(QLabel(f"{pending.robot} proposes {what}:", self))
        self.heading.setToolTip(pending.describe_change() if pending.kind == "memory" else "")
        self.heading.setObjectName("Muted")
        layout.addWidget(self.heading)
        self.text = QLineEdit(pending.text, self)
        self.text.setObjectName("MemoryWriteText")
        self.text.setAccessibleName(f"What {pending.robot} would remember (edit it before accepting)")
        self.text.setToolTip(pending.text)
        self.text.setCursorPosition(0)  # its start shows in a narrow dock
        layout.addWidget(self.text)
        row = FlowRow(spacing=6)
        self.reason = QLineEdit(self)
        self.reason.setObjectName("MemoryWriteReason")
        self.reason.setPlaceholderText("Reason, told to the robot when you reject")
        self.reason.setAccessibleName("Reason for rejecting")
        self.reason.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.reason.setMinimumWidth(160)
        self.reason.returnPressed.connect(self.reject)
        row.addWidget(self.reason)
        self.reject_button = QPushButton("Reject", self)
        self.reject_button.setObjectName("DangerButton")
        self.reject_button.setToolTip("Do not store it; the robot is told, with the reason")
        self.reject_button.clicked.connect(self.reject)
        self.accept_button = QPushButton("Accept", self)
        self.accept_button.setObjectName("PrimaryButton")
        self.accept_button.setToolTip("Store it (as edited); the robot is told")
        self.accept_button.clicked.connect(self.accept)
        for button in (self.reject_button, self.accept_button):
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            row.addWidget(button)
        layout.addLayout(row)

    def accept(self) -> None:
        if self.pending.pending:
            self.pending.accept(self.text.text())
        self.decided.emit(self.pending)

    def reject(self) -> None:
        if self.pending.pending:
            self.pending.reject(self.reason.text())
        self.decided.emit(self.pending)


class MemoryWritesBox(QFrame):
    """The Memory group of the Changes dock (see the module)."""

    #: What to tell the person (a toast): a proposal came, or was decided.
    notice = Signal(str)
    #: A proposal was decided here (the PendingMemoryWrite).
    decided = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("MemoryWrites")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(2)
        self.title = QLabel("Memory", self)
        self.title.setObjectName("SectionTitle")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        layout.addWidget(self.title)
        self.rows_layout = QVBoxLayout()
        self.rows_layout.setSpacing(2)
        layout.addLayout(self.rows_layout)
        self.rows: list[MemoryWriteRow] = []
        self.setVisible(False)

    def add(self, pending: PendingMemoryWrite) -> None:
        """Show a proposal (once; a decided one is not shown)."""
        if not pending.pending or any(r.pending is pending for r in self.rows):
            return
        row = MemoryWriteRow(pending, self)
        row.decided.connect(self._decided)
        self.rows.append(row)
        self.rows_layout.addWidget(row)
        self._sync()
        self.notice.emit(f"{pending.robot} proposes a memory write: review it in the Changes dock")

    def set_pending(self, writes: list[PendingMemoryWrite]) -> None:
        """The proposals that wait (those made before the dock was built)."""
        for pending in writes:
            self.add(pending)

    def _decided(self, pending: PendingMemoryWrite) -> None:
        for row in [r for r in self.rows if r.pending is pending]:
            self.rows.remove(row)
            self.rows_layout.removeWidget(row)
            row.hide()
            row.deleteLater()
        self._sync()
        self.decided.emit(pending)
        self.notice.emit(pending.outcome())

    def _sync(self) -> None:
        count = len(self.rows)
        self.title.setText(f"Memory · {count} proposed" if count else "Memory")
        self.setVisible(count > 0)


__all__ = ["MemoryWriteRow", "MemoryWritesBox"]
