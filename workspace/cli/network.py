"""``robotlab network run|show|list``: run a network of robots headless, show its plan, list networks."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from workspace import events as ev
from workspace.cli.render import EventPrinter
from workspace.cli.runs import (
    add_run_options,
    check_key,
    print_events,
    run_reporting_failure,
    settle_changes,
    template_params,
    terminal_approval,
)


def register(sub: Any) -> None:
    net = sub.add_parser(
        "network",
        help="run a network of robots, show its plan, or list networks",
        description="Networks are YAML files of robots and tasks (see resources/networks/ for examples).",
    )
    nsub = net.add_subparsers(dest="network_command", metavar="ACTION")

    run = nsub.add_parser("run", help="run a network on a message and print each task's events",
                          description="Run a network (a YAML file, or the name of a shipped or user network) on "
                          "one message; prints the events of every task, labelled with the task.")
    run.add_argument("file", help="network YAML file or network name (see `robotlab network list`)")
    run.add_argument("message", nargs="+", help="the message to send")
    run.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                     help="a run parameter for every robot's template (VALUE may be JSON); repeatable")
    add_run_options(run, who="the robots")
    run.set_defaults(func=cmd_run)

    show = nsub.add_parser("show", help="print a network's execution plan, its picture and its Mermaid graph")
    show.add_argument("file", help="network YAML file or network name")
    show.add_argument("--json", action="store_true", help="print the graph (nodes, edges, groups) as JSON")
    show.set_defaults(func=cmd_show)

    lst = nsub.add_parser("list", help="list networks (project, user and shipped)")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=cmd_list)
    net.set_defaults(func=cmd_list, json=False)


def _folder(args: argparse.Namespace) -> Path | None:
    value = getattr(args, "run_folder", None) or getattr(args, "folder", None)
    if not value:
        return None
    folder = Path(value).resolve()
    if not folder.is_dir():
        from workspace.cli import CLIError

        raise CLIError(f"--folder {value}: no such folder")
    return folder


def cmd_run(args: argparse.Namespace) -> int:
    return run_reporting_failure(args, _run, who=str(args.file))


async def _run(args: argparse.Namespace) -> int:
    from workspace.cli.trust import warn_if_untrusted
    from workspace.config import load_config
    from workspace.network import find_network_file, load_network
    from workspace.providers import is_offline

    folder = _folder(args)
    from workspace.cli.changes import warn_interrupted_applies

    warn_interrupted_applies(folder)
    overrides: dict[str, Any] = {}
    if args.model:
        overrides.setdefault("llm", {})["model"] = args.model
    if args.api_base:
        overrides.setdefault("llm", {})["api_base"] = args.api_base
    config = load_config(folder, overrides=overrides or None)
    warn_if_untrusted(config)
    path = find_network_file(args.file, folder)
    network = load_network(path, folder=folder, config=config, model=args.model)
    for robot in {id(r): r for r in network.robots.values()}.values():
        if args.api_base:
            robot.api_base = args.api_base
        if args.context:
            robot.context_policy = args.context
        model = robot.model
        if not is_offline(model):
            check_key(str(model), args.api_base or config.get("llm.api_base"))
    options: dict[str, Any] = {"approval": terminal_approval(args), **template_params(args.param)}
    changes = None
    if folder is not None:
        from workspace.changes import ChangeSet

        # One change set for the whole network: every task's proposals are reviewed together.
        changes = ChangeSet(folder, mode="auto" if args.apply == "auto" else "review")
        options["folder"] = folder
        options["changes"] = changes
    run = network.stream(" ".join(args.message), **options)
    args.run_started = True
    printer = NetworkPrinter(json_lines=args.json)
    status, stopped = await print_events(run, printer)
    if not args.json and run.result is not None:
        printer.summary(run.result)
    await settle_changes(changes, args, stopped, printer.printer)
    return status


class NetworkPrinter:
    """EventPrinter for networks: text of one task streams live; text of tasks running at the
    same time is printed whole when it is complete, so answers never interleave mid-line."""

    def __init__(self, out: TextIO | None = None, *, json_lines: bool = False) -> None:
        self.out = out or sys.stdout
        self.printer = EventPrinter(self.out, json_lines=json_lines, show_task=True)
        self.json_lines = json_lines
        self._streaming: str | None = None

    def __call__(self, event: ev.Event) -> None:
        if self.json_lines:
            self.printer(event)
            return
        match event:
            case ev.TextDelta():
                if self._streaming in (None, event.task):
                    self._streaming = event.task
                    self.printer(event)
                return
            case ev.Text():
                if self._streaming == event.task:
                    self._streaming = None
                    self.printer.finish()
                else:
                    self.printer.finish()
                    label = f"[{event.task}] " if event.task else ""
                    self.out.write(label + event.text.rstrip("\n") + "\n")
                    self.out.flush()
                return
            case ev.MemoryChanged():
                self.printer.finish()
                label = f"[{event.task}] " if event.task else ""
                writer = f" (by {event.writer})" if event.writer else ""
                value = json.dumps(event.value, ensure_ascii=False, default=str)
                value = value if len(value) <= 120 else value[:119] + "…"
                self.out.write(f"{label}◆ memory {event.key} = {value}{writer}\n")
                self.out.flush()
                return
            case ev.TaskFinished() if self._streaming == event.task:
                self._streaming = None
            case _:
                pass  # every other event prints as in a robot's run
        self.printer(event)

    def finish(self) -> None:
        self.printer.finish()

    def summary(self, result: Any) -> None:
        states = ", ".join(f"{name} {state}" for name, state in result.statuses.items())
        self.out.write(f"\ntasks: {states}\n")
        if result.last_task:
            self.out.write(f"answer: the text of task {result.last_task} above\n")
        self.out.flush()


def cmd_show(args: argparse.Namespace) -> int:
    from workspace.network import find_network_file, load_network

    folder = _folder(args)
    path = find_network_file(args.file, folder)
    network = load_network(path, folder=folder)
    if args.json:
        print(json.dumps({**network.graph(), "source": str(path), "to_dict": network.to_dict()}, indent=2,
                         ensure_ascii=False))
        return 0
    print(network.execution_plan())
    print()
    print(network.visualize())
    print()
    print("Mermaid (paste into any Mermaid viewer):")
    print(network.to_mermaid())
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from workspace.network import list_networks

    networks = list_networks(_folder(args))
    if getattr(args, "json", False):
        print(json.dumps([{"name": n.name, "description": n.description, "tasks": n.tasks, "source": n.source,
                           "path": str(n.path)} for n in networks], indent=2, ensure_ascii=False))
        return 0
    if not networks:
        print("No networks found. Put network YAML files in .robotlab/networks/ of a project or in the "
              "user's networks folder (`robotlab paths`).")
        return 0
    width = max(len(n.name) for n in networks)
    for n in networks:
        print(f"{n.name:<{width}}  {n.source:<7}  {n.tasks:>2} tasks  {n.description or ''}")
    return 0
