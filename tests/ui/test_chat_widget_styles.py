"""The chat's widgets take their look from the application's style sheet, not from a style sheet of each.

A widget's own style sheet is parsed, and the widget polished with it, for each widget: the chat makes them by
the hundred while a thread opens. So the rules of its many widgets (answer texts, robot names and badges, tool
cards' status pills, the model's thinking, notice lines, how a run ended) are the theme's (``ui.theme.chat_rules``),
picked by object names and dynamic properties.
A real thread in a real database opened in a chat view leaves no widget with a style sheet of its own; and each
kind looks, pixel for pixel in both themes, as it did with its own style sheet.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.long_threads import add_tool_thread
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

from ui import theme
from ui.chat.view.cards import ToolCard
from ui.chat.view.chat import ChatView
from ui.chat.view.messages import NoticeLine, RobotHeader, RunFooter, ThinkingBlock
from ui.transcript import LazyTranscript
from ui.widgets.common import AutoHeightText, elided_robot_chip, pill, robot_chip
from workspace.persistence import Store

#: A bound on a hang: the turns on screen come in far fewer turns of the event loop.
MOST_STEPS = 400
_CHIP = "border-radius: 8px; padding: 1px 8px; font-size: 11px; font-weight: 600;"


@pytest.fixture
def themed(qapp_instance: Any) -> Iterator[QApplication]:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply_theme(app, "light")
    yield app
    theme.apply_theme(app, "light")


def test_a_thread_opened_leaves_no_chat_widget_with_a_style_sheet_of_its_own(themed: QApplication,
                                                                              tmp_path: Path) -> None:
    store = Store(tmp_path / "tools.db")
    thread_id = add_tool_thread(store, 12)
    chat = ChatView()
    chat.resize(700, 900)
    chat.show()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        steps = 0
        while chat.turn_window.busy or not chat.tool_cards():
            assert steps < MOST_STEPS, "the turns on screen never all came"
            QApplication.processEvents()
            time.sleep(0.001)
            steps += 1
        QApplication.processEvents()
        widgets = chat.column.findChildren(QWidget)
        kinds = {type(w).__name__ for w in widgets}
        assert {"AutoHeightText", "ToolCard", "RobotHeader"} <= kinds  # the kinds a tool thread is made of
        own = sorted({f"{type(w).__name__}#{w.objectName()}" for w in widgets if w.styleSheet()})
        assert own == []
    finally:
        chat.close()
        chat.deleteLater()  # (left to the collector, a chat view's destruction in a later test's collection crashed)
        store.close()


def _old(sheet: str) -> Callable[[QWidget], None]:
    return lambda widget: widget.setStyleSheet(sheet)


def _grab(make: Callable[[QWidget], QWidget], style: Callable[[QWidget], None] | None = None) -> QImage:
    holder = QWidget()
    layout = QVBoxLayout(holder)
    widget = make(holder)
    if style is None:  # as the chat makes it: nothing in it has a style sheet of its own
        assert [w.objectName() for w in [widget, *widget.findChildren(QWidget)] if w.styleSheet()] == []
    else:
        style(widget)
    layout.addWidget(widget)
    holder.resize(420, 160)
    holder.show()
    QApplication.processEvents()
    image = holder.grab().toImage()
    holder.close()
    return image


def _answer(parent: QWidget) -> QWidget:
    view = AutoHeightText("", parent)
    view.set_markdown("**file_1.py** defines `f`:\n\n```python\ndef f():\n    pass\n```")
    return view


def _status_pill(tone: str) -> Callable[[QWidget], QWidget]:
    return lambda parent: pill("done", "", "", parent, tone=tone)


def _kinds(c: theme.Colors) -> list[tuple[str, Callable[[QWidget], QWidget], Callable[[QWidget], None]]]:
    """Each kind of widget, made as the chat makes it, with the style sheet it had of its own before."""
    robot = "assistant"
    fg, bg = theme.chip_colors(theme.badge_color(robot), c)
    chip = _old(f"QLabel#RobotChip {{ color: {fg}; background-color: {bg}; {_CHIP} }}")

    def name(parent: QWidget) -> QWidget:
        return RobotHeader(robot, parent)

    def name_style(header: QWidget) -> None:
        label = header.findChild(QLabel, "RobotName")
        assert isinstance(label, QLabel)
        label.setStyleSheet(f"color: {theme.badge_color(robot)}; font-weight: 600;")

    kinds = [
        ("answer", _answer, _old("QTextBrowser { background: transparent; border: none; padding: 0px; }")),
        ("robot chip", lambda parent: robot_chip(robot, parent), chip),
        ("elided robot chip", lambda parent: elided_robot_chip(robot, parent), chip),
        ("robot name", name, name_style),
    ]
    def thinking(parent: QWidget) -> QWidget:
        block = ThinkingBlock(parent)
        block.body.setText("First the file, then its callers.")
        return block

    def thinking_style(block: QWidget) -> None:
        assert isinstance(block, ThinkingBlock)
        block.body.setStyleSheet(f"color: {c.muted}; padding-left: 18px;")

    kinds.append(("thinking", thinking, thinking_style))
    for level, color in (("info", c.muted), ("warning", c.warning), ("error", c.error)):
        def notice(parent: QWidget, level: str = level) -> QWidget:
            return NoticeLine("The answer was cut off at the token limit.", level=level, parent=parent)

        def notice_style(line: QWidget, color: str = color) -> None:
            assert isinstance(line, NoticeLine)
            line.label.setStyleSheet(f"color: {color};")

        kinds.append((f"notice {level}", notice, notice_style))
    for tone, color in (("muted", c.muted), ("warning", c.warning), ("error", c.error)):
        def footer(parent: QWidget, tone: str = tone) -> QWidget:
            made = RunFooter(turn_id="t1", parent=parent)
            made.set_status("Stopped: the model gave up.", tone)
            return made

        def footer_style(made: QWidget, color: str = color) -> None:
            assert isinstance(made, RunFooter)
            made.status.setStyleSheet(f"color: {color};")

        kinds.append((f"footer {tone}", footer, footer_style))
    for tone, (fg_name, bg_name) in theme.PILL_TONES.items():
        sheet = f"QLabel#Pill {{ color: {getattr(c, fg_name)}; background-color: {getattr(c, bg_name)}; {_CHIP} }}"
        kinds.append((f"pill {tone}", _status_pill(tone), _old(sheet)))
    return kinds


@pytest.mark.parametrize("name", theme.THEMES)
def test_each_kind_looks_as_it_did_with_a_style_sheet_of_its_own(themed: QApplication, name: str) -> None:
    c = theme.apply_theme(themed, name)
    for kind, make, old_style in _kinds(c):
        shared = _grab(make)
        own = _grab(make, old_style)
        assert shared == own, f"{kind} looks different in the {name} theme"


def test_a_tool_cards_status_changes_its_one_pill(themed: QApplication) -> None:
    card = ToolCard(call_id="c1", tool="read_file", robot="assistant", server="files", arguments={"path": "a.py"})
    try:
        first = card._status_pill
        assert first is not None and first.property("tone") == "busy"
        card.show()
        QApplication.processEvents()
        card._set_status("ok")
        assert card._status_pill is first and first.text() == "done" and first.property("tone") == "ok"
        card._set_status("error")
        assert card._status_pill is first and first.property("tone") == "error"
    finally:
        card.close()
