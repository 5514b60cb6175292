"""The comparison's frame clock around the window's repaint and the runs' end.

A tick that showed a column waits for the window's repaint of it (its UpdateRequest) before the next tick is
armed a frame later, so a column's text and the previous column's repaint go in different passes of the event
loop (the longer wait, :data:`~ui.window.compare.PAINT_WAIT_MS`, only bounds a repaint that never comes). When the
runs end with events still waiting (the four streams' last pieces and their ends), those are shown on the ticks
after, one column a tick as while they streamed, and every column ends with its whole answer.

Nothing here is timed: the ticks are run one at a time, or held back while the runs stream, and what each one
showed is compared.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.compare_window import compare_config, settle, shown
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import running_app, wait_until

pytestmark = pytest.mark.timeout(120)  # bounds a hang (a loaded two-core machine)

MODELS = ["model-0", "model-1", "model-2", "model-3"]


def answer(model: str) -> str:
    return " ".join(f"{model} says **word** {i} of `its` answer." for i in range(30))


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    reply = lambda body: Reply.say(answer(body["model"]), chunk_size=24, chunk_delay=0.002)  # noqa: E731
    with FakeLLMServer(reply_fn=reply, models=MODELS) as srv:
        yield srv


@pytest.fixture
async def app(server: FakeLLMServer, db_path: Path) -> AsyncIterator[Any]:
    config = compare_config(server, MODELS[0])
    async with running_app(db_path=db_path, config=config, theme_name="light", size=(1600, 900)) as root:
        yield root


async def start(app: Any, server: FakeLLMServer) -> Any:
    from ui.compare.session import CandidateSpec

    comparisons = app.window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    view = comparisons.view
    await wait_until(lambda: view.isVisible() and all(chat.isVisible() for chat in comparisons.chats),
                     what="the columns shown")
    settle()
    return comparisons


async def test_the_next_tick_waits_for_the_windows_repaint(app: Any, server: FakeLLMServer) -> None:
    from ui.chat.view.messages import UserMessage
    from ui.window.compare import FRAME_MS, PAINT_WAIT_MS

    comparisons = await start(app, server)
    chats = comparisons.chats

    def asked() -> list[int]:
        return [sum(isinstance(w, UserMessage) for w in chat.items()) for chat in chats]

    comparisons.send("Answer.")  # the message waits for each column's tick; the runs start
    assert comparisons.running and asked() == [0, 0, 0, 0]
    comparisons._flush_columns()  # a tick: the first column shows the message
    assert asked() == [1, 0, 0, 0]
    # The next tick is not a frame away: it waits for the repaint (PAINT_WAIT_MS bounds a repaint never coming).
    assert comparisons._frame.isActive() and comparisons._frame.interval() == PAINT_WAIT_MS
    settle()  # the window's layout and repaint of that column
    assert asked() == [1, 0, 0, 0], "a tick ran in the pass of the repaint"
    # The repaint armed the next tick a frame later, in a later pass.
    assert comparisons._frame.isActive() and comparisons._frame.interval() == FRAME_MS
    settle()  # no column shown since: nothing re-arms the clock
    assert comparisons._frame.interval() == FRAME_MS
    await wait_until(lambda: not comparisons.running, timeout=60, what="the four answers")
    assert asked() == [1, 1, 1, 1]
    assert [shown(chat).strip() for chat in chats] == [answer(m) for m in MODELS]


async def test_events_waiting_when_the_runs_end_show_on_the_ticks_after(app: Any, server: FakeLLMServer) -> None:
    from ui.chat.view.messages import RunFooter
    from ui.window.compare import FRAME_MS

    comparisons = await start(app, server)
    chats, frame = comparisons.chats, comparisons._frame
    stats = comparisons.stats

    def ended() -> bool:
        return all(column.status == "finished" for column in stats.columns)

    # The frame clock's ticks held back until every run ended: all four columns' events wait for them then.
    held = 0
    shown_by_tick: list[list[int]] = []
    real_tick = comparisons._flush_columns

    def tick() -> None:
        nonlocal held
        if not ended():
            held += 1
            frame.start(FRAME_MS)
            return
        was = [shown(chat) for chat in chats]
        real_tick()
        shown_by_tick.append([i for i, chat in enumerate(chats) if shown(chat) != was[i]])

    frame.timeout.disconnect(real_tick)
    frame.timeout.connect(tick)
    try:
        comparisons.send("Answer.")
        await wait_until(lambda: not comparisons.running, timeout=60, what="the four answers")
    finally:
        frame.timeout.disconnect(tick)
        frame.timeout.connect(real_tick)
    assert held and ended()
    # After the runs' end each column was shown on ticks of its own (not all four at once when they ended; a
    # column's text longer than a tick gives it goes on its next ticks)...
    columns = [changed for changed in shown_by_tick if changed]
    assert all(len(changed) == 1 for changed in columns), f"a tick showed columns {columns}"
    assert sorted({changed[0] for changed in columns}) == [0, 1, 2, 3], f"shown on the ticks: {columns}"
    # ... with its whole answer, and its run's end.
    assert [shown(chat).strip() for chat in chats] == [answer(m) for m in MODELS]
    assert [sum(isinstance(w, RunFooter) for w in chat.items()) for chat in chats] == [1, 1, 1, 1]
