"""Low-level file operations of the change sets: a file's state, atomic writes, fsync.

A write goes through a temp file in the same folder, fsync and ``os.replace``, so a crash (power
loss, kill) leaves each file either old or new, never half-written. The path-based
:func:`atomic_write` and :func:`read_file_state` are for the app's own files (checkpoints,
history, settings); everything inside the opened folder goes through
:class:`~workspace.changes.folderio.FolderIO`, relative to directory handles.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from workspace.changes.errors import ChangeError
from workspace.changes.folderio import FolderIO, temp_name
from workspace.sandbox import Sandbox, display_path


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
    tmp = directory / temp_name(path.name)
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


def disk_state(sandbox: Sandbox, rel: str, io: FolderIO | None = None) -> tuple[bytes | None, int | None]:
    """(bytes, permission bits) of a folder-relative file, read without following a symlink
    swapped in on the way (through ``io``, or a :class:`FolderIO` of its own); (None, None)
    when there is no file; :class:`ChangeError` when it is a folder or leads through a symlink."""
    if not rel:
        raise ChangeError("'' is the opened folder itself; file tools change files only")
    if io is None:
        with FolderIO(sandbox) as own:
            return disk_state(sandbox, rel, own)
    if io.kind(rel) == "dir":
        raise ChangeError(f"'{display_path(rel)}' is a folder; file tools change files only")
    return io.state(rel)


def open_disk_file(sandbox: Sandbox, rel: str) -> BinaryIO | None:
    """A folder-relative file open for reading (binary; the caller closes it), opened as
    :func:`disk_state` reads it; None when there is no such file."""
    if not rel:
        raise ChangeError("'' is the opened folder itself; file tools change files only")
    with FolderIO(sandbox) as io:
        if io.kind(rel) == "dir":
            raise ChangeError(f"'{display_path(rel)}' is a folder; file tools change files only")
        return io.open_file(rel)
