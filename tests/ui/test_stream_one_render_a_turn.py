"""A burst into a streamed code block costs one bounded render a turn of the event loop, not two, and a render
takes as much of it as prose's does.

The bridge flushes a stream's text from a timer; in a burst (a flush carries more new lines than a render takes) the
flush's text renders as it comes and the rest is left for a later turn on a timer of no delay. Qt runs such a timer,
started in a timer's call, in the same pass of the loop, before the paint: the turn then rendered twice (the flush's
render and the left part's, twice the budget with the window's paint and input waiting). Now a render left for later
waits for the next turn when one ran in this turn already. A turn's render of a code block takes about
``MAX_RENDER_CHARS`` of its new lines, as a turn's render of prose takes that much Markdown (it took 2,500
characters: a turn's fixed costs, its paint first, came 1.4 times as often per KB as prose's).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from ui.chat.view.code_lines import CodeLines
from ui.chat.view.code_stream import CodeStream
from ui.chat.view.stream import MAX_RENDER_CHARS, MarkdownStream

#: A flush of the bridge (16 ms) at 300 KB/s: more new lines than a code block's render takes in a turn.
FLUSH = 4800


@pytest.fixture(autouse=True)
def _app(qapp_instance: object) -> None:
    return None


def python_block(size: int) -> str:
    lines = ["Here is the module:\n\n```python\n"]
    i = 0
    while sum(map(len, lines)) < size:
        lines.append(f"def handler_{i}(event, context=None):\n    \"\"\"Handle event {i}.\"\"\"\n"
                     f"    return store(event, key='k{i}', size={i} * 2)  # {i}\n\n")
        i += 1
    return "".join(lines)


async def test_a_flush_in_a_burst_and_the_render_left_for_later_are_two_turns(
        qapp_instance: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the bridge feeds a view: a flush timer gives the view the text that came since, and between two passes
    of the loop the stream's producer works a few ms. A tick of a 2 ms timer (what a paint or a key press would
    wait for) sees at most one render since the last tick."""
    view = MarkdownStream()
    view.resize(800, 600)
    view.show()
    renders: list[int] = []
    real_render = MarkdownStream._render

    # Not named "render": PySide would take a timer's call of it for QWidget.render.
    def counted_render(self: MarkdownStream, *, freeze: bool = True) -> None:
        renders.append(1)
        real_render(self, freeze=freeze)

    monkeypatch.setattr(MarkdownStream, "_render", counted_render)
    text = python_block(80_000)
    pieces = [text[at:at + FLUSH] for at in range(0, len(text), FLUSH)]
    flush = QTimer()
    flush.setInterval(16)

    def flushed() -> None:
        if pieces and not view.pending:  # the view caught up: the flush renders as it comes, the rest is left
            view.append(pieces.pop(0))

    flush.timeout.connect(flushed)
    per_tick: list[int] = []

    def tick() -> None:
        per_tick.append(len(renders))
        renders.clear()

    ticks = QTimer()
    ticks.setInterval(2)
    ticks.timeout.connect(tick)
    ticks.start()
    flush.start()
    deadline = time.monotonic() + 60  # bounds a hang (the answer takes well under a second)
    while pieces or view.pending:
        busy = time.perf_counter() + 0.004  # the producer's share of a pass (the bridge yields every 4 ms)
        while time.perf_counter() < busy:
            pass
        await asyncio.sleep(0)
        assert time.monotonic() < deadline, "the stream never caught up"
    flush.stop()
    ticks.stop()
    tick()
    view.close()
    assert max(per_tick) == 1, f"{per_tick.count(2)} of {len(per_tick)} ticks saw two renders or more"
    code = view.findChild(CodeStream)
    assert code is not None
    assert view.text == text and code.code == text[text.index("```python\n") + 10:].rstrip("\n")


@pytest.mark.parametrize("language", ["python", "cpp"])
def test_a_burst_into_a_code_block_takes_prose_budget_a_turn(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, language: str) -> None:
    """40 KB of code given at once (a backlog) is shown a bounded render a turn; each turn but the last takes
    nearly ``MAX_RENDER_CHARS`` of new lines (up to a line less: a turn takes whole lines), none more."""
    taken: list[int] = []
    real_finished = CodeLines.finished

    def finished(lines: CodeLines, text: str) -> Any:
        taken.append(len(text))
        return real_finished(lines, text)

    monkeypatch.setattr(CodeLines, "finished", finished)
    body = python_block(40_000).split("\n", 3)[3] if language == "python" else "".join(
        f"int handler_{i}(int x) {{\n    auto v = compute(x, {i}) * 2;  // step {i}\n    return v;\n}}\n"
        for i in range(700))
    text = f"```{language}\n{body}"
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    view.append(text)
    turns = 0
    while view.pending:
        QApplication.processEvents()
        turns += 1
        assert turns < 200, "the stream never caught up"
    longest = max(map(len, body.split("\n"))) + 1
    assert max(taken) <= MAX_RENDER_CHARS
    assert min(taken[:-1]) >= MAX_RENDER_CHARS - longest, f"new lines taken a turn: {taken}"
    code = view.findChild(CodeStream)
    assert code is not None and code.code == body.rstrip("\n")
