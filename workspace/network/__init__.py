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

Networks are also defined in YAML (:func:`load_network`; schema in its docstring, the JSON Schema
from :func:`workspace.network.schema.network_json_schema`).

The package, by noun
    :mod:`~workspace.network.model` (Task, ParallelGroup, Network and its builder API),
    :mod:`~workspace.network.routing` (Route, structured answers), :mod:`~workspace.network.graph`
    (dependencies, cycles, steps, readiness), :mod:`~workspace.network.scheduler` (NetworkRun; one task's run:
    :mod:`~workspace.network.scheduler_tasks`),
    :mod:`~workspace.network.pictures` (Mermaid, DOT, ASCII, execution plan),
    :mod:`~workspace.network.loader` (YAML files -> Network), :mod:`~workspace.network.schema`
    (the file's pydantic models; imported only when a file is loaded) and
    :mod:`~workspace.network.errors`.
"""

from __future__ import annotations

from workspace.network.errors import NetworkError, NetworkFileError, NetworkRunError, Problem
from workspace.network.graph import find_cycle
from workspace.network.loader import NetworkInfo, find_network_file, list_networks, load_network, network_dirs
from workspace.network.merge import deep_merge
from workspace.network.model import NETWORK_RUN_OPTIONS, Network, ParallelGroup, Task
from workspace.network.routing import Route, structured_targets
from workspace.network.scheduler import NetworkRun
from workspace.result import STATUSES, NetworkResult, TaskState

__all__ = [
    "NETWORK_RUN_OPTIONS",
    "STATUSES",
    "Network",
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
    "find_cycle",
    "find_network_file",
    "list_networks",
    "load_network",
    "network_dirs",
    "structured_targets",
]
