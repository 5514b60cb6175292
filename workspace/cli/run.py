"""``robotlab run ROBOT "message"``: run a robot headless and print its events."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

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
    p = sub.add_parser(
        "run",
        help="run a robot on a message and print what it does",
        description="Run a robot (a name from `robotlab robots list`, or a robot/template .md file) on one "
        "message, streaming its text and tool calls.",
    )
    p.add_argument("robot", help="robot name or path to a robot .md file")
    p.add_argument("message", nargs="+", help="the message to send")
    add_run_options(p, who="the robot")
    p.add_argument("--max-turns", type=positive_int, metavar="N", help="stop after this many model turns (N >= 1)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="a variable for the robot's template (VALUE may be JSON); repeatable")
    p.set_defaults(func=cmd_run)


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number of at least 1 (argparse reports the error and exits 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give 1 or more") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (got {value})")
    return value


def looks_like_path(name: str) -> bool:
    """Whether a robot argument names a file rather than a robot: it has a folder separator or ends in .md."""
    return "/" in name or os.sep in name or name.lower().endswith(".md")


def check_robot_file(name: str) -> None:
    """A robot argument that is a path must name an existing file (else the error would be "unknown robot")."""
    from workspace.cli import CLIError

    if not looks_like_path(name):
        return
    path = Path(name)
    if path.is_dir():
        raise CLIError(f"{name} is a folder; give a robot .md file or a robot name (see `robotlab robots list`)")
    if not path.is_file():
        raise CLIError(f"robot file not found: {name} (no such file: {path.absolute()}). Check the path, or give "
                       "a robot name from `robotlab robots list`.")


def cmd_run(args: argparse.Namespace) -> int:
    return run_reporting_failure(args, _run, who=args.robot)


async def _run(args: argparse.Namespace) -> int:
    from workspace.catalog import load_robot
    from workspace.cli import CLIError
    from workspace.cli.changes import warn_interrupted_applies
    from workspace.cli.trust import warn_if_untrusted
    from workspace.config import load_config
    from workspace.providers import is_offline, provider_for

    folder_arg = args.run_folder or args.folder
    folder = Path(folder_arg).resolve() if folder_arg else None
    if folder is not None and not folder.is_dir():
        raise CLIError(f"--folder {folder_arg}: no such folder")
    overrides: dict[str, Any] = {}
    if args.model:
        overrides.setdefault("llm", {})["model"] = args.model
    if args.api_base:
        overrides.setdefault("llm", {})["api_base"] = args.api_base
    config = load_config(folder, overrides=overrides or None)
    warn_if_untrusted(config)
    warn_interrupted_applies(folder)  # a crash cut an apply short: say so before anything else is written
    check_robot_file(args.robot)
    robot = load_robot(args.robot, folder=folder, config=config, model=args.model, api_base=args.api_base)
    model = robot.model
    if not is_offline(model):
        check_key(model, robot.api_base or config.get("llm.api_base"))
    robot.provider = provider_for(model, api_base=robot.api_base, config=config)
    if args.context:
        robot.context_policy = args.context
    approval = terminal_approval(args)
    changes = None
    if folder is not None:
        from workspace.changes import ChangeSet

        changes = ChangeSet(folder, mode="auto" if args.apply == "auto" else "review")
    printer = EventPrinter(json_lines=args.json)
    message = " ".join(args.message)
    options: dict[str, Any] = {**template_params(args.param), "approval": approval}
    if args.max_turns is not None:
        options["max_turns"] = args.max_turns
    if folder is not None:
        options["folder"] = folder
        options["changes"] = changes
    run = robot.stream(message, **options)
    args.run_started = True
    status, stopped = await print_events(run, printer)
    await settle_changes(changes, args, stopped, printer)
    return status
