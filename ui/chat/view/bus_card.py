"""A message between robots on a network's bus, as a compact card in the chat: "alice → bob" in the
sender's lane colour (a stripe and the names), "reply" when it answers an earlier message, then the content
(its first lines; the whole of it in the tooltip and selectable)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from ui import theme
from ui.chat.model.bus import BusMessageItem
from ui.widgets.status import robot_color

#: Lines of the content the card shows; the rest is in its tooltip.
SHOWN_LINES = 8
#: Characters of the content the card shows at most.
SHOWN_CHARS = 1200


def shown_text(text: str) -> str:
    """The part of ``text`` the card shows (its first lines, ``…`` when cut)."""
    lines = text.strip().splitlines()
    shown = "\n".join(lines[:SHOWN_LINES])
    if len(shown) > SHOWN_CHARS:
        shown = shown[: SHOWN_CHARS - 1]
    return shown + "…" if shown != text.strip() else shown


class BusMessageCard(QFrame):
    """One message between robots (see the module docstring)."""

    def __init__(self, item: BusMessageItem, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("BusMessageCard")
        self.item = item
        c = theme.colors()
        self.color = robot_color(item.sender, item.network)
        to_color = robot_color(item.to, item.network)
        self.setStyleSheet(
            f"#BusMessageCard {{ background: {c.card}; border: 1px solid {c.border};"
            f" border-left: 3px solid {self.color}; border-radius: 6px; }}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 4, 10, 6)
        layout.setSpacing(2)
        row = QHBoxLayout()
        row.setSpacing(6)
        self.route = QLabel(self)
        self.route.setObjectName("BusRoute")
        self.route.setTextFormat(Qt.TextFormat.RichText)
        self.route.setText(f"<span style='color:{self.color}; font-weight:600'>{_escape(item.sender)}</span>"
                           f" <span style='color:{c.muted}'>→</span> "
                           f"<span style='color:{to_color}; font-weight:600'>{_escape(item.to)}</span>")
        row.addWidget(self.route)
        kind = "reply" if item.in_reply_to else "message"
        self.kind = QLabel(f"{kind} · {item.message_id}" if item.message_id else kind, self)
        self.kind.setObjectName("Muted")
        self.kind.setStyleSheet(f"color: {c.muted};")
        row.addWidget(self.kind)
        row.addStretch(1)
        layout.addLayout(row)
        self.body = QLabel(shown_text(item.text), self)
        self.body.setObjectName("BusText")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if self.body.text() != item.text.strip():
            self.body.setToolTip(item.text)
        layout.addWidget(self.body)
        self.setAccessibleName(f"Message from {item.sender} to {item.to}: {item.text}")

    @property
    def title(self) -> str:
        """"alice → bob", as the card shows it."""
        return f"{self.item.sender} → {self.item.to}"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


__all__ = ["BusMessageCard", "shown_text"]
