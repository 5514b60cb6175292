"""Parts of the MCP servers dock made when first needed (:class:`~ui.mcp.pane.McpPane` makes them): the sign-in row
of a remote server that wants one, and the Log tab (the server's log notifications, filtered by level)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ui import theme

#: The log filter's choices: the least severe level shown.
LOG_FILTERS = (("debug", "Everything (debug and up)"), ("info", "Info and up"), ("warning", "Warnings and errors"),
               ("error", "Errors only"))


def log_lines(entries: tuple[tuple[float, str, str, str], ...], minimum: str) -> list[str]:
    """``(time, level, logger, text)`` entries at ``minimum`` or more severe, one line each."""
    import time

    from workspace.mcp.status import log_rank

    floor = log_rank(minimum)
    out = []
    for ts, level, logger, text in entries:
        if log_rank(level) >= floor:
            when = time.strftime("%H:%M:%S", time.localtime(ts))
            out.append(f"{when} {level.upper():<9} {logger + ': ' if logger else ''}{text}")
    return out


def wrapping(text: str, parent: QWidget) -> QLabel:
    """A caption that wraps in a narrow dock instead of widening it."""
    label = QLabel(text, parent)
    label.setWordWrap(True)
    return label


class SignInRow(QWidget):
    """A remote server that wants a sign-in (OAuth): Sign in (again), the page's address while it is open in the
    browser (to copy, or open again), and Sign out once signed in. The pane connects the buttons."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        sl = QVBoxLayout(self)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.setSpacing(4)
        self.note = wrapping("", self)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.note.setOpenExternalLinks(False)
        sl.addWidget(self.note)
        sign_row = QHBoxLayout()
        self.sign_in_button = QPushButton("Sign in", self)
        self.sign_in_button.setObjectName("PrimaryButton")
        self.sign_in_button.setToolTip("Open the server's sign-in page in your browser")
        self.copy_link_button = QPushButton("Copy link", self)
        self.copy_link_button.setToolTip("Copy the sign-in page's address (to open it in another browser)")
        self.sign_out_button = QPushButton("Sign out", self)
        self.sign_out_button.setToolTip("Forget this server's sign-in (its tokens in the keyring) and stop it")
        sign_row.addStretch(1)
        for b in (self.copy_link_button, self.sign_out_button, self.sign_in_button):
            sign_row.addWidget(b)
        sl.addLayout(sign_row)


class LogPage(QWidget):
    """The Log tab: which levels to show, how many lines show, and the lines."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        ll = QVBoxLayout(self)
        ll.setContentsMargins(0, 4, 0, 0)
        ll.setSpacing(4)
        row = QHBoxLayout()
        caption = QLabel("&Show:", self)
        self.level = QComboBox(self)
        for level, label in LOG_FILTERS:
            self.level.addItem(label, level)
        self.level.setAccessibleName("Log level to show")
        self.level.setToolTip("The least severe level shown (the server sends debug, info, notice, warning, error, "
                              "critical, alert and emergency)")
        caption.setBuddy(self.level)
        self.count = QLabel("", self)
        self.count.setObjectName("Muted")
        row.addWidget(caption)
        row.addWidget(self.level)
        row.addWidget(self.count, 1)
        ll.addLayout(row)
        self.view = QPlainTextEdit(self)
        self.view.setReadOnly(True)
        self.view.setFont(theme.mono_font(-1))
        self.view.setAccessibleName("Server log")
        self.view.setPlaceholderText("No log messages from this server (yet).")
        ll.addWidget(self.view, 1)

    def show_entries(self, entries: tuple[tuple[float, str, str, str], ...]) -> None:
        """The entries at the chosen level and above."""
        lines = log_lines(entries, str(self.level.currentData() or "debug"))
        text = "\n".join(lines)
        if text != self.view.toPlainText():
            self.view.setPlainText(text)
            self.view.verticalScrollBar().setValue(self.view.verticalScrollBar().maximum())
        hidden = len(entries) - len(lines)
        self.count.setText(f"{len(lines)} shown" + (f" · {hidden} below this level" if hidden else "")
                           if entries else "")


__all__ = ["LOG_FILTERS", "LogPage", "SignInRow", "log_lines", "wrapping"]
