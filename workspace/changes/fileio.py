"""Low-level file operations of the change sets: read a file's state, write atomically, fsync,
create folders inside the sandbox.

A write goes through a temp file in the same folder, fsync and ``os.replace``, so a crash (power
loss, kill) leaves each file either old or new, never half-written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import uuid
from collections.abc import Iterable
from pathlib import Path

from workspace.changes.errors import ChangeError
from workspace.errors import SandboxError
from workspace.sandbox import Sandbox


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


def makedirs(sandbox: Sandbox, directory: Path) -> list[str]:
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



def disk_state(sandbox: Sandbox, rel: str) -> tuple[bytes | None, int | None]:
    """:func:`read_file_state` of a folder-relative path; :class:`ChangeError` when it is a folder."""
    path = sandbox.abspath(rel)
    if path.is_dir():
        raise ChangeError(f"'{rel}' is a folder; file tools change files only")
    return read_file_state(path)
