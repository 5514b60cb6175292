"""``robotlab changes list``, ``changes apply --take``, ``changes undo``: one combined review on the command line.

A thread's pending changes, or those of every candidate of a comparison (``robotlab run ... --compare``: the
threads linked by their ``comparison`` metadata), are listed hunk by hunk with an id ``c<candidate>.<hunk>``.
``apply --take ID...`` applies exactly those hunks as one atomic set (:func:`workspace.session.compare.apply_hunks`:
refused when two overlap, verify first when a verify command is in force), recorded in the history of the
thread given (else candidate 0's), so ``changes undo`` undoes it as one. ``--merge ID=FILE`` applies a file's
text in place of overlapping hunks (a merge the person wrote).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workspace.changes.combine import CandidateChanges, TakenHunk
    from workspace.persistence import Store, ThreadInfo
    from workspace.session import ThreadSession

#: ``changes apply``'s exit status when the hunks were refused (overlapping, unknown) or nothing ran.
EXIT_REFUSED = 2

APPLY_EXIT_HELP = """exit status:
  0  applied
  1  nothing was written: the verify command failed on the combined set, or a file changed on disk since
     the proposal (the message says which)
  2  nothing was written: overlapping hunks (named), an unknown hunk id, no pending changes"""


def register_actions(csub: Any) -> None:
    """The ``list``, ``apply`` and ``undo`` actions of ``robotlab changes``."""
    listing = csub.add_parser(
        "list", help="list a thread's pending hunks, or every candidate's of a comparison, with their ids",
        description="List the pending hunks of a thread's proposed changes for the folder; for a thread of a "
        "comparison (robotlab run ... --compare / --robots), every candidate's. Each hunk has an id "
        "c<candidate>.<hunk> (c0.f1.h1) for `robotlab changes apply --take`.")
    _common(listing)
    listing.add_argument("--json", action="store_true",
                         help="print one JSON object: the comparison, its candidates and the hunks (id, candidate, "
                         "path, lines, old and new lines)")
    listing.set_defaults(func=cmd_list)
    apply = csub.add_parser(
        "apply", help="apply exactly the hunks given (of any candidates) as one set, undoable as one",
        description="Apply exactly the hunks given by id (from `robotlab changes list`), taken from any "
        "candidates of a comparison, as one atomic set: every file is written or none. Two hunks of different "
        "candidates that touch the same lines are refused (exit 2, named). With a verify command in force "
        "(review.verify, or the robot's verify:) it runs first on the combined set, in the sandbox; if it fails "
        "nothing is written. Each candidate's robot is told, with its next message, which hunks of whose were "
        "taken. `robotlab changes undo` undoes the apply.",
        epilog=APPLY_EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(apply)
    apply.add_argument("--take", nargs="+", required=True, metavar="HUNK_ID", help="the hunks to apply (c0.f1.h1 ...)")
    apply.add_argument("--merge", action="append", default=[], metavar="HUNK_ID=FILE",
                       help="apply FILE's text in place of that hunk and the taken hunks overlapping it (their lines "
                       "of the file, first to last): your merge of overlapping hunks; FILE '-' reads it from stdin")
    apply.add_argument("--no-verify", action="store_true", help="do not run the verify command first")
    apply.add_argument("--anyway", action="store_true", help="apply even when the verify command fails")
    apply.set_defaults(func=cmd_apply)
    undo = csub.add_parser(
        "undo", help="undo the last apply of a thread's changes (a combined apply as one)",
        description="Undo the last apply recorded in the thread's history (for a comparison: the combined apply, "
        "kept in the thread given to `changes apply`, else candidate 0's): every file back as it was before.")
    _common(undo)
    undo.add_argument("--force", action="store_true", help="also when the files changed since the apply")
    undo.set_defaults(func=cmd_undo)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--thread", "-t", metavar="ID",
                   help="the thread, or any candidate's thread of a comparison (or the start of its id; default: the "
                   "latest with pending changes for the folder)")
    p.add_argument("--folder", dest="changes_folder", metavar="DIR",
                   help="the folder (default: the one the --thread recorded, else the current one)")
    p.add_argument("--db", metavar="FILE", help="the threads database file (default: the app's)")


def changes_folder(args: argparse.Namespace, store: Store) -> Path:
    """The folder whose changes ``robotlab changes list/apply/undo/verify`` work on: ``--folder`` (also
    ``robotlab --folder``) when given; else, with ``--thread``, the folder that thread recorded (so the hints
    printed elsewhere work from any directory); else the current directory."""
    from workspace.cli import CLIError

    given = getattr(args, "changes_folder", None) or getattr(args, "folder", None)  # (also `robotlab --folder`)
    if given:
        folder = Path(given).resolve()
        if not folder.is_dir():
            raise CLIError(f"--folder {given}: no such folder")
        return folder
    if not getattr(args, "thread", None):
        return Path.cwd().resolve()
    info = store.get_thread(store.resolve_thread_id(args.thread))
    if not info.folder:
        raise CLIError(f"Thread {info.id[:8]} recorded no folder; give --folder DIR", code=EXIT_REFUSED)
    folder = Path(info.folder)
    if not folder.is_dir():
        raise CLIError(f"Thread {info.id[:8]} worked in {info.folder}, which is no longer a folder; give --folder DIR",
                       code=EXIT_REFUSED)
    return folder


def _pending(store: Store, thread_id: str, folder: Path) -> bool:
    data = store.load_change_set(thread_id, folder) or {}
    return any(f.get("state") == "pending" for f in data.get("files", []))


def _threads(store: Store, folder: Path, given: str | None) -> tuple[list[ThreadInfo], str]:
    """The threads whose changes are reviewed together (a comparison's candidates, in order, or one thread)
    and the thread given (or the first)."""
    from workspace.cli import CLIError

    if given:
        thread_id = store.resolve_thread_id(given)
    else:
        found = next((t.id for t in store.list_threads() if _pending(store, t.id, folder)), None)
        if found is None:
            raise CLIError(f"No thread has pending changes for {folder}; give --thread ID, or --folder DIR for "
                           "another folder", code=EXIT_REFUSED)
        thread_id = found
    info = store.get_thread(thread_id)
    comparison = info.metadata.get("comparison")
    if not comparison:
        return [info], thread_id
    linked = [t for t in store.list_threads() if t.metadata.get("comparison") == comparison]
    linked.sort(key=lambda t: int(t.metadata.get("candidate") or 0))
    return linked, thread_id if given else linked[0].id


def _sources(store: Store, folder: Path, given: str | None) -> tuple[list[CandidateChanges], dict[str, ThreadSession],
                                                                   str]:
    from workspace.changes.combine import CandidateChanges
    from workspace.cli import CLIError
    from workspace.session import Workspace

    threads, kept = _threads(store, folder, given)
    workspace = Workspace(folder=folder, store=store)
    sessions = {t.id: workspace.open_thread(t.id) for t in threads}
    sources = []
    for t in threads:
        changes = sessions[t.id].changes
        if changes is None:
            continue
        changes.thread_id = t.id
        label = t.metadata.get("candidate_label") or t.metadata.get("model") or t.model or t.robot
        sources.append(CandidateChanges(int(t.metadata.get("candidate") or 0), str(label), changes))
    if not any(s.changes.pending_files for s in sources):
        which = "its candidates have" if len(threads) > 1 else "it has"
        raise CLIError(f"Thread {kept[:8]}: {which} no pending changes for {folder}", code=EXIT_REFUSED)
    return sources, sessions, kept


def cmd_list(args: argparse.Namespace) -> int:
    from workspace.changes.combine import find_agreements, find_overlaps, pending_hunks
    from workspace.cli.record import open_store

    store = open_store(args)
    try:
        folder = changes_folder(args, store)
        sources, _, kept = _sources(store, folder, args.thread)
        hunks = pending_hunks(sources)
        overlaps: dict[str, list[str]] = {}
        for a, b in find_overlaps(hunks):  # what cannot be taken together, said before anyone tries
            overlaps.setdefault(a.id, []).append(b.id)
            overlaps.setdefault(b.id, []).append(a.id)
        agreements = find_agreements(hunks)  # the same change from several candidates: no conflict
        comparison = store.get_thread(kept).metadata.get("comparison")
    finally:
        store.close()
    if args.json:
        print(json.dumps({
            "folder": str(folder), "comparison": comparison,
            "candidates": [{"candidate": s.candidate, "label": s.label, "thread_id": s.changes.thread_id,
                            "change_set_id": s.changes.id} for s in sources],
            "hunks": [{**h.to_dict(), "overlaps": overlaps.get(h.id, []), "same_as": agreements.get(h.id, [])}
                      for h in hunks]}, ensure_ascii=False))
        return 0
    _print_hunks(hunks, overlaps, agreements)
    print(f"\nTake hunks with `robotlab changes apply --thread {kept[:8]} --take ID...` (ids from the first column).",
          file=sys.stderr)
    return 0


def _print_hunks(hunks: list[TakenHunk], overlaps: dict[str, list[str]], agreements: dict[str, list[str]]) -> None:
    from workspace.cli.render import printable

    for h in hunks:
        clash = f"  (overlaps {', '.join(overlaps[h.id])}: take one)" if h.id in overlaps else ""
        if h.id in agreements:
            clash += f"  (same as {', '.join(agreements[h.id])}: applied once)"
        print(f"{h.id}  candidate {h.candidate} ({printable(h.source.label, one_line=True)})  "
              f"{printable(h.path, one_line=True)}  hunk {h.hunk.number}, {h.hunk.where()}  "
              f"+{h.hunk.added} -{h.hunk.removed}{clash}")
        for line in h.hunk.old_lines if h.hunk.kind == "lines" else []:
            print("    - " + printable(line.rstrip("\r\n"), one_line=True))
        for line in h.hunk.final_lines if h.hunk.kind == "lines" else []:
            print("    + " + printable(line.rstrip("\r\n"), one_line=True))


def cmd_apply(args: argparse.Namespace) -> int:
    import asyncio

    from workspace.changes import ChangeError
    from workspace.cli import CLIError
    from workspace.cli.record import open_store
    from workspace.isolation import IsolationError, SandboxUnavailable
    from workspace.session.compare import apply_hunks, record_settled
    from workspace.session.verify import VerifyFailed

    merges = _merges(args.merge)
    store = open_store(args)
    try:
        folder = changes_folder(args, store)
        sources, sessions, kept = _sources(store, folder, args.thread)
        command = None
        if not args.no_verify:
            setting = sessions[kept].verify_setting()
            if setting.notice:
                print(f"robotlab: {setting.notice}", file=sys.stderr)
            command = setting.command
        try:
            done = asyncio.run(apply_hunks(sources, args.take, verify=command, thread_id=kept,
                                           if_verify_fails="apply" if args.anyway else "refuse", merges=merges))
        except VerifyFailed as exc:
            print(f"robotlab: {exc.event.describe()}; nothing was applied (--anyway applies all the same)",
                  file=sys.stderr)
            if exc.event.output:
                print(exc.event.output.rstrip("\n"), file=sys.stderr)
            return 1
        except ChangeError as exc:  # overlapping hunks, an unknown id: nothing was written
            raise CLIError(str(exc), code=EXIT_REFUSED) from exc
        except (SandboxUnavailable, IsolationError) as exc:
            raise CLIError(f"The verify command could not run: {exc}; nothing was applied (--no-verify applies "
                           "without it)") from exc
        if not done.ok:
            print(f"robotlab: {done.result.message()}", file=sys.stderr)
            return 1
        record_settled(sessions, sources, kept, done)
    finally:
        store.close()
    if done.verify is not None:
        print(done.verify.describe())
    names = ", ".join(dict.fromkeys(fc.display_path for fc in done.result.applied))
    print(f"Applied {len(done.taken)} hunk{'s' if len(done.taken) != 1 else ''} to {names} as one change "
          f"(`robotlab changes undo --thread {kept[:8]}` undoes it).")
    return 0


def _merges(given: list[str]) -> dict[str, str]:
    """``--merge HUNK_ID=FILE`` as ``{hunk id: the file's text}`` (FILE ``-``: standard input), each read
    bounded (:data:`~workspace.readlimits.INPUT_FILE_BYTES`, a regular file only)."""
    from workspace.cli import CLIError
    from workspace.errors import ConfigurationError
    from workspace.readlimits import INPUT_FILE_BYTES, read_text_bounded

    out: dict[str, str] = {}
    for item in given:
        hunk, sep, name = item.partition("=")
        if not sep or not hunk.strip() or not name.strip():
            raise CLIError(f"--merge {item!r}: give HUNK_ID=FILE (e.g. --merge c0.f1.h1=merged.py)", code=EXIT_REFUSED)
        try:
            text = sys.stdin.read(INPUT_FILE_BYTES + 1) if name.strip() == "-" else \
                read_text_bounded(Path(name), INPUT_FILE_BYTES, "merged file")
        except (OSError, UnicodeDecodeError, ConfigurationError) as exc:
            raise CLIError(f"--merge {item}: cannot read {name}: {exc}", code=EXIT_REFUSED) from exc
        if len(text) > INPUT_FILE_BYTES:
            raise CLIError(f"--merge {item}: standard input holds more than the {INPUT_FILE_BYTES >> 20} MB a "
                           "merged file may be; give a smaller merge", code=EXIT_REFUSED)
        out[hunk.strip()] = text
    return out


def cmd_undo(args: argparse.Namespace) -> int:
    import asyncio

    from workspace.cli.record import open_store
    from workspace.session import Workspace

    store = open_store(args)
    try:
        folder = changes_folder(args, store)
        thread_id = store.resolve_thread_id(args.thread) if args.thread else _latest_undoable(store, folder)
        session = Workspace(folder=folder, store=store).open_thread(thread_id)
        result = asyncio.run(session.undo_changes(force=args.force))
    finally:
        store.close()
    print(result.message or ("Undone." if result.ok else "Could not undo."),
          file=sys.stdout if result.ok else sys.stderr)
    return 0 if result.ok else 1


def _latest_undoable(store: Store, folder: Path) -> str:
    from workspace.changes import ChangeHistory
    from workspace.cli import CLIError

    for t in store.list_threads():
        if ChangeHistory(folder, t.id).can_undo:
            return t.id
    raise CLIError(f"No thread has an apply to undo in {folder}; give --thread ID, or --folder DIR for another folder")
