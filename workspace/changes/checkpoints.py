"""Checkpoints: content-addressed snapshots of some files of a folder at one moment.

Every applied change set is checkpointed before and after (:class:`~workspace.changes.history.ChangeHistory`
records the pair), under ``paths.data_dir()/checkpoints`` by default.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workspace.changes.errors import ChangeError
from workspace.changes.fileio import atomic_write, sha256
from workspace.sandbox import Sandbox


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
        from workspace.changes.folderio import FolderIO

        sandbox = Sandbox(folder)
        with FolderIO(sandbox) as io:
            states = {rel: io.state(rel) for rel in rels}
        return self.record(sandbox.root, states, **kw)

    def state_bytes(self, state: FileState | None) -> bytes | None:
        return None if state is None else self.get(state.hash)
