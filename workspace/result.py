"""``RobotResult``, the output of one robot run (spec 1.2 and 2.6), and ``Usage``.

The JSON shape is RobotLab's export, so results move between RobotLab and the workspace.
``usage`` and ``duration`` are the workspace's additions; they are serialized after RobotLab's
keys and only when set.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from workspace.messages import Message, ToolResultMessage, format_time, parse_time

__all__ = ["RobotResult", "Usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one or more model calls, and their cost in USD when known."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: object) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        both_unknown = self.cost is None and other.cost is None
        cost = None if both_unknown else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, cost)

    def to_dict(self) -> dict[str, Any]:
        """``{input_tokens, output_tokens, cost?}`` (cost only when known)."""
        out: dict[str, Any] = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cost is not None:
            out["cost"] = self.cost
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Usage | None) -> Usage:
        """Rebuild from :meth:`to_dict`; also reads OpenAI's ``prompt_tokens``/``completion_tokens``."""
        if isinstance(data, Usage):
            return data
        if not data:
            return cls()
        d = {str(k): v for k, v in data.items()}
        input_tokens = d.get("input_tokens", d.get("prompt_tokens")) or 0
        output_tokens = d.get("output_tokens", d.get("completion_tokens")) or 0
        cost = d.get("cost")
        return cls(int(input_tokens), int(output_tokens), None if cost is None else float(cost))


def _normalize_output(output: Any) -> list[Message]:
    if output is None:
        return []
    if isinstance(output, Message | Mapping | str):
        output = [output]
    items: list[Message] = []
    for item in output:
        if isinstance(item, Message):
            items.append(item)
        elif isinstance(item, Mapping):
            items.append(Message.from_dict(item))
        else:
            raise ValueError("Invalid message: must be Message or dict")
    return items


def _normalize_tool_calls(tool_calls: Any) -> list[Message]:
    if tool_calls is None:
        return []
    if isinstance(tool_calls, Message | Mapping | str):
        tool_calls = [tool_calls]
    items: list[Message] = []
    for item in tool_calls:
        if isinstance(item, ToolResultMessage):
            items.append(item)
        elif isinstance(item, Mapping):
            items.append(Message.from_dict(item))
        else:
            raise ValueError("Invalid tool result: must be ToolResultMessage or dict")
    return items


def _dump_debug(value: Any) -> Any:
    """Messages in a debug list (prompt/history) as dicts; other items as they are."""
    if isinstance(value, list | tuple):
        return [item.to_dict() if hasattr(item, "to_dict") else item for item in value]
    return value


def _load_debug(value: Any) -> Any:
    """Inverse of :func:`_dump_debug`: message-shaped dicts become Messages."""
    if not isinstance(value, list):
        return value
    out: list[Any] = []
    for item in value:
        if isinstance(item, Mapping) and item.get("type") in ("text", "tool_call", "tool_result"):
            try:
                out.append(Message.from_dict(item))
                continue
            except ValueError:
                pass
        out.append(item)
    return out


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


class RobotResult:
    """What one robot run produced: output messages, tool results, stop reason and metadata."""

    def __init__(
        self,
        robot_name: str,
        output: Iterable[Message | Mapping[str, Any]] | Message | Mapping[str, Any] | None,
        tool_calls: Iterable[ToolResultMessage | Mapping[str, Any]] | None = (),
        created_at: datetime | str | int | float | None = None,
        id: str | None = None,
        stop_reason: str | None = None,
        prompt: list[Any] | None = None,
        history: list[Any] | None = None,
        raw: Any = None,
        usage: Usage | Mapping[str, Any] | None = None,
        duration: float | None = None,
    ) -> None:
        self._robot_name = str(robot_name)
        self._output = _normalize_output(output)
        self._tool_calls = _normalize_tool_calls(tool_calls)
        when = parse_time(created_at) if created_at is not None else datetime.now(UTC)
        self._created_at = when.replace(microsecond=0)
        self._id = id if id is not None else str(uuid.uuid4())
        self._stop_reason = stop_reason
        self.prompt = prompt
        self.history = history
        self.raw = raw
        self.usage: Usage | None = Usage.from_dict(usage) if usage is not None else None
        self.duration: float | None = duration

    # -- read-only attributes ---------------------------------------------------------------

    @property
    def robot_name(self) -> str:
        """The robot that produced this result."""
        return self._robot_name

    @property
    def output(self) -> list[Message]:
        """The messages the robot produced (a copy)."""
        return list(self._output)

    @property
    def tool_calls(self) -> list[Message]:
        """The tool results of the run (a copy)."""
        return list(self._tool_calls)

    @property
    def created_at(self) -> datetime:
        """When the result was created (timezone-aware, whole seconds)."""
        return self._created_at

    @property
    def id(self) -> str:
        """The result id (a UUIDv4 unless given)."""
        return self._id

    @property
    def stop_reason(self) -> str | None:
        """Why the run stopped; free text (``"stop"``, ``"tool"``, ``"max_tokens"``...)."""
        return self._stop_reason

    # -- derived ----------------------------------------------------------------------------

    @property
    def checksum(self) -> str:
        """SHA-256 hex of the compact JSON of output, tool_calls and created_at (epoch seconds)."""
        payload = {
            "output": [m.to_dict() for m in self._output],
            "tool_calls": [m.to_dict() for m in self._tool_calls],
            "created_at": math.floor(self._created_at.timestamp()),
        }
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=_json_default)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def last_text_content(self) -> Any:
        """Content of the last text message in ``output``, or ``None``."""
        for message in reversed(self._output):
            if message.is_text:
                return message.content
        return None

    @property
    def has_tool_calls(self) -> bool:
        """True when ``output`` holds a tool-call message or ``tool_calls`` is not empty."""
        return bool(self._tool_calls) or any(m.is_tool_call for m in self._output)

    @property
    def is_stopped(self) -> bool:
        """RobotLab's rule: the last output message says "stop", or has no stop reason and no
        tool calls were made. False for an empty output."""
        if not self._output:
            return False
        last = self._output[-1]
        if last.stop_reason == "stop":
            return True
        return not self.has_tool_calls and last.stop_reason is None

    # -- serialization ----------------------------------------------------------------------

    def export(self) -> dict[str, Any]:
        """RobotLab's export: ``{robot_name, output, tool_calls, created_at, id, checksum, stop_reason}``."""
        out: dict[str, Any] = {
            "robot_name": self._robot_name,
            "output": [m.to_dict() for m in self._output],
            "tool_calls": [m.to_dict() for m in self._tool_calls],
            "created_at": format_time(self._created_at),
            "id": self._id,
            "checksum": self.checksum,
        }
        if self._stop_reason is not None:
            out["stop_reason"] = self._stop_reason
        return out

    def _additions(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        if self.duration is not None:
            out["duration"] = self.duration
        return out

    def to_dict(self) -> dict[str, Any]:
        """:meth:`export` plus the debug fields (prompt, history, raw) and usage/duration, when set."""
        out = self.export()
        if self.prompt is not None:
            out["prompt"] = _dump_debug(self.prompt)
        if self.history is not None:
            out["history"] = _dump_debug(self.history)
        if self.raw is not None:
            out["raw"] = self.raw
        out.update(self._additions())
        return out

    def to_json(self, *, indent: int | None = None) -> str:
        """JSON of :meth:`export` (plus usage/duration when set)."""
        data = self.export()
        data.update(self._additions())
        return json.dumps(data, ensure_ascii=False, indent=indent, default=_json_default)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RobotResult:
        """Rebuild from :meth:`export` or :meth:`to_dict`; a stored checksum is ignored."""
        d = {str(k): v for k, v in data.items()}
        return cls(
            robot_name=d.get("robot_name") or "",
            output=d.get("output") or [],
            tool_calls=d.get("tool_calls") or [],
            created_at=d.get("created_at"),
            id=d.get("id"),
            stop_reason=d.get("stop_reason"),
            prompt=_load_debug(d.get("prompt")),
            history=_load_debug(d.get("history")),
            raw=d.get("raw"),
            usage=d.get("usage"),
            duration=d.get("duration"),
        )

    # -- value semantics --------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RobotResult):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"RobotResult(robot_name={self._robot_name!r}, output={self._output!r}, "
                f"tool_calls={len(self._tool_calls)}, stop_reason={self._stop_reason!r}, id={self._id!r})")
