"""The window's fit and finish (session 22): the message box keeps its text full width at every size (the
model picker and the buttons sit on a row under it), the picker follows a model changed in Settings, the
keyboard comes back to the message box once an approval is decided, the command palette lists robots and
threads and says when nothing matches, and the labels say the same thing once, the same way."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from tests.fakes.app_window import running_app, wait_until
from workspace.config import load_config
from workspace.providers.testing import ToolCall

SIZES = ((1024, 640), (1280, 720), (1920, 1080))
SENTENCE = "The quick brown fox jumps over the lazy dog while the robot reads every note in the folder. " * 3


async def _settle(turns: int = 6) -> None:
    for _ in range(turns):
        await asyncio.sleep(0.02)


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await _settle(3)


def _top_in(widget: QWidget, ancestor: QWidget) -> int:
    return widget.mapTo(ancestor, QPoint(0, 0)).y()


def _visible_texts(widget: QWidget) -> list[str]:
    return [label.text() for label in widget.findChildren(QLabel) if label.isVisibleTo(widget) and label.text()]


# -- 1. the message box keeps the full width ------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_message_box_keeps_its_text_full_width_at_every_size(db_path: Path, size: tuple[int, int]) -> None:
    from workspace.providers.demo import DemoProvider

    async with running_app(provider=DemoProvider(delay=0.001), db_path=db_path, theme_name="light",
                           size=size) as root:
        window = root.window
        await wait_until(lambda: window.docks.tool_pane is not None, what="the docks")
        await _settle()
        composer, picker = window.composer, window.models.picker
        box = composer.frame
        edit = composer.edit
        assert picker.isVisible() and picker.label() == "Offline demo · default"
        # The text has the box's whole width: the picker and the buttons are on a row of their own, under it.
        assert edit.viewport().width() >= 0.9 * box.width(), (edit.viewport().width(), box.width())
        for control in (picker, composer.attach_button, composer.button):
            assert control.isVisible()
            assert _top_in(control, box) >= _top_in(edit, box) + edit.height() - 1, control.objectName()
        # A long message wraps at the box's width: its first line holds most of what fits, never a few words.
        composer.set_text(SENTENCE)
        await _settle(2)
        layout = edit.document().firstBlock().layout()
        assert layout.lineAt(0).naturalTextWidth() >= 0.8 * edit.viewport().width()
        # The box grows to show every line (up to ten): none scrolled out of sight, at this width.
        assert layout.lineCount() <= 10
        whole = layout.lineCount() * layout.lineAt(0).height() + 2 * edit.document().documentMargin()
        assert edit.viewport().height() >= whole and edit.verticalScrollBar().value() == 0
        # The placeholder names the robot and fits on the line.
        composer.set_text("")
        assert edit.placeholderText() == "Message assistant…"
        assert edit.fontMetrics().horizontalAdvance(edit.placeholderText()) < edit.viewport().width()


# -- 2. the picker follows Settings ---------------------------------------------------------------------------
async def test_the_model_picker_follows_a_model_changed_in_settings(db_path: Path) -> None:
    config = load_config(env={})
    async with running_app(db_path=db_path, config=config, theme_name="light", size=(1280, 720)) as root:
        window, controller = root.window, root.controller
        await wait_until(lambda: window.docks.tool_pane is not None, what="the docks")
        picker = window.models.picker
        assert picker.label() == "Offline demo · default"
        window.runs.send("hello")  # the offline demo answers: a thread is open
        await _idle(root)
        assert controller.session is not None
        window.settings_flow.open_settings()
        dialog = window.settings_flow.dialog
        dialog.model.setEditText("ollama_chat/llama3.1")
        dialog.save()
        await _settle()
        assert controller.session.robot.model == "ollama_chat/llama3.1"  # what the next run uses
        assert picker.label() == "llama3.1 · default"  # and what the picker says
        window.threads.new()
        await _settle()
        assert picker.label() == "llama3.1 · default"


async def test_the_pickers_and_commands_come_back_after_each_run(db_path: Path) -> None:
    """A run's end is told by the bridge (its events fed) and by the run's record (its task done), in either order:
    the robot picker, the model picker and the commands a run holds come back after each run, whichever is last."""
    config = load_config(env={})
    async with running_app(db_path=db_path, config=config, theme_name="light", size=(1280, 720)) as root:
        window, controller = root.window, root.controller
        await wait_until(lambda: window.docks.tool_pane is not None, what="the docks")
        for message in ("hello", "list the files", "search for TODO", "list the files"):
            window.runs.send(message)
            await wait_until(lambda: controller.running, what="the run to start")
            await _idle(root)
            assert window.robots.picker.isEnabled(), message
            assert window.models.picker.isEnabled(), message
            assert window.commands.by_name["regenerate"].isEnabled(), message


# -- 3. the keyboard comes back to the message box ------------------------------------------------------------
@pytest.mark.parametrize("how", ["y key", "approve click", "deny by key", "deny click"])
async def test_the_keyboard_goes_back_to_the_message_box_after_an_approval(desktop: Any, provider: Any,
                                                                         how: str) -> None:
    window = desktop.window
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Done.")
    window.activateWindow()
    window.composer.focus()
    window.runs.send("store k")
    await wait_until(lambda: window.chat.pending_approval() is not None, what="the approval card")
    window.runs.focus_approval()  # Ctrl+J
    panel = window.chat.pending_approval()
    assert QApplication.focusWidget() is panel
    if how == "y key":
        QTest.keyClick(panel, Qt.Key.Key_Y)
    elif how == "approve click":
        QTest.mouseClick(panel.approve_button, Qt.MouseButton.LeftButton)
    elif how == "deny by key":
        QTest.keyClick(panel, Qt.Key.Key_N)
        assert QApplication.focusWidget() is panel.reason
        QTest.keyClicks(panel.reason, "not now")
        QTest.keyClick(panel.reason, Qt.Key.Key_Return)
    else:
        QTest.mouseClick(panel.deny_button, Qt.MouseButton.LeftButton)
    await _idle(desktop)
    assert QApplication.focusWidget() is window.composer.edit
    QTest.keyClicks(QApplication.focusWidget(), "next")
    assert window.composer.text() == "next"


async def test_a_second_approval_waiting_gets_the_keyboard_first(desktop: Any, provider: Any) -> None:
    window = desktop.window
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "a", "value": 1}, id="c1"),
                      ToolCall("remember", {"key": "b", "value": 2}, id="c2")], "Done.")
    window.activateWindow()
    window.runs.send("store a and b")
    await wait_until(lambda: len(window.chat.approvals) == 2, what="both approvals (the calls run together)")
    window.runs.focus_approval()
    first = window.chat.pending_approval()
    QTest.keyClick(first, Qt.Key.Key_Y)
    await _settle(2)
    assert first.done and QApplication.focusWidget() is window.chat.pending_approval() is not first
    QTest.keyClick(window.chat.pending_approval(), Qt.Key.Key_Y)
    await _idle(desktop)
    assert QApplication.focusWidget() is window.composer.edit


# -- 4. the command palette -------------------------------------------------------------------------------
async def test_the_palette_says_when_nothing_matches(desktop: Any) -> None:
    window = desktop.window
    QTest.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    palette = window.command_palette
    assert palette.isVisible() and not palette.empty_note.isVisible()
    QTest.keyClicks(palette.input, "qqqzzz")
    assert palette.labels() == []
    assert palette.empty_note.isVisible() and "No matches" in palette.empty_note.text()
    QTest.keyClick(palette.input, Qt.Key.Key_Backspace)
    palette.input.clear()
    assert palette.labels() and not palette.empty_note.isVisible()


async def test_the_palette_lists_robots_and_threads_and_opens_them(desktop: Any, provider: Any) -> None:
    window, controller = desktop.window, desktop.controller
    provider.enqueue("Hi there.")
    window.runs.send("plan the garden beds")
    await _idle(desktop)
    first = controller.thread_id
    window.threads.new()
    await _settle()
    palette = window.command_palette
    window.commands.open_palette()
    labels = palette.labels()
    assert "Robot: file-helper" in labels and "Robot: assistant" in labels
    assert "Thread: plan the garden beds" in labels
    # choosing a thread opens it
    QTest.keyClicks(palette.input, "garden beds")
    assert palette.labels()[0] == "Thread: plan the garden beds"
    QTest.keyClick(palette.input, Qt.Key.Key_Return)
    await _settle()
    assert not palette.isVisible() and controller.thread_id == first
    # choosing a robot switches to it: the open thread keeps its robot, so a new thread starts with it
    window.commands.open_palette()
    QTest.keyClicks(palette.input, "file-helper")
    assert palette.labels()[0] == "Robot: file-helper"
    QTest.keyClick(palette.input, Qt.Key.Key_Return)
    await _settle()
    assert controller.robot_name == "file-helper"
    assert window.robot_picker.currentText() == "file-helper"
    assert controller.thread_id != first
    assert window.composer.edit.placeholderText() == "Message file-helper…"


# -- 5. labels ----------------------------------------------------------------------------------------------
def test_the_offline_demo_is_named_the_same_everywhere() -> None:
    from ui.chat.composer.model_picker import short_name

    assert short_name(None) == short_name("") == short_name("offline-demo") == short_name("demo") == "Offline demo"
    assert short_name("ollama_chat/llama3.1") == "llama3.1"


def test_the_robot_list_names_the_demo_by_its_label(qapp_instance: Any) -> None:
    from types import SimpleNamespace

    from ui.network.robots import DEMO_LABEL, RobotListModel
    from workspace.providers.demo import DEMO_LABEL as CORE_LABEL

    assert DEMO_LABEL == CORE_LABEL == "Offline demo (no language model)"
    model = RobotListModel(default_model="offline-demo")
    assert model.model_label(SimpleNamespace(name="a", model=None)) == DEMO_LABEL
    assert model.model_label(SimpleNamespace(name="b", model="demo")) == DEMO_LABEL
    assert model.model_label(SimpleNamespace(name="c", model="openai/gpt-4o-mini")) == "openai/gpt-4o-mini"


async def test_a_denied_tool_card_says_denied_once(desktop: Any, provider: Any) -> None:
    window = desktop.window
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Understood.")
    window.runs.send("store k")
    await wait_until(lambda: window.chat.pending_approval() is not None, what="the approval card")
    panel = window.chat.pending_approval()
    panel.reason.setText("not now")
    panel.deny()
    await _idle(desktop)
    card = window.chat.card("c1")
    assert card is not None and card.status == "denied"
    box = card._error_box
    shown = " ".join(_visible_texts(card) + ([box.toPlainText()] if box is not None and box.isVisibleTo(card) else []))
    assert shown.count("not now") == 1, shown  # the reason once, in the note
    assert shown.count("Denied") == 1 and "Denied by the user" not in shown, shown


async def test_the_picker_shows_its_whole_label_when_there_is_room(qapp_instance: Any) -> None:
    from ui.chat.composer.composer import Composer
    from ui.chat.composer.model_picker import ModelPicker

    composer = Composer()
    picker = ModelPicker()
    composer.add_side_widget(picker)
    composer.resize(800, 160)
    composer.show()
    await _settle(2)
    picker.set_current("scripted-example", default="scripted-example", is_default=True)  # longer than before
    await _settle(2)
    assert picker.label() == "scripted-example · default"
    assert picker.text() == picker.label(), picker.text()  # the row has room: not cut to "scripted-example · def…"
    composer.close()
    composer.deleteLater()


async def test_a_click_in_the_box_beside_its_buttons_puts_the_keyboard_in_it(desktop: Any) -> None:
    window = desktop.window
    window.activateWindow()
    composer = window.composer
    window.sidebar.search.setFocus()
    await _settle(2)
    row_y = composer.button.mapTo(composer.frame, QPoint(0, composer.button.height() // 2)).y()
    empty = QPoint(composer.frame.width() - composer.button.width() - 40, row_y)  # between the picker and Send
    assert composer.frame.childAt(empty) is None
    QTest.mouseClick(composer.frame, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, empty)
    assert QApplication.focusWidget() is composer.edit


async def test_a_relaunch_restores_the_folder_and_the_network_threads_graph(db_path: Path, tmp_path: Path) -> None:
    """Closed with a folder open and a network thread open, the window starts again in the same folder, on the
    same thread, with the network's graph drawn in the Network dock."""
    from workspace.providers.demo import DemoProvider

    folder = tmp_path / "garden"
    folder.mkdir()
    (folder / "notes.txt").write_text("Plant tomatoes in May.\n", encoding="utf-8")
    async with running_app(provider=DemoProvider(delay=0.001), db_path=db_path, theme_name="light",
                           size=(1280, 720)) as first:
        w = first.window
        await wait_until(lambda: w.docks.network_pane is not None, what="the inspector")
        assert w.folder_flow.switch_folder(folder)
        w.robot_picker.setCurrentIndex(w.robot_model.row_of("support-triage", "network"))
        w.runs.send("I was charged twice")
        await _idle(first)
        thread_id = first.controller.thread_id
        assert thread_id is not None and w.docks.network_pane.graph.nodes
        w.docks["network"].raise_()  # the person looks at the graph
        await _settle()
        assert w.docks.raised() == "network"
    async with running_app(provider=DemoProvider(delay=0.001), db_path=db_path, theme_name="light",
                           size=(1280, 720), defer=True) as second:
        second.finish_startup(staged=True)  # as `robotlab` starts: the frame first, the rest a step a turn
        w = second.window
        await wait_until(lambda: w.built, what="the widgets")  # (built, they fit the window to the screen)
        w.resize(1280, 720)  # not fitted to the test's small screen (the inspector would close)
        await wait_until(lambda: w.docks.network_pane is not None and second.controller.thread_id == thread_id,
                         what="the thread again")
        await _settle()
        assert second.controller.folder == folder.resolve()
        assert "garden" in w.status.folder.text()
        pane = w.docks.network_pane
        assert pane.network is not None and pane.graph.nodes, "the network's graph is drawn"
        assert set(pane.graph.nodes) == set(pane.model.tasks)
        # ... with the state of the thread's run, not every task "waiting" as if it never ran
        assert pane.model.run_status != "idle"
        assert any(task.status != "waiting" for task in pane.model.tasks.values()), \
            {name: task.status for name, task in pane.model.tasks.items()}
        await wait_until(lambda: w.docks.raised() == "network" and pane.graph.isVisible(),
                         what=f"the graph in front {w.docks.raised()} {pane.graph.isVisible()}")


async def test_the_robot_picker_shows_a_longer_name_whole_at_1024(robotlab_home: Path, db_path: Path) -> None:
    """At 1024×640 "garden-helper" showed as "garden-he…" in the header's picker: the picker fits the picked
    name (the thread's title gives way), and a very long name still ends in "…" rather than pushing the header."""
    from PySide6.QtWidgets import QStyle, QStyleOptionComboBox

    from workspace import paths

    robots = paths.user_robots_dir()
    robots.mkdir(parents=True, exist_ok=True)
    (robots / "garden-helper.md").write_text("---\ndescription: Edits the garden notes\ntools: []\n---\nYou help.",
                                             encoding="utf-8")
    async with running_app(db_path=db_path, theme_name="light", size=(1024, 640)) as root:
        w = root.window
        await wait_until(lambda: w.robot_model.row_of("garden-helper", "robot") >= 0, what="the robot")
        w.robot_picker.setCurrentIndex(w.robot_model.row_of("garden-helper", "robot"))
        await _settle()
        picker = w.robot_picker
        assert picker.currentText() == "garden-helper"
        option = QStyleOptionComboBox()
        picker.initStyleOption(option)
        field = picker.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                              QStyle.SubControl.SC_ComboBoxEditField, picker)
        room = field.width() - picker.iconSize().width() - 4
        assert picker.fontMetrics().horizontalAdvance("garden-helper") + 6 <= room, (room, picker.width())
        header = picker.parentWidget()
        assert picker.geometry().right() < header.width() and w.title_label.isVisible()
