"""Reading and writing inside the opened folder through directory handles, so that a symbolic link
swapped in after the checks cannot redirect anything.

The sandbox (:mod:`workspace.sandbox`) checks a path before a change is applied; but a path is
looked up again by every system call that takes it, and a folder replaced by a symlink to
somewhere else between the check and the write would send the write there. So a
:class:`FolderIO` opens the folder once and does every create, write, rename, mkdir and remove
relative to directory file descriptors:

- each path component is opened with ``os.open(name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
  dir_fd=parent)``: a component that is (now) a symbolic link is refused
  (:class:`~workspace.changes.errors.UnsafePathError`), never followed;
- a file is written to a temp file created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` in the final
  folder's descriptor, fsync'd and renamed over the file with ``os.replace(tmp, name,
  src_dir_fd=d, dst_dir_fd=d)``; removals use ``os.unlink(name, dir_fd=d)``, new folders
  ``os.mkdir(name, dir_fd=d)``; the folders' descriptors are fsync'd at the end;
- reads open the file with ``O_NOFOLLOW`` in its folder's descriptor.

The folders' descriptors are kept for the life of the :class:`FolderIO` (one apply, undo or
restore): a folder checked once is the folder written to, even if it is renamed or replaced by a
symlink meanwhile. (A folder *moved* out of the opened folder mid-apply takes the writes with
it; that needs no symlink and is the user's own move.)

**Platforms.** Linux, macOS and the BSDs have every call needed (``os.supports_dir_fd``).
Where they are missing (Windows: no ``dir_fd``, no ``O_NOFOLLOW``), :data:`DIR_FD` is False and
the same methods work on paths instead, as the safest equivalent: each component is checked
with ``lstat`` (a symlink or junction is refused), the temp file is still created with
``O_EXCL``, and the folder's real path is checked again right before each write. A swap in the
instant between that check and the write cannot be excluded there; creating symlinks on Windows
needs administrator rights or developer mode.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from workspace.changes.errors import ChangeError, UnsafePathError
from workspace.sandbox import TEMP_SUFFIX, Sandbox, display_path, is_temp_name

_O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_O_BINARY: int = getattr(os, "O_BINARY", 0)

#: Whether every operation can be done relative to directory descriptors here (see the module notes).
DIR_FD = bool(_O_DIRECTORY and _O_NOFOLLOW
              and {os.open, os.mkdir, os.rename, os.unlink, os.rmdir, os.stat} <= os.supports_dir_fd
              and os.listdir in os.supports_fd)

#: Descriptors of folders kept open at most (the least recently used beyond this are closed).
MAX_OPEN_DIRS = 64

#: A folder: its descriptor (``DIR_FD``) or its real path (the fallback).
Handle = Any


#: The most bytes of a file's name a temp name repeats: with the dot, the random part and
#: :data:`TEMP_SUFFIX` it stays far below :data:`workspace.sandbox.NAME_MAX` (255 bytes).
TEMP_STEM_BYTES = 150


def temp_stem(name: str) -> str:
    """The start of ``name`` that a temp name repeats: at most :data:`TEMP_STEM_BYTES` bytes as the
    file system stores them (UTF-8), cut between characters (150 characters of 3 bytes would be 450)."""
    size = 0
    for i, ch in enumerate(name):
        size += len(os.fsencode(ch))
        if size > TEMP_STEM_BYTES:
            return name[:i]
    return name


def temp_name(name: str) -> str:
    """A fresh temp file name next to ``name``: ``.NAME.XXXXXXXX.robotlab-tmp`` (NAME cut by bytes)."""
    return f".{temp_stem(name)}.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}"


def is_temp_of(entry: str, name: str) -> bool:
    """Whether ``entry`` (a name in a folder) is one of :func:`temp_name`'s names for ``name``."""
    return is_temp_name(entry) and entry.startswith(f".{temp_stem(name)}.")


def split_rel(rel: str) -> list[str]:
    """The components of a folder-relative POSIX name; refuses anything but plain names."""
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") or "\x00" in p for p in parts):
        raise UnsafePathError(f"'{display_path(rel)}' is not a plain path inside the opened folder")
    return parts


class FolderIO:
    """The opened folder, opened once: reads and atomic writes relative to directory handles.

    Use as a context manager (or call :meth:`close`); not thread-safe (one per apply).
    ``dir_fd=False`` forces the path-based fallback (tests; platforms without ``dir_fd``).
    """

    def __init__(self, sandbox: Sandbox, *, dir_fd: bool | None = None) -> None:
        self.sandbox = sandbox
        self.root = sandbox.root
        self.dir_fd = DIR_FD if dir_fd is None else (dir_fd and DIR_FD)
        self._dirs: OrderedDict[str, Handle] = OrderedDict()
        self._dirty: set[str] = set()
        #: The folders (keys) this FolderIO wrote or removed something in.
        self.touched: set[str] = set()
        if self.dir_fd:
            self._root: Handle = os.open(self.root, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
        else:
            self._root = self.root

    def __enter__(self) -> FolderIO:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.dir_fd:
            for fd in self._dirs.values():
                with contextlib.suppress(OSError):
                    os.close(fd)
            if self._root is not None:
                with contextlib.suppress(OSError):
                    os.close(self._root)
        self._dirs.clear()
        self._root = None

    # -- folders ------------------------------------------------------------------------------
    def _at(self, handle: Handle, name: str) -> tuple[str, dict[str, Any]]:
        """The arguments naming ``name`` in the folder ``handle`` for an ``os`` call."""
        if self.dir_fd:
            return name, {"dir_fd": handle}
        return os.path.join(handle, name), {}

    def _lstat(self, handle: Handle, name: str) -> os.stat_result | None:
        path, kw = self._at(handle, name)
        try:
            return os.stat(path, follow_symlinks=False, **kw)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _refuse(self, handle: Handle, name: str, rel: str, exc: OSError | None) -> Exception:
        """Why ``name`` in ``handle`` cannot be entered as a folder."""
        st = self._lstat(handle, name)
        if st is not None and (stat.S_ISLNK(st.st_mode) or _is_junction(st)):
            return UnsafePathError(
                f"'{display_path(rel)}' is now a symbolic link, not the folder it was when the change was "
                "checked; nothing was written through it. Look at what replaced it, then review the change again")
        if st is not None and not stat.S_ISDIR(st.st_mode):
            return ChangeError(f"'{display_path(rel)}' exists and is not a folder; choose another path")
        return exc or FileNotFoundError(errno.ENOENT, "no such folder", rel)

    def _enter(self, parent: Handle, name: str, rel: str) -> Handle:
        """Open the folder ``name`` of ``parent`` without following a symlink (FileNotFoundError if absent)."""
        if self.dir_fd:
            try:
                return os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=parent)
            except FileNotFoundError:
                raise
            except OSError as exc:  # ELOOP/ENOTDIR (a symlink or a file), EMLINK on some BSDs
                raise self._refuse(parent, name, rel, exc) from None
        st = self._lstat(parent, name)
        if st is None:
            raise FileNotFoundError(errno.ENOENT, "no such folder", rel)
        if not stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode) or _is_junction(st):
            raise self._refuse(parent, name, rel, None)
        return os.path.join(parent, name)

    def folder(self, parts: list[str], *, create: bool = False, created: list[str] | None = None) -> Handle | None:
        """The handle of the folder ``parts`` (folder-relative components); None when it does not
        exist and not ``create``. New folders are appended to ``created`` (outermost first)."""
        key = "/".join(parts)
        if not parts:
            return self._root
        cached = self._dirs.get(key)
        if cached is not None:
            self._dirs.move_to_end(key)
            return cached
        start, current = 0, self._root
        for i in range(len(parts) - 1, 0, -1):  # from the deepest folder already open
            above = self._dirs.get("/".join(parts[:i]))
            if above is not None:
                self._dirs.move_to_end("/".join(parts[:i]))
                start, current = i, above
                break
        for i in range(start, len(parts)):
            name, rel = parts[i], "/".join(parts[: i + 1])
            try:
                handle = self._enter(current, name, rel)
            except FileNotFoundError:
                if not create:
                    return None
                path, kw = self._at(current, name)
                try:
                    os.mkdir(path, 0o777, **kw)
                except FileExistsError:
                    pass
                else:
                    if created is not None:
                        created.append(rel)
                    self._dirty.add("/".join(parts[:i]))
                handle = self._enter(current, name, rel)
            self._dirs[rel] = handle
            current = handle
        self._evict(key)
        return current

    def _evict(self, keep: str) -> None:
        """Close the least recently used folders beyond :data:`MAX_OPEN_DIRS` (never those on the way
        to ``keep``); ones with changes not yet fsync'd are synced first, so an apply across
        thousands of folders stays within the process's descriptor limit."""
        while len(self._dirs) > MAX_OPEN_DIRS:
            victim = next((k for k in self._dirs if k not in self._dirty and not (keep + "/").startswith(k + "/")),
                          None)
            if victim is None:
                if not self._dirty:
                    return
                self.sync()
                continue
            handle = self._dirs.pop(victim)
            if self.dir_fd:
                with contextlib.suppress(OSError):
                    os.close(handle)

    def _parent(self, rel: str, *, create: bool = False,
                created: list[str] | None = None) -> tuple[Handle | None, str, str]:
        """(the handle of ``rel``'s folder or None, its last name, the folder's key)."""
        parts = split_rel(rel)
        handle = self.folder(parts[:-1], create=create, created=created)
        if handle is not None and not self.dir_fd:
            self._recheck(handle)
        return handle, parts[-1], "/".join(parts[:-1])

    def _recheck(self, handle: Handle) -> None:
        """The fallback's last check before touching a folder: its real path is still itself, inside."""
        if os.path.realpath(handle) != os.path.normpath(handle) or not self.sandbox.contains(handle):
            raise UnsafePathError(f"The folder '{display_path(self.sandbox.relative(handle))}' changed (a symbolic "
                                  "link was swapped in); nothing was written through it. Review the change again")

    # -- reading ------------------------------------------------------------------------------
    def kind(self, rel: str) -> str | None:
        """``"file"``, ``"dir"``, ``"symlink"``, ``"other"`` or None (absent, or a parent is no folder)."""
        try:
            handle, name, _ = self._parent(rel)
        except ChangeError as exc:
            if isinstance(exc, UnsafePathError):
                raise
            return None
        if handle is None:
            return None
        st = self._lstat(handle, name)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            return "symlink"
        return "file" if stat.S_ISREG(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "other"

    def mode(self, rel: str) -> int | None:
        """The permission bits of the regular file ``rel`` (None: no regular file there)."""
        try:
            handle, name, _ = self._parent(rel)
        except UnsafePathError:
            raise
        except ChangeError:
            return None
        st = self._lstat(handle, name) if handle is not None else None
        return stat.S_IMODE(st.st_mode) if st is not None and stat.S_ISREG(st.st_mode) else None

    def state(self, rel: str) -> tuple[bytes | None, int | None]:
        """(bytes, permission bits) of the regular file ``rel``, or (None, None) when there is none
        (absent, a folder, a symlink, a device). :class:`UnsafePathError` if a folder on the way
        is now a symlink."""
        fh = self.open_file(rel)
        if fh is None:
            return None, None
        with fh:
            return fh.read(), stat.S_IMODE(os.fstat(fh.fileno()).st_mode)

    def open_file(self, rel: str) -> BinaryIO | None:
        """The regular file ``rel`` open for reading (binary; the caller closes it), or None when
        there is none, as :meth:`state` decides. The file stays readable after this FolderIO closes."""
        try:
            handle, name, _ = self._parent(rel)
        except UnsafePathError:
            raise
        except ChangeError:  # a file where a folder of the path should be: no such file
            return None
        if handle is None:
            return None
        path, kw = self._at(handle, name)
        try:
            fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY, **kw)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:  # ELOOP: the name is a symlink; ENXIO: a socket
            st = self._lstat(handle, name)
            if st is None or not stat.S_ISREG(st.st_mode):
                return None
            raise
        fh = open(fd, "rb", closefd=True)  # noqa: SIM115 - returned open
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            fh.close()
            return None
        return fh

    def listdir(self, rel_dir: str) -> list[str]:
        """The names in the folder ``rel_dir`` ("" the top), [] if it does not exist."""
        handle = self.folder(split_rel(rel_dir) if rel_dir else [])
        return [] if handle is None else os.listdir(handle)

    # -- writing ------------------------------------------------------------------------------
    def write(self, rel: str, data: bytes, *, mode: int | None = None, sync: bool = True,
              created: list[str] | None = None) -> None:
        """Write ``data`` to ``rel`` atomically: a temp file in the same folder (``O_EXCL |
        O_NOFOLLOW``), fsync, rename over the file. ``mode`` keeps an existing file's permission
        bits (new files get 0o666 minus the umask). Missing folders are created (and appended to
        ``created``). The temp file never survives a failure; a kill leaves the file old or new."""
        handle, name, key = self._parent(rel, create=True, created=created)
        assert handle is not None
        st = self._lstat(handle, name)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise ChangeError(f"'{display_path(rel)}' is a folder; file tools change files only")
        tmp = temp_name(name)
        tmp_path, kw = self._at(handle, tmp)
        fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, 0o666,
                     **kw)
        try:
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                if mode is not None and hasattr(os, "fchmod"):
                    os.fchmod(fd, mode)
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            if self.dir_fd:
                os.replace(tmp, name, src_dir_fd=handle, dst_dir_fd=handle)
            else:
                self._recheck(handle)
                if mode is not None and not hasattr(os, "fchmod"):
                    os.chmod(tmp_path, mode)
                os.replace(tmp_path, os.path.join(handle, name))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_path, **kw)
            raise
        self.touched.add(key)
        if sync:
            self._dirty.add(key)

    def unlink(self, rel: str) -> bool:
        """Remove the file (or symlink) ``rel``; False when there was none."""
        handle, name, key = self._parent(rel)
        if handle is None:
            return False
        st = self._lstat(handle, name)
        if st is None:
            return False
        if stat.S_ISDIR(st.st_mode):
            raise ChangeError(f"'{display_path(rel)}' is a folder; file tools remove files only")
        path, kw = self._at(handle, name)
        try:
            os.unlink(path, **kw)
        except FileNotFoundError:
            return False
        self.touched.add(key)
        self._dirty.add(key)
        return True

    def rmdir(self, rel: str) -> bool:
        """Remove the folder ``rel`` if it is empty; False when it is not (or is gone)."""
        handle, name, key = self._parent(rel)
        if handle is None:
            return False
        for cached in [k for k in self._dirs if k == rel or k.startswith(rel + "/")]:
            closing = self._dirs.pop(cached)
            self._dirty.discard(cached)
            if self.dir_fd:
                with contextlib.suppress(OSError):
                    os.close(closing)
        path, kw = self._at(handle, name)
        try:
            os.rmdir(path, **kw)
        except OSError:
            return False
        self._dirty.add(key)
        return True

    def chmod(self, rel: str, mode: int) -> None:
        """Set the permission bits of the regular file ``rel`` (never through a symlink)."""
        handle, name, _ = self._parent(rel)
        if handle is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", rel)
        path, kw = self._at(handle, name)
        if self.dir_fd and hasattr(os, "fchmod"):
            fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, **kw)
            try:
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
            return
        st = self._lstat(handle, name)
        if st is None or not stat.S_ISREG(st.st_mode):
            raise ChangeError(f"'{display_path(rel)}' is no longer a regular file")
        os.chmod(path, mode)

    def temp_files(self, rels: Iterable[str]) -> list[str]:
        """The temp files interrupted writes of any of ``rels`` left (folder-relative names)."""
        by_folder: dict[str, set[str]] = {}
        for rel in rels:
            folder, _, name = rel.rpartition("/")
            by_folder.setdefault(folder, set()).add(name)
        found: list[str] = []
        for folder, names in sorted(by_folder.items()):
            try:
                entries = self.listdir(folder)
            except (ChangeError, OSError):
                continue
            found += [f"{folder}/{e}" if folder else e for e in sorted(entries)
                      if any(is_temp_of(e, name) for name in names)]
        return found

    def remove_temp_files(self, rels: Iterable[str]) -> list[str]:
        """Remove the temp files interrupted writes of any of ``rels`` left; returns their names."""
        removed: list[str] = []
        for temp in self.temp_files(rels):
            with contextlib.suppress(OSError, ChangeError):
                if self.unlink(temp):
                    removed.append(temp)
        return removed

    def sync(self) -> None:
        """fsync every folder whose entries changed (so the renames and removals are durable)."""
        for key in sorted(self._dirty):
            handle = self._dirs.get(key) if key else self._root  # dirty folders are never closed
            if handle is None:
                continue
            if self.dir_fd:
                with contextlib.suppress(OSError):
                    os.fsync(handle)
            else:
                _fsync_path(handle)
        self._dirty.clear()


def _is_junction(st: os.stat_result) -> bool:
    """A Windows junction or other reparse point (a folder link that is not a symlink)."""
    attrs = getattr(st, "st_file_attributes", 0)
    return bool(attrs & getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0))


def _fsync_path(directory: str | Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | _O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
