"""Recovery of applies cut short by a crash: find them at the next start, roll each back or forward.

:func:`find_interrupted_applies` lists the journal entries (:mod:`workspace.changes.journal`) whose
writer died (its process is gone), and the history entries stuck at "applying" with no journal (from
older versions), with how many files are old and new and which temp files are left. :func:`recover`
makes every file old (``direction="back"``) or new (``"forward"``), refuses to overwrite a file
changed since (unless ``force``, which checkpoints it first), removes the temp files and the folders
the interrupted write created, settles the history entry, and says what it did.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field

from workspace.changes import journal
from workspace.changes.checkpoints import Checkpoint, CheckpointStore, FileState
from workspace.changes.errors import ChangeError
from workspace.changes.fileio import sha256
from workspace.changes.folderio import FolderIO
from workspace.changes.history import ChangeHistory, HistoryEntry
from workspace.changes.journal import InterruptedApply
from workspace.errors import SandboxError
from workspace.sandbox import Sandbox, display_path

__all__ = ["RecoveryResult", "discard_interrupted", "find_interrupted_applies", "recover"]


@dataclass(slots=True)
class RecoveryResult:
    """What :func:`recover` did."""

    ok: bool
    message: str
    direction: str = "back"
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    saved_checkpoint_id: str | None = None



def _records(store: CheckpointStore) -> list[InterruptedApply]:
    out = []
    directory = journal.journal_dir(store)
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            out.append(InterruptedApply.from_dict(json.loads((directory / name).read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return out


def _stuck_entries(store: CheckpointStore, known: set[str]) -> list[InterruptedApply]:
    """History entries left at "applying" with no journal (written before journals existed)."""
    out = []
    for path in sorted((store.root / "threads").glob("*.json")):
        try:
            text = path.read_text(encoding="utf-8")
            if '"applying"' not in text:
                continue
            data = json.loads(text)
        except (OSError, ValueError):
            continue
        for entry in data.get("entries", []):
            if entry.get("state") != "applying" or entry.get("id") in known or not entry.get("after"):
                continue
            out.append(InterruptedApply(
                id=f"entry-{entry['id']}", folder=str(entry.get("folder", "")), kind=str(entry.get("kind", "apply")),
                old=str(entry["before"]), new=str(entry["after"]), paths=list(entry.get("paths", [])),
                summary=str(entry.get("summary", "")), thread_id=data.get("thread_id"), entry_id=entry["id"],
                created=float(entry.get("created", 0.0)), pid=0, journal=False))
    return out


def _history_entry(store: CheckpointStore,
                   item: InterruptedApply) -> tuple[ChangeHistory | None, HistoryEntry | None]:
    from workspace.changes.history import ChangeHistory

    if item.entry_id is None:
        return None, None
    history = ChangeHistory(item.folder, item.thread_id, store=store)
    try:
        return history, history.entry(item.entry_id)
    except KeyError:
        return history, None


def _matches(data: bytes | None, state: FileState | None) -> bool:
    return data is None if state is None else (data is not None and sha256(data) == state.hash)


def _survey(store: CheckpointStore, item: InterruptedApply) -> tuple[Checkpoint, Checkpoint] | None:
    """Fill the item's old/new/changed/temp files from disk; None (with ``problem``) if it cannot be."""
    try:
        sandbox = Sandbox(item.folder)
    except SandboxError:
        item.problem = (f"The folder {display_path(item.folder)} no longer exists, so nothing can be recovered "
                        "there; discard this record")
        return None
    try:
        old, new = store.load(item.old), store.load(item.new)
    except KeyError as exc:
        item.problem = f"Its checkpoint is missing ({exc}); the files are as the interruption left them"
        return None
    item.old_files, item.new_files, item.changed_files = [], [], []
    try:
        io = FolderIO(sandbox)
    except OSError as exc:
        item.problem = f"The folder {display_path(item.folder)} cannot be opened ({exc.strerror or exc})"
        return None
    with io:
        for rel in sorted(set(old.files) | set(new.files)):
            try:
                data, _ = io.state(rel)
            except ChangeError:
                item.changed_files.append(rel)
                continue
            is_old, is_new = _matches(data, old.files.get(rel)), _matches(data, new.files.get(rel))
            if is_new and not is_old:
                item.new_files.append(rel)
            elif is_old:
                item.old_files.append(rel)
            else:
                item.changed_files.append(rel)
        item.temp_files = io.temp_files(item.paths)
    return old, new


def find_interrupted_applies(folder: str | os.PathLike[str] | None = None, *,
                             store: CheckpointStore | None = None) -> list[InterruptedApply]:
    """Applies, undos, redos and restores that a crash cut short (of ``folder``, or of every folder),
    oldest first, each with the files found old, new or changed since, and the temp files left.

    Ones whose process still runs are not listed; a journal whose write was settled since (its
    history entry moved on) is cleaned up silently.
    """
    store = store or CheckpointStore()
    root = str(Sandbox(folder).root) if folder is not None else None
    records = _records(store)
    stuck = _stuck_entries(store, {r.entry_id for r in records if r.entry_id})
    if stuck:  # an apply that began meanwhile has its journal entry written before its history entry
        known = {r.entry_id for r in _records(store)}
        stuck = [item for item in stuck if item.entry_id not in known]
    found: list[InterruptedApply] = []
    for item in [*records, *stuck]:
        if item.journal and journal.in_progress(store, item):
            continue
        if root is not None and item.folder != root:
            continue
        try:
            _, entry = _history_entry(store, item)
        except SandboxError:  # the folder is gone: reported (with the problem) below
            settled = False
        else:
            settled = item.entry_id is not None and (entry is None or entry.state != item.entry_state)
        if item.journal and settled:
            # Settled since (finished, undone), or cut short before its history entry, i.e. before
            # any file was written: nothing to recover.
            _cleanup(store, item)
            continue
        _survey(store, item)
        found.append(item)
    return sorted(found, key=lambda i: i.created)


def _cleanup(store: CheckpointStore, item: InterruptedApply) -> list[str]:
    removed: list[str] = []
    with contextlib.suppress(SandboxError, OSError), FolderIO(Sandbox(item.folder)) as io:
        removed = io.remove_temp_files(item.paths)
        io.sync()
    if item.journal:
        journal.finish(store, item)
    return removed


def discard_interrupted(item: InterruptedApply, *, store: CheckpointStore | None = None) -> None:
    """Forget an interrupted write without touching its files (e.g. its folder is gone)."""
    store = store or CheckpointStore()
    if item.journal:
        journal.finish(store, item)
    else:
        _settle_entry(store, item, "failed")


def _settle_entry(store: CheckpointStore, item: InterruptedApply, state: str,
                  created_dirs: list[str] | None = None) -> None:
    with contextlib.suppress(SandboxError, OSError):
        history, entry = _history_entry(store, item)
        if history is not None and entry is not None:
            entry.state = state
            if created_dirs is not None:
                entry.created_dirs = created_dirs
            history._update(entry)


def recover(item: InterruptedApply, direction: str = "back", *, store: CheckpointStore | None = None,
            force: bool = False) -> RecoveryResult:
    """Make every file of an interrupted write old (``"back"``) or new (``"forward"``).

    A file that is neither (changed since the interruption) is not overwritten unless ``force``
    (then its present state is checkpointed first). The temp files the write left are removed;
    rolling back also removes the (empty) folders it created. The history entry is settled
    (an apply rolled back counts as failed; undo/redo rolled back leave it as before).
    """
    if direction not in ("back", "forward"):
        raise ValueError("direction must be 'back' or 'forward'")
    store = store or CheckpointStore()
    item.problem = None
    surveyed = _survey(store, item)  # afresh: the files may have changed since the item was found
    if surveyed is None:
        return RecoveryResult(False, item.problem or "Nothing can be recovered", direction)
    old, new = surveyed
    target, source = (old, new) if direction == "back" else (new, old)
    done = "Rolled back" if direction == "back" else "Completed"
    result = RecoveryResult(False, "", direction)
    if item.changed_files and not force:
        names = ", ".join(display_path(p) for p in item.changed_files)
        result.conflicts = list(item.changed_files)
        result.message = (f"Not recovered: {names} changed after the interruption; recovering would overwrite "
                          "that. Recover with force to overwrite (their present state is kept in a checkpoint), "
                          "or discard the record to keep the files as they are")
        return result
    sandbox = Sandbox(item.folder)
    if item.changed_files:
        result.saved_checkpoint_id = store.capture(sandbox.root, item.changed_files, kind="overwritten",
                                                   label=f"recovery of {item.summary}",
                                                   thread_id=item.thread_id).id
    created: list[str] = []
    try:
        with FolderIO(sandbox) as io:
            for rel in sorted(set(target.files) | set(source.files)):
                state = target.files.get(rel)
                data, _ = io.state(rel)
                if _matches(data, state):
                    result.unchanged.append(rel)
                    continue
                if state is None:
                    io.unlink(rel)
                else:
                    io.write(rel, store.get(state.hash), mode=state.mode, created=created)
                result.written.append(rel)
            result.temp_files = io.remove_temp_files(item.paths)
            if direction == "back":
                for folder in sorted(item.missing_dirs, key=lambda d: d.count("/"), reverse=True):
                    io.rmdir(folder)
            existing = [d for d in item.missing_dirs if io.kind(d) == "dir"]
            io.sync()
    except (OSError, ChangeError) as exc:
        result.message = (f"Recovery stopped: {exc}. Each file is still whole (old or new); try again, or "
                          f"restore checkpoint {item.old if direction == 'back' else item.new}")
        return result
    back_state, forward_state = journal.OUTCOMES.get(item.kind, ("failed", "applied"))
    if direction == "back":
        _settle_entry(store, item, back_state)
    else:
        _settle_entry(store, item, forward_state, created_dirs=existing)
    if item.journal:
        journal.finish(store, item)
    result.ok = True
    temps = f"; removed {len(result.temp_files)} temporary file(s)" if result.temp_files else ""
    where = "as before" if direction == "back" else "as the change makes them"
    result.message = (f"{done} the interrupted {item.what}: {len(result.written)} file(s) written {where}, "
                      f"{len(result.unchanged)} already were{temps}.")
    return result
