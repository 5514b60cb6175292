"""Four candidates' events landing in one turn of the event loop show one column a tick of the comparison's frame
clock: the turn that brings them renders no column, each tick renders, lays out and repaints one column (the next
one in turn with events waiting), and the runs' ends (their footers) go the same way. Four columns' text and
repaint in one pass of the loop is what held the window for 100-400 ms on a busy machine.

The candidates' events are given to the comparison as its runs give them (``Comparisons._event``, the runs'
``on_event``), all in one turn; the frame clock's ticks are run one at a time (``_flush_columns``), each followed
by the posted events (the layout requests and the window's repaint) it caused, so what a tick did is counted
apart from the next one's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.compare_window import settle, shown
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import running_app, wait_until
from workspace import events as ev
from workspace.config import load_config

pytestmark = pytest.mark.timeout(120)  # bounds a hang (a loaded two-core machine)

MODELS = ["model-0", "model-1", "model-2", "model-3"]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=lambda body: Reply.say("unused"), models=MODELS) as srv:
        yield srv


@pytest.fixture
async def app(server: FakeLLMServer, db_path: Path) -> AsyncIterator[Any]:
    config = load_config(env={}, overrides={"llm": {"model": f"openai/{MODELS[0]}", "max_retries": 1,
                                                    "api_base": server.base_url + "/v1"}})
    async with running_app(db_path=db_path, config=config, theme_name="light", size=(1600, 900)) as root:
        yield root


class Painted:
    """The columns whose widgets got a Paint event (an application-wide filter), reset with :meth:`take`."""

    def __init__(self, view: Any) -> None:
        from PySide6.QtCore import QEvent, QObject
        from PySide6.QtWidgets import QApplication

        painted = self.columns = set[int]()

        class Filter(QObject):
            def eventFilter(self, watched: QObject, event: QEvent) -> bool:
                if event.type() == QEvent.Type.Paint:
                    index = view.column_at(watched)
                    if index is not None:
                        painted.add(index)
                return False

        self.filter = Filter()
        self.app = QApplication.instance()
        self.app.installEventFilter(self.filter)

    def take(self) -> set[int]:
        taken = set(self.columns)
        self.columns.clear()
        return taken

    def close(self) -> None:
        self.app.removeEventFilter(self.filter)


async def test_four_columns_events_in_one_turn_show_one_column_a_tick(app: Any, server: FakeLLMServer) -> None:
    from ui.compare.session import CandidateSpec

    comparisons = app.window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    view, chats = comparisons.view, comparisons.chats
    await wait_until(lambda: view.isVisible() and all(chat.isVisible() for chat in chats), what="the columns shown")
    settle()
    painted = Painted(view)
    try:
        before = [shown(chat) for chat in chats]
        # Four streams' events in one turn of the loop: each run's start and its first words, twice over.
        words = [[f"Column {i} says hello. ", f"And column {i} goes on. "] for i in range(4)]
        for i in range(4):
            comparisons._event(ev.RunStarted(run_id=f"run-{i}", robot="assistant", model=MODELS[i], candidate=i))
        for step in range(2):
            for i in range(4):
                comparisons._event(ev.TextDelta(run_id=f"run-{i}", robot="assistant", text=words[i][step], candidate=i))
        assert [shown(chat) for chat in chats] == before, "the turn that brought the events rendered columns"
        settle()
        assert painted.take() == set(), "the turn that brought the events repainted columns"

        order = []
        for _tick in range(4):
            was = [shown(chat) for chat in chats]
            comparisons._flush_columns()
            now = [shown(chat) for chat in chats]
            changed = [i for i in range(4) if now[i] != was[i]]
            assert len(changed) == 1, f"one tick rendered columns {changed}"
            index = changed[0]
            assert now[index] == "".join(words[index])  # all its waiting events at once
            settle()
            assert painted.take() <= {index}, "one tick repainted other columns than its own"
            order.append(index)
        assert sorted(order) == [0, 1, 2, 3]  # each column in turn, none twice while another waits
        assert [shown(chat) for chat in chats] == ["".join(w) for w in words]

        # The runs' ends in one turn: each column's end (its footer) on a tick of its own.
        for i in range(4):
            comparisons._event(ev.RunFinished(run_id=f"run-{i}", robot="assistant", candidate=i))
        before_end = [len(chat.items()) for chat in chats]
        assert [len(chat.items()) for chat in chats] == before_end, "the turn that brought the ends showed them"
        ended = []
        for _tick in range(4):
            was = [len(chat.items()) for chat in chats]
            comparisons._flush_columns()
            grown = [i for i in range(4) if len(chats[i].items()) != was[i]]
            assert len(grown) == 1, f"one tick ended the runs of columns {grown}"
            settle()
            assert painted.take() <= set(grown)
            ended.extend(grown)
        assert sorted(ended) == [0, 1, 2, 3]
        comparisons._flush_columns()  # nothing waits: a tick does nothing
        assert all(len(chats[i].items()) > before_end[i] for i in range(4))
    finally:
        painted.close()


async def test_a_burst_of_text_goes_into_its_column_over_several_ticks(app: Any, server: FakeLLMServer) -> None:
    """A column with thousands of characters waiting gets at most about TICK_CHARS of them on a tick (cut after a
    word), the rest on its next ticks, while the other columns keep their turns; in the end it shows the whole
    text, in order, and its run's end after it."""
    from ui.compare.session import CandidateSpec
    from ui.window.compare import TICK_CHARS

    comparisons = app.window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    chats = comparisons.chats
    burst = "".join(f"Word {i} of a **long** burst. " for i in range(400))  # about 12,000 characters
    assert len(burst) > 4 * TICK_CHARS
    comparisons._event(ev.RunStarted(run_id="run-0", robot="assistant", candidate=0))
    comparisons._event(ev.TextDelta(run_id="run-0", robot="assistant", text=burst[:100], candidate=0))
    comparisons._event(ev.TextDelta(run_id="run-0", robot="assistant", text=burst[100:], candidate=0))
    comparisons._event(ev.RunFinished(run_id="run-0", robot="assistant", candidate=0))
    comparisons._event(ev.RunStarted(run_id="run-1", robot="assistant", candidate=1))
    comparisons._event(ev.TextDelta(run_id="run-1", robot="assistant", text="Short.", candidate=1))
    items = len(chats[0].items())
    grown, ticks = [], 0
    while any(comparisons._pending):
        was = shown(chats[0])
        comparisons._flush_columns()
        ticks += 1
        now = shown(chats[0])
        assert burst.startswith(now), "the column's text out of order"
        if now != was:
            grown.append(len(now) - len(was))
            assert now.endswith(" "), "a tick cut the text in a word"
        assert ticks < 100, "the ticks never showed the whole burst"
    assert max(grown) <= TICK_CHARS, f"a tick gave the column {max(grown)} characters"
    assert len(grown) >= len(burst) // TICK_CHARS
    assert shown(chats[0]) == burst
    assert shown(chats[1]) == "Short."
    assert len(chats[0].items()) > items  # the run's end (its footer) after the whole text


async def test_a_columns_freeze_goes_on_a_tick_of_its_own(app: Any, server: FakeLLMServer,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """While the frame clock runs, the render a column's streamed Markdown leaves for later (its finished blocks
    frozen into a segment) waits for the column's next tick, a tick of its own, not a timer of the stream's that
    lands in the pass of another column's tick; once the clock stops, a stream uses its timer again."""
    import asyncio

    from ui.chat.view.stream import FREEZE_CHARS, MAX_RENDER_CHARS
    from ui.compare.session import CandidateSpec
    from ui.window import compare

    monkeypatch.setattr(compare, "TICK_CHARS", 100_000)  # the whole text on one tick
    comparisons = app.window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    chats = comparisons.chats
    comparisons._ticking = True  # as a send does, the frame clock's ticks run here one at a time
    paragraphs = "".join(f"Paragraph {i} has **some** words in it, " * 6 + "\n\n" for i in range(8))
    assert FREEZE_CHARS < len(paragraphs) < MAX_RENDER_CHARS  # rendered whole, its freeze left for later
    comparisons._event(ev.RunStarted(run_id="run-0", robot="assistant", candidate=0))
    comparisons._event(ev.TextDelta(run_id="run-0", robot="assistant", text=paragraphs, candidate=0))
    comparisons._event(ev.TextDelta(run_id="run-1", robot="assistant", text="Short.", candidate=1))
    comparisons._flush_columns()  # column 0's text: its finished blocks to freeze, later
    stream = next(w for w in chats[0].items() if hasattr(w, "append"))
    assert stream.pending, "the text did not leave a freeze for later"
    segments = stream.segments
    assert [type(e).__name__ for e in comparisons._pending[0]] == ["Deferred"]
    await asyncio.sleep(0.1)  # a stream's own timer (the next turn of the loop) would have frozen it by now
    assert stream.segments == segments, "the freeze ran off the frame clock"
    comparisons._flush_columns()  # column 1's tick: its text, not column 0's freeze
    assert shown(chats[1]) == "Short." and stream.segments == segments
    comparisons._flush_columns()  # column 0's tick: the freeze alone
    assert stream.segments > segments and not stream.pending
    assert not any(comparisons._pending)
    assert shown(chats[0]) == paragraphs

    comparisons._ticking = False  # the clock stopped (the runs ended): a freeze goes on the stream's timer
    comparisons._event(ev.TextDelta(run_id="run-0", robot="assistant", text=paragraphs, candidate=0))
    comparisons._flush_columns(every=True)
    assert not any(comparisons._pending)
    await wait_until(lambda: not stream.pending, what="the stream's own render")


async def test_the_runs_end_shows_every_columns_waiting_events(app: Any, server: FakeLLMServer) -> None:
    """At the runs' end (``every``) no column waits for its tick: all of them show what came."""
    from ui.compare.session import CandidateSpec

    comparisons = app.window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    for i in range(4):
        comparisons._event(ev.RunStarted(run_id=f"run-{i}", robot="assistant", candidate=i))
        comparisons._event(ev.TextDelta(run_id=f"run-{i}", robot="assistant", text=f"Answer {i}.", candidate=i))
    comparisons._flush_columns(every=True)
    assert [shown(chat) for chat in comparisons.chats] == [f"Answer {i}." for i in range(4)]


async def test_a_message_to_four_columns_goes_in_on_their_ticks(app: Any, server: FakeLLMServer) -> None:
    """The person's message shows in each column on that column's tick, not in all four in the pass of the send;
    each column then has the message and its answer."""
    from ui.chat.view.messages import UserMessage
    from ui.compare.session import CandidateSpec

    comparisons = app.window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    chats = comparisons.chats

    def asked(chat: Any) -> int:
        return sum(isinstance(w, UserMessage) for w in chat.items())

    comparisons.send("Say something.")
    assert [asked(chat) for chat in chats] == [0, 0, 0, 0], "the send's pass showed the message in columns"
    await wait_until(lambda: not comparisons.running, timeout=60, what="the four answers")
    assert [asked(chat) for chat in chats] == [1, 1, 1, 1]
    assert [shown(chat) for chat in chats] == ["unused"] * 4
