"""Reading a file from a folder or the user's configuration, bounded: a regular file only, and
never more than a limit.

Robot, network and skill files, the configuration and attachments come from folders the user
opens (a cloned repository among them), so any of them may be a FIFO (a read waits forever), a
symbolic link to ``/dev/zero`` (a read never ends and takes all memory) or simply huge.
:func:`read_bounded` opens the file with ``O_NONBLOCK`` (opening a FIFO does not wait for a
writer), checks the *open* descriptor with ``fstat`` (a link swapped in after a check is seen),
refuses anything but a regular file, refuses a file larger than the limit before reading it, and
reads at most ``limit + 1`` bytes (a file that grows meanwhile is refused too). A refusal is a
:class:`FileLimitError` (a :class:`~workspace.errors.ConfigurationError`) naming the file, what is
wrong and the fix; a listing reports it beside the file and lists the others.

The limits per kind of file are the constants below.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from workspace.errors import ConfigurationError

__all__ = [
    "CONFIG_FILE_BYTES",
    "IGNORE_FILE_BYTES",
    "INPUT_FILE_BYTES",
    "NETWORK_FILE_BYTES",
    "RESULTS_FILE_BYTES",
    "ROBOT_FILE_BYTES",
    "SCRIPT_HEAD_BYTES",
    "SKILL_FILE_BYTES",
    "FileLimitError",
    "describe_size",
    "open_regular",
    "read_bounded",
    "read_text_bounded",
]

_MiB = 1024 * 1024
#: A robot (template, prompt) file: ``.robotlab/robots/*.md`` and the files it includes.
ROBOT_FILE_BYTES = _MiB
#: A network file: ``.robotlab/networks/*.yaml``.
NETWORK_FILE_BYTES = _MiB
#: A skill's ``SKILL.md``.
SKILL_FILE_BYTES = _MiB
#: The start of a script tool read for its description (``# ---`` front matter): the rest is not read.
SCRIPT_HEAD_BYTES = 64 * 1024
#: A configuration file: ``config.yaml`` (the user's and the folder's), trust and approval rules,
#: an eval file, MCP server lists, a script tool's description.
CONFIG_FILE_BYTES = _MiB
#: A JSON file of results to import (``robotlab threads import``, the window's Import, an eval's ``thread:``).
RESULTS_FILE_BYTES = 64 * _MiB
#: A file of text named on the command line (``robotlab review --merge HUNK=FILE``).
INPUT_FILE_BYTES = 16 * _MiB
#: A folder's ``.gitignore`` (git itself skips one over 100 MB; a larger one counts as absent here).
IGNORE_FILE_BYTES = _MiB

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_CHUNK = 1024 * 1024


class FileLimitError(ConfigurationError):
    """A file that is not read: not a regular file, or larger than its limit. ``path`` is the file."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def describe_size(size: int) -> str:
    """``532 B``, ``12.4 KB``, ``1.2 MB``."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a plain file"


def _not_regular(path: Path, what: str, mode: int) -> FileLimitError:
    return FileLimitError(f"{path}: the {what} is not a regular file ({_kind(mode)}); remove it or replace it "
                          "with a plain file", path)


def _too_large(path: Path, what: str, size: int | None, limit: int) -> FileLimitError:
    shown = describe_size(size) if size is not None else "more than that"
    return FileLimitError(f"{path}: the {what} is {shown}, more than the {describe_size(limit)} such a file may "
                          f"be; make it smaller (split it) or move it away", path)


def open_regular(path: str | os.PathLike[str], what: str = "file") -> int:
    """A descriptor of the regular file ``path``, opened without blocking (a FIFO does not wait for a writer)
    and checked on the descriptor (a FIFO or device swapped in after a look is refused): :class:`FileLimitError`
    for anything else, ``OSError`` when it cannot be opened. The caller closes it."""
    fd = os.open(path, _FLAGS)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(Path(path), what, mode)
    return fd


def read_bounded(path: str | os.PathLike[str], limit: int, what: str = "file", *, head: bool = False) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises :class:`FileLimitError` for a FIFO, device, socket or folder (checked on the open
    descriptor) and for a file larger than ``limit`` (``head=True``: its first ``limit`` bytes instead,
    for a file only the start of which is read); ``OSError`` (``FileNotFoundError``,
    ``PermissionError``) when it cannot be opened. ``what`` names the file in messages ("robot file").
    """
    file = Path(path)
    try:  # a device is not even opened (opening one may do something); the descriptor is checked below too
        mode = os.stat(file).st_mode
    except OSError:
        mode = stat.S_IFREG  # opening says why (not found, no permission)
    if not stat.S_ISREG(mode):
        raise _not_regular(file, what, mode)
    fd = open_regular(file, what)
    try:
        st = os.fstat(fd)
        if st.st_size > limit and not head:
            raise _too_large(file, what, st.st_size, limit)
        chunks: list[bytes] = []
        left = limit if head else limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0 and not head:  # it grew past the limit since fstat
            raise _too_large(file, what, None, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_bounded(path: str | os.PathLike[str], limit: int, what: str = "file", *,
                      encoding: str = "utf-8", errors: str = "strict", head: bool = False) -> str:
    """:func:`read_bounded` decoded (``UnicodeDecodeError`` for text not in ``encoding``); line ends
    are turned to ``\\n`` as :meth:`pathlib.Path.read_text` does."""
    text = read_bounded(path, limit, what, head=head).decode(encoding, errors)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
