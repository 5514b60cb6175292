"""A comparison column's figures, from its candidate's events: tokens, time to the first token, tokens/s,
cost, tool calls and the verify run on its proposal. Qt-free: tested without a window."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from workspace import events as ev


@dataclass(slots=True)
class ColumnStats:
    """What a column's header shows of its candidate's run (the runs of this comparison so far)."""

    label: str
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    #: Seconds from the message to the first token of the latest run (None: none yet).
    ttft: float | None = None
    #: Seconds the latest run has been streaming (from its first token to its last, or to now while running).
    streaming_s: float = 0.0
    tool_calls: int = 0
    #: The verify run on this candidate's proposal: True passed, False failed, None none ran.
    verify: bool | None = None
    #: "waiting", "streaming", "finished", "failed", "cancelled".
    status: str = "waiting"
    #: Characters of answer text streamed (tokens/s is estimated from them until the server reports usage).
    chars: int = 0

    @property
    def tokens_per_s(self) -> float | None:
        """Output tokens per second of streaming (estimated from the text, 4 characters a token, until the
        server's usage says); None before a second token."""
        if self.streaming_s <= 0:
            return None
        tokens = self.output_tokens or self.chars / 4
        return tokens / self.streaming_s if tokens else None

    def to_dict(self) -> dict[str, Any]:
        """The figures as kept with the candidate's thread (``compare_stats``), to show again when it reopens."""
        return asdict(self)

    @classmethod
    def from_dict(cls, label: str, saved: Mapping[str, Any]) -> ColumnStats:
        """The figures kept by :meth:`to_dict` (unknown keys left out: an older or newer record)."""
        known = {f.name for f in fields(cls)} - {"label"}
        column = cls(label, **{k: v for k, v in saved.items() if k in known})
        if column.status == "streaming":  # kept mid-run: the run is gone
            column.status = "cancelled"
        return column

    def line(self) -> str:
        """The header's figures in one line: ``1,234 tok · TTFT 0.4 s · 52 tok/s · $0.0012 · 3 tools · verify ✓``."""
        parts = [f"{self.input_tokens + self.output_tokens:,} tok"]
        if self.ttft is not None:
            parts.append(f"TTFT {self.ttft:.1f} s")
        rate = self.tokens_per_s
        if rate is not None:
            parts.append(f"{rate:.0f} tok/s")
        if self.cost is not None:
            parts.append(f"${self.cost:.4f}")
        parts.append(f"{self.tool_calls} tool{'s' if self.tool_calls != 1 else ''}")
        if self.verify is not None:
            parts.append("verify ✓" if self.verify else "verify ✗")
        return " · ".join(parts)


class ComparisonStats:
    """Every column's :class:`ColumnStats`, fed with the comparison's events (each carries its ``candidate``)."""

    def __init__(self, labels: list[str], *, clock: Callable[[], float] = time.monotonic) -> None:
        self.columns = [ColumnStats(label) for label in labels]
        self._clock = clock
        self._sent: float | None = None
        self._first: dict[int, float] = {}
        self._base: dict[int, tuple[int, int, float | None]] = {}

    def restore(self, index: int, saved: Mapping[str, Any]) -> None:
        """Candidate ``index``'s figures as kept with its thread (:meth:`ColumnStats.to_dict`)."""
        self.columns[index] = ColumnStats.from_dict(self.columns[index].label, saved)

    def message_sent(self, candidates: list[int] | None = None) -> None:
        """A message went to ``candidates`` (default: all): their time to first token counts from now."""
        self._sent = self._clock()
        for index in candidates if candidates is not None else range(len(self.columns)):
            column = self.columns[index]
            column.ttft, column.streaming_s, column.chars, column.status = None, 0.0, 0, "waiting"
            self._first.pop(index, None)
            self._base[index] = (column.input_tokens, column.output_tokens, column.cost)

    def feed(self, event: ev.Event) -> int | None:
        """Count ``event`` in its candidate's column; returns that candidate (None: not a comparison's)."""
        index = event.candidate
        if index is None or not 0 <= index < len(self.columns):
            return None
        column = self.columns[index]
        now = self._clock()
        if isinstance(event, ev.TextDelta | ev.ToolUse) and not event.nested:
            if index not in self._first:
                self._first[index] = now
                if self._sent is not None:
                    column.ttft = now - self._sent
                column.status = "streaming"
            if isinstance(event, ev.TextDelta):
                column.chars += len(event.text)
        if index in self._first and column.status == "streaming":
            column.streaming_s = now - self._first[index]
        if isinstance(event, ev.ToolUse):
            column.tool_calls += 1
        elif isinstance(event, ev.RunStarted) and not event.nested:
            column.model = event.model or column.model
        elif isinstance(event, ev.Usage) and not event.nested:
            base_in, base_out, base_cost = self._base.get(index, (0, 0, None))
            column.input_tokens = base_in + event.total_input_tokens
            column.output_tokens = base_out + event.total_output_tokens
            if event.total_cost is not None:
                column.cost = (base_cost or 0.0) + event.total_cost
        elif isinstance(event, ev.VerifyFinished):
            column.verify = event.passed
        elif event.terminal and not event.nested:
            column.status = {"run_finished": "finished", "run_failed": "failed"}.get(event.kind, "cancelled")
        return index
