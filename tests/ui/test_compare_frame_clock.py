"""Four candidates streaming at once keep the window's frame clock ticking, and their columns fill side by side.

Four scripted models on the loopback server answer one message, each in small pieces 12 ms apart,
so the four streams overlap. A 16 ms Qt timer (a frame) ticks all along: every tick records when it came and
how much text each column shows. Once the columns stream, no gap between ticks may be longer than :data:`HANG_BOUND_S`: that bounds a
column update that blocks the event loop (a hang, a stream drained in one go), not a frame time (the figures
are ``bench/bench_compare_window.py``'s). And each column's text grows while another column's is still
growing: the columns stream together, not one after the other.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from fakes.compare_window import compare_config
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import running_app, wait_until

pytestmark = pytest.mark.timeout(180)  # bounds a hang: four scripted candidates on a loaded machine

MODELS = ["model-0", "model-1", "model-2", "model-3"]
#: The longest a frame's timer may wait for its tick (s): generous, for a loaded two-core machine (gaps of
#: 0.64 s were seen at a load of 10); a column that drained its stream (at least 3 s long: 260 pieces 12 ms
#: apart) in one turn of the event loop, or a blocking call, would go past it.
HANG_BOUND_S = 2.0


def answer(body: dict[str, Any]) -> Reply:
    words = " ".join(f"{body['model']} says word {i} of its answer." for i in range(120))
    return Reply.say(words, chunk_size=16, chunk_delay=0.012)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=answer, models=MODELS) as srv:
        yield srv


@pytest.fixture
async def app(server: FakeLLMServer, db_path: Path) -> AsyncIterator[Any]:
    config = compare_config(server, MODELS[0])
    async with running_app(db_path=db_path, config=config, theme_name="light", size=(1920, 1080)) as root:
        yield root


def shown(chat: Any) -> int:
    """How many characters of answer a column shows."""
    return sum(len(w.text) for w in chat.items() if hasattr(w, "append"))


async def test_four_streaming_columns_keep_the_frame_clock_ticking_and_fill_together(
        app: Any, server: FakeLLMServer) -> None:
    from PySide6.QtCore import QTimer

    from ui.compare.session import CandidateSpec

    window = app.window
    comparisons = window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    chats = comparisons.chats
    ticks: list[tuple[float, list[int]]] = []
    frame = QTimer()
    frame.setInterval(16)
    frame.timeout.connect(lambda: ticks.append((time.monotonic(), [shown(chat) for chat in chats])))
    frame.start()
    try:
        window.composer.set_text("Answer at length.")
        window.composer.submit()
        await wait_until(lambda: not comparisons.running and comparisons.stats is not None
                         and all(c.status == "finished" for c in comparisons.stats.columns),
                         timeout=120, what="the four candidates' answers")
    finally:
        frame.stop()
    ticks.append((time.monotonic(), [shown(chat) for chat in chats]))

    for index, model in enumerate(MODELS):  # each column shows its own whole answer
        text = "".join(w.text for w in chats[index].items() if hasattr(w, "append"))
        assert text.strip() == answer({"model": model}).text.strip(), f"column {index + 1}: {text[-200:]!r}"
    # Mid-run: from the first text in any column to the end (what comes before the first token, the runs'
    # start and the provider's first call, is not the columns' work).
    first = next(i for i, (_, lengths) in enumerate(ticks) if any(lengths))
    streaming = ticks[max(0, first - 1):]
    gaps = [later - earlier for (earlier, _), (later, _) in pairwise(streaming)]
    assert len(streaming) > 10 and max(gaps) < HANG_BOUND_S, (
        f"the frame clock stopped for {max(gaps):.2f} s mid-run (of {len(streaming)} ticks)")

    # When each column's text grew (the ticks at which it shows more than at the tick before).
    grew = [[t for (_, before), (t, now) in pairwise(ticks) if now[i] > before[i]]
            for i in range(len(MODELS))]
    assert all(len(times) >= 3 for times in grew), f"the columns grew in {[len(g) for g in grew]} steps"
    for index, times in enumerate(grew):
        others = [g for other, g in enumerate(grew) if other != index]
        assert any(o[0] < t < o[-1] for t in times for o in others), (
            f"column {index + 1} got its text only while no other column was streaming")
