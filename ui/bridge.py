"""The bridge: consumes a run's events (a RecordedRun or an AgentRun) and re-emits them
as Qt signals, on the GUI thread, without ever blocking the event loop.

Text deltas are coalesced: they are joined and emitted at most once per ``flush_ms``
(16 ms by default), so a view renders at a steady rate whatever the stream rate.
Every other event first flushes pending text (so order is kept) and is emitted at once.
Events for the trace are batched on the same timer.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from workspace import events as ev


class RunBridge(QObject):
    """One object between the core's event stream and the widgets."""

    #: The first event of a run (RunStarted).
    run_started = Signal(object)
    #: Coalesced text: (run_id, robot, text appended since the last emission).
    text_appended = Signal(str, str, str)
    #: A complete model turn's text (Text event) — the streamed text is final.
    text_completed = Signal(object)
    tool_used = Signal(object)
    approval_requested = Signal(object)
    approval_decided = Signal(object)
    tool_finished = Signal(object)  # ToolResult or ToolError
    memory_changed = Signal(object)
    change_proposed = Signal(object)
    change_decided = Signal(object)
    usage_reported = Signal(object)
    task_changed = Signal(object)  # TaskStarted / TaskFinished
    #: McpServers: MCP servers the run started without (still starting, failed) or that joined it.
    mcp_notice = Signal(object)
    #: The terminal event (RunFinished / RunFailed / RunCancelled).
    run_ended = Signal(object)
    #: Every event (deltas included), batched on the flush timer: list[Event].
    events_batched = Signal(list)
    running_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None, *, flush_ms: int = 16, yield_every_s: float = 0.004) -> None:
        super().__init__(parent)
        self._pending_text: list[str] = []
        self._pending_key: tuple[str, str] | None = None
        self._pending_events: list[ev.Event] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(flush_ms)
        self._timer.timeout.connect(self.flush)
        self._yield_every = yield_every_s
        self._active = 0
        self.events_seen = 0

    @property
    def running(self) -> bool:
        return self._active > 0

    async def consume(self, run: AsyncIterable[ev.Event]) -> ev.Event | None:
        """Feed every event of ``run`` through the bridge; returns the terminal event.

        Yields to the Qt event loop at least every ``yield_every_s`` seconds of work, so
        painting and input keep going even when events arrive faster than they render.
        """
        import asyncio

        self._active += 1
        if self._active == 1:
            self.running_changed.emit(True)
        terminal: ev.Event | None = None
        last_yield = time.perf_counter()
        try:
            async for event in run:
                self.feed(event)
                if event.terminal:
                    terminal = event
                now = time.perf_counter()
                if now - last_yield > self._yield_every:
                    await asyncio.sleep(0)
                    last_yield = time.perf_counter()
        finally:
            self.flush()
            self._active -= 1
            if self._active == 0:
                self.running_changed.emit(False)
        return terminal

    def feed(self, event: ev.Event) -> None:
        """Route one event (synchronous, cheap)."""
        self.events_seen += 1
        self._pending_events.append(event)
        if event.kind == "text_delta":
            key = (event.run_id, event.robot)
            if self._pending_key is not None and self._pending_key != key:
                self._flush_text()
            self._pending_key = key
            self._pending_text.append(event.text)  # type: ignore[attr-defined]
            if not self._timer.isActive():
                self._timer.start()
            return
        self._flush_text()
        self._emit(event)
        if not self._timer.isActive():
            self._timer.start()

    def _emit(self, event: ev.Event) -> None:
        kind = event.kind
        if kind == "run_started":
            self.run_started.emit(event)
        elif kind == "text":
            self.text_completed.emit(event)
        elif kind == "tool_use":
            self.tool_used.emit(event)
        elif kind == "approval_requested":
            self.approval_requested.emit(event)
        elif kind == "approval_decided":
            self.approval_decided.emit(event)
        elif kind in ("tool_result", "tool_error"):
            self.tool_finished.emit(event)
        elif kind == "memory_changed":
            self.memory_changed.emit(event)
        elif kind == "change_proposed":
            self.change_proposed.emit(event)
        elif kind == "change_decided":
            self.change_decided.emit(event)
        elif kind == "usage":
            self.usage_reported.emit(event)
        elif kind in ("task_started", "task_finished"):
            self.task_changed.emit(event)
        elif isinstance(event, ev.McpServers):
            self.mcp_notice.emit(event)
        elif event.terminal:
            self.flush()
            self.run_ended.emit(event)

    def _flush_text(self) -> None:
        if self._pending_text and self._pending_key is not None:
            text = "".join(self._pending_text)
            self._pending_text.clear()
            run_id, robot = self._pending_key
            self.text_appended.emit(run_id, robot, text)

    def flush(self) -> None:
        """Emit pending text and the pending event batch now."""
        self._timer.stop()
        self._flush_text()
        if self._pending_events:
            batch, self._pending_events = self._pending_events, []
            self.events_batched.emit(batch)


def event_summary(event: Any) -> str:
    """A one-line description of an event for the trace view."""
    kind = getattr(event, "kind", "?")
    if kind == "text_delta":
        return repr(event.text)[:120]
    if kind == "text":
        return (event.text[:120] + "…") if len(event.text) > 120 else event.text
    if kind in ("tool_use", "approval_requested"):
        return f"{event.name} {_short(event.input)}"
    if kind == "approval_decided":
        extra = f" — {event.reason}" if event.reason else ""
        return f"{event.name}: {event.decision} ({event.scope}){extra}"
    if kind == "tool_result":
        return f"{event.name} ok in {event.duration * 1000:.0f} ms: {_short(event.payload)}"
    if kind == "tool_error":
        return f"{event.name} error: {_short(event.error)}"
    if kind == "memory_changed":
        return f"{event.key} = {_short(event.value)} (by {event.writer or '?'})"
    if kind == "usage":
        cost = f", ${event.cost:.4f}" if event.cost else ""
        return f"{event.input_tokens} in / {event.output_tokens} out{cost}"
    if kind == "run_started":
        return f"{event.message[:80]!r} on {event.model}"
    if kind == "run_failed":
        return f"{event.error_type}: {event.error}"
    if kind == "run_cancelled":
        return event.reason
    if kind in ("task_started", "task_finished"):
        return f"task {event.task}: {getattr(event, 'status', '')}"
    if kind == "change_proposed":
        return f"{len(event.files)} file(s)"
    if isinstance(event, ev.McpServers):
        return str(event.message).replace("\n", " · ")
    return ""


def _short(value: Any, limit: int = 100) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
