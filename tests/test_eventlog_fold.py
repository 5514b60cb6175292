"""The conversation of a turn that was interrupted (no terminal result: its messages are made from its events)
is read with repeated statuses folded as they are read: a run that repeated one status 40,000 times before it
was cut off does not put 40,000 events in memory each time the thread's history is read. Real SQLite."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from workspace import events as ev
from workspace.messages import TextMessage
from workspace.persistence import Store

REPEATS = 40_000


def _stamp(cls: type[ev.Event], seq: int, **fields: object) -> ev.Event:
    return cls(run_id="run1", robot="helper", seq=seq, ts=1_000.0 + seq, **fields)  # type: ignore[arg-type]


def test_an_interrupted_turns_history_is_read_with_its_repeats_folded(tmp_path: Path) -> None:
    events = [_stamp(ev.RunStarted, 1, message="hi")]
    events += [_stamp(ev.RunStatus, 2 + i, state="waiting") for i in range(REPEATS)]
    events += [_stamp(ev.Text, REPEATS + 2, text="Half an answer")]  # then the process died: no run_finished
    with Store(tmp_path / "db.sqlite") as store:
        thread = store.create_thread(robot="helper")
        turn = store.add_turn(thread.id, user_text="hi", parent_turn_id=None)
        for start in range(0, len(events), 5_000):
            store.append_events(thread.id, turn.id, events[start:start + 5_000])
        store.history_messages(thread.id)  # imports and caches, before measuring
        tracemalloc.start()
        try:
            messages = store.history_messages(thread.id)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert messages[0] == TextMessage(role="user", content="hi")
    assert any(isinstance(m, TextMessage) and m.content == "Half an answer" for m in messages)
    assert peak < 6 * 2**20, f"{peak / 2**20:.1f} MiB"
