"""The window's Import (a results file the person picks) reads the file bounded, on the window's thread: a FIFO
picked is refused at once (it waited for a writer forever, the window frozen), a file over the limit is refused
before it is read (65 MiB of it was read and parsed), each said in the banner naming the file and the fix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


async def test_importing_a_fifo_or_an_oversized_file_says_why_in_the_banner(desktop: Any, tmp_path: Path) -> None:
    window = desktop.window
    rows = window.thread_model.rowCount()
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(65 * 2**20)
    window.transfer.read_import(big)
    assert "Import failed" in window.banner.text and "65.0 MB, more than the 64.0 MB" in window.banner.text
    assert "make it smaller" in window.banner.text
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    window.transfer.read_import(fifo)
    assert f"{fifo}: the results file is not a regular file (a FIFO)" in window.banner.text
    assert window.thread_model.rowCount() == rows
