"""A comparison's columns and verdict row fit the window at 1024x640, 1280x720 and 1920x1080, with 2, 3 and 4
candidates: every text a person reads in a column (its header's name, state and figures, the answer, the tool
card, the footer) and in the verdict row (the candidates' names) is shown whole inside what is visible of it,
or elided with its full text as a tooltip. Nothing runs under the next column or past the window's edge.

The candidates are real runs on the loopback model server (each writes app.py, then answers in a long
paragraph), so the columns hold what a comparison holds: what the run waits for ("Connecting to …", checked
mid-run), a tool card, Markdown, the run's footer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.compare_window import compare_config
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import running_app, wait_until

pytestmark = pytest.mark.timeout(300)  # bounds a hang: three comparisons of 2-4 scripted candidates

#: Model names as long as real ones (a server's id with its quantisation): the labels are the models.
MODELS = ["qwen2.5-coder-32b-instruct-q4", "llama-3.1-70b-instruct-q5", "mistral-small-24b-instruct-2501",
          "deepseek-r1-distill-qwen-14b"]
SIZES = [(1024, 640), (1280, 720), (1920, 1080)]
BASE = "".join(f"line {n}\n" for n in range(1, 11))


def answer(body: dict[str, Any]) -> Reply:
    """Each model rewrites line 2 of app.py, then explains in a paragraph with a long path in it."""
    model = body["model"]
    if not any(m.get("role") == "tool" for m in body["messages"]):
        return Reply.tool("write_file", {"path": "app.py", "content": BASE.replace("line 2\n", f"{model}\n")},
                          stall_before=0.5)  # a while "Connecting to …": the activity line is checked too
    words = " ".join(f"step {i} checks the change against the file and the tests." for i in range(1, 9))
    return Reply.say(f"{model} rewrote line 2 of `workspace/changes/folderio.py` and app.py. {words}",
                     chunk_size=24)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=answer, models=MODELS) as srv:
        yield srv


@pytest.fixture
async def app(server: FakeLLMServer, tmp_path: Path, db_path: Path) -> AsyncIterator[Any]:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "app.py").write_text(BASE)
    config = compare_config(server, MODELS[0], folder)
    async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light", size=SIZES[0]) as root:
        root.controller.set_robot("file-helper")
        yield root


def _cut(widget: Any) -> str | None:
    """How ``widget``'s own text does not fit its width (None: it fits, or is elided with a tooltip)."""
    from PySide6.QtWidgets import QAbstractButton, QLabel, QTextEdit

    from ui.widgets.common import ElidedLabel

    width = widget.width()
    if isinstance(widget, ElidedLabel):
        if not QLabel.text(widget) and widget._whole:  # a short caption shown whole or not at all: nothing is cut
            return None
        if widget.elided and not widget.toolTip():
            return f"elided to {QLabel.text(widget)!r} without a tooltip"
        return None
    if isinstance(widget, QLabel):
        if not widget.text():
            return None
        if widget.wordWrap():
            if widget.minimumSizeHint().width() > width + 1:
                return f"a word {widget.minimumSizeHint().width()} px wide in {width} px"
            if widget.heightForWidth(width) > widget.height() + 1:
                return f"{widget.heightForWidth(width)} px of wrapped text in {widget.height()} px"
            return None
        if widget.sizeHint().width() > width + 1 and not (widget.text().endswith("…") and widget.toolTip()):
            return f"{widget.sizeHint().width()} px of text in {width} px"
        return None
    if isinstance(widget, QAbstractButton):
        if widget.text() and widget.sizeHint().width() > width + 1 and not (
                widget.text().endswith("…") and widget.toolTip()):
            return f"{widget.sizeHint().width()} px of text in {width} px"
        return None
    if isinstance(widget, QTextEdit):
        scrolls = widget.horizontalScrollBarPolicy() != widget.horizontalScrollBarPolicy().ScrollBarAlwaysOff
        needed = widget.document().size().width()
        if not scrolls and needed > widget.viewport().width() + 1:
            return f"{needed:.0f} px of text in {widget.viewport().width()} px"
    return None


def _outside(widget: Any, area: Any) -> str | None:
    """How ``widget`` sticks out of ``area`` sideways (None: it is inside)."""
    left = widget.mapTo(area, widget.rect().topLeft()).x()
    right = left + widget.width()
    if left < -1 or right > area.width() + 1:
        return f"spans x {left}..{right} of an area {area.width()} px wide"
    return None


def _name(widget: Any) -> str:
    from PySide6.QtWidgets import QAbstractButton, QLabel, QTextEdit

    text = ""
    if isinstance(widget, QLabel | QAbstractButton):
        text = widget.text()
    elif isinstance(widget, QTextEdit):
        text = widget.toPlainText()
    return f"{type(widget).__name__} {text[:40]!r}"


def cut_texts(view: Any) -> list[str]:
    """Every text of the comparison's columns and verdict row that a person cannot read whole."""
    from PySide6.QtWidgets import QAbstractButton, QAbstractScrollArea, QLabel, QTextEdit, QWidget

    problems = []
    texts = (QLabel, QAbstractButton, QTextEdit)
    reachable = view.columns_area if hasattr(view, "columns_area") else view
    for index, column in enumerate(view.columns):
        where = f"column {index + 1}"
        # A column is shown whole, or the columns scroll sideways to it.
        scrolls = isinstance(reachable, QAbstractScrollArea) and reachable.horizontalScrollBar().maximum() > 0
        if not scrolls and (problem := _outside(column, view)):
            problems.append(f"{where} {problem}")
        body = view.bodies[index]
        for widget in column.findChildren(QWidget):
            if not isinstance(widget, texts) or not widget.isVisibleTo(view) or widget.width() <= 0:
                continue
            if isinstance(widget.parentWidget(), QTextEdit | QAbstractScrollArea) and widget.parentWidget() is not body:
                continue  # a scroll area's own viewport
            area = body.viewport() if body.isAncestorOf(widget) else column
            for problem in (_outside(widget, area), _cut(widget)):
                if problem:
                    problems.append(f"{where}: {_name(widget)} {problem}")
    row = view.findChild(QWidget, "CompareVerdict")
    for widget in row.findChildren(QWidget):
        if isinstance(widget, (QLabel, QAbstractButton)) and widget.isVisibleTo(view) and widget.width() > 0:
            for problem in (_outside(widget, row), _cut(widget)):
                if problem:
                    problems.append(f"verdict row: {_name(widget)} {problem}")
    return problems


async def settled(root: Any, size: tuple[int, int]) -> None:
    """The window at ``size`` and laid out (the chat views place their turns a step after a resize)."""
    import asyncio

    window = root.window
    window.resize(*size)
    await wait_until(lambda: (window.width(), window.height()) == size, what=f"the window at {size}")
    for _ in range(10):
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("count", [2, 3, 4])
async def test_every_text_of_the_columns_and_the_verdict_row_fits_at_each_window_size(
        app: Any, server: FakeLLMServer, count: int) -> None:
    from ui.compare.session import CandidateSpec

    window = app.window
    comparisons = window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("file-helper", model=f"openai/{m}", api_base=base)
                              for m in MODELS[1:count]])
    window.composer.set_text("Edit app.py")
    window.composer.submit()
    failures = []
    await wait_until(lambda: all(chat.activity.isVisible() for chat in comparisons.chats),
                     what="every column waiting for its model")
    await settled(app, SIZES[0])  # laid out (the stall before the models' first bytes is longer)
    failures += [f"1024x640 mid-run, {count} columns: {p}" for p in cut_texts(comparisons.view)]
    await wait_until(lambda: not comparisons.running and comparisons.stats is not None
                     and all(c.status == "finished" for c in comparisons.stats.columns),
                     timeout=120, what=f"the {count} candidates' answers")
    view = comparisons.view
    assert view is not None and len(view.columns) == count
    for chat in comparisons.chats:  # the columns hold what a person reads: the answer and the tool card
        assert "checks the change" in "".join(getattr(w, "text", "") for w in chat.items() if hasattr(w, "append"))
        assert chat.tool_cards()
    for size in SIZES:
        await settled(app, size)
        failures += [f"{size[0]}x{size[1]}, {count} columns: {p}" for p in cut_texts(view)]
    assert not failures, "\n".join(failures)
