"""``Memory``: the reactive, thread-safe key-value store (RobotLab's Memory, spec 1.3).

One class on purpose: every write, wait, observer and subscriber works on the same data under one
lock, so it stays whole (about 600 lines) and its helpers live in the sibling modules."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import threading
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from workspace.errors import AwaitTimeout
from workspace.memory.change import MemoryChange, _deep_copy, _json_default, _key
from workspace.memory.proxy import StateProxy
from workspace.memory.subscriptions import (
    SubscriptionCallback,
    _is_async_callable,
    _Subscription,
    glob_to_regex,
)
from workspace.memory.waiters import TIMEOUT, Waiter, _future_loop, _running_loop
from workspace.messages import Message, UserMessage
from workspace.result import RobotResult

if TYPE_CHECKING:
    from workspace.documents import DocumentStore

logger = logging.getLogger("workspace.memory")

RESERVED_KEYS: tuple[str, ...] = ("data", "results", "messages", "session_id", "cache")

#: How many changes :meth:`Memory.history` keeps per key.
HISTORY_LIMIT = 100

Observer = Callable[["MemoryChange"], Any]


#: The writer of memory changes made by the current asyncio task (and the threads it starts).
#: A robot run sets it for its own task, so concurrent robots in one network sharing one memory
#: are attributed correctly; ``Memory.current_writer`` is the fallback outside any run.
writer_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("robotlab_memory_writer", default=None)




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
        self._documents: DocumentStore | None = None

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

    # -- documents (RobotLab's DocumentStore helpers) ----------------------------------------

    @property
    def documents(self) -> DocumentStore:
        """This memory's :class:`~workspace.documents.DocumentStore` (made on first use, offline lexical; set
        one with an embedder: ``memory.documents = DocumentStore(embedder=...)``). Copies do not share it."""
        with self._lock:
            if self._documents is None:
                from workspace.documents import DocumentStore

                self._documents = DocumentStore()
            return self._documents

    @documents.setter
    def documents(self, store: DocumentStore) -> None:
        with self._lock:
            self._documents = store

    def store_document(self, key: Any, text: str) -> Memory:
        """Keep ``text`` under ``key`` in :attr:`documents`; returns the memory."""
        self.documents.store(key, text)
        return self

    def search_documents(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """:meth:`DocumentStore.search` of :attr:`documents` (``await asearch_documents`` with an async embedder
        inside an event loop)."""
        return self.documents.search(query, limit=limit)

    async def asearch_documents(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        return await self.documents.asearch(query, limit=limit)

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
