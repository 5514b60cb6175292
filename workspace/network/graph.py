"""The shape of a network's task graph: dependencies, cycles, steps, what stops it from running,
and when a waiting task may start (:func:`readiness`, asked by the scheduler)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from workspace.network.errors import Problem
from workspace.result import DONE, SKIPPED, TERMINAL_STATUSES, TaskState
from workspace.schemas import did_you_mean

if TYPE_CHECKING:
    from workspace.network.model import Network
    from workspace.network.routing import Route

__all__ = ["dependencies", "drawing", "edges", "find_cycle", "levels", "problems", "readiness"]

Verdict = Literal["ready", "skip", "wait"]


def dependencies(network: Network, name: str) -> list[str]:
    """A task's dependencies, groups expanded, in order."""
    groups = network.groups
    out: list[str] = []
    for dep in network.tasks[name].depends_on:
        for member in groups.get(dep, [dep]):
            if member not in out and member != name:
                out.append(member)
    return out


def edges(network: Network) -> dict[str, list[str]]:
    """task -> the tasks that must finish (or route to it) before it runs."""
    out: dict[str, list[str]] = {name: dependencies(network, name) for name in network.tasks}
    for route in network.routes:
        for target in route.targets():
            if target in out and route.source is not None and route.source not in out[target]:
                out[target].append(route.source)
    return out


def find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle in ``node -> predecessors`` as a path ``[a, b, ..., a]`` (in run order), or None."""
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        color[node] = 1
        stack.append(node)
        for pred in graph.get(node, ()):
            if pred not in graph:
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

    for node in graph:
        if color.get(node, 0) == 0:
            found = visit(node)
            if found:
                return found
    return None


def problems(network: Network) -> list[Problem]:
    """What stops ``network`` from running (unknown names, cycles, bad routes)."""
    tasks = network.tasks
    groups = network.groups
    found: list[Problem] = []
    names = set(tasks)
    for group in network.parallel_groups.values():
        for member in group.tasks:
            if member not in names:
                found.append(Problem(f"unknown task '{member}'{did_you_mean(member, names)}",
                                     field=f"parallel group '{group.name}'"))
        for dep in group.depends_on:
            if dep not in names and dep not in groups:
                found.append(Problem(f"unknown task '{dep}'{did_you_mean(dep, names)}",
                                     field=f"parallel group '{group.name}' depends_on"))
    for task in tasks.values():
        for dep in task.depends_on:
            if dep == task.name:
                found.append(Problem("a task cannot depend on itself", task=task.name, field="depends_on"))
            elif dep not in names and dep not in groups:
                known = [*names, *groups]
                found.append(Problem(f"unknown task '{dep}'{did_you_mean(dep, known)}", task=task.name,
                                     field="depends_on"))
    for route in network.routes:
        if route.source not in names:
            found.append(Problem(f"unknown task '{route.source}'{did_you_mean(str(route.source), names)}",
                                 field="route from"))
        for target in route.targets():
            if target not in names:
                found.append(Problem(f"unknown task '{target}'{did_you_mean(target, names)}",
                                     task=route.source, field="route"))
            elif not tasks[target].optional:
                found.append(Problem(f"'{target}' is not optional; a routed task needs depends_on: optional",
                                     task=route.source, field="route"))
    if not found:
        cycle = find_cycle(edges(network))
        if cycle:
            found.append(Problem("the tasks form a cycle: " + " -> ".join(cycle), field="depends_on"))
    return found


def levels(network: Network) -> tuple[list[list[str]], list[str]]:
    """Execution steps (tasks of one step may run at once) and the optional tasks whose
    activator is not known in advance (activated by a structured answer or a router)."""
    tasks = network.tasks
    preds_of = edges(network)
    depth: dict[str, int | None] = {}

    def level(name: str, seen: frozenset[str] = frozenset()) -> int | None:
        if name in depth:
            return depth[name]
        if name in seen:
            return None
        preds = preds_of.get(name, [])
        if not preds:
            value: int | None = None if tasks[name].optional else 1
        else:
            known = [lv for p in preds if (lv := level(p, seen | {name})) is not None]
            value = 1 + max(known) if known else None
        depth[name] = value
        return value

    steps: dict[int, list[str]] = {}
    unknown: list[str] = []
    for name in tasks:
        lv = level(name)
        if lv is None:
            unknown.append(name)
        else:
            steps.setdefault(lv, []).append(name)
    return [steps[k] for k in sorted(steps)], unknown


def drawing(network: Network) -> dict[str, Any]:
    """The task graph for drawing (:meth:`Network.graph`)."""
    steps, _ = levels(network)
    step_of = {name: i + 1 for i, step in enumerate(steps) for name in step}
    nodes = [{"name": t.name, "robot": t.robot.name, "optional": t.optional, "step": step_of.get(t.name),
              "description": t.description or getattr(t.robot, "description", None)}
             for t in network.tasks.values()]
    lines: list[dict[str, Any]] = []
    for name in network.tasks:
        for dep in dependencies(network, name):
            lines.append({"from": dep, "to": name, "kind": "depends", "label": None})
    for route in network.routes:
        for target, words in route.labels().items():
            lines.append({"from": route.source, "to": target, "kind": "route", "label": " / ".join(words)})
    return {"name": network.name, "nodes": nodes, "edges": lines, "groups": network.groups}


def readiness(state: TaskState, tasks: Mapping[str, TaskState],
              routes_to: Mapping[str, Sequence[Route]]) -> tuple[Verdict, str | None]:
    """Whether a waiting task may start now, must be skipped (and why), or waits.

    An optional task starts once activated; it is skipped when every route naming it has decided
    without choosing it. Any other task starts when its dependencies are done or skipped, and is
    skipped when all of them were skipped."""
    if state.optional:
        if state.activated_by is not None:
            return "ready", None
        routes = routes_to.get(state.name, [])
        if routes and all(tasks[str(r.source)].status in TERMINAL_STATUSES for r in routes):
            chosen = sorted({t for r in routes for t in tasks[str(r.source)].routed_to})
            why = f"routed to {', '.join(chosen)}" if chosen else "no route chose it"
            return "skip", f"not activated ({why})"
        return "wait", None
    deps = state.depends_on
    if not deps:
        return "ready", None
    statuses = [tasks[d].status for d in deps]
    if any(s not in (DONE, SKIPPED) for s in statuses):
        return "wait", None
    if all(s == SKIPPED for s in statuses):
        return "skip", "all its dependencies were skipped"
    return "ready", None
