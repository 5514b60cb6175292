"""Scratch folders for a bench run, removed when the run ends.

A bench's home or database reaches tens of megabytes (a 10,000-turn thread: 58 MB); left behind in the
temporary folder, a few hundred runs fill the disk. :func:`scratch_dir` makes one and removes it at exit;
:func:`leave` is ``os._exit`` for the benches that skip the interpreter's teardown of their Qt objects,
removing the scratch folders first (``os._exit`` runs no exit handlers).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

_MADE: list[Path] = []


def _remove_all() -> None:
    while _MADE:
        shutil.rmtree(_MADE.pop(), ignore_errors=True)


def scratch_dir(prefix: str = "robotlab-bench-") -> Path:
    """A new empty folder in the temporary folder, removed when this process ends."""
    if not _MADE:
        atexit.register(_remove_all)
    path = Path(tempfile.mkdtemp(prefix=prefix))
    _MADE.append(path)
    return path


def leave(code: int = 0) -> None:
    """End the process now (no interpreter teardown), its scratch folders removed first."""
    _remove_all()
    os._exit(code)
