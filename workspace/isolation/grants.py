"""A command confined to a :class:`~workspace.isolation.base.Grant`: bubblewrap's mounts of the folder for it.

Without a grant the folder's overlay is bound writable at the folder's own path (every write comes back as a
proposal). With one, only what the grant names is there: the whole overlay read-only when ``"."`` is readable,
else an empty read-only folder with each readable path bound read-only into it; then each writable path bound
writable on top (what the command writes there is proposed as any command's writes are; a write anywhere else
in the folder fails with "Read-only file system"). A writable folder the folder does not have yet is made in the
pending layer first, so the command can write into it.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from workspace.isolation.base import Grant, IsolationError


def _relative(path: str) -> str:
    parts = PurePosixPath(path).parts
    if not parts or parts == (".",):
        return "."
    if PurePosixPath(path).is_absolute() or ".." in parts:
        raise IsolationError(f"the grant's path {path!r} must be relative to the folder and stay inside it")
    return "/".join(p for p in parts if p != ".")


def make_writable_dirs(pending: Path, folder: Path, grant: Grant) -> None:
    """Make, in the pending layer ``pending``, each writable folder of ``grant`` that ``folder`` lacks; a path of
    the grant that is a symbolic link leading out of the folder is refused (the mount would follow it)."""
    root = folder.resolve()
    for path in {*grant.read, *grant.write}:
        rel = _relative(path)
        target = folder / rel
        if rel != "." and (target.is_symlink() or target.exists()) and not target.resolve().is_relative_to(root):
            raise IsolationError(f"the grant's path {path!r} leads out of the folder (a symbolic link to "
                                 f"{target.resolve()}); name a real folder inside it")
    for path in grant.write:
        rel = _relative(path)
        if rel == "." or (folder / rel).exists():
            continue
        os.makedirs(pending / rel, exist_ok=True)


def folder_binds(grant: Grant | None, merged: Path, folder: Path) -> list[str]:
    """bwrap's arguments that put the folder's overlay ``merged`` at ``folder`` as ``grant`` allows."""
    if grant is None:
        return ["--bind", str(merged), str(folder)]
    args: list[str] = []
    if grant.whole_folder_readable:
        args += ["--ro-bind", str(merged), str(folder)]
    else:
        args += ["--tmpfs", str(folder)]
        for path in sorted({_relative(p) for p in grant.read} - {_relative(p) for p in grant.write}):
            args += ["--ro-bind-try", str(merged / path), str(folder / path)]
    for path in sorted({_relative(p) for p in grant.write}):
        if path == ".":
            return ["--bind", str(merged), str(folder)]
        args += ["--bind-try", str(merged / path), str(folder / path)]
    if not grant.whole_folder_readable:
        args += ["--remount-ro", str(folder)]
    return args
