"""Events of a run: what the UI, the store and the CLI all consume.

Every event is a frozen dataclass with a ``kind`` string, the ``run_id`` it belongs to,
the ``robot`` that produced it, a per-run sequence number ``seq`` and, inside a
network run, the ``task`` name. A run always ends with exactly one terminal event:
:class:`RunFinished`, :class:`RunFailed` or :class:`RunCancelled`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

_REGISTRY: dict[str, type[Event]] = {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every run event."""

    kind: ClassVar[str] = "event"
    #: True for the three events that end a run.
    terminal: ClassVar[bool] = False

    run_id: str
    robot: str
    seq: int = 0
    task: str | None = None
    ts: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``kind`` first, then the fields (RobotResults exported)."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = _to_jsonable(value)
        return out

    def replace(self, **changes: Any) -> Event:
        return dataclasses.replace(self, **changes)


def _to_jsonable(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_jsonable(v) for v in value]
    return value


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from :meth:`Event.to_dict` output (unknown fields are ignored)."""
    kind = data.get("kind")
    cls = _REGISTRY.get(str(kind))
    if cls is None:
        raise ValueError(f"Unknown event kind: {kind!r}. Known kinds: {', '.join(sorted(_REGISTRY))}")
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    kwargs = {k: v for k, v in data.items() if k in names}
    for key in _RESULT_FIELDS.get(cls.kind, ()):
        if isinstance(kwargs.get(key), dict):
            from workspace.result import RobotResult

            kwargs[key] = RobotResult.from_dict(kwargs[key])
    return cls(**kwargs)


_FIELDS: dict[type[Event], frozenset[str]] = {}
#: Fields holding a RobotResult, rebuilt from their dicts.
_RESULT_FIELDS = {"run_finished": ("result",), "run_cancelled": ("partial",), "run_failed": ("partial",)}


def event_kinds() -> list[str]:
    return sorted(_REGISTRY)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(Event):
    kind: ClassVar[str] = "run_started"
    message: str = ""
    model: str = ""
    #: False when the provider is the offline demo (not a language model).
    is_language_model: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(Event):
    kind: ClassVar[str] = "text_delta"
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Text(Event):
    """The complete text of one model turn (after its deltas)."""

    kind: ClassVar[str] = "text"
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUse(Event):
    kind: ClassVar[str] = "tool_use"
    id: str = ""
    name: str = ""
    input: Any = None
    #: MCP server name for MCP tools, None for local tools.
    server: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested(Event):
    kind: ClassVar[str] = "approval_requested"
    id: str = ""
    name: str = ""
    input: Any = None
    server: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecided(Event):
    kind: ClassVar[str] = "approval_decided"
    id: str = ""
    name: str = ""
    #: "approve" or "deny"
    decision: str = "approve"
    #: The arguments the tool runs with (edited by the user, or as asked).
    input: Any = None
    reason: str | None = None
    #: "once", "thread", "always" or "policy" (decided by the stored policy, nobody asked).
    scope: str = "once"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult(Event):
    kind: ClassVar[str] = "tool_result"
    id: str = ""
    name: str = ""
    #: The ToolResultMessage content the model sees: ``{"data": ...}``.
    payload: Any = None
    #: The full payload for people (MCP content blocks, images...), when it differs.
    raw: Any = None
    duration: float = 0.0
    server: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolError(Event):
    kind: ClassVar[str] = "tool_error"
    id: str = ""
    name: str = ""
    #: The ``"error"`` value the model sees (a string or ``{"type", "message"}``).
    error: Any = None
    raw: Any = None
    duration: float = 0.0
    server: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryChanged(Event):
    kind: ClassVar[str] = "memory_changed"
    key: str = ""
    value: Any = None
    previous: Any = None
    writer: str | None = None
    network_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeProposed(Event):
    kind: ClassVar[str] = "change_proposed"
    change_set_id: str = ""
    #: One entry per file: ``{"path", "action", "hunks", "added", "removed"}``.
    files: list[dict[str, Any]] = field(default_factory=list)
    tool_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeDecided(Event):
    kind: ClassVar[str] = "change_decided"
    change_set_id: str = ""
    #: Per file: ``{"path", "accepted": [hunk indexes], "rejected": [...], "reason"}``.
    outcome: list[dict[str, Any]] = field(default_factory=list)
    checkpoint_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage(Event):
    """Tokens and cost of one model call, with the run's running totals."""

    kind: ClassVar[str] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    total_cost: float | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStarted(Event):
    kind: ClassVar[str] = "task_started"
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFinished(Event):
    kind: ClassVar[str] = "task_finished"
    #: "done", "failed", "skipped" or "cancelled"
    status: str = "done"
    error: str | None = None
    result: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(Event):
    kind: ClassVar[str] = "run_finished"
    terminal: ClassVar[bool] = True
    result: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed(Event):
    kind: ClassVar[str] = "run_failed"
    terminal: ClassVar[bool] = True
    error: str = ""
    error_type: str = ""
    partial: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCancelled(Event):
    kind: ClassVar[str] = "run_cancelled"
    terminal: ClassVar[bool] = True
    reason: str = "stopped by the user"
    #: What the run had produced before it was stopped (a RobotResult).
    partial: Any = None


def _register_all() -> None:
    # ``slots=True`` dataclasses replace the class object, so register what the module names.
    for value in list(globals().values()):
        if isinstance(value, type) and issubclass(value, Event) and value is not Event:
            _REGISTRY[value.kind] = value


_register_all()

TERMINAL_KINDS = frozenset({"run_finished", "run_failed", "run_cancelled"})
