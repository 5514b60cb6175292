"""RobotLab's message hierarchy (spec 1.1 and 2.1-2.5).

``Message`` is the base of the conversation messages (``TextMessage``, ``ToolCallMessage``,
``ToolResultMessage``); ``ToolMessage`` (one requested tool call) and ``UserMessage`` (rich user
input) are plain value objects. ``to_dict()`` produces RobotLab's JSON shapes with RobotLab's key
order, so checksums computed over them match RobotLab's. Keys are strings throughout.
"""

from __future__ import annotations

import json
import operator
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

__all__ = [
    "STOPPED_BEFORE_ANSWERING",
    "VALID_ROLES",
    "VALID_STOP_REASONS",
    "VALID_TYPES",
    "AlternatingView",
    "GrowingFold",
    "Message",
    "TextMessage",
    "ToolCallMessage",
    "ToolMessage",
    "ToolResultMessage",
    "UserMessage",
    "alternating",
    "format_time",
    "json_text",
    "parse_time",
    "result_text",
    "same_items",
    "shared_prefix",
]

VALID_TYPES: tuple[str, ...] = ("text", "tool_call", "tool_result")
VALID_ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool_result")
#: What the model is sent as its answer to a message it never answered (the run was stopped or
#: failed before its first word), so user and assistant still take turns (:func:`alternating`).
STOPPED_BEFORE_ANSWERING = "(stopped before answering)"
VALID_STOP_REASONS: tuple[str, ...] = ("tool", "stop")
#: ``json.dumps(value, ensure_ascii=False, default=str)``, the same text, with one encoder made once: ``dumps``
#: makes an encoder for every call given these options (about 1 us of a short value's 2; a tool call's arguments
#: and a tool result are written so for the model and its counts at every turn).
json_text: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, default=str).encode


# --------------------------------------------------------------------------------------------
# Time helpers shared by messages, results and memory changes.


def format_time(value: datetime) -> str:
    """ISO8601 with seconds precision: ``Z`` for UTC, ``+HH:MM`` for other offsets.

    A naive datetime is taken to be UTC.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    text = value.replace(microsecond=0).isoformat()
    if text.endswith("+00:00"):
        text = text[:-6] + "Z"
    return text


def parse_time(value: Any) -> datetime:
    """A timezone-aware datetime from a datetime, an ISO8601 string or epoch seconds.

    Naive values are taken to be UTC. Raises ``ValueError`` for anything else.
    """
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, bool):
        raise ValueError(f"Invalid time: {value!r}")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"Invalid time: {value!r}") from None
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    raise ValueError(f"Invalid time: {value!r}")


def _str_keys(data: Mapping[Any, Any]) -> dict[str, Any]:
    """Top-level keys as strings (RobotLab symbolizes the top level only)."""
    return {str(k): v for k, v in data.items()}


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """Drop keys whose value is ``None`` (Ruby's ``Hash#compact``)."""
    return {k: v for k, v in data.items() if v is not None}


# --------------------------------------------------------------------------------------------
# ToolMessage


class ToolMessage:
    """One tool call requested by the model: ``id``, ``name`` and ``input`` (a dict).

    A value object, not a :class:`Message` (it has no type/role predicates).
    """

    __slots__ = ("_id", "_input", "_name")

    def __init__(self, id: str | None, name: str, input: Mapping[str, Any] | None = None) -> None:
        self._id = id
        self._name = name
        self._input: dict[str, Any] = dict(input) if input is not None else {}

    @property
    def id(self) -> str | None:
        """The provider's call id (may be ``None``)."""
        return self._id

    @property
    def name(self) -> str:
        """The tool's name."""
        return self._name

    @property
    def input(self) -> dict[str, Any]:
        """The call's arguments (``{}`` when none were given)."""
        return self._input

    @property
    def type(self) -> str:
        """Always ``"tool"``."""
        return "tool"

    def to_dict(self) -> dict[str, Any]:
        """``{type:"tool", id, name, input}``, never compacted."""
        return {"type": "tool", "id": self._id, "name": self._name, "input": self._input}

    def to_json(self) -> str:
        """JSON of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolMessage:
        """Build from a dict; ``arguments`` is accepted as an alias of ``input``."""
        d = _str_keys(data)
        tool_input = d.get("input") or d.get("arguments") or {}
        return cls(id=d.get("id"), name=d.get("name"), input=tool_input)  # type: ignore[arg-type]

    @classmethod
    def coerce(cls, value: Any) -> ToolMessage:
        """A ToolMessage as is, a dict converted; anything else raises ``ValueError``."""
        if isinstance(value, ToolMessage):
            return value
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        raise ValueError("Invalid tool: must be ToolMessage or dict")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolMessage):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ToolMessage(id={self._id!r}, name={self._name!r}, input={self._input!r})"


# --------------------------------------------------------------------------------------------
# Message and subclasses


class Message:
    """Base of the conversation messages: ``type``, ``role``, ``content``, ``stop_reason``.

    Raises ``ValueError`` (with RobotLab's messages) for an unknown type, role or stop reason.
    """

    __slots__ = ("_content", "_role", "_stop_reason", "_type")

    def __init__(self, type: str, role: str, content: Any = None, stop_reason: str | None = None) -> None:
        type_ = "" if type is None else str(type)
        role_ = "" if role is None else str(role)
        stop = None if stop_reason is None else str(stop_reason)
        if type_ not in VALID_TYPES:
            raise ValueError(f"Invalid message type: {type_}. Must be one of: {', '.join(VALID_TYPES)}")
        if role_ not in VALID_ROLES:
            raise ValueError(f"Invalid role: {role_}. Must be one of: {', '.join(VALID_ROLES)}")
        if stop is not None and stop not in VALID_STOP_REASONS:
            raise ValueError(f"Invalid stop_reason: {stop}. Must be one of: {', '.join(VALID_STOP_REASONS)}")
        self._type = type_
        self._role = role_
        self._content = content
        self._stop_reason = stop

    # -- attributes -------------------------------------------------------------------------

    @property
    def type(self) -> str:
        """``"text"``, ``"tool_call"`` or ``"tool_result"``."""
        return self._type

    @property
    def role(self) -> str:
        """``"system"``, ``"user"``, ``"assistant"`` or ``"tool_result"``."""
        return self._role

    @property
    def content(self) -> Any:
        """The message content (text, a result dict, or ``None``)."""
        return self._content

    @property
    def stop_reason(self) -> str | None:
        """``"tool"``, ``"stop"`` or ``None``."""
        return self._stop_reason

    # -- predicates -------------------------------------------------------------------------

    @property
    def is_text(self) -> bool:
        """True for a text message."""
        return self._type == "text"

    @property
    def is_tool_call(self) -> bool:
        """True for a tool-call message."""
        return self._type == "tool_call"

    @property
    def is_tool_result(self) -> bool:
        """True for a tool-result message."""
        return self._type == "tool_result"

    @property
    def is_system(self) -> bool:
        """True when the role is ``system``."""
        return self._role == "system"

    @property
    def is_user(self) -> bool:
        """True when the role is ``user``."""
        return self._role == "user"

    @property
    def is_assistant(self) -> bool:
        """True when the role is ``assistant``."""
        return self._role == "assistant"

    @property
    def is_stopped(self) -> bool:
        """True when ``stop_reason`` is ``"stop"``."""
        return self._stop_reason == "stop"

    @property
    def is_tool_stop(self) -> bool:
        """True when ``stop_reason`` is ``"tool"``."""
        return self._stop_reason == "tool"

    # -- serialization ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{type, role, content, stop_reason}`` without ``None`` values."""
        return _compact(
            {"type": self._type, "role": self._role, "content": self._content, "stop_reason": self._stop_reason}
        )

    def to_json(self) -> str:
        """JSON of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Message) -> Message:
        """Rebuild a message from its dict, dispatching on ``type``.

        Unknown types raise ``ValueError``. A Message passed in is returned as is.
        """
        if isinstance(data, Message):
            return data
        if not isinstance(data, Mapping):
            raise ValueError("Invalid message: must be Message or dict")
        d = _str_keys(data)
        kind = d.get("type")
        if kind == "text":
            return TextMessage(role=d.get("role"), content=d.get("content"),  # type: ignore[arg-type]
                               stop_reason=d.get("stop_reason"))
        if kind == "tool_call":
            return ToolCallMessage(role=d.get("role") or "assistant", tools=d.get("tools") or [],
                                   stop_reason=d.get("stop_reason"))
        if kind == "tool_result":
            return ToolResultMessage(tool=d.get("tool"), content=d.get("content"),  # type: ignore[arg-type]
                                     stop_reason=d.get("stop_reason"))
        return Message(kind, d.get("role"), d.get("content"), d.get("stop_reason"))  # type: ignore[arg-type]

    # -- value semantics --------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(type={self._type!r}, role={self._role!r}, "
                f"content={self._content!r}, stop_reason={self._stop_reason!r})")


class TextMessage(Message):
    """Plain text from the system, the user or the assistant."""

    __slots__ = ()

    def __init__(self, role: str, content: Any = None, stop_reason: str | None = None) -> None:
        super().__init__("text", role, content, stop_reason)

    def __repr__(self) -> str:
        extra = f", stop_reason={self._stop_reason!r}" if self._stop_reason is not None else ""
        return f"TextMessage(role={self._role!r}, content={self._content!r}{extra})"


class ToolCallMessage(Message):
    """The assistant's request to run one or more tools (``tools``: list of ToolMessage).

    ``content`` is always ``None``; ``stop_reason`` defaults to ``"tool"``.
    """

    __slots__ = ("_tools",)

    def __init__(
        self,
        role: str = "assistant",
        tools: Iterable[ToolMessage | Mapping[str, Any]] = (),
        stop_reason: str | None = "tool",
    ) -> None:
        super().__init__("tool_call", role, None, stop_reason or "tool")
        if isinstance(tools, ToolMessage | Mapping):
            tools = [tools]
        self._tools: list[ToolMessage] = [ToolMessage.coerce(t) for t in tools]

    @property
    def tools(self) -> list[ToolMessage]:
        """The requested calls, in order."""
        return list(self._tools)

    def to_dict(self) -> dict[str, Any]:
        """``{type, role, tools, stop_reason}`` (no content key, not compacted)."""
        return {
            "type": self._type,
            "role": self._role,
            "tools": [t.to_dict() for t in self._tools],
            "stop_reason": self._stop_reason,
        }

    def __repr__(self) -> str:
        return f"ToolCallMessage(role={self._role!r}, tools={self._tools!r}, stop_reason={self._stop_reason!r})"


def result_text(content: Any) -> str:
    """A tool result's content as the text the model reads (the providers' rule): a data string as is,
    an error or other data as JSON."""
    if isinstance(content, str):
        return content
    mapping = type(content) is dict or isinstance(content, Mapping)  # a plain dict: no ABC check
    if mapping and "error" in content:
        return json_text({"error": content["error"]})
    if mapping and "data" in content:
        data = content["data"]
        return data if isinstance(data, str) else json_text(data)
    return json_text(content)


class ToolResultMessage(Message):
    """The result of one tool call: ``tool`` (the call) and ``content``.

    By convention ``content`` is ``{"data": ...}`` on success or ``{"error": ...}`` on failure,
    but any value (a string, say) is allowed. Type and role are both ``"tool_result"``.
    """

    __slots__ = ("_text", "_tool")

    def __init__(
        self,
        tool: ToolMessage | Mapping[str, Any],
        content: Any = None,
        stop_reason: str | None = "tool",
    ) -> None:
        super().__init__("tool_result", "tool_result", content, stop_reason or "tool")
        self._tool = ToolMessage.coerce(tool)
        self._text: str | None = None

    @property
    def tool(self) -> ToolMessage:
        """The call this message answers."""
        return self._tool

    @property
    def text(self) -> str:
        """The content as the text the model reads (:func:`result_text`), written once for the message (a
        message is not changed once made): the context manager's cut and count and the providers' conversion
        of a model call all read it, a big result's JSON written once rather than by each."""
        text = self._text
        if text is None:
            text = self._text = result_text(self._content)
        return text

    @property
    def is_success(self) -> bool:
        """True when ``content`` is a dict with a ``"data"`` key."""
        return isinstance(self._content, Mapping) and "data" in self._content

    @property
    def is_error(self) -> bool:
        """True when ``content`` is a dict with an ``"error"`` key."""
        return isinstance(self._content, Mapping) and "error" in self._content

    @property
    def data(self) -> Any:
        """``content["data"]`` for a success, else ``None``."""
        return self._content["data"] if self.is_success else None

    @property
    def error(self) -> Any:
        """``content["error"]`` for a failure, else ``None``."""
        return self._content["error"] if self.is_error else None

    def to_dict(self) -> dict[str, Any]:
        """``{type, role, tool, content, stop_reason}`` (not compacted)."""
        return {
            "type": self._type,
            "role": self._role,
            "tool": self._tool.to_dict(),
            "content": self._content,
            "stop_reason": self._stop_reason,
        }

    def __repr__(self) -> str:
        return (f"ToolResultMessage(tool={self._tool!r}, content={self._content!r}, "
                f"stop_reason={self._stop_reason!r})")


# --------------------------------------------------------------------------------------------
# UserMessage


class UserMessage:
    """Rich user input: text plus session, extra system prompt, metadata, id and time.

    Not a :class:`Message`; :meth:`to_message` gives the ``TextMessage`` sent to the model.
    """

    __slots__ = ("_content", "_created_at", "_id", "_metadata", "_session_id", "_system_prompt")

    def __init__(
        self,
        content: Any,
        *,
        session_id: str | None = None,
        system_prompt: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        id: str | None = None,
        created_at: datetime | str | None = None,
    ) -> None:
        self._content = "" if content is None else str(content)
        self._session_id = session_id
        self._system_prompt = system_prompt
        self._metadata: dict[str, Any] = dict(metadata) if metadata is not None else {}
        self._id = id if id is not None else str(uuid.uuid4())
        self._created_at = parse_time(created_at) if created_at is not None else datetime.now(UTC)

    @property
    def content(self) -> str:
        """The text."""
        return self._content

    @property
    def session_id(self) -> str | None:
        """The conversation (thread) id, if any."""
        return self._session_id

    @property
    def system_prompt(self) -> str | None:
        """Extra system prompt for this message, if any."""
        return self._system_prompt

    @property
    def metadata(self) -> dict[str, Any]:
        """Free-form metadata (``{}`` by default)."""
        return self._metadata

    @property
    def id(self) -> str:
        """The message id (a UUIDv4 unless given)."""
        return self._id

    @property
    def created_at(self) -> datetime:
        """When the message was created (timezone-aware)."""
        return self._created_at

    def to_message(self) -> TextMessage:
        """The ``TextMessage(role="user")`` carrying this content."""
        return TextMessage(role="user", content=self._content)

    def to_dict(self) -> dict[str, Any]:
        """``{content, session_id, system_prompt, metadata, id, created_at}`` without ``None`` values."""
        return _compact({
            "content": self._content,
            "session_id": self._session_id,
            "system_prompt": self._system_prompt,
            "metadata": self._metadata,
            "id": self._id,
            "created_at": format_time(self._created_at),
        })

    def to_json(self) -> str:
        """JSON of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UserMessage:
        """Rebuild from :meth:`to_dict` (missing fields get their defaults)."""
        d = _str_keys(data)
        return cls(
            d.get("content"),
            session_id=d.get("session_id"),
            system_prompt=d.get("system_prompt"),
            metadata=d.get("metadata"),
            id=d.get("id"),
            created_at=d.get("created_at"),
        )

    @classmethod
    def from_(cls, value: Any) -> UserMessage:
        """Coerce: a UserMessage as is; a dict, a TextMessage or anything else (via ``str``) to a new one."""
        if isinstance(value, UserMessage):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        if isinstance(value, TextMessage):
            return cls(value.content)
        return cls(str(value))

    coerce = from_

    def __str__(self) -> str:
        return self._content

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UserMessage):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"UserMessage(content={self._content!r}, session_id={self._session_id!r}, id={self._id!r})"


_T = TypeVar("_T")


def shared_prefix(earlier: Sequence[Any], messages: Sequence[Any]) -> int:
    """How many messages ``messages`` shares with ``earlier`` from the start, the same objects at the same
    places. A conversation only grows at its end or has its last turn replaced (read back from the
    store, another branch), so once the two differ they differ to the end: a binary search finds the
    point in O(log n) identity checks instead of comparing every message of a long thread."""
    count = min(len(earlier), len(messages))
    if not count or earlier[0] is not messages[0]:
        return 0
    low, high = 1, count  # earlier[:low] is shared
    while low < high:
        middle = (low + high + 1) // 2
        if earlier[middle - 1] is messages[middle - 1]:
            low = middle
        else:
            high = middle - 1
    return low


def same_items(these: Sequence[Any], those: Sequence[Any]) -> bool:
    """Whether the two hold the same objects in the same order (identity, not equality)."""
    return len(these) == len(those) and all(map(operator.is_, these, those))


class GrowingFold(Generic[_T]):
    """A value folded over a conversation that grows at its end, each message folded once.

    A thread's conversation is sent again with every message, one turn longer each time: a value
    over all of it (is there an image? its tokens?) recomputed from the first message would cost
    more at turn 10,000 than at turn 10. This keeps the last few conversations it was given (their
    messages, kept alive so their ids cannot be reused, and the value after each) and folds only
    what follows the longest part one of them shares (:func:`shared_prefix`). ``fold`` returns a
    new value (the values are kept per message). Thread-safe.
    """

    __slots__ = ("_fold", "_kept", "_lock", "_start", "_states")

    def __init__(self, start: _T, fold: Callable[[_T, Any], _T], *, kept: int = 4) -> None:
        self._start = start
        self._fold = fold
        self._kept = kept
        self._lock = threading.Lock()
        self._states: list[tuple[list[Any], list[_T]]] = []

    def __call__(self, messages: Sequence[Any]) -> _T:
        with self._lock:
            best: tuple[list[Any], list[_T]] | None = None
            shared = 0
            for state in self._states:
                count = shared_prefix(state[0], messages)
                if count > shared:
                    best, shared = state, count
            if best is None:
                inputs: list[Any] = []
                values: list[_T] = []
            else:
                self._states.remove(best)
                inputs, values = best
                del inputs[shared:], values[shared:]
            value = values[-1] if values else self._start
            fold = self._fold
            for index in range(shared, len(messages)):
                message = messages[index]
                value = fold(value, message)
                inputs.append(message)
                values.append(value)
            if inputs:
                self._states.append((inputs, values))
                del self._states[:-self._kept]
            return value


class AlternatingView:
    """:func:`alternating` for a conversation that grows at its end: each call costs the messages that
    follow the part it shares with the last call's (:func:`shared_prefix`), plus a copy of the list."""

    __slots__ = ("_ends", "_inputs", "_lock", "_out")

    def __init__(self) -> None:
        self._inputs: list[Message] = []
        self._ends: list[int] = []  # the length of the view after each message of the conversation
        self._out: list[Message] = []
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[Message]) -> list[Message]:
        with self._lock:
            inputs, ends, out = self._inputs, self._ends, self._out
            shared = shared_prefix(inputs, messages)
            del inputs[shared:], ends[shared:]
            del out[ends[-1] if ends else 0:]
            last_was_user = bool(inputs) and inputs[-1].role == "user"
            for index in range(shared, len(messages)):
                message = messages[index]
                is_user = message.role == "user"
                if is_user and last_was_user:
                    out.append(TextMessage(role="assistant", content=STOPPED_BEFORE_ANSWERING, stop_reason="stop"))
                out.append(message)
                inputs.append(message)
                ends.append(len(out))
                last_was_user = is_user
            return list(out)


def alternating(messages: Iterable[Message]) -> list[Message]:
    """``messages`` as a strict chat template accepts them: never two user messages in a row.

    A run stopped (or failed) before the model said anything leaves the user's message unanswered;
    the next message would follow it directly, which templates that require user and assistant to
    take turns (Mistral's, Gemma's, many local servers') refuse. An assistant message
    :data:`STOPPED_BEFORE_ANSWERING` goes between them: it tells the model the earlier question
    got no answer, where merging the two would make it answer both as one.
    """
    out: list[Message] = []
    previous: Message | None = None
    for message in messages:
        if previous is not None and previous.role == "user" and message.role == "user":
            out.append(TextMessage(role="assistant", content=STOPPED_BEFORE_ANSWERING, stop_reason="stop"))
        out.append(message)
        previous = message
    return out
