"""Helpers of the tests of bounded reads: a call joined with a timeout (a read that waits on a FIFO fails the
test instead of hanging it) with the peak of memory Python allocated meanwhile, and sparse huge files."""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: How long a read that must not wait may take at most: only a guard against hanging.
HANG_S = 30
#: The size of the sparse "huge" files (far over every limit; nothing of it is on disk).
HUGE = 64 * 1024 * 1024


def bounded(call: Callable[[], Any]) -> tuple[Any, int]:
    """``call()`` in a thread, joined with a timeout (a hang fails the test, it does not hang it), and
    the peak of memory Python allocated meanwhile. An exception it raised is raised here."""
    result: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:
            failed.append(exc)

    tracemalloc.start()
    try:
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(HANG_S)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not worker.is_alive(), f"still reading after {HANG_S} s (a FIFO read waits for a writer forever)"
    if failed:
        raise failed[0]
    return result[0], peak


def huge(path: Path) -> Path:
    """``path`` made a sparse file of :data:`HUGE` bytes."""
    with open(path, "wb") as fh:
        fh.truncate(HUGE)
    return path
