"""The overlay's layers as files: the pending changes as a layer, the command's writes read back.

The folder a command sees is an overlay (kernel overlayfs) of three directories:

* the real folder, read-only, at the bottom;
* the *pending* layer above it (:func:`write_pending_layer`): each pending proposed change as a
  file with its new content, and each pending deletion as a *whiteout*, the character device 0/0
  overlayfs reads as "this name is gone from the layers below". Since Linux 5.8 anyone may create
  that one device (``mknod`` of 0/0 needs no privilege), so an unprivileged sandbox shows pending
  deletions exactly;
* the *upper* directory, empty at the start, where overlayfs puts every write of the command: new
  and changed files whole (copied up), deletions as whiteouts, a directory removed and made again as
  an *opaque* directory (``user.overlay.opaque`` = ``y``: nothing below it shows).

:func:`scan_upper` and :func:`load_change` turn the upper directory into :class:`~workspace.isolation.base.Change`\\ s,
comparing with what the command saw (pending layer over the folder), so a file rewritten with the
same bytes (``touch``) is no change.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from workspace.isolation.base import Change, IsolationError, PendingChanges
from workspace.readlimits import FileLimitError, open_regular, read_bounded

OPAQUE_XATTR = "user.overlay.opaque"


def _checked_relative(path: str) -> PurePosixPath:
    rel = PurePosixPath(path)
    if (
        not path
        or rel.is_absolute()
        or any(part in ("", ".", "..") for part in path.split("/"))
        or "\0" in path
    ):
        raise IsolationError(
            f"pending change path {path!r} is not a plain folder-relative path: give paths like 'src/app.py'"
        )
    return rel


def write_pending_layer(layer: Path, pending: PendingChanges) -> None:
    """Writes ``pending`` into the empty directory ``layer``: files with their new content,
    whiteouts for deletions. The layer is new and written only here, so the folders made are
    remembered instead of asked of the file system for each file."""
    root = str(layer)
    folders: set[str] = {""}  # folder-relative directories made so far
    leaves: set[str] = set()  # paths written as a file or a whiteout
    for path, content in sorted(pending.items()):
        parts = _checked_relative(path).parts
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth])
            if directory in folders:
                continue
            if directory in leaves:
                raise IsolationError(f"pending changes {path!r} and its parent folder conflict: one is a file")
            os.mkdir(f"{root}/{directory}")
            folders.add(directory)
        rel = "/".join(parts)
        target = f"{root}/{rel}"
        leaves.add(rel)
        if content is None:
            try:
                os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(0, 0))
            except PermissionError as exc:
                raise IsolationError(
                    "could not mark a pending deletion in the sandbox's layer (mknod of the overlay "
                    f"whiteout 0/0 was refused: {exc}); Linux 5.8 or newer allows it"
                ) from exc
        else:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            try:
                view = memoryview(content)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)


def is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _is_opaque(directory: Path) -> bool:
    try:
        return os.getxattr(directory, OPAQUE_XATTR, follow_symlinks=False) == b"y"
    except OSError:
        return False


class FolderView:
    """The folder as the command saw it before it ran: the pending changes over the real folder."""

    def __init__(self, folder: Path, pending: PendingChanges) -> None:
        self.folder = folder
        self.pending = {str(_checked_relative(p)): c for p, c in pending.items()}
        self._deleted_dirs = [p for p, c in self.pending.items() if c is None]

    def _pending_gone(self, rel: str) -> bool:
        return any(rel == d or rel.startswith(d + "/") for d in self._deleted_dirs)

    def _file(self, rel: str) -> tuple[Path, int] | None:
        """The real folder's regular file the command saw at ``rel`` and its size (None: none there, or a
        pending change stands for it)."""
        if rel in self.pending or self._pending_gone(rel):
            return None
        path = self.folder.joinpath(*rel.split("/"))
        try:
            st = path.lstat()
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or not self._inside(path):
            return None
        return path, st.st_size

    def read(self, rel: str, limit: int) -> bytes | None:
        """The content before the command (None: no such regular file, or one larger than ``limit`` bytes;
        the file is checked on its open descriptor, so a FIFO or device swapped in is not read)."""
        if rel in self.pending:
            content = self.pending[rel]
            return content if content is None or len(content) <= limit else None
        found = self._file(rel)
        if found is None:
            return None
        try:
            return read_bounded(found[0], limit)
        except (OSError, FileLimitError):
            return None

    def size(self, rel: str) -> int | None:
        """The size of the content before the command, without reading it (None: no such regular file)."""
        if rel in self.pending:
            content = self.pending[rel]
            return None if content is None else len(content)
        found = self._file(rel)
        return None if found is None else found[1]

    def same(self, rel: str, source: str) -> bool:
        """Whether the file ``source`` holds the content ``rel`` had before the command, read a block at a
        time (a file of gigabytes is compared in bounded memory)."""
        if rel in self.pending:
            before = self.pending[rel]
            return before is not None and not _differs(source, before)
        found = self._file(rel)
        if found is None:
            return False
        try:
            with open(open_regular(found[0]), "rb") as old, open(source, "rb") as new:
                while True:
                    a, b = old.read(_BLOCK), new.read(_BLOCK)
                    if a != b:
                        return False
                    if not a:
                        return True
        except (OSError, FileLimitError):  # gone, or no longer a regular file (a FIFO swapped in)
            return False

    def exists(self, rel: str) -> bool:
        if rel in self.pending:
            return self.pending[rel] is not None
        if any(p.startswith(rel + "/") and c is not None for p, c in self.pending.items()):
            return True
        if self._pending_gone(rel):
            return False
        return os.path.lexists(self.folder.joinpath(*rel.split("/")))

    def _inside(self, path: Path) -> bool:
        """No folder on the way to ``path`` is a symbolic link (overlayfs shows a link, never
        what it points to, so a file reached through one is not in what the command saw)."""
        current = self.folder
        for part in path.parent.relative_to(self.folder).parts:
            current = current / part
            if current.is_symlink():
                return False
        return True

    def is_dir(self, rel: str) -> bool:
        if rel in self.pending:
            return False
        if any(p.startswith(rel + "/") and c is not None for p, c in self.pending.items()):
            return True
        path = self.folder.joinpath(*rel.split("/"))
        return path.is_dir() and not path.is_symlink()

    def files_under(self, rel: str) -> Iterator[str]:
        """Every regular file the command saw under the directory ``rel`` ("" for the folder)."""
        seen: set[str] = set()
        prefix = rel + "/" if rel else ""
        for path, content in self.pending.items():
            if path.startswith(prefix) and content is not None:
                seen.add(path)
                yield path
        base = self.folder.joinpath(*rel.split("/")) if rel else self.folder
        if not base.is_dir() or base.is_symlink():
            return
        for root, dirs, names in os.walk(base):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
            for name in names:
                full = Path(root, name)
                child = full.relative_to(self.folder).as_posix()
                if child in seen or self._pending_gone(child) or child in self.pending:
                    continue
                if full.is_symlink() or not full.is_file():
                    continue
                yield child


def _binary(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@dataclass(frozen=True)
class Written:
    """One path the upper directory says the command changed, its content not read yet: a regular
    file's is in the upper directory at ``source``; ``change`` is the whole change otherwise."""

    path: str
    source: str | None = None
    size: int = 0
    change: Change | None = None


def scan_upper(upper: Path, view: FolderView) -> list[Written]:
    """The command's writes in the overlay's upper directory, sorted by path (no content read)."""
    found: dict[str, Written] = {}

    def deleted(rel: str) -> None:
        under = list(view.files_under(rel))
        for path in under:
            found[path] = Written(path, change=Change(path, "deleted"))
        if not under and view.exists(rel) and not view.is_dir(rel):
            found[rel] = Written(rel, change=Change(rel, "deleted"))

    def walk(directory: Path, rel_dir: str) -> None:
        if rel_dir and _is_opaque(directory):
            # Everything below the directory the command saw is gone; what the upper holds is new.
            present = set()
            for root, _dirs, names in os.walk(directory):
                for name in names:
                    present.add(Path(root, name).relative_to(upper).as_posix())
            for path in view.files_under(rel_dir):
                if path not in present:
                    found[path] = Written(path, change=Change(path, "deleted"))
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                st = entry.stat(follow_symlinks=False)
                if is_whiteout(st):
                    deleted(rel)
                elif stat.S_ISDIR(st.st_mode):
                    if view.exists(rel) and not view.is_dir(rel):
                        found[rel] = Written(rel, change=Change(rel, "deleted"))  # a file made a folder
                    walk(Path(entry.path), rel)
                elif stat.S_ISLNK(st.st_mode):
                    kind: Literal["created", "changed"] = "changed" if view.exists(rel) else "created"
                    found[rel] = Written(rel, change=Change(rel, kind, link=os.readlink(entry.path)))
                elif stat.S_ISREG(st.st_mode):
                    found[rel] = Written(rel, source=entry.path, size=st.st_size)
                # Sockets, FIFOs and devices the command made are not files to propose.

    walk(upper, "")
    return [found[p] for p in sorted(found)]


def load_change(written: Written, view: FolderView, *, max_change_bytes: int, content: bool) -> Change | None:
    """The change ``written`` stands for, with its content when ``content`` (and it is at most
    ``max_change_bytes``); None when the file holds the bytes it held before (``touch``)."""
    if written.change is not None or written.source is None:
        return written.change
    # Sizes first, contents only when they are equal, a block at a time: a command that appends a byte to a file
    # of gigabytes (proposed as too large, or ignored) never has it read into memory.
    before = view.size(written.path)
    kind: Literal["created", "changed"] = "created" if before is None else "changed"
    size = written.size
    if before == size and view.same(written.path, written.source):
        return None  # rewritten with the same bytes, or only its metadata changed
    if not content or size > max_change_bytes:
        return Change(written.path, kind, size=size, too_large=content)
    data = Path(written.source).read_bytes()
    return Change(written.path, kind, content=data, size=len(data), binary=_binary(data))


#: How much of two files :meth:`FolderView.same` compares at a time.
_BLOCK = 1 << 20


def _differs(path: str, before: bytes) -> bool:
    with open(path, "rb") as handle:
        return handle.read(len(before) + 1) != before
