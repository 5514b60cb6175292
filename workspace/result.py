"""``RobotResult``, the output of one robot run (spec 1.2 and 2.6), and ``Usage``.

The JSON shape is RobotLab's export, so results move between RobotLab and the workspace.
``usage``, ``duration`` and ``output_data`` (the validated object of a robot with an output type,
:mod:`workspace.output`, as JSON) are the workspace's additions; they are serialized after
RobotLab's keys and only when set.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from workspace.messages import Message, ToolResultMessage, format_time, parse_time

if TYPE_CHECKING:
    from workspace.agent import AgentRun
    from workspace.events import Event
    from workspace.memory import Memory

__all__ = ["STATUSES", "STOP_NOTES", "NetworkResult", "RobotResult", "TaskState", "Usage", "last_text",
           "result_from_dict", "to_jsonable"]

#: What a run's ``stop_reason`` means for people, for the reasons that need saying (a run that simply
#: answered, ``stop``, needs no note). The window, the CLI and the exports show these.
STOP_NOTES: dict[str, str] = {
    "length": "The answer was cut off at the token limit (max_tokens): ask the robot to continue, or raise "
              "max_tokens.",
    "context_full": "The answer stopped because the model's context window is full (the conversation and the "
                    "answer filled it): raising max_tokens cannot help. Compact the conversation (/compact), start "
                    "a new thread, or give the model a larger window (the server's context size, e.g. llama.cpp's "
                    "-c, and llm.context_window).",
    "max_turns": "Stopped at the turn limit: the robot wanted to go on.",
    "max_cost": "Stopped: the run reached its cost budget (max_cost).",
    "max_total_tokens": "Stopped: the run used up its token budget (max_total_tokens).",
}


def to_jsonable(value: Any) -> Any:
    """An output object as JSON data: pydantic models dumped, dataclasses as dicts, the rest as is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json.loads(json.dumps(dataclasses.asdict(value), default=str))
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one or more model calls, and their cost in USD when known.

    ``cost`` None means unknown (a local or unpriced model), never free. ``estimated``: some of the
    counts are the provider's estimate (the server reported none). ``reasoning_tokens`` are part of
    ``output_tokens``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    reasoning_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: object) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        both_unknown = self.cost is None and other.cost is None
        cost = None if both_unknown else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, cost,
                     self.reasoning_tokens + other.reasoning_tokens, self.estimated or other.estimated)

    def to_dict(self) -> dict[str, Any]:
        """``{input_tokens, output_tokens, cost?, reasoning_tokens?, estimated?}`` (each optional key only
        when known or set)."""
        out: dict[str, Any] = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cost is not None:
            out["cost"] = self.cost
        if self.reasoning_tokens:
            out["reasoning_tokens"] = self.reasoning_tokens
        if self.estimated:
            out["estimated"] = True
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
        return cls(int(input_tokens), int(output_tokens), None if cost is None else float(cost),
                   int(d.get("reasoning_tokens") or 0), bool(d.get("estimated")))


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
        output_data: Any = None,
    ) -> None:
        self._robot_name = str(robot_name)
        self._output = _normalize_output(output)
        self._tool_calls = _normalize_tool_calls(tool_calls)
        when = parse_time(created_at) if created_at is not None else datetime.now(UTC)
        self._created_at = when.replace(microsecond=0)
        if id is not None:  # else made when first read (see :attr:`id`)
            self._id = id
        self._stop_reason = stop_reason
        self.prompt = prompt
        self.history = history
        self.raw = raw
        self.usage: Usage | None = Usage.from_dict(usage) if usage is not None else None
        self.duration: float | None = duration
        #: The validated answer of a robot with an output type (a model or dataclass instance, or
        #: JSON for a JSON Schema); read back from JSON (:meth:`from_dict`) it is the JSON value.
        self.output_data: Any = output_data
        #: The robot that delegated this run (``Robot.delegate``), else None.
        self.delegated_by: str | None = None

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
        """The result id (a UUIDv4 unless given). One not given is made when first read (a run's result that
        nobody reads the id of, ``Robot.arun``'s, makes none: ~2.5 us a run); by ``dict.setdefault``, so that
        readers in two threads get the same one."""
        try:
            return self._id
        except AttributeError:
            made: str = self.__dict__.setdefault("_id", str(uuid.uuid4()))
            return made

    def __getstate__(self) -> dict[str, Any]:
        """The state a copy or a pickle takes: with the id made first (a copy has its original's id)."""
        _ = self.id
        return self.__dict__

    @property
    def stop_reason(self) -> str | None:
        """Why the run stopped; free text (``"stop"``, ``"tool"``, ``"max_tokens"``...)."""
        return self._stop_reason

    # -- derived ----------------------------------------------------------------------------

    @property
    def input_tokens(self) -> int | None:
        """The tokens the run sent the model (RobotLab's ``input_tokens``; None: the model did not say)."""
        return self.usage.input_tokens if self.usage is not None else None

    @property
    def output_tokens(self) -> int | None:
        """The tokens the model answered with (RobotLab's ``output_tokens``; None: the model did not say)."""
        return self.usage.output_tokens if self.usage is not None else None

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
            "id": self.id,
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
        if self.output_data is not None:
            out["output_data"] = to_jsonable(self.output_data)
        if self.delegated_by is not None:
            out["delegated_by"] = self.delegated_by
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
        """JSON of :meth:`export`, as RobotLab's spec has it: our additions (usage, duration,
        output_data, delegated_by) and the debug fields are in :meth:`to_dict` only."""
        return json.dumps(self.export(), ensure_ascii=False, indent=indent, default=_json_default)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RobotResult:
        """Rebuild from :meth:`export` or :meth:`to_dict`; a stored checksum is ignored."""
        d = {str(k): v for k, v in data.items()}
        result = cls(
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
            output_data=d.get("output_data"),
        )
        result.delegated_by = d.get("delegated_by")
        return result

    # -- value semantics --------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RobotResult):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"RobotResult(robot_name={self._robot_name!r}, output={self._output!r}, "
                f"tool_calls={len(self._tool_calls)}, stop_reason={self._stop_reason!r}, id={self.id!r})")


# Network runs: a task's live state and what a whole network run produced. They live beside
# RobotResult so the events (and anything that reads stored events) rebuild them without the
# network package.

WAITING = "waiting"
RUNNING = "running"
DONE: Final = "done"
FAILED: Final = "failed"
SKIPPED: Final = "skipped"
CANCELLED: Final = "cancelled"
STATUSES = (WAITING, RUNNING, DONE, FAILED, SKIPPED, CANCELLED)
TERMINAL_STATUSES = frozenset({DONE, FAILED, SKIPPED, CANCELLED})


def last_text(result: RobotResult | None) -> str:
    """The result's last text; for a structured answer given as a tool call (no text), its JSON."""
    if result is None:
        return ""
    text = result.last_text_content
    if text is None and result.output_data is not None:
        return json.dumps(to_jsonable(result.output_data), ensure_ascii=False, default=str)
    return "" if text is None else str(text)


@dataclass(eq=False)
class TaskState:
    """A task's live state in one run: what the Network dock shows and opens.

    ``status`` is one of waiting / running / done / failed / skipped / cancelled;
    ``events`` is the task's own event stream (its transcript); ``result`` its RobotResult
    (the partial one after a failure or a stop); ``reason`` why it failed, was skipped or stopped.
    """

    name: str
    robot: str
    optional: bool
    depends_on: list[str]
    status: str = WAITING
    message: str | None = None
    result: RobotResult | None = None
    error: str | None = None
    error_type: str | None = None
    reason: str | None = None
    run_id: str | None = None
    activated_by: str | None = None
    routed_to: list[str] = field(default_factory=list)
    started_at: float | None = None
    finished_at: float | None = None
    events: list[Event] = field(default_factory=list)
    agent_run: AgentRun | None = field(default=None, repr=False)

    @property
    def duration(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else time.time()
        return end - self.started_at

    @property
    def is_finished(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def text(self) -> str:
        """The task's last text (its answer)."""
        return last_text(self.result)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "robot": self.robot,
            "status": self.status,
            "optional": self.optional,
            "depends_on": list(self.depends_on),
            "message": self.message,
            "error": self.error,
            "reason": self.reason,
            "run_id": self.run_id,
            "activated_by": self.activated_by,
            "routed_to": list(self.routed_to),
            "duration": self.duration,
            "result": self.result.to_dict() if self.result is not None else None,
        }
        return {k: v for k, v in out.items() if v is not None}


@dataclass(eq=False)
class NetworkResult:
    """What a network run produced. ``value`` / ``last`` is the last finished task's RobotResult
    (RobotLab's ``result.value``); ``results`` holds each finished task's, by task name;
    ``context`` is RobotLab's ``result.context`` (by robot name, by task name, and ``run_params``)."""

    network: str
    status: str
    tasks: dict[str, TaskState]
    order: list[str]
    params: dict[str, Any]
    message: str = ""
    failed_task: str | None = None
    error: str | None = None
    duration: float = 0.0
    memory: Memory | None = field(default=None, repr=False)

    @property
    def results(self) -> dict[str, RobotResult]:
        """Finished tasks' results by task name, in the order they finished."""
        return {name: r for name in self.order if (r := self.tasks[name].result) is not None}

    @property
    def by_robot(self) -> dict[str, RobotResult]:
        """Finished tasks' results by robot name (RobotLab's context keys); the later wins."""
        return {r.robot_name: r for r in self.results.values()}

    @property
    def last(self) -> RobotResult | None:
        return self.tasks[self.order[-1]].result if self.order else None

    value = last

    @property
    def last_task(self) -> str | None:
        return self.order[-1] if self.order else None

    @property
    def last_text_content(self) -> Any:
        last = self.last
        return last.last_text_content if last is not None else None

    @property
    def context(self) -> dict[str, Any]:
        return {**self.by_robot, **self.results, "run_params": dict(self.params)}

    @property
    def skipped(self) -> list[str]:
        return [n for n, s in self.tasks.items() if s.status == SKIPPED]

    @property
    def activated(self) -> dict[str, str]:
        """Optional tasks that were activated, and by which task."""
        return {n: s.activated_by for n, s in self.tasks.items() if s.activated_by}

    @property
    def statuses(self) -> dict[str, str]:
        return {n: s.status for n, s in self.tasks.items()}

    @property
    def usage(self) -> Usage:
        total = Usage()
        for state in self.tasks.values():
            if state.result is not None and state.result.usage is not None:
                total = total + state.result.usage
        return total

    def __getitem__(self, name: str) -> RobotResult:
        return self.results[name]

    def __contains__(self, name: object) -> bool:
        return name in self.results

    def to_dict(self) -> dict[str, Any]:
        """The last result's RobotLab export at the top level (so a reader that expects a
        RobotResult gets the last one), then ``network``, ``status``, ``tasks`` and the rest."""
        last = self.last
        out: dict[str, Any] = last.to_dict() if last is not None else {
            "robot_name": self.network, "output": [], "tool_calls": []}
        out.update({
            "network": self.network,
            "status": self.status,
            "message": self.message,
            "last_task": self.last_task,
            "tasks": {name: state.to_dict() for name, state in self.tasks.items()},
            "order": list(self.order),
            "skipped": self.skipped,
            "failed_task": self.failed_task,
            "error": self.error,
            "network_duration": self.duration,
            "network_usage": self.usage.to_dict(),
        })
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NetworkResult:
        tasks: dict[str, TaskState] = {}
        for name, t in (data.get("tasks") or {}).items():
            result = t.get("result")
            tasks[name] = TaskState(
                name=name, robot=t.get("robot", name), optional=bool(t.get("optional")),
                depends_on=list(t.get("depends_on") or []), status=t.get("status", DONE), message=t.get("message"),
                result=RobotResult.from_dict(result) if isinstance(result, Mapping) else None,
                error=t.get("error"), reason=t.get("reason"), run_id=t.get("run_id"),
                activated_by=t.get("activated_by"), routed_to=list(t.get("routed_to") or []),
            )
        return cls(network=str(data.get("network", "")), status=str(data.get("status", DONE)), tasks=tasks,
                   order=list(data.get("order") or []), params={}, message=str(data.get("message", "")),
                   failed_task=data.get("failed_task"), error=data.get("error"),
                   duration=float(data.get("network_duration") or 0.0))

    def __repr__(self) -> str:
        return f"<NetworkResult {self.network!r} {self.status} {self.statuses!r}>"


def result_from_dict(data: Mapping[str, Any]) -> RobotResult | NetworkResult:
    """A stored result: a :class:`NetworkResult` when ``data`` is one (it has ``network`` and
    ``tasks``), else a :class:`RobotResult`."""
    if "network" in data and "tasks" in data:
        return NetworkResult.from_dict(data)
    return RobotResult.from_dict(data)
