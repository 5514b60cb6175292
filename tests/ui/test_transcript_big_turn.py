"""Opening a stored turn that repeated one status very many times (a retry loop, a local server silent for hours)
is bounded: the turn's rows are read a page at a time and a status or progress event repeating the one before
it replaces it as it is read, so the chat (``LazyTranscript.view``) and the trace (``all_events``) get it once,
never every row and event at once (300,000 of them took 3 s and 398 MiB). A turn without repeats is read as
before, over many pages too. Real SQLite."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from ui.transcript import LazyTranscript
from workspace import events as ev
from workspace.persistence import Store, coalesce_text
from workspace.persistence.eventlog import EVENT_ROWS_READ

REPEATS = 40_000


def _stamp(cls: type[ev.Event], seq: int, **fields: object) -> ev.Event:
    return cls(run_id="run1", robot="helper", seq=seq, ts=1_000.0 + seq, **fields)  # type: ignore[arg-type]


def _turn(store: Store, events: list[ev.Event]) -> tuple[str, str]:
    thread = store.create_thread(robot="helper")
    turn = store.add_turn(thread.id, user_text="hi", parent_turn_id=None)
    for start in range(0, len(events), 5_000):
        store.append_events(thread.id, turn.id, events[start:start + 5_000])
    store.finish_turn(turn.id, "finished")
    return thread.id, turn.id


def _read_measured(store: Store, thread_id: str, turn: str) -> tuple[list[ev.Event], list[ev.Event], int]:
    """The turn's events as the chat shows them and as the trace reads them, and the peak of memory allocated
    reading both (after a first read made what it imports and caches)."""
    LazyTranscript(store, thread_id).view(turn)
    tracemalloc.start()
    try:
        shown = LazyTranscript(store, thread_id).view(turn).events
        trace = LazyTranscript(store, thread_id).all_events()
        return shown, trace, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_turn_repeating_one_status_opens_with_it_once(tmp_path: Path) -> None:
    events = [_stamp(ev.RunStarted, 1, message="hi")]
    events += [_stamp(ev.RunStatus, 2 + i, state="waiting", detail="no token yet") for i in range(REPEATS)]
    events += [_stamp(ev.RunStatus, REPEATS + 2, state="streaming"), _stamp(ev.Text, REPEATS + 3, text="Hello."),
               _stamp(ev.RunFinished, REPEATS + 4)]
    with Store(tmp_path / "db.sqlite") as store:
        thread_id, _ = _turn(store, events)
        shown, trace, peak = _read_measured(store, thread_id, store.path(thread_id)[-1])
    assert [e.kind for e in shown] == ["run_started", "run_status", "run_status", "text", "run_finished"]
    waiting = shown[1]
    assert isinstance(waiting, ev.RunStatus) and waiting.state == "waiting" and waiting.seq == REPEATS + 1  # the last
    assert [e.kind for e in trace] == [e.kind for e in shown]
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"  # (unfolded: every row, then every event, at once)


def test_a_turn_without_repeats_shows_as_before_over_many_pages(tmp_path: Path) -> None:
    """Statuses that change, a repeat with something between, progress that moves and output chunks over
    several pages of rows: nothing folded, the order kept."""
    events: list[ev.Event] = [_stamp(ev.RunStarted, 1, message="hi")]
    for state in ("connecting", "waiting", "retrying", "connecting", "waiting", "streaming"):
        events.append(_stamp(ev.RunStatus, len(events) + 1, state=state))
    events.append(_stamp(ev.TextDelta, len(events) + 1, text="Hel"))
    events.append(_stamp(ev.RunStatus, len(events) + 1, state="streaming"))
    events.append(_stamp(ev.ToolUse, len(events) + 1, id="c1", name="run_command", input={"command": "ls"}))
    for i in range(3):
        events.append(_stamp(ev.ToolProgress, len(events) + 1, id="c1", progress=float(i), total=3.0))
    events.append(_stamp(ev.ToolProgress, len(events) + 1, id="c1", progress=2.0, total=3.0))  # a repeat: folded
    for i in range(2 * EVENT_ROWS_READ + 7):
        events.append(_stamp(ev.ToolOutput, len(events) + 1, id="c1", name="run_command", text=f"line {i}\n"))
    events.append(_stamp(ev.ToolResult, len(events) + 1, id="c1", name="run_command", payload={"data": "done"}))
    events.append(_stamp(ev.RunFinished, len(events) + 1))
    with Store(tmp_path / "db.sqlite") as store:
        thread_id, turn_id = _turn(store, events)
        started = time.monotonic()
        shown = LazyTranscript(store, thread_id).view(store.path(thread_id)[-1]).events
        assert time.monotonic() - started < 60  # only a guard against hanging
        stored = store.turn_events(turn_id)
    assert stored == events
    repeated = 12  # progress 2 of 3, said again just after: the later one is kept
    assert events[repeated + 1].replace(seq=events[repeated].seq, ts=events[repeated].ts) == events[repeated]
    expected = coalesce_text([e for i, e in enumerate(events) if i != repeated])
    assert shown == expected


DIFFERENT = 30_000
SHOWN = 1_000


def test_a_turn_of_very_many_different_events_opens_with_a_bounded_part_of_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that printed for hours (30,000 different output chunks here; none folds): the window reads at most
    ``TURN_EVENTS_SHOWN`` of the turn's events (monkeypatched to 1,000), its first half and its last, and a notice
    in the chat says how many are left out and how to see them all; the answer's text, streamed as 2,000 deltas
    before the call, is whole (joined as it is read). The turn was read whole: every event in memory at once."""
    from tests.ui.chat_dump import dump_state
    from ui import transcript
    from ui.chat.model.presenter import ChatPresenter

    monkeypatch.setattr(transcript, "TURN_EVENTS_SHOWN", SHOWN, raising=False)
    events: list[ev.Event] = [_stamp(ev.RunStarted, 1, message="hi")]
    events += [_stamp(ev.TextDelta, 2 + i, text=f"w{i} ") for i in range(2_000)]
    events.append(_stamp(ev.ToolUse, len(events) + 1, id="c1", name="run_command", input={"command": "make"}))
    first = len(events) + 1
    events += [_stamp(ev.ToolOutput, first + i, id="c1", name="run_command", text=f"compiling unit {i}\n")
               for i in range(DIFFERENT)]
    first = len(events) + 1
    events += [_stamp(ev.RunStatus, first + i, state="waiting", detail="no token yet") for i in range(3_000)]
    events.append(_stamp(ev.ToolResult, len(events) + 1, id="c1", name="run_command", payload={"data": "built"}))
    events.append(_stamp(ev.Text, len(events) + 1, text="Built."))
    events.append(_stamp(ev.RunFinished, len(events) + 1))
    with Store(tmp_path / "db.sqlite") as store:
        thread_id, _ = _turn(store, events)
        shown, trace, peak = _read_measured(store, thread_id, store.path(thread_id)[-1])
        presenter = ChatPresenter()
        presenter.load_thread(LazyTranscript(store, thread_id))
    assert len(shown) <= SHOWN + 1 and len(trace) <= SHOWN + 1, (len(shown), len(trace))
    text = "".join(f"w{i} " for i in range(2_000))
    assert [(e.kind, getattr(e, "text", None)) for e in shown[:3]] == [("run_started", None), ("text", text),
                                                                      ("tool_use", None)]
    notices = [e for e in shown if isinstance(e, ev.RunStatus) and e.state == "notice"]
    assert len(notices) == 1, notices
    waiting = [e for e in shown if isinstance(e, ev.RunStatus) and e.state == "waiting"]  # the repeats: the last
    assert [e.seq for e in waiting] == [len(events) - 3], waiting
    left_out = len(events) - (len(shown) - 1) - 1_999 - 2_999  # (the notice; the deltas are one, the repeats one)
    assert f"{left_out:,} more events of this turn are not shown" in notices[0].detail
    assert "Export thread events as JSONL" in notices[0].detail
    assert [e.kind for e in shown[-3:]] == ["tool_result", "text", "run_finished"]
    outputs = [e.text for e in shown if isinstance(e, ev.ToolOutput)]
    assert outputs[0] == "compiling unit 0\n" and outputs[-1] == f"compiling unit {DIFFERENT - 1}\n"
    assert [e.kind for e in trace] == [e.kind for e in shown]
    assert "more events of this turn are not shown" in dump_state(presenter.state)
    assert peak < 6 * 2**20, f"{peak / 2**20:.1f} MiB"  # (read whole: every row and event at once)
