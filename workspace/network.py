"""Networks of robots (RobotLab's ``Task`` and ``Network``, spec 1.6).

A :class:`Network` is a graph of :class:`Task` s; each task wraps a robot. Tasks whose
dependencies are satisfied run at the same time (asyncio); all of them share the network's
:class:`~workspace.memory.Memory`.

::

    net = Network("support")
    net.task("classifier", classifier, route=Route({"billing": "billing"}, default="general"))
    net.task("billing", billing, depends_on="optional")
    net.task("general", general, depends_on="optional")
    result = await net.arun("I was charged twice")   # or: async for event in net.stream(...)

Dependencies (``depends_on``)
    ``"none"`` (an entry task: starts at once), a list of task or group names (starts when all
    of them are finished), or ``"optional"`` (runs only when a finished task activates it).
    A skipped dependency counts as finished; a task whose dependencies were *all* skipped is
    skipped too. ``parallel(name)`` makes a named group usable as one dependency.

The message each task receives (``Task.input``)
    * an entry task gets the run's message;
    * an optional task gets the message its activating task received — routing forwards the
      request, as in RobotLab where every specialist answers the customer's message;
    * a task with dependencies gets the last text of its upstream task; with several upstream
      tasks, their last texts in ``depends_on`` order, each under a ``## <task>`` heading
      (skipped tasks and empty answers are left out; nothing left: the run's message).
    ``input="run"`` always gives the run's message, ``input="upstream"`` the upstream texts,
    and any other string is a Jinja2 template rendered with ``message`` (the run's message),
    ``upstream`` (task -> last text), ``upstream_text`` (the joined texts), ``memory`` (the
    shared memory's keys) and the run parameters.

Template variables
    Every robot's template sees the network's ``context``, deep-merged with the run's
    parameters (``net.stream(msg, customer=...)``) and then with the task's ``context`` (task
    wins; nested dicts merged; lists replaced), plus ``network_message`` (the run's message),
    ``upstream`` and, for ``wait_for`` keys, the values read from memory. ``message`` is the
    message the task received.

Routing (activating optional tasks)
    When a task finishes, the optional tasks it activates are chosen by, in this order:
    a :class:`Route` rule on the task (``match``: answer pattern -> task, first match wins,
    else ``default``), a ``router`` function ``router(result) -> name | [names] | None``, or,
    when it has neither, its *structured answer*: a JSON object with an ``activate`` /
    ``route`` / ``next`` key, a line ``activate: name``, or an answer that is exactly an
    optional task's name. Optional tasks never activated are reported ``skipped``: targets of
    route rules as soon as every rule naming them has decided, the others when nothing else
    can run. An optional task runs at most once per run.

Memory
    One shared memory. Writes made during a task are attributed to that task's robot (the
    agent loop sets :data:`workspace.memory.writer_var` per run), and each change is one
    ``memory_changed`` event carrying the writing task. ``wait_for`` on a task waits for memory
    keys before its robot starts (``AwaitTimeout`` after ``wait_timeout`` fails the task).
    :meth:`Network.broadcast` / :meth:`Network.on_broadcast` as in RobotLab (the message is
    also stored under ``_network_broadcast``).

Events
    :meth:`Network.stream` returns a :class:`NetworkRun`: iterate it for the events of every
    task merged in one order (one ``seq`` counter). Each task contributes ``task_started``,
    its robot's events (``task`` set; ``run_id`` is the task's own run id,
    :attr:`TaskState.run_id`) and ``task_finished`` (status done / failed / skipped /
    cancelled; ``result`` the RobotResult; ``error`` the failure, or why it was skipped or
    stopped). The tasks' own terminal events are not forwarded: the run ends with exactly one
    ``run_finished`` (result: :class:`NetworkResult`), ``run_failed`` (``task`` names the
    failed task) or ``run_cancelled``. One failing task fails the run: finished tasks keep
    their results and running ones are stopped.

Networks are also defined in YAML (:func:`load_network`; schema in its docstring).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import difflib
import functools
import inspect
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.agent import EventRun
from workspace.errors import AwaitTimeout, ConfigurationError, RunFailedError
from workspace.memory import Memory
from workspace.result import (
    CANCELLED,
    DONE,
    FAILED,
    RUNNING,
    SKIPPED,
    STATUSES,
    TERMINAL_STATUSES,
    WAITING,
    NetworkResult,
    RobotResult,
    TaskState,
)
from workspace.result import last_text as _last_text

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.providers.base import Provider
    from workspace.robot import Robot

__all__ = [
    "STATUSES",
    "NetworkError",
    "NetworkFileError",
    "NetworkInfo",
    "NetworkResult",
    "NetworkRun",
    "NetworkRunError",
    "ParallelGroup",
    "Problem",
    "Route",
    "Task",
    "TaskState",
    "deep_merge",
    "find_network_file",
    "list_networks",
    "load_network",
]

# Task states, as the Network dock shows them.

#: Keyword options of :meth:`Network.stream` that are not template variables; they reach every
#: task's robot (``tools``/``mcp`` are the run level for tasks that leave theirs at ``inherit``).
NETWORK_RUN_OPTIONS = frozenset({
    "approval", "folder", "changes", "thread_id", "max_turns", "settings", "provider", "tools", "mcp", "run_id",
})

_INPUT_MODES = ("auto", "run", "upstream")
_ACTIVATE_KEYS = ("activate", "route", "next", "tasks", "task")

#: The (run, task) whose robot is running in the current context; lets the memory observer
#: put a change into the right task's stream.
_CURRENT: contextvars.ContextVar[tuple[NetworkRun, TaskState] | None] = contextvars.ContextVar(
    "robotlab_network_task", default=None
)


# --------------------------------------------------------------------------------------------
# Errors


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a network definition."""

    message: str
    task: str | None = None
    robot: str | None = None
    field: str | None = None
    path: Path | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        subject = []
        if self.task is not None:
            subject.append(f"task '{self.task}'")
        if self.robot is not None:
            subject.append(f"robot '{self.robot}'")
        if self.field is not None:
            subject.append(f"field '{self.field}'")
        lead = ", ".join(subject)
        return f"{where}{lead}: {self.message}" if lead else f"{where}{self.message}"


class NetworkError(ConfigurationError):
    """A network that cannot run: unknown tasks, a cycle, bad routes. ``problems`` lists them all."""

    def __init__(self, problems: Sequence[Problem], *, name: str | None = None) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            text = str(self.problems[0])
        else:
            head = f"network '{name}' has {len(self.problems)} problems" if name else \
                f"{len(self.problems)} problems"
            text = head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(text)


class NetworkFileError(NetworkError):
    """A YAML network file with problems; each names the file, line, task or robot, and field."""

    def __init__(self, path: Path, problems: Sequence[Problem]) -> None:
        self.path = path
        probs = list(problems)
        if len(probs) == 1:
            super().__init__(probs)
        else:
            ConfigurationError.__init__(
                self, f"{path}: {len(probs)} problems:\n" + "\n".join(f"  - {_without_path(p)}" for p in probs)
            )
            self.problems = probs


def _without_path(problem: Problem) -> str:
    text = str(Problem(problem.message, problem.task, problem.robot, problem.field))
    return f"line {problem.line}: {text}" if problem.line else text


class NetworkRunError(RunFailedError):
    """:meth:`Network.arun` when a task failed: ``task`` names it, ``result`` keeps what finished."""

    def __init__(self, message: str, *, task: str | None, result: NetworkResult) -> None:
        super().__init__(message)
        self.task = task
        self.result = result


# --------------------------------------------------------------------------------------------
# Helpers


def deep_merge(base: Mapping[Any, Any] | None, override: Mapping[Any, Any] | None) -> dict[str, Any]:
    """``override`` over ``base``: nested dicts merged recursively, everything else (lists too)
    replaced; keys become strings (RobotLab's Task#deep_merge)."""
    out: dict[str, Any] = {str(k): _str_keys(v) for k, v in (base or {}).items()}
    for key, value in (override or {}).items():
        k = str(key)
        current = out.get(k)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[k] = deep_merge(current, value)
        else:
            out[k] = _str_keys(value)
    return out


def _str_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _str_keys(v) for k, v in value.items()}
    return value


def _as_names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return [_name_of(v) for v in value]
    return [_name_of(value)]


def _name_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    raise TypeError(f"Expected a task name, got {value!r}")


def _norm(name: Any) -> str:
    return re.sub(r"[\s-]+", "_", str(name).strip().lower())




def _json_object(text: str) -> Any:
    s = text.strip()
    if s.startswith("```"):
        s = re.sub(r"^```[\w-]*\s*", "", s)
        s = re.sub(r"\s*```\s*$", "", s)
    if not s.startswith("{"):
        start, end = s.find("{"), s.rfind("}")
        if start < 0 or end <= start:
            return None
        s = s[start : end + 1]
    try:
        return json.loads(s)
    except ValueError:
        return None


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def structured_targets(text: str, candidates: Iterable[str]) -> list[str]:
    """Optional tasks a structured answer names (see the module docstring), among ``candidates``."""
    lookup = {_norm(c): c for c in candidates}
    if not text or not lookup:
        return []
    data = _json_object(text) if "{" in text else None
    if isinstance(data, Mapping):
        for key in _ACTIVATE_KEYS:
            if key in data:
                return _pick(_as_plain_list(data[key]), lookup)
        return []
    m = re.search(r"^\s*(?:activate|route(?:\s+to)?|next)\s*[:=]\s*(.+?)\s*$", text, re.IGNORECASE | re.MULTILINE)
    if m:
        return _pick(re.split(r"[,;]\s*|\s+and\s+|\s+", m.group(1).strip(" .")), lookup)
    plain = _norm(text.strip().strip("*`_\"'.!").strip())
    return [lookup[plain]] if plain in lookup else []


def _as_plain_list(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [str(value)] if value is not None else []


def _pick(names: Iterable[str], lookup: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    for name in names:
        hit = lookup.get(_norm(name.strip("*`_\"'.")))
        if hit is not None and hit not in out:
            out.append(hit)
    return out


# --------------------------------------------------------------------------------------------
# Route


@dataclass
class Route:
    """A routing rule: the answer of task ``source`` picks the optional task(s) to run.

    ``match`` maps a pattern to a task name (or a list of names); patterns are tried in order
    and the first that occurs in the answer wins. A pattern matches as a whole word or phrase,
    ignoring case; ``re:<regex>`` is a regular expression. Nothing matches: ``default`` (a
    name, a list, or None for nothing). With ``field``, an answer that is a JSON object is
    matched on that field's value.
    """

    match: dict[str, str | list[str]] = field(default_factory=dict)
    default: str | list[str] | None = None
    field: str | None = None
    source: str | None = None

    def targets(self) -> list[str]:
        """Every task this rule may activate."""
        out: list[str] = []
        for value in [*self.match.values(), self.default]:
            for name in _as_names(value):
                if name not in out:
                    out.append(name)
        return out

    def choose(self, text: str) -> list[str]:
        """The task(s) this rule picks for an answer."""
        value = text or ""
        if self.field:
            data = _json_object(value)
            if isinstance(data, Mapping) and self.field in data:
                value = str(data[self.field])
        for pattern, target in self.match.items():
            if _matches(str(pattern), value):
                return _as_names(target)
        return _as_names(self.default)

    def describe(self) -> str:
        parts = [f"{_pattern_text(p)} → {', '.join(_as_names(t))}" for p, t in self.match.items()]
        if self.default:
            parts.append(f"otherwise → {', '.join(_as_names(self.default))}")
        on = f" (field '{self.field}')" if self.field else ""
        return "; ".join(parts) + on

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": self.source, "match": dict(self.match), "default": self.default,
                               "field": self.field}
        return {k: v for k, v in out.items() if v is not None}


def _pattern_text(pattern: str) -> str:
    return pattern[3:] if pattern.startswith("re:") else f'"{pattern}"'


def _matches(pattern: str, text: str) -> bool:
    if pattern.startswith("re:"):
        return re.search(pattern[3:], text, re.IGNORECASE) is not None
    return re.search(rf"(?<![\w-]){re.escape(pattern.strip())}(?![\w-])", text, re.IGNORECASE) is not None


# --------------------------------------------------------------------------------------------
# Task


Router = Callable[[RobotResult], Any]


class Task:
    """One step of a network: a robot, its dependencies, context and tool levels.

    ``depends_on``: ``"none"`` (entry task), a list of task/group names, or ``"optional"``.
    ``tools``/``mcp``: the run level of the tool hierarchy for this task's robot (``"inherit"``
    by default; RobotLab's ``:none`` default meant "do not set", which is ``inherit`` here).
    ``memory``: a :class:`Memory` this task uses instead of the shared one, or a dict merged into
    the shared memory when the task starts. ``route``/``router``: see the module docstring.
    ``input``: which message the robot receives. ``wait_for``: memory keys to wait for first.
    """

    def __init__(
        self,
        name: str,
        robot: Robot,
        *,
        context: Mapping[str, Any] | None = None,
        depends_on: Any = "none",
        tools: Any = "inherit",
        mcp: Any = "inherit",
        memory: Memory | Mapping[str, Any] | None = None,
        route: Route | Mapping[str, Any] | None = None,
        router: Router | None = None,
        input: str | None = None,
        wait_for: str | Sequence[str] | None = None,
        wait_timeout: float | None = None,
        description: str | None = None,
    ) -> None:
        from workspace.robot import RUN_OPTIONS
        from workspace.tools import selection

        self.name = str(name)
        if not self.name:
            raise ValueError("A task needs a name")
        if not hasattr(robot, "stream") or not hasattr(robot, "name"):
            raise TypeError(f"Task '{self.name}': robot must be a Robot, got {type(robot).__name__}")
        self.robot = robot
        self.context: dict[str, Any] = deep_merge({}, context or {})
        reserved = sorted(k for k in self.context if k in RUN_OPTIONS)
        if reserved:
            raise ValueError(
                f"Task '{self.name}': context key(s) {', '.join(reserved)} are run options, not template "
                "variables; set them on the task (tools=, mcp=, memory=) instead"
            )
        self.optional, self.depends_on = _parse_depends_on(depends_on, self.name)
        for what, value in (("tools", tools), ("mcp", mcp)):
            try:
                selection.check_level(value, what=what)
            except ValueError as exc:
                raise ValueError(f"Task '{self.name}': {exc}") from None
        self.tools: Any = list(tools) if isinstance(tools, list | tuple) else tools
        self.mcp: Any = list(mcp) if isinstance(mcp, list | tuple) else mcp
        if memory is not None and not isinstance(memory, Memory | Mapping):
            raise TypeError(f"Task '{self.name}': memory must be a Memory or a dict")
        self.memory = memory
        if isinstance(route, Mapping):
            route = Route(match=dict(route.get("match") or {}), default=route.get("default"),
                          field=route.get("field"))
        if route is not None:
            route.source = self.name
        self.route: Route | None = route
        if router is not None and not callable(router):
            raise TypeError(f"Task '{self.name}': router must be a function of the task's RobotResult")
        self.router = router
        self.input = input or "auto"
        self.wait_for: list[str] = _as_names(wait_for)
        if wait_timeout is not None and wait_timeout <= 0:
            raise ValueError(f"Task '{self.name}': wait_timeout must be a positive number of seconds")
        self.wait_timeout = wait_timeout
        self.description = description

    @property
    def is_optional(self) -> bool:
        return self.optional

    def to_dict(self) -> dict[str, Any]:
        """RobotLab's shape: ``{name, robot, context, mcp, tools, memory: true?}``."""
        out: dict[str, Any] = {
            "name": self.name,
            "robot": self.robot.name,
            "context": self.context,
            "mcp": self.mcp,
            "tools": self.tools,
        }
        if self.memory is not None:
            out["memory"] = True
        return out

    def __repr__(self) -> str:
        deps = "optional" if self.optional else (list(self.depends_on) or "none")
        return f"<Task {self.name!r} robot={self.robot.name!r} depends_on={deps!r}>"


def _parse_depends_on(value: Any, task: str) -> tuple[bool, tuple[str, ...]]:
    if value is None or (isinstance(value, str) and value in ("none", "")):
        return False, ()
    if isinstance(value, str) and value == "optional":
        return True, ()
    try:
        names = _as_names(value)
    except TypeError:
        raise ValueError(
            f"Task '{task}': depends_on must be 'none', 'optional' or a list of task names, got {value!r}"
        ) from None
    if "optional" in names or "none" in names:
        raise ValueError(f"Task '{task}': depends_on is 'none', 'optional' or a list of task names, not a mix")
    return False, tuple(dict.fromkeys(names))


class ParallelGroup:
    """A named group of tasks (``network.parallel(name)``), usable as one dependency.

    Tasks added through the group get the group's ``depends_on`` (plus their own)::

        with net.parallel("analysis") as group:
            group.task("sentiment", sentiment_robot)
            group.task("entities", entity_robot)
        net.task("synthesis", synthesizer, depends_on=["analysis"])
    """

    def __init__(self, network: Network, name: str, depends_on: Any = "none") -> None:
        self.network = network
        self.name = name
        optional, deps = _parse_depends_on(depends_on, f"group {name}")
        if optional:
            raise ValueError(f"Group '{name}': a parallel group cannot be optional")
        self.depends_on = deps
        self.tasks: list[str] = []

    def task(self, name: str, robot: Robot, **options: Any) -> ParallelGroup:
        own = options.pop("depends_on", "none")
        _, own_deps = _parse_depends_on(own, name)
        deps = list(dict.fromkeys([*self.depends_on, *own_deps]))
        self.network.task(name, robot, depends_on=deps or "none", **options)
        self.tasks.append(str(name))
        return self

    def add(self, *names: str) -> ParallelGroup:
        """Put tasks already in the network into this group."""
        for name in names:
            if name not in self.tasks:
                self.tasks.append(name)
        return self

    def __enter__(self) -> ParallelGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __repr__(self) -> str:
        return f"<ParallelGroup {self.name!r} tasks={self.tasks!r}>"


# --------------------------------------------------------------------------------------------
# Network


BroadcastHandler = Callable[[dict[str, Any]], Any]


class Network:
    """Tasks wrapping robots, run as a dependency graph with one shared memory.

    ``concurrency``: ``"auto"`` (no limit; RobotLab's ``:threads``/``:async`` mean the same) or
    the most tasks running at once. ``tools``/``mcp``: the network level of the tool and MCP
    hierarchies. ``context``: template variables for every task (under the run parameters).
    """

    def __init__(
        self,
        name: str,
        *,
        memory: Memory | None = None,
        concurrency: int | str = "auto",
        tools: Any = "inherit",
        mcp: Any = "inherit",
        context: Mapping[str, Any] | None = None,
        description: str | None = None,
        tasks: Iterable[Task] = (),
    ) -> None:
        from workspace.tools import selection

        self.name = str(name)
        self.description = description
        self.memory = memory if memory is not None else Memory(network_name=self.name)
        if isinstance(concurrency, str):
            if concurrency not in ("auto", "threads", "async"):
                raise ValueError(f"Network '{self.name}': concurrency must be 'auto' or a positive number, "
                                 f"got {concurrency!r}")
        elif isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"Network '{self.name}': concurrency must be 'auto' or a positive number, "
                             f"got {concurrency!r}")
        self.concurrency: int | str = concurrency
        selection.check_level(tools, what="tools")
        selection.check_level(mcp, what="mcp")
        self.tools: Any = tools
        self.mcp: Any = mcp
        self.context: dict[str, Any] = deep_merge({}, context or {})
        self._tasks: dict[str, Task] = {}
        self._robots: dict[str, Robot] = {}
        self._groups: dict[str, ParallelGroup] = {}
        self._routes: list[Route] = []
        self._broadcast_handlers: list[BroadcastHandler] = []
        #: The YAML file this network came from, if any.
        self.source: Path | None = None
        for task in tasks:
            self.add_task(task)

    # -- the DSL --------------------------------------------------------------------------
    def task(self, name: str, robot: Robot, **options: Any) -> Network:
        """Add a task (options as :class:`Task`); returns self for chaining."""
        return self.add_task(Task(name, robot, **options))

    def add_task(self, task: Task) -> Network:
        if task.name in self._tasks:
            raise ValueError(f"Task '{task.name}' already exists in network '{self.name}'")
        if task.name in self._groups:
            raise ValueError(f"'{task.name}' is already a parallel group in network '{self.name}'")
        self._tasks[task.name] = task
        self._robots[task.name] = task.robot
        if task.route is not None:
            self._routes.append(task.route)
        return self

    def parallel(self, name: str | None = None, *, depends_on: Any = "none") -> ParallelGroup:
        """A group of tasks that run at once; its name can be a dependency of later tasks."""
        group_name = name or f"parallel_{len(self._groups) + 1}"
        if group_name in self._groups or group_name in self._tasks:
            raise ValueError(f"'{group_name}' already exists in network '{self.name}'")
        group = ParallelGroup(self, group_name, depends_on)
        self._groups[group_name] = group
        return group

    def route(self, source: str, match: Mapping[str, str | list[str]] | None = None, *,
              default: str | list[str] | None = None, field: str | None = None) -> Network:
        """Add a routing rule: the answer of task ``source`` activates optional tasks."""
        self._routes.append(Route(match=dict(match or {}), default=default, field=field, source=str(source)))
        return self

    # -- readers --------------------------------------------------------------------------
    @property
    def tasks(self) -> dict[str, Task]:
        return dict(self._tasks)

    @property
    def robots(self) -> dict[str, Robot]:
        """RobotLab's registry: ``{task name (or added robot name): robot}``."""
        return dict(self._robots)

    @property
    def groups(self) -> dict[str, list[str]]:
        return {name: list(g.tasks) for name, g in self._groups.items()}

    @property
    def routes(self) -> list[Route]:
        return list(self._routes)

    @property
    def optional_tasks(self) -> list[str]:
        return [t.name for t in self._tasks.values() if t.optional]

    def robot(self, name: str) -> Robot | None:
        return self._robots.get(str(name))

    __getitem__ = robot

    @property
    def available_robots(self) -> list[Robot]:
        return list(self._robots.values())

    def add_robot(self, robot: Robot) -> Network:
        if robot.name in self._robots:
            raise ValueError(f"Robot '{robot.name}' already exists in network '{self.name}'")
        self._robots[robot.name] = robot
        return self

    def reset_memory(self) -> Network:
        self.memory.reset()
        return self

    def reset(self) -> Network:
        """Forget every robot's conversation (the memory stays; see :meth:`reset_memory`)."""
        for robot in {id(r): r for r in self._robots.values()}.values():
            robot.reset()
        return self

    async def wait_for(self, *keys: str, timeout: float | None = None) -> Any:
        """Wait for keys of the shared memory (``Memory.wait_for``)."""
        return await self.memory.wait_for(*keys, timeout=timeout)

    # -- broadcast ------------------------------------------------------------------------
    def broadcast(self, payload: Any) -> Network:
        """Send ``{payload, network, timestamp}`` to every :meth:`on_broadcast` handler (asynchronously
        when a loop runs) and store it in memory under ``_network_broadcast``. Returns self."""
        message = {"payload": payload, "network": self.name,
                   "timestamp": datetime.now(UTC).isoformat(timespec="seconds")}
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for handler in list(self._broadcast_handlers):
            if loop is not None:
                loop.call_soon(_call_handler, handler, message)
            else:
                _call_handler(handler, message)
        self.memory.set("_network_broadcast", message)
        return self

    def on_broadcast(self, handler: BroadcastHandler | None = None) -> Network:
        if handler is None:
            raise ValueError("Handler required for on_broadcast")
        self._broadcast_handlers.append(handler)
        return self

    # -- structure ------------------------------------------------------------------------
    def dependencies(self, name: str) -> list[str]:
        """A task's dependencies, groups expanded, in order."""
        out: list[str] = []
        for dep in self._tasks[name].depends_on:
            members = self._groups[dep].tasks if dep in self._groups else [dep]
            for member in members:
                if member not in out and member != name:
                    out.append(member)
        return out

    def problems(self) -> list[Problem]:
        """What stops this network from running (unknown names, cycles, bad routes)."""
        problems: list[Problem] = []
        names = set(self._tasks)
        for group in self._groups.values():
            for member in group.tasks:
                if member not in names:
                    problems.append(Problem(f"unknown task '{member}'{_suggest(member, names)}",
                                            field=f"parallel group '{group.name}'"))
            for dep in group.depends_on:
                if dep not in names and dep not in self._groups:
                    problems.append(Problem(f"unknown task '{dep}'{_suggest(dep, names)}",
                                            field=f"parallel group '{group.name}' depends_on"))
        for task in self._tasks.values():
            for dep in task.depends_on:
                if dep == task.name:
                    problems.append(Problem("a task cannot depend on itself", task=task.name, field="depends_on"))
                elif dep not in names and dep not in self._groups:
                    known = [*names, *self._groups]
                    problems.append(Problem(f"unknown task '{dep}'{_suggest(dep, known)}", task=task.name,
                                            field="depends_on"))
        for route in self._routes:
            if route.source not in names:
                problems.append(Problem(f"unknown task '{route.source}'{_suggest(str(route.source), names)}",
                                        field="route from"))
            for target in route.targets():
                if target not in names:
                    problems.append(Problem(f"unknown task '{target}'{_suggest(target, names)}",
                                            task=route.source, field="route"))
                elif not self._tasks[target].optional:
                    problems.append(Problem(f"'{target}' is not optional; a routed task needs depends_on: optional",
                                            task=route.source, field="route"))
        if not problems:
            cycle = find_cycle(self._edges())
            if cycle:
                problems.append(Problem("the tasks form a cycle: " + " -> ".join(cycle), field="depends_on"))
        return problems

    def validate(self) -> Network:
        """Raise :class:`NetworkError` naming every problem; returns self."""
        problems = self.problems()
        if problems:
            raise NetworkError(problems, name=self.name)
        return self

    def _edges(self) -> dict[str, list[str]]:
        """task -> the tasks that must finish (or route to it) before it runs."""
        edges: dict[str, list[str]] = {name: self.dependencies(name) for name in self._tasks}
        for route in self._routes:
            for target in route.targets():
                if target in edges and route.source is not None and route.source not in edges[target]:
                    edges[target].append(route.source)
        return edges

    def levels(self) -> tuple[list[list[str]], list[str]]:
        """Execution steps (tasks of one step may run at once) and the optional tasks whose
        activator is not known in advance (activated by a structured answer or a router)."""
        edges = self._edges()
        depth: dict[str, int | None] = {}

        def level(name: str, seen: frozenset[str] = frozenset()) -> int | None:
            if name in depth:
                return depth[name]
            if name in seen:
                return None
            preds = edges.get(name, [])
            if not preds:
                value: int | None = None if self._tasks[name].optional else 1
            else:
                known = [lv for p in preds if (lv := level(p, seen | {name})) is not None]
                value = 1 + max(known) if known else None
            depth[name] = value
            return value

        steps: dict[int, list[str]] = {}
        unknown: list[str] = []
        for name in self._tasks:
            lv = level(name)
            if lv is None:
                unknown.append(name)
            else:
                steps.setdefault(lv, []).append(name)
        return [steps[k] for k in sorted(steps)], unknown

    def graph(self) -> dict[str, Any]:
        """The task graph for drawing: ``{"name", "nodes": [...], "edges": [...], "groups": {...}}``.

        A node: ``{name, robot, optional, step, description}`` (``step`` None for optional tasks
        activated by an answer); an edge: ``{from, to, kind: "depends"|"route", label}``.
        """
        steps, _ = self.levels()
        step_of = {name: i + 1 for i, step in enumerate(steps) for name in step}
        nodes = [{"name": t.name, "robot": t.robot.name, "optional": t.optional, "step": step_of.get(t.name),
                  "description": t.description or getattr(t.robot, "description", None)}
                 for t in self._tasks.values()]
        edges: list[dict[str, Any]] = []
        for name in self._tasks:
            for dep in self.dependencies(name):
                edges.append({"from": dep, "to": name, "kind": "depends", "label": None})
        for route in self._routes:
            labels: dict[str, list[str]] = {}
            for pattern, target in route.match.items():
                for t in _as_names(target):
                    labels.setdefault(t, []).append(_pattern_text(str(pattern)).strip('"'))
            for t in _as_names(route.default):
                labels.setdefault(t, []).append("otherwise")
            for target, words in labels.items():
                edges.append({"from": route.source, "to": target, "kind": "route", "label": " / ".join(words)})
        return {"name": self.name, "nodes": nodes, "edges": edges, "groups": self.groups}

    # -- pictures -------------------------------------------------------------------------
    def to_mermaid(self, *, status: Mapping[str, str] | None = None) -> str:
        """A Mermaid flowchart (``graph TD``); ``status`` (task -> state) colours the nodes."""
        ids = {name: _mermaid_id(name, i) for i, name in enumerate(self._tasks)}
        lines = ["graph TD"]
        grouped = {m for g in self._groups.values() for m in g.tasks}
        for task in self._tasks.values():
            if task.name not in grouped:
                lines.append("    " + _mermaid_node(ids[task.name], task))
        for group in self._groups.values():
            lines.append(f'    subgraph {_mermaid_id(group.name, len(ids))}_group["{_mermaid_text(group.name)}"]')
            for member in group.tasks:
                if member in self._tasks:
                    lines.append("        " + _mermaid_node(ids[member], self._tasks[member]))
            lines.append("    end")
        for edge in self.graph()["edges"]:
            a, b = ids.get(edge["from"]), ids.get(edge["to"])
            if a is None or b is None:
                continue
            if edge["kind"] == "route":
                lines.append(f'    {a} -.->|"{_mermaid_text(edge["label"])}"| {b}')
            else:
                lines.append(f"    {a} --> {b}")
        lines.append("    classDef optional stroke-dasharray: 5 5")
        optional = [ids[n] for n in self.optional_tasks]
        if optional:
            lines.append(f"    class {','.join(optional)} optional")
        if status:
            colours = {WAITING: "#eeeeee", RUNNING: "#fff3bf", DONE: "#d3f9d8", FAILED: "#ffc9c9",
                       SKIPPED: "#f1f3f5", CANCELLED: "#ffe8cc"}
            for state, colour in colours.items():
                members = [ids[n] for n, s in status.items() if s == state and n in ids]
                if members:
                    lines.append(f"    classDef {state} fill:{colour}")
                    lines.append(f"    class {','.join(members)} {state}")
        return "\n".join(lines)

    def to_dot(self) -> str:
        """The graph in Graphviz DOT."""
        lines = [f'digraph "{self.name}" {{', "  rankdir=TB;"]
        for task in self._tasks.values():
            style = ", style=dashed" if task.optional else ""
            lines.append(f'  "{task.name}" [label="{task.name}\\n({task.robot.name})"{style}];')
        for edge in self.graph()["edges"]:
            extra = f' [style=dashed, label="{edge["label"]}"]' if edge["kind"] == "route" else ""
            lines.append(f'  "{edge["from"]}" -> "{edge["to"]}"{extra};')
        lines.append("}")
        return "\n".join(lines)

    def visualize(self) -> str:
        """An ASCII picture: one row per step; ``<name>`` marks an optional task."""
        steps, unknown = self.levels()

        def box(name: str) -> str:
            return f"<{name}>" if self._tasks[name].optional else f"[{name}]"

        rows = [f"{self.name}", "=" * max(len(self.name), 3)]
        for i, step in enumerate(steps, start=1):
            if i > 1:
                rows.append("      │")
                rows.append("      ▼")
            rows.append(f" {i:>2}   " + "  ".join(box(n) for n in step))
        if unknown:
            rows.append("")
            rows.append(" when activated:  " + "  ".join(box(n) for n in unknown))
        if self.optional_tasks:
            rows.append("")
            rows.append(" <name> = optional: runs only when a task routes to it")
        return "\n".join(rows)

    def execution_plan(self) -> str:
        """A text outline: the steps, what each task receives, routes and waits."""
        steps, unknown = self.levels()
        concurrency = self.concurrency if isinstance(self.concurrency, int) else "no limit"
        lines = [f"Execution plan for network '{self.name}' ({len(self._tasks)} tasks, concurrency: {concurrency})"]
        if self.description:
            lines.append(self.description)
        routes_to: dict[str, list[Route]] = {}
        for route in self._routes:
            for target in route.targets():
                routes_to.setdefault(target, []).append(route)
        blocks = [(f"Step {i}", step) for i, step in enumerate(steps, start=1)]
        if unknown:
            blocks.append(("When activated by a task's answer", unknown))
        for title, names in blocks:
            optional = all(self._tasks[n].optional for n in names)
            together = " (at the same time)" if len(names) > 1 and not optional else ""
            kind = " — optional, only the ones routed to run" if optional else ""
            lines.append(f"{title}{together}{kind}:")
            for name in names:
                task = self._tasks[name]
                lines.append(f"  • {name} (robot {task.robot.name}): {self._input_text(task, routes_to)}")
                if task.wait_for:
                    limit = f", up to {task.wait_timeout:g} s" if task.wait_timeout else ""
                    lines.append(f"      waits for memory: {', '.join(task.wait_for)}{limit}")
                for route in self._routes:
                    if route.source == name:
                        lines.append(f"      routes: {route.describe()}")
                if task.router is not None:
                    lines.append("      routes: chosen by its router function")
        lines.append("A task starts when the tasks it depends on are finished; skipped optional tasks "
                     "count as finished.")
        return "\n".join(lines)

    def _input_text(self, task: Task, routes_to: Mapping[str, list[Route]]) -> str:
        if task.input == "run":
            return "gets the run's message"
        if task.input not in _INPUT_MODES:
            return "gets its input template"
        if task.optional:
            sources = [r.source for r in routes_to.get(task.name, []) if r.source]
            via = f" from {', '.join(dict.fromkeys(sources))}" if sources else ""
            return f"routed{via}; gets the message its activating task received"
        deps = self.dependencies(task.name)
        if not deps:
            return "gets the run's message"
        if len(deps) == 1:
            return f"gets the answer of {deps[0]}"
        return f"gets the answers of {', '.join(deps)}"

    def to_dict(self) -> dict[str, Any]:
        """RobotLab's shape: ``{name, robots, tasks, optional_tasks}``."""
        return {
            "name": self.name,
            "robots": list(self._robots),
            "tasks": list(self._tasks),
            "optional_tasks": self.optional_tasks,
        }

    # -- running --------------------------------------------------------------------------
    def stream(self, message: Any = "", **params: Any) -> NetworkRun:
        """Start a run (validated first: a bad network raises :class:`NetworkError` here).

        ``params`` are template variables for every robot (RobotLab's run context), except the
        options in :data:`NETWORK_RUN_OPTIONS` (approval, folder, changes, thread_id, max_turns,
        settings, provider, tools, mcp, run_id), which reach every task's robot.
        """
        from workspace.robot import RUN_OPTIONS

        self.validate()
        options: dict[str, Any] = {}
        variables: dict[str, Any] = {}
        for key, value in params.items():
            if key in NETWORK_RUN_OPTIONS:
                options[key] = value
            elif key in RUN_OPTIONS or key == "message":
                raise TypeError(
                    f"'{key}' is not an option of a network run. Options: {', '.join(sorted(NETWORK_RUN_OPTIONS))}; "
                    "any other keyword is a template variable"
                )
            else:
                variables[key] = value
        return NetworkRun(self, message, variables, options)

    async def arun(self, message: Any = "", **params: Any) -> NetworkResult:
        """Run to the end. A failed task raises :class:`NetworkRunError` (with the partial result);
        a stopped run returns its partial result (``status == "cancelled"``)."""
        run = self.stream(message, **params)
        terminal = await run.wait()
        assert run.result is not None
        if isinstance(terminal, ev.RunFailed):
            raise NetworkRunError(terminal.error, task=terminal.task, result=run.result)
        return run.result

    def run(self, message: Any = "", **params: Any) -> NetworkResult:
        """Blocking wrapper of :meth:`arun` for scripts (not inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(message, **params))
        raise RuntimeError("Network.run() cannot be called from a running event loop; use 'await network.arun(...)'")

    def __repr__(self) -> str:
        return f"<Network {self.name!r} tasks={list(self._tasks)!r}>"


#: Async broadcast handlers still running (kept so they are not garbage-collected).
_PENDING: set[asyncio.Future[Any]] = set()


def _call_handler(handler: BroadcastHandler, message: dict[str, Any]) -> None:
    import logging

    try:
        value = handler(message)
        if inspect.isawaitable(value):
            task = asyncio.ensure_future(value)
            _PENDING.add(task)
            task.add_done_callback(_PENDING.discard)
    except Exception as exc:
        logging.getLogger("workspace.network").error("Broadcast handler error: %s", exc, exc_info=True)


def find_cycle(edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle in ``node -> predecessors`` as a path ``[a, b, ..., a]`` (in run order), or None."""
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        color[node] = 1
        stack.append(node)
        for pred in edges.get(node, ()):
            if pred not in edges:
                continue
            state = color.get(pred, 0)
            if state == 1:
                cycle = stack[stack.index(pred):] + [pred]
                return list(reversed(cycle))
            if state == 0:
                found = visit(pred)
                if found:
                    return found
        stack.pop()
        color[node] = 2
        return None

    for node in edges:
        if color.get(node, 0) == 0:
            found = visit(node)
            if found:
                return found
    return None


def _mermaid_id(name: str, index: int) -> str:
    clean = re.sub(r"\W", "_", name)
    if not clean or not clean[0].isalpha() or clean.lower() in ("end", "graph", "subgraph", "class", "style"):
        clean = f"t{index}_{clean}"
    return clean


def _mermaid_text(text: Any) -> str:
    return str(text).replace('"', "#quot;").replace("|", "/")


def _mermaid_node(node_id: str, task: Task) -> str:
    label = _mermaid_text(task.name if task.robot.name == task.name else f"{task.name} · {task.robot.name}")
    return f'{node_id}(["{label}"])' if task.optional else f'{node_id}["{label}"]'


# --------------------------------------------------------------------------------------------
# Running


class NetworkRun(EventRun):
    """One run of a network: iterate it (once) for the merged events; ``cancel()`` stops it.

    ``tasks`` holds each task's live :class:`TaskState`; ``result`` is the
    :class:`NetworkResult` once the run ended (also after a failure or a stop).
    """

    def __init__(self, network: Network, message: Any, params: Mapping[str, Any], options: Mapping[str, Any]
                 ) -> None:
        self.network = network
        self.run_id = str(options.get("run_id") or uuid.uuid4().hex)
        self.message = _message_text(message)
        self.params: dict[str, Any] = dict(params)
        self.options: dict[str, Any] = {k: v for k, v in options.items() if k != "run_id"}
        self.tasks: dict[str, TaskState] = {
            name: TaskState(name=name, robot=t.robot.name, optional=t.optional,
                            depends_on=network.dependencies(name))
            for name, t in network.tasks.items()
        }
        self.result: NetworkResult | None = None
        self.terminal: ev.Event | None = None
        self._queue: asyncio.Queue[ev.Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._handles: dict[str, asyncio.Task[None]] = {}
        self._seq = 0
        self._consumed = False
        self._stop_reason: str | None = None
        self._failure: TaskState | None = None
        self._order: list[str] = []
        self._idle: asyncio.Event | None = None
        self._semaphore = asyncio.Semaphore(network.concurrency) if isinstance(network.concurrency, int) else None
        self._locks: dict[int, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._started = time.monotonic()
        self._routes_to: dict[str, list[Route]] = {}
        self._routes_from: dict[str, list[Route]] = {}
        for route in network.routes:
            self._routes_from.setdefault(str(route.source), []).append(route)
            for target in route.targets():
                self._routes_to.setdefault(target, []).append(route)

    # -- public -------------------------------------------------------------------------
    def start(self) -> NetworkRun:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._main(), name=f"network-{self.run_id[:8]}")
        return self

    def cancel(self, reason: str = "stopped by the user") -> None:
        """Stop every running task; the run still ends with ``run_cancelled``. Safe any time."""
        if self.terminal is not None:
            return
        if self._stop_reason is None and self._failure is None:
            self._stop_reason = reason
        if self._task is None:
            self.start()
        else:
            self._stop_tasks(self._stop_reason or reason)

    @property
    def statuses(self) -> dict[str, str]:
        return {name: state.status for name, state in self.tasks.items()}

    def task(self, name: str) -> TaskState:
        return self.tasks[name]

    # -- emitting -------------------------------------------------------------------------
    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _emit(self, cls: type[ev.Event], *, robot: str | None = None, task: str | None = None,
              **fields: Any) -> ev.Event | None:
        if self.terminal is not None:
            return None
        event = cls(run_id=self.run_id, robot=robot or self.network.name, seq=self._next_seq(), task=task,
                    **fields)
        if event.terminal:
            self.terminal = event
        elif task is not None and task in self.tasks:
            self.tasks[task].events.append(event)
        self._queue.put_nowait(event)
        return event

    def _forward(self, state: TaskState, event: ev.Event) -> None:
        if self.terminal is not None:
            return
        event = event.replace(seq=self._next_seq())
        state.events.append(event)
        self._queue.put_nowait(event)

    def _on_memory_change(self, change: Any) -> None:
        current = _CURRENT.get()
        state = current[1] if current is not None and current[0] is self else None
        fields = {"key": str(change.key), "value": change.value, "previous": change.previous,
                  "writer": change.writer, "network_name": change.network_name}

        def deliver() -> None:
            run = state.agent_run if state is not None else None
            if run is not None and not run.done:
                run.emit(ev.MemoryChanged, **fields)  # in order with the task's tool events
            else:
                self._emit(ev.MemoryChanged, robot=change.writer or self.network.name,
                           task=state.name if state is not None else None, **fields)

        if self._loop is None or threading.get_ident() == self._thread:
            deliver()
        else:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(deliver)

    # -- the scheduler --------------------------------------------------------------------
    async def _main(self) -> None:
        remove_observer: Callable[[], None] | None = None
        try:
            self._loop = asyncio.get_running_loop()
            self._thread = threading.get_ident()
            self._idle = asyncio.Event()
            remove_observer = self.network.memory.add_observer(self._on_memory_change)
            model, is_lm = self._models()
            self._emit(ev.RunStarted, message=self.message, model=model, is_language_model=is_lm)
            self._advance()
            await self._idle.wait()
        except asyncio.CancelledError:
            self._stop_reason = self._stop_reason or "cancelled"
            await self._drain()
            self._conclude()
            raise
        except Exception as exc:  # a bug in the scheduler: never leave the run open
            self._stop_reason = self._stop_reason or "the network failed"
            await self._drain()
            self.result = self._make_result(FAILED, error=f"{type(exc).__name__}: {exc}")
            self._emit(ev.RunFailed, error=f"The network failed: {exc}", error_type=type(exc).__name__,
                       partial=self.result)
        finally:
            if remove_observer is not None:
                remove_observer()
        self._conclude()

    async def _drain(self) -> None:
        self._stop_tasks(self._stop_reason or "stopped")
        while self._handles:
            with contextlib.suppress(BaseException):
                await asyncio.shield(asyncio.gather(*self._handles.values(), return_exceptions=True))
            await asyncio.sleep(0)

    def _conclude(self) -> None:
        if self.terminal is not None:
            return
        reason = None
        if self._failure is not None:
            reason = f"not run: task '{self._failure.name}' failed"
        elif self._stop_reason is not None:
            reason = f"not run: {self._stop_reason}"
        for state in self.tasks.values():
            if state.status == WAITING:
                if reason is None:  # pragma: no cover - defensive: the scheduler decides every task
                    self._finish(state, SKIPPED, reason="never became ready")
                else:
                    self._finish(state, CANCELLED, reason=reason)
        if self._failure is not None:
            failed = self._failure
            error = f"Task '{failed.name}' failed: {failed.error}"
            self.result = self._make_result(FAILED, error=error)
            self._emit(ev.RunFailed, robot=failed.robot, task=failed.name, error=error,
                       error_type=failed.error_type or "Error", partial=self.result)
        elif self._stop_reason is not None:
            self.result = self._make_result(CANCELLED, error=self._stop_reason)
            self._emit(ev.RunCancelled, reason=self._stop_reason, partial=self.result)
        else:
            self.result = self._make_result(DONE)
            self._emit(ev.RunFinished, result=self.result)

    def _make_result(self, status: str, *, error: str | None = None) -> NetworkResult:
        return NetworkResult(
            network=self.network.name, status=status, tasks=self.tasks, order=list(self._order),
            params=self.params, message=self.message,
            failed_task=self._failure.name if self._failure is not None else None, error=error,
            duration=time.monotonic() - self._started, memory=self.network.memory,
        )

    def _models(self) -> tuple[str, bool]:
        labels: list[str] = []
        is_lm = True
        for task in self.network.tasks.values():
            try:
                provider = self.options.get("provider") or task.robot.provider
            except Exception:
                continue
            label = str(getattr(provider, "label", "") or "")
            if label and label not in labels:
                labels.append(label)
            is_lm = is_lm and bool(getattr(provider, "is_language_model", True))
        return (", ".join(labels) if labels else "network"), is_lm

    def _advance(self) -> None:
        """Start every ready task, skip what can no longer run; set idle when nothing runs."""
        if self._stop_reason is None and self._failure is None:
            while True:
                progressed = False
                for state in self.tasks.values():
                    if state.status != WAITING or state.name in self._handles:
                        continue
                    verdict, reason = self._readiness(state)
                    if verdict == "ready":
                        self._launch(state)
                    elif verdict == "skip":
                        self._finish(state, SKIPPED, reason=reason)
                        progressed = True
                if progressed:
                    continue
                if self._handles:
                    break
                waiting = [s for s in self.tasks.values() if s.status == WAITING]
                if not waiting:
                    break
                # Nothing runs and nothing is ready: optional tasks nobody activated are skipped.
                dormant = [s for s in waiting if s.optional and s.activated_by is None] or waiting
                for state in dormant:
                    self._finish(state, SKIPPED, reason="not activated by any task" if state.optional
                                 else "its dependencies can no longer run")
        if not self._handles and self._idle is not None:
            self._idle.set()

    def _readiness(self, state: TaskState) -> tuple[str, str | None]:
        if state.optional:
            if state.activated_by is not None:
                return "ready", None
            routes = self._routes_to.get(state.name, [])
            if routes and all(self.tasks[str(r.source)].status in TERMINAL_STATUSES for r in routes):
                chosen = sorted({t for r in routes for t in self.tasks[str(r.source)].routed_to})
                why = f"routed to {', '.join(chosen)}" if chosen else "no route chose it"
                return "skip", f"not activated ({why})"
            return "wait", None
        deps = state.depends_on
        if not deps:
            return "ready", None
        statuses = [self.tasks[d].status for d in deps]
        if any(s not in (DONE, SKIPPED) for s in statuses):
            return "wait", None
        if all(s == SKIPPED for s in statuses):
            return "skip", "all its dependencies were skipped"
        return "ready", None

    def _launch(self, state: TaskState) -> None:
        assert self._loop is not None
        handle = self._loop.create_task(self._run_task(state), name=f"task-{state.name}")
        self._handles[state.name] = handle
        handle.add_done_callback(functools.partial(self._on_handle_done, state))

    def _on_handle_done(self, state: TaskState, _handle: asyncio.Task[None]) -> None:
        self._handles.pop(state.name, None)
        if state.status not in TERMINAL_STATUSES:  # cancelled before it began
            self._finish(state, CANCELLED, reason=self._stop_reason or "stopped")
        self._advance()

    def _stop_tasks(self, reason: str) -> None:
        for name, handle in list(self._handles.items()):
            state = self.tasks[name]
            run = state.agent_run
            if run is not None and not run.done:
                run.cancel(reason)
            elif run is None and not handle.done():
                handle.cancel()

    def _fail(self, state: TaskState) -> None:
        if self._failure is None and self._stop_reason is None:
            self._failure = state
            self._stop_tasks(f"task '{state.name}' failed")

    def _finish(self, state: TaskState, status: str, *, result: RobotResult | None = None,
                error: str | None = None, reason: str | None = None) -> None:
        state.status = status
        state.finished_at = time.time()
        if result is not None:
            state.result = result
        state.error = error
        state.reason = reason if reason is not None else error
        if status == DONE:
            self._order.append(state.name)
        self._emit(ev.TaskFinished, robot=state.robot, task=state.name, status=status,
                   error=error if error is not None else reason, result=state.result)

    # -- one task -------------------------------------------------------------------------
    async def _run_task(self, state: TaskState) -> None:
        task = self.network.tasks[state.name]
        robot = task.robot
        _CURRENT.set((self, state))
        async with contextlib.AsyncExitStack() as stack:
            try:
                if self._semaphore is not None:
                    await stack.enter_async_context(self._semaphore)
                lock = self._locks.setdefault(id(robot), asyncio.Lock())
                await stack.enter_async_context(lock)
                if self._stop_reason is not None or self._failure is not None:
                    self._finish(state, CANCELLED, reason=f"not run: {self._stop_reason or 'another task failed'}")
                    return
                message, variables = self._inputs(task, state)
                state.message = message
                state.status = RUNNING
                state.started_at = time.time()
                self._emit(ev.TaskStarted, robot=state.robot, task=state.name, message=message)
                memory = self._task_memory(task)
                if task.wait_for:
                    values = await memory.wait_for(*task.wait_for, timeout=task.wait_timeout)
                    found = values if len(task.wait_for) > 1 else {task.wait_for[0]: values}
                    variables.update(_template_safe(found))
                if self._stop_reason is not None or self._failure is not None:
                    self._finish(state, CANCELLED, reason=self._stop_reason or "another task failed")
                    return
                run = robot.stream(message, **self._robot_options(task, memory), **variables)
                state.agent_run = run
                state.run_id = run.run_id
                terminal: ev.Event | None = None
                async for event in run:
                    if event.terminal:
                        terminal = event
                    else:
                        self._forward(state, event)
                await self._settle(task, state, terminal)
            except asyncio.CancelledError:
                if state.status not in TERMINAL_STATUSES:
                    self._finish(state, CANCELLED, result=_partial(state),
                                 reason=self._stop_reason or (f"task '{self._failure.name}' failed"
                                                              if self._failure else "stopped"))
                if self._stop_reason is None and self._failure is None:
                    raise
            except AwaitTimeout as exc:
                self._task_failed(state, f"{exc} (wait_for of task '{state.name}')", "AwaitTimeout")
            except Exception as exc:
                self._task_failed(state, str(exc) or type(exc).__name__, type(exc).__name__)

    async def _settle(self, task: Task, state: TaskState, terminal: ev.Event | None) -> None:
        if isinstance(terminal, ev.RunFinished):
            result = terminal.result if isinstance(terminal.result, RobotResult) else None
            if result is None:  # pragma: no cover - a task's robot run always ends with a RobotResult
                self._task_failed(state, "the task's robot finished without a result", "RuntimeError")
                return
            try:
                routed = await self._route(task, result)
            except Exception as exc:
                state.result = result
                self._task_failed(state, f"routing failed: {exc}", type(exc).__name__)
                return
            state.routed_to = routed
            for target in routed:
                target_state = self.tasks[target]
                if target_state.activated_by is None and target_state.status == WAITING:
                    target_state.activated_by = state.name
            self._finish(state, DONE, result=result)
        elif isinstance(terminal, ev.RunFailed):
            state.result = terminal.partial if isinstance(terminal.partial, RobotResult) else None
            self._task_failed(state, terminal.error, terminal.error_type or "Error")
        elif isinstance(terminal, ev.RunCancelled):
            partial = terminal.partial if isinstance(terminal.partial, RobotResult) else None
            if self._stop_reason is None and self._failure is None:
                # Someone stopped this task's robot directly: the network stops with it.
                self._stop_reason = f"task '{state.name}' was stopped ({terminal.reason})"
                self._stop_tasks(self._stop_reason)
            self._finish(state, CANCELLED, result=partial, reason=terminal.reason)
        else:  # pragma: no cover - AgentRun always ends with a terminal event
            self._task_failed(state, "the robot's run ended without a result", "RuntimeError")

    def _task_failed(self, state: TaskState, error: str, error_type: str) -> None:
        state.error_type = error_type
        if self._failure is not None or self._stop_reason is not None:
            # Already stopping: a task failing because it was interrupted is just cancelled.
            self._finish(state, CANCELLED, result=state.result, reason=error)
            return
        self._finish(state, FAILED, result=state.result, error=error)
        self._fail(state)

    async def _route(self, task: Task, result: RobotResult) -> list[str]:
        text = _last_text(result)
        chosen: list[str] = []
        rules = self._routes_from.get(task.name, [])
        for rule in rules:
            chosen.extend(rule.choose(text))
        if task.router is not None:
            value = task.router(result)
            if inspect.isawaitable(value):
                value = await value
            names = _as_names(value)
            for name in names:
                target = self.network.tasks.get(name)
                if target is None or not target.optional:
                    raise ValueError(
                        f"the router of task '{task.name}' chose '{name}', which is not an optional task of the "
                        f"network (optional tasks: {', '.join(self.network.optional_tasks) or 'none'})"
                    )
            chosen.extend(names)
        if not rules and task.router is None:
            candidates = [s.name for s in self.tasks.values()
                          if s.optional and s.status == WAITING and s.activated_by is None and s.name != task.name]
            chosen.extend(structured_targets(text, candidates))
        return list(dict.fromkeys(chosen))

    # -- what a task gets -----------------------------------------------------------------
    def _inputs(self, task: Task, state: TaskState) -> tuple[str, dict[str, Any]]:
        upstream: dict[str, str] = {}
        sources = [state.activated_by] if state.activated_by else state.depends_on
        for name in sources:
            if name is not None and self.tasks[name].status == DONE:
                text = self.tasks[name].text
                if text:
                    upstream[name] = text
        joined = _join_upstream(upstream)
        base = deep_merge(self.network.context, self.params)
        variables = deep_merge(base, task.context)
        if task.input == "run":
            message = self.message
        elif task.input == "upstream":
            message = joined or self.message
        elif task.input == "auto":
            if state.activated_by is not None:
                activator = self.tasks[state.activated_by]
                message = activator.message if activator.message is not None else self.message
            elif state.depends_on:
                message = joined or self.message
            else:
                message = self.message
        else:
            from workspace.templates import Template

            values = {**variables, "message": self.message, "upstream": upstream, "upstream_text": joined,
                      "memory": dict(self._task_memory(task).items())}
            message = Template(name=f"input of task {task.name}", body=task.input).render(values)
        variables["network_message"] = self.message
        variables["upstream"] = upstream
        return message, _template_safe(variables)

    def _task_memory(self, task: Task) -> Memory:
        return task.memory if isinstance(task.memory, Memory) else self.network.memory

    def _robot_options(self, task: Task, memory: Memory) -> dict[str, Any]:
        if isinstance(task.memory, Mapping):
            memory.merge(task.memory)
        options: dict[str, Any] = {
            "network": self.network,
            # Passed as ``memory``: a Memory given this way always wins in Robot._run_memory.
            "memory": memory,
            "task": task.name,
            "watch_memory": False,  # the network reports each change once
            "network_tools": self.network.tools,
            "network_mcp": self.network.mcp,
            "tools": task.tools if task.tools != "inherit" else self.options.get("tools", "inherit"),
            "mcp": task.mcp if task.mcp != "inherit" else self.options.get("mcp", "inherit"),
        }
        for key in ("approval", "folder", "changes", "thread_id", "max_turns", "settings", "provider"):
            if self.options.get(key) is not None:
                options[key] = self.options[key]
        return options


def _template_safe(values: Mapping[str, Any]) -> dict[str, Any]:
    from workspace.robot import RUN_OPTIONS

    return {k: v for k, v in values.items() if k not in RUN_OPTIONS and k != "message"}


def _join_upstream(upstream: Mapping[str, str]) -> str:
    if not upstream:
        return ""
    if len(upstream) == 1:
        return next(iter(upstream.values()))
    return "\n\n".join(f"## {name}\n\n{text}" for name, text in upstream.items())


def _partial(state: TaskState) -> RobotResult | None:
    run = state.agent_run
    if run is not None and run.result is not None:
        return run.result
    return state.result


def _message_text(message: Any) -> str:
    if isinstance(message, str):
        return message
    if message is None:
        return ""
    content = getattr(message, "content", None)
    if content is not None:
        return str(content)
    if isinstance(message, Mapping) and "content" in message:
        return str(message["content"])
    return str(message)


# --------------------------------------------------------------------------------------------
# YAML network files

_NETWORK_KEYS = ("name", "description", "concurrency", "tools", "mcp", "context", "memory", "robots", "tasks",
                 "groups", "routes")
_ROBOT_KEYS = ("name", "description", "system_prompt", "template", "robot", "file", "model", "api_base", "tools",
               "mcp", "context", "max_turns", "temperature", "top_p", "top_k", "max_tokens", "presence_penalty",
               "frequency_penalty", "stop")
_TASK_KEYS = ("robot", "description", "depends_on", "context", "tools", "mcp", "memory", "route", "input",
              "wait_for", "timeout")
_ROUTE_KEYS = ("match", "default", "field")
_ROUTES_KEYS = ("from", *_ROUTE_KEYS)


@dataclass(frozen=True, slots=True)
class NetworkInfo:
    name: str
    description: str | None
    path: Path
    #: "project", "user" or "shipped"
    source: str
    tasks: int = 0


def network_dirs(folder: Path | None = None) -> list[Path]:
    """Where network files are looked up: the project's, the user's, the shipped ones."""
    from workspace.templates import search_path

    return search_path(folder, kind="networks")


def list_networks(folder: Path | None = None) -> list[NetworkInfo]:
    """Every network file found (first of each name), sorted by name. Files that do not parse
    are listed with their problem as the description."""
    import yaml

    from workspace.catalog import _source

    seen: dict[str, NetworkInfo] = {}
    for directory in network_dirs(folder):
        if not directory.is_dir():
            continue
        for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                data = {"description": f"(cannot be read: {type(exc).__name__})"}
            if not isinstance(data, dict):
                data = {"description": "(not a network file: the top level must be a mapping)"}
            name = str(data.get("name") or path.stem)
            tasks = data.get("tasks")
            if name not in seen:
                seen[name] = NetworkInfo(name, data.get("description"), path, _source(path, folder),
                                         len(tasks) if isinstance(tasks, dict | list) else 0)
    return sorted(seen.values(), key=lambda n: n.name)


def find_network_file(name: str | Path, folder: Path | None = None) -> Path:
    """A network file by path, or by name among :func:`list_networks`."""
    candidate = Path(name)
    if candidate.is_file():
        return candidate
    text = str(name)
    for info in list_networks(folder):
        if text in (info.name, info.path.stem):
            return info.path
    for directory in network_dirs(folder):
        for ext in (".yaml", ".yml"):
            path = directory / f"{text}{ext}"
            if path.is_file():
                return path
    available = ", ".join(n.name for n in list_networks(folder)) or "(none)"
    raise ConfigurationError(
        f"Unknown network '{text}': no such file, and no network of that name. Available networks: {available}. "
        f"Add your own as a YAML file in {network_dirs(folder)[-2]}"
    )


class _Lines:
    """Line numbers of the YAML keys, by path (``("tasks", "billing", "robot")``)."""

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[Any, ...], int] = {}
        try:
            import yaml

            node = yaml.compose(text, Loader=yaml.SafeLoader)
        except Exception:
            node = None
        if node is not None:
            self._walk(node, ())

    def _walk(self, node: Any, path: tuple[Any, ...]) -> None:
        import yaml

        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, str(key.value))
                self.lines[sub] = key.start_mark.line + 1
                self._walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = (*path, i)
                self.lines[sub] = item.start_mark.line + 1
                self._walk(item, sub)

    def at(self, *path: Any) -> int | None:
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return None


class _Loader:
    def __init__(self, path: Path, text: str, *, folder: Path | None, config: Config | None,
                 provider: Provider | None, model: str | None) -> None:
        self.path = path
        self.base = path.parent
        self.lines = _Lines(text)
        self.folder = folder
        self.config = config
        self.provider = provider
        self.model = model
        self.problems: list[Problem] = []
        self.robots: dict[str, Robot] = {}
        self.failed_robots: set[str] = set()

    def problem(self, message: str, *path: Any, task: str | None = None, robot: str | None = None,
                field: str | None = None) -> None:
        self.problems.append(Problem(message, task=task, robot=robot, field=field, path=self.path,
                                     line=self.lines.at(*path)))

    def unknown_keys(self, data: Mapping[str, Any], allowed: Sequence[str], *path: Any, task: str | None = None,
                     robot: str | None = None, what: str = "") -> None:
        for key in data:
            if str(key) not in allowed:
                self.problem(f"unknown field{_suggest(str(key), allowed)}; {what}fields are: {', '.join(allowed)}",
                             *path, str(key), task=task, robot=robot, field=str(key))

    def allowed_here(self, *path: Any, mcp: Any = None, api_base: Any = None, robot: str | None = None,
                     task: str | None = None) -> bool:
        """A network file inside the opened folder may only name MCP servers and use local api_bases
        (see :func:`workspace.trust.folder_file_problem`); False (and a problem) when it does more."""
        from workspace.trust import folder_file_problem

        problem = folder_file_problem(self.path, self.folder, mcp=mcp, api_base=api_base)
        if problem is None:
            return True
        field = str(path[-1]) if path else None
        self.problem(problem.split(": ", 1)[1], *path, robot=robot, task=task, field=field)
        return False

    # -- robots ---------------------------------------------------------------------------
    def template_dirs(self) -> list[Path]:
        from workspace.templates import search_path

        return [self.base, self.base / "templates", *search_path(self.folder, kind="templates")]

    def robot_options(self, spec: Mapping[str, Any], name: str, path: tuple[Any, ...]) -> dict[str, Any]:
        from workspace.templates import SETTING_KEYS
        from workspace.tools import selection

        options: dict[str, Any] = {"config": self.config, "folder": self.folder}
        if self.provider is not None:
            options["provider"] = self.provider
        for key in ("tools", "mcp"):
            if key in spec:
                try:
                    selection.check_level(spec[key], what=key)
                except ValueError as exc:
                    self.problem(str(exc), *path, key, robot=name, field=key)
                    continue
                if key == "mcp" and not self.allowed_here(*path, key, mcp=spec[key], robot=name):
                    continue
                options[key] = spec[key] if spec[key] is not None else "none"
        if spec.get("api_base") is not None:
            self.allowed_here(*path, "api_base", api_base=spec["api_base"], robot=name)
        if "context" in spec:
            if isinstance(spec["context"], Mapping):
                options["context"] = dict(spec["context"])
            else:
                self.problem("must be a mapping of template variables", *path, "context", robot=name,
                             field="context")
        for key in ("description", "api_base"):
            if spec.get(key) is not None:
                options[key] = str(spec[key])
        model = self.model or spec.get("model")
        if model is not None:
            if not isinstance(model, str):
                self.problem("must be a model id like 'openai/gpt-4o-mini'", *path, "model", robot=name, field="model")
            else:
                options["model"] = model
        if "max_turns" in spec:
            value = spec["max_turns"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                self.problem("must be a positive whole number", *path, "max_turns", robot=name, field="max_turns")
            else:
                options["max_turns"] = value
        for key in SETTING_KEYS:
            if key in spec:
                options[key] = spec[key]
        return options

    def build_robot(self, name: str, spec: Any, path: tuple[Any, ...]) -> Robot | None:
        from workspace.robot import Robot
        from workspace.templates import Template

        if isinstance(spec, str):
            spec = {"robot": spec}
        if not isinstance(spec, Mapping):
            self.problem("a robot is a mapping (system_prompt, template, file or robot, and options) or the name "
                         "of a robot file", *path, robot=name)
            return None
        self.unknown_keys(spec, _ROBOT_KEYS, *path, robot=name, what="robot ")
        sources = [k for k in ("system_prompt", "template", "file", "robot") if spec.get(k) is not None]
        if not sources:
            self.problem("give its instructions: system_prompt, template, file (a robot .md file) or robot "
                         "(the name of a robot file)", *path, robot=name)
            return None
        if "robot" in sources and len(sources) > 1:
            self.problem(f"'robot' refers to a robot file; it cannot be combined with {', '.join(sources[:-1])}",
                         *path, "robot", robot=name, field="robot")
            return None
        robot_name = str(spec.get("name") or name)
        options = self.robot_options(spec, name, path)
        try:
            template: Any = None
            system_prompt = spec.get("system_prompt")
            if system_prompt is not None and not isinstance(system_prompt, str):
                self.problem("must be text", *path, "system_prompt", robot=name, field="system_prompt")
                return None
            if spec.get("robot") is not None:
                template = self.find_robot_template(str(spec["robot"]), path + ("robot",), robot=name)
                if template is None:
                    return None
            elif spec.get("file") is not None:
                file = Path(str(spec["file"]))
                file = file if file.is_absolute() else self.base / file
                if not file.is_file():
                    self.problem(f"no such file: {file}", *path, "file", robot=name, field="file")
                    return None
                template = Template.load(file)
            elif spec.get("template") is not None:
                ref = str(spec["template"])
                from workspace.templates import find_template

                try:
                    template = find_template(ref, self.template_dirs())
                except ConfigurationError as exc:
                    self.problem(str(exc), *path, "template", robot=name, field="template")
                    return None
            if template is None and system_prompt is not None and ("{{" in system_prompt or "{%" in system_prompt):
                # A system prompt with template syntax is rendered with the run's variables.
                template, system_prompt = Template(name=robot_name, body=system_prompt), None
            return Robot(robot_name, system_prompt=system_prompt, template=template, **options)
        except (ConfigurationError, ValueError, TypeError) as exc:
            self.problem(str(exc), *path, robot=name)
            return None

    def find_robot_template(self, ref: str, path: tuple[Any, ...], *, robot: str | None = None,
                            task: str | None = None) -> Any:
        """A robot file (catalog) or a template by name; None (problem noted) when neither exists."""
        from workspace.catalog import find_robot_file, list_robots
        from workspace.templates import Template, find_template

        local = Path(ref)
        if local.suffix in (".md", ".markdown"):
            file = local if local.is_absolute() else self.base / local
            if file.is_file():
                return Template.load(file)
        try:
            return Template.load(find_robot_file(ref, self.folder))
        except ConfigurationError:
            pass
        try:
            return find_template(ref, self.template_dirs())
        except ConfigurationError:
            pass
        known = [*self.robots, *(r.name for r in list_robots(self.folder))]
        self.problem(f"unknown robot '{ref}': not defined under 'robots' in this file, and no robot file or template "
                     f"has that name{_suggest(ref, known)}", *path, task=task, robot=robot,
                     field="robot")
        return None

    # -- tasks ----------------------------------------------------------------------------
    def task_robot(self, task: str, spec: Mapping[str, Any], path: tuple[Any, ...]) -> Robot | None:
        ref = spec.get("robot", task)
        if isinstance(ref, Mapping):
            key = f"{task}"
            robot = self.build_robot(key, ref, path + ("robot",))
            return robot
        if not isinstance(ref, str):
            self.problem("must be the name of a robot (under 'robots', or a robot file) or a robot mapping",
                         *path, "robot", task=task, field="robot")
            return None
        if ref in self.robots:
            return self.robots[ref]
        if ref in self.failed_robots:
            return None
        from workspace.robot import Robot

        template = self.find_robot_template(ref, path + ("robot",), task=task)
        if template is None:
            return None
        options = self.robot_options({}, ref, path)
        try:
            robot = Robot(ref, template=template, **options)
        except (ConfigurationError, ValueError, TypeError) as exc:
            self.problem(str(exc), *path, "robot", task=task, field="robot")
            return None
        self.robots[ref] = robot
        return robot

    def route(self, spec: Any, path: tuple[Any, ...], *, task: str | None, keys: Sequence[str]) -> Route | None:
        if not isinstance(spec, Mapping):
            self.problem("a route is a mapping: match (answer -> task), default, field", *path, task=task,
                         field="route")
            return None
        self.unknown_keys(spec, keys, *path, task=task, what="route ")
        match = spec.get("match") or {}
        if not isinstance(match, Mapping):
            self.problem("match maps an answer word (or re:regex) to a task name", *path, "match", task=task,
                         field="route.match")
            return None
        clean: dict[str, str | list[str]] = {}
        for pattern, target in match.items():
            if isinstance(target, str):
                clean[str(pattern)] = target
            elif isinstance(target, list) and all(isinstance(t, str) for t in target):
                clean[str(pattern)] = list(target)
            else:
                self.problem(f"the target of '{pattern}' must be a task name or a list of task names",
                             *path, "match", str(pattern), task=task, field="route.match")
        default = spec.get("default")
        if default is not None and not isinstance(default, str | list):
            self.problem("default must be a task name or a list of task names", *path, "default", task=task,
                         field="route.default")
            default = None
        if not clean and default is None:
            self.problem("a route needs match entries or a default", *path, task=task, field="route")
        if "match" in spec and spec["match"] and not clean:
            return None
        field_name = spec.get("field")
        if field_name is not None and not isinstance(field_name, str):
            self.problem("field must be the name of a field of a JSON answer", *path, "field", task=task,
                         field="route.field")
            field_name = None
        return Route(match=clean, default=default, field=field_name)

    def load(self, data: Any) -> Network | None:
        if not isinstance(data, Mapping):
            self.problem("a network file is a mapping with at least 'tasks' (and usually 'robots')")
            return None
        self.unknown_keys(data, _NETWORK_KEYS, what="network ")
        name = str(data.get("name") or self.path.stem)
        concurrency = data.get("concurrency", "auto")
        if not (concurrency in ("auto", "threads", "async") or (
                isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency > 0)):
            self.problem(f"must be 'auto' or a positive number, got {concurrency!r}", "concurrency",
                         field="concurrency")
            concurrency = "auto"
        from workspace.tools import selection

        levels: dict[str, Any] = {}
        for key in ("tools", "mcp"):
            value = data.get(key, "inherit")
            try:
                selection.check_level(value, what=key)
                levels[key] = value if value is not None else "none"
            except ValueError as exc:
                self.problem(str(exc), key, field=key)
                levels[key] = "inherit"
            if key == "mcp" and not self.allowed_here(key, mcp=value):
                levels[key] = "inherit"
        context = data.get("context") or {}
        if not isinstance(context, Mapping):
            self.problem("must be a mapping of template variables", "context", field="context")
            context = {}
        memory_values = data.get("memory") or {}
        if not isinstance(memory_values, Mapping):
            self.problem("must be a mapping of initial shared-memory values", "memory", field="memory")
            memory_values = {}

        robots = data.get("robots") or {}
        if not isinstance(robots, Mapping):
            self.problem("must be a mapping of robot name -> robot", "robots", field="robots")
            robots = {}
        for robot_name, spec in robots.items():
            robot = self.build_robot(str(robot_name), spec, ("robots", str(robot_name)))
            if robot is None:
                self.failed_robots.add(str(robot_name))
            else:
                self.robots[str(robot_name)] = robot

        raw_tasks = data.get("tasks")
        tasks: list[tuple[str, Mapping[str, Any], tuple[Any, ...]]] = []
        if isinstance(raw_tasks, Mapping):
            for task_name, spec in raw_tasks.items():
                tasks.append((str(task_name), spec if spec is not None else {}, ("tasks", str(task_name))))
        elif isinstance(raw_tasks, list):
            for i, spec in enumerate(raw_tasks):
                if not isinstance(spec, Mapping) or not spec.get("name"):
                    self.problem("each task in a list needs a name", "tasks", i, field="tasks")
                    continue
                rest = {k: v for k, v in spec.items() if k != "name"}
                tasks.append((str(spec["name"]), rest, ("tasks", i)))
        else:
            self.problem("a network needs 'tasks': a mapping of task name -> task", "tasks", field="tasks")
        task_names = [t[0] for t in tasks]
        if len(set(task_names)) != len(task_names):
            dupes = sorted({n for n in task_names if task_names.count(n) > 1})
            self.problem(f"task names must be unique: {', '.join(dupes)}", "tasks", field="tasks")

        groups = data.get("groups") or {}
        if not isinstance(groups, Mapping):
            self.problem("must map a group name to a list of task names", "groups", field="groups")
            groups = {}
        group_members: dict[str, list[str]] = {}
        for group, members in groups.items():
            if isinstance(members, Mapping):
                members = members.get("tasks")
            if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
                self.problem("a group is a list of task names", "groups", str(group), field=f"groups.{group}")
                continue
            if str(group) in task_names:
                self.problem(f"'{group}' is already a task name", "groups", str(group), field=f"groups.{group}")
                continue
            for member in members:
                if member not in task_names:
                    self.problem(f"unknown task '{member}'{_suggest(member, task_names)}", "groups", str(group),
                                 field=f"groups.{group}")
            group_members[str(group)] = list(members)

        network = Network(name, concurrency=concurrency, tools=levels["tools"], mcp=levels["mcp"],
                          context=context, description=data.get("description"))
        network.source = self.path
        deps_of: dict[str, list[str]] = {}
        routes: list[tuple[Route, tuple[Any, ...]]] = []
        built: list[Task] = []
        for task_name, spec, path in tasks:
            if not isinstance(spec, Mapping):
                self.problem("a task is a mapping (robot, depends_on, context, ...)", *path, task=task_name)
                continue
            self.unknown_keys(spec, _TASK_KEYS, *path, task=task_name, what="task ")
            depends = spec.get("depends_on", "none")
            if depends is None:
                depends = "none"
            if isinstance(depends, str) and depends not in ("none", "optional"):
                depends = [depends]
            if isinstance(depends, list):
                if not all(isinstance(d, str) for d in depends):
                    self.problem("must be 'none', 'optional' or a list of task names", *path, "depends_on",
                                 task=task_name, field="depends_on")
                    depends = []
                known = [*task_names, *group_members]
                for dep in depends:
                    if dep not in known:
                        self.problem(f"unknown task '{dep}'{_suggest(dep, known)}", *path, "depends_on",
                                     task=task_name, field="depends_on")
                    elif dep == task_name:
                        self.problem("a task cannot depend on itself", *path, "depends_on", task=task_name,
                                     field="depends_on")
                expanded: list[str] = []
                for dep in depends:
                    expanded.extend(group_members.get(dep, [dep]))
                deps_of[task_name] = [d for d in expanded if d in task_names and d != task_name]
            elif not isinstance(depends, str):
                self.problem("must be 'none', 'optional' or a list of task names", *path, "depends_on",
                             task=task_name, field="depends_on")
                depends = "none"
            else:
                deps_of[task_name] = []
            options: dict[str, Any] = {"depends_on": depends}
            for key in ("tools", "mcp"):
                if key in spec:
                    try:
                        selection.check_level(spec[key], what=key)
                        options[key] = spec[key] if spec[key] is not None else "none"
                    except ValueError as exc:
                        self.problem(str(exc), *path, key, task=task_name, field=key)
                    if key == "mcp" and not self.allowed_here(*path, key, mcp=spec[key], task=task_name):
                        options.pop(key, None)
            for key, kind in (("context", "template variables"), ("memory", "values merged into shared memory")):
                if key in spec:
                    if isinstance(spec[key], Mapping):
                        options[key] = dict(spec[key])
                    else:
                        self.problem(f"must be a mapping of {kind}", *path, key, task=task_name, field=key)
            if "input" in spec:
                if isinstance(spec["input"], str) and spec["input"].strip():
                    options["input"] = spec["input"]
                else:
                    self.problem("must be 'run', 'upstream' or a template text", *path, "input", task=task_name,
                                 field="input")
            if "wait_for" in spec:
                value = spec["wait_for"]
                if isinstance(value, str) or (isinstance(value, list) and value
                                              and all(isinstance(v, str) for v in value)):
                    options["wait_for"] = value
                else:
                    self.problem("must be a memory key or a list of keys", *path, "wait_for", task=task_name,
                                 field="wait_for")
            if "timeout" in spec:
                value = spec["timeout"]
                if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                    self.problem("must be a positive number of seconds", *path, "timeout", task=task_name,
                                 field="timeout")
                elif "wait_for" not in spec:
                    self.problem("timeout limits wait_for; add wait_for: [keys]", *path, "timeout",
                                 task=task_name, field="timeout")
                else:
                    options["wait_timeout"] = float(value)
            if spec.get("description") is not None:
                options["description"] = str(spec["description"])
            if "route" in spec:
                route = self.route(spec["route"], (*path, "route"), task=task_name, keys=_ROUTE_KEYS)
                if route is not None:
                    route.source = task_name
                    routes.append((route, (*path, "route")))
            robot = self.task_robot(task_name, spec, path)
            if robot is None:
                continue
            try:
                built.append(Task(task_name, robot, **options))
            except (ValueError, TypeError) as exc:
                self.problem(str(exc).replace(f"Task '{task_name}': ", ""), *path, task=task_name)

        raw_routes = data.get("routes") or []
        if not isinstance(raw_routes, list):
            self.problem("must be a list of routes (from, match, default, field)", "routes", field="routes")
            raw_routes = []
        for i, spec in enumerate(raw_routes):
            source = spec.get("from") if isinstance(spec, Mapping) else None
            if not isinstance(source, str):
                self.problem("a route needs 'from': the task whose answer decides", "routes", i, field="routes.from")
                continue
            if source not in task_names:
                self.problem(f"unknown task '{source}'{_suggest(source, task_names)}", "routes", i, "from",
                             field="routes.from")
                continue
            route = self.route(spec, ("routes", i), task=source, keys=_ROUTES_KEYS)
            if route is not None:
                route.source = source
                routes.append((route, ("routes", i)))

        optional = {name for name, spec, _ in tasks if isinstance(spec, Mapping) and spec.get("depends_on") ==
                    "optional"}
        for route, path in routes:
            for target in route.targets():
                if target not in task_names:
                    self.problem(f"unknown task '{target}'{_suggest(target, task_names)}", *path, task=route.source,
                                 field="route")
                elif target not in optional:
                    self.problem(f"routes to '{target}', which is not optional: give '{target}' depends_on: optional",
                                 *path, task=route.source, field="route")
        edges = {name: list(deps_of.get(name, [])) for name in task_names}
        for route, _ in routes:
            for target in route.targets():
                if target in edges and route.source is not None:
                    edges[target].append(route.source)
        cycle = find_cycle(edges)
        if cycle:
            self.problem("the tasks form a cycle: " + " -> ".join(cycle), "tasks", cycle[0], task=cycle[0],
                         field="depends_on")
        if self.problems:
            return None
        for task in built:
            network.add_task(task)
        for name, members in group_members.items():
            network.parallel(name).add(*members)
        for route, _ in routes:
            network._routes.append(route)
        for key, value in memory_values.items():
            network.memory.set(str(key), value)
        return network


def load_network(
    path: str | Path,
    *,
    folder: str | Path | None = None,
    config: Config | None = None,
    provider: Provider | None = None,
    model: str | None = None,
) -> Network:
    """Build a :class:`Network` from a YAML file; every problem is reported before anything runs.

    ``provider`` (tests) and ``model`` (``--model``) override every robot's. Schema::

        name: support-triage            # default: the file name
        description: ...
        concurrency: auto               # or the most tasks running at once
        tools: inherit                  # network level: inherit | none | all | [names]
        mcp: none
        context: {company: Acme}        # template variables for every robot
        memory: {policy: "30 days"}     # initial shared-memory values
        robots:
          classifier:                   # inline: system_prompt (Jinja2 when it uses {{ }}) or template
            system_prompt: ...
            model: openai/gpt-4o-mini   # optional; also tools, mcp, context, description, max_turns,
                                        # temperature, top_p, max_tokens, ...
          helper: assistant             # a robot file or template by name (file: path/to.md works too)
        groups:
          analysers: [sentiment, entities]   # a name usable in depends_on
        tasks:
          classifier:
            robot: classifier           # default: the robot named like the task
            route:                      # activate optional tasks from the answer
              match: {billing: billing, "re:bug|crash": technical}
              default: general
              field: category           # optional: match this field of a JSON answer
          billing:
            depends_on: optional        # none (default) | optional | [tasks or groups]
            context: {department: billing}
            tools: none                 # run level for this task: inherit | none | all | [names]
            input: run                  # auto (default) | run | upstream | a Jinja2 template
            wait_for: [key]             # memory keys to wait for (timeout: seconds)
        routes:                         # routes may also be listed here, with from:
          - {from: classifier, match: {...}, default: general}
    """
    import yaml

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"{file}: network file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{file}: cannot read the network file ({exc})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise NetworkFileError(file, [Problem(f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
                                              path=file, line=line)]) from exc
    loader = _Loader(file, text, folder=Path(folder).resolve() if folder is not None else None, config=config,
                     provider=provider, model=model)
    network = loader.load(data)
    if network is None or loader.problems:
        raise NetworkFileError(file, loader.problems)
    return network

