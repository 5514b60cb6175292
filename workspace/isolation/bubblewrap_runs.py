"""A sandboxed command's run directory: the overlay's layers (``pending``, ``upper``, ``work``), its mount point
(``merged``) and where a folder whose path the mount options cannot hold is bound first (``real``); kept, emptied,
for the next command (:mod:`workspace.isolation.bubblewrap`)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

from workspace.isolation.base import IsolationError

#: The folders of a run's directory: the overlay's layers, its mount point, and where a folder whose path the
#: mount options cannot hold is bound first (see ``_SETUP``).
RUN_FOLDERS = ("pending", "upper", "work", "merged", "real")
#: Run directories of commands that ended, their layers emptied, kept for the next commands (making and removing
#: a run's folders costs milliseconds on a disk-backed /tmp, and more on a loaded machine): at most this many.
MAX_SPARE_RUNS = 4
_spare_runs: list[Path] = []
_spare_lock = threading.Lock()


def take_run() -> Path:
    """A run directory with empty layers: a spare one, or a new one."""
    while _spare_runs:
        run = _spare_runs.pop()
        with contextlib.suppress(OSError):
            if is_empty(run / "upper") and is_empty(run / "pending"):
                return run
        remove_tree(run)
    run = Path(tempfile.mkdtemp(prefix="robotlab-sandbox-"))
    if any(c in str(run) for c in ":,\\"):
        remove_tree(run)
        raise IsolationError(
            f"the temporary folder {run.parent} has ':', ',' or '\\' in its path, which overlay mounts "
            "cannot take; set TMPDIR to a plain path"
        )
    try:
        for name in RUN_FOLDERS:
            os.mkdir(run / name)
    except BaseException:
        remove_tree(run)
        raise
    if not _at_exit:  # the spare ones go when RobotLab ends
        _at_exit.append(True)
        atexit.register(_remove_spare_runs)
    return run


def recycle_run(run: Path) -> None:
    """Keeps the run directory of a command that ended for the next one, its layers emptied (removed when there
    are enough spare ones or emptying fails). The overlay's work folder is reused as it is: the kernel empties it
    when it mounts."""
    try:
        for name in ("upper", "pending"):
            if not is_empty(run / name):
                remove_tree(run / name)
                os.mkdir(run / name)
    except OSError:
        remove_tree(run)
        return
    with _spare_lock:  # commands end in threads of their own (reading their writes back)
        if len(_spare_runs) < MAX_SPARE_RUNS:
            _spare_runs.append(run)
            return
    remove_tree(run)


_at_exit: list[bool] = []


def _remove_spare_runs() -> None:
    while _spare_runs:
        remove_tree(_spare_runs.pop())


def is_empty(directory: Path) -> bool:
    with os.scandir(directory) as entries:
        return next(entries, None) is None


def remove_tree(path: Path) -> None:
    """Removes a run's directory, overlayfs's work folder (mode 000) included."""

    def fix(func: object, name: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), 0o700)
            os.chmod(name, 0o700)
        with contextlib.suppress(OSError):
            if os.path.isdir(name) and not os.path.islink(name):
                shutil.rmtree(name, ignore_errors=True)
            else:
                os.unlink(name)

    shutil.rmtree(path, onerror=fix)
