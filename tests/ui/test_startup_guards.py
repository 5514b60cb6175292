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

from tests.fakes.app_window import close_app, wait_until

ROOT = Path(__file__).resolve().parents[2]

#: The most widgets one start-up step may make (the MCP servers pane, the largest, makes about 55 in its step: its
#: Output and Log tabs and its sign-in row come when first needed; the Changes pane is made in two steps).
WIDGETS_PER_STEP = 60


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


async def test_each_pane_is_made_inside_its_dock(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A pane made in the window and then moved into its dock had the style sheet worked out anew for every one of
    # its widgets: each pane is made with its dock as its parent (a dock that comes with its pane is made first).
    from PySide6.QtWidgets import QDockWidget

    import ui.mcp.pane
    import ui.review.pane

    parents: dict[str, Any] = {}
    for key, module in (("changes", ui.review.pane), ("mcp", ui.mcp.pane)):
        def noted(context: Any, key: str = key, make: Any = module.make_pane) -> Any:
            pane = make(context)
            parents[key] = (context.parent, pane.parentWidget() if pane is not None else None)
            return pane

        monkeypatch.setattr(module, "make_pane", noted)
    async with _started(db_path) as root:
        docks = root.window.docks
        assert set(parents) == {"changes", "mcp"}
        for key, (given, parent) in parents.items():
            assert isinstance(given, QDockWidget) and parent is given, (key, given, parent)
            assert docks[key] is given and given.widget() is docks.panes[key]


async def test_the_mcp_pane_makes_its_output_and_log_tabs_when_they_first_show(db_path: Path, robotlab_home: Path) -> None:
    # The MCP servers pane is made at start-up behind the inspector's tabs: its Output and Log tabs (text views) and
    # its sign-in row are made when first needed, and show then what came before.
    from PySide6.QtWidgets import QComboBox, QPlainTextEdit, QPushButton

    from workspace.mcp import set_default_manager

    def sign_in_buttons() -> list[QPushButton]:
        return [b for b in pane.findChildren(QPushButton) if b.text() in ("Sign in", "Copy link", "Sign out")]

    config = robotlab_home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("mcpServers:\n  grumpy:\n    command: /bin/sh\n"
                      "    args: ['-c', 'echo the grumpy server will not start >&2; exit 3']\n", encoding="utf-8")
    set_default_manager(None)  # a fresh manager for this configuration
    try:
        async with _started(db_path) as root:
            docks = root.window.docks
            pane = docks.panes["mcp"]
            tabs = pane.output_tabs
            assert [tabs.tabText(i) for i in range(tabs.count())] == ["Output", "Log"]
            assert not tabs.findChildren(QPlainTextEdit) and not tabs.findChildren(QComboBox)
            assert not sign_in_buttons()
            assert [s.name for s in pane.model.statuses] == ["grumpy"]
            pane.table.selectRow(0)
            pane.start_button.click()
            await wait_until(lambda: str(pane.current().state) == "failed", timeout=60, what="the server to fail")
            await wait_until(lambda: any("will not start" in line for line in pane.current().stderr), timeout=30,
                             what="the server's stderr in its status")
            assert not tabs.findChildren(QPlainTextEdit)  # its output came while nobody looked: not made yet
            docks.focus_dock("mcp")  # the person opens the MCP servers dock: its Output tab is in front
            await wait_until(lambda: pane.isVisible(), what="the MCP servers pane shown")
            output = tabs.currentWidget()
            assert isinstance(output, QPlainTextEdit) and output is pane.stderr and output.isVisible()
            assert "the grumpy server will not start" in output.toPlainText()
            assert not tabs.findChildren(QComboBox)  # the Log tab (its level filter and lines): made when picked
            tabs.setCurrentIndex(1)
            log_page = tabs.currentWidget()
            assert log_page is not None and log_page.findChild(QComboBox) is pane.log_level and pane.log_view.isVisible()
            assert pane.log_level.count() == 4 and tabs.tabText(0) == "Output"
            assert not sign_in_buttons()  # a local server: no sign-in
    finally:
        set_default_manager(None)


async def test_the_changes_pane_is_made_in_steps_and_counts_the_changes_once_whole(db_path: Path) -> None:
    # The Changes pane is made in two start-up steps (no step holds the window more than a frame); what waits for
    # review shows as soon as the pane is whole: its count in the dock's tab and the status bar's badge.
    from PySide6.QtWidgets import QDockWidget

    import ui.review.pane
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    window = root.window
    try:
        window.show()
        for _ in window.build_steps():
            pass
        root._read_config()
        root._open_workspace()
        made: list[ui.review.pane.ChangesPane] = []
        steps = window.docks.inspector_steps()
        dock = window.docks["changes"]
        while not made:  # to the step that made the pane's first part
            next(steps)
            made = [p for p in dock.findChildren(ui.review.pane.ChangesPane) if p.parentWidget() is dock]
        pane = made[0]
        assert not hasattr(pane, "view") and "changes" not in window.docks.panes  # its files and diff: the next step
        next(steps)
        assert pane.view.parentWidget() is pane.stack and "changes" not in window.docks.panes
        for _ in steps:
            pass
        assert window.docks.changes_pane is pane and dock.widget() is pane
        badge: list[int] = []
        pane.pending_changed.connect(badge.append)
        pane._pending_shown = -1
        pane.refresh_title()
        assert badge == [0] and dock.windowTitle() == "Changes"
        whole = ui.review.pane.ChangesPane(root.controller)  # made outside start-up: whole at once
        assert whole.view.parentWidget() is whole.stack and list(whole.build_steps()) == []
        assert isinstance(dock, QDockWidget)
    finally:
        await close_app(root)


def no_pane(_context: Any) -> None:
    """A pane factory that has no pane for this window (as MCP's without its SDK)."""
    return None


async def test_an_early_dock_whose_pane_cannot_be_made_leaves_the_window(db_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                         ) -> None:
    # The MCP servers dock is made early (empty, its tab in place); without a pane the window has no such dock.
    from PySide6.QtWidgets import QDockWidget

    from ui.window import docks as docks_module

    line = docks_module.DockSpec("nothing", "Nothing", "tests.ui.test_startup_guards:no_pane", "note", early=True)
    monkeypatch.setattr(docks_module, "DOCKS", (*docks_module.DOCKS, line))
    async with _started(db_path) as root:
        docks = root.window.docks
        assert "nothing" not in docks and "nothing" not in docks.panes and docks.pane("nothing") is None
        await wait_until(lambda: not [d for d in root.window.findChildren(QDockWidget)
                                      if d.objectName() == "dock-nothing"], what="the empty dock gone")
        assert "Show Nothing" not in {a.text() for a in root.window.findChildren(type(docks["tools"].toggleViewAction()))
                                      if a.isVisible()}
        assert docks.mcp_pane is not None and docks["mcp"].widget() is docks.mcp_pane  # the others as they were


async def test_the_sidebar_is_made_over_two_steps_its_thread_list_in_the_second(db_path: Path) -> None:
    # Whole, the sidebar held the window's thread more than a frame: its header and search box in one step, its list
    # in the next; what shows is the same (the sidebar shows with the rest of the window, at the last step).
    from PySide6.QtWidgets import QLineEdit, QListView

    from ui.app import Application
    from ui.threads.sidebar import Sidebar

    root = Application(db_path=db_path, theme_name="light", defer=True)
    window = root.window
    try:
        window.show()
        steps = window.build_steps()
        while "sidebar" not in vars(window):
            next(steps)
        sidebar = window.sidebar
        assert sidebar.findChild(QLineEdit, "SearchField") is not None
        assert sidebar.findChild(QListView) is None  # not in the search box's step
        next(steps)
        assert sidebar.findChild(QListView) is sidebar.list and sidebar.list.model() is window.thread_model
        for _ in steps:
            pass
        assert window.built and sidebar.isVisible() and sidebar.list.isVisible()
        whole = Sidebar(window.thread_model)  # made outside start-up: whole at once
        assert whole.list.model() is window.thread_model and list(whole.build_steps()) == []
    finally:
        await close_app(root)


async def test_the_application_icon_is_drawn_once_not_again_for_the_sidebar_logo(db_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # The icon is drawn at four sizes (up to 256 px) for the application and the window; drawn again for the
    # sidebar's logo, it cost the sidebar's step a few milliseconds.
    from ui import theme
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        root.window.show()
        drawn: list[int] = []
        render = theme._render

        def noted(svg: str, px: int) -> Any:
            drawn.append(px)
            return render(svg, px)

        monkeypatch.setattr(theme, "_render", noted)
        root.window.build()
        assert 256 not in drawn, drawn
        assert theme.app_icon() is theme.app_icon()
    finally:
        await close_app(root)


async def test_the_commands_are_added_over_two_steps(db_path: Path) -> None:
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    window = root.window
    try:
        window.show()
        added: list[int] = []
        steps = window.build_steps()
        while True:
            before = len(window.commands.by_name)
            try:
                next(steps)
            except StopIteration:
                break
            added.append(len(window.commands.by_name) - before)
        commands = [n for n in added if n > 5]  # (the docks' View actions come a few per step)
        assert len(commands) == 2 and max(commands) < 30, added
        assert {"new_thread", "palette", "about"} <= set(window.commands.by_name)
    finally:
        await close_app(root)


async def test_command_icons_are_drawn_when_their_menu_first_shows_and_the_shortcuts_work_at_once(
        db_path: Path) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    async with _started(db_path) as root:
        window = root.window
        commands = window.commands
        new_thread, palette = commands.by_name["new_thread"], commands.by_name["palette"]
        assert new_thread.icon().isNull() and palette.icon().isNull()  # not drawn at start-up
        window.activateWindow()
        QTest.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)  # right after start-up
        await wait_until(lambda: window.command_palette.isVisible(), timeout=10, what="the palette open")
        window.command_palette.hide()
        assert commands.file_menu is not None and commands.view_menu is not None
        commands.file_menu.popup(window.mapToGlobal(window.rect().center()))
        await wait_until(lambda: not new_thread.icon().isNull(), timeout=10, what="the File menu's icons")
        commands.file_menu.hide()
        assert not palette.icon().isNull()  # every command's, at the first menu shown
        assert new_thread.property("iconName") == "plus"


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
    async with _started(db_path) as root:
        assert root.window.built
        assert readers == [False]


def test_the_thread_list_lays_out_its_rows_from_one_rows_size(qapp: QApplication,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The delegate asked row by row, a user's few thousand threads held the window's thread 30-40 ms of a busy
    # machine's CPU in one go, right after start-up read the thread list. Every row is as tall as the others, so the
    # list asks one row (again after the model is reset: a search's rows are taller) and places the rest from it.
    from PySide6.QtCore import QEvent

    from ui.threads.model import ThreadItem, ThreadListModel
    from ui.threads.sidebar import Sidebar, ThreadDelegate

    asked: list[int] = []
    size_hint = ThreadDelegate.sizeHint

    def counted(self: ThreadDelegate, option: Any, index: Any) -> Any:
        asked.append(index.row())
        return size_hint(self, option, index)

    monkeypatch.setattr(ThreadDelegate, "sizeHint", counted)
    model = ThreadListModel()
    sidebar = Sidebar(model)
    model.setParent(sidebar)  # (goes with it)
    sidebar.resize(260, 600)
    sidebar.show()
    model.set_threads([ThreadItem(thread_id=f"t{i}", title=f"Thread {i}", robot="assistant") for i in range(500)])
    qapp.processEvents()
    view = sidebar.list
    assert len(asked) <= 5, f"the delegate was asked {len(asked)} rows' sizes"
    rows = {view.visualRect(model.index(row)).height() for row in (0, 1, 250, 499)}
    assert rows == {ThreadDelegate.ROW_HEIGHT}
    asked.clear()
    model.set_hits([ThreadItem(thread_id=f"t{i}", title=f"Thread {i}", snippet="a match", turn_id=f"u{i}")
                    for i in range(500)])
    qapp.processEvents()
    assert len(asked) <= 5
    rows = {view.visualRect(model.index(row)).height() for row in (0, 1, 250, 499)}
    assert rows == {ThreadDelegate.HIT_HEIGHT}  # measured again for a search's rows
    sidebar.close()
    sidebar.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


async def test_every_dock_is_in_the_window_before_the_panes_come(db_path: Path) -> None:
    # A dock added to the main window, or the docks' width set, lays out the whole window again (the chat, the
    # sidebar, every dock): the docks, empty, and their width for their tabs come with the window's widgets; the
    # inspector's steps only put each pane in its dock.
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    window = root.window
    late: list[str] = []
    add_dock, resize_docks = window.addDockWidget, window.resizeDocks

    def added(area: Any, dock: Any, *args: Any) -> None:
        if window.built:
            late.append(f"addDockWidget {dock.objectName()}")
        add_dock(area, dock, *args)

    def resized(docks: Any, sizes: Any, orientation: Any) -> None:
        if window.built:
            late.append(f"resizeDocks {[d.objectName() for d in docks]} {sizes}")
        resize_docks(docks, sizes, orientation)

    window.addDockWidget = added  # type: ignore[method-assign]
    window.resizeDocks = resized  # type: ignore[method-assign]
    try:
        window.show()
        steps = window.build_steps()
        for _ in steps:
            pass
        made = dict(window.docks.items())
        assert set(made) == {"tools", "changes", "memory", "trace", "mcp", "network"}
        root.finish_startup(staged=True)
        await wait_until(lambda: root.whole, timeout=120, what="the start-up")
        assert late == []
        assert dict(window.docks.items()) == made  # the same docks, each with its pane now (or its placeholder)
        assert {"tools", "changes", "mcp"} <= set(window.docks.panes)
        assert all(made[key].widget() is pane for key, pane in window.docks.panes.items())
    finally:
        await close_app(root)


async def test_a_steps_leftover_work_has_a_turn_of_the_event_loop_of_its_own(db_path: Path) -> None:
    # What a step leaves Qt (its widgets' polish, the layouts, their paint: posted events) is done before the next
    # step starts, and a timer runs in between: the two are not one long stall of the window. A timer of 0 ms notes
    # each pass of the timers; each step posts an event standing for its leftover work.
    from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer

    from ui.app import Application

    log: list[str] = []

    class Receiver(QObject):
        def event(self, event: QEvent) -> bool:
            if event.type() == QEvent.Type.User:
                log.append("leftover")
                return True
            return super().event(event)

    receiver = Receiver()
    ticks = QTimer()
    ticks.setInterval(0)
    ticks.timeout.connect(lambda: log.append("timer") if log and log[-1] != "timer" else None)

    def steps() -> Any:
        for i in range(6):
            log.append(f"step {i}")
            QCoreApplication.postEvent(receiver, QEvent(QEvent.Type.User))
            yield

    root = Application(db_path=db_path, theme_name="light", defer=True)
    done: list[bool] = []
    try:
        ticks.start()
        root._run_steps(steps(), then=lambda: done.append(True))
        await wait_until(lambda: done, timeout=60, what="the steps")
        ticks.stop()
        for i in range(1, 6):
            before = log[:log.index(f"step {i}")]
            leftover = len(before) - 1 - before[::-1].index("leftover")  # the previous step's
            assert "timer" in before[leftover:], f"step {i} ran in the pass of step {i - 1}'s leftover work: {log}"
    finally:
        await close_app(root)


async def test_on_a_screen_too_narrow_for_the_inspector_its_panes_are_made_in_closed_docks(db_path: Path) -> None:
    # The inspector closes on a screen too narrow for it beside the chat (here: the offscreen screen). It closes once
    # its docks are there, before its panes come: made in open docks and closed after, the panes were laid out and
    # painted for nothing, and the whole window laid out again when they closed.
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    docks = root.window.docks
    shown: dict[str, bool] = {}
    for key in ("tools", "changes", "mcp"):
        docks.when_made(key, lambda pane, key=key: shown.setdefault(key, docks[key].isVisible()))
    try:
        root.window.show()
        root.finish_startup(staged=True)
        await wait_until(lambda: root.whole, timeout=120, what="the start-up")
        assert docks.raised() is None and not any(dock.isVisible() for dock in docks.values())  # closed: too narrow
        assert shown == {"tools": False, "changes": False, "mcp": False}
        docks.toggle_inspector()  # Ctrl+I: the inspector opens, its panes in it
        assert docks.raised() == "tools" and docks["tools"].widget() is docks.panes["tools"]
    finally:
        await close_app(root)
