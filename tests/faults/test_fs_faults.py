"""File-system faults: a symlink swapped in during an apply, names that forge the review, kill -9
mid-apply and its recovery, temp files in listings (issue 16, sections 1, 2 and 5)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workspace.changes import ChangeSet, CheckpointStore

TEMP = ".robotlab-tmp"

# -- the swap race -------------------------------------------------------------------------------

#: Another process swapping ``sub`` and a symlink to the outside folder in a tight loop, atomically
#: (Linux's renameat2 with RENAME_EXCHANGE: ``sub`` is always either the folder or the symlink).
SWAPPER = textwrap.dedent("""
    import ctypes, os, sys, time
    folder, outside = sys.argv[1], sys.argv[2]
    sub, link = os.path.join(folder, "sub"), os.path.join(folder, ".sub-link")
    os.symlink(outside, link, target_is_directory=True)
    libc = ctypes.CDLL(None, use_errno=True)

    def exchange():
        if libc.renameat2(-100, sub.encode(), -100, link.encode(), 2) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")

    print("ready", flush=True)
    for line in sys.stdin:  # one trial: "DELAY STOPFILE"; swap from DELAY seconds on until STOPFILE exists
        delay, stop = line.split(" ", 1)
        time.sleep(float(delay))
        swaps = 0
        while not os.path.exists(stop.strip()):
            exchange()  # sub is the symlink
            exchange()  # sub is the folder again
            swaps += 1
        print(swaps, flush=True)  # sub is the folder again
    os.unlink(link)
""")

MODIFIED, CREATED, DELETED = 200, 30, 20
TRIALS = 40


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _reset(folder: Path) -> None:
    sub = folder / "sub"
    for path in sorted(sub.rglob("*"), reverse=True) if sub.exists() else []:
        path.rmdir() if path.is_dir() else path.unlink()
    sub.mkdir(exist_ok=True)
    for n in range(MODIFIED + DELETED):
        (sub / f"m{n:03}.txt").write_text(f"old {n}\n")


@pytest.fixture
def fast_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync makes each trial take seconds on a real disk; durability is not what these trials test."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@pytest.mark.skipif(sys.platform != "linux", reason="the swapper uses Linux's renameat2(RENAME_EXCHANGE)")
def test_a_symlink_swapped_in_during_the_apply_redirects_nothing(tmp_path: Path, fast_fsync: None) -> None:
    folder, outside = tmp_path / "project", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    for n in range(MODIFIED + DELETED):
        (outside / f"m{n:03}.txt").write_text(f"outside {n}\n")  # same names: a followed write would land here
    outside_before = _tree(outside)
    store = CheckpointStore(tmp_path / "store")
    rng = random.Random(16)
    outcomes = {"applied": 0, "refused": 0}
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(folder), str(outside)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert swapper.stdin is not None and swapper.stdout is not None
    assert swapper.stdout.readline().strip() == "ready"
    try:
        swaps = 0
        for trial in range(TRIALS):
            _reset(folder)
            changes = ChangeSet(folder, store=store, thread_id=f"swap-{trial}")
            for n in range(MODIFIED):
                changes.propose(f"sub/m{n:03}.txt", f"new {n}\n".encode())
            for n in range(MODIFIED, MODIFIED + DELETED):
                changes.propose(f"sub/m{n:03}.txt", None)
            for n in range(CREATED):
                changes.propose(f"sub/fresh/c{n:03}.txt", f"created {n}\n".encode())
            changes.accept_all()
            stop = tmp_path / f"stop-{trial}"
            swapper.stdin.write(f"{rng.uniform(0, 0.03):.4f} {stop}\n")
            swapper.stdin.flush()
            try:
                result = changes.apply()  # never raises: a conflict or an error says what happened
            finally:
                stop.touch()
                swaps += int(swapper.stdout.readline())
            assert (folder / "sub").is_dir() and not (folder / "sub").is_symlink()
            # Nothing was written outside: no file changed or appeared there, no temp file either.
            assert _tree(outside) == outside_before, f"trial {trial}: a write landed outside the folder"
            assert not [p for p in outside.rglob("*") if TEMP in p.name]
            assert not [p for p in folder.rglob("*") if TEMP in p.name]
            # Inside, the set is wholly new (applied) or wholly old (refused, or restored after a failure).
            inside = _tree(folder / "sub")
            if result.ok:
                outcomes["applied"] += 1
                assert all(inside[f"m{n:03}.txt"] == f"new {n}\n".encode() for n in range(MODIFIED))
                assert not any(f"m{n:03}.txt" in inside for n in range(MODIFIED, MODIFIED + DELETED))
                assert all(inside[f"fresh/c{n:03}.txt"] == f"created {n}\n".encode() for n in range(CREATED))
            else:
                outcomes["refused"] += 1
                assert result.error and (result.conflicts or "Nothing was applied" in result.error)
                assert all(inside[f"m{n:03}.txt"] == f"old {n}\n".encode() for n in range(MODIFIED + DELETED))
                assert not (folder / "sub" / "fresh").exists()
        swapper.stdin.close()
        assert swapper.wait(timeout=30) == 0
    finally:
        if swapper.poll() is None:  # a failed assertion above: do not leave it swapping
            swapper.kill()
            swapper.wait()
    assert sum(outcomes.values()) == TRIALS and swaps > TRIALS
    print(f"swap race: {outcomes}, {swaps} swaps")
