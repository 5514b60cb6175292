"""Proposed file changes, their review, atomic application, checkpoints and undo.

A robot never writes a file itself. The file tools (:mod:`workspace.tools.files`) add
each write to the run's :class:`ChangeSet`; nothing touches disk until the user has
decided, hunk by hunk:

>>> changes = ChangeSet(folder)                       # one per run (Robot does this)
>>> # ... the robot proposes edits through the tools ...
>>> for hunk in changes.hunks():                      # navigation order
...     changes.accept(hunk.id)                       # or reject(id, reason=...), edit_hunk(id, text)
>>> result = changes.apply()                          # atomic per file; refuses on conflicts
>>> note = changes.take_outcome_message()             # what the next model turn must be told

Guarantees:

- **Reject really reverts**: a file none of whose hunks is accepted is not written at
  all, so it stays byte-identical. Pending hunks count as rejected when applying.
- **Atomic per file**: temp file in the same folder, fsync, ``os.replace``, the old
  permissions kept, the result read back and verified. If a write fails, the files
  already written are restored, so a failing apply leaves every file as it was; a
  crash (power loss, kill) leaves each file either old or new, never half-written.
- **Conflicts**: if a file changed on disk after the proposal, :meth:`ChangeSet.apply`
  writes nothing and returns :class:`Conflict` objects with the three versions (base,
  disk, proposed); :meth:`ChangeSet.rebase` or ``apply(on_conflict="skip")`` resolve it.
- **Checkpoints before and after** every applied set (content-addressed snapshots under
  ``paths.data_dir()/checkpoints``), undo that restores the files byte for byte, and
  redo of the undo (:class:`ChangeHistory`, one per conversation thread), plus the net
  diff of everything a thread changed.
- **The model is told the outcome** (:meth:`ChangeSet.take_outcome_message`), including
  the user's reasons and edits.

Untouched bytes survive: line endings (CRLF, CR), a missing final newline, byte-order
marks and non-UTF-8 encodings are kept because merging works on exact lines; binary
files can be created, deleted and renamed as whole files, never merged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.diffing import (
    TextFormat,
    changed_blocks,
    pair_lines,
    sniff,
    split_lines,
    strip_eol,
    unified_diff,
)
from workspace.errors import SandboxError
from workspace.sandbox import Sandbox

if TYPE_CHECKING:
    from workspace.diffing import InlinePair
    from workspace.events import ChangeDecided

MODES = ("review", "auto", "readonly")
PENDING, ACCEPTED, REJECTED = "pending", "accepted", "rejected"

#: Above this many bytes a file is not diffed line by line (one whole-file hunk instead).
MAX_DIFF_BYTES = 32 * 1024 * 1024


class ReadOnlyError(SandboxError):
    """A write proposed while the change set is in read-only mode."""


class ChangeError(SandboxError):
    """A proposal that cannot be represented (the message says what to do instead)."""


# ------------------------------------------------------------------------------------------------
# Low-level file operations


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_file_state(path: Path) -> tuple[bytes | None, int | None]:
    """(bytes, permission bits) of a regular file, or (None, None) when there is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None, None
    except NotADirectoryError:
        return None, None
    if not stat.S_ISREG(st.st_mode):
        return None, None
    with open(path, "rb") as fh:
        return fh.read(), stat.S_IMODE(st.st_mode)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, mode: int | None = None, sync: bool = True,
                 dirs: set[Path] | None = None) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and ``os.replace``.

    ``mode`` keeps an existing file's permission bits; new files get the default
    permissions (0o666 minus the umask). The temp file never survives a failure.
    With ``sync`` the data and the folder entry are fsync'd; pass a set as ``dirs`` to
    collect the folders instead and fsync each once later (:func:`sync_dirs`).
    """
    directory = path.parent
    tmp = directory / f".{path.name}.{uuid.uuid4().hex[:8]}.robotlab-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if mode is not None:
                os.fchmod(fd, mode)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync:
        if dirs is not None:
            dirs.add(directory)
        else:
            _fsync_dir(directory)


def sync_dirs(dirs: Iterable[Path]) -> None:
    for directory in dirs:
        _fsync_dir(directory)


def _makedirs(sandbox: Sandbox, directory: Path) -> list[str]:
    """Create missing parent folders inside the sandbox; return the ones created (outermost first)."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    created: list[str] = []
    for folder in reversed(missing):
        if not sandbox.contains(folder.parent):
            raise SandboxError(f"'{folder}' would be created outside the opened folder")
        os.mkdir(folder)
        created.append(sandbox.relative(folder))
    if not directory.is_dir():
        raise ChangeError(f"'{sandbox.relative(directory)}' exists and is not a folder; choose another path")
    return created


# ------------------------------------------------------------------------------------------------
# Hunks and file changes


@dataclass(eq=False, slots=True)
class Hunk:
    """One place that changed in a file, decided on its own.

    ``kind`` is ``"lines"`` (a block of lines; ``old_start``/``old_end`` index the
    base's lines, ``new_start``/``new_end`` the proposal's, 0-based, end exclusive),
    ``"rename"`` (the file moves to ``FileChange.new_path``) or ``"file"`` (the whole
    file at once: binary files, empty files).
    """

    id: str
    path: str
    kind: str
    index: int
    old_start: int = 0
    old_end: int = 0
    new_start: int = 0
    new_end: int = 0
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)
    status: str = PENDING
    #: The user's reason for rejecting (or a note on an acceptance).
    reason: str | None = None
    #: The user's replacement for ``new_lines`` (set by :meth:`ChangeSet.edit_hunk`).
    edited_lines: list[str] | None = None
    #: False when the hunk was rejected only because nobody decided before applying.
    reviewed: bool = True
    _inline: list[InlinePair] | None = None

    @property
    def edited(self) -> bool:
        return self.edited_lines is not None

    @property
    def final_lines(self) -> list[str]:
        """The lines this hunk puts in the file when accepted (the user's edit if any)."""
        return self.edited_lines if self.edited_lines is not None else self.new_lines

    @property
    def added(self) -> int:
        return len(self.final_lines) if self.kind == "lines" else 0

    @property
    def removed(self) -> int:
        return len(self.old_lines) if self.kind == "lines" else 0

    @property
    def number(self) -> int:
        """1-based position in the file (what people and models are told)."""
        return self.index + 1

    @property
    def decided(self) -> bool:
        return self.status != PENDING

    def header(self) -> str:
        """``@@ -a,b +c,d @@`` (line numbers 1-based, as in a unified diff)."""
        if self.kind != "lines":
            return f"@@ {self.kind} @@"

        def rng(start: int, count: int) -> str:
            first = start + 1 if count else start
            return f"{first}" if count == 1 else f"{first},{count}"

        return f"@@ -{rng(self.old_start, self.old_end - self.old_start)} +" \
               f"{rng(self.new_start, self.new_end - self.new_start)} @@"

    def where(self) -> str:
        """Human location in the base file: ``line 7``, ``lines 7-9``, ``after line 6``."""
        if self.kind == "rename":
            return "the rename"
        if self.kind == "file":
            return "the whole file"
        if self.old_end > self.old_start:
            if self.old_end - self.old_start == 1:
                return f"line {self.old_start + 1}"
            return f"lines {self.old_start + 1}-{self.old_end}"
        return "the start of the file" if self.old_start == 0 else f"after line {self.old_start}"

    def inline(self) -> list[InlinePair]:
        """Paired old/new lines with the changed character spans (computed on first use)."""
        if self._inline is None:
            self._inline = pair_lines(self.old_lines, self.final_lines) if self.kind == "lines" else []
        return self._inline

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "index": self.index, "kind": self.kind, "status": self.status,
            "reason": self.reason, "edited": self.edited, "reviewed": self.reviewed,
            "old_start": self.old_start + 1, "old_count": self.old_end - self.old_start,
            "new_start": self.new_start + 1, "new_count": self.new_end - self.new_start,
            "added": self.added, "removed": self.removed,
        }
        if self.edited_lines is not None:
            out["final_text"] = "".join(strip_eol(x) + "\n" for x in self.edited_lines)
        return out

    def _key(self) -> tuple[Any, ...]:
        return (self.kind, self.old_start, self.old_end, tuple(self.old_lines), tuple(self.new_lines))


@dataclass(slots=True)
class Merge:
    """What applying a file's decided hunks produces."""

    #: The path the content ends up at (``new_path`` if the rename was accepted).
    target: str
    #: The content (None: the file is gone).
    data: bytes | None
    #: Anything to write or move at all.
    changed: bool
    #: At least one hunk accepted.
    accepted: bool


@dataclass(eq=False)
class FileChange:
    """One file's proposed change: the base (disk at proposal time), the proposal, its hunks.

    ``action`` is ``create``, ``modify``, ``delete`` or ``rename``. ``state`` moves from
    ``pending`` to ``applied`` (something accepted was written), ``rejected`` (nothing
    accepted, nothing written), ``conflict`` (skipped because the file changed on disk)
    or ``failed`` (auto mode only: the immediate write failed; nothing was changed).
    """

    id: str
    path: str
    before: bytes | None
    after: bytes | None
    new_path: str | None = None
    before_mode: int | None = None
    state: str = PENDING
    #: A file-level note: the user's reason for rejecting the whole file, or a conflict's cause.
    reason: str | None = None
    tool_ids: list[str] = field(default_factory=list)
    #: The user replaced the proposed text of the whole file (:meth:`ChangeSet.set_file_text`).
    user_edited: bool = False
    conflict: Conflict | None = None
    format: TextFormat | None = None
    old_lines: list[str] | None = None
    new_lines: list[str] | None = None
    hunks: list[Hunk] = field(default_factory=list)
    _counter: int = 0
    before_hash: str | None = None

    def __post_init__(self) -> None:
        self.before_hash = sha256(self.before) if self.before is not None else None
        self.recompute()

    # -- description --------------------------------------------------------------------------
    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        if self.new_path is not None:
            return "rename"
        if self.after is None:
            return "delete"
        return "modify"

    @property
    def target(self) -> str:
        """The path the proposal puts the file at."""
        return self.new_path or self.path

    @property
    def display_path(self) -> str:
        return f"{self.path} → {self.new_path}" if self.new_path else self.path

    @property
    def binary(self) -> bool:
        return self.format is None

    @property
    def added(self) -> int:
        return sum(h.added for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(h.removed for h in self.hunks)

    @property
    def pending(self) -> bool:
        return self.state == PENDING

    def counts(self) -> dict[str, int]:
        out = {PENDING: 0, ACCEPTED: 0, REJECTED: 0}
        for h in self.hunks:
            out[h.status] += 1
        return {"hunks": len(self.hunks), **out, "added": self.added, "removed": self.removed}

    # -- hunks --------------------------------------------------------------------------------
    def _next_id(self) -> str:
        self._counter += 1
        return f"{self.id}.h{self._counter}"

    def recompute(self) -> None:
        """(Re)build the hunks from before/after, keeping decisions on hunks that did not change."""
        previous = {h._key(): h for h in self.hunks}
        fmt = sniff(self.before) if self.before is not None else (
            sniff(self.after) if self.after is not None else TextFormat())
        old_text = new_text = None
        if fmt is not None:
            try:
                old_text = fmt.decode(self.before) if self.before is not None else ""
                new_text = fmt.decode(self.after) if self.after is not None else ""
                if self.after is not None and fmt.encode(new_text) != self.after:
                    fmt = None
            except (UnicodeDecodeError, UnicodeEncodeError):
                fmt = None
        size = max(len(self.before or b""), len(self.after or b""))
        self.format = fmt
        hunks: list[Hunk] = []

        def make(kind: str, **kw: Any) -> Hunk:
            hunk = Hunk(id="", path=self.path, kind=kind, index=len(hunks), **kw)
            old = previous.pop(hunk._key(), None)
            if old is not None:
                hunk.id, hunk.status, hunk.reason = old.id, old.status, old.reason
                hunk.edited_lines, hunk.reviewed = old.edited_lines, old.reviewed
            else:
                hunk.id = self._next_id()
            hunks.append(hunk)
            return hunk

        if self.new_path is not None:
            make("rename", old_lines=[self.path], new_lines=[self.new_path])
        if fmt is None or old_text is None or new_text is None or size > MAX_DIFF_BYTES:
            self.old_lines = self.new_lines = None
            if self.before != self.after:
                make("file")
        else:
            self.old_lines = split_lines(old_text)
            self.new_lines = split_lines(new_text)
            for _, i1, i2, j1, j2 in changed_blocks(self.old_lines, self.new_lines):
                make("lines", old_start=i1, old_end=i2, new_start=j1, new_end=j2,
                     old_lines=self.old_lines[i1:i2], new_lines=self.new_lines[j1:j2])
            if not any(h.kind == "lines" for h in hunks) and (self.before is None) != (self.after is None):
                make("file")  # creating or deleting an empty file
        self.hunks = hunks

    def hunk(self, hunk_id: str) -> Hunk:
        for h in self.hunks:
            if h.id == hunk_id:
                return h
        raise KeyError(f"No hunk {hunk_id!r} in {self.path}")

    def context(self, hunk: Hunk, lines: int = 3) -> tuple[list[str], list[str]]:
        """Unchanged base lines just before and after a ``lines`` hunk (for the view)."""
        if hunk.kind != "lines" or self.old_lines is None:
            return [], []
        return (self.old_lines[max(0, hunk.old_start - lines): hunk.old_start],
                self.old_lines[hunk.old_end: hunk.old_end + lines])

    # -- merging ------------------------------------------------------------------------------
    def merge(self, *, pending: str = REJECTED) -> Merge:
        """The result of the decided hunks (``pending`` hunks count as ``pending``)."""

        def ok(h: Hunk) -> bool:
            status = h.status if h.status != PENDING else pending
            return status == ACCEPTED

        rename_ok = any(h.kind == "rename" and ok(h) for h in self.hunks)
        target = self.new_path if (rename_ok and self.new_path) else self.path
        content = [h for h in self.hunks if h.kind != "rename"]
        accepted = rename_ok or any(ok(h) for h in content)
        data: bytes | None
        if not content:
            data = self.before
        elif content[0].kind == "file":
            h = content[0]
            if ok(h) and h.edited_lines is not None:
                data = self._encode("".join(h.edited_lines))
            else:
                data = self.after if ok(h) else self.before
        elif all(ok(h) and not h.edited for h in content):
            data = self.after
        elif not any(ok(h) for h in content):
            data = self.before
        else:
            assert self.old_lines is not None
            out: list[str] = []
            i = 0
            for h in content:
                out.extend(self.old_lines[i:h.old_start])
                out.extend(h.final_lines if ok(h) else h.old_lines)
                i = h.old_end
            out.extend(self.old_lines[i:])
            data = self._encode("".join(out))
        changed = target != self.path or data != self.before
        return Merge(target=target, data=data, changed=changed, accepted=accepted)

    def _encode(self, text: str) -> bytes:
        fmt = self.format or TextFormat()
        return fmt.encode(text)

    def text(self, which: str = "after") -> str | None:
        """Decoded ``before``/``after``/``merged`` text (None if absent or binary)."""
        data = {"before": self.before, "after": self.after}.get(which)
        if which == "merged":
            data = self.merge().data
        if data is None or self.format is None:
            return None
        return self.format.decode(data)

    def unified_diff(self, *, merged: bool = False, context: int = 3) -> str:
        """The proposal (or, with ``merged``, the decided result) as a unified diff."""
        old_name = f"a/{self.path}" if self.before is not None else "/dev/null"
        after = self.merge().data if merged else self.after
        target = self.merge().target if merged else self.target
        new_name = f"b/{target}" if after is not None else "/dev/null"
        head = ""
        if target != self.path:
            head = f"rename from {self.path}\nrename to {target}\n"
        if self.format is None:
            if self.before == after:
                return head
            return head + f"Binary files {old_name} and {new_name} differ\n"
        old = self.old_lines or []
        if not merged and self.new_lines is not None:
            new = self.new_lines
            opcodes = [("replace", h.old_start, h.old_end, h.new_start, h.new_end)
                       for h in self.hunks if h.kind == "lines"]
            body = unified_diff(old, new, old_name=old_name, new_name=new_name, context=context, opcodes=opcodes)
        else:
            new = split_lines(self.format.decode(after)) if after is not None else []
            body = unified_diff(old, new, old_name=old_name, new_name=new_name, context=context)
        if not body and self.before is None and after is not None:
            body = f"--- /dev/null\n+++ {new_name}\n"  # an empty new file
        if not body and after is None and self.before is not None:
            body = f"--- {old_name}\n+++ /dev/null\n"
        return head + body

    # -- reporting ----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """One ``ChangeProposed.files`` entry."""
        out: dict[str, Any] = {"id": self.id, "path": self.path, "action": self.action,
                               "hunks": len(self.hunks), "added": self.added, "removed": self.removed}
        if self.new_path:
            out["new_path"] = self.new_path
        if self.binary:
            out["binary"] = True
        return out

    def outcome(self) -> dict[str, Any]:
        """One ``ChangeDecided.outcome`` entry (hunk indexes are 0-based positions in ``hunks``)."""
        reasons = [h.reason for h in self.hunks if h.status == REJECTED and h.reason]
        reason = self.reason or ("; ".join(dict.fromkeys(reasons)) if reasons else None)
        out: dict[str, Any] = {
            "path": self.path,
            "action": self.action,
            "status": self.state,
            "accepted": [h.index for h in self.hunks if h.status == ACCEPTED],
            "rejected": [h.index for h in self.hunks if h.status == REJECTED],
            "edited": [h.index for h in self.hunks if h.edited],
            "reason": reason,
            "hunks": [h.to_dict() for h in self.hunks],
        }
        if self.new_path:
            out["new_path"] = self.new_path
        if self.user_edited:
            out["user_edited"] = True
        return out


@dataclass(slots=True)
class Conflict:
    """A file that changed on disk after the proposal: the three versions, for a three-way view."""

    path: str
    #: What the proposal was made against (None: the file did not exist).
    base: bytes | None
    #: What is on disk now (None: the file is gone).
    disk: bytes | None
    #: What applying the accepted hunks would write (None: delete).
    proposed: bytes | None
    message: str = ""
    file_id: str = ""

    def texts(self) -> tuple[str | None, str | None, str | None]:
        """The three versions decoded (None for absent or binary versions)."""

        def dec(data: bytes | None) -> str | None:
            if data is None:
                return None
            fmt = sniff(data)
            return fmt.decode(data) if fmt is not None else None

        return dec(self.base), dec(self.disk), dec(self.proposed)

    def to_dict(self) -> dict[str, Any]:
        base, disk, proposed = self.texts()
        return {"path": self.path, "message": self.message, "base": base, "disk": disk, "proposed": proposed}


@dataclass(slots=True)
class ApplyResult:
    """What :meth:`ChangeSet.apply` did."""

    applied: list[FileChange] = field(default_factory=list)
    rejected: list[FileChange] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    #: Conflicting files left out (``on_conflict="skip"``).
    skipped: list[FileChange] = field(default_factory=list)
    error: str | None = None
    #: The checkpoint taken right before writing (restore point) and right after.
    checkpoint_id: str | None = None
    after_checkpoint_id: str | None = None
    #: The :class:`ChangeHistory` entry (undo / redo it by id).
    entry_id: str | None = None
    outcome: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing refused: no conflict stopped the apply and no write failed."""
        return self.error is None and not (self.conflicts and not self.skipped)

    @property
    def settled(self) -> list[FileChange]:
        return [*self.applied, *self.rejected, *self.skipped]

    def message(self) -> str:
        return format_outcome(self.outcome) if self.outcome else (self.error or "")


@dataclass(frozen=True, slots=True)
class ReviewCounts:
    files: int
    hunks: int
    pending: int
    accepted: int
    rejected: int
    added: int
    removed: int


# ------------------------------------------------------------------------------------------------
# Checkpoints


@dataclass(frozen=True, slots=True)
class FileState:
    """A file's content (by hash in the blob store) and permission bits."""

    hash: str
    mode: int | None = None
    size: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"hash": self.hash, "mode": self.mode, "size": self.size}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileState:
        return cls(str(data["hash"]), data.get("mode"), int(data.get("size", 0)))


@dataclass(slots=True)
class Checkpoint:
    """The state of some files of a folder at one moment (None: the file did not exist)."""

    id: str
    folder: str
    files: dict[str, FileState | None]
    kind: str = "before"
    label: str = ""
    thread_id: str | None = None
    change_set_id: str | None = None
    created: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "folder": self.folder, "kind": self.kind, "label": self.label,
                "thread_id": self.thread_id, "change_set_id": self.change_set_id, "created": self.created,
                "files": {p: (s.to_dict() if s else None) for p, s in self.files.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        files = {str(p): (FileState.from_dict(s) if s else None) for p, s in dict(data["files"]).items()}
        return cls(id=str(data["id"]), folder=str(data["folder"]), files=files, kind=str(data.get("kind", "")),
                   label=str(data.get("label", "")), thread_id=data.get("thread_id"),
                   change_set_id=data.get("change_set_id"), created=float(data.get("created", 0.0)))


class CheckpointStore:
    """Content-addressed file snapshots on disk, deduplicated by SHA-256.

    Layout under ``root``: ``packs/<id>.pack`` (the contents new in one checkpoint,
    concatenated), ``packs/index`` (``hash pack offset size`` lines, append-only),
    ``blobs/ab/cdef…`` (single contents stored with :meth:`put`) and
    ``points/<id>.json`` (the checkpoints). A checkpoint's contents are written and
    fsync'd — one file, one fsync — before its record and before any file of the
    folder changes, so a "before" checkpoint survives a crash of the apply.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        if root is None:
            from workspace import paths

            root = paths.data_dir() / "checkpoints"
        self.root = Path(root)
        self._lock = threading.RLock()
        self._index: dict[str, tuple[str, int, int]] | None = None

    def _blob_path(self, digest: str) -> Path:
        return self.root / "blobs" / digest[:2] / digest[2:]

    def _packs(self) -> Path:
        return self.root / "packs"

    def _load_index(self) -> dict[str, tuple[str, int, int]]:
        if self._index is None:
            index: dict[str, tuple[str, int, int]] = {}
            try:
                text = (self._packs() / "index").read_text(encoding="ascii", errors="replace")
            except FileNotFoundError:
                text = ""
            for line in text.splitlines():
                parts = line.split()
                if len(parts) == 4 and len(parts[0]) == 64 and parts[2].isdigit() and parts[3].isdigit():
                    index.setdefault(parts[0], (parts[1], int(parts[2]), int(parts[3])))
            self._index = index
        return self._index

    def has(self, digest: str) -> bool:
        with self._lock:
            return digest in self._load_index() or self._blob_path(digest).exists()

    def put(self, data: bytes, *, sync: bool = True) -> str:
        """Store one content (as a single file); returns its hash."""
        digest = sha256(data)
        if not self.has(digest):
            path = self._blob_path(digest)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data, sync=sync)
        return digest

    def put_many(self, contents: Iterable[bytes]) -> list[str]:
        """Store several contents at once (one pack file, one fsync); returns their hashes."""
        items = [(sha256(data), data) for data in contents]
        with self._lock:
            index = self._load_index()
            fresh: dict[str, bytes] = {}
            for digest, data in items:
                if digest not in index and digest not in fresh and not self._blob_path(digest).exists():
                    fresh[digest] = data
            if fresh:
                packs = self._packs()
                packs.mkdir(parents=True, exist_ok=True)
                name = f"p{uuid.uuid4().hex[:16]}"
                entries = []
                offset = 0
                for digest, data in fresh.items():
                    entries.append((digest, offset, len(data)))
                    offset += len(data)
                atomic_write(packs / f"{name}.pack", b"".join(fresh.values()))
                lines = "".join(f"{d} {name} {o} {n}\n" for d, o, n in entries).encode("ascii")
                fd = os.open(packs / "index", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
                try:
                    os.write(fd, lines)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                for d, o, n in entries:
                    index[d] = (name, o, n)
        return [digest for digest, _ in items]

    def get(self, digest: str) -> bytes:
        """A stored content by hash, verified."""
        with self._lock:
            where = self._load_index().get(digest)
        path = self._blob_path(digest)
        try:
            if where is not None and not path.exists():
                name, offset, size = where
                path = self._packs() / f"{name}.pack"
                with open(path, "rb") as fh:
                    fh.seek(offset)
                    data = fh.read(size)
            else:
                data = path.read_bytes()
        except FileNotFoundError:
            raise ChangeError(f"The checkpoint store lost the content {digest[:12]} ({path}); it cannot be restored") \
                from None
        if sha256(data) != digest:
            raise ChangeError(f"The checkpoint content {digest[:12]} is damaged ({path}); it cannot be restored")
        return data

    def save(self, checkpoint: Checkpoint) -> Checkpoint:
        path = self.root / "points" / f"{checkpoint.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(checkpoint.to_dict(), ensure_ascii=False, indent=1).encode())
        return checkpoint

    def load(self, checkpoint_id: str) -> Checkpoint:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", checkpoint_id or ""):
            raise KeyError(f"Invalid checkpoint id {checkpoint_id!r}")
        path = self.root / "points" / f"{checkpoint_id}.json"
        try:
            return Checkpoint.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise KeyError(f"No checkpoint {checkpoint_id!r} in {self.root}") from None

    def record(self, folder: Path, states: dict[str, tuple[bytes | None, int | None]], *, kind: str,
               label: str = "", thread_id: str | None = None, change_set_id: str | None = None) -> Checkpoint:
        """Store these file contents as a checkpoint (blobs first, then the record)."""
        present = [(rel, data, mode) for rel, (data, mode) in states.items() if data is not None]
        digests = self.put_many(data for _, data, _ in present)
        files: dict[str, FileState | None] = {rel: None for rel, (data, _) in states.items() if data is None}
        for (rel, data, mode), digest in zip(present, digests, strict=True):
            files[rel] = FileState(digest, mode, len(data))
        files = {rel: files[rel] for rel in states}
        checkpoint = Checkpoint(id=f"ck{uuid.uuid4().hex[:16]}", folder=str(folder), files=files, kind=kind,
                                label=label, thread_id=thread_id, change_set_id=change_set_id)
        return self.save(checkpoint)

    def capture(self, folder: Path, rels: Iterable[str], **kw: Any) -> Checkpoint:
        """Checkpoint the current disk state of these files (folder-relative names)."""
        sandbox = Sandbox(folder)
        states = {rel: read_file_state(sandbox.abspath(rel)) for rel in rels}
        return self.record(sandbox.root, states, **kw)

    def state_bytes(self, state: FileState | None) -> bytes | None:
        return None if state is None else self.get(state.hash)


def _disk_matches(sandbox: Sandbox, rel: str, state: FileState | None) -> bool:
    data, _ = read_file_state(sandbox.abspath(rel))
    if state is None:
        return data is None and not sandbox.abspath(rel).exists()
    return data is not None and sha256(data) == state.hash


def _write_states(sandbox: Sandbox, store: CheckpointStore, states: dict[str, FileState | None]) -> list[str]:
    """Make each file match its state (write atomically or delete); return the folders created."""
    created: list[str] = []
    dirs: set[Path] = set()
    try:
        for rel, state in states.items():
            _write_state(sandbox, store, rel, state, created, dirs)
    finally:
        sync_dirs(dirs)
    return created


def _write_state(sandbox: Sandbox, store: CheckpointStore, rel: str, state: FileState | None, created: list[str],
             dirs: set[Path]) -> None:
    path = sandbox.check_still_inside(rel)
    if state is None:
        if path.exists() or path.is_symlink():
            os.unlink(path)
            dirs.add(path.parent)
        return
    data = store.get(state.hash)
    current, _ = read_file_state(path)
    if current is not None and sha256(current) == state.hash:
        if state.mode is not None and stat.S_IMODE(os.stat(path).st_mode) != state.mode:
            os.chmod(path, state.mode)
        return
    created += _makedirs(sandbox, path.parent)
    atomic_write(path, data, mode=state.mode, dirs=dirs)


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
    def begin(self, before: dict[str, tuple[bytes | None, int | None]],
              after: dict[str, tuple[bytes | None, int | None]], *, change_set_id: str | None,
              summary: str, kind: str = "apply") -> HistoryEntry:
        """Checkpoint the files as they are and as they are about to be (durably, before any write)
        and record an entry in state "applying"; :meth:`finish` marks it applied.

        An entry left "applying" by a crash can still be undone: each of its files is
        either in the before or in the after state.
        """
        ids = []
        for kind_, states in (("before", before), ("after", after)):
            ids.append(self.store.record(self.folder, states, kind=kind_, label=summary, thread_id=self.thread_id,
                                         change_set_id=change_set_id).id)
        entry = HistoryEntry(id=f"ch{uuid.uuid4().hex[:16]}", folder=str(self.folder), before=ids[0], after=ids[1],
                             change_set_id=change_set_id, kind=kind, paths=sorted(set(before) | set(after)),
                             summary=summary)
        self._update(entry)
        return entry

    def finish(self, entry: HistoryEntry, *, created_dirs: Sequence[str] = ()) -> HistoryEntry:
        entry.state = "applied"
        entry.created_dirs = list(created_dirs)
        self._update(entry)
        return entry

    def fail(self, entry: HistoryEntry) -> None:
        entry.state = "failed"
        self._update(entry)

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
            result = self._restore(before, after, force=force, label=f"undo: {entry.summary}")
            result.entry = entry
            if result.ok:
                for rel in sorted(entry.created_dirs, key=lambda p: p.count("/"), reverse=True):
                    with contextlib.suppress(OSError):
                        os.rmdir(self.sandbox.abspath(rel))
                entry.state = "undone"
                self._update(entry)
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
            result = self._restore(after, before, force=force, label=f"redo: {entry.summary}")
            result.entry = entry
            if result.ok:
                entry.state = "applied"
                self._update(entry)
                result.message = f"Redid {entry.summary}" if entry.summary else "Redone."
            return result

    def restore(self, checkpoint_id: str, *, force: bool = False) -> RestoreResult:
        """Bring the files of any checkpoint back; the present state is checkpointed first (undoable)."""
        with self._lock:
            target = self.store.load(checkpoint_id)
            if Path(target.folder) != self.folder:
                return RestoreResult(False, message=f"Checkpoint {checkpoint_id} belongs to {target.folder}")
            states = {rel: read_file_state(self.sandbox.abspath(rel)) for rel in target.files}
            wanted = {rel: (self.store.state_bytes(s), s.mode if s else None) for rel, s in target.files.items()}
            entry = self.begin(states, wanted, change_set_id=target.change_set_id,
                               summary=f"restore of checkpoint {checkpoint_id}", kind="restore")
            try:
                created = _write_states(self.sandbox, self.store, target.files)
            except Exception as exc:
                current = self.store.load(entry.before)
                with contextlib.suppress(Exception):
                    _write_states(self.sandbox, self.store, current.files)
                self.fail(entry)
                return RestoreResult(False, entry, message=f"Could not restore: {exc}; nothing was changed")
            self.finish(entry, created_dirs=created)
            return RestoreResult(True, entry, restored=sorted(target.files),
                                 message=f"Restored {len(target.files)} file(s) from checkpoint {checkpoint_id}")

    def _restore(self, target: Checkpoint, expected: Checkpoint | None, *, force: bool,
                 label: str) -> RestoreResult:
        conflicts: list[Conflict] = []
        for rel, state in target.files.items():
            if _disk_matches(self.sandbox, rel, state):
                continue
            wanted = expected.files.get(rel) if expected is not None else None
            if expected is not None and _disk_matches(self.sandbox, rel, wanted):
                continue
            disk, _ = read_file_state(self.sandbox.abspath(rel))
            conflicts.append(Conflict(
                path=rel, base=self.store.state_bytes(wanted), disk=disk, proposed=self.store.state_bytes(state),
                message=f"{rel} changed after the checkpoint; restoring it would overwrite those changes",
            ))
        saved = None
        if conflicts and not force:
            names = ", ".join(c.path for c in conflicts)
            return RestoreResult(False, conflicts=conflicts,
                                 message=f"Not restored: {names} changed since; use force to overwrite")
        if conflicts:
            saved = self.store.capture(self.folder, [c.path for c in conflicts], kind="overwritten", label=label,
                                       thread_id=self.thread_id).id
        current = {rel: read_file_state(self.sandbox.abspath(rel)) for rel in target.files}
        try:
            _write_states(self.sandbox, self.store, target.files)
        except Exception as exc:
            undo = {rel: (None if d is None else FileState(self.store.put(d), m, len(d)))
                    for rel, (d, m) in current.items()}
            with contextlib.suppress(Exception):
                _write_states(self.sandbox, self.store, undo)
            return RestoreResult(False, message=f"Could not restore: {exc}; the files were left as they were")
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
        for n, (rel, state) in enumerate(sorted(base.items()), start=1):
            before = self.store.state_bytes(state)
            after, _ = read_file_state(self.sandbox.abspath(rel))
            if before == after:
                continue
            out.append(FileChange(id=f"n{n}", path=rel, before=before, after=after,
                                  before_mode=state.mode if state else None))
        return out

    def net_diff(self, *, context: int = 3) -> str:
        """"All changes in this thread" as one unified diff."""
        return "".join(fc.unified_diff(context=context) for fc in self.net_changes())


# ------------------------------------------------------------------------------------------------
# The change set


Listener = Callable[[str, "ChangeSet", dict[str, Any]], None]


class ChangeSet:
    """The file changes a run proposes, their review and their application.

    ``mode``: ``"review"`` (default: proposals wait for the user), ``"auto"`` (each
    proposal is applied at once, with a checkpoint) or ``"readonly"`` (proposals are
    refused). ``thread_id`` names the conversation whose :class:`ChangeHistory` records
    the applied sets (undo/redo, net diff); ``store`` is the checkpoint store (default:
    ``paths.data_dir()/checkpoints``).

    Thread-safe: tools propose from worker threads while a view may read and decide.
    """

    def __init__(self, folder: str | os.PathLike[str], *, mode: str = "review", id: str | None = None,
                 thread_id: str | None = None, store: CheckpointStore | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"Unknown review mode {mode!r}; use one of {', '.join(MODES)}")
        self.sandbox = Sandbox(folder)
        self.folder = self.sandbox.root
        self.mode = mode
        self.id = id or uuid.uuid4().hex[:12]
        self.thread_id = thread_id
        #: Set from the first proposing tool call (used for ChangeDecided events).
        self.run_id: str | None = None
        self.robot: str | None = None
        self._store = store
        self._history: ChangeHistory | None = None
        self._files: list[FileChange] = []
        self._counter = 0
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._undelivered: list[dict[str, Any]] = []
        self.last_result: ApplyResult | None = None

    def __repr__(self) -> str:
        return f"<ChangeSet {self.id} {self.mode} files={len(self._files)} pending={len(self.pending_files)}>"

    # -- collections ----------------------------------------------------------------------------
    @property
    def files(self) -> list[FileChange]:
        """Every file change of the set, settled ones included, in proposal order."""
        with self._lock:
            return list(self._files)

    @property
    def pending_files(self) -> list[FileChange]:
        with self._lock:
            return [f for f in self._files if f.state == PENDING]

    @property
    def lock(self) -> threading.RLock:
        """Held by each writing tool call from reading the file to proposing, so parallel tool calls
        of one turn that edit the same file compose instead of overwriting each other."""
        return self._lock

    @property
    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = CheckpointStore()
        return self._store

    @property
    def history(self) -> ChangeHistory:
        if self._history is None:
            self._history = ChangeHistory(self.folder, self.thread_id, store=self.store)
        return self._history

    def file(self, key: str) -> FileChange:
        """A file change by id, path or new path (pending ones first)."""
        with self._lock:
            for fc in [*self.pending_files, *self._files]:
                if key in (fc.id, fc.path, fc.new_path):
                    return fc
        raise KeyError(f"No proposed change for {key!r}")

    def hunks(self, *, pending_only: bool = False, include_settled: bool = False) -> list[Hunk]:
        """Hunks in navigation order (files in proposal order, hunks top to bottom)."""
        with self._lock:
            files = self._files if include_settled else self.pending_files
            return [h for f in files for h in f.hunks if not pending_only or h.status == PENDING]

    def hunk(self, hunk_id: str) -> Hunk:
        with self._lock:
            for fc in self._files:
                for h in fc.hunks:
                    if h.id == hunk_id:
                        return h
        raise KeyError(f"No hunk {hunk_id!r} in change set {self.id}")

    def file_of(self, hunk_id: str) -> FileChange:
        with self._lock:
            for fc in self._files:
                if any(h.id == hunk_id for h in fc.hunks):
                    return fc
        raise KeyError(f"No hunk {hunk_id!r} in change set {self.id}")

    def next_hunk(self, current: str | None = None, *, undecided: bool = False) -> Hunk | None:
        """The hunk after ``current`` (``]c``), wrapping; ``undecided`` skips decided ones."""
        return self._step(current, 1, undecided)

    def prev_hunk(self, current: str | None = None, *, undecided: bool = False) -> Hunk | None:
        """The hunk before ``current`` (``[c``), wrapping."""
        return self._step(current, -1, undecided)

    def _step(self, current: str | None, delta: int, undecided: bool) -> Hunk | None:
        order = self.hunks()
        if not order:
            return None
        ids = [h.id for h in order]
        start = ids.index(current) if current in ids else (-1 if delta > 0 else 0)
        for k in range(1, len(order) + 1):
            h = order[(start + delta * k) % len(order)]
            if not undecided or h.status == PENDING:
                return h
        return None

    def counts(self) -> ReviewCounts:
        with self._lock:
            hunks = self.hunks()
            return ReviewCounts(
                files=len(self.pending_files), hunks=len(hunks),
                pending=sum(h.status == PENDING for h in hunks),
                accepted=sum(h.status == ACCEPTED for h in hunks),
                rejected=sum(h.status == REJECTED for h in hunks),
                added=sum(h.added for h in hunks), removed=sum(h.removed for h in hunks),
            )

    # -- listeners ------------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(what, change_set, detail)`` on every change; returns the unsubscriber.

        ``what`` is ``proposed``, ``decided``, ``edited``, ``applied``, ``conflict`` or
        ``rebased``. Listeners run on the thread that made the change (tools run in
        worker threads): a Qt view must hop to the GUI thread itself.
        """
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def _notify(self, what: str, **detail: Any) -> None:
        for listener in list(self._listeners):
            try:
                listener(what, self, detail)
            except Exception:  # a view's bug must never break a tool call
                import logging

                logging.getLogger("workspace.changes").exception("change-set listener failed")

    # -- the proposed state (what tools read) ------------------------------------------------------
    def _lookup(self, rel: str) -> tuple[FileChange | None, str]:
        for fc in self._files:
            if fc.state != PENDING:
                continue
            if fc.target == rel:
                return fc, "self"
            if fc.new_path is not None and fc.path == rel:
                return fc, "source"
        return None, ""

    def _disk(self, rel: str) -> tuple[bytes | None, int | None]:
        path = self.sandbox.abspath(rel)
        if path.is_dir():
            raise ChangeError(f"'{rel}' is a folder; file tools change files only")
        return read_file_state(path)

    def read_bytes(self, path: str) -> bytes | None:
        """The file as this run's pending proposals leave it (disk if untouched; None if absent)."""
        rel = self._rel(path)
        with self._lock:
            fc, role = self._lookup(rel)
            if fc is not None:
                return fc.after if role == "self" else None
        return self._disk(rel)[0]

    def pending_change(self, path: str) -> FileChange | None:
        """The pending change that affects ``path`` (as its file, or as a rename's source)."""
        rel = self._rel(path)
        with self._lock:
            return self._lookup(rel)[0]

    def pending_paths(self) -> dict[str, str]:
        """``{path: "created" | "modified" | "deleted" | "renamed to X" | "renamed from X"}``."""
        out: dict[str, str] = {}
        with self._lock:
            for fc in self.pending_files:
                if fc.new_path is not None:
                    out[fc.path] = f"renamed to {fc.new_path}"
                    out[fc.new_path] = f"renamed from {fc.path}"
                else:
                    out[fc.path] = {"create": "created", "delete": "deleted"}.get(fc.action, "modified")
        return out

    def _rel(self, path: str) -> str:
        return self.sandbox.resolve(path).rel

    # -- proposing (the file tools call these) ------------------------------------------------------
    def _check_mode(self) -> None:
        if self.mode == "readonly":
            raise ReadOnlyError(
                "The folder is open read-only (review mode: read-only), so no file can be changed. "
                "Describe the change to the user instead; they can switch the review mode to apply changes"
            )

    def _new_file(self, rel: str, before: bytes | None, after: bytes | None, mode: int | None,
                  new_path: str | None = None) -> FileChange:
        self._counter += 1
        fc = FileChange(id=f"f{self._counter}", path=rel, before=before, after=after, before_mode=mode,
                        new_path=new_path)
        self._files.append(fc)
        return fc

    def _drop_if_empty(self, fc: FileChange) -> FileChange | None:
        if fc.new_path is None and fc.before == fc.after:
            self._files.remove(fc)
            return None
        return fc

    def _note_caller(self, tool_id: str | None, fc: FileChange | None, run_id: str | None,
                     robot: str | None) -> None:
        if fc is not None and tool_id and tool_id not in fc.tool_ids:
            fc.tool_ids.append(tool_id)
        if run_id and self.run_id is None:
            self.run_id = run_id
        if robot and self.robot is None:
            self.robot = robot

    def propose(self, path: str, data: bytes | None, *, tool_id: str | None = None, create: bool = False,
                run_id: str | None = None, robot: str | None = None) -> FileChange | None:
        """Propose ``path`` to have ``data`` (None: delete it). Returns the file's change (composed
        with this run's earlier proposals for it), or None when the net result is no change.

        ``create`` refuses when the file already exists (disk or pending). In ``auto``
        mode the change is applied at once; check ``FileChange.state``.
        """
        self._check_mode()
        rel = self.sandbox.resolve(path, for_write=True).rel
        with self._lock:
            fc, role = self._lookup(rel)
            if role == "source":
                assert fc is not None
                raise ChangeError(
                    f"'{rel}' is being renamed to '{fc.new_path}' by a change proposed in this run; change "
                    f"'{fc.new_path}' instead, or use another name"
                )
            if fc is None:
                disk, mode = self._disk(rel)
                if create and disk is not None:
                    raise ChangeError(f"'{rel}' already exists; use edit_file or write_file to change it")
                if data is None and disk is None:
                    raise ChangeError(f"'{rel}' does not exist, so it cannot be deleted; check the name with "
                                      "list_files")
                if disk == data:
                    return None
                fc = self._new_file(rel, disk, data, mode)
            else:
                if create and fc.after is not None:
                    raise ChangeError(f"'{rel}' already exists (proposed earlier in this run); use edit_file or "
                                      "write_file to change it")
                if data is None and fc.after is None:
                    raise ChangeError(f"'{rel}' is already deleted by a change proposed in this run")
                if data is None and fc.new_path is not None:
                    # Renamed earlier in the run, now deleted: delete the original instead.
                    fc.new_path = None
                fc.after = data
                fc.recompute()
                if self._drop_if_empty(fc) is None:
                    self._note_caller(tool_id, None, run_id, robot)
                    self._notify("proposed", path=rel, file=None)
                    return None
            self._note_caller(tool_id, fc, run_id, robot)
        self._notify("proposed", path=rel, file=fc)
        if self.mode == "auto":
            self._apply_now(fc)
        return fc

    def _apply_now(self, fc: FileChange) -> None:
        """Auto mode: apply one proposal at once (the tool result tells the model, so no outcome note)."""
        result = self.apply(files=[fc.id], accept_pending=True, on_conflict="skip", _tell=False)
        if fc.state == PENDING:  # the write failed: settle it so it is not retried silently later
            with self._lock:
                fc.state, fc.reason = "failed", result.error

    def propose_rename(self, path: str, new_path: str, *, tool_id: str | None = None,
                       run_id: str | None = None, robot: str | None = None) -> FileChange | None:
        """Propose moving a file (content kept, composed with this run's edits of it)."""
        self._check_mode()
        src = self.sandbox.resolve(path, for_write=True).rel
        dst = self.sandbox.resolve(new_path, for_write=True).rel
        if src == dst:
            raise ChangeError(f"'{path}' and '{new_path}' are the same file; give a different new_path")
        with self._lock:
            fc, role = self._lookup(src)
            if role == "source" or (fc is None and self._disk(src)[0] is None) or (fc and fc.after is None):
                raise ChangeError(f"'{src}' does not exist, so it cannot be renamed; check the name with list_files")
            if self.sandbox.abspath(dst).is_dir():
                raise ChangeError(f"'{dst}' is a folder; give the full new file name, e.g. '{dst}/{Path(src).name}'")
            other, other_role = self._lookup(dst)
            if other_role == "source" or (other is not None and other.after is None):
                what = "renamed away" if other_role == "source" else "deleted"
                raise ChangeError(f"'{dst}' is being {what} by a change proposed in this run; pick another name, or "
                                  f"write the new content to '{dst}' with write_file")
            if (other is not None and other.after is not None) or (other is None and self._disk(dst)[0] is not None):
                raise ChangeError(f"'{dst}' already exists; choose a new name that is free, or delete it first")
            if fc is None:
                disk, mode = self._disk(src)
                fc = self._new_file(src, disk, disk, mode, new_path=dst)
            elif fc.before is None:
                fc.path = dst  # created in this run: create it under the new name
            else:
                fc.new_path = None if dst == fc.path else dst
            fc.recompute()
            result = self._drop_if_empty(fc)
            self._note_caller(tool_id, result, run_id, robot)
        self._notify("proposed", path=dst, file=result)
        if result is not None and self.mode == "auto":
            self._apply_now(result)
        return result

    # -- decisions --------------------------------------------------------------------------------
    def _decide(self, hunk_ids: Iterable[str], status: str, reason: str | None) -> list[Hunk]:
        changed = []
        with self._lock:
            for hid in hunk_ids:
                h = self.hunk(hid)
                if self.file_of(hid).state != PENDING:
                    raise ChangeError(f"Hunk {hid} belongs to a change that was already settled")
                h.status = status
                h.reason = reason if status != PENDING else None
                h.reviewed = True
                if status == REJECTED:
                    h.edited_lines = None
                    h._inline = None
                changed.append(h)
        self._notify("decided", hunks=[h.id for h in changed], status=status)
        return changed

    def accept(self, *hunk_ids: str) -> None:
        self._decide(hunk_ids, ACCEPTED, None)

    def reject(self, *hunk_ids: str, reason: str | None = None) -> None:
        """Reject hunks; ``reason`` is passed to the model."""
        self._decide(hunk_ids, REJECTED, (reason or "").strip() or None)

    def reset(self, *hunk_ids: str) -> None:
        """Back to undecided (and drop any edit)."""
        with self._lock:
            for hid in hunk_ids:
                self.hunk(hid).edited_lines = None
                self.hunk(hid)._inline = None
        self._decide(hunk_ids, PENDING, None)

    def accept_file(self, key: str) -> None:
        self.accept(*[h.id for h in self.file(key).hunks])

    def reject_file(self, key: str, *, reason: str | None = None) -> None:
        fc = self.file(key)
        self.reject(*[h.id for h in fc.hunks], reason=reason)
        fc.reason = (reason or "").strip() or None

    def accept_all(self) -> None:
        self.accept(*[h.id for h in self.hunks()])

    def reject_all(self, *, reason: str | None = None) -> None:
        for fc in self.pending_files:
            self.reject_file(fc.id, reason=reason)

    def edit_hunk(self, hunk_id: str, text: str) -> Hunk:
        """Replace a hunk's proposed text with the user's and accept it.

        ``text`` may use any newline style; it is stored in the file's style, and a
        final newline is added when the hunk is followed by more lines.
        """
        with self._lock:
            fc = self.file_of(hunk_id)
            h = self.hunk(hunk_id)
            if h.kind == "rename":
                raise ChangeError("The rename itself cannot be edited; accept or reject it")
            fmt = fc.format
            if fmt is None:
                raise ChangeError(f"{fc.path} is a binary file; its content cannot be edited here")
            converted = fmt.with_newlines(text)
            bad = fmt.can_encode(converted)
            if bad is not None:
                raise ChangeError(f"{fc.path} is stored as {fmt.encoding}, which cannot hold {bad!r}; "
                                  "use characters that encoding supports")
            lines = split_lines(converted)
            at_end = h.kind == "file" or fc.old_lines is None or h.old_end >= len(fc.old_lines)
            if lines and not lines[-1].endswith(("\n", "\r")) and not at_end:
                lines[-1] += fmt.newline
            h.edited_lines = lines
            h._inline = None
            h.status = ACCEPTED
            h.reason = None
            h.reviewed = True
        self._notify("edited", hunks=[hunk_id])
        return h

    def set_file_text(self, key: str, text: str) -> FileChange:
        """Replace the whole proposed content of a file with the user's text; all its hunks accepted."""
        with self._lock:
            fc = self.file(key)
            if fc.state != PENDING:
                raise ChangeError(f"The change of {fc.path} was already settled")
            fmt = fc.format
            if fmt is None:
                raise ChangeError(f"{fc.path} is a binary file; its content cannot be edited here")
            converted = fmt.with_newlines(text)
            bad = fmt.can_encode(converted)
            if bad is not None:
                raise ChangeError(f"{fc.path} is stored as {fmt.encoding}, which cannot hold {bad!r}")
            fc.after = fmt.encode(converted)
            fc.user_edited = True
            fc.recompute()
            for h in fc.hunks:
                h.status, h.reason, h.edited_lines, h.reviewed = ACCEPTED, None, None, True
        self._notify("edited", file=fc.id)
        return fc

    # -- applying ---------------------------------------------------------------------------------
    def apply(self, *, files: Sequence[str] | None = None, accept_pending: bool = False,
              on_conflict: str = "refuse", _tell: bool = True) -> ApplyResult:
        """Write the accepted hunks of the pending files (or of ``files``: ids or paths).

        Undecided hunks count as rejected (``accept_pending`` accepts them instead).
        ``on_conflict``: ``"refuse"`` writes nothing when any file changed on disk
        since its proposal and returns the conflicts; ``"skip"`` settles those files as
        ``conflict`` (nothing written to them) and applies the others.
        """
        if on_conflict not in ("refuse", "skip"):
            raise ValueError("on_conflict must be 'refuse' or 'skip'")
        default = ACCEPTED if accept_pending else REJECTED
        with self._lock:
            chosen = [self.file(k) for k in files] if files is not None else self.pending_files
            chosen = [fc for fc in chosen if fc.state == PENDING]
            plan: list[tuple[FileChange, Merge]] = []
            conflicts: list[Conflict] = []
            conflicted: list[FileChange] = []
            for fc in chosen:
                merge = fc.merge(pending=default)
                if merge.changed:
                    problem = self._conflict(fc, merge)
                    if problem is not None:
                        conflicts.append(problem)
                        conflicted.append(fc)
                        continue
                plan.append((fc, merge))
            result = ApplyResult(conflicts=conflicts)
            for fc, problem in zip(conflicted, conflicts, strict=True):
                fc.conflict = problem
            if conflicts and on_conflict == "refuse":
                names = ", ".join(c.path for c in conflicts)
                result.error = (f"Nothing was applied: {names} changed on disk after the change was proposed. "
                                "Rebase the change on the current file, skip the file, or reject it")
                self.last_result = result
                self._notify("conflict", conflicts=[c.path for c in conflicts])
                return result
            writes = [(fc, m) for fc, m in plan if m.changed]
            if writes:
                error = self._write(writes, result)
                if error is not None:
                    result.error = error
                    self.last_result = result
                    return result
            # Settle: decisions become final.
            for fc, merge in plan:
                for h in fc.hunks:
                    if h.status == PENDING:
                        h.status, h.reviewed = default, False
                fc.state = "applied" if merge.accepted else REJECTED
                fc.conflict = None
                (result.applied if merge.accepted else result.rejected).append(fc)
            if on_conflict == "skip":
                for fc, problem in zip(conflicted, conflicts, strict=True):
                    fc.state = "conflict"
                    fc.reason = problem.message
                    result.skipped.append(fc)
            result.outcome = [fc.outcome() for fc in result.settled]
            if _tell:
                self._undelivered.extend(result.outcome)
            self.last_result = result
        self._notify("applied", files=[fc.id for fc in result.settled], checkpoint_id=result.checkpoint_id)
        return result

    def _conflict(self, fc: FileChange, merge: Merge) -> Conflict | None:
        def problem(message: str, disk: bytes | None) -> Conflict:
            return Conflict(path=fc.path, base=fc.before, disk=disk, proposed=merge.data, message=message,
                            file_id=fc.id)

        try:
            self.sandbox.check_still_inside(fc.path)
            if merge.target != fc.path:
                self.sandbox.check_still_inside(merge.target)
        except SandboxError as exc:
            return problem(str(exc), None)
        try:
            disk, _ = self._disk(fc.path)
        except ChangeError as exc:
            return problem(str(exc), None)
        if (sha256(disk) if disk is not None else None) != fc.before_hash:
            what = "was deleted" if disk is None else ("was created" if fc.before is None else "changed")
            return problem(f"{fc.path} {what} on disk after the change was proposed", disk)
        if merge.target != fc.path and self.sandbox.abspath(merge.target).exists():
            return problem(f"{merge.target} now exists on disk, so {fc.path} cannot be renamed to it", disk)
        return None

    def _write(self, writes: list[tuple[FileChange, Merge]], result: ApplyResult) -> str | None:
        """Checkpoint, write every file atomically, verify; on failure restore what was written."""
        touched: dict[str, tuple[bytes | None, int | None]] = {}
        planned: dict[str, tuple[bytes | None, int | None]] = {}
        for fc, merge in writes:
            if fc.before is not None:
                with contextlib.suppress(OSError):
                    fc.before_mode = stat.S_IMODE(os.stat(self.sandbox.abspath(fc.path)).st_mode)
            touched[fc.path] = (fc.before, fc.before_mode)
            planned[fc.path] = (None, None)
            if merge.target != fc.path:
                touched[merge.target] = (None, None)
            planned[merge.target] = (merge.data, fc.before_mode if merge.data is not None else None)
        summary = self._summary_line(writes)
        history = self.history
        entry = history.begin(touched, planned, change_set_id=self.id, summary=summary)
        result.checkpoint_id, result.entry_id = entry.before, entry.id
        done: list[str] = []
        created_dirs: list[str] = []
        dirs: set[Path] = set()
        try:
            for fc, merge in writes:
                target = self.sandbox.check_still_inside(merge.target)
                if merge.data is not None:
                    created_dirs += _makedirs(self.sandbox, target.parent)
                    done.append(merge.target)
                    atomic_write(target, merge.data, mode=fc.before_mode, dirs=dirs)
                    written, _ = read_file_state(target)
                    if written != merge.data:
                        raise OSError(f"{merge.target} did not read back as written")
                if merge.target != fc.path or merge.data is None:
                    source = self.sandbox.check_still_inside(fc.path)
                    done.append(fc.path)
                    if source.exists():
                        os.unlink(source)
                        dirs.add(source.parent)
            sync_dirs(dirs)
        except Exception as exc:
            restore_error = self._roll_back(done, touched, created_dirs)
            history.fail(entry)
            if restore_error:
                return (f"Applying failed at {done[-1] if done else 'the first file'}: {exc}. Restoring the files "
                        f"already written also failed ({restore_error}); every file is either old or new, and "
                        f"checkpoint {entry.before} holds the old versions")
            return f"Nothing was applied: writing {done[-1] if done else 'a file'} failed ({exc}); every file is " \
                   "unchanged"
        history.finish(entry, created_dirs=created_dirs)
        result.after_checkpoint_id = entry.after
        return None

    def _roll_back(self, done: list[str], touched: dict[str, tuple[bytes | None, int | None]],
                   created_dirs: list[str]) -> str | None:
        error = None
        for rel in reversed(done):
            data, mode = touched[rel]
            try:
                path = self.sandbox.abspath(rel)
                if data is None:
                    if path.exists():
                        os.unlink(path)
                else:
                    current, _ = read_file_state(path)
                    if current != data:
                        atomic_write(path, data, mode=mode)
            except Exception as exc:
                error = f"{rel}: {exc}"
        for rel in reversed(created_dirs):
            with contextlib.suppress(OSError):
                os.rmdir(self.sandbox.abspath(rel))
        return error

    def _summary_line(self, writes: list[tuple[FileChange, Merge]]) -> str:
        names = [fc.display_path for fc, _ in writes]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        who = f"{self.robot}: " if self.robot else ""
        return f"{who}{shown}"

    def discard(self, *, reason: str | None = None) -> ApplyResult:
        """Reject every pending change (nothing is written) and settle it."""
        self.reject_all(reason=reason)
        return self.apply()

    def rebase(self, key: str, *, text: str | None = None, overwrite: bool = False) -> FileChange | None:
        """Make a (conflicting) file's change start from what is on disk now.

        The proposal to keep is the conflict's ``proposed`` version (the accepted hunks)
        or, without a conflict, the whole proposal. By default it is merged three-way
        with the disk: both changes survive when they touch different lines, and
        :class:`ChangeError` is raised when they touch the same ones. ``overwrite``
        takes the proposal as it is; ``text`` is the user's own merge. Hunks are then
        recomputed against the disk (all accepted when they came from a conflict, the
        user's text or an overwrite). Returns None if nothing is left to change.
        """
        from workspace.diffing import merge3

        with self._lock:
            fc = self.file(key)
            if fc.state not in (PENDING, "conflict"):
                raise ChangeError(f"The change of {fc.path} was already settled")
            disk, mode = self._disk(fc.path)
            from_conflict = fc.conflict is not None
            proposed = fc.conflict.proposed if fc.conflict is not None else fc.after
            fmt = (sniff(disk) if disk is not None else None) or fc.format or TextFormat()
            if text is not None:
                new_after: bytes | None = fmt.encode(fmt.with_newlines(text))
            elif overwrite or proposed is None or disk is None or fc.before is None or fc.format is None:
                if not overwrite:
                    raise ChangeError(f"{fc.path} cannot be merged with its new state on disk; overwrite it with "
                                      "the proposal, give the merged text, or reject the change")
                new_after = proposed
            else:
                try:
                    base_lines = split_lines(fc.format.decode(fc.before))
                    disk_lines = split_lines(fc.format.decode(disk))
                    prop_lines = split_lines(fc.format.decode(proposed))
                except UnicodeDecodeError:
                    raise ChangeError(f"{fc.path} changed its encoding on disk; overwrite it with the proposal, "
                                      "give the merged text, or reject the change") from None
                merged = merge3(base_lines, disk_lines, prop_lines)
                if merged is None:
                    raise ChangeError(f"The disk and the proposal both changed the same lines of {fc.path}; "
                                      "overwrite it with the proposal, give the merged text, or reject the change")
                new_after = fc.format.encode("".join(merged))
            fc.after = new_after
            fc.before, fc.before_mode = disk, mode
            fc.before_hash = sha256(disk) if disk is not None else None
            fc.state, fc.conflict, fc.reason = PENDING, None, None
            fc.recompute()
            if text is not None or overwrite or from_conflict or fc.user_edited:
                for h in fc.hunks:
                    h.status, h.edited_lines, h.reason, h.reviewed = ACCEPTED, None, None, True
            result = self._drop_if_empty(fc)
        self._notify("rebased", file=fc.id)
        return result

    # -- persistence --------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready record of the set (contents go to the checkpoint store), to survive a restart.

        :meth:`from_snapshot` rebuilds it with the same ids and decisions, so a review
        interrupted by quitting the app can continue.
        """
        with self._lock:
            blobs = [data for fc in self._files for data in (fc.before, fc.after) if data is not None]
            self.store.put_many(blobs)
            files = []
            for fc in self._files:
                files.append({
                    "id": fc.id, "path": fc.path, "new_path": fc.new_path, "before_mode": fc.before_mode,
                    "before": sha256(fc.before) if fc.before is not None else None,
                    "after": sha256(fc.after) if fc.after is not None else None,
                    "state": fc.state, "reason": fc.reason, "tool_ids": list(fc.tool_ids),
                    "user_edited": fc.user_edited, "counter": fc._counter,
                    "hunks": [{"id": h.id, "status": h.status, "reason": h.reason, "reviewed": h.reviewed,
                               "edited_lines": h.edited_lines} for h in fc.hunks],
                })
            return {"id": self.id, "folder": str(self.folder), "mode": self.mode, "thread_id": self.thread_id,
                    "run_id": self.run_id, "robot": self.robot, "counter": self._counter, "files": files,
                    "undelivered": list(self._undelivered)}

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], *, store: CheckpointStore | None = None) -> ChangeSet:
        """The change set a :meth:`snapshot` recorded (same ids, decisions and pending outcome)."""
        changes = cls(data["folder"], mode=data.get("mode", "review"), id=data["id"],
                      thread_id=data.get("thread_id"), store=store)
        changes.run_id, changes.robot = data.get("run_id"), data.get("robot")
        changes._counter = int(data.get("counter", 0))
        changes._undelivered = list(data.get("undelivered", []))
        for entry in data.get("files", []):
            before = changes.store.get(entry["before"]) if entry.get("before") else None
            after = changes.store.get(entry["after"]) if entry.get("after") else None
            fc = FileChange(id=entry["id"], path=entry["path"], before=before, after=after,
                            new_path=entry.get("new_path"), before_mode=entry.get("before_mode"))
            fc.state, fc.reason = entry.get("state", PENDING), entry.get("reason")
            fc.tool_ids, fc.user_edited = list(entry.get("tool_ids", [])), bool(entry.get("user_edited"))
            fc._counter = int(entry.get("counter", fc._counter))
            saved = entry.get("hunks", [])
            if len(saved) == len(fc.hunks):
                for h, s in zip(fc.hunks, saved, strict=True):
                    h.id, h.status, h.reason = s["id"], s["status"], s.get("reason")
                    h.reviewed, h.edited_lines = bool(s.get("reviewed", True)), s.get("edited_lines")
            changes._files.append(fc)
        return changes

    # -- outcome ----------------------------------------------------------------------------------
    def outcome(self) -> list[dict[str, Any]]:
        """``ChangeDecided.outcome`` for every settled file of the set."""
        with self._lock:
            return [fc.outcome() for fc in self._files if fc.state != PENDING]

    def outcome_message(self) -> str | None:
        """What the model should be told about every settled file of the set (None: nothing settled)."""
        outcome = self.outcome()
        return format_outcome(outcome, change_set_id=self.id) if outcome else None

    def take_outcome_message(self) -> str | None:
        """The outcome not yet delivered to the model, once (then it counts as delivered).

        The session calls this before sending the next user message and puts the text
        in front of it (see :func:`compose_user_message`).
        """
        with self._lock:
            outcome, self._undelivered = self._undelivered, []
        return format_outcome(outcome, change_set_id=self.id) if outcome else None

    @property
    def has_undelivered_outcome(self) -> bool:
        return bool(self._undelivered)

    def summary(self, files: Iterable[FileChange] | None = None) -> list[dict[str, Any]]:
        """``ChangeProposed.files`` for the given (default: pending) files."""
        with self._lock:
            return [fc.summary() for fc in (files if files is not None else self.pending_files)]

    def decided_event(self, *, run_id: str | None = None, robot: str | None = None, seq: int = 0,
                      outcome: list[dict[str, Any]] | None = None,
                      checkpoint_id: str | None = None) -> ChangeDecided:
        """A ``change_decided`` event for the last apply (for the store and the UI)."""
        from workspace.events import ChangeDecided

        last = self.last_result
        return ChangeDecided(
            run_id=run_id or self.run_id or "", robot=robot or self.robot or "", seq=seq,
            change_set_id=self.id,
            outcome=outcome if outcome is not None else (last.outcome if last else self.outcome()),
            checkpoint_id=checkpoint_id if checkpoint_id is not None else (last.checkpoint_id if last else None),
        )

    def unified_diff(self, *, merged: bool = False, context: int = 3) -> str:
        """All pending files as one unified diff (``merged``: the decided result)."""
        return "".join(fc.unified_diff(merged=merged, context=context) for fc in self.pending_files)


# ------------------------------------------------------------------------------------------------
# Telling the model


def _hunk_phrase(h: dict[str, Any]) -> str:
    start, count = h["old_start"], h["old_count"]
    if h["kind"] == "rename":
        return "the rename"
    if h["kind"] == "file":
        return "the whole-file change"
    if count == 0:
        where = "at the start" if start <= 1 else f"after line {start - 1}"
    elif count == 1:
        where = f"line {start}"
    else:
        where = f"lines {start}-{start + count - 1}"
    return f"hunk {h['index'] + 1} ({where})"


def format_outcome(outcome: Sequence[dict[str, Any]], *, change_set_id: str | None = None,
                   max_edit_lines: int = 40) -> str:
    """The review outcome as text for the model: per file, what was accepted, rejected and why.

    ``outcome`` is a list of ``FileChange.outcome()`` dicts (what ``ChangeDecided``
    carries), so a session can rebuild the message from stored events alone.
    """
    head = "The user reviewed the file changes you proposed"
    head += f" (change set {change_set_id}):" if change_set_id else ":"
    lines = [head]
    for f in outcome:
        name = f["path"] + (f" → {f['new_path']}" if f.get("new_path") else "")
        hunks = f.get("hunks", [])
        status = f.get("status")
        action = f.get("action", "modify")
        if status in ("conflict", "failed"):
            cause = f.get("reason") or ("the file changed on disk meanwhile" if status == "conflict"
                                        else "it could not be written")
            lines.append(f"- {name}: NOT applied — {cause}. The file is as the user left it; read it again "
                         "before proposing a new change.")
            continue
        accepted = [h for h in hunks if h["status"] == ACCEPTED]
        rejected = [h for h in hunks if h["status"] == REJECTED and h.get("reviewed", True)]
        unreviewed = [h for h in hunks if h["status"] == REJECTED and not h.get("reviewed", True)]
        noun = {"create": "creation", "delete": "deletion", "rename": "rename"}.get(action, "edit")
        if accepted and not rejected and not unreviewed:
            edited = [h for h in accepted if h.get("edited")]
            if f.get("user_edited"):
                lines.append(f"- {name}: accepted after the user rewrote the proposed content; the file on "
                             "disk is the user's version.")
            elif edited:
                lines.append(f"- {name}: {noun} accepted and written; "
                             + ", ".join(_hunk_phrase(h) for h in edited) + " with the user's edits.")
            else:
                total = f" (all {len(accepted)} hunks)" if len(accepted) > 1 else ""
                lines.append(f"- {name}: {noun} accepted and written{total}.")
        elif not accepted:
            reason = f.get("reason")
            why = f' — reason: "{reason}"' if reason else " (no reason given)"
            if unreviewed and not rejected:
                lines.append(f"- {name}: {noun} NOT applied: the user did not accept it. The file is unchanged.")
            else:
                lines.append(f"- {name}: {noun} rejected{why}. The file is unchanged.")
        else:
            parts = []
            for h in hunks:
                phrase = _hunk_phrase(h)
                if h["status"] == ACCEPTED:
                    parts.append(f"{phrase} accepted" + (" with the user's edits" if h.get("edited") else ""))
                elif h.get("reviewed", True):
                    why = f' (reason: "{h["reason"]}")' if h.get("reason") else ""
                    parts.append(f"{phrase} rejected{why}")
                else:
                    parts.append(f"{phrase} not accepted")
            lines.append(f"- {name}: partly applied — " + "; ".join(parts)
                         + ". The file on disk contains only the accepted hunks.")
        for h in hunks:
            text = h.get("final_text")
            if h.get("edited") and text:
                shown = text.splitlines()[:max_edit_lines]
                lines.append(f"  The user's version of {_hunk_phrase(h)}:")
                lines.extend("    " + s for s in shown)
    lines.append("Read a file again before changing it further: the files on disk are the source of truth.")
    return "\n".join(lines)


def compose_user_message(note: str | None, message: str) -> str:
    """The next user message with the review outcome in front (what the session sends)."""
    if not note:
        return message
    return f"<change-review>\n{note}\n</change-review>\n\n{message}"


_NOTE = re.compile(r"\A<change-review>\n(.*?)\n</change-review>\n\n", re.DOTALL)


def split_user_message(text: str) -> tuple[str | None, str]:
    """``(review note or None, what the user typed)`` of a message built by :func:`compose_user_message`
    (the transcript shows the note as a separate, collapsible block)."""
    m = _NOTE.match(text)
    if m is None:
        return None, text
    return m.group(1), text[m.end():]


def compare_texts(old: str, new: str, *, name: str = "text") -> FileChange:
    """Hunks (with intra-line spans) between any two texts: two tool results, two runs' answers.

    The returned :class:`FileChange` is only a view model (nothing to apply): the same
    hunks, navigation and unified output as a file's review.
    """
    return FileChange(id="cmp", path=name, before=old.encode(), after=new.encode())


# ------------------------------------------------------------------------------------------------
# Reviewing in a terminal


AskFn = Callable[[str], Awaitable[str]]


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class _StdinLines:
    """Lines of standard input for terminal prompts, read so that a prompt never keeps the process alive.

    ``asyncio.to_thread(input, ...)`` cannot be interrupted: after Ctrl-C the executor's worker
    stays blocked in ``input()`` and ``asyncio.run`` (and the interpreter's exit) wait for it, so
    the command hangs. Here a *daemon* thread reads the raw file descriptor with ``os.read`` (it
    holds no lock of ``sys.stdin``, so finalisation never waits on it either) and the prompt awaits
    its future, which cancellation abandons at once. Bytes read past the end of a line are kept for
    the next prompt (answers piped in as ``y\\nn\\nreason\\n`` arrive in one read). End of input
    (a closed or empty pipe, ``/dev/null``, Ctrl-D) raises :class:`EOFError`, like ``input()``.
    """

    def __init__(self, fd: int | None = None) -> None:
        self._fd = fd
        self._read_from: int | None = None  # the descriptor the buffered bytes came from
        self._buffer = b""
        self._eof = False
        # At most one read in flight: a prompt cancelled mid-read leaves its read to the next prompt.
        self._filling: Any = None  # concurrent.futures.Future[None] | None

    def _fileno(self) -> int | None:
        if self._fd is not None:
            return self._fd
        import sys

        stream = sys.stdin
        if stream is None:
            return None
        try:
            return stream.fileno()
        except (OSError, ValueError, AttributeError):  # closed, or replaced by an object without a descriptor
            return None

    def _fill(self, fd: int | None) -> None:
        """In the daemon thread: read until the buffer holds a whole line or the input ends."""
        while b"\n" not in self._buffer and not self._eof:
            if fd is None:
                self._eof = True
                break
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EBADF, EIO (the terminal went away): no more answers
                chunk = b""
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    async def readline(self) -> str:
        import asyncio
        import concurrent.futures
        import sys

        if self._filling is not None and not self._filling.done():
            # A prompt cancelled mid-read left its read running: it is the next answer, and the
            # buffer is the thread's until it ends.
            await asyncio.wrap_future(self._filling)
        elif self._fileno() != self._read_from:  # stdin was replaced: what came from the old one is no answer
            self._read_from, self._buffer = self._fileno(), b""
        if b"\n" not in self._buffer:
            fd = self._fileno()
            self._read_from = fd
            # Like input(), end of input is not remembered: a terminal can go on after Ctrl-D.
            self._eof = False
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.set_running_or_notify_cancel()  # so a cancelled prompt cannot cancel the read itself

            def work() -> None:
                try:
                    self._fill(fd)
                except BaseException as exc:  # pragma: no cover - defensive
                    future.set_exception(exc)
                else:
                    future.set_result(None)

            self._filling = future
            threading.Thread(target=work, name="robotlab-stdin", daemon=True).start()
            await asyncio.wrap_future(future)
        line, newline, rest = self._buffer.partition(b"\n")
        if not newline and not line:
            raise EOFError("end of input")
        self._buffer = rest
        encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
        return line.decode(encoding, errors="replace").removesuffix("\r")


_STDIN = _StdinLines()


async def read_terminal_line(prompt: str = "", *, out: Any = None) -> str:
    """``input(prompt)`` for coroutines: the prompt goes to ``out`` (default ``sys.stdout``; give
    ``sys.stderr`` when stdout carries machine-readable output), the answer comes from standard input.

    Cancelling the awaiting task (Ctrl-C under ``asyncio.run``) returns at once, and the reading
    thread never delays the exit; end of input raises :class:`EOFError`.
    """
    import sys

    stream = out if out is not None else sys.stdout
    if prompt:
        stream.write(prompt)
        stream.flush()
    try:
        return await _STDIN.readline()
    except EOFError:
        if prompt:  # end the prompt's line, so what is printed next starts on its own
            stream.write("\n")
            stream.flush()
        raise


class _Out:
    """Where the terminal review writes. With JSON lines on stdout (``--json``), stdout carries only
    JSON: the review's text and its prompts go to stderr, and ``data`` (stdout) gets JSON objects only."""

    def __init__(self, printer: Any) -> None:
        import sys

        self.json = bool(getattr(printer, "json_lines", False))
        self.data = getattr(printer, "out", None) or sys.stdout
        if self.json:
            self.out = sys.stderr
            self.color = _isatty(sys.stderr)
        else:
            self.out = self.data
            self.color = bool(getattr(printer, "_color", False))
        self.printer = printer

    def c(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def line(self, text: str = "") -> None:
        finish = getattr(self.printer, "finish", None)
        if callable(finish):
            finish()
        self.out.write(text + "\n")
        self.out.flush()

    def record(self, obj: Any) -> None:
        """One JSON object on its own line of the data stream (stdout)."""
        self.data.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.data.flush()

    def diff(self, text: str) -> None:
        for raw in text.splitlines():
            if raw.startswith(("+++", "---")):
                self.line(self.c("1", raw))
            elif raw.startswith("+"):
                self.line(self.c("32", raw))
            elif raw.startswith("-"):
                self.line(self.c("31", raw))
            elif raw.startswith("@@"):
                self.line(self.c("36", raw))
            else:
                self.line(raw)


def _hunk_text(fc: FileChange, h: Hunk, out: _Out) -> None:
    if h.kind == "rename":
        out.line(out.c("33", f"  rename {fc.path} → {fc.new_path}"))
        return
    if h.kind == "file":
        size = lambda b: "absent" if b is None else f"{len(b)} bytes"  # noqa: E731
        out.line(out.c("33", f"  whole file: {size(fc.before)} → {size(fc.after)}"))
        return
    before, after = fc.context(h)
    out.line(out.c("36", h.header()))
    for line in before:
        out.line(" " + strip_eol(line))
    for sign, lines in (("-", h.old_lines), ("+", h.final_lines)):
        for line in lines:
            out.line(out.c("31" if sign == "-" else "32", sign + strip_eol(line)))
            if not line.endswith(("\n", "\r")):
                out.line(out.c("2", "\\ No newline at end of file"))
    for line in after:
        out.line(" " + strip_eol(line))


async def _edit_text(initial: str, ask: AskFn, out: _Out, *, suffix: str) -> str | None:
    import asyncio
    import shlex
    import subprocess
    import tempfile

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor:
        with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False, encoding="utf-8") as fh:
            fh.write(initial)
            name = fh.name
        try:
            proc = await asyncio.to_thread(subprocess.run, [*shlex.split(editor), name], check=False)
            if proc.returncode != 0:
                out.line(f"The editor exited with status {proc.returncode}; the hunk is unchanged.")
                return None
            return Path(name).read_text(encoding="utf-8")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)
    out.line("Type the replacement lines; a line with only '.' ends, a line with only '!' cancels.")
    out.line(out.c("2", "Proposed text:"))
    for line in initial.splitlines():
        out.line(out.c("2", "  " + line))
    typed: list[str] = []
    while True:
        try:
            line = await ask("")
        except EOFError:
            return None
        if line == ".":
            return "".join(x + "\n" for x in typed)
        if line == "!":
            return None
        typed.append(line)


_REVIEW_HELP = """  y  accept this hunk            n  reject it (you can give a reason for the robot)
  e  edit the proposed text, then accept it
  a  accept this and the rest of the file   d  reject this and the rest of the file
  A  accept everything that is left          q  quit: reject everything that is left
  ?  this help"""


async def review_in_terminal(changes: ChangeSet, *, ask: AskFn, out: _Out) -> bool:
    """Ask about every undecided hunk. Returns False if the user quit."""
    files = [fc for fc in changes.pending_files if any(h.status == PENDING for h in fc.hunks)]
    for n_file, fc in enumerate(files, start=1):
        out.line()
        out.line(out.c("1", f"── {fc.display_path} ({fc.action}, +{fc.added} -{fc.removed}) "
                            f"[file {n_file}/{len(files)}]"))
        for h in list(fc.hunks):
            if h.status != PENDING:
                continue
            _hunk_text(fc, h, out)
            while True:
                try:
                    answer = (await ask(f"Hunk {h.number}/{len(fc.hunks)} of {fc.path}: accept? "
                                        "[y,n,e,a,d,A,q,?] ")).strip()
                except EOFError:
                    answer = "q"
                if answer in ("y", "yes"):
                    changes.accept(h.id)
                elif answer in ("n", "no"):
                    try:
                        reason = (await ask("Reason for the robot (optional): ")).strip()
                    except EOFError:
                        reason = ""
                    changes.reject(h.id, reason=reason or None)
                elif answer == "e":
                    if h.kind == "rename" or fc.format is None:
                        out.line("This part cannot be edited; accept or reject it.")
                        continue
                    text = await _edit_text("".join(strip_eol(x) + "\n" for x in h.final_lines), ask, out,
                                            suffix=Path(fc.target).suffix or ".txt")
                    if text is None:
                        continue
                    if not h.final_lines or not h.final_lines[-1].endswith(("\n", "\r")):
                        text = text[:-1] if text.endswith("\n") else text
                    changes.edit_hunk(h.id, text)
                elif answer == "a":
                    changes.accept(*[x.id for x in fc.hunks if x.status == PENDING])
                elif answer == "d":
                    try:
                        reason = (await ask("Reason for the robot (optional): ")).strip()
                    except EOFError:
                        reason = ""
                    changes.reject(*[x.id for x in fc.hunks if x.status == PENDING], reason=reason or None)
                elif answer == "A":
                    changes.accept(*[x.id for x in changes.hunks(pending_only=True)])
                    return True
                elif answer == "q":
                    return False
                else:
                    out.line(_REVIEW_HELP)
                    continue
                break
            if all(x.status != PENDING for x in fc.hunks):
                break
    return True


async def settle_in_terminal(changes: ChangeSet, *, mode: str, printer: Any = None,
                             ask: AskFn | None = None) -> ApplyResult | None:
    """Settle a run's proposed changes on the command line.

    ``mode``: ``auto`` applies everything, ``never`` prints the proposed diff and
    writes nothing, ``review`` shows each hunk and asks (accept / reject with a
    reason / edit / rest of file / all / quit), then applies. Prints the outcome and
    the checkpoint to undo from; ``ask`` replaces the terminal prompt (tests).
    """
    import asyncio

    out = _Out(printer)
    if ask is None:
        stream = out.out

        async def ask(prompt: str) -> str:  # the prompt goes where the review's text goes
            return await read_terminal_line(prompt, out=stream)

    if not changes.pending_files:
        if changes.outcome():
            out.line(changes.outcome_message() or "")
        return None
    if mode == "never":
        if out.json:
            out.record({"kind": "change_set", "change_set_id": changes.id, "files": changes.summary(),
                        "diff": changes.unified_diff()})
        else:
            out.line()
            out.diff(changes.unified_diff())
        result = changes.discard(reason="not applied: the run was started with --apply never")
        count = len(result.settled)
        out.line(out.c("33", f"✎ {count} proposed file change(s) were NOT applied (--apply never). "
                             "Use --apply review to review them, or --apply auto to apply them."))
        _emit_decided(changes, printer)
        return result
    if mode not in ("review", "auto"):
        raise ValueError(f"Unknown apply mode {mode!r}; use review, auto or never")
    counts = changes.counts()
    out.line()
    out.line(out.c("1", f"✎ {counts.files} file(s) changed by {changes.robot or 'the robot'}: {counts.hunks} "
                        f"hunk(s), +{counts.added} -{counts.removed}"))
    if mode == "auto":
        changes.accept_all()
    elif not await review_in_terminal(changes, ask=ask, out=out):
        out.line("Stopped reviewing: the hunks not decided yet are not applied.")
    result = await asyncio.to_thread(changes.apply)
    while result.conflicts and not result.settled:
        for conflict in result.conflicts:
            out.line(out.c("31", f"✗ {conflict.message}"))
            base, disk, _ = conflict.texts()
            if base is not None and disk is not None:
                out.line(out.c("2", "  what changed on disk since the proposal:"))
                out.diff(unified_diff(split_lines(base), split_lines(disk), old_name="proposal base",
                                      new_name="disk now"))
        if mode == "auto":
            choice = "r"
        else:
            try:
                choice = (await ask("[r]ebase the proposal on the file (keep both changes), [o]verwrite the file "
                                    "with the proposal, [s]kip these files, [q]uit (apply nothing)? ")
                          ).strip().lower()
            except EOFError:
                choice = "q"
        if choice in ("r", "o"):
            unmerged = []
            for conflict in result.conflicts:
                try:
                    changes.rebase(conflict.file_id or conflict.path, overwrite=choice == "o")
                except ChangeError:
                    unmerged.append(conflict.path)
            if unmerged:
                out.line(out.c("31", "✗ Both the disk and the proposal changed the same lines of "
                                     + ", ".join(unmerged) + "; these files are skipped."))
            result = await asyncio.to_thread(lambda: changes.apply(on_conflict="skip"))
        elif choice == "s":
            result = await asyncio.to_thread(lambda: changes.apply(on_conflict="skip"))
        else:
            result = await asyncio.to_thread(lambda: changes.discard(reason="not applied: the file changed on disk"))
    if result.error:
        out.line(out.c("31", f"✗ {result.error}"))
    message = changes.outcome_message()
    if message:
        out.line()
        out.line(message)
    if result.checkpoint_id:
        out.line(out.c("2", f"Checkpoint {result.checkpoint_id} holds the files as they were before "
                            f"(history entry {result.entry_id})."))
    _emit_decided(changes, printer)
    return result


def _emit_decided(changes: ChangeSet, printer: Any) -> None:
    if printer is None or not getattr(printer, "json_lines", False):
        return
    printer(changes.decided_event())


def iter_hunks(changes: ChangeSet) -> Iterator[tuple[FileChange, Hunk]]:
    """(file, hunk) pairs in navigation order, for views."""
    for fc in changes.pending_files:
        for h in fc.hunks:
            yield fc, h
