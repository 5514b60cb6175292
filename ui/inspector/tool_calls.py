"""ToolCallsModel: tool call/result pairs matched by run and call id.

A call id is unique only within its run: local servers number their calls (``call_0``, ``call_1``)
afresh in every request, so a thread holds several calls with the same id."""

from __future__ import annotations

import bisect
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, Qt

from ui.ansi import PLAIN, AnsiParser, Style
from ui.formatting import FAILED_CALL, format_duration, result_error
from ui.widgets.table_model import RowsTableModel
from workspace import events as ev

#: The colour state of an output's start (and of most chunks' starts).
_PLAIN_STATE: tuple[Style, str] = (PLAIN, "")

#: Events :meth:`CallLedger.of` matches between two calls of its ``between`` (a few ms of CPU).
LEDGER_PART = 2000
#: The events about one tool call (matched by their ``id``).
CallEvent = ev.ToolUse | ev.ApprovalRequested | ev.ApprovalDecided | ev.ToolResult | ev.ToolError


STATUS_LABELS = {
    "running": "running",
    "approval": "approval",
    "ok": "ok",
    "error": "error",
    "denied": "denied",
    "stopped": "stopped",
}


@dataclass(slots=True)
class ToolCallRecord:
    id: str
    tool: str
    robot: str
    server: str | None = None
    input: Any = None
    status: str = "running"
    duration: float | None = None
    payload: Any = None
    error: Any = None
    raw: Any = None
    run_id: str = ""
    started: float = field(default_factory=time.time)
    decision: str | None = None
    reason: str | None = None
    #: What the call printed while it ran (its ``tool_output`` chunks, as they came), and where each ends in the
    #: output: a part is read from the chunks it spans (:meth:`output_slice`), never the whole joined.
    output_chunks: list[str] = field(default_factory=list)
    output_ends: list[int] = field(default_factory=list)
    #: The colour state where each chunk starts (the style in force, an escape sequence cut at the chunk before's
    #: end): a part is painted from the state of the chunk it starts in, never by reading the output from its start.
    output_states: list[tuple[Style, str]] = field(default_factory=list)
    _output_parser: AnsiParser = field(default_factory=AnsiParser, repr=False)

    def add_output(self, text: str) -> None:
        parser = self._output_parser
        state = (parser.style, parser.pending)
        self.output_states.append(_PLAIN_STATE if state == _PLAIN_STATE else state)
        parser.skip(text)  # the style only (no spans): one regex pass, and none for a chunk without escapes
        self.output_chunks.append(text)
        self.output_ends.append(self.output_length + len(text))

    def output_styled(self, start: int, end: int) -> list[tuple[str, Style]]:
        """``output[start:end]`` as (text, style) spans, escape sequences gone: read from the known state of the
        chunk ``start`` is in (a part may start inside a colour, or inside an escape sequence)."""
        start, end = max(0, start), min(end, self.output_length)
        if start >= end:
            return []
        i = bisect.bisect_right(self.output_ends, start)
        parser = AnsiParser()
        parser.style, parser.pending = self.output_states[i]
        chunk_start = self.output_ends[i] - len(self.output_chunks[i])
        if start > chunk_start:
            parser.skip(self.output_chunks[i][:start - chunk_start])
        return parser.feed(self.output_slice(start, end))

    @property
    def output_length(self) -> int:
        return self.output_ends[-1] if self.output_ends else 0

    def output_slice(self, start: int, end: int) -> str:
        """``output[start:end]``, joined from the chunks it spans."""
        start, end = max(0, start), min(end, self.output_length)
        pieces: list[str] = []
        i = bisect.bisect_right(self.output_ends, start)
        while start < end and i < len(self.output_chunks):
            chunk_start = self.output_ends[i] - len(self.output_chunks[i])
            pieces.append(self.output_chunks[i][start - chunk_start:end - chunk_start])
            start = self.output_ends[i]
            i += 1
        return "".join(pieces)

    @property
    def output(self) -> str:
        """Everything the call printed, as it came."""
        return "".join(self.output_chunks)

    @property
    def failed(self) -> bool:
        """The call failed: a ``tool_error`` (an ``is_error`` output), a denial, a stop, or a result
        whose payload is an error (``{"error": ...}``, MCP's ``isError``)."""
        return self.status in FAILED_CALL

    @property
    def result_value(self) -> Any:
        """What the call returned, for showing and diffing: the payload or the error."""
        if self.failed:
            return {"error": self.error}
        return self.payload

    @property
    def display_name(self) -> str:
        if self.server:
            short = self.tool.split("__", 1)[-1] if self.tool.startswith(f"{self.server}__") else self.tool
            return f"{self.server} › {short}"
        return self.tool

    def raw_json(self) -> str:
        data = {"id": self.id, "tool": self.tool, "server": self.server, "robot": self.robot, "input": self.input,
                "status": self.status, "duration": self.duration, "payload": self.payload, "error": self.error,
                "raw": self.raw, "decision": self.decision, "reason": self.reason}
        return json.dumps(data, indent=2, ensure_ascii=False, default=str)


class CallLedger:
    """The tool calls of a stream of events, matched by run and call id: the records in the order their calls came,
    and where each is. No Qt: a worker thread builds one from a long thread's events (:meth:`of`), which the model
    then takes whole (:meth:`ToolCallsModel.set_ledger`), so the window's thread does not go through them."""

    def __init__(self, rows: list[ToolCallRecord] | None = None) -> None:
        #: The calls, in the order they came (the model's rows: the same list).
        self.rows: list[ToolCallRecord] = [] if rows is None else rows
        #: Where each call is in :attr:`rows`, by (run id, call id).
        self.by_id: dict[tuple[str, str], int] = {(rec.run_id, rec.id): i for i, rec in enumerate(self.rows)}

    @classmethod
    def of(cls, events: Iterable[ev.Event], *, between: Callable[[], object] | None = None) -> CallLedger:
        """The calls of ``events``. ``between``: called before each :data:`LEDGER_PART` of them (a worker matching a
        long thread's calls waits there while the window holds it back: all of them took 150-200 ms of CPU)."""
        ledger = cls()
        for number, event in enumerate(events):
            if between is not None and not number % LEDGER_PART:
                between()
            ledger.add(event)
        return ledger

    def find(self, call_id: str, run_id: str | None = None) -> ToolCallRecord | None:
        """The call ``call_id`` of run ``run_id`` (of any run, the latest, when ``run_id`` is None)."""
        if run_id is not None:
            row = self.by_id.get((run_id, call_id))
            return self.rows[row] if row is not None else None
        return next((rec for rec in reversed(self.rows) if rec.id == call_id), None)

    def add(self, event: ev.Event) -> ToolCallRecord | None:
        """Take ``event`` in: the call it made or changed (None: not about a call, or a call's output). A new call
        goes at the end of :attr:`rows`."""
        match event:
            case ev.ToolUse():
                return self._upsert(event, status="running")
            case ev.ApprovalRequested():
                return self._upsert(event, status="approval")
            case ev.ApprovalDecided():
                rec = self._ensure(event)
                rec.decision = event.decision
                rec.reason = event.reason
                if event.decision == "approve":
                    rec.status = "running"
                    if event.input is not None:
                        rec.input = event.input
                else:
                    rec.status = "denied"
                return rec
            case ev.ToolResult():
                rec = self._ensure(event)
                error = result_error(event.payload, event.raw)
                rec.status = "ok" if error is None else "error"
                rec.payload = event.payload
                rec.error = error
                rec.raw = event.raw
                rec.duration = event.duration
                return rec
            case ev.ToolOutput():
                found = self.find(event.id, event.run_id)
                if found is not None:  # shown when the call is (re)selected or ends: no repaint per chunk
                    found.add_output(event.text)
                return None
            case ev.ToolError():
                rec = self._ensure(event)
                if rec.status != "denied":
                    rec.status = "stopped" if "stopped the run" in str(event.error) else "error"
                rec.error = event.error
                rec.raw = event.raw
                rec.duration = event.duration
                return rec
            case _:
                return None  # not about a tool call

    def _ensure(self, event: CallEvent) -> ToolCallRecord:
        rec = self.find(event.id, event.run_id)
        if rec is None:
            rec = self._upsert(event, status="running")
        return rec

    def _upsert(self, event: CallEvent, *, status: str) -> ToolCallRecord:
        # A result or an error carries no arguments; an approval decision runs on no server.
        args = getattr(event, "input", None)
        rec = self.find(event.id, event.run_id)
        if rec is not None:
            if rec.status in ("running", "approval"):
                rec.status = status
            if args is not None and rec.input is None:
                rec.input = args
            return rec
        rec = ToolCallRecord(id=event.id, tool=event.name, robot=event.robot, server=getattr(event, "server", None),
                             input=args, status=status, run_id=event.run_id, started=event.ts)
        self.by_id[rec.run_id, rec.id] = len(self.rows)
        self.rows.append(rec)
        return rec


#: The events that make or change a call's row (a call's output changes no cell).
_CALL_EVENTS = (ev.ToolUse, ev.ApprovalRequested, ev.ApprovalDecided, ev.ToolResult, ev.ToolError)


class ToolCallsModel(RowsTableModel[ToolCallRecord]):
    COLUMNS = ("Tool", "Server", "Robot", "Status", "Duration")
    COL_TOOL, COL_SERVER, COL_ROBOT, COL_STATUS, COL_DURATION = range(5)
    RecordRole = Qt.ItemDataRole.UserRole
    SortRole = Qt.ItemDataRole.UserRole + 1

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._ledger = CallLedger(self._rows)

    def reindex(self) -> None:
        self._ledger = CallLedger(self._rows)

    def cell(self, rec: ToolCallRecord, col: int, role: int) -> Any:
        if role == self.RecordRole:
            return rec
        if role in (Qt.ItemDataRole.DisplayRole, self.SortRole):
            if col == self.COL_TOOL:
                return rec.tool.split("__", 1)[-1] if rec.server else rec.tool
            if col == self.COL_SERVER:
                return rec.server or "local"
            if col == self.COL_ROBOT:
                return rec.robot
            if col == self.COL_STATUS:
                return STATUS_LABELS.get(rec.status, rec.status)
            if col == self.COL_DURATION:
                if role == self.SortRole:
                    return rec.duration or 0.0
                return format_duration(rec.duration) if rec.duration is not None else "…"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{rec.display_name} ({rec.id})"
        if role == Qt.ItemDataRole.TextAlignmentRole and col == self.COL_DURATION:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    # -- data -----------------------------------------------------------------------------
    @property
    def records(self) -> list[ToolCallRecord]:
        return list(self._rows)

    @property
    def failed_count(self) -> int:
        """Calls that failed (see :attr:`ToolCallRecord.failed`): what the Status column says "error"/"denied"/
        "stopped" for."""
        return sum(1 for r in self._rows if r.failed)

    def record(self, row: int) -> ToolCallRecord:
        return self._rows[row]

    def find(self, call_id: str, run_id: str | None = None) -> ToolCallRecord | None:
        """The call ``call_id`` of run ``run_id`` (of any run, the latest, when ``run_id`` is None)."""
        return self._ledger.find(call_id, run_id)

    def add_events(self, events: list[ev.Event]) -> None:
        for event in events:
            self.add_event(event)

    def set_events(self, events: list[ev.Event]) -> None:
        """Replace everything with the calls in ``events`` (one reset, not a signal per row)."""
        self.set_ledger(CallLedger.of(events))

    def set_ledger(self, ledger: CallLedger) -> None:
        """Show the calls of ``ledger`` (made from events, in a worker for a long thread), which the model keeps
        and goes on with: one reset, the calls neither matched again nor indexed again."""
        self.beginResetModel()
        self._rows, self._ledger = ledger.rows, ledger
        self.endResetModel()

    def add_event(self, event: ev.Event) -> None:
        if not isinstance(event, _CALL_EVENTS):
            self._ledger.add(event)  # (a call's output: kept by its record, shown when the call is)
            return
        new = self._ledger.find(event.id, event.run_id) is None
        if new:
            row = len(self._rows)
            self.beginInsertRows(QModelIndex(), row, row)
        rec = self._ledger.add(event)
        if new:
            self.endInsertRows()
        if rec is not None and not (new and isinstance(event, ev.ToolUse | ev.ApprovalRequested)):
            # (a call made by its result or its decision: its row changed too, as it did before it was a row)
            self.row_changed(self._ledger.by_id[rec.run_id, rec.id])


def diff_results(a: ToolCallRecord, b: ToolCallRecord) -> str:
    """A unified diff (difflib) of two results' pretty JSON."""
    import difflib

    from ui.markdown import to_json_text

    left = to_json_text(a.result_value).splitlines()
    right = to_json_text(b.result_value).splitlines()
    lines = difflib.unified_diff(left, right, fromfile=f"{a.display_name} ({a.id})",
                                 tofile=f"{b.display_name} ({b.id})", lineterm="")
    return "\n".join(lines) or "(the two results are identical)"


__all__ = ["CallLedger", "ToolCallRecord", "ToolCallsModel", "diff_results"]
