"""What keeps a staged start-up from stalling the window, checked as mechanisms (never as timings): the database
is read only in worker threads, the window's thread imports nothing of ours, each step builds a bounded number
of widgets, and the filter that keeps keys typed at the frame is out of the way while a step builds."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from tests.ui.conftest import close_app, wait_until

ROOT = Path(__file__).resolve().parents[2]

#: The most widgets one start-up step may make (the MCP servers pane, the largest, makes about 120 in its step).
WIDGETS_PER_STEP = 130


@contextlib.asynccontextmanager
async def _started(db_path: Path, *, inspector: bool = False) -> AsyncIterator[Any]:
    """The app after a staged start-up (``ui.app.Application``), closed at the end; with ``inspector``, the
    inspector open, as Ctrl+I opens it on a screen too narrow for it beside the chat, where it starts closed (on
    the Tool calls tab, making no other pane)."""
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        root.window.show()
        root.finish_startup(staged=True)
        await wait_until(lambda: root.whole, timeout=120, what="the start-up")
        if inspector and root.window.docks.raised() is None:
            root.window.docks.toggle_inspector()
        yield root
    finally:
        await close_app(root)


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
    async with _started(db_path) as root:
        assert root.window.thread_model.rowCount() == 12  # the list was read (in the worker)
        assert any("FROM threads" in s or "threads t" in s for s in statements), statements[:20]
        assert on_window_thread == [], f"read on the window's thread during start-up: {on_window_thread}"


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


async def test_each_start_up_step_builds_a_bounded_number_of_widgets(db_path: Path) -> None:
    from ui.app import Application, step_name

    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        root.window.show()
        made: list[tuple[int, str]] = []

        def count(steps: Any) -> None:
            while True:
                before = len(QApplication.allWidgets())
                try:
                    next(steps)
                except StopIteration:
                    made.append((len(QApplication.allWidgets()) - before, "the last step"))
                    return
                made.append((len(QApplication.allWidgets()) - before, step_name(steps)))

        count(root.window.build_steps())
        root._read_config()
        root._open_workspace()
        count(root._staged_fill(None, opened=True))
        docks = root.window.docks
        assert root.window.built and set(docks.panes) >= {"tools", "changes"}
        assert not set(docks.panes) & {"memory", "trace", "network"}  # behind other tabs: made when first shown
        assert len(made) >= 25, made
        too_many = [(n, name) for n, name in made if n > WIDGETS_PER_STEP]
        assert not too_many, f"steps that build more than {WIDGETS_PER_STEP} widgets: {too_many}"
    finally:
        await close_app(root)


async def test_the_early_key_filter_is_off_while_a_step_builds(db_path: Path) -> None:
    # Installed on the application, the filter would see every event of the widgets a step makes.
    from PySide6.QtCore import QEvent, QObject

    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    window = root.window
    try:
        window.show()
        assert window.early_keys.filtering
        seen: list[int] = []
        filter_ = window.early_keys.eventFilter

        def counting(watched: QObject, event: QEvent) -> bool:
            seen.append(1)
            return filter_(watched, event)

        window.early_keys.eventFilter = counting  # type: ignore[method-assign]
        with window.building():
            next(window.build_steps())
            next(window.build_steps())  # the sidebar: dozens of events
        assert seen == []
        assert window.early_keys.filtering  # back on after the step: keys typed between steps are kept
    finally:
        await close_app(root)


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
    async with _started(db_path) as root:
        assert root.controller.folder == folder.resolve() and root.folder == folder.resolve()
        assert "garden" in root.window.status.folder.text()
        assert (folder.resolve(), False) in loaded, loaded
        assert not [f for f, on_window in loaded if on_window], loaded


async def test_a_pane_behind_a_tab_is_made_when_its_tab_first_shows_and_shows_what_came_before(db_path: Path) -> None:
    # The Trace, Memory and Network panes are not made at start-up (nobody looks at them yet): their docks hold a
    # placeholder until their tab is chosen, their shortcut pressed, or the pane asked for.
    from workspace import events as ev

    async with _started(db_path, inspector=True) as root:
        docks = root.window.docks
        assert docks.raised() == "tools" and docks.tool_pane is not None
        waiting = {key: docks[key].widget() for key in ("trace", "memory", "network")}
        assert not set(docks.panes) & set(waiting)
        assert all(w is not None and w.objectName() == "InspectorPane" for w in waiting.values())
        # Events that come while the pane waits are kept by its model, and shown once it is made.
        docks.add_events([ev.RunStarted(run_id="r1", robot="assistant", seq=1, message="q", model="m"),
                          ev.Text(run_id="r1", robot="assistant", seq=2, text="An answer")])
        docks["trace"].raise_()  # the person picks the Trace tab
        await wait_until(lambda: "trace" in docks.panes, what="the Trace pane made when its tab shows")
        trace = docks.trace_pane
        assert trace is not None and docks["trace"].widget() is trace and type(trace).__name__ == "TracePane"
        assert trace.isVisible() and docks.raised() == "trace"
        assert trace.model.rowCount() == 2
        trace.flush_tree()
        assert [r.run_id for r in trace.tree_model.tree.roots] == ["r1"]
        assert "memory" not in docks.panes  # one tab shown: one pane made
        docks.focus_dock("memory")  # its shortcut: the pane made, and the keyboard in it
        memory = docks.memory_pane
        assert memory is not None and docks["memory"].widget() is memory and type(memory).__name__ == "MemoryPane"
        focus = QApplication.focusWidget()
        assert focus is not None and (focus is memory or memory.isAncestorOf(focus))
        # Asked for by code (a test, a part of the window): made then, its dock keeps the real one.
        network = docks.network_pane
        assert network is not None and docks["network"].widget() is network and docks.panes["network"] is network
        assert docks.network_pane is network  # made once


async def test_the_tool_calls_pane_makes_a_detail_tab_when_it_is_first_picked(db_path: Path) -> None:
    # The Tool calls pane shows at start-up: it makes its table, its tab bar and the current tab's view; the other
    # detail tabs (text views with highlighting) are made when picked, showing the selected call then.
    from PySide6.QtWidgets import QPlainTextEdit, QTextBrowser

    from workspace import events as ev

    async with _started(db_path, inspector=True) as root:
        docks = root.window.docks
        pane = docks.tool_pane
        assert pane is not None and pane.isVisible() and pane.tabs.currentIndex() == 0
        pages = [pane.tabs.widget(i) for i in range(pane.tabs.count())]
        assert [pane.tabs.tabText(i) for i in range(len(pages))] == ["Arguments", "Result", "Output", "Raw", "Diff"]

        def made(index: int) -> bool:
            page = pages[index]
            return page is not None and bool(page.findChildren(QTextBrowser) or page.findChildren(QPlainTextEdit))

        assert [made(i) for i in range(len(pages))] == [True, False, False, False, False]
        docks.add_events([
            ev.ToolUse(run_id="r1", robot="assistant", seq=1, id="c1", name="read_file", input={"path": "notes.md"}),
            ev.ToolResult(run_id="r1", robot="assistant", seq=2, id="c1", name="read_file",
                          payload={"data": {"text": "the notes' first line"}}, duration=0.2)])
        await wait_until(lambda: pane.model.rowCount() == 1, what="the call in the table")
        pane.select_call("c1")
        assert "notes.md" in pane.tabs.currentWidget().findChild(QTextBrowser).toPlainText()  # type: ignore[union-attr]
        assert [made(i) for i in range(len(pages))] == [True, False, False, False, False]
        pane.tabs.setCurrentIndex(1)  # the person picks Result: its view made, showing the selected call's result
        assert made(1) and not made(3)
        result = pages[1].findChild(QTextBrowser)  # type: ignore[union-attr]
        assert result is pane.result_view and result.isVisible() and "the notes' first line" in result.toPlainText()
        pane.tabs.setCurrentIndex(2)  # Output: the pager and view made (read_file printed nothing)
        assert made(2) and pane.output_view.isVisible() and pane.output_view.toPlainText() == ""
        raw = pane.raw_view  # asked for by code: made then, showing the call
        assert made(3) and raw is pages[3].findChild(QTextBrowser) and '"c1"' in raw.toPlainText()  # type: ignore[union-attr]
        assert not made(4)
