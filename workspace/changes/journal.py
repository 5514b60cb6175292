"""The apply journal: an apply (or undo, redo, restore) cut short by a crash is found at the next
start and rolled back or forward as the user chooses.

Every file of a multi-file apply is written atomically, so a kill leaves each file wholly old or
wholly new, but the *set* may be mixed, and the temp file being written stays behind. So before
anything in the folder changes, the writer records a journal entry (``journal/<id>.json`` in the
checkpoint store, in the app's data folder, never in the user's folder): the folder, the
checkpoints holding every file's state before and after, the history entry, the folders the
write may create. It is removed when the write ends (done, or rolled back after a failure).

Finding and recovering interrupted writes is :mod:`workspace.changes.recovery` (above the history).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.changes.checkpoints import CheckpointStore
from workspace.changes.fileio import atomic_write, sync_dirs
from workspace.changes.folderio import FolderIO
from workspace.sandbox import display_path

if TYPE_CHECKING:
    pass

#: Journal entries whose writer runs in this process right now: id -> the descriptor holding the
#: entry's lock (-1 where there are no file locks). Never reported as interrupted.
_ACTIVE: dict[str, int] = {}
_ACTIVE_LOCK = threading.Lock()

#: The history state each kind of write leaves its entry in, rolled back and forward.
OUTCOMES = {"apply": ("failed", "applied"), "restore": ("failed", "applied"), "undo": ("applied", "undone"),
            "redo": ("undone", "applied")}


@dataclass(slots=True)
class InterruptedApply:
    """A write into a folder that did not finish (see :func:`find_interrupted_applies`)."""

    id: str
    folder: str
    #: "apply", "undo", "redo" or "restore"
    kind: str
    #: The checkpoints: every file as it was before the write, and as the write makes it.
    old: str
    new: str
    paths: list[str] = field(default_factory=list)
    summary: str = ""
    thread_id: str | None = None
    entry_id: str | None = None
    #: The history entry's state when the write began (a different state now: settled since).
    entry_state: str = "applying"
    #: Folders that did not exist before (the write may have created them).
    missing_dirs: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    pid: int = field(default_factory=os.getpid)
    #: False: a history entry stuck at "applying" with no journal (written by an older version).
    journal: bool = True
    # -- found on disk by find_interrupted_applies (not stored) --
    new_files: list[str] = field(default_factory=list)
    old_files: list[str] = field(default_factory=list)
    #: Files that are neither (changed since): recovering refuses to overwrite them without force.
    changed_files: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    #: Why it cannot be recovered as it is (the folder is gone, a checkpoint is missing).
    problem: str | None = None

    _STORED = ("id", "folder", "kind", "old", "new", "paths", "summary", "thread_id", "entry_id", "entry_state",
               "missing_dirs", "created", "pid")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: data[k] for k in self._STORED}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InterruptedApply:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names and k in cls._STORED})

    @property
    def what(self) -> str:
        noun = {"apply": "applying", "undo": "undoing", "redo": "redoing", "restore": "restoring"}.get(
            self.kind, self.kind)
        files = f"{len(self.paths)} file{'s' if len(self.paths) != 1 else ''}"
        summary = f" ({display_path(self.summary)})" if self.summary else ""
        return f"{noun} {files}{summary} in {display_path(self.folder)}"

    def message(self) -> str:
        """What happened and what the user can do, for the window's banner and the terminal."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.created))
        head = f"The program stopped while {self.what} ({when})."
        if self.problem:
            return f"{head} {self.problem}"
        state = f"{len(self.new_files)} file(s) are new, {len(self.old_files)} still old"
        if self.changed_files:
            state += f", {len(self.changed_files)} changed since ({', '.join(map(display_path, self.changed_files[:3]))})"
        temps = f"; {len(self.temp_files)} temporary file(s) were left" if self.temp_files else ""
        return (f"{head} Each file is whole, but the set is mixed: {state}{temps}. Roll it back (every file as "
                "before) or forward (every file as the change makes it).")


def journal_dir(store: CheckpointStore) -> Path:
    return store.root / "journal"


def start(store: CheckpointStore, record: InterruptedApply, io: FolderIO | None = None) -> InterruptedApply:
    """Record ``record`` durably before any file of the folder changes (``io``: to find the
    folders the write may create)."""
    if io is not None:
        missing: list[str] = []
        checked: set[str] = set()
        for rel in record.paths:
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                folder = "/".join(parts[:i])
                if folder not in checked:
                    checked.add(folder)
                    if io.kind(folder) is None:
                        missing.append(folder)
        record.missing_dirs = missing
    directory = journal_dir(store)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{record.id}.json"
    with _ACTIVE_LOCK:
        _ACTIVE[record.id] = -1
    atomic_write(path, json.dumps(record.to_dict(), ensure_ascii=False).encode())
    with _ACTIVE_LOCK:
        _ACTIVE[record.id] = _lock(path)
    return record


def update(store: CheckpointStore, record: InterruptedApply) -> None:
    """Rewrite a journal entry (e.g. its ``entry_state`` after the write failed half-way)."""
    atomic_write(journal_dir(store) / f"{record.id}.json", json.dumps(record.to_dict(), ensure_ascii=False).encode())


def finish(store: CheckpointStore, record: InterruptedApply, *, keep: bool = False) -> None:
    """The write ended: remove its journal entry (``keep``: leave it for recovery, e.g. when a
    failed apply could not restore every file, or the write was cut short)."""
    path = journal_dir(store) / f"{record.id}.json"
    if not keep:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            sync_dirs([path.parent])
    with _ACTIVE_LOCK:
        fd = _ACTIVE.pop(record.id, -1)
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


def _lock(path: Path) -> int:
    """Hold an exclusive lock on the journal entry while its writer lives (the system drops it when
    the process dies, whatever its pid becomes); -1 where there are no file locks (Windows: there
    only this process's own writes are known to be live)."""
    try:
        import fcntl
    except ImportError:
        return -1
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return -1
    return fd


def in_progress(store: CheckpointStore, item: InterruptedApply) -> bool:
    """Whether the writer of a journal entry still runs (in this process, or holds its lock)."""
    with _ACTIVE_LOCK:
        if item.id in _ACTIVE:
            return True
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(journal_dir(store) / f"{item.id}.json", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return True  # gone meanwhile: finished
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock this call took
    return False


def new_id() -> str:
    return f"j{uuid.uuid4().hex[:16]}"
