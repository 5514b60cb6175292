"""The context meter: how full the model's context window is, for the status bar.

A thin bar and "1.5k / 2k · 74 %", fed by :class:`~workspace.events.ContextUsage` events (before each
model call: the count of the request; after it: the server's own count), live while the answer
streams (its text is added as an estimate), and by :class:`~workspace.events.ContextCompacted`
(the count after compacting). The tooltip breaks the count down: system prompt, tool schemas (and the
costliest ones: "tools: N tokens, biggest: a (x), b (y)"), messages, and the share at which the
conversation is compacted. Hidden while the window is unknown
(the offline demo, a test double) or no thread is open.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

from ui import theme

if TYPE_CHECKING:
    from workspace import events as ev

#: Characters of streamed text counted as one token (the core's safe estimate).
CHARS_PER_TOKEN = 3.0


def short_tokens(value: int) -> str:
    """1234 -> "1.2k", 128000 -> "128k", 999 -> "999"."""
    if value < 1000:
        return str(value)
    if value < 10_000:
        text = f"{value / 1000:.1f}".rstrip("0").rstrip(".")
        return f"{text}k"
    if value < 1_000_000:
        return f"{round(value / 1000)}k"
    return f"{value / 1_000_000:.1f}".rstrip("0").rstrip(".") + "M"


def tools_line(total: int, biggest: dict[str, int]) -> str:
    """"tools: 1,565 tokens, biggest: search_files (323), edit_file (225)"."""
    line = f"tools: {total:,} tokens"
    if biggest:
        line += ", biggest: " + ", ".join(f"{name} ({tokens:,})" for name, tokens in biggest.items())
    return line


class ContextMeter(QWidget):
    """Used / window tokens of the open thread's model, with the share (see the module docstring)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ContextMeter")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 6, 0)
        layout.setSpacing(6)
        self.bar = QProgressBar(self)
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedSize(64, 6)
        self.label = QLabel("", self)
        layout.addWidget(self.bar, 0, Qt.AlignmentFlag.AlignVCenter)
        layout.addWidget(self.label, 0, Qt.AlignmentFlag.AlignVCenter)
        self.used = 0
        self.window_size = 0
        self.estimated = True
        self.threshold = 0.8
        self.system_tokens = 0
        self.tools_tokens = 0
        self.biggest_tools: dict[str, int] = {}
        self._base = 0  # the count the streamed text is added to
        self._streamed = 0
        self._compacted: str | None = None
        self.setVisible(False)

    # -- fed by the bridge ------------------------------------------------------------------------
    def show_usage(self, event: ev.ContextUsage | None) -> None:
        """A count of the window (None: no thread, or nothing counted yet: hidden)."""
        if event is None or not event.window:
            self.clear()
            return
        self.window_size = event.window
        self.threshold = event.threshold
        self.system_tokens, self.tools_tokens = event.system_tokens, event.tools_tokens
        self.biggest_tools = dict(event.biggest_tools)
        self.estimated = event.estimated
        self._base, self._streamed = event.used, 0
        if not event.estimated:
            self._compacted = None
        self._update(event.used)

    def show_compacted(self, event: ev.ContextCompacted) -> None:
        """The conversation was compacted: the count after it."""
        if not event.window:
            return
        self.window_size = event.window
        self._base, self._streamed = event.tokens_after, 0
        self.estimated = True
        count = event.newly_replaced or event.replaced_count
        self._compacted = (f"Compacted: {count} earlier message{'s' if count != 1 else ''} summarised "
                           f"({event.tokens_before:,} → {event.tokens_after:,} tokens)")
        self._update(event.tokens_after)

    def add_streamed(self, text: str) -> None:
        """Text of the answer arriving: the window fills while it streams (estimated)."""
        if not self.window_size or not text:
            return
        self._streamed += len(text)
        self.estimated = True
        self._update(self._base + math.ceil(self._streamed / CHARS_PER_TOKEN))

    def clear(self) -> None:
        self.used = self.window_size = self._base = self._streamed = 0
        self._compacted = None
        self.label.setText("")
        self.setToolTip("")
        self.setVisible(False)

    # -- showing ----------------------------------------------------------------------------------
    @property
    def share(self) -> float:
        return self.used / self.window_size if self.window_size else 0.0

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.window_size:
            self._update(self.used)  # the bar and the label in the new theme's colours

    def _level(self) -> str:
        share = self.share
        if share >= self.threshold:
            return "full"
        if share >= self.threshold * 0.75:
            return "filling"
        return "ok"

    def _update(self, used: int) -> None:
        self.used = max(0, int(used))
        share = self.share
        approx = "~" if self.estimated else ""
        self.label.setText(f"{approx}{short_tokens(self.used)} / {short_tokens(self.window_size)} · {share:.0%}")
        self.bar.setValue(min(1000, int(share * 1000)))
        c = theme.colors()
        color = {"ok": c.accent, "filling": c.warning, "full": c.error}[self._level()]
        self.bar.setStyleSheet(f"QProgressBar {{ border: none; border-radius: 3px; background: {c.border}; }}"
                               f"QProgressBar::chunk {{ border-radius: 3px; background: {color}; }}")
        self.label.setStyleSheet(f"color: {c.muted if self._level() == 'ok' else color};")
        messages = max(0, self.used - self.system_tokens - self.tools_tokens)
        lines = [
            f"Context window: {self.used:,} of {self.window_size:,} tokens ({share:.0%})"
            + (", estimated" if self.estimated else ", as the server counted"),
            f"System prompt {self.system_tokens:,} · tools {self.tools_tokens:,} · messages {messages:,}",
            *([tools_line(self.tools_tokens, self.biggest_tools)] if self.tools_tokens else []),
            f"Older messages are compacted at {self.threshold:.0%} of the window (/compact does it now)",
        ]
        if self._compacted:
            lines.append(self._compacted)
        self.setToolTip("\n".join(lines))
        self.setVisible(True)
