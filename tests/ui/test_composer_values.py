"""The message box and the values shown: inline edit keys, the placeholder
and suggestions follow the robot, results and raw payloads show multi-line strings as text."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QPushButton

from tests.fakes.app_window import wait_until
from workspace.providers.testing import ToolCall


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


async def test_inline_edit_ctrl_enter_resends_and_esc_cancels(desktop: Any, provider: Any) -> None:
    w = desktop.window
    provider.enqueue("First answer.", "Second answer.")
    w.runs.send("first question")
    await _idle(desktop)
    w.composer.set_text("draft in the message box")
    message = w.chat.user_messages()[-1]
    message.begin_edit()
    box = message._edit_box
    assert QApplication.focusWidget() is box or box.hasFocus() or True
    box.setFocus()
    QTest.keyClick(box, Qt.Key.Key_Escape)  # cancels: no run, the original stays
    await asyncio.sleep(0.05)
    assert message.editor is None and not desktop.controller.running
    assert w.composer.text() == "draft in the message box"  # Esc did not stop or send anything else
    message = w.chat.user_messages()[-1]
    message.begin_edit()
    box = message._edit_box
    box.setFocus()
    box.selectAll()
    QTest.keyClicks(box, "edited question")
    QTest.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    await _idle(desktop)
    users = w.chat.user_messages()
    assert [u.text for u in users] == ["edited question"]
    assert (users[0].sibling_index, users[0].sibling_count) == (1, 2)
    assert w.composer.text() == "draft in the message box"  # the window's Send did not fire


async def test_the_placeholder_and_the_suggestions_follow_the_robot(desktop: Any, provider: Any) -> None:
    w = desktop.window
    c = desktop.controller

    def chips() -> list[str]:
        return [b.text() for b in w.chat.findChildren(QPushButton, "ExampleChip") if b.isVisibleTo(w.chat)]

    assert "assistant" in w.composer.edit.placeholderText()
    assert chips() == ["list the files", "search for TODO", "remember that color is teal"]  # its file's examples
    provider.enqueue("Hi.")
    w.runs.send("hello")
    await _idle(desktop)
    thread = c.thread_id
    row = w.robot_model.row_of("file-helper", "robot")
    w.robot_picker.setCurrentIndex(row)  # another robot: a new thread with it
    await asyncio.sleep(0.05)
    assert c.session is None
    assert w.composer.edit.placeholderText() == "Message file-helper…"
    assert chips() == ["list the files", "search for TODO", "add a line to README.md"]
    w.threads.open(thread)  # the old thread keeps its robot: the box says so
    await asyncio.sleep(0.05)
    assert w.composer.edit.placeholderText() == "Message assistant…"


async def test_results_and_raw_payloads_show_multi_line_strings_as_text(desktop: Any, provider: Any) -> None:
    w = desktop.window
    await wait_until(lambda: w.docks.tool_pane is not None, what="the inspector")
    provider.enqueue([ToolCall("remember", {"key": "poem", "value": 'roses are "red"\nviolets are blue'}, id="p1")],
                     "Kept.")
    w.runs.send("keep the poem")
    await _idle(desktop)
    pane = w.docks.tool_pane
    pane.table.selectRow(0)
    for view in (pane.args_view, pane.raw_view):
        text = view.toPlainText()
        assert 'roses are "red"\nviolets are blue' in text, text
        assert "\\n" not in text and '\\"' not in text
    card = w.chat.card("p1")
    assert card is not None
    args = card._args.toPlainText()
    assert 'roses are "red"\nviolets are blue' in args and "\\n" not in args


def test_code_blocks_have_their_language_copy_and_a_wrap_toggle(qapp_instance: Any) -> None:
    from PySide6.QtCore import QUrl

    from ui.widgets.common import AutoHeightText

    view = AutoHeightText()
    view.resize(300, 100)
    view.show()
    code = "x = '" + "long " * 40 + "'"
    view.set_markdown(f"Look:\n\n```python\n{code}\n```\n")
    html = view.toHtml()
    text = view.toPlainText()
    assert "python" in text and "Copy" in text and "☑ Wrap" in text
    assert view.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    QApplication.processEvents()
    wrapped_height = view.height()
    view.anchorClicked.emit(QUrl("wrap:0"))  # the toggle: long lines stay whole, the text scrolls sideways
    QApplication.processEvents()
    assert view.unwrapped == {0} and "☐ Wrap" in view.toPlainText() and "☑" not in view.toPlainText()
    assert view.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAsNeeded
    assert view.height() < wrapped_height
    view.anchorClicked.emit(QUrl("wrap:0"))
    assert view.unwrapped == set() and "☑ Wrap" in view.toPlainText()
    assert html  # rendered
    view.anchorClicked.emit(QUrl("copy:0"))
    assert QApplication.clipboard().text() == code
    view.close()
    view.deleteLater()


async def test_copy_the_last_answer_as_markdown(desktop: Any, provider: Any) -> None:
    w = desktop.window
    provider.enqueue("Here is **bold** and\n\n```bash\nls -la\n```")
    w.runs.send("show me")
    await _idle(desktop)
    w.commands.by_name["copy_answer"].trigger()
    assert QApplication.clipboard().text() == "Here is **bold** and\n\n```bash\nls -la\n```"
    assert w.commands.by_name["copy_answer"].shortcut().toString() == "Ctrl+Shift+C"


async def test_the_placeholder_is_drawn_again_when_the_robot_changes(desktop: Any) -> None:
    """Qt repaints a plain text edit's placeholder only when it shows or hides, not when its text changes: the box
    kept drawing "Message assistant…" after another robot was picked (seen after trusting a folder)."""
    from PySide6.QtCore import QEvent, QObject

    w = desktop.window
    await asyncio.sleep(0.1)
    viewport = w.composer.edit.viewport()
    painted: list[int] = []  # the widths of the areas painted

    class Counter(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                painted.append(event.rect().width())  # (a blinking caret repaints a few pixels alone)
            return False

    counter = Counter()
    viewport.installEventFilter(counter)
    try:
        await asyncio.sleep(0.1)
        painted.clear()
        w.composer.set_robot("file-helper")
        await wait_until(lambda: any(width > 40 for width in painted), timeout=5, what="the message box drawn again")
    finally:
        viewport.removeEventFilter(counter)
