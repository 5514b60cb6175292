"""The network model and its builder API: :class:`Task`, :class:`ParallelGroup` and :class:`Network`
(see the package docstring for what dependencies, inputs, routing and memory mean).

A :class:`Network` holds the definition; :mod:`workspace.network.graph` analyses it,
:mod:`workspace.network.pictures` draws it and :mod:`workspace.network.scheduler` runs it
(:meth:`Network.stream` returns a :class:`~workspace.network.scheduler.NetworkRun`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.memory import Memory
from workspace.network import graph, pictures
from workspace.network.errors import NetworkError, NetworkRunError, Problem
from workspace.network.merge import deep_merge
from workspace.network.routing import Route, as_names
from workspace.result import NetworkResult, RobotResult
from workspace.runnable import Runnable

if TYPE_CHECKING:
    from workspace.bus import MessageBus
    from workspace.hooks import Hook
    from workspace.ledger import Ledger
    from workspace.network.scheduler import NetworkRun
    from workspace.robot import Robot
    from workspace.run_config import RunConfig

__all__ = ["NETWORK_RUN_OPTIONS", "Network", "ParallelGroup", "Task"]

_log = logging.getLogger("workspace.network")

#: Keyword options of :meth:`Network.stream` that are not template variables; they reach every
#: task's robot (``tools``/``mcp`` are the run level for tasks that leave theirs at ``inherit``).
NETWORK_RUN_OPTIONS = frozenset({
    "approval", "folder", "changes", "thread_id", "max_turns", "settings", "provider", "tools", "mcp", "run_id",
})


Router = Callable[[RobotResult], Any]


class Task:
    """One step of a network: a robot, its dependencies, context and tool levels.

    ``depends_on``: ``"none"`` (entry task), a list of task/group names, or ``"optional"``.
    ``tools``/``mcp``: the run level of the tool hierarchy for this task's robot (``"inherit"``
    by default; RobotLab's ``:none`` default meant "do not set", which is ``inherit`` here).
    ``memory``: a :class:`Memory` this task uses instead of the shared one, or a dict merged into
    the shared memory when the task starts. ``route``/``router``: see the package docstring.
    ``input``: which message the robot receives. ``wait_for``: memory keys to wait for first.
    ``on_error``: ``"fail"`` (a failed robot fails the network) or ``"continue"`` (its answer is
    ``"Error: <type>: <message>"`` and the tasks after it run).
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
        on_error: str = "fail",
        config: RunConfig | Mapping[str, Any] | None = None,
    ) -> None:
        from workspace.robot_runs import RUN_OPTIONS
        from workspace.run_config import coerce
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
        self.wait_for: list[str] = as_names(wait_for)
        if wait_timeout is not None and wait_timeout <= 0:
            raise ValueError(f"Task '{self.name}': wait_timeout must be a positive number of seconds")
        self.wait_timeout = wait_timeout
        self.description = description
        if on_error not in ("fail", "continue"):
            raise ValueError(f"Task '{self.name}': on_error must be 'fail' or 'continue' (got {on_error!r})")
        #: ``continue``: RobotLab's error-tolerant step; the robot's failure becomes its answer
        #: (``"Error: <type>: <message>"``) and the network goes on.
        self.on_error = on_error
        try:  #: RobotLab's task ``config:``, merged over the network's for this task's robot (workspace.robot_config)
            self.config: RunConfig = coerce(config)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Task '{self.name}': {exc}") from None

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
        names = as_names(value)
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


class Network(Runnable):
    """Tasks wrapping robots, run as a dependency graph with one shared memory.

    ``concurrency``: ``"auto"`` (no limit; RobotLab's ``:threads``/``:async`` mean the same) or
    the most tasks running at once. ``max_concurrent_robots`` (RobotLab 0.1's cap; ``None`` = no cap)
    bounds it further: the tighter of the two holds (:attr:`task_limit`). ``tools``/``mcp``: the
    network level of the tool and MCP hierarchies. ``context``: template variables for every task (under the run parameters).
    ``ledger``: a :class:`~workspace.ledger.Ledger` every task's model calls reserve from (one budget for the run's
    parallel tasks; ``budget:`` in a network file).
    ``config``: RobotLab's :class:`~workspace.run_config.RunConfig` for every task's robot (a task's ``config=`` is
    merged over it; a robot's own settings win over both); its ``tools``/``mcp``, ``max_concurrent_robots``,
    ``token_budget``/``cost_budget`` (the shared ledger) and ``bus`` are the network's when not given here.
    ``parallel_mode``: ``"async"`` (RobotLab's default; the only one here).
    """

    def __init__(
        self,
        name: str,
        *,
        memory: Memory | None = None,
        concurrency: int | str = "auto",
        max_concurrent_robots: int | None = None,
        tools: Any = "inherit",
        mcp: Any = "inherit",
        context: Mapping[str, Any] | None = None,
        description: str | None = None,
        tasks: Iterable[Task] = (),
        ledger: Ledger | None = None,
        config: RunConfig | Mapping[str, Any] | None = None,
        parallel_mode: str = "async",
    ) -> None:
        from workspace.run_config import coerce
        from workspace.tools import selection

        self.name = str(name)
        if str(parallel_mode) == "ractor":
            raise ValueError(f"Network '{self.name}': parallel_mode 'ractor' is RobotLab's Ruby Ractors (one thread "
                             "per task), which Python has no counterpart of: tasks run as asyncio tasks here. Use "
                             "parallel_mode='async' (the default), and max_concurrent_robots= to cap them")
        if parallel_mode != "async":
            raise ValueError(f"Network '{self.name}': parallel_mode must be 'async', got {parallel_mode!r}")
        #: RobotLab's ``parallel_mode``: always ``"async"`` (asyncio tasks).
        self.parallel_mode = "async"
        try:
            #: The network's level of RobotLab's RunConfig (under each task's; see workspace.robot_config).
            self.config: RunConfig = coerce(config)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Network '{self.name}': {exc}") from None
        if max_concurrent_robots is None:
            max_concurrent_robots = self.config.max_concurrent_robots
        tools = self.config.tools if tools == "inherit" and self.config.tools is not None else tools
        mcp = self.config.mcp if mcp == "inherit" and self.config.mcp is not None else mcp
        if ledger is None and (self.config.token_budget is not None or self.config.cost_budget is not None):
            from workspace.ledger import Ledger

            limits = {"tokens": self.config.token_budget, "cost": self.config.cost_budget}
            ledger = Ledger(limits={k: float(v) for k, v in limits.items() if v is not None})
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
        if max_concurrent_robots is not None and (
                isinstance(max_concurrent_robots, bool) or not isinstance(max_concurrent_robots, int)
                or max_concurrent_robots < 1):
            raise ValueError(f"Network '{self.name}': max_concurrent_robots must be a positive number or None "
                             f"(no cap), got {max_concurrent_robots!r}")
        self.max_concurrent_robots: int | None = max_concurrent_robots
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
        from workspace.hooks import HookRegistry

        #: This network's hooks (``network.on``): its runs, its tasks and the robot runs inside them.
        self.hooks = HookRegistry()
        #: The message bus its robots talk on (:meth:`with_bus`; None: they do not).
        self.bus: MessageBus | None = None
        #: The robots of the bus that answer each message with a run of their own, by name.
        self.bus_servers: dict[str, Robot] = {}
        #: How long a robot's ``send_message`` waits for the reply (seconds).
        self.reply_timeout: float | None = None
        #: The budget ledger every task's robot run reserves from before each model call (RobotLab's
        #: ``Budget::Ledger`` shared by parallel tasks; in place of a robot's own); None: none.
        self.ledger: Ledger | None = ledger
        for task in tasks:
            self.add_task(task)
        if self.config.bus is not None:
            self.with_bus(self.config.bus)

    def with_bus(self, bus: MessageBus | None = None, *, serve: Iterable[Robot] = (),
                 reply_timeout: float | None = None) -> Network:
        """Put every task's robot (those added later too) and the robots in ``serve`` on one message bus
        (``bus``, or a new one) and return the network. In its runs each of them is given the ``send_message``
        tool, every message is a ``bus_message`` event (the chat, the terminal, the trace show it), and each
        robot in ``serve`` answers every message sent to it with a run of its own (with the model the network
        run was given) as a reply. ``reply_timeout``: how long ``send_message`` waits for a reply (seconds)."""
        from workspace.bus import MessageBus

        self.bus = bus if bus is not None else (self.bus or MessageBus())
        for task in self._tasks.values():
            task.robot.with_bus(self.bus)
        for robot in serve:
            robot.with_bus(self.bus)
            self.bus_servers[robot.name] = robot
        if reply_timeout is not None:
            if isinstance(reply_timeout, bool) or not isinstance(reply_timeout, int | float) or reply_timeout <= 0:
                raise ValueError(f"Network '{self.name}': reply_timeout must be a positive number of seconds, "
                                 f"got {reply_timeout!r}")
            self.reply_timeout = float(reply_timeout)
        return self

    @property
    def task_limit(self) -> int | None:
        """The most tasks that run at once: the tighter of ``concurrency`` and ``max_concurrent_robots``
        (``None``: no limit)."""
        limits = [n for n in (self.concurrency, self.max_concurrent_robots) if isinstance(n, int)]
        return min(limits) if limits else None

    def on(self, handler: type[Hook], *, context: Mapping[str, Any] | None = None) -> Network:
        """Register a :class:`~workspace.hooks.Hook` subclass for this network's runs, tasks and the robot
        runs inside them (``context`` seeds its ``ctx.local``); returns the network."""
        self.hooks.on(handler, context=context)
        return self

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
        if self.bus is not None:
            task.robot.with_bus(self.bus)
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
        return self.add_route(Route(match=dict(match or {}), default=default, field=field, source=str(source)))

    def add_route(self, route: Route) -> Network:
        """Add a :class:`Route` whose ``source`` names the deciding task."""
        if route.source is None:
            raise ValueError(f"A route of network '{self.name}' needs a source: the task whose answer decides")
        self._routes.append(route)
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
    def parallel_groups(self) -> dict[str, ParallelGroup]:
        return dict(self._groups)

    @property
    def routes(self) -> list[Route]:
        return list(self._routes)

    @property
    def optional_tasks(self) -> list[str]:
        return [t.name for t in self._tasks.values() if t.optional]

    is_network = True

    @property
    def crew(self) -> list[Robot]:
        """RobotLab's ``Runnable``: the network's robots, in the order they were added."""
        return list(self._robots.values())

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

    def remove_robot(self, name: str) -> Robot | None:
        """Take the robot ``name`` (its task's name or its own) out of the crew and return it (None: no such
        robot). Its tasks stay in the graph (RobotLab's ``remove_robot`` leaves the pipeline as it is)."""
        key = str(name)
        if key not in self._robots:  # the robot's own name, when its task has another
            key = next((k for k, robot in self._robots.items() if robot.name == key), key)
        return self._robots.pop(key, None)

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
    # -- structure (workspace.network.graph) ----------------------------------------------
    def dependencies(self, name: str) -> list[str]:
        """A task's dependencies, groups expanded, in order."""
        return graph.dependencies(self, name)

    def problems(self) -> list[Problem]:
        """What stops this network from running (unknown names, cycles, bad routes)."""
        return graph.problems(self)

    def validate(self) -> Network:
        """Raise :class:`NetworkError` naming every problem; returns self."""
        problems = self.problems()
        if problems:
            raise NetworkError(problems, name=self.name)
        return self

    def levels(self) -> tuple[list[list[str]], list[str]]:
        """Execution steps (tasks of one step may run at once) and the optional tasks whose
        activator is not known in advance (activated by a structured answer or a router)."""
        return graph.levels(self)

    def graph(self) -> dict[str, Any]:
        """The task graph for drawing: ``{"name", "nodes": [...], "edges": [...], "groups": {...}}``.

        A node: ``{name, robot, optional, step, description}`` (``step`` None for optional tasks
        activated by an answer); an edge: ``{from, to, kind: "depends"|"route", label}``.
        """
        return graph.drawing(self)

    # -- pictures (workspace.network.pictures) ----------------------------------------------
    def to_mermaid(self, *, status: Mapping[str, str] | None = None) -> str:
        """A Mermaid flowchart (``graph TD``); ``status`` (task -> state) colours the nodes."""
        return pictures.to_mermaid(self, status=status)

    def to_dot(self) -> str:
        """The graph in Graphviz DOT."""
        return pictures.to_dot(self)

    def visualize(self) -> str:
        """An ASCII picture: one row per step; ``<name>`` marks an optional task."""
        return pictures.visualize(self)

    def execution_plan(self) -> str:
        """A text outline: the steps, what each task receives, routes and waits."""
        return pictures.execution_plan(self)

    def to_dict(self) -> dict[str, Any]:
        """RobotLab's shape: ``{name, robots, tasks, optional_tasks}``."""
        return {
            "name": self.name,
            "robots": list(self._robots),
            "tasks": list(self._tasks),
            "optional_tasks": self.optional_tasks,
            **({"config": self.config.to_dict(json_safe=True)} if not self.config.empty else {}),
        }

    # -- running --------------------------------------------------------------------------
    def stream(self, message: Any = "", **params: Any) -> NetworkRun:
        """Start a run (validated first: a bad network raises :class:`NetworkError` here).

        ``params`` are template variables for every robot (RobotLab's run context), except the
        options in :data:`NETWORK_RUN_OPTIONS` (approval, folder, changes, thread_id, max_turns,
        settings, provider, tools, mcp, run_id), which reach every task's robot.
        """
        from workspace.network.scheduler import NetworkRun
        from workspace.robot_runs import RUN_OPTIONS

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
        run = NetworkRun(self, message, variables, options)
        from workspace import tracing

        configs = [robot._config for robot in self._robots.values() if robot._config is not None]
        tracing.attach(run, configs[0] if configs else None)
        return run

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
    try:
        value = handler(message)
        if inspect.isawaitable(value):
            task = asyncio.ensure_future(value)
            _PENDING.add(task)
            task.add_done_callback(_PENDING.discard)
    except Exception as exc:
        _log.error("Broadcast handler error: %s", exc, exc_info=True)

