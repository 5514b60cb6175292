"""``robotlab threads list|show|export|search|import|recover``: the stored conversations, headless
(``replay`` and ``rerun``: :mod:`workspace.cli.replay`).

``--db FILE`` may come before the action (``threads --db FILE list``) or after it; both work for
every action.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from workspace.cli.record import add_db_option, open_store
from workspace.cli.show import dumps, print_thread, thread_dict, thread_json
from workspace.persistence import Store


def register(sub: Any) -> None:
    # SUPPRESS: an action's parser sets ``db`` only when --db follows the action, so one given before
    # it (``threads --db FILE list``) is kept rather than overwritten by the action's default.
    common = argparse.ArgumentParser(add_help=False)
    add_db_option(common, default=argparse.SUPPRESS)

    threads = sub.add_parser("threads", help="list, search, export and import conversation threads",
                             parents=[common])
    tsub = threads.add_subparsers(dest="threads_command", metavar="ACTION")

    lst = tsub.add_parser("list", help="list threads, most recent first", parents=[common])
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.add_argument("--deleted", action="store_true", help="include deleted threads")
    lst.add_argument("--evals", action="store_true",
                     help="include the threads of eval cases (`robotlab eval` records each case's run as one)")
    lst.set_defaults(func=cmd_list)

    show = tsub.add_parser("show", help="print a thread: the messages, the robots' text and their tool calls",
                           description="Print a thread's current branch: every message, the robot's text, its "
                           "tool calls and results, approvals and file changes. Stored text is shown with "
                           "control characters escaped.", parents=[common])
    show.add_argument("id", help="thread id (or the start of it)")
    show.add_argument("--json", action="store_true",
                      help="print the thread and its turns with their events as one JSON object")
    show.add_argument("--full", action="store_true", help="do not shorten tool inputs and results")
    show.set_defaults(func=cmd_show)

    export = tsub.add_parser("export", help="export a thread as Markdown, RobotLab JSON results or JSONL events",
                             parents=[common])
    export.add_argument("id", help="thread id (or the start of it)")
    export.add_argument("--format", "-f", choices=("md", "json", "jsonl"), default="md",
                        help="md: for people; json: RobotLab results; jsonl: the raw events (default: md)")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of printing")
    export.add_argument("--reasoning", action="store_true",
                        help="include the model's thinking (left out by default)")
    export.set_defaults(func=cmd_export)

    search = tsub.add_parser("search", help="full-text search across threads", parents=[common])
    search.add_argument("query", nargs="+", help="words to find (prefixes match)")
    search.add_argument("--limit", type=int, default=20)
    search.add_argument("--json", action="store_true", help="print JSON")
    search.add_argument("--evals", action="store_true", help="search the threads of eval cases too")
    search.set_defaults(func=cmd_search)

    imp = tsub.add_parser("import", help="import RobotLab results JSON as a new thread", parents=[common])
    imp.add_argument("file", help="a JSON file of RobotLab results (as `threads export --format json` writes; the "
                     "JSONL event export cannot be imported)")
    imp.add_argument("--robot", help="robot name for the thread (default: the results' robot_name)")
    imp.add_argument("--title", help="thread title (default: the first message)")
    imp.set_defaults(func=cmd_import)

    recover = tsub.add_parser("recover", help="a damaged database: move it aside (kept) and start a fresh one",
                              parents=[common])
    recover.set_defaults(func=cmd_recover)

    from workspace.cli import replay

    replay.register(tsub, common)

    threads.set_defaults(func=cmd_list, json=False, deleted=False, evals=False)


def cmd_recover(args: argparse.Namespace) -> int:
    from workspace import paths

    db = getattr(args, "db", None)
    path = Path(db) if db else paths.database_path()
    if not path.is_file():
        print(f"No database at {path}: nothing to recover.")
        return 0
    store = Store(path, recover=True)
    try:
        if store.recovered_from is None:
            print(f"{path} is fine: nothing was changed.")
        else:
            print(f"{path} was damaged: it is kept as {store.recovered_from}, and a fresh database was created.")
    finally:
        store.close()
    return 0


def _open(args: argparse.Namespace, *, create: bool = False) -> Store:
    """The store of ``--db`` (default: the app's database); reading never creates one (see
    :func:`workspace.cli.record.open_store`)."""
    return open_store(args, create=create)


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def cmd_list(args: argparse.Namespace) -> int:
    with _open(args) as store:
        threads = store.list_threads(include_deleted=getattr(args, "deleted", False),
                                     include_evals=getattr(args, "evals", False))
    if getattr(args, "json", False):
        print(json.dumps([thread_dict(t) for t in threads], indent=2, ensure_ascii=False))
        return 0
    if not threads:
        print("No threads yet. Start one in the app or with `robotlab run` / `robotlab chat`, or import RobotLab "
              "results with `robotlab threads import`.")
        return 0
    from workspace.cli.render import printable

    width = max(len(t.robot) for t in threads)
    # The origin column ("terminal" for threads of robotlab run/chat) only when some thread has one.
    origin_width = max(len(t.origin_label) for t in threads)
    for t in threads:
        deleted = "  (deleted)" if t.deleted_at else ""
        origin = f"{t.origin_label:<{origin_width}}  " if origin_width else ""
        print(f"{t.id[:8]}  {_when(t.updated_at)}  {t.robot:<{width}}  {t.turn_count:>4} msg  {origin}"
              f"{printable(t.display_title, one_line=True)}{deleted}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    with _open(args) as store:
        thread_id = store.resolve_thread_id(args.id)
        if args.json:
            print(dumps(thread_json(store, thread_id)))
        else:
            print_thread(store, thread_id, out=sys.stdout, full=args.full)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from workspace.exports import export_thread

    with _open(args) as store:
        thread_id = store.resolve_thread_id(args.id)
        text = export_thread(store, thread_id, args.format, include_reasoning=args.reasoning)
    if args.output:
        target = Path(args.output)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"Wrote {target}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    with _open(args) as store:
        hits = store.search(query, limit=args.limit, include_evals=args.evals)
    if args.json:
        print(json.dumps([{"thread_id": h.thread_id, "title": h.title, "turn_id": h.turn_id, "kind": h.kind,
                           "snippet": h.snippet} for h in hits], indent=2, ensure_ascii=False))
        return 0
    if not hits:
        print(f"Nothing matches {query!r}.", file=sys.stderr)
        return 1
    for h in hits:
        print(f"{h.thread_id[:8]}  {h.title or 'New thread'}  [{h.kind}]  {h.snippet}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.exports import ImportFormatError, import_results_json, read_results_file

    path = Path(args.file)
    try:
        text = read_results_file(path)
    except ImportFormatError as exc:
        raise CLIError(str(exc)) from exc
    with _open(args, create=True) as store:
        try:
            thread = import_results_json(store, text, robot=args.robot, title=args.title)
        except ImportFormatError as exc:
            raise CLIError(f"{path}: {exc}") from exc
    turns = thread.turn_count
    print(f"Imported 1 thread, {thread.id[:8]} \"{thread.display_title}\": {turns} turn{'s' if turns != 1 else ''}, "
          f"one per result")
    return 0
