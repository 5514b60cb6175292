"""The inspector's panes at start-up: each made inside its dock, the ones behind another tab when their tab first
shows, and the heavy parts of the ones that show (the Tool calls pane's detail tabs, the MCP pane's Output and Log
tabs, the Changes pane's second half) when first needed or in a step of their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from tests.fakes.app_window import close_app, wait_until
from tests.ui.startup_app import started


async def test_a_pane_behind_a_tab_is_made_when_its_tab_first_shows_and_shows_what_came_before(db_path: Path) -> None:
    # The Trace, Memory and Network panes are not made at start-up (nobody looks at them yet): their docks hold a
    # placeholder until their tab is chosen, their shortcut pressed, or the pane asked for.
    from workspace import events as ev

    async with started(db_path, inspector=True) as root:
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

    async with started(db_path, inspector=True) as root:
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
    async with started(db_path) as root:
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
        async with started(db_path) as root:
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


#: The panes made at start-up, each in parts (a start-up step each): the attribute each part adds, in order.
PARTS = {"tools": ("count", "table", "tabs"), "changes": ("title", "apply_button", "files", "view", "undo_button"),
         "mcp": ("summary", "table", "server_tabs")}


async def test_the_panes_made_at_start_up_are_made_a_part_per_step_and_count_the_changes_once_whole(
        db_path: Path) -> None:
    # Made whole in one step, the Tool calls, Changes and MCP servers panes (and Qt's polish and layout of what the
    # step made, in the turn after it) each held the window more than a frame: each is made a part per step (its
    # buttons, its table or file list, its detail tabs or diff; the Changes pane's title and scope, its buttons, its
    # files, its diff, its history bar), and is in its dock, and in docks.panes, once whole.
    # What waits for review shows as soon as the Changes pane is whole: its count in the dock's tab and the status
    # bar's badge. Made outside start-up, a pane is whole at once.
    from PySide6.QtWidgets import QDockWidget, QWidget

    import ui.review.pane
    from ui.app import Application
    from ui.inspector.panes import ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel

    root = Application(db_path=db_path, theme_name="light", defer=True)
    window = root.window
    try:
        window.show()
        for _ in window.build_steps():
            pass
        root._read_config()
        root._open_workspace()
        docks = window.docks
        seen: dict[str, list[tuple[tuple[str, ...], bool]]] = {key: [] for key in PARTS}
        for _ in docks.inspector_steps():
            for key, parts in PARTS.items():
                dock = docks[key]
                made = [p for p in dock.findChildren(QWidget) if p.parentWidget() is dock and hasattr(p, "build_steps")]
                if made:
                    state = (tuple(part for part in parts if part in vars(made[0])), key in docks.panes)
                    if not seen[key] or seen[key][-1] != state:
                        seen[key].append(state)
        for key, parts in PARTS.items():
            assert seen[key] == [*((parts[:n], False) for n in range(1, len(parts) + 1)), (parts, True)], (key, seen)
            pane = docks.panes[key]
            assert docks[key].widget() is pane and isinstance(docks[key], QDockWidget)
        pane = docks.changes_pane
        assert pane is not None and pane.view.parentWidget() is pane.stack
        badge: list[int] = []
        pane.pending_changed.connect(badge.append)
        pane._pending_shown = -1
        pane.refresh_title()
        assert badge == [0] and docks["changes"].windowTitle() == "Changes"
        whole = ui.review.pane.ChangesPane(root.controller)  # made outside start-up: whole at once
        assert whole.view.parentWidget() is whole.stack and list(whole.build_steps()) == []
        tools = ToolCallsPane(ToolCallsModel(), window)
        assert tools.tabs.count() == 5 and list(tools.build_steps()) == []
        tools.deleteLater()
    finally:
        await close_app(root)


async def test_an_early_dock_whose_pane_cannot_be_made_leaves_the_window(db_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                         ) -> None:
    # The MCP servers dock is made early (empty, its tab in place); without a pane the window has no such dock.
    from PySide6.QtWidgets import QDockWidget

    from ui.window import docks as docks_module

    line = docks_module.DockSpec("nothing", "Nothing", "tests.ui.startup_app:no_pane", "note", early=True)
    monkeypatch.setattr(docks_module, "DOCKS", (*docks_module.DOCKS, line))
    async with started(db_path) as root:
        docks = root.window.docks
        assert "nothing" not in docks and "nothing" not in docks.panes and docks.pane("nothing") is None
        await wait_until(lambda: not [d for d in root.window.findChildren(QDockWidget)
                                      if d.objectName() == "dock-nothing"], what="the empty dock gone")
        assert "Show Nothing" not in {a.text() for a in root.window.findChildren(type(docks["tools"].toggleViewAction()))
                                      if a.isVisible()}
        assert docks.mcp_pane is not None and docks["mcp"].widget() is docks.mcp_pane  # the others as they were
