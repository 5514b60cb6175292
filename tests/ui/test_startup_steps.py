"""What keeps each start-up step short, checked as mechanisms (never as timings): each step builds a bounded number
of widgets, the filter that keeps keys typed at the frame is out of the way while a step builds, the sidebar (three
steps), the chat's header, the message box and the commands (two each) come over several steps, icons are drawn once or when first shown, the docks are in the window before
their panes, and what a step leaves Qt has a turn of the event loop of its own."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.fakes.app_window import close_app, wait_until
from tests.ui.startup_app import started

#: The most widgets one start-up step may make (the largest steps make about 25: the MCP servers pane's details and
#: the Tool calls pane's tabs; the Tool calls and MCP servers panes are made in three steps each, the Changes pane in
#: five, the chat's header and the message box in two each, the MCP pane's Output and Log tabs and its sign-in row when
#: first needed).
WIDGETS_PER_STEP = 30


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


async def test_the_sidebar_is_made_over_three_steps_its_search_box_in_the_second_its_list_in_the_third(
        db_path: Path) -> None:
    # Whole, the sidebar held the window's thread more than a frame: its header and New thread button in one step, its
    # search box in the next, its list in the one after; what shows is the same (the sidebar shows with the rest of the
    # window, at the last step).
    from PySide6.QtWidgets import QLineEdit, QListView, QPushButton

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
        assert sidebar.findChild(QPushButton, "NewThreadButton") is sidebar.new_button
        assert sidebar.findChild(QLineEdit, "SearchField") is None  # not in the header's step
        next(steps)
        assert sidebar.findChild(QLineEdit, "SearchField") is sidebar.search
        assert sidebar.findChild(QListView) is None  # not in the search box's step
        next(steps)
        assert sidebar.findChild(QListView) is sidebar.list and sidebar.list.model() is window.thread_model
        for _ in steps:
            pass
        assert window.built and sidebar.isVisible() and sidebar.search.isVisible() and sidebar.list.isVisible()
        whole = Sidebar(window.thread_model)  # made outside start-up: whole at once
        assert whole.list.model() is window.thread_model and list(whole.build_steps()) == []
    finally:
        await close_app(root)


async def test_the_chats_header_and_message_box_are_made_over_two_steps_each(db_path: Path) -> None:
    # Whole, the chat's header (with the banner) and the message box each held the window's thread for about a frame
    # with Qt's polish of them: the header's titles, then its robot picker and buttons, then the banner; the box with
    # its text and buttons, then the completion list, the attachments' row and the hint, made in the column's widget.
    from PySide6.QtWidgets import QPlainTextEdit

    from ui.app import Application
    from ui.chat.composer.composer import Composer

    root = Application(db_path=db_path, theme_name="light", defer=True)
    window = root.window
    try:
        window.show()
        steps = window.build_steps()
        while "title_label" not in vars(window):
            next(steps)
        assert "robot_picker" not in vars(window)
        next(steps)
        assert "robot_picker" in vars(window) and "banner" not in vars(window)
        while "composer" not in vars(window):
            next(steps)
        composer = window.composer
        assert composer.findChild(QPlainTextEdit) is composer.edit and "hint" not in vars(composer)
        next(steps)
        assert composer.slash.parent() is composer.hint.parent() is composer.chips.parent() is composer.frame.parent()
        for _ in steps:
            pass
        assert window.built and composer.edit.isVisible() and composer.hint.isVisible() is not composer.compact
        whole = Composer()  # made outside start-up: whole at once
        assert whole.hint.text() and list(whole.build_steps()) == []
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

    async with started(db_path) as root:
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


@contextmanager
def _sidebar(qapp: QApplication) -> Iterator[tuple[Any, Any]]:
    """A thread list's model and the sidebar showing it (260 x 600), deleted after."""
    from PySide6.QtCore import QEvent

    from ui.threads.model import ThreadListModel
    from ui.threads.sidebar import Sidebar

    model = ThreadListModel()
    sidebar = Sidebar(model)
    model.setParent(sidebar)  # (goes with it)
    sidebar.resize(260, 600)
    sidebar.show()
    try:
        yield model, sidebar
    finally:
        sidebar.close()
        sidebar.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@contextmanager
def _calls_into_the_model(note: Callable[[types.FrameType], None]) -> Iterator[None]:
    """``note`` each call into a function of the thread list model's file (a call from Qt into Python) meanwhile."""
    from ui.threads.model import ThreadListModel

    source = sys.modules[ThreadListModel.__module__].__file__

    def called(frame: types.FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code.co_filename == source:
            note(frame)

    sys.setprofile(called)
    try:
        yield
    finally:
        sys.setprofile(None)


def test_the_thread_list_lays_out_its_rows_from_one_rows_size(qapp: QApplication,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The delegate asked row by row, a user's few thousand threads held the window's thread 30-40 ms of a busy
    # machine's CPU in one go, right after start-up read the thread list. Every row is as tall as the others, so the
    # list asks one row (again after the model is reset: a search's rows are taller) and places the rest from it.
    from ui.threads.model import ThreadItem
    from ui.threads.sidebar import ThreadDelegate

    asked: list[int] = []
    size_hint = ThreadDelegate.sizeHint

    def counted(self: ThreadDelegate, option: Any, index: Any) -> Any:
        asked.append(index.row())
        return size_hint(self, option, index)

    monkeypatch.setattr(ThreadDelegate, "sizeHint", counted)
    with _sidebar(qapp) as (model, sidebar):
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


def test_the_thread_list_is_laid_out_without_a_call_into_python_per_row(qapp: QApplication) -> None:
    # The list's layout asks the model for each row's index (twice), and each index asks the row count: counted in
    # Python, a user's 3,000 threads were 6,000 calls into Python, 10 ms of the window's thread after start-up read the
    # thread list. The model's rows are counted in C++: the layout calls into the model's Python only for the rows it
    # paints.
    from ui.threads.model import ThreadItem, ThreadListModel

    with _sidebar(qapp) as (model, sidebar):
        qapp.processEvents()
        model.set_threads([ThreadItem(thread_id=f"t{i}", title=f"Thread {i}", robot="assistant") for i in range(2000)])
        calls: list[str] = []
        with _calls_into_the_model(lambda frame: calls.append(frame.f_code.co_name)):
            qapp.processEvents()  # the list laid out and painted
        assert sidebar.list.verticalScrollBar().maximum() > 0  # laid out: all 2,000 rows
        assert len(calls) < 300, f"{len(calls)} calls into the model's Python: {sorted(set(calls))}"
        assert model.rowCount() == 2000 and model.data(model.index(1999)) == "Thread 1999"
        model.set_hits([ThreadItem(thread_id="t7", title="Thread 7", snippet="a match", turn_id="u7")])
        assert model.rowCount() == 1 and model.searching
        assert model.data(model.index(0), ThreadListModel.ThreadIdRole) == "t7"
        assert not model.flags(model.index(0)) & Qt.ItemFlag.ItemIsEditable  # a search's hit is not renamed in place


def test_a_thread_row_is_painted_from_its_item_asked_of_the_model_once(qapp: QApplication) -> None:
    # Each question a row's paint asks of the model is a call from Qt into Python: the title, the second line and
    # the run state asked one by one, the first rows painted after start-up read the thread list cost the window's
    # thread about 3 ms (a dozen rows), a quarter of it those questions. The row's item is asked once.
    from ui.threads.model import ThreadItem, ThreadListModel

    with _sidebar(qapp) as (model, sidebar):
        qapp.processEvents()
        model.set_threads([ThreadItem(thread_id=f"t{i}", title=f"Thread {i}", robot="assistant", updated=1.0)
                           for i in range(50)])
        model.set_run_states({"t1": "finished"})
        roles: list[int] = []

        def note(frame: types.FrameType) -> None:
            if frame.f_code.co_name == "data":
                roles.append(int(frame.f_locals.get("role", Qt.ItemDataRole.DisplayRole)))

        with _calls_into_the_model(note):
            sidebar.list.viewport().repaint()
        item_role = int(ThreadListModel.ItemRole)
        assert roles.count(item_role) >= 8, roles  # the rows in sight, each painted
        assert set(roles) == {item_role}, f"asked of the model besides the rows' items: {sorted(set(roles))}"
        assert model.subtitle(model.item(0)).startswith("assistant · ")  # what the second line shows
        model.set_hits([ThreadItem(thread_id="t7", title="Thread 7", snippet="a \x01match\x02", turn_id="u7")])
        assert model.subtitle(model.item(0)) == model.data(model.index(0), ThreadListModel.SubtitleRole)


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
