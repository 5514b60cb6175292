"""Start-up keeps the window's thread for the window: the database, the folder's settings and the font database are
read in worker threads, and the window's thread imports nothing of ours while the steps build."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import wait_until
from tests.ui.startup_app import started

ROOT = Path(__file__).resolve().parents[2]


def _filled(db: Path, threads: int = 12) -> None:
    from workspace import events as ev
    from workspace.persistence import Store

    store = Store(db)
    for t in range(threads):
        thread = store.create_thread(robot="assistant", title=f"Thread {t}")
        turn = store.add_turn(thread.id, user_text=f"Question {t}", parent_turn_id=None)
        store.append_events(thread.id, turn.id, [ev.Text(run_id=f"r{t}", robot="assistant", seq=1, text="An answer")])
        store.finish_turn(turn.id, "finished")
    store.close()


async def test_start_up_reads_the_database_only_in_worker_threads(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every statement of every connection opened from here on is noted with the thread that ran it (SQLite calls
    # the trace callback on the thread executing the statement).
    _filled(db_path)
    on_window_thread: list[str] = []
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)

        def note(sql: str) -> None:
            statements.append(sql)
            if threading.current_thread() is threading.main_thread():
                on_window_thread.append(" ".join(sql.split())[:120])

        conn.set_trace_callback(note)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    async with started(db_path) as root:
        assert root.window.thread_model.rowCount() == 12  # the list was read (in the worker)
        assert any("FROM threads" in s or "threads t" in s for s in statements), statements[:20]
        assert on_window_thread == [], f"read on the window's thread during start-up: {on_window_thread}"


async def test_start_up_makes_the_thread_lists_rows_in_its_worker(db_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A user's 3,000 threads made into the list's rows cost the window's thread about 5 ms of the step that showed
    # them: start-up's worker makes them as it reads the list, and the window's thread only puts them in the list.
    import ui.threads.model

    _filled(db_path)
    made = ui.threads.model.thread_item
    makers: list[bool] = []

    def noted(thread: Any) -> Any:
        makers.append(threading.current_thread() is threading.main_thread())
        return made(thread)

    monkeypatch.setattr(ui.threads.model, "thread_item", noted)
    async with started(db_path) as root:
        model = root.window.thread_model
        assert model.rowCount() == 12
        assert {model.item(row).title for row in range(12)} == {f"Thread {t}" for t in range(12)}
        assert makers == [False] * 12, makers
        # Later reads (a thread renamed, deleted, another window's change) make their rows here as before.
        root.controller.rename_thread(model.item(0).thread_id, "Renamed")
        await wait_until(lambda: "Renamed" in {model.item(row).title for row in range(model.rowCount())},
                         what="the renamed thread listed")
        assert makers.count(True) == 12, makers


def test_the_window_thread_imports_nothing_of_ours_during_a_staged_start_up(tmp_path: Path) -> None:
    # A module first imported while a step runs holds the window still for its whole import: the steps' modules
    # are imported in start-up's worker thread first (BUILD_MODULES, the panes', AHEAD_MODULES).
    code = """
import os, sys, threading
MAIN = threading.get_ident()
seen, on = [], []
class Spy:
    def find_spec(self, name, path=None, target=None):
        if on and threading.get_ident() == MAIN and name.startswith(("ui", "workspace", "pygments")):
            seen.append(name)
        return None
sys.meta_path.insert(0, Spy())
import ui.app as ui_app
finish, after = ui_app.Application.finish_startup, ui_app.Application._after_inspector
def finish_startup(self, **kw):
    on.append(True)
    finish(self, **kw)
def after_inspector(self):
    print("IMPORTED " + " ".join(seen), flush=True)
    after(self)
    os._exit(0)
ui_app.Application.finish_startup = finish_startup
ui_app.Application._after_inspector = after_inspector
ui_app.run_app([])
"""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ROBOTLAB_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("IMPORTED")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    assert lines[0].split()[1:] == [], f"imported on the window's thread during start-up: {lines[0][9:]}"


async def test_the_folder_open_last_time_has_its_settings_read_in_a_worker(db_path: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # A folder's settings file is read and validated (pydantic) when it is reopened: start-up's worker does it.
    import workspace.config
    from ui.window.geometry import settings

    folder = tmp_path / "garden"
    (folder / ".robotlab").mkdir(parents=True)
    (folder / ".robotlab" / "config.yaml").write_text("ui:\n  theme: light\n", encoding="utf-8")
    settings().setValue("session/folder", str(folder))
    load = workspace.config.load_config
    loaded: list[tuple[Path | None, bool]] = []

    def noted(folder_: Path | None = None, *args: Any, **kwargs: Any) -> Any:
        loaded.append((folder_, threading.current_thread() is threading.main_thread()))
        return load(folder_, *args, **kwargs)

    monkeypatch.setattr(workspace.config, "load_config", noted)
    async with started(db_path) as root:
        assert root.controller.folder == folder.resolve() and root.folder == folder.resolve()
        assert "garden" in root.window.status.folder.text()
        assert (folder.resolve(), False) in loaded, loaded
        assert not [f for f, on_window in loaded if on_window], loaded


async def test_the_font_database_is_read_in_a_worker_thread_before_the_first_text_is_measured(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Read on the window's thread by the first text measured (the sidebar's search box), it cost that step about 8 ms.
    from PySide6 import QtGui

    readers: list[bool] = []
    families = QtGui.QFontDatabase.families

    class Noted(QtGui.QFontDatabase):
        @staticmethod
        def families(*args: Any) -> Any:
            readers.append(threading.current_thread() is threading.main_thread())
            return families(*args)

    monkeypatch.setattr(QtGui, "QFontDatabase", Noted)
    async with started(db_path) as root:
        assert root.window.built
        assert readers == [False]
