"""Events of a run: what the UI, the store, the exports and the CLI all consume.

Every event is a frozen, slotted dataclass carrying the ``run_id`` it belongs to, the ``robot``
that produced it, a per-run sequence number ``seq``, inside a network run the ``task`` name, and
a timestamp ``ts``. :data:`Event` is the closed union of every event class. A consumer for which
every kind matters (the chat presenter, the CLI printer, the Markdown export) ``match``es on the
classes and ends with ``case _: assert_never(event)``, so the type checker reports a kind it forgot;
a consumer that cares about a few kinds ends with ``case _:`` and lets the others through (so a new
kind costs nothing there)::

    match event:
        case ev.TextDelta(text=text):
            ...
        case ev.RunFinished() | ev.RunFailed() | ev.RunCancelled():
            ...
        case _:
            assert_never(event)

A run always ends with exactly one terminal event (:data:`TerminalEvent`): :class:`RunFinished`,
:class:`RunFailed` or :class:`RunCancelled`.

Runs inside runs: a network's tasks and robots used as tools run their own runs, whose events are
forwarded into the outer stream. Each carries ``parent_run_id`` (the network's run, or the run
whose tool call started it; ``parent_tool_id`` names that call) and ends with its own terminal
event, before the outer run's. So a stream may hold several terminal events: the one that ends
it is the one whose ``run_id`` is the stream's run (:func:`ends`); consumers that count or stop
at "the" terminal event compare run ids (``event.nested`` is True for the inner runs' events).

Events are built typed, as their classes, with their own fields only; the run stamps the rest::

    emit(ev.TextDelta(text=text))

``emit`` (:data:`Emit`: :meth:`workspace.agent.run.AgentRun.emit`, ``ToolContext.emit``, the context
manager's) takes the built event and returns it stamped with the run's ``run_id``, ``robot``, next
``seq``, ``task`` and parent fields (:func:`stamp`), so a misspelt field or a wrong type is a mypy error
where the event is written. ``ts`` is the time the event was built. Code outside a run (the store, the
network scheduler, tests) passes the stamp fields itself.

Serialisation has one registry, here: :func:`to_dict` / :func:`event_from_dict` (and
:func:`to_json` / :func:`event_from_json`) are what the store, the exports, ``--json`` and JSONL
use. The ``kind`` class attribute names an event in that JSON and nowhere else.

Adding an event kind: write its dataclass below, add it to :data:`Event`, then run mypy — every
exhaustive ``match`` that does not handle it is reported (docs/ARCHITECTURE.md walks through it).
"""

from __future__ import annotations

import dataclasses
import json
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, TypeAlias, TypeVar

if TYPE_CHECKING:
    from workspace.result import NetworkResult, RobotResult

#: A value that really is arbitrary JSON (tool payloads, memory values): the one place ``Any`` stays.
JSON: TypeAlias = Any
#: A run's outcome: a robot's :class:`~workspace.result.RobotResult` or a network's
#: :class:`~workspace.result.NetworkResult`.
AnyResult: TypeAlias = "RobotResult | NetworkResult"

ApprovalChoice: TypeAlias = Literal["approve", "deny"]
#: "once", "thread", "always", "policy" (decided by the stored policy, nobody asked), or "server" (an
#: MCP server's sampling requests: allowed for the rest of the session).
ApprovalScope: TypeAlias = Literal["once", "thread", "always", "policy", "server"]
TaskStatus: TypeAlias = Literal["done", "failed", "skipped", "cancelled"]
#: What a run is doing while nothing else shows (:class:`RunStatus`); the same states as
#: :data:`workspace.providers.base.StatusState` (a test keeps the two the same).
RunState: TypeAlias = Literal["loading", "connecting", "queued", "waiting", "streaming", "retrying", "fallback",
                              "notice"]
CompactionTrigger: TypeAlias = Literal["threshold", "overflow", "manual"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseEvent:
    """The fields every event has. Not an event itself: see :data:`Event`."""

    #: The name of the event in JSON (``"tool_use"``): serialisation only, never dispatch on it.
    kind: ClassVar[str]
    #: True for the three events that end a run (:data:`TerminalEvent`).
    terminal: ClassVar[bool] = False
    #: Fields holding a RobotResult / NetworkResult, rebuilt from their dicts by the registry.
    result_fields: ClassVar[tuple[str, ...]] = ()

    #: The stamp: the run fills these in (:meth:`workspace.agent.run.AgentRun.emit`); code that
    #: emits into a run builds an event with its own fields only.
    run_id: str = ""
    robot: str = ""
    seq: int = 0
    task: str | None = None
    ts: float = field(default_factory=time.time)
    #: The run this event's run works for: a network's run (for its tasks' robot runs), or the
    #: run whose tool call started it (a robot used as a tool). None for a top-level run.
    parent_run_id: str | None = None
    #: The id of the parent run's tool call that started this run (a robot used as a tool).
    parent_tool_id: str | None = None
    #: Which candidate of a comparison (several robots or models on one message at once) the run is:
    #: 0, 1, ...; None outside a comparison (:mod:`workspace.session.compare`).
    candidate: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``kind`` first, then the fields (results exported). The parent
        fields appear only on the events of a run inside a run (see :func:`is_nested`), ``candidate``
        only on a comparison's, a ``run_started``'s ``attachments`` only when there are some."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if (value is None and f.name in _NONE_LEFT_OUT) or (not value and f.name in _EMPTY_LEFT_OUT):
                continue
            out[f.name] = _to_jsonable(value)
        return out

    @property
    def nested(self) -> bool:
        """True for an event of a run inside a run (a network's task, a robot used as a tool)."""
        return self.parent_run_id is not None

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(BaseEvent):
    kind: ClassVar[str] = "run_started"
    message: str = ""
    model: str = ""
    #: False when the provider is the offline demo (not a language model).
    is_language_model: bool = True
    #: The files, images and MCP resources attached to ``message``: their references
    #: (:meth:`workspace.attachments.Attachment.ref`: kind, name, mime, size, sha256, path or
    #: server + uri); the content is stored once in the thread's blobs, never in the event.
    attachments: list[dict[str, JSON]] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(BaseEvent):
    kind: ClassVar[str] = "text_delta"
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Text(BaseEvent):
    """The complete text of one model turn (after its deltas)."""

    kind: ClassVar[str] = "text"
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta(BaseEvent):
    """A piece of the model's thinking, streamed before (or between) its answer's text deltas."""

    kind: ClassVar[str] = "reasoning_delta"
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reasoning(BaseEvent):
    """The complete thinking of one model turn (after its deltas). Never sent back to the model;
    exports leave it out unless asked (``include_reasoning``)."""

    kind: ClassVar[str] = "reasoning"
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStatus(BaseEvent):
    """What the run is waiting for, so a long wait is never silent. One kind for every state:

    - ``loading``: the model library is loading (once per process), or a local server has sent no
      token for a while (it may be loading the model);
    - ``connecting``: the request goes to ``endpoint``;
    - ``queued``: waiting for another request to the same server to finish
      (``llm.max_concurrent_requests``);
    - ``waiting``: the server took the request; no token yet;
    - ``streaming``: the first token arrived (a spinner can stop);
    - ``retrying``: the call failed for a passing reason (``detail``); the next try is in
      ``retry_in`` seconds (``attempt``: its number);
    - ``fallback``: the model failed (outage, rate limit); the run goes on with ``model``;
    - ``notice``: something to tell people that is not an error (a tool call the model wrote as text).
    """

    kind: ClassVar[str] = "run_status"
    state: RunState = "connecting"
    detail: str = ""
    retry_in: float | None = None
    attempt: int | None = None
    #: The model called (for ``fallback``: the one the run switched to).
    model: str | None = None
    #: Where the request goes: the server's URL, or the hosted provider's name.
    endpoint: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUse(BaseEvent):
    kind: ClassVar[str] = "tool_use"
    id: str = ""
    name: str = ""
    input: dict[str, JSON] = field(default_factory=dict)
    #: MCP server name for MCP tools, None for local tools.
    server: str | None = None
    #: True when the model wrote the call in its text (a chat template's form, its server did not make it
    #: a structured call): the card says "from the model's text".
    from_text: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested(BaseEvent):
    kind: ClassVar[str] = "approval_requested"
    id: str = ""
    name: str = ""
    input: dict[str, JSON] = field(default_factory=dict)
    server: str | None = None
    annotations: dict[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecided(BaseEvent):
    kind: ClassVar[str] = "approval_decided"
    id: str = ""
    name: str = ""
    decision: ApprovalChoice = "approve"
    #: The arguments the tool runs with (edited by the user, or as asked).
    input: dict[str, JSON] = field(default_factory=dict)
    reason: str | None = None
    scope: ApprovalScope = "once"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult(BaseEvent):
    kind: ClassVar[str] = "tool_result"
    id: str = ""
    name: str = ""
    #: The ToolResultMessage content the model sees: ``{"data": ...}``.
    payload: JSON = None
    #: The full payload for people (MCP content blocks, images...), when it differs.
    raw: JSON = None
    duration: float = 0.0
    server: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolError(BaseEvent):
    kind: ClassVar[str] = "tool_error"
    id: str = ""
    name: str = ""
    #: The ``"error"`` value the model sees (a string or ``{"type", "message"}``).
    error: JSON = None
    raw: JSON = None
    duration: float = 0.0
    server: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryChanged(BaseEvent):
    kind: ClassVar[str] = "memory_changed"
    key: str = ""
    value: JSON = None
    previous: JSON = None
    writer: str | None = None
    network_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeProposed(BaseEvent):
    kind: ClassVar[str] = "change_proposed"
    change_set_id: str = ""
    #: One entry per file: ``{"path", "action", "hunks", "added", "removed"}``.
    files: list[dict[str, JSON]] = field(default_factory=list)
    tool_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeDecided(BaseEvent):
    kind: ClassVar[str] = "change_decided"
    change_set_id: str = ""
    #: Per file: ``{"path", "accepted": [hunk indexes], "rejected": [...], "reason"}``.
    outcome: list[dict[str, JSON]] = field(default_factory=list)
    checkpoint_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyFinished(BaseEvent):
    """The folder's or robot's verify command (``review.verify``, a robot's ``verify:``) ran in the sandbox on a
    change set: on everything proposed (``subset`` "proposed") or on exactly the hunks accepted so far, the
    candidate an Apply would write (``subset`` "accepted")."""

    kind: ClassVar[str] = "verify_finished"
    change_set_id: str = ""
    #: "proposed" (the set as the robot proposed it) or "accepted" (only the hunks accepted so far).
    subset: str = "proposed"
    #: The command that ran.
    command: str = ""
    passed: bool = False
    exit_code: int | None = None
    #: Its output, bounded (a head and a tail, with a note of what was left out).
    output: str = ""
    #: Seconds it took.
    duration: float = 0.0
    timed_out: bool = False

    def describe(self) -> str:
        """"✓ verify passed on the accepted hunks (pytest -q, 1.2 s)", for the terminal and exports."""
        mark = "✓ verify passed" if self.passed else "✗ verify failed"
        what = "the accepted hunks" if self.subset == "accepted" else "the proposed changes"
        why = "" if self.passed else (", timed out" if self.timed_out else f", exit code {self.exit_code}")
        return f"{mark} on {what} ({self.command}{why}, {self.duration:.1f} s)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage(BaseEvent):
    """Tokens and cost of one model call, with the run's running totals."""

    kind: ClassVar[str] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    total_cost: float | None = None
    model: str | None = None
    #: Thinking tokens (part of ``output_tokens``), when the server reports them.
    reasoning_tokens: int = 0
    #: The server reported no usage: the counts are estimated (show them as "~").
    estimated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest(BaseEvent):
    """The request one model call sent to its provider, as sent (the payload's messages, tools and
    parameters; API keys and headers never in it, secrets masked, image data left out).

    Long threads send the same history again on every call, so only what changed is kept:
    ``messages`` are the ones after the first ``reused_messages`` of the request ``reused_from``
    (the ``request_id`` of an earlier ``model_request`` of the same conversation), and the payload's
    other keys named in ``reused_keys`` are that request's. :func:`workspace.context.requests.resolve`
    puts the whole request back together."""

    kind: ClassVar[str] = "model_request"
    request_id: str = ""
    model: str | None = None
    #: The payload without its messages and without the keys in ``reused_keys``.
    body: dict[str, Any] = field(default_factory=dict)
    #: The messages after the ``reused_messages`` shared with request ``reused_from``.
    messages: list[Any] = field(default_factory=list)
    reused_from: str | None = None
    reused_messages: int = 0
    reused_keys: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgress(BaseEvent):
    """A running tool said how far it is (an MCP server's ``notifications/progress``): ``progress``
    of ``total`` (None when the server does not know the total), and a ``message``. ``id`` is the
    tool call's."""

    kind: ClassVar[str] = "tool_progress"
    id: str = ""
    name: str = ""
    progress: float = 0.0
    total: float | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutput(BaseEvent):
    """A chunk of what a running tool prints (``run_command``'s output, stdout and stderr merged), in
    order, as it arrives (chunks coalesced, a few per second at most). ``id`` is the tool call's. The
    tool's result keeps a bounded head and tail for the model; these chunks are the output people see
    (what is stored per call is capped, the last chunk saying so)."""

    kind: ClassVar[str] = "tool_output"
    id: str = ""
    name: str = ""
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServers(BaseEvent):
    """MCP servers the run started without, or whose tools joined it later.

    ``starting``: still starting when the run began (it did not wait for them: their tools join at
    the next model turn once they are up); ``joined``: up now, their tools are offered from this
    turn on; ``failed``: not available (server name -> why). ``message`` says it in words.
    """

    kind: ClassVar[str] = "mcp_servers"
    starting: list[str] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextUsage(BaseEvent):
    """How full the model's context window is for the request about to be sent (before each model
    call), or as the server counted it (after the call, ``estimated`` False): for the context meter."""

    kind: ClassVar[str] = "context_usage"
    #: Tokens of the request: system prompt, tool schemas and messages.
    used: int = 0
    #: The model's context window in tokens (0: not known).
    window: int = 0
    #: True when ``used`` is counted here (a tokenizer or an estimate), False when the server reported it.
    estimated: bool = True
    #: Of ``used``: the system prompt's and the tool schemas' share.
    system_tokens: int = 0
    tools_tokens: int = 0
    #: The share of the window at which the conversation is compacted (0.8: 80 %).
    threshold: float = 0.8
    #: The costliest tool schemas, name -> tokens, costliest first (at most three).
    biggest_tools: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChanged(BaseEvent):
    """The thread's model was switched (the composer's model picker, ``/model`` in ``robotlab chat``,
    ``robotlab run --thread ID --model M``): its next runs use ``model``. Stored after the turn it follows
    (``run_id`` that turn's run), so the chat shows the switch where it happened, live and reopened."""

    kind: ClassVar[str] = "model_changed"
    #: The model from now on ("" : the offline demo).
    model: str = ""
    #: The model before the switch.
    previous: str = ""
    #: True when ``model`` is the robot's own (the switch went back to the robot's default).
    robot_default: bool = False
    #: The server from now on (its API base, never a key; "": the model's hosted provider or none).
    api_base: str = ""
    #: The server before the switch.
    previous_api_base: str = ""

    def describe(self) -> str:
        """"Model changed to X" (with "(robot default)" when it is the robot's own, and the server when it
        changed: a conversation leaving a local server for a hosted provider says so), for the chat and exports."""
        name = self.model or "the offline demo"
        text = f"Model changed to {name}" + (" (robot default)" if self.robot_default else "")
        if self.api_base != self.previous_api_base:
            if self.api_base:
                text += f" at {self.api_base}"
            elif self.model:
                text += f", its provider's hosted service (no longer the server at {self.previous_api_base})"
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCompacted(BaseEvent):
    """Older messages were summarised to fit the context window (they stay in the thread as they were).

    The model is sent ``summary`` in place of the first ``replaced_count`` messages of the robot's
    conversation (counted from its start, this turn's messages included); a conversation rebuilt
    from the store does the same. The chat shows a "conversation compacted" marker that expands to
    the summary.
    """

    kind: ClassVar[str] = "context_compacted"
    summary: str = ""
    #: How many messages of the conversation, from its start, the summary stands for.
    replaced_count: int = 0
    #: How many of those this compaction summarised (the rest were in the previous summary).
    newly_replaced: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    window: int = 0
    #: "threshold" (the request would pass it), "overflow" (the server refused the request as too
    #: long) or "manual" (``/compact``).
    trigger: CompactionTrigger = "threshold"
    #: The model that wrote the summary.
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BusMessage(BaseEvent):
    """A message one robot sent another on a message bus (:mod:`workspace.bus`). On a network's bus, the run of
    the sender's task carries it when the sender is running one, else the network's run with ``robot`` the
    sender; a robot on a bus outside a network has its messages in its own run while one goes (the sender's,
    when both run: :func:`workspace.bus.watch_run`). The chat shows "sender → to" in the sender's lane (or its
    turn), the terminal prints the same."""

    kind: ClassVar[str] = "bus_message"
    #: The robot that sent it (``from`` on the bus's wire).
    sender: str = ""
    #: The robot it was sent to.
    to: str = ""
    #: What was sent: text, or a mapping.
    content: str | dict[str, Any] = ""
    #: The message's key on the bus, ``"<sender>:<n>"`` (the sender's counter).
    message_id: str = ""
    #: The key of the message this one answers (None: not a reply).
    in_reply_to: str | None = None

    def describe(self) -> str:
        """"alice → bob: …" (the content as one line of text), for the terminal and exports."""
        content = self.content
        text = ("; ".join(f"{k}: {v}" for k, v in content.items()) if isinstance(content, dict)
                else str(content))
        return f"{self.sender} → {self.to}: {' '.join(text.split())}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStarted(BaseEvent):
    kind: ClassVar[str] = "task_started"
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFinished(BaseEvent):
    kind: ClassVar[str] = "task_finished"
    result_fields: ClassVar[tuple[str, ...]] = ("result",)
    status: TaskStatus = "done"
    error: str | None = None
    #: The task's RobotResult (the partial one after a failure or a stop), if it ran.
    result: RobotResult | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(BaseEvent):
    kind: ClassVar[str] = "run_finished"
    terminal: ClassVar[bool] = True
    result_fields: ClassVar[tuple[str, ...]] = ("result",)
    result: AnyResult | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed(BaseEvent):
    kind: ClassVar[str] = "run_failed"
    terminal: ClassVar[bool] = True
    result_fields: ClassVar[tuple[str, ...]] = ("partial",)
    error: str = ""
    error_type: str = ""
    partial: AnyResult | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCancelled(BaseEvent):
    kind: ClassVar[str] = "run_cancelled"
    terminal: ClassVar[bool] = True
    result_fields: ClassVar[tuple[str, ...]] = ("partial",)
    reason: str = "stopped by the user"
    #: What the run had produced before it was stopped.
    partial: AnyResult | None = None


_PARENT_FIELDS = frozenset({"parent_run_id", "parent_tool_id"})
#: Fields left out of :meth:`BaseEvent.to_dict` while None (a run outside a comparison has no candidate).
_NONE_LEFT_OUT = _PARENT_FIELDS | {"candidate"}
#: Fields left out of :meth:`BaseEvent.to_dict` while empty (most messages have no attachments).
_EMPTY_LEFT_OUT = frozenset({"attachments", "api_base", "previous_api_base", "from_text"})


#: Every event of a run: the closed union consumers match on exhaustively.
Event: TypeAlias = (
    RunStarted
    | TextDelta
    | Text
    | ReasoningDelta
    | Reasoning
    | RunStatus
    | ToolUse
    | ApprovalRequested
    | ApprovalDecided
    | ToolResult
    | ToolError
    | ToolProgress
    | ToolOutput
    | MemoryChanged
    | ChangeProposed
    | ChangeDecided
    | VerifyFinished
    | Usage
    | ModelRequest
    | McpServers
    | ContextUsage
    | ContextCompacted
    | ModelChanged
    | BusMessage
    | TaskStarted
    | TaskFinished
    | RunFinished
    | RunFailed
    | RunCancelled
)
#: The events that end a run; exactly one per run.
TerminalEvent: TypeAlias = RunFinished | RunFailed | RunCancelled
#: For ``isinstance``: ``isinstance(event, TERMINAL)``.
TERMINAL: tuple[type[RunFinished], type[RunFailed], type[RunCancelled]] = (RunFinished, RunFailed, RunCancelled)


# --------------------------------------------------------------------------------------------
# The serialisation registry: the only place that maps a ``kind`` string to a class.

#: ``kind`` -> event class, for every member of :data:`Event`.
EVENT_TYPES: dict[str, type[Event]] = {cls.kind: cls for cls in typing.get_args(Event)}


def _direct_init(cls: type[BaseEvent]) -> None:
    """Give ``cls`` an ``__init__`` that sets its fields' slots directly: the frozen dataclass's own goes through
    ``object.__setattr__``, which looks each field up by name (a run builds an event per streamed piece). The
    same keyword-only parameters, defaults and default factories; the instances are as frozen as before. A class
    with a ``__post_init__`` keeps the dataclass's own (this one would not call it)."""
    if hasattr(cls, "__post_init__"):
        return
    names: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    params: list[str] = []
    lines: list[str] = []
    for f in dataclasses.fields(cls):
        names[f"_set_{f.name}"] = vars(_slot_owner(cls, f.name))[f.name].__set__
        if f.default is not dataclasses.MISSING:
            names[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
            lines.append(f"    _set_{f.name}(self, {f.name})")
        elif f.default_factory is not dataclasses.MISSING:
            names[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            lines.append(f"    _set_{f.name}(self, _f_{f.name}() if {f.name} is _MISSING else {f.name})")
        else:
            params.append(f.name)
            lines.append(f"    _set_{f.name}(self, {f.name})")
    exec(f"def __init__(self, *, {', '.join(params)}) -> None:\n" + "\n".join(lines), names)
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[method-assign]


def _slot_owner(cls: type, name: str) -> type:
    """The class of ``cls``'s bases that holds the slot ``name``."""
    return next(base for base in cls.__mro__ if name in getattr(base, "__slots__", ()))


for _cls in EVENT_TYPES.values():
    _direct_init(_cls)
TERMINAL_KINDS = frozenset(cls.kind for cls in TERMINAL)
_FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset(f.name for f in dataclasses.fields(cls)) for kind, cls in EVENT_TYPES.items()
}


def event_kinds() -> list[str]:
    """The ``kind`` of every event, sorted."""
    return sorted(EVENT_TYPES)


def _to_jsonable(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_jsonable(v) for v in value]
    return value


def to_dict(event: Event) -> dict[str, Any]:
    """The JSON-ready dict of ``event`` (``kind`` first)."""
    return event.to_dict()


def to_json(event: Event, *, indent: int | None = None) -> str:
    """``event`` as one line of JSON (the store's rows, ``--json`` and JSONL exports)."""
    separators = (",", ":") if indent is None else None
    return json.dumps(event.to_dict(), ensure_ascii=False, default=str, indent=indent, separators=separators)


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from :func:`to_dict` output (unknown fields are ignored)."""
    kind = str(data.get("kind"))
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise ValueError(f"Unknown event kind: {kind!r}. Known kinds: {', '.join(event_kinds())}")
    names = _FIELDS[kind]
    kwargs = {k: v for k, v in data.items() if k in names}
    for key in cls.result_fields:
        value = kwargs.get(key)
        if isinstance(value, dict):
            from workspace.result import result_from_dict

            kwargs[key] = result_from_dict(value)
    return cls(**kwargs)


def event_from_json(text: str) -> Event:
    """Rebuild an event from :func:`to_json` output."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("An event is a JSON object with a 'kind'")
    return event_from_dict(data)


E = TypeVar("E", bound=BaseEvent)
#: What code inside a run emits with: takes a built event, the run stamps and queues it.
Emit: TypeAlias = Callable[[Event], object]


def stamp(event: E, *, run_id: str, robot: str, seq: int, task: str | None = None,
          parent_run_id: str | None = None, parent_tool_id: str | None = None, candidate: int | None = None) -> E:
    """``event`` with the stamp fields of the run it belongs to (its own fields and ``ts`` kept).

    An event built for this (``run_id`` still empty: nobody has seen it stamped) is stamped where it
    is, before it is published: a copy would cost three times the event's construction on every text
    delta. An event stamped before (emitted or forwarded already) is copied, never changed."""
    if event.run_id:
        return dataclasses.replace(event, run_id=run_id, robot=robot, seq=seq, task=task,
                                   parent_run_id=parent_run_id, parent_tool_id=parent_tool_id, candidate=candidate)
    _SET_RUN_ID(event, run_id)
    _SET_ROBOT(event, robot)
    _SET_SEQ(event, seq)
    _SET_TASK(event, task)
    _SET_PARENT_RUN_ID(event, parent_run_id)
    _SET_PARENT_TOOL_ID(event, parent_tool_id)
    _SET_CANDIDATE(event, candidate)
    return event


def stamper(*, run_id: str, robot: str, task: str | None = None, parent_run_id: str | None = None,
            parent_tool_id: str | None = None, candidate: int | None = None) -> Callable[[Event, int], Event]:
    """:func:`stamp` with a run's fixed fields bound once: ``stamper(...)(event, seq)`` is ``stamp(event,
    seq=seq, ...)`` without its keyword arguments passed and read again for every event (a run stamps ~30 a
    turn, one per streamed piece)."""
    set_run_id, set_robot, set_seq, set_task = _SET_RUN_ID, _SET_ROBOT, _SET_SEQ, _SET_TASK
    set_parent_run_id, set_parent_tool_id, set_candidate = _SET_PARENT_RUN_ID, _SET_PARENT_TOOL_ID, _SET_CANDIDATE

    def stamp_one(event: Event, seq: int) -> Event:
        if event.run_id:  # stamped before: a copy (see stamp)
            return stamp(event, run_id=run_id, robot=robot, seq=seq, task=task, parent_run_id=parent_run_id,
                         parent_tool_id=parent_tool_id, candidate=candidate)
        set_run_id(event, run_id)
        set_robot(event, robot)
        set_seq(event, seq)
        set_task(event, task)
        set_parent_run_id(event, parent_run_id)
        set_parent_tool_id(event, parent_tool_id)
        set_candidate(event, candidate)
        return event

    return stamp_one


# The stamp fields' slots set directly (what the frozen dataclass's own __init__ does through
# object.__setattr__, without its lookup of the field by name: stamping is on every event's path).
(_SET_RUN_ID, _SET_ROBOT, _SET_SEQ, _SET_TASK, _SET_PARENT_RUN_ID, _SET_PARENT_TOOL_ID, _SET_CANDIDATE) = (
    vars(BaseEvent)[name].__set__ for name in ("run_id", "robot", "seq", "task", "parent_run_id", "parent_tool_id",
                                               "candidate"))


def ends(event: Event, run_id: str) -> bool:
    """Whether ``event`` ends the run ``run_id`` (not a run inside it)."""
    return event.terminal and event.run_id == run_id
