"""A dock made the way docs/ARCHITECTURE.md's "A dock" recipe says: this module and one line in DOCKS
(tests/ui/test_dock_recipe.py adds the line)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ui.services import DockContext
from workspace import events as ev


class NotesPane(QWidget):
    """Counts the events it is fed live."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.seen: list[str] = []
        self.label = QLabel("No events yet", self)
        self.label.setAccessibleName("Events seen")
        QVBoxLayout(self).addWidget(self.label)

    def add_events(self, events: list[ev.Event]) -> None:
        self.seen.extend(e.kind for e in events)
        self.label.setText(f"{len(self.seen)} events")


def make_pane(context: DockContext) -> NotesPane:
    pane = NotesPane(context.parent)
    context.services.bridge.events_batched.connect(pane.add_events)  # live events, if it shows them
    return pane
