"""``@`` in the message box: completing the files of the opened folder.

Typing ``@`` and a few letters opens a list of the folder's files whose path matches (the name's start
first, then the name, then anywhere in the path), filtered as you type. Up/Down move, Enter or Tab
choose (the ``@query`` becomes ``@path`` in the text, so the message says which file it means, and
the file becomes an attachment chip), Esc closes; so does
a space or moving away from the ``@``. The folder is listed once (again after a few seconds), skipping
what the file tools skip (``.git``, ``node_modules``, virtual environments, caches).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QPoint, Qt
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QAbstractItemView, QFrame, QListWidget, QPlainTextEdit, QWidget

from workspace.sandbox import SKIPPED_DIRS

#: Files listed at most (a huge folder completes from its first ones).
MAX_FILES = 20_000
#: Matches shown at most.
MAX_SHOWN = 50
#: Seconds a listing is reused before the folder is listed again.
RELIST_AFTER = 5.0
_QUERY = re.compile(r"(?:^|(?<=\s))@([^\s@]*)$")


class FolderFiles:
    """The files of a folder, relative POSIX paths, listed on demand and kept for a few seconds."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.files: list[str] = []
        self._listed = 0.0

    def listing(self, folder: Path) -> list[str]:
        if folder != self.folder or time.monotonic() - self._listed > RELIST_AFTER:
            self.folder = folder
            self.files = _walk(folder)
            self._listed = time.monotonic()
        return self.files

    def match(self, folder: Path, query: str, limit: int = MAX_SHOWN) -> list[str]:
        """Paths matching ``query`` (case-insensitive), best first."""
        q = query.lower()
        ranked: list[tuple[int, int, str]] = []
        for path in self.listing(folder):
            low = path.lower()
            name = low.rsplit("/", 1)[-1]
            if not q or name.startswith(q):
                rank = 0
            elif q in name:
                rank = 1
            elif q in low:
                rank = 2
            else:
                continue
            ranked.append((rank, path.count("/"), path))
        ranked.sort()
        return [path for *_rest, path in ranked[:limit]]


def _walk(folder: Path) -> list[str]:
    out: list[str] = []
    root = str(folder)
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        rel = os.path.relpath(current, root)
        prefix = "" if rel == os.curdir else Path(rel).as_posix() + "/"
        for name in sorted(files):
            out.append(prefix + name)
            if len(out) >= MAX_FILES:
                return out
    return out


class MentionPopup(QListWidget):
    """The list of matching files, shown over the window above the message box; it never takes the focus
    (the keys go on reaching the message box, which hands Up/Down/Enter/Tab/Esc to it)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("MentionPopup")
        self.setAccessibleName("Files of the folder")
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setUniformItemSizes(True)
        self.hide()

    def show_items(self, items: list[str], at: QPoint) -> None:
        self.clear()
        self.addItems(items)
        self.setCurrentRow(0)
        rows = min(8, len(items))
        height = max(1, self.sizeHintForRow(0)) * rows + 2 * self.frameWidth() + 2
        width = min(520, max(240, self.sizeHintForColumn(0) + 28))
        self.setFixedSize(width, height)
        parent = self.parentWidget()
        x = min(max(0, at.x()), max(0, parent.width() - width)) if parent is not None else at.x()
        self.move(x, max(0, at.y() - height - 4))
        self.show()
        self.raise_()

    def step(self, delta: int) -> None:
        if self.count():
            self.setCurrentRow((self.currentRow() + delta) % self.count())

    def chosen(self) -> str | None:
        item = self.currentItem()
        return item.text() if item is not None else None


class MentionCompleter(QObject):
    """Watches a message box for ``@query`` before the cursor and completes it from the folder's files.

    ``folder_of()`` gives the opened folder (None: no completion); ``choose(path)`` is called with the
    chosen file's folder-relative path, after the ``@query`` text was taken out.
    """

    def __init__(self, edit: QPlainTextEdit, *, folder_of: Callable[[], Path | None],
                 choose: Callable[[str], None]) -> None:
        super().__init__(edit)
        self.edit = edit
        self.folder_of = folder_of
        self.choose = choose
        self.files = FolderFiles()
        self.popup: MentionPopup | None = None
        self._start = -1  # where the "@" is, while completing
        edit.textChanged.connect(self.update)
        edit.cursorPositionChanged.connect(self.update)

    @property
    def active(self) -> bool:
        return self.popup is not None and self.popup.isVisible()

    def _popup(self) -> MentionPopup:
        if self.popup is None:
            self.popup = MentionPopup(self.edit.window())
            self.popup.itemClicked.connect(lambda item: self._choose(item.text()))
        return self.popup

    def query(self) -> tuple[int, str] | None:
        """The ``@query`` before the cursor: (the position of "@", the query), or None."""
        cursor = self.edit.textCursor()
        if cursor.hasSelection():
            return None
        block = cursor.block()
        before = block.text()[: cursor.positionInBlock()]
        found = _QUERY.search(before)
        if found is None:
            return None
        return block.position() + found.start(0) + (found.group(0).index("@")), found.group(1)

    def update(self) -> None:
        folder = self.folder_of()
        asked = self.query() if folder is not None else None
        if asked is None or folder is None:
            self.close()
            return
        self._start, text = asked
        matches = self.files.match(folder, text)
        if not matches:
            self.close()
            return
        rect = self.edit.cursorRect()
        popup = self._popup()
        at = self.edit.viewport().mapTo(self.edit.window(), QPoint(rect.left(), rect.top()))
        popup.show_items(matches, at)

    def close(self) -> None:
        self._start = -1
        if self.popup is not None:
            self.popup.hide()

    def handle_key(self, event: QKeyEvent) -> bool:
        """Keys for the open list (True: handled, the message box does nothing more)."""
        if not self.active or self.popup is None:
            return False
        key = event.key()
        if key == Qt.Key.Key_Down:
            self.popup.step(1)
            return True
        if key == Qt.Key.Key_Up:
            self.popup.step(-1)
            return True
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Tab) and not (
                event.modifiers() & Qt.KeyboardModifier.ControlModifier):
            chosen = self.popup.chosen()
            if chosen:
                self._choose(chosen)
            return True
        if key == Qt.Key.Key_Escape:
            self.close()
            return True
        return False

    def _choose(self, path: str) -> None:
        start = self._start
        if start < 0:
            asked = self.query()
            if asked is None:
                return
            start = asked[0]
        cursor = self.edit.textCursor()
        end = cursor.position()
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        # "@path " in place of the query: the message names the file it attaches ("what does @notes.md say?")
        cursor.insertText(f"@{path} " if " " not in path else f'@"{path}" ')
        self.edit.setTextCursor(cursor)
        self.close()
        self.choose(path)
