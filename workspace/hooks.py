"""Hooks (RobotLab 0.2.6): handler classes called before, around and after a run, a model call, a tool
call, a network run, a task, a compaction and a learn.

A handler is a :class:`Hook` subclass whose hook methods are class methods::

    class Audit(Hook):
        @classmethod
        def before_run(cls, ctx): ctx.local.started = time.monotonic()

        @classmethod
        async def around_tool_call(cls, ctx, call_next):
            return await call_next()

Families and their methods (:data:`FAMILIES`): ``run``, ``llm_generation``, ``tool_call``,
``network_run``, ``task``, ``compaction``, ``learn``, each with ``before_<family>``,
``around_<family>`` and ``after_<family>``; ``on_error`` (run, network_run, task), ``on_compaction``
and ``on_learn``. Before / after / on_* methods may be plain or ``async``; around methods are
``async def around_<family>(cls, ctx, call_next)`` and return the result (``await call_next()``, or
their own value to skip the core).

Registration levels, all additive, in this order: global (:func:`on`, :func:`clear_hooks`), a
network's (``network.on``), a robot's (``robot.on(Hook, context=...)``) and one run's
(``robot.run(msg, hooks=[...])``). Before and after hooks run in that order; the first around hook
is the outermost. The registrations of the run in progress are the *scope*
(:func:`current_scope`), a context variable: it follows asyncio tasks, so a tool call or a
compaction inside a run sees the run's hooks.

With nothing registered, a call site pays one truth test (:func:`collect` returns an empty tuple).
"""

from __future__ import annotations

import contextvars
import inspect
import re
import types
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

#: Each family and the ``on_*`` methods it calls besides before / around / after.
FAMILIES: dict[str, tuple[str, ...]] = {
    "run": ("on_error",),
    "llm_generation": (),
    "tool_call": (),
    "network_run": ("on_error",),
    "task": ("on_error",),
    "compaction": ("on_compaction",),
    "learn": ("on_learn",),
}

#: Every hook method name a handler may define.
HOOK_NAMES = frozenset(
    {f"{when}_{family}" for family in FAMILIES for when in ("before", "around", "after")}
    | {"on_error", "on_compaction", "on_learn"}
)

#: Where the core's value is stored in the context, per family (tool_call: ``tool_result``).
#: (compaction and learn: their core sets ``compacted_messages`` and ``stored`` itself).
_RESULT_FIELD = {"run": "response", "llm_generation": "generation_response", "network_run": "result",
                 "task": "result"}


def _snake(name: str) -> str:
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


class Hook:
    """Base class of hook handlers: define hook methods as class methods (see the module).

    ``namespace`` (the handler's own state, ``ctx.local``) defaults to the class name in snake_case
    (``AuditHook`` -> ``audit_hook``, ``HTTPClient`` -> ``http_client``); set it in the class body to
    choose another.
    """

    namespace: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "namespace" not in cls.__dict__ or cls.__dict__["namespace"] is None:
            cls.namespace = _snake(cls.__name__)
        misspelt = [n for n in cls.__dict__ if n.startswith(("before_", "after_", "around_", "on_"))
                    and n not in HOOK_NAMES]
        if misspelt:
            import difflib

            near = difflib.get_close_matches(misspelt[0], sorted(HOOK_NAMES), n=1)
            hint = f" — did you mean '{near[0]}'?" if near else f"; hook methods are: {', '.join(sorted(HOOK_NAMES))}"
            raise TypeError(f"Hook {cls.__name__} defines '{misspelt[0]}', which is no hook{hint}")

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} is a Hook: register the class itself, do not instantiate it")


@dataclass(frozen=True, slots=True)
class Registration:
    """A handler class and the ``context`` merged into its ``ctx.local`` before each callback."""

    handler: type[Hook]
    context: Mapping[str, Any] | None = None

    @property
    def namespace(self) -> str:
        return self.handler.namespace or ""


def _check_handler(handler: Any) -> type[Hook]:
    if not (isinstance(handler, type) and issubclass(handler, Hook)) or handler is Hook:
        what = f"an instance of {type(handler).__name__}" if isinstance(handler, Hook) else repr(handler)
        raise TypeError(f"A hook must be a workspace.Hook subclass (the class, with class methods), got {what}")
    return handler


class HookRegistry:
    """The handlers registered at one level (global, a network, a robot)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: tuple[Registration, ...] = ()

    def on(self, handler: type[Hook], *, context: Mapping[str, Any] | None = None) -> Registration:
        """Register ``handler`` (a :class:`Hook` subclass); ``context`` seeds its ``ctx.local``."""
        registration = Registration(_check_handler(handler), dict(context) if context else None)
        self._items = (*self._items, registration)
        return registration

    @property
    def registrations(self) -> tuple[Registration, ...]:
        return self._items

    def clear(self) -> None:
        self._items = ()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self) -> Iterator[Registration]:
        return iter(self._items)


#: The global registry (``workspace.on``).
GLOBAL = HookRegistry()


def on(handler: type[Hook], *, context: Mapping[str, Any] | None = None) -> Registration:
    """Register ``handler`` for every robot and network (RobotLab's ``RobotLab.on``)."""
    return GLOBAL.on(handler, context=context)


def clear_hooks() -> None:
    """Remove every global registration (RobotLab's ``RobotLab.clear_hooks!``)."""
    GLOBAL.clear()


def per_run(hooks: Any) -> tuple[Registration, ...]:
    """A run's ``hooks=`` (one Hook class or a list of them) as registrations; bad input names the fix."""
    if hooks is None:
        return ()
    items = [hooks] if isinstance(hooks, type) else list(hooks) if isinstance(hooks, Iterable) else [hooks]
    return tuple(Registration(_check_handler(h)) for h in items)


def collect(*levels: HookRegistry | None, run: tuple[Registration, ...] = ()) -> tuple[Registration, ...]:
    """The registrations of a dispatch, in order: each level's, then the run's."""
    out: tuple[Registration, ...] = ()
    for level in levels:
        if level:
            out += level.registrations
    return out + run if run else out


_SCOPE: contextvars.ContextVar[tuple[tuple[Registration, ...], Any]] = contextvars.ContextVar(
    "workspace_hook_scope", default=((), None))


def current_scope() -> tuple[Registration, ...]:
    """The registrations of the run in progress in this task (empty outside one): its global, network,
    robot and per-run hooks."""
    return _SCOPE.get()[0]


def current_robot() -> Any:
    """The robot of the run in progress in this task (None outside one)."""
    return _SCOPE.get()[1]


def enter_scope(registrations: tuple[Registration, ...], robot: Any = None) -> None:
    """Make ``registrations`` this task's scope (a run sets it in its own task; child tasks inherit it)."""
    _SCOPE.set((registrations, robot))


@contextmanager
def scope(registrations: tuple[Registration, ...], robot: Any = None) -> Iterator[None]:
    """``registrations`` as the scope inside the ``with`` block (work done for a robot outside its runs)."""
    token = _SCOPE.set((registrations, robot))
    try:
        yield
    finally:
        _SCOPE.reset(token)


# -- contexts -------------------------------------------------------------------------------------------
class State(types.SimpleNamespace):
    """An open attribute bag (RobotLab's DotState): an unset attribute reads None."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def merge_defaults(self, values: Mapping[str, Any]) -> None:
        """Set the keys of ``values`` not already set."""
        for key, value in values.items():
            if key not in self.__dict__:
                setattr(self, key, value)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(kw_only=True)
class HookContext:
    """What every hook is given: ``event`` (the hook's name), ``local`` (the handler's own state) and
    ``ext(namespace)`` (another handler's)."""

    event: str = ""
    metadata: dict[str, State] = field(default_factory=dict)
    _namespace: str | None = field(default=None, repr=False)

    def ext(self, namespace: str) -> State:
        """The state of handler ``namespace`` (created on first use)."""
        state = self.metadata.get(namespace)
        if state is None:
            state = self.metadata[namespace] = State()
        return state

    @property
    def local(self) -> State:
        """The state of the handler being called."""
        if self._namespace is None:
            raise RuntimeError("No hook namespace active: ctx.local is available only inside a hook method")
        return self.ext(self._namespace)

    @contextmanager
    def with_namespace(self, namespace: str) -> Iterator[HookContext]:
        previous, self._namespace = self._namespace, namespace
        try:
            yield self
        finally:
            self._namespace = previous

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if not k.startswith("_") and k != "metadata"}
        out["metadata"] = {ns: state.to_dict() for ns, state in self.metadata.items()}
        return out


@dataclass(kw_only=True)
class RunHookContext(HookContext):
    """A robot's run: ``request`` (the message; a before_run hook may change it), ``response`` (the
    RobotResult), ``error``."""

    robot: Any = None
    request: Any = None
    network: Any = None
    task: str | None = None
    memory: Any = None
    response: Any = None
    error: BaseException | None = None


@dataclass(kw_only=True)
class LlmGenerationHookContext(RunHookContext):
    """One model call of a run: ``iteration`` (0-based), ``generation_response`` (a
    :class:`Generation`)."""

    iteration: int = 0
    generation_response: Any = None


@dataclass(kw_only=True)
class ToolCallHookContext(HookContext):
    """One tool call: ``tool``, ``tool_name``, ``tool_args``, ``robot``; ``tool_result`` is what the
    model is sent (an around hook that sets it without calling ``call_next`` skips the tool),
    ``tool_error`` the error text when the tool failed."""

    tool: Any = None
    tool_name: str = ""
    tool_args: Any = None
    robot: Any = None
    tool_result: Any = None
    tool_error: Any = None


@dataclass(kw_only=True)
class NetworkRunHookContext(HookContext):
    """A network's run: ``context`` (the run parameters), ``result`` (the NetworkResult), ``error``."""

    network: Any = None
    context: Any = None
    memory: Any = None
    result: Any = None
    error: BaseException | None = None


@dataclass(kw_only=True)
class TaskHookContext(HookContext):
    """One task of a network's run: ``task_name``, ``robot``, ``result`` (the RobotResult), ``error``."""

    task: Any = None
    task_name: str = ""
    network: Any = None
    robot: Any = None
    memory: Any = None
    result: Any = None
    error: BaseException | None = None


@dataclass(kw_only=True)
class CompactionHookContext(HookContext):
    """A compaction about to happen: ``messages_before`` (a tuple), ``strategy`` (why: ``threshold``,
    ``overflow``, ``manual``); an ``on_compaction`` hook may set ``compacted_messages`` to the summary
    text, which is then used instead of asking the model for one. After the compaction it holds the
    summary the model is sent (None: there was nothing to compact)."""

    robot: Any = None
    messages_before: tuple[Any, ...] = ()
    strategy: str = ""
    compacted_messages: Any = None
    error: BaseException | None = None

    @property
    def handled(self) -> bool:
        return self.compacted_messages is not None


@dataclass(kw_only=True)
class LearnHookContext(HookContext):
    """A ``learn(text)``: ``text``, ``learnings_before`` (a tuple), ``stored``."""

    robot: Any = None
    text: str = ""
    learnings_before: tuple[str, ...] = ()
    stored: bool = False
    error: BaseException | None = None


# -- dispatch -------------------------------------------------------------------------------------------
async def _call(registration: Registration, name: str, ctx: HookContext, *args: Any) -> Any:
    method = getattr(registration.handler, name)
    with ctx.with_namespace(registration.namespace):
        if registration.context:
            ctx.local.merge_defaults(registration.context)
        value = method(ctx, *args)
        if inspect.isawaitable(value):
            value = await value
    return value


def _defining(registrations: tuple[Registration, ...], name: str) -> list[Registration]:
    return [r for r in registrations if callable(getattr(r.handler, name, None))]


async def call_each(registrations: tuple[Registration, ...], name: str, ctx: HookContext) -> None:
    """Call ``name`` (``on_compaction``, ``on_learn``, ...) of every registration that defines it, in order."""
    ctx.event = name
    for registration in _defining(registrations, name):
        await _call(registration, name, ctx)


async def dispatch(family: str, ctx: HookContext, registrations: tuple[Registration, ...],
                   core: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``core`` inside the hooks of ``family``: the before hooks, the around chain (the first
    registration outermost, ``core`` innermost; its value is the result), the after hooks. An
    exception (of the core or of a hook) is stored in ``ctx.error``, the ``on_error`` hooks are called
    (run, network_run, task) and it is raised again."""
    around = _defining(registrations, f"around_{family}")
    slot = _RESULT_FIELD.get(family)
    try:
        await call_each(registrations, f"before_{family}", ctx)

        def link(index: int) -> Callable[[], Awaitable[Any]]:
            async def call_next() -> Any:
                if index == len(around):
                    return await core()
                ctx.event = f"around_{family}"
                return await _call(around[index], f"around_{family}", ctx, link(index + 1))

            return call_next

        result = await link(0)()
        if slot is not None:
            setattr(ctx, slot, result)
        await call_each(registrations, f"after_{family}", ctx)
        return result
    except Exception as exc:
        if "on_error" in FAMILIES[family]:
            if hasattr(ctx, "error"):
                ctx.error = exc
            await call_each(registrations, "on_error", ctx)
        raise


@dataclass(slots=True)
class Generation:
    """What one model call gave (``LlmGenerationHookContext.generation_response``): its ``text``, its
    tool ``calls`` and its ``finish`` reason. An around_llm_generation hook that skips the model
    returns one (or a string: the answer's text)."""

    text: str = ""
    calls: list[Any] = field(default_factory=list)
    finish: str | None = "stop"
    reasoning: str = ""


__all__ = [
    "FAMILIES", "GLOBAL", "CompactionHookContext", "Generation", "Hook", "HookContext", "HookRegistry",
    "LearnHookContext", "LlmGenerationHookContext", "NetworkRunHookContext", "Registration", "RunHookContext",
    "State", "TaskHookContext", "ToolCallHookContext", "call_each", "clear_hooks", "collect", "current_robot",
    "current_scope", "dispatch", "enter_scope", "on", "per_run", "scope",
]
