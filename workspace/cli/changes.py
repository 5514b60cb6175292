"""``robotlab changes recover``: applies (and undos, redos, restores) that a crash cut short; ``robotlab
changes verify``: the verify command, run by hand on a thread's proposed changes.

Each file of an interrupted apply is whole (old or new), but the set may be mixed and temp
files may be left in the folder. This command lists them and rolls each back or forward
(:func:`workspace.changes.recover`); ``robotlab run`` says at its start when there are any.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from workspace.sandbox import display_path

RECOVER_HINT = "Run `robotlab changes recover` to roll it back or forward."


def register(sub: Any) -> None:
    changes = sub.add_parser("changes", help="file changes: list and apply hunks (of several candidates too), undo, "
                             "recover applies a crash cut short, verify a proposal")
    csub = changes.add_subparsers(dest="changes_command", metavar="ACTION")
    recover = csub.add_parser(
        "recover", help="find applies a crash cut short and roll each back or forward",
        description="Find applies (and undos, redos, restores) that a crash cut short: each file is whole, but "
        "the set may be mixed. Without --back/--forward, asks for each one when interactive, else lists them.")
    recover.add_argument("id", nargs="?", help="only this one (as listed)")
    way = recover.add_mutually_exclusive_group()
    way.add_argument("--back", dest="direction", action="store_const", const="back",
                     help="roll back: every file as it was before")
    way.add_argument("--forward", dest="direction", action="store_const", const="forward",
                     help="roll forward: every file as the change makes it")
    way.add_argument("--discard", dest="direction", action="store_const", const="discard",
                     help="forget the record and leave the files as they are")
    recover.add_argument("--force", action="store_true",
                         help="also overwrite files changed since the interruption (their state is checkpointed)")
    recover.add_argument("--list", action="store_true", help="only list them")
    recover.add_argument("--folder", dest="changes_folder", help="only applies into this folder")
    recover.set_defaults(func=cmd_recover)
    verify = csub.add_parser(
        "verify", help="run the verify command on a thread's proposed changes, in the sandbox",
        description="Run the verify command (review.verify of a trusted folder's .robotlab/config.yaml, or the "
        "robot's verify:) in the sandbox on the changes a thread proposed for the folder: the folder is seen as "
        "they would make it, and is never written. Exit status 0: it passed; 1: it failed; 2: it could not run.")
    verify.add_argument("--thread", "-t", metavar="ID",
                        help="the thread (or the start of its id; default: the latest with changes for the folder)")
    verify.add_argument("--folder", dest="changes_folder",
                        help="the folder (default: the one the --thread recorded, else the current one)")
    verify.add_argument("--accepted", action="store_true",
                        help="only the hunks accepted so far (what Apply would write), not the whole proposal")
    verify.add_argument("--json", action="store_true", help="print the verify_finished event as one JSON line")
    verify.add_argument("--db", metavar="FILE", help="the threads database file (default: the app's)")
    verify.set_defaults(func=cmd_verify)
    from workspace.cli.combined import register_actions

    register_actions(csub)  # list, apply --take, undo: the combined review of a comparison's candidates
    changes.set_defaults(func=lambda args: changes.print_help() or 0)


def _folder(args: argparse.Namespace) -> Path | None:
    from workspace.cli import CLIError

    given = getattr(args, "changes_folder", None) or getattr(args, "folder", None)
    if given is None:
        return None
    folder = Path(given).resolve()
    if not folder.is_dir():
        raise CLIError(f"--folder {given}: no such folder")
    return folder


def cmd_recover(args: argparse.Namespace) -> int:
    from workspace.changes import discard_interrupted, find_interrupted_applies, recover
    from workspace.cli import CLIError

    items = find_interrupted_applies(_folder(args))
    if args.id:
        items = [i for i in items if i.id == args.id or i.id.startswith(args.id)]
        if not items:
            raise CLIError(f"no interrupted apply {args.id!r}; run `robotlab changes recover --list` to see them")
    if not items:
        print("No interrupted apply: every apply, undo and restore finished.")
        return 0
    interactive = sys.stdin.isatty() and not args.list
    remaining = 0
    for item in items:
        print(f"{item.id}: {item.message()}")
        direction = args.direction
        if args.list:
            remaining += 1
            continue
        if direction is None and interactive:
            direction = _ask()
        if direction is None:
            remaining += 1
            continue
        if direction == "discard":
            discard_interrupted(item)
            print("  Forgotten; the files were left as they are.")
            continue
        result = recover(item, direction, force=args.force)
        print(f"  {'✓' if result.ok else '✗'} {result.message}")
        if result.saved_checkpoint_id:
            print(f"  The overwritten files are kept in checkpoint {result.saved_checkpoint_id}.")
        if not result.ok:
            remaining += 1
    if remaining and not args.list and args.direction is None and not interactive:
        print("Give --back (every file as before) or --forward (every file as the change makes it), or --discard "
              "to leave the files as they are.", file=sys.stderr)
    return 1 if remaining else 0


def cmd_verify(args: argparse.Namespace) -> int:
    import asyncio
    import json

    from workspace import events as ev
    from workspace.cli import CLIError
    from workspace.cli.combined import changes_folder
    from workspace.cli.record import open_store
    from workspace.isolation import IsolationError, SandboxUnavailable
    from workspace.session import Workspace

    store = open_store(args)
    try:
        folder = changes_folder(args, store)
        if args.thread:
            thread_id = store.resolve_thread_id(args.thread)
        else:
            found = next((t.id for t in store.list_threads() if store.load_change_set(t.id, folder) is not None), None)
            if found is None:
                raise CLIError(f"No thread has proposed changes for {folder}; give --thread ID, or --folder DIR for "
                               "another folder")
            thread_id = found
        session = Workspace(folder=folder, store=store).open_thread(thread_id)
        if session.changes is None or not session.changes.pending_files:
            raise CLIError(f"Thread {thread_id[:8]} has no proposed changes waiting for {folder}")
        setting = session.verify_setting()
        if setting.notice:
            print(f"robotlab: {setting.notice}", file=sys.stderr)
        if setting.command is None:
            raise CLIError("No verify command: set review.verify in the folder's .robotlab/config.yaml (e.g. "
                           "review: {verify: \"pytest -q\"}) and trust the folder, or verify: in the robot's file")
        try:
            event = asyncio.run(session.verify_changes("accepted" if args.accepted else "proposed"))
        except (SandboxUnavailable, IsolationError) as exc:
            raise CLIError(f"The verify command could not run: {exc}") from exc
    finally:
        store.close()
    if event is None:
        raise CLIError("The verify command did not run: nothing is proposed")
    if args.json:
        print(json.dumps(ev.to_dict(event), ensure_ascii=False, default=str))
    else:
        print(event.describe())
        if event.output:
            print(event.output.rstrip("\n"))
    return 0 if event.passed else 1


def _ask() -> str | None:
    while True:
        try:
            answer = input("  Roll it [b]ack, [f]orward, [d]iscard the record, or [s]kip? ").strip().lower()
        except EOFError:
            return None
        choice = {"b": "back", "f": "forward", "d": "discard", "s": None}.get(answer[:1], "?")
        if choice != "?":
            return choice


def warn_interrupted_applies(folder: Path | None = None, *, out: Any = None) -> int:
    """At the start of a run: say on stderr which applies a crash cut short (of ``folder``, or any),
    and how to recover them. Returns how many there are; never fails the run."""
    from workspace.changes import find_interrupted_applies

    stream = out if out is not None else sys.stderr
    try:
        items = find_interrupted_applies(folder)
    except Exception as exc:  # a damaged record must not stop the run
        print(f"robotlab: warning: could not check for interrupted applies: {display_path(str(exc))}", file=stream)
        return 0
    for item in items:
        print(f"robotlab: warning: {item.message()} {RECOVER_HINT}", file=stream)
    return len(items)
