"""Pictures of a network: a Mermaid flowchart (coloured by task state in the Network dock), Graphviz
DOT, an ASCII outline of its steps, and a text execution plan (``robotlab network show``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workspace.network.graph import dependencies, drawing, levels
from workspace.result import CANCELLED, DONE, FAILED, RUNNING, SKIPPED, WAITING

if TYPE_CHECKING:
    from workspace.network.model import Network, Task
    from workspace.network.routing import Route

__all__ = ["execution_plan", "to_dot", "to_mermaid", "visualize"]

#: What ``Task.input`` may name besides a template.
INPUT_MODES = ("auto", "run", "upstream")

_COLOURS = {WAITING: "#eeeeee", RUNNING: "#fff3bf", DONE: "#d3f9d8", FAILED: "#ffc9c9", SKIPPED: "#f1f3f5",
            CANCELLED: "#ffe8cc"}


def to_mermaid(network: Network, *, status: Mapping[str, str] | None = None) -> str:
    """A Mermaid flowchart (``graph TD``); ``status`` (task -> state) colours the nodes."""
    tasks = network.tasks
    ids = {name: _mermaid_id(name, i) for i, name in enumerate(tasks)}
    lines = ["graph TD"]
    groups = network.groups
    grouped = {m for members in groups.values() for m in members}
    for task in tasks.values():
        if task.name not in grouped:
            lines.append("    " + _mermaid_node(ids[task.name], task))
    for group, members in groups.items():
        lines.append(f'    subgraph {_mermaid_id(group, len(ids))}_group["{_mermaid_text(group)}"]')
        for member in members:
            if member in tasks:
                lines.append("        " + _mermaid_node(ids[member], tasks[member]))
        lines.append("    end")
    for edge in drawing(network)["edges"]:
        a, b = ids.get(edge["from"]), ids.get(edge["to"])
        if a is None or b is None:
            continue
        if edge["kind"] == "route":
            lines.append(f'    {a} -.->|"{_mermaid_text(edge["label"])}"| {b}')
        else:
            lines.append(f"    {a} --> {b}")
    lines.append("    classDef optional stroke-dasharray: 5 5")
    optional = [ids[n] for n in network.optional_tasks]
    if optional:
        lines.append(f"    class {','.join(optional)} optional")
    if status:
        for state, colour in _COLOURS.items():
            members = [ids[n] for n, s in status.items() if s == state and n in ids]
            if members:
                lines.append(f"    classDef {state} fill:{colour}")
                lines.append(f"    class {','.join(members)} {state}")
    return "\n".join(lines)


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


def to_dot(network: Network) -> str:
    """The graph in Graphviz DOT."""
    lines = [f'digraph "{network.name}" {{', "  rankdir=TB;"]
    for task in network.tasks.values():
        style = ", style=dashed" if task.optional else ""
        lines.append(f'  "{task.name}" [label="{task.name}\\n({task.robot.name})"{style}];')
    for edge in drawing(network)["edges"]:
        extra = f' [style=dashed, label="{edge["label"]}"]' if edge["kind"] == "route" else ""
        lines.append(f'  "{edge["from"]}" -> "{edge["to"]}"{extra};')
    lines.append("}")
    return "\n".join(lines)


def visualize(network: Network) -> str:
    """An ASCII picture: one row per step; ``<name>`` marks an optional task."""
    steps, unknown = levels(network)
    tasks = network.tasks

    def box(name: str) -> str:
        return f"<{name}>" if tasks[name].optional else f"[{name}]"

    rows = [f"{network.name}", "=" * max(len(network.name), 3)]
    for i, step in enumerate(steps, start=1):
        if i > 1:
            rows.append("      │")
            rows.append("      ▼")
        rows.append(f" {i:>2}   " + "  ".join(box(n) for n in step))
    if unknown:
        rows.append("")
        rows.append(" when activated:  " + "  ".join(box(n) for n in unknown))
    if network.optional_tasks:
        rows.append("")
        rows.append(" <name> = optional: runs only when a task routes to it")
    return "\n".join(rows)


def execution_plan(network: Network) -> str:
    """A text outline: the steps, what each task receives, routes and waits."""
    steps, unknown = levels(network)
    tasks = network.tasks
    most = network.task_limit
    concurrency = str(most) if most is not None else "no limit"
    lines = [f"Execution plan for network '{network.name}' ({len(tasks)} tasks, concurrency: {concurrency})"]
    if network.description:
        lines.append(network.description)
    routes_to: dict[str, list[Route]] = {}
    for route in network.routes:
        for target in route.targets():
            routes_to.setdefault(target, []).append(route)
    blocks = [(f"Step {i}", step) for i, step in enumerate(steps, start=1)]
    if unknown:
        blocks.append(("When activated by a task's answer", unknown))
    for title, names in blocks:
        optional = all(tasks[n].optional for n in names)
        together = " (at the same time)" if len(names) > 1 and not optional else ""
        kind = " — optional, only the ones routed to run" if optional else ""
        lines.append(f"{title}{together}{kind}:")
        for name in names:
            task = tasks[name]
            lines.append(f"  • {name} (robot {task.robot.name}): {_input_text(network, task, routes_to)}")
            if task.wait_for:
                limit = f", up to {task.wait_timeout:g} s" if task.wait_timeout else ""
                lines.append(f"      waits for memory: {', '.join(task.wait_for)}{limit}")
            for route in network.routes:
                if route.source == name:
                    lines.append(f"      routes: {route.describe()}")
            if task.router is not None:
                lines.append("      routes: chosen by its router function")
    lines.append("A task starts when the tasks it depends on are finished; skipped optional tasks "
                 "count as finished.")
    return "\n".join(lines)


def _input_text(network: Network, task: Task, routes_to: Mapping[str, list[Route]]) -> str:
    if task.input == "run":
        return "gets the run's message"
    if task.input not in INPUT_MODES:
        return "gets its input template"
    if task.optional:
        sources = [r.source for r in routes_to.get(task.name, []) if r.source]
        via = f" from {', '.join(dict.fromkeys(sources))}" if sources else ""
        return f"routed{via}; gets the message its activating task received"
    deps = dependencies(network, task.name)
    if not deps:
        return "gets the run's message"
    if len(deps) == 1:
        return f"gets the answer of {deps[0]}"
    return f"gets the answers of {', '.join(deps)}"
