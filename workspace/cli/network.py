"""``robotlab network run|show|list``: run a network of robots headless, show its plan, list networks."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from workspace import events as ev
from workspace.cli.record import add_record_options
from workspace.cli.render import EventPrinter, PlainPrinter, printable
from workspace.cli.runs import (
    EXIT_STATUS_HELP,
    OUTPUT_HELP,
    QuestionAfterOutput,
    add_run_options,
    check_key,
    hit_turn_limit,
    print_events,
    run_reporting_failure,
    saved_status,
    settle_changes,
    settle_recorded,
    template_params,
    terminal_approval,
)

if TYPE_CHECKING:
    from workspace.network import Network
    from workspace.persistence import Store, ThreadInfo


def register(sub: Any) -> None:
    net = sub.add_parser(
        "network",
        help="run a network of robots, show its plan, or list networks",
        description="Networks are YAML files of robots and tasks (see resources/networks/ for examples).",
    )
    nsub = net.add_subparsers(dest="network_command", metavar="ACTION")

    run = nsub.add_parser("run", help="run a network on a message and print each task's events",
                          description="Run a network (a YAML file, or the name of a shipped or user network) on "
                          "one message; prints the events of every task, labelled with the task, in whole lines. "
                          "The run is recorded as a thread the window lists (--no-record: not); --continue or "
                          "--thread ID runs the network again in an earlier thread (each robot gets its own "
                          "conversation so far), and then FILE may be left out.",
                          epilog=f"{OUTPUT_HELP}\n\n{EXIT_STATUS_HELP}",
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("file", help="network YAML file or network name (see `robotlab network list`)")
    run.add_argument("message", nargs="*", help="the message to send")
    run.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                     help="a run parameter for every robot's template (VALUE may be JSON); repeatable")
    add_run_options(run, who="the robots")
    run.add_argument("--narrate", action="store_true",
                     help="also write RobotLab's Narrator lines on stderr as the robots work (each model call, "
                     "each tool call with its first argument, each tool error), whatever the output format")
    add_record_options(run, what="network thread")
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


def _continued(args: argparse.Namespace, folder: Path | None, store: Store) -> tuple[ThreadInfo, str | None, str]:
    """For ``--continue`` / ``--thread``: the thread, the network file given (None: the thread's), the message."""
    from workspace.cli.record import thread_to_continue
    from workspace.errors import ConfigurationError
    from workspace.network import find_network_file, load_network

    words = [args.file, *args.message]
    given: Path | None = None
    if len(words) >= 2:
        try:
            given = find_network_file(words[0], folder)
        except ConfigurationError:
            given = None
        else:
            words = words[1:]
    name = load_network(given, folder=folder).name if given is not None else None
    thread = thread_to_continue(store, args, kind="network", robot=name)
    assert thread is not None
    return thread, str(given) if given is not None else None, " ".join(words)


async def _run(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.cli.record import metadata, open_store, open_workspace, recorded_hint, stored_reference
    from workspace.cli.run import run_config
    from workspace.network import find_network_file, load_network
    from workspace.providers import is_offline

    folder = _folder(args)
    config = run_config(args, folder)
    from workspace.cli.changes import warn_interrupted_applies

    warn_interrupted_applies(folder)
    store: Store | None = None
    thread: ThreadInfo | None = None
    reference = str(args.file)
    model = args.model
    if args.continue_thread or args.thread:
        store = open_store(args)
        try:
            thread, given, message = _continued(args, folder, store)
        except BaseException:
            store.close()
            raise
        reference = given or stored_reference(thread, "network_file")
        model = model or thread.metadata.get("model")
    else:
        message = " ".join(args.message)
        if not message.strip():
            raise CLIError(f"give the message after the network: robotlab network run {args.file} \"your message\"")
    path = find_network_file(reference, folder)

    def load() -> Network:
        """The network for one run (a network thread loads it afresh for each, as the window does)."""
        network = load_network(path, folder=folder, config=config, model=model)
        for robot in {id(r): r for r in network.robots.values()}.values():
            if args.api_base:
                robot.api_base = args.api_base
            if args.context:
                robot.context_policy = args.context
        if args.narrate:
            from workspace.narrator import Narrator

            network.on(Narrator)
        return network

    network = load()
    for robot in {id(r): r for r in network.robots.values()}.values():
        if not is_offline(robot.model):
            check_key(str(robot.model), args.api_base or config.get("llm.api_base"))
    options: dict[str, Any] = template_params(args.param)
    printer = NetworkPrinter(json_lines=args.json, plain=args.plain)
    questions = QuestionAfterOutput(printer)
    approval = terminal_approval(args, questions)

    if args.no_record:
        if store is not None:
            store.close()  # --continue without recording: the network starts afresh
        changes = None
        if folder is not None:
            from workspace.changes import ChangeSet

            # One change set for the whole network: every task's proposals are reviewed together.
            changes = ChangeSet(folder, mode="auto" if args.apply == "auto" else "review")
            options["folder"] = folder
            options["changes"] = changes
        run = network.stream(message, approval=approval, **options)
        args.run_started = True
        status, stopped = await print_events(run, questions)
        if not args.json and not args.plain and run.result is not None:
            printer.summary(run.result)
        await settle_changes(changes, args, stopped, printer.printer)
        return status

    workspace = open_workspace(args, config=config, folder=folder, approval=approval, store=store)
    try:
        if thread is not None:
            session = workspace.open_thread(thread.id)
            session.network_loader = load
        else:
            session = workspace.new_network_thread(network.name, loader=load, metadata=metadata(
                "network run", network_file=str(path.resolve()), model=args.model))
        recorded = session.send(message, **options)
        args.run_started = True
        status, stopped = await print_events(recorded, questions)
        await recorded.wait()
        status = saved_status(recorded, status, printer.printer)
        result = recorded.result
        if not args.json and not args.plain and result is not None:
            printer.summary(result)
        await settle_recorded(session, args, stopped, printer.printer)
        if not args.json and not args.plain:
            recorded_hint(session.thread_id, command="robotlab network run")
        return status
    finally:
        workspace.close()


class NetworkPrinter:
    """EventPrinter for networks: the text of every task is printed in whole lines, each labelled with
    its task (``[writer] ...``). Text is held per task and a line is printed when it is complete (at its
    newline, or when the task's text, the task or the run ends), so tasks running at the same time never
    interleave mid-sentence; within a task, its lines come before its next tool call."""

    def __init__(self, out: TextIO | None = None, *, json_lines: bool = False, plain: bool = False) -> None:
        self.out = out or sys.stdout
        self.json_lines = json_lines
        self.plain = plain
        self.printer: Any = PlainPrinter() if plain else EventPrinter(self.out, json_lines=json_lines, show_task=True)
        self._held: dict[str | None, str] = {}
        self._streamed: set[str | None] = set()
        #: The indent of the text held per task (a robot used as a tool is indented under its call).
        self._pads: dict[str | None, str] = {}

    def __call__(self, event: ev.Event) -> None:
        if self.json_lines or self.plain:
            self.printer(event)
            return
        match event:
            case ev.TextDelta():
                self._streamed.add(event.task)
                self._pads[event.task] = self.printer._pad(event) if hasattr(self.printer, "_pad") else ""
                *lines, rest = (self._held.pop(event.task, "") + event.text).split("\n")
                for line in lines:
                    self._write(event.task, line)
                if rest:
                    self._held[event.task] = rest
                return
            case ev.Text():
                if event.task in self._streamed:
                    self._streamed.discard(event.task)
                    self._flush(event.task)
                else:  # not streamed (a provider without streaming): the whole text now
                    self._pads[event.task] = self.printer._pad(event) if hasattr(self.printer, "_pad") else ""
                    for line in event.text.rstrip("\n").split("\n"):
                        self._write(event.task, line)
                return
            case ev.MemoryChanged():
                self._flush(event.task)
                label = self._label(event.task)
                writer = f" (by {event.writer})" if event.writer else ""
                value = json.dumps(event.value, ensure_ascii=False, default=str)
                value = value if len(value) <= 120 else value[:119] + "…"
                self.out.write(f"{label}◆ memory {printable(event.key, one_line=True)} = {printable(value)}{writer}\n")
                self.out.flush()
                return
            case ev.RunFinished() | ev.RunFailed() | ev.RunCancelled() if event.task is None:
                self._flush_all()
            case _:
                self._flush(event.task)  # the task's text before its next event
        if hit_turn_limit(event) and event.task is not None:
            self.out.write(self.printer._c("33", f"{self._label(event.task)}■ stopped at the turn limit: the robot "
                                                 "wanted to go on (raise max_turns for it)") + "\n")
        self.printer(event)

    def _label(self, task: str | None) -> str:
        return self.printer._c("35", f"[{task}] ") if task else ""

    def _write(self, task: str | None, line: str) -> None:
        self.out.write((self._label(task) + self._pads.get(task, "") + printable(line)).rstrip(" ") + "\n")
        self.out.flush()

    def _flush(self, task: str | None) -> None:
        held = self._held.pop(task, "")
        if held:
            self._write(task, held)

    def _flush_all(self) -> None:
        for task in list(self._held):
            self._flush(task)

    def finish(self) -> None:
        self._flush_all()
        self.printer.finish()

    def end_line(self) -> None:
        """Nothing to end: only whole lines are printed (the held ones stay held across a question)."""
        self.out.flush()

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
