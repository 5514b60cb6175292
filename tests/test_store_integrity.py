"""The database's full check (``quick_check``, a read of every page) runs at open only after an unclean
exit when the window asks for that (``integrity_check="after_unclean_exit"``): a marker file beside the
database, left by a process that is gone, says so. A cleanly closed file is checked afterwards, in a
worker, by ``integrity_problem``. The default (the command line) still checks at every open."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fakes.damaged_stores import filled, garbage_page

from workspace.persistence import Store, StoreError

ROOT = Path(__file__).resolve().parent.parent


def markers(db: Path) -> list[Path]:
    return sorted(db.parent.glob(db.name + ".open-*"))


def crash_while_open(db: Path) -> None:
    """A real process opens the database and dies without closing it (as a crash or a kill would)."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from workspace.persistence import Store
        store = Store({str(db)!r})
        store.create_thread(robot="helper", title="written before the crash")
        os._exit(1)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr


def test_a_clean_exit_leaves_no_marker_and_the_next_open_does_not_check(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    filled(db)
    assert markers(db) == []  # closed cleanly
    with Store(db, integrity_check="after_unclean_exit") as store:
        assert len(markers(db)) == 1  # this open's own
        assert not store.checked_at_open and not store.unclean_exit
        assert store.integrity_problem() is None  # the check the window runs in a worker
    assert markers(db) == []
    with Store(db) as store:  # the command line's default: checked at every open
        assert store.checked_at_open


def test_after_an_unclean_exit_the_file_is_checked_at_open_and_damage_is_found(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    filled(db)
    crash_while_open(db)
    left = markers(db)
    assert len(left) == 1  # the dead process's marker
    with Store(db, integrity_check="after_unclean_exit") as store:
        assert store.unclean_exit and store.checked_at_open
        assert "written before the crash" in [t.title for t in store.list_threads()]
        assert markers(db) != left and len(markers(db)) == 1  # the dead one cleared, this open's own left
    with Store(db, integrity_check="after_unclean_exit") as store:  # that open closed cleanly
        assert not store.checked_at_open

    crash_while_open(db)
    garbage_page(db)
    with pytest.raises(StoreError) as info:
        Store(db, integrity_check="after_unclean_exit")
    assert info.value.reason == "corrupt" and "robotlab threads recover" in str(info.value)


def test_damage_to_a_cleanly_closed_file_is_found_by_the_check_after_the_start(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    filled(db)
    garbage_page(db)
    store = Store(db, integrity_check="after_unclean_exit")  # opens at once: no page read but the schema's
    try:
        assert not store.checked_at_open
        problem = store.integrity_problem()
        assert problem is not None and str(db) in problem and "robotlab threads recover" in problem
    finally:
        store.close()


def test_a_live_process_marker_is_not_an_unclean_exit(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    filled(db)
    with Store(db, integrity_check="after_unclean_exit") as first, \
            Store(db, integrity_check="after_unclean_exit") as second:
        assert not first.unclean_exit and not second.unclean_exit  # another open store is not a crash
        assert len(markers(db)) == 2
    assert markers(db) == []


def test_an_unknown_check_names_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="always, after_unclean_exit"):
        Store(tmp_path / "x.db", integrity_check="sometimes")
