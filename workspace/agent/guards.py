"""The tool loop's guards (RobotLab 0.2): :class:`DoomLoopDetector` (the same call, a tool with the same
arguments, or the same cycle of calls, made again and again: the model is warned in the tool's result) and
the circuit breaker's message (``max_tool_rounds``: :class:`workspace.errors.ToolLoopError`). ``max_tools``
caps the tools a run offers (:data:`DEFAULT_MAX_TOOLS`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

#: RobotLab's ``DEFAULT_MAX_TOOLS``: the most tools a run offers the model (the rest are dropped, said).
DEFAULT_MAX_TOOLS = 128

_ADVICE = ("You appear to be stuck in a loop. Try a fundamentally different approach, use a different tool, "
           "or ask for clarification.")


class DoomLoopDetector:
    """Tracks the calls a run makes and tells when the last ones repeat: one call ``threshold`` times in a row
    (A, A, A), or a cycle of 2 to :attr:`MAX_PERIOD` calls repeated ``threshold`` times (A, B, C, A, B, C, A, B,
    C). A call is its tool's name and, when :meth:`track` is given them, its arguments: a tool called again with
    other arguments (three ``recall`` calls of different keys, made at once) is progress, not a loop. Tracked by
    name alone (RobotLab's ``track(name)``), calls of one tool are one call."""

    DEFAULT_THRESHOLD = 3
    MAX_PERIOD = 10

    def __init__(self, threshold: int = DEFAULT_THRESHOLD) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 2:
            raise ValueError(f"DoomLoopDetector: threshold must be a whole number of at least 2 (got {threshold!r})")
        self.threshold = threshold
        self._names: list[str] = []
        self._calls: list[tuple[str, str]] = []  # (name, a digest of the arguments; "" when not given)

    @property
    def sequence(self) -> list[str]:
        """The tool names tracked so far."""
        return list(self._names)

    def track(self, tool_name: Any, arguments: Any = None) -> None:
        """One call of ``tool_name``; ``arguments`` (its input), when given, tell calls of one tool apart."""
        self._names.append(str(tool_name))
        self._calls.append((str(tool_name), "" if arguments is None else _digest(arguments)))

    def reset(self) -> None:
        self._names.clear()
        self._calls.clear()

    def _period(self) -> int | None:
        calls, k = self._calls, self.threshold
        if len(calls) >= k and len(set(calls[-k:])) == 1:
            return 1
        for period in range(2, min(self.MAX_PERIOD, len(calls) // k) + 1):
            tail = calls[-k * period:]
            if tail == tail[:period] * k and len(set(tail[:period])) > 1:
                return period
        return None

    @property
    def doom_loop(self) -> bool:
        """RobotLab's ``doom_loop?``: the last calls repeat (one call or a cycle) ``threshold`` times."""
        return self._period() is not None

    def warning_message(self) -> str | None:
        """What the model is told when :attr:`doom_loop` (None otherwise)."""
        period = self._period()
        if period is None:
            return None
        k = self.threshold
        if period == 1:
            same = " with the same arguments" if self._calls[-1][1] else ""
            return (f"Tool '{self._names[-1]}' has been called {k}+ times consecutively{same} with no progress. "
                    f"{_ADVICE}")
        pattern = " → ".join(self._names[-period:])
        return f"Tool call pattern [{pattern}] has repeated {k}+ times. {_ADVICE}"


#: The canonical JSON of a call's arguments: ``json.dumps(arguments, sort_keys=True, ensure_ascii=False,
#: default=str)``'s text, by one encoder made once (``json.dumps`` given options makes one at every call).
_canonical: Callable[[Any], str] = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str).encode


def _digest(arguments: Any) -> str:
    """The arguments of a call as a short digest of their canonical JSON: equal for equal arguments, and a run of
    large calls (a file's whole text) keeps 32 characters each, not the text."""
    text = _canonical(arguments)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def with_warning(content: Any, warning: str) -> Any:
    """A tool result with the doom-loop ``warning`` added: after the text (``"\\n\\n⚠️ "``), or under
    ``_doom_loop_warning`` in a mapping."""
    if isinstance(content, str):
        return f"{content}\n\n⚠️ {warning}"
    if isinstance(content, dict):
        return {**content, "_doom_loop_warning": warning}
    return {"result": content, "_doom_loop_warning": warning}


def circuit_breaker_message(count: int, limit: int) -> str:
    return f"Circuit breaker triggered: {count} tool calls exceeded max_tool_rounds ({limit})"
