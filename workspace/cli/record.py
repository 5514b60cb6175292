"""Recording command-line runs as threads of the window's store, and finding the thread to continue.

``robotlab run``, ``network run`` and ``chat`` record through :class:`workspace.session.Workspace`
and :class:`~workspace.session.ThreadSession`, exactly as the window does (one recorder); the
thread's metadata says where it came from (``{"origin": "cli", "command": "run"}``), so the
window's list can show it, and what is needed to continue it the same way (the robot file when
the robot was given as a path, the ``--model``).

A leaf of the CLI package: the commands import it, it imports none of them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workspace.approval import ApprovalGate
    from workspace.config import Config
    from workspace.persistence import Store, ThreadInfo
    from workspace.session import Workspace

#: ``metadata["origin"]`` of every thread the command line records.
ORIGIN = "cli"


def add_db_option(p: argparse.ArgumentParser, *, default: Any = None) -> None:
    p.add_argument("--db", metavar="FILE", default=default,
                   help="the threads database file (default: the app's, see `robotlab paths`)")


def add_record_options(p: argparse.ArgumentParser, *, what: str = "thread") -> None:
    """``--db``, ``--no-record``, ``--continue`` and ``--thread``."""
    add_db_option(p)
    p.add_argument("--no-record", action="store_true",
                   help="do not record this run (by default every run is recorded as a thread the window lists)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--continue", "-c", dest="continue_thread", action="store_true",
                       help=f"continue the latest {what} (the latest with ROBOT when it is given): the robot "
                       "gets the conversation so far")
    group.add_argument("--thread", "-t", metavar="ID",
                       help="continue the thread ID (or the start of its id, see `robotlab threads list`)")


def database_path(args: argparse.Namespace) -> Path:
    from workspace import paths

    db = getattr(args, "db", None)
    return Path(db) if db else paths.database_path()


def open_store(args: argparse.Namespace, *, create: bool = False) -> Store:
    """The store of ``--db`` (default: the app's database).

    Reading never creates a database: a mistyped ``--db`` path is refused instead of answering
    "no threads" from a new, empty file (recording and ``threads import`` may create one).
    """
    from workspace import paths
    from workspace.cli import CLIError
    from workspace.persistence import Store

    path = database_path(args)
    if create:
        _refuse_a_folder(args, path)
    if not create and not path.is_file():
        if getattr(args, "db", None):
            what = "is a folder, not a database file" if path.is_dir() else "does not exist"
            raise CLIError(f"no database at {path} ({what}). Check --db, or leave it out to use the app's database "
                           f"({paths.database_path()}).")
        if not (getattr(args, "continue_thread", False) or getattr(args, "thread", None)):
            return Store.open(path)  # the listing commands of an app never used yet: an empty database
        raise CLIError(f"There is no thread to continue yet (no database at {path}). Start one with "
                       "`robotlab run ROBOT \"message\"` or `robotlab chat`.")
    return Store.open(path)


def _refuse_a_folder(args: argparse.Namespace, path: Path) -> None:
    """``--db`` naming a folder: say so in its terms (the database layer's fix, ROBOTLAB_HOME, is no fix here)."""
    from workspace.cli import CLIError

    if getattr(args, "db", None) and path.is_dir():
        raise CLIError(f"--db {path} is a folder, not a database file; give a file, e.g. --db {path / 'threads.db'}")


def thread_to_continue(store: Store, args: argparse.Namespace, *, kind: str,
                       robot: str | None = None) -> ThreadInfo | None:
    """The thread ``--thread ID`` names, or with ``--continue`` the latest one of ``kind`` (with
    ``robot`` when given); None when neither option was given."""
    from workspace.cli import CLIError

    noun = "network" if kind == "network" else "robot"
    if getattr(args, "thread", None):
        thread = store.get_thread(store.resolve_thread_id(args.thread))
        if thread.kind != kind:
            other = "robotlab network run" if thread.kind == "network" else "robotlab run"
            raise CLIError(f"Thread {thread.id[:8]} talks to {thread.kind} '{thread.robot}', not to a {noun}; "
                           f"continue it with `{other} --thread {thread.id[:8]} \"message\"`.")
        if robot is not None and thread.robot != robot:
            raise CLIError(f"Thread {thread.id[:8]} talks to {noun} '{thread.robot}', not '{robot}'. Leave the "
                           f"{noun} out to continue it, or start a new thread with {robot}.")
        return thread
    if not getattr(args, "continue_thread", False):
        return None
    latest = store.latest_thread(kind=kind, robot=robot)
    if latest is None:
        who = f" with {robot}" if robot else ""
        raise CLIError(f"There is no {noun} thread{who} to continue yet. Start one without --continue.")
    return latest


def metadata(command: str, **values: Any) -> dict[str, Any]:
    """A CLI thread's metadata: its origin, the command, and the values given (None left out)."""
    return {"origin": ORIGIN, "command": command, **{k: v for k, v in values.items() if v is not None}}


def looks_like_path(name: str) -> bool:
    """Whether a robot argument names a file rather than a robot: it has a folder separator or ends in .md."""
    return "/" in name or os.sep in name or name.lower().endswith(".md")


def robot_file(reference: str) -> str | None:
    """The absolute path of a robot given as a file (so ``--continue`` finds it again), else None."""
    return str(Path(reference).resolve()) if looks_like_path(reference) else None


def stored_reference(thread: ThreadInfo, key: str) -> str:
    """How to load a thread's robot (``key="robot_file"``) or network (``"network_file"``) again:
    the file it was given as when that file is still there, else its name."""
    path = thread.metadata.get(key)
    if isinstance(path, str) and path and Path(path).is_file():
        return path
    return thread.robot


def open_workspace(args: argparse.Namespace, *, config: Config, folder: Path | None,
                   approval: ApprovalGate, store: Store | None = None) -> Workspace:
    """The workspace a recorded command-line run goes through (``--no-record``: an in-memory store)."""
    from workspace.persistence import Store
    from workspace.session import Workspace

    if store is None:
        if not getattr(args, "no_record", False):
            _refuse_a_folder(args, database_path(args))
        store = Store.open(":memory:" if getattr(args, "no_record", False) else database_path(args))
    return Workspace(config=config, folder=folder, store=store, approval=approval)


def recorded_hint(thread_id: str, *, command: str = "robotlab run") -> None:
    """On a terminal, where the run was recorded and how to go on (stderr, so pipes never see it)."""
    if not _isatty(sys.stderr):
        return
    print(f"\033[2mRecorded as thread {thread_id[:8]}: `{command} --thread {thread_id[:8]} \"…\"` continues it, "
          f"`robotlab threads show {thread_id[:8]}` shows it.\033[0m", file=sys.stderr)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
