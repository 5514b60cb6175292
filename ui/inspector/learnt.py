"""The Memory dock's Learnt section: what robots learnt in the opened folder, by whom, when; Forget.

Learnings are kept across runs in the knowledge store (``robot.learn``, ``record_knowledge``) and given
to every later run of their robot. The list reads them from the store (through the session model's
``learnt()``), refreshed when a run ends, when a reviewed memory write is decided and when a learning
is forgotten; "Forget" drops the selected one (``forget_learning``): later runs no longer get it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from PySide6.QtCore import SignalInstance
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)


class LearntSource(Protocol):
    """What the section asks of the session model (the window's :class:`~ui.controller.Controller`)."""

    learnt_changed: SignalInstance
    run_state_changed: SignalInstance

    def learnt(self) -> list[tuple[str, str, str]]: ...

    def forget_learning(self, robot: str, text: str) -> bool: ...


def when_text(iso: str) -> str:
    """An ISO time as the list shows it (local, to the minute); the text as it is when it is not one."""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


class LearntSection(QWidget):
    """The Learnt list (see the module)."""

    def __init__(self, source: LearntSource, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source = source
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 6, 0, 0)
        layout.setSpacing(4)
        top = QHBoxLayout()
        self.title = QLabel("Learnt", self)
        self.title.setObjectName("SectionTitle")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        top.addWidget(self.title, 1)
        self.forget_button = QPushButton("Forget", self)
        self.forget_button.setObjectName("DangerButton")
        self.forget_button.setToolTip("Forget the selected learning: later runs of its robot no longer get it")
        self.forget_button.setEnabled(False)
        self.forget_button.clicked.connect(self.forget_selected)
        top.addWidget(self.forget_button)
        layout.addLayout(top)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("LearntList")
        self.tree.setAccessibleName("What robots learnt")
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Learning", "Robot", "When"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.tree.itemSelectionChanged.connect(
            lambda: self.forget_button.setEnabled(bool(self.tree.selectedItems())))
        layout.addWidget(self.tree, 1)
        self.empty = QLabel("Nothing learnt in this folder yet.", self)
        self.empty.setObjectName("Muted")
        layout.addWidget(self.empty)
        source.learnt_changed.connect(self.refresh)
        source.run_state_changed.connect(lambda running: None if running else self.refresh())
        self.refresh()

    def rows(self) -> list[tuple[str, str, str]]:
        """What the list shows: (learning, robot, when), top to bottom."""
        return [(item.text(0), item.text(1), item.text(2))
                for item in (self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())) if item]

    def refresh(self) -> None:
        try:
            learnt = self.source.learnt()
        except Exception as exc:  # a damaged knowledge file: say so, the dock stays usable
            learnt = []
            self.empty.setText(f"Could not read what was learnt: {exc}")
        else:
            self.empty.setText("Nothing learnt in this folder yet.")
        self.tree.clear()
        for robot, text, at in learnt:
            item = QTreeWidgetItem([text, robot, when_text(at)])
            item.setToolTip(0, text)
            self.tree.addTopLevelItem(item)
        self.title.setText(f"Learnt · {len(learnt)}" if learnt else "Learnt")
        self.empty.setVisible(not learnt)
        self.forget_button.setEnabled(bool(self.tree.selectedItems()))

    def forget_selected(self) -> bool:
        items = self.tree.selectedItems()
        if not items:
            return False
        item = items[0]
        return self.source.forget_learning(item.text(1), item.text(0))

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()


__all__ = ["LearntSection", "LearntSource", "when_text"]
