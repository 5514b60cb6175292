"""``/`` commands in the message box: the completion list (built-in commands and the MCP prompts of the
robot's servers) and the small form for a prompt's arguments.

The list lives inside the composer (above the message box), so the keyboard stays in the box: Up/Down move,
Enter or Tab choose, Esc closes. What a choice does is the window's business (``ui/window/slash.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

#: Rows shown before the list scrolls.
VISIBLE_ROWS = 7


@dataclass(frozen=True, slots=True)
class SlashItem:
    """One ``/`` command: a built-in (``server`` None) or an MCP prompt (``/server:prompt``)."""

    #: What follows the ``/``: ``compact``, ``everything:args-prompt``.
    name: str
    description: str = ""
    server: str | None = None
    prompt: str | None = None
    #: The prompt's arguments as the server lists them: ``{name, description?, required?}``.
    arguments: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def is_prompt(self) -> bool:
        return self.server is not None


def matching(items: Iterable[SlashItem], query: str) -> list[SlashItem]:
    """The items whose name contains ``query`` (case-insensitive): those starting with it first, then those
    whose prompt name starts with it, then the rest, each group in the given order."""
    q = query.lower()
    found = [i for i in items if q in i.name.lower()]
    return sorted(found, key=lambda i: (not i.name.lower().startswith(q),
                                        not (i.prompt or "").lower().startswith(q)))


class SlashList(QListWidget):
    """The completion list (kept in the composer, never taking the focus)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("SlashList")
        self.setAccessibleName("Commands and MCP prompts")
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setUniformItemSizes(True)
        self.setVisible(False)
        self.entries: list[SlashItem] = []
        self.note = ""

    def show_items(self, items: Sequence[SlashItem], *, note: str = "") -> None:
        """Fill the list (keeping the current item when it is still there)."""
        keep = self.current()
        self.entries = list(items)
        self.note = note
        self.clear()
        for entry in self.entries:
            text = f"/{entry.name}" + (f"  —  {entry.description}" if entry.description else "")
            row = QListWidgetItem(text, self)
            row.setToolTip(f"/{entry.name}\n{entry.description}".strip())
        if note:
            row = QListWidgetItem(note, self)
            row.setFlags(Qt.ItemFlag.NoItemFlags)
        index = self.entries.index(keep) if keep in self.entries else 0
        if self.entries:
            self.setCurrentRow(index)
        rows = max(1, min(VISIBLE_ROWS, self.count()))
        self.setFixedHeight(self.sizeHintForRow(0) * rows + 2 * self.frameWidth() + 2)

    def current(self) -> SlashItem | None:
        row = self.currentRow()
        return self.entries[row] if 0 <= row < len(self.entries) else None

    def step(self, delta: int) -> None:
        if not self.entries:
            return
        self.setCurrentRow((max(self.currentRow(), 0) + delta) % len(self.entries))


class PromptForm(QDialog):
    """The arguments of an MCP prompt: one line each, required ones marked (OK waits for them)."""

    def __init__(self, item: SlashItem, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.item = item
        self.setWindowTitle(f"/{item.name}")
        self.setAccessibleName(f"Arguments of the prompt {item.name}")
        layout = QVBoxLayout(self)
        if item.description:
            caption = QLabel(item.description, self)
            caption.setWordWrap(True)
            layout.addWidget(caption)
        form = QFormLayout()
        self.fields: dict[str, QLineEdit] = {}
        self.required: set[str] = set()
        for argument in item.arguments:
            name = str(argument.get("name") or "")
            if not name:
                continue
            edit = QLineEdit(self)
            description = str(argument.get("description") or "")
            required = bool(argument.get("required"))
            edit.setPlaceholderText(description or ("required" if required else "optional"))
            edit.setToolTip(description)
            edit.setAccessibleName(name + (" (required)" if required else ""))
            edit.textChanged.connect(self._check)
            form.addRow(f"{name}{' *' if required else ''}", edit)
            self.fields[name] = edit
            if required:
                self.required.add(name)
        layout.addLayout(form)
        if self.required:
            hint = QLabel("* required", self)
            hint.setObjectName("Muted")
            layout.addWidget(hint)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel,
                                        self)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        if ok is not None:
            ok.setText("Insert")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self._check()
        if self.fields:
            next(iter(self.fields.values())).setFocus()

    def missing(self) -> list[str]:
        return [n for n in self.fields if n in self.required and not self.fields[n].text().strip()]

    def _check(self) -> None:
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        if ok is not None:
            ok.setEnabled(not self.missing())

    def accept(self) -> None:
        if self.missing():
            return
        super().accept()

    def values(self) -> dict[str, str]:
        """The values given (empty optional ones left out)."""
        return {n: e.text().strip() for n, e in self.fields.items() if e.text().strip()}
