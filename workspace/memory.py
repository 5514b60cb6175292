"""Reactive, thread-safe key-value memory (spec 1.3): ``Memory``, ``MemoryChange``,
``StateProxy`` and the ``Waiter`` latch.

One ``Memory`` belongs to each robot and one to each network. Writes through :meth:`Memory.set`
(or ``memory[key] = value``) record a :class:`MemoryChange`, wake coroutines blocked in
:meth:`Memory.wait_for`, call observers synchronously and notify subscribers asynchronously,
so a slow or failing subscriber never blocks or breaks the writer.

Keys are strings. The reserved keys ``data``, ``results``, ``messages``, ``session_id`` and
``cache`` have accessors of their own and are written silently. There is no Redis backend and no
semantic cache: ``memory["cache"]`` is always ``None``.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy as _copy
import inspect
import json
import logging
import re
import threading
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from workspace.errors import AwaitTimeout
from workspace.messages import Message, UserMessage, format_time, parse_time
from workspace.result import RobotResult

__all__ = [
    "HISTORY_LIMIT",
    "RESERVED_KEYS",
    "TIMEOUT",
    "Memory",
    "MemoryChange",
    "StateProxy",
    "Waiter",
]

logger = logging.getLogger("workspace.memory")

RESERVED_KEYS: tuple[str, ...] = ("data", "results", "messages", "session_id", "cache")

#: How many changes :meth:`Memory.history` keeps per key.
HISTORY_LIMIT = 100

SubscriptionCallback = Callable[["MemoryChange"], Any]
Observer = Callable[["MemoryChange"], Any]


#: The writer of memory changes made by the current asyncio task (and the threads it starts).
#: A robot run sets it for its own task, so concurrent robots in one network sharing one memory
#: are attributed correctly; ``Memory.current_writer`` is the fallback outside any run.
writer_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("robotlab_memory_writer", default=None)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else str(key)


def _deep_copy(value: Any) -> Any:
    try:
        return _copy.deepcopy(value)
    except Exception:
        return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


# --------------------------------------------------------------------------------------------
# MemoryChange


@dataclass(frozen=True)
class MemoryChange:
    """One write to a memory key: new and previous value, who wrote it, where and when."""

    key: str
    value: Any
    previous: Any = None
    writer: str | None = None
    network_name: str | None = None
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    correlation_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", _key(self.key))
        stamp: Any = self.timestamp
        object.__setattr__(self, "timestamp", datetime.now(UTC) if stamp is None else parse_time(stamp))

    @property
    def is_created(self) -> bool:
        """No previous value, and a value now."""
        return self.previous is None and self.value is not None

    @property
    def is_updated(self) -> bool:
        """A previous value replaced by a value."""
        return self.previous is not None and self.value is not None

    @property
    def is_deleted(self) -> bool:
        """A previous value, and none now."""
        return self.value is None and self.previous is not None

    def to_dict(self) -> dict[str, Any]:
        """``{key, value, previous, writer, network_name, timestamp, correlation_id}`` without ``None``s."""
        out = {
            "key": self.key,
            "value": self.value,
            "previous": self.previous,
            "writer": self.writer,
            "network_name": self.network_name,
            "timestamp": format_time(self.timestamp),
            "correlation_id": self.correlation_id,
        }
        return {k: v for k, v in out.items() if v is not None}

    def to_json(self) -> str:
        """JSON of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), ensure_ascii=False, default=_json_default)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryChange:
        """Rebuild from :meth:`to_dict`."""
        d = {str(k): v for k, v in data.items()}
        return cls(
            key=d.get("key", ""),
            value=d.get("value"),
            previous=d.get("previous"),
            writer=d.get("writer"),
            network_name=d.get("network_name"),
            timestamp=d.get("timestamp"),  # type: ignore[arg-type]  # None -> now, str parsed
            correlation_id=d.get("correlation_id"),
        )


# --------------------------------------------------------------------------------------------
# Waiter


class _Timeout:
    """The sentinel :meth:`Waiter.wait` returns on timeout (RobotLab's ``:timeout``)."""

    _instance: _Timeout | None = None

    def __new__(cls) -> _Timeout:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "TIMEOUT"

    def __bool__(self) -> bool:
        return False


TIMEOUT: Any = _Timeout()


def _resolve(fut: asyncio.Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _resolve_on(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], value: Any) -> None:
    """Complete ``fut`` on its loop, from any thread."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        _resolve(fut, value)
        return
    try:
        loop.call_soon_threadsafe(_resolve, fut, value)
    except RuntimeError:  # the loop is closed: nobody is waiting any more
        pass


class Waiter:
    """A one-shot latch: :meth:`signal` wakes every waiter, threads and coroutines alike."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._signaled = False
        self._value: Any = None
        self._futures: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = []

    @property
    def is_signaled(self) -> bool:
        """True once :meth:`signal` has been called."""
        with self._cond:
            return self._signaled

    def signal(self, value: Any = None) -> None:
        """Store ``value`` and wake all waiters (``None`` is a valid value)."""
        with self._cond:
            self._value = value
            self._signaled = True
            self._cond.notify_all()
            futures, self._futures = self._futures, []
        for loop, fut in futures:
            _resolve_on(loop, fut, value)

    def wait(self, timeout: float | None = None) -> Any:
        """Block the calling thread until signaled; the value, or :data:`TIMEOUT`."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._signaled, timeout):
                return TIMEOUT
            return self._value

    async def wait_async(self, timeout: float | None = None) -> Any:
        """Wait without blocking the event loop; the value, or :data:`TIMEOUT`."""
        loop = asyncio.get_running_loop()
        with self._cond:
            if self._signaled:
                return self._value
            if timeout is not None and timeout <= 0:
                return TIMEOUT
            fut: asyncio.Future[Any] = loop.create_future()
            entry = (loop, fut)
            self._futures.append(entry)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return TIMEOUT
        finally:
            with self._cond:
                if entry in self._futures:
                    self._futures.remove(entry)


# --------------------------------------------------------------------------------------------
# StateProxy


class StateProxy:
    """A dict wrapper with attribute access, used for ``memory.data``.

    ``proxy["name"]`` and ``proxy.name`` read (a missing item is ``None``; a missing attribute
    raises ``AttributeError``); ``proxy.name = v`` and ``proxy["name"] = v`` write and call
    ``on_change(key, old, new)`` when the value really changed. Keys are strings.
    """

    __slots__ = ("_data", "_on_change")

    def __init__(
        self,
        data: Mapping[Any, Any] | StateProxy | None = None,
        on_change: Callable[[str, Any, Any], Any] | None = None,
    ) -> None:
        source = data.to_dict() if isinstance(data, StateProxy) else (data or {})
        object.__setattr__(self, "_data", {_key(k): v for k, v in source.items()})
        object.__setattr__(self, "_on_change", on_change)

    # -- item access ------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        return self._data.get(_key(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: Any) -> None:
        self.delete(key)

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._data.get(_key(key), default)

    def set(self, key: Any, value: Any) -> Any:
        """Store ``value``; calls ``on_change`` when it differs from the old value. Returns ``value``."""
        k = _key(key)
        old = self._data.get(k)
        self._data[k] = value
        if self._on_change is not None and _differs(old, value):
            self._on_change(k, old, value)
        return value

    def has(self, key: Any) -> bool:
        """True when ``key`` is present."""
        return _key(key) in self._data

    def __contains__(self, key: object) -> bool:
        return _key(key) in self._data

    def keys(self) -> list[str]:
        """The keys, in insertion order."""
        return list(self._data)

    def values(self) -> list[Any]:
        """The values, in key order."""
        return list(self._data.values())

    def items(self) -> list[tuple[str, Any]]:
        """``(key, value)`` pairs."""
        return list(self._data.items())

    each = items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))

    def __len__(self) -> int:
        return len(self._data)

    @property
    def size(self) -> int:
        """The number of keys."""
        return len(self._data)

    @property
    def is_empty(self) -> bool:
        """True when there are no keys."""
        return not self._data

    def delete(self, key: Any) -> Any:
        """Remove ``key``; its value, or ``None`` when it was missing."""
        return self._data.pop(_key(key), None)

    def merge(self, other: Mapping[Any, Any] | StateProxy | None = None, **kwargs: Any) -> StateProxy:
        """Set every pair (``on_change`` per changed key). Returns self."""
        pairs = other.items() if isinstance(other, StateProxy) else (other or {}).items()
        for k, v in pairs:
            self.set(k, v)
        for k, v in kwargs.items():
            self.set(k, v)
        return self

    update = merge

    def to_dict(self) -> dict[str, Any]:
        """A shallow copy of the data."""
        return dict(self._data)

    to_hash = to_dict

    def dup(self) -> StateProxy:
        """A deep copy, keeping ``on_change``."""
        return StateProxy(_copy.deepcopy(self._data), on_change=self._on_change)

    copy = dup

    def __copy__(self) -> StateProxy:
        return StateProxy(dict(self._data), on_change=self._on_change)

    def __deepcopy__(self, memo: dict[int, Any]) -> StateProxy:
        return StateProxy(_copy.deepcopy(self._data, memo), on_change=self._on_change)

    # -- attribute access -------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in StateProxy.__slots__:
            raise AttributeError(name)
        data = object.__getattribute__(self, "_data")
        if name in data:
            return data[name]
        raise AttributeError(f"'StateProxy' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in StateProxy.__slots__:
            object.__setattr__(self, name, value)
        else:
            self.set(name, value)

    def __delattr__(self, name: str) -> None:
        if name not in self._data:
            raise AttributeError(name)
        self.delete(name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {k for k in self._data if k.isidentifier()})

    # -- value semantics --------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StateProxy):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<RobotLab::StateProxy {self._data!r}>"


def _differs(old: Any, new: Any) -> bool:
    try:
        return bool(old != new)
    except Exception:
        return old is not new


# --------------------------------------------------------------------------------------------
# Memory


@dataclass(eq=False)
class _Subscription:
    id: str
    callback: SubscriptionCallback
    loop: asyncio.AbstractEventLoop | None
    pattern: re.Pattern[str] | None = None


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A compiled, fully anchored regex for a glob: ``*`` any characters, ``?`` exactly one;
    every other character is literal."""
    parts = []
    for ch in pattern:
        if ch == "*":
            parts.append(".*")
        elif ch == "?":
            parts.append(".")
        else:
            parts.append(re.escape(ch))
    return re.compile(r"\A" + "".join(parts) + r"\Z", re.DOTALL)


def _is_async_callable(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - we want the bound __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _normalize_message(value: Any) -> Message:
    if isinstance(value, Message):
        return value
    if isinstance(value, Mapping):
        return Message.from_dict(value)
    if isinstance(value, UserMessage):
        return value.to_message()
    raise ValueError("Invalid message: must be Message or dict")


def _normalize_result(value: Any) -> RobotResult:
    if isinstance(value, RobotResult):
        return value
    if isinstance(value, Mapping):
        return RobotResult.from_dict(value)
    raise ValueError("Invalid result: must be RobotResult or dict")


class Memory:
    """Reactive key-value store shared by robots (see the module docstring)."""

    RESERVED_KEYS = RESERVED_KEYS

    def __init__(
        self,
        data: Mapping[Any, Any] | StateProxy | None = None,
        results: Iterable[RobotResult | Mapping[str, Any]] | None = None,
        messages: Iterable[Message | Mapping[str, Any]] | None = None,
        session_id: str | None = None,
        network_name: str | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self._network_name = network_name
        #: The robot currently writing; stamped into every :class:`MemoryChange`.
        self.current_writer: str | None = None
        self._data = StateProxy(data)
        self._results: list[RobotResult] = [_normalize_result(r) for r in (results or [])]
        self._messages: list[Message] = [_normalize_message(m) for m in (messages or [])]
        self._session_id = session_id
        self._values: dict[str, Any] = {}
        self._key_subs: dict[str, list[_Subscription]] = {}
        self._pattern_subs: list[_Subscription] = []
        self._waiters: dict[str, Waiter] = {}
        self._observers: list[Observer] = []
        self._history: dict[str, deque[MemoryChange]] = {}
        self._tasks: set[asyncio.Future[Any]] = set()

    # -- reserved accessors -----------------------------------------------------------------

    @property
    def network_name(self) -> str | None:
        """The network this memory belongs to, if any."""
        return self._network_name

    @property
    def data(self) -> StateProxy:
        """Runtime data, with attribute access (``memory.data.category``)."""
        return self._data

    @data.setter
    def data(self, value: Mapping[Any, Any] | StateProxy | None) -> None:
        with self._lock:
            self._data = StateProxy(value)

    @property
    def results(self) -> list[RobotResult]:
        """A copy of the accumulated robot results."""
        with self._lock:
            return list(self._results)

    @property
    def messages(self) -> list[Message]:
        """A copy of the conversation messages."""
        with self._lock:
            return list(self._messages)

    @messages.setter
    def messages(self, value: Iterable[Message | Mapping[str, Any]] | None) -> None:
        normalized = [_normalize_message(m) for m in (value or [])]
        with self._lock:
            self._messages = normalized

    @property
    def session_id(self) -> str | None:
        """The conversation session id, if any."""
        return self._session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        with self._lock:
            self._session_id = value

    @property
    def cache(self) -> None:
        """Always ``None``: the workspace has no semantic cache."""
        return None

    # -- item access ------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        k = _key(key)
        if k == "data":
            return self.data
        if k == "results":
            return self.results
        if k == "messages":
            return self.messages
        if k == "session_id":
            return self.session_id
        if k == "cache":
            return None
        with self._lock:
            return self._values.get(k)

    def __setitem__(self, key: Any, value: Any) -> None:
        k = _key(key)
        if k in RESERVED_KEYS:
            self._set_reserved(k, value)
        else:
            self.set(k, value)

    def __delitem__(self, key: Any) -> None:
        self.delete(key)

    def __contains__(self, key: object) -> bool:
        return self.has(key)

    def _set_reserved(self, key: str, value: Any) -> None:
        if key == "data":
            self.data = value
        elif key == "results":
            self.set_results(value or [])
        elif key == "messages":
            self.messages = value
        elif key == "session_id":
            self.session_id = value
        elif key == "cache":
            raise ValueError("Cannot reassign cache - it is initialized automatically")

    # -- reactive API -----------------------------------------------------------------------

    def set(self, key: Any, value: Any, *, writer: str | None = None) -> Any:
        """Store ``value`` under ``key`` and notify; returns ``value``.

        Wakes :meth:`wait_for` callers, calls observers synchronously and subscribers
        asynchronously (even when the value did not change). ``writer`` overrides
        :attr:`current_writer` for this write. Reserved keys are set silently.
        Safe to call from any thread.
        """
        k = _key(key)
        if k in RESERVED_KEYS:
            self._set_reserved(k, value)
            return value
        with self._lock:
            previous = self._values.get(k)
            self._values[k] = value
            change = MemoryChange(
                key=k,
                value=value,
                previous=previous,
                writer=writer if writer is not None else (writer_var.get() or self.current_writer),
                network_name=self._network_name,
            )
            self._record(change)
            waiter = self._waiters.pop(k, None)
            subs = list(self._key_subs.get(k, ()))
            subs.extend(s for s in self._pattern_subs if s.pattern is not None and s.pattern.match(k))
            observers = list(self._observers)
        if waiter is not None:
            waiter.signal(value)
        self._call_observers(observers, change)
        self._dispatch(subs, change)
        return value

    def get(self, *keys: Any) -> Any:
        """One key: its value (``None`` when missing). Several keys: a dict of the present keys."""
        if len(keys) == 1:
            return self[keys[0]]
        out: dict[str, Any] = {}
        with self._lock:
            for key in keys:
                k = _key(key)
                if self.has(k):
                    out[k] = self[k]
        return out

    async def wait_for(self, *keys: Any, timeout: float | None = None) -> Any:
        """Wait until the keys are set (RobotLab's ``get(wait:)``) without blocking the loop.

        One key: returns its value once it is not ``None``. Several keys: waits for each
        missing key in turn (a key holding ``None`` counts as present) and returns the dict of
        :meth:`get`. ``timeout`` bounds the whole wait; raises :class:`AwaitTimeout`.
        """
        if not keys:
            raise ValueError("wait_for needs at least one key")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        names = [_key(k) for k in keys]
        if len(names) == 1:
            return await self._wait_key(names[0], deadline, timeout, need_value=True)
        for name in names:
            await self._wait_key(name, deadline, timeout, need_value=False)
        return self.get(*names)

    async def _wait_key(self, key: str, deadline: float | None, limit: float | None, *, need_value: bool) -> Any:
        if key in RESERVED_KEYS:
            return self[key]
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                if key in self._values:
                    value = self._values[key]
                    if value is not None or not need_value:
                        return value
                waiter = self._waiters.get(key)
                if waiter is None:
                    waiter = self._waiters[key] = Waiter()
            remaining = None if deadline is None else deadline - loop.time()
            result = await waiter.wait_async(remaining)
            if result is TIMEOUT:
                raise AwaitTimeout(f"Timeout waiting for {key} after {limit} seconds")
            if result is not None or not need_value:
                return result

    def subscribe(self, *keys: Any, callback: SubscriptionCallback | None = None) -> str:
        """Call ``callback(change)`` after every write to one of ``keys``; returns the subscription id.

        ``callback`` may be a plain or an ``async`` function. It runs on the event loop that was
        running when it subscribed (or the writer's loop), never inside the writer's call.
        """
        if callback is None:
            raise ValueError("Callback required for subscribe")
        if not keys:
            raise ValueError("subscribe needs at least one key")
        sub = _Subscription(str(uuid.uuid4()), callback, _running_loop())
        with self._lock:
            for k in dict.fromkeys(_key(k) for k in keys):
                self._key_subs.setdefault(k, []).append(sub)
        return sub.id

    def subscribe_pattern(self, pattern: str, callback: SubscriptionCallback | None = None) -> str:
        """Like :meth:`subscribe`, for every key matching the glob ``pattern``
        (``*`` any characters, ``?`` exactly one; everything else literal)."""
        if callback is None:
            raise ValueError("Callback required for subscribe_pattern")
        sub = _Subscription(str(uuid.uuid4()), callback, _running_loop(), glob_to_regex(str(pattern)))
        with self._lock:
            self._pattern_subs.append(sub)
        return sub.id

    def unsubscribe(self, subscription_id: str) -> bool:
        """Remove a subscription; True when it existed."""
        removed = False
        with self._lock:
            for key in list(self._key_subs):
                subs = self._key_subs[key]
                kept = [s for s in subs if s.id != subscription_id]
                if len(kept) != len(subs):
                    removed = True
                    if kept:
                        self._key_subs[key] = kept
                    else:
                        del self._key_subs[key]
            kept_patterns = [s for s in self._pattern_subs if s.id != subscription_id]
            if len(kept_patterns) != len(self._pattern_subs):
                removed = True
                self._pattern_subs = kept_patterns
        return removed

    def unsubscribe_keys(self, *keys: Any) -> Memory:
        """Remove every exact-key subscription of ``keys`` (pattern subscriptions stay). Returns self."""
        with self._lock:
            for key in keys:
                self._key_subs.pop(_key(key), None)
        return self

    def is_subscribed(self, key: Any) -> bool:
        """True when an exact subscription exists for ``key`` or a pattern matches it."""
        k = _key(key)
        with self._lock:
            if self._key_subs.get(k):
                return True
            return any(s.pattern is not None and s.pattern.match(k) for s in self._pattern_subs)

    def add_observer(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(change)`` synchronously, in the writer's thread, for every change
        (writes and deletions). Returns a function that removes the observer."""
        with self._lock:
            self._observers.append(observer)

        def remove() -> None:
            with self._lock:
                if observer in self._observers:
                    self._observers.remove(observer)

        return remove

    def history(self, key: Any) -> list[MemoryChange]:
        """The last :data:`HISTORY_LIMIT` changes of ``key``, oldest first."""
        with self._lock:
            return list(self._history.get(_key(key), ()))

    async def flush(self) -> None:
        """Wait until notifications scheduled on the running loop have run (handy in tests)."""
        loop = asyncio.get_running_loop()
        for _ in range(100):
            await asyncio.sleep(0)
            with self._lock:
                pending = [t for t in self._tasks if not t.done() and _future_loop(t) is loop]
            if not pending:
                await asyncio.sleep(0)
                with self._lock:
                    if not any(not t.done() and _future_loop(t) is loop for t in self._tasks):
                        return
                continue
            await asyncio.gather(*pending, return_exceptions=True)

    # -- plain dict-like API ----------------------------------------------------------------

    def has(self, key: Any) -> bool:
        """True for reserved keys and for keys that were set."""
        k = _key(key)
        if k in RESERVED_KEYS:
            return True
        with self._lock:
            return k in self._values

    def keys(self) -> list[str]:
        """The non-reserved keys, in insertion order."""
        with self._lock:
            return list(self._values)

    def all_keys(self) -> list[str]:
        """The reserved keys followed by :meth:`keys`."""
        return list(RESERVED_KEYS) + self.keys()

    def items(self) -> list[tuple[str, Any]]:
        """``(key, value)`` pairs of the non-reserved keys."""
        with self._lock:
            return list(self._values.items())

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def delete(self, key: Any) -> Any:
        """Remove ``key``; its old value (``None`` when missing). Subscribers are not notified."""
        k = _key(key)
        if k in RESERVED_KEYS:
            raise ValueError(f"Cannot delete reserved key: {k}")
        with self._lock:
            if k not in self._values:
                return None
            old = self._values.pop(k)
            change = self._deletion(k, old)
            observers = list(self._observers)
        self._call_observers(observers, change)
        return old

    def merge(self, values: Mapping[Any, Any] | None = None, **kwargs: Any) -> Memory:
        """``self[k] = v`` for every pair (reserved keys through their accessors). Returns self."""
        for k, v in (values or {}).items():
            self[k] = v
        for k, v in kwargs.items():
            self[k] = v
        return self

    def clear(self) -> Memory:
        """Drop the non-reserved keys; keep data, results, messages and session_id. Returns self."""
        with self._lock:
            removed = list(self._values.items())
            self._values.clear()
            changes = [self._deletion(k, v) for k, v in removed]
            observers = list(self._observers)
        for change in changes:
            self._call_observers(observers, change)
        return self

    def reset(self) -> Memory:
        """Drop everything: custom keys, data, results, messages, session_id. Subscriptions stay."""
        self.clear()
        with self._lock:
            self._data = StateProxy()
            self._results = []
            self._messages = []
            self._session_id = None
        return self

    def append_result(self, result: RobotResult | Mapping[str, Any]) -> Memory:
        """Add a robot result. Returns self."""
        normalized = _normalize_result(result)
        with self._lock:
            self._results.append(normalized)
        return self

    def set_results(self, results: Iterable[RobotResult | Mapping[str, Any]]) -> Memory:
        """Replace the results. Returns self."""
        normalized = [_normalize_result(r) for r in results]
        with self._lock:
            self._results = normalized
        return self

    def results_from(self, start_index: int) -> list[RobotResult]:
        """The results from ``start_index`` on (``[]`` past the end)."""
        with self._lock:
            return list(self._results[start_index:])

    def append_message(self, message: Message | Mapping[str, Any]) -> Memory:
        """Add a conversation message. Returns self."""
        normalized = _normalize_message(message)
        with self._lock:
            self._messages.append(normalized)
        return self

    def format_history(self, formatter: Callable[[RobotResult], Iterable[Message]] | None = None) -> list[Message]:
        """The messages, then each result formatted (default: its output and tool calls)."""
        fmt = formatter or (lambda r: r.output + r.tool_calls)
        out = self.messages
        for result in self.results:
            out.extend(fmt(result))
        return out

    def copy(self) -> Memory:
        """An independent copy: data and custom keys deep-copied, results and messages shallow-copied,
        same session_id and network_name; subscriptions, observers and current_writer not copied."""
        with self._lock:
            clone = Memory(
                data=_deep_copy(self._data.to_dict()),
                results=list(self._results),
                messages=list(self._messages),
                session_id=self._session_id,
                network_name=self._network_name,
            )
            clone._values = {k: _deep_copy(v) for k, v in self._values.items()}
        return clone

    clone = copy
    dup = copy

    def __copy__(self) -> Memory:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> Memory:
        return self.copy()

    # -- serialization ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{data, results, messages, session_id, custom}`` (session_id only when set)."""
        with self._lock:
            out: dict[str, Any] = {
                "data": self._data.to_dict(),
                "results": [r.export() for r in self._results],
                "messages": [m.to_dict() for m in self._messages],
            }
            if self._session_id is not None:
                out["session_id"] = self._session_id
            out["custom"] = dict(self._values)
        return out

    def to_json(self, *, indent: int | None = None) -> str:
        """JSON of :meth:`to_dict` (values JSON cannot hold become strings)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent, default=_json_default)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Memory:
        """Rebuild from :meth:`to_dict` (network_name is not part of it)."""
        d = {str(k): v for k, v in data.items()}
        memory = cls(
            data=d.get("data") or {},
            results=d.get("results") or [],
            messages=d.get("messages") or [],
            session_id=d.get("session_id"),
        )
        for k, v in (d.get("custom") or {}).items():
            if _key(k) != "cache":
                memory[k] = v
        return memory

    def __repr__(self) -> str:
        return (f"<Memory keys={self.keys()!r} data={self._data.to_dict()!r} "
                f"results={len(self._results)} session_id={self._session_id!r}>")

    # -- internals --------------------------------------------------------------------------

    def _record(self, change: MemoryChange) -> None:
        """Append to the key's history (lock held)."""
        log = self._history.get(change.key)
        if log is None:
            log = self._history[change.key] = deque(maxlen=HISTORY_LIMIT)
        log.append(change)

    def _deletion(self, key: str, old: Any) -> MemoryChange:
        """Record a deletion (lock held)."""
        change = MemoryChange(key=key, value=None, previous=old, writer=writer_var.get() or self.current_writer,
                              network_name=self._network_name)
        self._record(change)
        return change

    @staticmethod
    def _call_observers(observers: list[Observer], change: MemoryChange) -> None:
        for observer in observers:
            try:
                observer(change)
            except Exception as exc:
                logger.error("Memory observer error: %s", exc, exc_info=True)

    def _dispatch(self, subs: list[_Subscription], change: MemoryChange) -> None:
        if not subs:
            return
        current = _running_loop()
        for sub in subs:
            target = sub.loop
            if target is not None and (target.is_closed() or not target.is_running()):
                target = None
            if target is None:
                target = current
            is_async = _is_async_callable(sub.callback)
            if target is None:
                if is_async:
                    self._run_in_thread(sub.callback, change)
                else:
                    self._run_sync(sub.callback, change)
            elif target is current:
                if is_async:
                    self._spawn(sub.callback, change)
                else:
                    target.call_soon(self._run_sync, sub.callback, change)
            else:
                try:
                    if is_async:
                        target.call_soon_threadsafe(self._spawn, sub.callback, change)
                    else:
                        target.call_soon_threadsafe(self._run_sync, sub.callback, change)
                except RuntimeError:  # the loop closed meanwhile
                    if is_async:
                        self._run_in_thread(sub.callback, change)
                    else:
                        self._run_sync(sub.callback, change)

    def _keep(self, task: asyncio.Future[Any]) -> None:
        with self._lock:
            self._tasks.add(task)

        def done(t: asyncio.Future[Any]) -> None:
            with self._lock:
                self._tasks.discard(t)

        task.add_done_callback(done)

    def _spawn(self, callback: SubscriptionCallback, change: MemoryChange) -> None:
        """Run an async callback as a task on the running loop."""
        self._keep(asyncio.ensure_future(self._run_async(callback, change)))

    async def _run_async(self, callback: Callable[[MemoryChange], Any], change: MemoryChange) -> None:
        try:
            result = callback(change)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            logger.error("Memory subscription callback error: %s", exc, exc_info=True)

    def _run_sync(self, callback: SubscriptionCallback, change: MemoryChange) -> None:
        try:
            result = callback(change)
        except Exception as exc:
            logger.error("Memory subscription callback error: %s", exc, exc_info=True)
            return
        if inspect.isawaitable(result):  # a plain function that returned a coroutine
            awaitable: Awaitable[Any] = result
            if _running_loop() is not None:
                self._spawn(lambda _change: awaitable, change)
            else:
                self._run_in_thread(lambda _change: awaitable, change)

    def _run_in_thread(self, callback: SubscriptionCallback, change: MemoryChange) -> None:
        """No loop anywhere: give an async callback a loop of its own in a daemon thread."""
        thread = threading.Thread(
            target=lambda: asyncio.run(self._run_async(callback, change)),
            name="memory-subscriber",
            daemon=True,
        )
        thread.start()


def _future_loop(fut: asyncio.Future[Any]) -> asyncio.AbstractEventLoop | None:
    try:
        return fut.get_loop()
    except Exception:
        return None
