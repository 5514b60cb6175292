"""Help > Keyboard shortcuts: the window's commands with their keys, grouped by menu, and the keys
that work inside the chat's parts (the message box, an approval, the change review).

The commands' rows come from the actions themselves (:meth:`ui.window.commands.Commands.sheet`), so
the sheet lists every shortcut the window has, and only those.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ui.screen import size_to_screen
from ui.widgets.common import name_line_edit_buttons

#: Keys that belong to a part of the window rather than to a command: (group, what, keys).
PART_KEYS: list[tuple[str, str, str]] = [
    ("Message box", "New line", "Enter"),
    ("Message box", "Send", "Ctrl+Enter"),
    ("Message box", "Leave the box (next control)", "Tab"),
    ("Editing a sent message", "Save and resend (a new branch)", "Ctrl+Enter"),
    ("Editing a sent message", "Cancel", "Esc"),
    ("Approval (Ctrl+J goes to it)", "Approve", "y"),
    ("Approval (Ctrl+J goes to it)", "Edit the arguments, then approve", "e"),
    ("Approval (Ctrl+J goes to it)", "Deny (type a reason, then Enter)", "n"),
    ("Change review", "Next / previous change", "]c / [c"),
    ("Change review", "Accept / reject the change", "a / r"),
    ("Change review", "Edit / undo the decision", "e / u"),
    ("Change review", "Apply the decisions", "Ctrl+Enter"),
    ("Thread list", "Open the thread", "Enter"),
    ("Thread list", "Rename / delete", "F2 / Delete"),
    ("Search field", "Open the first result", "Enter"),
    ("Search field", "Go to the results", "Down"),
]


class ShortcutsDialog(QDialog):
    """The shortcut sheet: a filterable list of (group, command, keys)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setObjectName("ShortcutsDialog")
        size_to_screen(self, QSize(560, 620))
        layout = QVBoxLayout(self)
        intro = QLabel("Every command is also in the command palette (Ctrl+K), with or without keys.", self)
        intro.setObjectName("Muted")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter shortcuts…")
        self.filter.setAccessibleName("Filter shortcuts")
        self.filter.setClearButtonEnabled(True)
        name_line_edit_buttons(self.filter, clear="Clear the filter")
        self.filter.textChanged.connect(self._apply_filter)
        layout.addWidget(self.filter)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("ShortcutList")
        self.tree.setAccessibleName("Keyboard shortcuts")
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Command", "Keys"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        layout.addWidget(self.tree, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)
        self.rows: list[tuple[str, str, str]] = []

    def show_commands(self, rows: list[tuple[str, str, str]]) -> None:
        """Show ``rows`` of (group, command, keys), grouped in the order the groups first come."""
        self.rows = list(rows)
        self.tree.clear()
        groups: dict[str, QTreeWidgetItem] = {}
        for group, what, keys in self.rows:
            parent = groups.get(group)
            if parent is None:
                parent = groups[group] = QTreeWidgetItem(self.tree, [group, ""])
                parent.setFlags(Qt.ItemFlag.ItemIsEnabled)
                font = parent.font(0)
                font.setBold(True)
                parent.setFont(0, font)
                parent.setFirstColumnSpanned(True)
            item = QTreeWidgetItem(parent, [what, keys])
            item.setData(0, Qt.ItemDataRole.AccessibleTextRole, f"{what}: {keys}")
        self.tree.expandAll()
        self._apply_filter(self.filter.text())

    def _apply_filter(self, text: str) -> None:
        needle = text.strip().lower()
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            if group is None:
                continue
            shown = 0
            for j in range(group.childCount()):
                child = group.child(j)
                if child is None:
                    continue
                hit = not needle or needle in f"{group.text(0)} {child.text(0)} {child.text(1)}".lower()
                child.setHidden(not hit)
                shown += hit
            group.setHidden(shown == 0)

    def commands(self) -> list[tuple[str, str]]:
        """(command, keys) of every row shown."""
        out = []
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            if group is None or group.isHidden():
                continue
            for j in range(group.childCount()):
                child = group.child(j)
                if child is not None and not child.isHidden():
                    out.append((child.text(0), child.text(1)))
        return out


__all__ = ["PART_KEYS", "ShortcutsDialog"]
