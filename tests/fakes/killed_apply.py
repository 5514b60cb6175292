"""A change set applied (or undone) in a child process killed with SIGKILL half-way, for the tests of recovering
it: a folder of twelve big files, ``gone.txt`` and a file to create, the child stopped at a given rename, and what
each file then holds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The part of the name of the apply's temporary files.
TEMP = ".robotlab-tmp"

#: Applies a change set of every ``f*.txt`` (rewritten), ``gone.txt`` (deleted) and ``made/new.txt``
#: (created in a new folder), or (``undo``) applies it and then undoes it. With a pause count N it
#: stops for good right before the Nth rename into the folder (the temp file written, N-1 files
#: written), so the parent can kill it there.
CHILD = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from workspace.changes import ChangeSet, CheckpointStore
    folder, store, pause = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    changes = ChangeSet(folder, thread_id="killed", store=CheckpointStore(store) if store != "-" else None)
    for path in sorted(folder.glob("f*.txt")):
        changes.propose(path.name, path.read_bytes().replace(b"old", b"new"))
    changes.propose("gone.txt", None)
    changes.propose("made/new.txt", b"created\\n")
    changes.accept_all()
    real, count = os.replace, [0]

    def replace(src, dst, *args, **kwargs):
        if kwargs.get("dst_dir_fd") is not None:
            count[0] += 1
            if count[0] == pause:
                print("paused", flush=True)
                time.sleep(600)
        return real(src, dst, *args, **kwargs)

    if sys.argv[4] == "undo":  # apply in full, then stop the undo mid-way
        assert changes.apply().ok
    os.replace = replace
    print("applying", flush=True)
    if sys.argv[4] == "undo":
        result = changes.history.undo()
    else:
        result = changes.apply()
    print("done" if result.ok else (getattr(result, "error", None) or result.message), flush=True)
""")
FILES = 12
BIG = 200_000  # bytes per file: big enough that a random kill lands mid-apply


def killed_project(tmp_path: Path) -> Path:
    """The folder ``project`` under ``tmp_path``: :data:`FILES` big files holding "old", and ``gone.txt``."""
    folder = tmp_path / "project"
    folder.mkdir()
    for n in range(FILES):
        (folder / f"f{n:02}.txt").write_bytes(f"old {n}\n".encode() * (BIG // 7))
    (folder / "gone.txt").write_text("old, to be deleted\n")
    return folder


def file_states(folder: Path) -> dict[str, str]:
    """Each file of the set: "old", "new" or "absent"; anything else (half-written) fails."""
    out = {}
    for n in range(FILES):
        data = (folder / f"f{n:02}.txt").read_bytes()
        out[f"f{n:02}.txt"] = {f"old {n}\n".encode() * (BIG // 7): "old",
                               f"new {n}\n".encode() * (BIG // 7): "new"}[data]
    out["gone.txt"] = "old" if (folder / "gone.txt").exists() else "new"
    made = folder / "made" / "new.txt"
    out["made/new.txt"] = "new" if made.exists() and made.read_bytes() == b"created\n" else "old"
    return out


def temp_files(folder: Path) -> list[Path]:
    """The apply's temporary files left in ``folder``."""
    return [p for p in folder.rglob("*") if TEMP in p.name]


def kill_mid_apply(folder: Path, store: str, *, pause: int = 0, delay: float = 0.0, what: str = "apply",
                    while_paused: Any = None) -> str:
    """Run the apply (or undo) in a child and kill -9 it (at the paused rename, calling
    ``while_paused()`` first, or ``delay`` s after its journal appeared)."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder), store, str(pause), what],
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "applying"
        if pause:
            assert child.stdout.readline().strip() == "paused"
            if while_paused is not None:
                while_paused()
        else:  # from the moment the journal is written (the writes follow)
            from workspace import paths

            journal = (Path(store) if store != "-" else paths.data_dir() / "checkpoints") / "journal"
            deadline = time.monotonic() + 30
            while not (journal.exists() and any(journal.iterdir())) and child.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.0005)
            time.sleep(delay)
        child.kill()  # SIGKILL: no cleanup code runs
        child.wait(timeout=30)
        return child.stdout.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
