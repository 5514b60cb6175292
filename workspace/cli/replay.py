"""``robotlab threads replay`` and ``robotlab threads rerun``: a recorded thread as a test, a recorded tool
call run again (see :mod:`workspace.replay`).

``replay`` exits 0 when nothing diverged past the tolerance, 1 otherwise, 2 when it could not run (an
unknown thread or robot, a bad option); ``rerun`` exits 0 when the call ran, 1 when it was denied or the
tool answered with an error, 2 when it could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from workspace.persistence import Store
    from workspace.replay import ReplayResult, RerunResult
    from workspace.robot import Robot
    from workspace.session import Workspace

T = TypeVar("T")

EXIT_SAME = 0
EXIT_DIVERGED = 1


def register(tsub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``replay`` and ``rerun`` to ``robotlab threads``' actions."""
    replay = tsub.add_parser(
        "replay", help="send a thread's messages again (another model, robot or prompt) and compare",
        description="Send the thread's messages again, turn by turn, to its robot (or --robot, --model, --prompt). "
        "A tool call that matches one recorded in the thread (the same tool and arguments) is answered from the "
        "record: nothing runs and no MCP server starts. A new call is reported and not run (--run-new-calls runs "
        "it, through approval). Prints where the replay diverged, turn by turn; exit status 0 when nothing "
        "diverged past --tolerance, 1 otherwise. The replay is kept as a new thread.", parents=[common])
    replay.add_argument("id", help="thread id (or the start of it)")
    _add_robot_options(replay)
    replay.add_argument("--prompt", metavar="FILE", help="a file holding the system prompt to use instead of the robot's")
    replay.add_argument("--run-new-calls", action="store_true",
                        help="run the calls the record does not hold (through approval) instead of refusing them")
    replay.add_argument("--tolerance", choices=("exact", "tools", "judged"), default="exact",
                        help="exact: everything the same; tools: the same tool calls and arguments in the same "
                        "order (answers may differ); judged: as tools, and --judge says whether answers mean "
                        "the same (default: exact)")
    replay.add_argument("--judge", metavar="MODEL", help="the model that judges answers (--tolerance judged)")
    replay.add_argument("--judge-api-base", metavar="URL", help="the judge's server (default: --api-base)")
    replay.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    replay.set_defaults(func=cmd_replay)

    rerun = tsub.add_parser(
        "rerun", help="run one recorded tool call again, without the model, and diff the result",
        description="Run the tool call CALL_ID of the thread again (the same arguments, or --args), through "
        "approval as usual, without asking the model; print the new result and its diff against the recorded "
        "one. Exit status 0 when it ran, 1 when it was denied or the tool answered with an error.",
        parents=[common])
    rerun.add_argument("id", help="thread id (or the start of it)")
    rerun.add_argument("call_id", metavar="CALL_ID", help="the tool call's id (`threads show ID --json` lists them)")
    rerun.add_argument("--args", metavar="JSON", help="run with these arguments (a JSON object) instead")
    _add_robot_options(rerun)
    rerun.add_argument("--json", action="store_true", help="print the result and the diff as one JSON object")
    rerun.set_defaults(func=cmd_rerun)


def _add_robot_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--robot", metavar="NAME", help="another robot (default: the thread's)")
    p.add_argument("--model", metavar="MODEL", help="another model (default: the thread's)")
    p.add_argument("--api-base", metavar="URL", help="the model's server (a local OpenAI-compatible server)")
    p.add_argument("--folder", metavar="DIR", dest="replay_folder",
                   help="the folder the robot works in (rerun's default: the one the thread recorded)")
    p.add_argument("-y", "--yes", action="store_true", help="approve every call that asks")


def _robot(workspace: Workspace, args: argparse.Namespace, thread_id: str) -> Robot:
    """The robot of the thread (with its model and server), or the one --robot and --model name."""
    if args.model:
        from workspace.cli.runs import check_key

        check_key(args.model, args.api_base)
        name = args.robot or workspace.store.get_thread(thread_id).robot
        return workspace.load_robot_with_model(name, args.model, api_base=args.api_base)
    if args.robot:
        return workspace.load_robot(args.robot)
    return workspace.open_thread(thread_id).robot


def _workspace(args: argparse.Namespace, store: Store, *, thread_id: str | None = None) -> Workspace:
    """The workspace to run in: ``--folder``'s; else (``thread_id``: ``rerun``) the folder the thread recorded."""
    from workspace.cli import CLIError
    from workspace.cli.runs import terminal_approval
    from workspace.config import load_config
    from workspace.session import Workspace

    given = getattr(args, "replay_folder", None) or getattr(args, "folder", None)
    folder = Path(given).resolve() if given else None
    if folder is not None and not folder.is_dir():
        raise CLIError(f"--folder {given}: no such folder")
    recorded = store.get_thread(thread_id).folder if folder is None and thread_id is not None else None
    if recorded:
        folder = Path(recorded)
        if not folder.is_dir():
            raise CLIError(f"Thread {str(thread_id)[:8]} worked in {recorded}, which is no longer a "
                           "folder; give --folder DIR")
    overrides: dict[str, Any] = {}
    if args.api_base:
        overrides["llm"] = {"api_base": args.api_base}
    config = load_config(folder, overrides=overrides)
    return Workspace(config=config, folder=folder, store=store, approval=terminal_approval(args))


def cmd_replay(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.cli.record import open_store
    from workspace.replay import ReplayError, model_judge, prompt_from_file, replay, use_prompt

    if args.judge and args.tolerance != "judged":
        raise CLIError("--judge is for --tolerance judged; add it, or leave --judge out")
    with open_store(args) as store:
        thread_id = store.resolve_thread_id(args.id)
        workspace = _workspace(args, store)
        try:
            robot = _robot(workspace, args, thread_id)
            options: dict[str, Any] = {"robot": robot.name, "model": robot.model}
            if args.prompt:
                use_prompt(robot, prompt_from_file(args.prompt))
                options["prompt"] = str(args.prompt)
            judge = None
            if args.judge:
                from workspace.cli.runs import check_key

                base = args.judge_api_base or args.api_base
                check_key(args.judge, base)
                judge = model_judge(workspace.load_robot_with_model(robot.name, args.judge, api_base=base).provider)
                options["judge"] = args.judge
            result = asyncio.run(_stopping_servers(replay(
                store, thread_id, robot, tolerance=args.tolerance, run_new_calls=args.run_new_calls,
                approval=workspace.approval, judge=judge, folder=workspace.folder, options=options)))
        except ReplayError as exc:
            raise CLIError(str(exc)) from exc
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str))
    else:
        print_replay(result, robot=robot)
    return EXIT_DIVERGED if result.diverged else EXIT_SAME


def print_replay(result: ReplayResult, *, robot: Robot, out: Any = None) -> None:
    """The comparison for people: a line of what ran, then each turn that diverged with its diffs."""
    from workspace.cli.render import printable

    out = out or sys.stdout
    print(f"Replayed thread {result.original_thread_id[:8]} with {robot.name} ({robot.model or 'default model'}) "
          f"as thread {result.thread_id[:8]}, tolerance {result.tolerance}: {len(result.turns)} turn(s), "
          f"{result.served} call(s) answered from the record, {result.executed} tool(s) run.", file=out)
    for turn in result.turns:
        if not turn.divergences:
            continue
        print(f"\nTurn {turn.index}: {printable(turn.recorded.user_text, one_line=True)[:80]}", file=out)
        for d in turn.divergences:
            mark = "✗" if d.counts else "·"
            within = "" if d.counts else " (within the tolerance)"
            print(f"  {mark} {d.kind}: {printable(d.detail, one_line=True)}{within}", file=out)
            for line in d.diff.splitlines():
                print(f"      {printable(line)}", file=out)
        for call in (c for c in result.new_calls if c.turn == turn.index):
            state = "run (--run-new-calls)" if call.ran else "not run"
            print(f"  new call {printable(call.call.label(), one_line=True)}: {state}", file=out)
    first = result.first_divergence()
    if first is None:
        print("\nNo divergence" + (" past the tolerance." if result.divergences else "."), file=out)
    else:
        print(f"\nDiverged at turn {first.turn} ({first.kind}).", file=out)


def cmd_rerun(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.cli.record import open_store
    from workspace.replay import ReplayError, rerun_call

    arguments: Any = None
    if args.args is not None:
        try:
            arguments = json.loads(args.args)
        except ValueError as exc:
            raise CLIError(f"--args is not JSON ({exc}): give an object, e.g. --args '{{\"path\": \"a.txt\"}}'") from exc
        if not isinstance(arguments, dict):
            raise CLIError(f"--args must be a JSON object, not {type(arguments).__name__}: e.g. --args '{{\"a\": 1}}'")
    with open_store(args) as store:
        thread_id = store.resolve_thread_id(args.id)
        workspace = _workspace(args, store, thread_id=thread_id)
        try:
            robot = _robot(workspace, args, thread_id)
            result = asyncio.run(_stopping_servers(rerun_call(
                store, thread_id, args.call_id, robot, arguments=arguments, approval=workspace.approval,
                folder=workspace.folder)))
        except ReplayError as exc:
            raise CLIError(str(exc)) from exc
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str))
    else:
        print_rerun(result)
    failed = isinstance(result.new, dict) and "error" in result.new
    return EXIT_DIVERGED if failed else EXIT_SAME


async def _stopping_servers(work: Awaitable[T]) -> T:
    """``await work``, then stop the MCP servers it started (a new call or a rerun of a server's tool)."""
    try:
        return await work
    finally:
        if "workspace.mcp" in sys.modules:
            from workspace.mcp import default_manager

            await default_manager().aclose()


def print_rerun(result: RerunResult, *, out: Any = None) -> None:
    from workspace.cli.render import printable

    out = out or sys.stdout
    args = json.dumps(result.arguments, ensure_ascii=False, sort_keys=True)
    print(f"Ran {result.call.name}({printable(args, one_line=True)}) again (recorded call {result.call.id}):",
          file=out)
    print(printable(json.dumps(result.new, indent=2, ensure_ascii=False, default=str)), file=out)
    if result.changed:
        print("\nAgainst the recorded result:", file=out)
        print(printable(result.diff.rstrip("\n")), file=out)
    else:
        print("\nThe same result as recorded.", file=out)
