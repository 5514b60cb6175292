"""The change history of a thread: every applied change set with its before and after
checkpoints, undo that restores the files byte for byte, redo of the undo, restore of any
checkpoint, and the net diff of everything the thread changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workspace.changes import journal
from workspace.changes.checkpoints import Checkpoint, CheckpointStore, FileState
from workspace.changes.errors import ChangeError
from workspace.changes.fileio import atomic_write, sha256
from workspace.changes.folderio import FolderIO
from workspace.changes.hunks import Conflict, FileChange
from workspace.changes.journal import InterruptedApply
from workspace.sandbox import Sandbox, display_path

FileStates = dict[str, tuple[bytes | None, int | None]]


def _read(io: FolderIO, rel: str) -> tuple[bytes | None, int | None]:
    """A file's state for comparing; one that cannot be read safely (a folder on the way is now a
    symlink) counts as unknown, so it never matches and is never overwritten unasked."""
    try:
        return io.state(rel)
    except ChangeError:
        return b"", None


def _disk_matches(io: FolderIO, rel: str, state: FileState | None, disk: FileStates) -> bool:
    data, _ = disk[rel] if rel in disk else _read(io, rel)
    if state is None:
        return data is None and io.kind(rel) is None
    return data is not None and sha256(data) == state.hash


def _write_states(io: FolderIO, store: CheckpointStore, states: dict[str, FileState | None]) -> list[str]:
    """Make each file match its state (write atomically or delete); return the folders created."""
    created: list[str] = []
    try:
        for rel, state in states.items():
            _write_state(io, store, rel, state, created)
    finally:
        io.sync()
    return created


def _write_state(io: FolderIO, store: CheckpointStore, rel: str, state: FileState | None,
                 created: list[str]) -> None:
    if state is None:
        io.unlink(rel)
        return
    data = store.get(state.hash)
    current, mode = io.state(rel)
    if current is not None and sha256(current) == state.hash:
        if state.mode is not None and mode != state.mode:
            io.chmod(rel, state.mode)
        return
    io.write(rel, data, mode=state.mode, created=created)


@dataclass(slots=True)
class HistoryEntry:
    """One applied change set (or restore) of a thread: its before and after checkpoints."""

    id: str
    folder: str
    before: str
    after: str | None = None
    change_set_id: str | None = None
    #: "apply" or "restore"
    kind: str = "apply"
    #: "applying" (interrupted), "applied", "undone" or "failed"
    state: str = "applying"
    paths: list[str] = field(default_factory=list)
    created_dirs: list[str] = field(default_factory=list)
    summary: str = ""
    created: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "folder": self.folder, "before": self.before, "after": self.after,
                "change_set_id": self.change_set_id, "kind": self.kind, "state": self.state,
                "paths": self.paths, "created_dirs": self.created_dirs, "summary": self.summary,
                "created": self.created}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HistoryEntry:
        import dataclasses

        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(slots=True)
class RestoreResult:
    """What an undo, redo or restore did."""

    ok: bool
    entry: HistoryEntry | None = None
    restored: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    #: When ``force`` overwrote files that had changed, their state was saved here first.
    saved_checkpoint_id: str | None = None
    message: str = ""


class ChangeHistory:
    """Applied change sets of one conversation thread in one folder: undo, redo, restore, net diff.

    Stored as ``threads/<thread>.json`` next to the checkpoints. Undo restores an
    entry's *before* checkpoint, redo its *after* checkpoint; both refuse (unless
    ``force``) when a file no longer matches what they expect, so nobody's later edit
    is silently lost, and a forced overwrite saves the overwritten state first.
    """

    def __init__(self, folder: str | os.PathLike[str], thread_id: str | None = None, *,
                 store: CheckpointStore | None = None) -> None:
        self.sandbox = Sandbox(folder)
        self.folder = self.sandbox.root
        self.thread_id = thread_id
        self.store = store or CheckpointStore()
        key = thread_id or f"folder-{sha256(str(self.folder).encode())[:16]}"
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", key)[:80]
        if safe != key:
            safe += "-" + sha256(key.encode())[:8]
        self._file = self.store.root / "threads" / f"{safe}.json"
        self._lock = threading.RLock()
        #: The open journal entry of each write in progress (by history entry id).
        self._journals: dict[str, InterruptedApply] = {}

    # -- persistence --------------------------------------------------------------------------
    def _load(self) -> list[HistoryEntry]:
        try:
            data = json.loads(self._file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        return [HistoryEntry.from_dict(e) for e in data.get("entries", [])]

    def _save(self, entries: list[HistoryEntry]) -> None:
        self._file.parent.mkdir(parents=True, exist_ok=True)
        payload = {"thread_id": self.thread_id, "entries": [e.to_dict() for e in entries]}
        atomic_write(self._file, json.dumps(payload, ensure_ascii=False, indent=1).encode())

    def entries(self) -> list[HistoryEntry]:
        """This folder's entries of the thread, oldest first."""
        with self._lock:
            return [e for e in self._load() if e.folder == str(self.folder)]

    def entry(self, entry_id: str) -> HistoryEntry:
        for e in self.entries():
            if e.id == entry_id or e.before == entry_id or e.after == entry_id:
                return e
        raise KeyError(f"No change {entry_id!r} in this thread's history")

    def _update(self, entry: HistoryEntry) -> None:
        with self._lock:
            entries = self._load()
            for i, e in enumerate(entries):
                if e.id == entry.id:
                    entries[i] = entry
                    break
            else:
                entries.append(entry)
            self._save(entries)

    # -- recording (ChangeSet.apply uses these) -------------------------------------------------
    def begin(self, before: FileStates, after: FileStates, *, change_set_id: str | None, summary: str,
              kind: str = "apply", io: FolderIO | None = None) -> HistoryEntry:
        """Checkpoint the files as they are and as they are about to be (durably, before any write),
        write the apply journal (:mod:`~workspace.changes.journal`) and record an entry in state
        "applying"; :meth:`finish` marks it applied (and closes the journal), :meth:`fail` failed.

        An entry left "applying" by a crash can still be undone: each of its files is
        either in the before or in the after state; the next start offers to roll it back or
        forward (:func:`~workspace.changes.recovery.find_interrupted_applies`).
        """
        ids = []
        for kind_, states in (("before", before), ("after", after)):
            ids.append(self.store.record(self.folder, states, kind=kind_, label=summary, thread_id=self.thread_id,
                                         change_set_id=change_set_id).id)
        entry = HistoryEntry(id=f"ch{uuid.uuid4().hex[:16]}", folder=str(self.folder), before=ids[0], after=ids[1],
                             change_set_id=change_set_id, kind=kind, paths=sorted(set(before) | set(after)),
                             summary=summary)
        record = self._journal_start(kind, entry, old=ids[0], new=ids[1], io=io)
        try:
            self._update(entry)
        except BaseException:
            journal.finish(self.store, record)
            raise
        return entry

    def _journal_start(self, kind: str, entry: HistoryEntry, *, old: str, new: str, paths: Sequence[str] = (),
                       io: FolderIO | None) -> InterruptedApply:
        record = InterruptedApply(id=journal.new_id(), folder=str(self.folder), kind=kind, old=old, new=new,
                                  paths=sorted(paths or entry.paths), summary=entry.summary,
                                  thread_id=self.thread_id, entry_id=entry.id, entry_state=entry.state)
        journal.start(self.store, record, io)
        self._journals[entry.id] = record
        return record

    def _journal_end(self, entry: HistoryEntry, *, keep: bool = False) -> None:
        record = self._journals.pop(entry.id, None)
        if record is not None:
            journal.finish(self.store, record, keep=keep)

    def finish(self, entry: HistoryEntry, *, created_dirs: Sequence[str] = ()) -> HistoryEntry:
        entry.state = "applied"
        entry.created_dirs = list(created_dirs)
        self._update(entry)
        self._journal_end(entry)
        return entry

    def fail(self, entry: HistoryEntry, *, keep_journal: bool = False) -> None:
        """The write failed: the entry is marked failed. ``keep_journal`` when restoring the files
        already written failed too, so the next start offers to recover the set."""
        entry.state = "failed"
        record = self._journals.get(entry.id)
        if keep_journal and record is not None:
            record.entry_state = entry.state  # still to recover, though the entry says failed
            with contextlib.suppress(OSError):
                journal.update(self.store, record)
        self._update(entry)
        self._journal_end(entry, keep=keep_journal)

    def release(self, entry: HistoryEntry) -> None:
        """The write was cut short (an exception that is not an error): keep its journal entry for
        recovery and let go of it (so it is reported as interrupted)."""
        self._journal_end(entry, keep=True)

    # -- undo / redo ----------------------------------------------------------------------------
    def _live(self) -> list[HistoryEntry]:
        return [e for e in self.entries() if e.state != "failed"]

    def undoable(self) -> HistoryEntry | None:
        """The entry :meth:`undo` would undo (the latest applied one)."""
        for e in reversed(self._live()):
            if e.state in ("applied", "applying"):
                return e
        return None

    def redoable(self) -> HistoryEntry | None:
        """The entry :meth:`redo` would redo (the last undone, if nothing was applied since)."""
        candidate = None
        for e in reversed(self._live()):
            if e.state == "undone":
                candidate = e
            else:
                break
        return candidate

    @property
    def can_undo(self) -> bool:
        return self.undoable() is not None

    @property
    def can_redo(self) -> bool:
        return self.redoable() is not None

    def undo(self, entry_id: str | None = None, *, force: bool = False) -> RestoreResult:
        """Restore the files of the latest applied change set (or ``entry_id``) to before it."""
        with self._lock:
            entry = self.entry(entry_id) if entry_id else self.undoable()
            if entry is None:
                return RestoreResult(False, message="Nothing to undo in this thread.")
            if entry.state not in ("applied", "applying"):
                return RestoreResult(False, entry, message=f"That change is {entry.state}; nothing to undo.")
            before = self.store.load(entry.before)
            after = self.store.load(entry.after) if entry.after else None
            with FolderIO(self.sandbox) as io:
                result = self._restore(before, after, io=io, force=force, label=f"undo: {entry.summary}",
                                       entry=entry, kind="undo")
                result.entry = entry
                if result.ok:
                    for rel in sorted(entry.created_dirs, key=lambda p: p.count("/"), reverse=True):
                        with contextlib.suppress(OSError, ChangeError):
                            io.rmdir(rel)
                    io.sync()
            if result.ok:
                entry.state = "undone"
                self._update(entry)
                self._journal_end(entry)
                result.message = f"Undid {entry.summary}" if entry.summary else "Undone."
            return result

    def redo(self, entry_id: str | None = None, *, force: bool = False) -> RestoreResult:
        """Apply again the change set the last undo restored (or ``entry_id``)."""
        with self._lock:
            entry = self.entry(entry_id) if entry_id else self.redoable()
            if entry is None or entry.after is None:
                return RestoreResult(False, message="Nothing to redo in this thread.")
            if entry.state != "undone":
                return RestoreResult(False, entry, message=f"That change is {entry.state}; nothing to redo.")
            before = self.store.load(entry.before)
            after = self.store.load(entry.after)
            with FolderIO(self.sandbox) as io:
                result = self._restore(after, before, io=io, force=force, label=f"redo: {entry.summary}",
                                       entry=entry, kind="redo")
            result.entry = entry
            if result.ok:
                entry.state = "applied"
                self._update(entry)
                self._journal_end(entry)
                result.message = f"Redid {entry.summary}" if entry.summary else "Redone."
            return result

    def restore(self, checkpoint_id: str, *, force: bool = False) -> RestoreResult:
        """Bring the files of any checkpoint back; the present state is checkpointed first (undoable)."""
        with self._lock:
            target = self.store.load(checkpoint_id)
            if Path(target.folder) != self.folder:
                return RestoreResult(False, message=f"Checkpoint {checkpoint_id} belongs to {target.folder}")
            with FolderIO(self.sandbox) as io:
                states = {rel: _read(io, rel) for rel in target.files}
                wanted = {rel: (self.store.state_bytes(s), s.mode if s else None) for rel, s in target.files.items()}
                entry = self.begin(states, wanted, change_set_id=target.change_set_id,
                                   summary=f"restore of checkpoint {checkpoint_id}", kind="restore", io=io)
                try:
                    created = _write_states(io, self.store, target.files)
                except Exception as exc:
                    current = self.store.load(entry.before)
                    reverted = True
                    try:
                        _write_states(io, self.store, current.files)
                    except Exception:
                        reverted = False
                    self.fail(entry, keep_journal=not reverted)
                    return RestoreResult(False, entry, message=f"Could not restore: {exc}; nothing was changed"
                                         if reverted else f"Could not restore: {exc}; putting the files back "
                                         "failed too: the next start offers to finish or roll back the restore")
                except BaseException:
                    self.release(entry)
                    raise
            self.finish(entry, created_dirs=created)
            return RestoreResult(True, entry, restored=sorted(target.files),
                                 message=f"Restored {len(target.files)} file(s) from checkpoint {checkpoint_id}")

    def _restore(self, target: Checkpoint, expected: Checkpoint | None, *, io: FolderIO, force: bool, label: str,
                 entry: HistoryEntry, kind: str) -> RestoreResult:
        """Write ``target``'s states (undo: the before checkpoint; redo: the after one), journaled.

        The journal stays open on success: the caller closes it once the entry's state is saved.
        """
        disk = {rel: _read(io, rel) for rel in target.files}
        conflicts: list[Conflict] = []
        for rel, state in target.files.items():
            if _disk_matches(io, rel, state, disk):
                continue
            wanted = expected.files.get(rel) if expected is not None else None
            if expected is not None and _disk_matches(io, rel, wanted, disk):
                continue
            conflicts.append(Conflict(
                path=rel, base=self.store.state_bytes(wanted), disk=disk[rel][0],
                proposed=self.store.state_bytes(state),
                message=f"{display_path(rel)} changed after the checkpoint; restoring it would overwrite those changes",
            ))
        saved = None
        if conflicts and not force:
            names = ", ".join(display_path(c.path) for c in conflicts)
            return RestoreResult(False, conflicts=conflicts,
                                 message=f"Not restored: {names} changed since; use force to overwrite")
        if conflicts:
            saved = self.store.record(self.folder, {c.path: disk[c.path] for c in conflicts}, kind="overwritten",
                                      label=label, thread_id=self.thread_id).id
        current = self.store.record(self.folder, disk, kind=f"before-{kind}", label=label, thread_id=self.thread_id)
        self._journal_start(kind, entry, old=current.id, new=target.id, paths=sorted(target.files), io=io)
        try:
            _write_states(io, self.store, target.files)
        except Exception as exc:
            reverted = True
            try:
                _write_states(io, self.store, current.files)
            except Exception:
                reverted = False
            self._journal_end(entry, keep=not reverted)
            tail = "the files were left as they were" if reverted else (
                "putting the files back failed too: the next start offers to finish or roll it back")
            return RestoreResult(False, message=f"Could not restore: {exc}; {tail}")
        except BaseException:
            self._journal_end(entry, keep=True)
            raise
        return RestoreResult(True, restored=sorted(target.files), conflicts=conflicts, saved_checkpoint_id=saved)

    # -- the thread's net change -----------------------------------------------------------------
    def net_changes(self) -> list[FileChange]:
        """Each file the thread touched, from its state when the thread first touched it to disk now."""
        base: dict[str, FileState | None] = {}
        for entry in self._live():
            checkpoint = self.store.load(entry.before)
            for rel, state in checkpoint.files.items():
                base.setdefault(rel, state)
        out: list[FileChange] = []
        with FolderIO(self.sandbox) as io:
            now = {rel: _read(io, rel)[0] for rel in base}
        for n, (rel, state) in enumerate(sorted(base.items()), start=1):
            before = self.store.state_bytes(state)
            after = now[rel]
            if before == after:
                continue
            out.append(FileChange(id=f"n{n}", path=rel, before=before, after=after,
                                  before_mode=state.mode if state else None))
        return out

    def net_diff(self, *, context: int = 3) -> str:
        """"All changes in this thread" as one unified diff."""
        return "".join(fc.unified_diff(context=context) for fc in self.net_changes())

