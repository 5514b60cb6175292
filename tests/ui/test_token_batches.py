"""A streamed answer's tokens cost the window per flush, not per token: the bridge joins a stream's deltas in the
batch it gives the trace and the docks, so a burst of tokens is one event for every dock and two updates of the
chat (the first words at once, the rest on the flush), and the inspector keeps the rows it kept before."""

from __future__ import annotations

import time
from typing import Any

from tests.fakes.app_window import wait_until
from workspace import events as ev


def _delta(seq: int, text: str, ts: float, *, run: str = "r1", cls: type[ev.TextDelta | ev.ReasoningDelta] = ev.TextDelta,
           ) -> ev.TextDelta | ev.ReasoningDelta:
    return cls(run_id=run, robot="assistant", seq=seq, ts=ts, text=text)


async def test_a_burst_of_tokens_is_one_event_for_the_docks_and_two_chat_updates(desktop: Any) -> None:
    window, bridge = desktop.window, desktop.bridge
    window.docks.build_inspector()
    batches: list[list[ev.Event]] = []
    bridge.events_batched.connect(batches.append)
    chat_deltas: list[str] = []
    bridge.view_event.connect(lambda e: chat_deltas.append(e.text) if isinstance(e, ev.TextDelta) else None)
    trace = window.docks.trace_model
    rows_before = trace.rowCount()
    tokens = [f"tok{i} " for i in range(400)]
    # Every token arrives in one turn of the event loop (as a fast stream's do between two frames).
    now = time.time()  # stamped as a stream's tokens are, within the store's join window of each other
    bridge.feed(ev.RunStarted(run_id="burst", robot="assistant", seq=0, ts=now, message="go"))
    for i, token in enumerate(tokens, 1):
        bridge.feed(ev.TextDelta(run_id="burst", robot="assistant", seq=i, ts=now + i * 1e-5, text=token))
    await wait_until(lambda: batches, what="the flush timer to send the batch")

    events = [e for batch in batches for e in batch]
    # The docks (the trace, Tool calls, Memory, Network, a dock of one's own) get one event for the 400 tokens.
    assert [type(e).__name__ for e in events] == ["RunStarted", "TextDelta"]
    joined = events[1]
    assert isinstance(joined, ev.TextDelta)
    assert (joined.text, joined.seq) == ("".join(tokens), 1)  # the first delta's seq, the texts joined
    # The chat: the first words at once, the rest in one update on the flush.
    assert chat_deltas == [tokens[0], "".join(tokens[1:])]
    # The trace shows the stream as one row with the whole text.
    assert trace.rowCount() == rows_before + 2
    last = trace.event_at(trace.rowCount() - 1)
    assert isinstance(last, ev.TextDelta) and last.text == "".join(tokens)


def test_the_trace_keeps_the_rows_a_join_of_every_token_gives() -> None:
    """The deltas joined in the bridge's batches, then across batches by the inspector: the same trace rows
    (kinds, seqs, times, texts) as the inspector's join of every token's delta, however the flushes fall."""
    from ui.bridge import RunBridge
    from ui.inspector.trace import join_text_deltas

    tool = ev.ToolUse(run_id="r1", robot="assistant", seq=20, ts=0.5, id="c", name="read_file", input={})
    raw: list[ev.Event] = [
        *(_delta(i, f"a{i} ", 0.01 * i) for i in range(1, 8)),
        *(_delta(i, f"b{i} ", 0.01 * i, run="r2") for i in range(8, 11)),  # another run's stream
        *(_delta(i, f"c{i} ", 0.01 * i) for i in range(11, 16)),
        tool,
        *(_delta(i, f"d{i} ", 0.5 + 0.01 * i) for i in range(21, 30)),
        *(_delta(i, f"e{i} ", 2.0 + 0.01 * i) for i in range(30, 36)),  # past the join window: a new row
    ]
    expected, tail = join_text_deltas(None, raw)
    assert expected is None
    for every in (1, 2, 3, 5, 7, 100):
        bridge = RunBridge(flush_ms=60_000)
        rows: list[ev.Event] = []

        def keep(batch: list[ev.Event], rows: list[ev.Event] = rows) -> None:
            joined, kept = join_text_deltas(rows[-1] if rows else None, batch)
            if joined is not None:
                rows[-1] = joined
            rows.extend(kept)

        bridge.events_batched.connect(keep)
        for n, event in enumerate(raw, 1):
            bridge.feed(event)
            if n % every == 0:
                bridge.flush()
        bridge.flush()
        assert [(type(e).__name__, e.seq, e.ts, getattr(e, "text", None)) for e in rows] == \
            [(type(e).__name__, e.seq, e.ts, getattr(e, "text", None)) for e in tail], f"a flush every {every}"
        assert len(rows) == 6


def test_thinking_deltas_are_joined_in_the_batch_and_order_is_kept() -> None:
    from ui.bridge import RunBridge

    bridge = RunBridge(flush_ms=60_000)
    batches: list[list[ev.Event]] = []
    bridge.events_batched.connect(batches.append)
    for i in range(1, 6):
        bridge.feed(_delta(i, f"t{i}", 0.01 * i, cls=ev.ReasoningDelta))
    for i in range(6, 9):
        bridge.feed(_delta(i, f"x{i}", 0.01 * i))
    bridge.feed(_delta(9, "t9", 0.09, cls=ev.ReasoningDelta))
    bridge.flush()
    assert [(type(e).__name__, e.seq, e.ts, getattr(e, "text", None)) for e in batches[0]] == [
        ("ReasoningDelta", 1, 0.01, "t1t2t3t4t5"), ("TextDelta", 6, 0.06, "x6x7x8"), ("ReasoningDelta", 9, 0.09, "t9")]


def test_a_released_bridge_drops_the_batch_it_held() -> None:
    """Another thread opens mid-stream: the held deltas reach neither the next thread's docks nor join its
    first deltas."""
    from ui.bridge import RunBridge

    bridge = RunBridge(flush_ms=60_000)
    batches: list[list[ev.Event]] = []
    bridge.events_batched.connect(batches.append)
    for i in range(1, 4):
        bridge.feed(_delta(i, f"old{i}", 0.01 * i))
    bridge.release()
    bridge.feed(_delta(4, "new", 0.04))
    bridge.flush()
    assert [[getattr(e, "text", None) for e in batch] for batch in batches] == [["new"]]


def _stretch(n: int, now: float) -> list[ev.Event]:
    """A run's start, ``n`` tokens of its answer (t1 … tn, stamped within the join window), its end."""
    return [ev.RunStarted(run_id="r1", robot="assistant", seq=0, ts=now, message="go"),
            *(_delta(i, f"t{i} ", now + i * 1e-6) for i in range(1, n + 1)),
            ev.RunFinished(run_id="r1", robot="assistant", seq=n + 1, ts=now + 1e-3)]


async def test_the_next_tokens_of_a_stream_cost_the_bridge_no_call_of_its_own(monkeypatch: Any) -> None:
    """The tokens of a text streaming on, in one pass of the loop: ``consume`` joins each with a list append, makes
    no call of the bridge's own per token (the tokens are folded into the view's text and the batch once, when the
    next event comes or the bridge flushes) and reads the clock once every ``CLOCK_EVERY`` tokens, not for each;
    the chat and the docks get what they did (the first words at once, the rest joined)."""
    import sys
    import types

    import ui.bridge as bridge_module

    reads = 0

    def perf_counter() -> float:
        nonlocal reads
        reads += 1
        return time.perf_counter()

    monkeypatch.setattr(bridge_module, "time", types.SimpleNamespace(perf_counter=perf_counter))
    bridge = bridge_module.RunBridge(flush_ms=60_000)
    view: list[ev.Event] = []
    batches: list[list[ev.Event]] = []
    bridge.view_event.connect(view.append)
    bridge.events_batched.connect(batches.append)
    n = 1600
    events = _stretch(n, time.time())

    async def stream() -> Any:
        for event in events:
            yield event

    calls = 0

    def count(frame: Any, what: str, _arg: Any) -> None:
        nonlocal calls
        if what == "call" and frame.f_code.co_filename == bridge_module.__file__:
            calls += 1

    sys.setprofile(count)
    try:
        await bridge.consume(stream())
    finally:
        sys.setprofile(None)
    assert calls < 40, f"{calls} calls of the bridge's own for {n} tokens"
    assert reads <= n // 8, f"the clock read {reads} times for {n} tokens"  # (once every CLOCK_EVERY, 16)
    tokens = [f"t{i} " for i in range(1, n + 1)]
    assert [(type(e).__name__, e.seq, getattr(e, "text", None)) for e in view] == [
        ("RunStarted", 0, None), ("TextDelta", 1, tokens[0]), ("TextDelta", n, "".join(tokens[1:])),
        ("RunFinished", n + 1, None)]
    assert view[2].ts == events[2].ts  # the joined delta: the last one's seq, the first one's time
    assert [[(type(e).__name__, e.seq, e.ts, getattr(e, "text", None)) for e in batch] for batch in batches] == [[
        ("RunStarted", 0, events[0].ts, None), ("TextDelta", 1, events[1].ts, "".join(tokens)),
        ("RunFinished", n + 1, events[-1].ts, None)]]


async def test_tokens_joined_as_they_come_go_out_on_the_flush_in_order() -> None:
    """The flush timer fires while the stream waits for its next token (a network stream's pause): the tokens
    joined so far are shown and batched then, not held until the next token; the tokens after it start the next
    batch, and the chat's text goes on without an update of its own for them."""
    from ui.bridge import RunBridge

    bridge = RunBridge(flush_ms=60_000)
    view: list[ev.Event] = []
    batches: list[list[ev.Event]] = []
    bridge.view_event.connect(view.append)
    bridge.events_batched.connect(batches.append)
    n, pause = 300, 120
    events = _stretch(n, time.time())
    shown_at_pause: list[str] = []

    async def stream() -> Any:
        for event in events:
            if event.seq == pause + 1:
                bridge.flush()  # (as the timer does while the stream waits)
                shown_at_pause.extend(e.text for e in view if isinstance(e, ev.TextDelta))
            yield event

    await bridge.consume(stream())
    tokens = [f"t{i} " for i in range(1, n + 1)]
    assert shown_at_pause == [tokens[0], "".join(tokens[1:pause])]
    assert [(e.seq, e.text) for e in view if isinstance(e, ev.TextDelta)] == [
        (1, tokens[0]), (pause, "".join(tokens[1:pause])), (n, "".join(tokens[pause:]))]
    assert [[(type(e).__name__, e.seq, getattr(e, "text", None)) for e in batch] for batch in batches] == [
        [("RunStarted", 0, None), ("TextDelta", 1, "".join(tokens[:pause]))],
        [("TextDelta", pause + 1, "".join(tokens[pause:])), ("RunFinished", n + 1, None)]]


async def test_a_consume_released_and_not_cancelled_never_joins_the_tokens_of_the_next_one() -> None:
    """The views leave a run (``release``) and show it again (a new ``consume`` of the same run): the old consume,
    not cancelled, ends at its next event, and its copies of the tokens never reach the new one's text."""
    import asyncio

    from ui.bridge import RunBridge

    bridge = RunBridge(own_clock=False)
    shown: list[str] = []
    bridge.view_event.connect(lambda e: shown.append(e.text) if isinstance(e, ev.TextDelta) else None)
    first: asyncio.Queue[ev.Event | None] = asyncio.Queue()
    second: asyncio.Queue[ev.Event | None] = asyncio.Queue()

    async def events(queue: asyncio.Queue[ev.Event | None]) -> Any:
        while (event := await queue.get()) is not None:
            yield event

    now = time.time()
    old = asyncio.ensure_future(bridge.consume(events(first)))
    for seq in (1, 2):
        await first.put(_delta(seq, f"t{seq} ", now + seq * 1e-3))
    await asyncio.sleep(0.01)
    bridge.release()
    new = asyncio.ensure_future(bridge.consume(events(second), announce=True))
    for queue in (second, first):  # the new consume's tokens, then the old one's copies of them
        for seq in (3, 4):
            await queue.put(_delta(seq, f"t{seq} ", now + seq * 1e-3))
        await asyncio.sleep(0.01)
    bridge.flush()
    for queue in (first, second):
        await queue.put(None)
    await asyncio.gather(old, new)
    assert shown == ["t1 ", "t3 ", "t4 "]
