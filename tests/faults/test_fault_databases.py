"""Damaged and locked databases: each is found when the file is opened (not later, as "Nothing
matches"), the error names the file and the fix, and the recovery path works: `robotlab threads
recover` (the window's "Move aside and start fresh" does the same) keeps the damaged file and
starts a fresh one; a locked file is an error after the busy timeout, never a hang, and loses
nothing once it is free."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fakes.damaged_stores import PAGE, garbage_page
from fakes.damaged_stores import filled as fill

from workspace.cli import main as cli_main
from workspace.persistence import Store, StoreError

pytestmark = pytest.mark.timeout(60)


def filled(db: Path, threads: int = 60) -> list[str]:
    """A database with some threads (enough pages to damage one in the middle), closed cleanly."""
    ids = fill(db, threads)
    assert not db.with_name(db.name + "-wal").exists() or db.with_name(db.name + "-wal").stat().st_size == 0
    return ids


def truncate_mid_file(db: Path) -> None:
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.truncate((size // 2) // PAGE * PAGE + 100)


def zero_length(db: Path) -> None:
    db.write_bytes(b"")


DAMAGE = {"truncated mid-file": truncate_mid_file, "garbage page": garbage_page, "zero-length": zero_length}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_database_is_found_at_open_and_recovered(damage: str, tmp_path: Path, matrix: Any,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    matrix.case("damaged databases", damage)
    db = tmp_path / "threads.db"
    filled(db)
    DAMAGE[damage](db)
    damaged = db.read_bytes()
    with pytest.raises(StoreError) as info:
        Store(db)
    assert info.value.reason == "corrupt"
    assert str(db) in str(info.value) and "robotlab threads recover" in str(info.value)
    assert db.read_bytes() == damaged  # nothing was changed by looking
    # The command line says the same and names the fix, then recovers.
    assert cli_main(["threads", "list", "--db", str(db)]) == 2
    assert "robotlab threads recover" in capsys.readouterr().err
    assert cli_main(["threads", "recover", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "was damaged: it is kept as" in out
    kept = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1 and kept[0].read_bytes() == damaged  # the damaged file is kept, not deleted
    with Store(db) as fresh:
        thread = fresh.create_thread(robot="helper")
        assert [t.id for t in fresh.list_threads()] == [thread.id]
    matrix.lost(0, "")


def test_a_locked_database_is_an_error_not_a_hang_and_loses_nothing(tmp_path: Path, matrix: Any) -> None:
    matrix.case("damaged databases", "locked by another program")
    db = tmp_path / "threads.db"
    ids = filled(db, threads=5)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another program in the middle of a write
    try:
        with pytest.raises(StoreError) as info:
            Store(db, busy_timeout=0.3)
        assert info.value.reason == "locked" and "locked by another program" in str(info.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Store(db) as store:
        assert sorted(t.id for t in store.list_threads()) == sorted(ids)
    matrix.lost(0, "")


def test_search_in_a_damaged_database_no_longer_answers_nothing_matches(tmp_path: Path, matrix: Any) -> None:
    matrix.case("damaged databases", "search after damage in the middle")
    db = tmp_path / "threads.db"
    filled(db)
    with Store(db) as store:
        assert store.search("pelicans")
    garbage_page(db)
    with pytest.raises(StoreError) as info:  # before: it opened, and search said "Nothing matches"
        Store(db).search("pelicans")
    assert info.value.reason == "corrupt"
    matrix.lost(0, "")
