"""The review outcome sent in front of a user message (``<change-review>``), shown as a small
collapsible block above the message rather than as raw text inside it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from ui import theme


def note_summary(note: str) -> str:
    """One line about the note: how many files were undone / redone / accepted / partly / rejected."""
    lines = [ln for ln in note.splitlines() if ln.startswith("- ")]
    if not lines:
        return "Review outcome sent to the robot"
    undone = sum(1 for ln in lines if "undone by the user" in ln or "the user undid" in ln)
    redone = sum(1 for ln in lines if "the user redid" in ln)
    lines_left = [ln for ln in lines if "undone by the user" not in ln and "the user undid" not in ln
                  and "the user redid" not in ln]
    written = sum(1 for ln in lines_left if "accepted" in ln and "rejected" not in ln and "NOT" not in ln)
    partly = sum(1 for ln in lines_left if "partly applied" in ln)
    refused = len(lines_left) - written - partly
    parts = []
    if undone:
        parts.append(f"{undone} undone")
    if redone:
        parts.append(f"{redone} redone")
    if written:
        parts.append(f"{written} accepted")
    if partly:
        parts.append(f"{partly} partly")
    if refused:
        parts.append(f"{refused} not applied")
    n = len(lines)
    return f"Review outcome sent to the robot · {n} file{'s' if n != 1 else ''}: " + ", ".join(parts)


class ReviewNoteBlock(QFrame):
    """Collapsed: one line; expanded: the note exactly as the robot received it."""

    def __init__(self, note: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ReviewNote")
        self.note = note
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Minimum)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 4, 10, 4)
        layout.setSpacing(2)
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("ReviewNoteToggle")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setText(note_summary(note))
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.setToolTip("What you decided about the robot's file changes, sent in front of this message")
        self.toggle.toggled.connect(self.set_expanded)
        layout.addWidget(self.toggle)
        self.body = QLabel(note, self)
        self.body.setObjectName("Muted")
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setVisible(False)
        layout.addWidget(self.body)
        self._icon()

    def _icon(self) -> None:
        name = "chevron-down" if self.toggle.isChecked() else "chevron-right"
        self.toggle.setIcon(theme.icon(name, theme.colors().muted, 12))

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def set_expanded(self, on: bool) -> None:
        if self.toggle.isChecked() != on:
            self.toggle.setChecked(on)
            return
        self.body.setVisible(on)
        self._icon()


__all__ = ["ReviewNoteBlock", "note_summary"]
