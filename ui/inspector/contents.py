"""What the inspector's models show of a thread, worked out from its events away from the window's thread.

A stored thread of 10,000 turns has some 60,000 events: matching its tool calls with their results, its memory
changes and its events' kinds took the window's thread over a second in one step when the inspector's read of them
ended. :meth:`InspectorContents.of` does that work where it is called (the inspector's worker thread, which read
the events); the models then take the results whole (:meth:`InspectorContents.show`), in a step as short as a reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ui.inspector.memory import MemoryEntry, memory_entries
from ui.inspector.tool_calls import CallLedger

if TYPE_CHECKING:
    from collections.abc import Callable

    from ui.inspector.memory import MemoryModel
    from ui.inspector.tool_calls import ToolCallsModel
    from ui.inspector.trace import TraceModel
    from workspace import events as ev


@dataclass
class InspectorContents:
    """A thread's events and what the Tool calls, Memory and Trace models show of them (no Qt: a worker thread
    makes one; only the window's thread shows it)."""

    #: Every event, in order.
    events: list[ev.Event]
    #: The trace's rows (its last ``limit`` events) and their kinds (the trace's kind filter).
    trace_rows: list[ev.Event]
    kinds: set[str]
    #: The tool calls, each with its result.
    calls: CallLedger
    #: The memory's keys as the events left them.
    memory: list[MemoryEntry]

    @classmethod
    def of(cls, events: list[ev.Event], *, trace_limit: int,
           between: Callable[[], object] | None = None) -> InspectorContents:
        """What the inspector shows of ``events`` (a trace of at most ``trace_limit`` rows). ``between``: called
        between parts of the calls' matching (a worker waiting there while the window holds it back)."""
        rows = events[-trace_limit:]
        return cls(events=events, trace_rows=rows, kinds={e.kind for e in rows},
                   calls=CallLedger.of(events, between=between), memory=memory_entries(events))

    def show(self, *, trace: TraceModel, tools: ToolCallsModel, memory: MemoryModel) -> None:
        """Put the contents in the models (a reset each; the models keep the calls and entries and go on with
        them as live events come)."""
        trace.set_events(self.trace_rows, kinds=self.kinds)
        tools.set_ledger(self.calls)
        memory.set_rows(self.memory)
