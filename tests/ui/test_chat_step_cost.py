"""The chat's work per step does not grow with the thread, and a thread grown live holds what it holds reopened.

- An answer streamed at the end of a thread of 50 turns and of 2,000 turns: the calls made meanwhile (Python
  functions and Qt's methods, counted with ``sys.setprofile``) are as many in both. A walk over every turn or
  every item of the column per step (finding what is on screen, the turns to give back, the lanes to tick)
  would make the long thread's count grow with it.
- A run's end reads where the current turn sits among its siblings, not the branch's events.
- 60 turns grown live and the same 60 turns reopened, once the event loop has deleted what was given back:
  the Qt objects in the column and the chat's state objects are as many.
"""

from __future__ import annotations

import gc
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject
from PySide6.QtWidgets import QApplication

from ui.chat.view.chat import ChatView
from ui.transcript import LazyTranscript
from workspace import events as ev
from workspace.persistence import Store
from workspace.result import RobotResult

SHORT, LONG = 50, 2000
#: How many more calls the long thread's streaming may make: the binary searches' few more probes.
CALLS_MARGIN = 1.25
LIVE = 60


def _events(i: int, run: str) -> list[ev.Event]:
    return [
        ev.RunStarted(run_id=run, robot="assistant", seq=1, message=f"question {i}"),
        ev.Text(run_id=run, robot="assistant", seq=2, text=f"Let me read `file_{i}.py` first."),
        ev.ToolUse(run_id=run, robot="assistant", seq=3, id=f"c{i}", name="read_file", input={"path": "f.py"}),
        ev.ToolResult(run_id=run, robot="assistant", seq=4, id=f"c{i}", name="read_file",
                      payload={"data": {"content": "x = 1\n"}}, duration=0.01),
        ev.Text(run_id=run, robot="assistant", seq=5, text=f"**file_{i}.py** sets `x`:\n\n```python\nx = 1\n```"),
        ev.RunFinished(run_id=run, robot="assistant", seq=6, result=RobotResult(robot_name="assistant", output=[])),
    ]


def _chat() -> ChatView:
    chat = ChatView()
    chat.resize(700, 500)
    chat.show()
    return chat


def _settle(chat: ChatView) -> None:
    for _ in range(10):
        QApplication.processEvents()
    while chat.turn_window.busy:
        QApplication.processEvents()


def _stream(chat: ChatView, i: int, *, words: int = 0) -> None:
    """Turn ``i`` as the bridge brings it live: the message, the deltas of each text, each event."""
    run = f"live{i}"
    chat.presenter.add_user(f"question {i}")
    QApplication.processEvents()
    for event in _events(i, run):
        if isinstance(event, ev.Text):
            for word in (event.text + " more" * words).split(" "):
                chat.presenter.feed(ev.TextDelta(run_id=run, robot="assistant", seq=event.seq, text=word + " "))
                QApplication.processEvents()
        chat.presenter.feed(event)
        QApplication.processEvents()


def _calls_streaming_at_the_end(turns: int) -> int:
    chat = _chat()
    with chat.turn_window.deferring():  # the thread's turns, as pages loaded earlier: placeholders
        for i in range(turns):
            chat.presenter.add_user(f"question {i}")
            chat.presenter.feed_all(_events(i, f"r{i}"))
    chat.scroll_to_bottom()
    _settle(chat)
    assert len(chat.turn_window.placeholders) >= turns - 20  # only the end is widgets
    _stream(chat, -1)  # a first answer: what is made once (fonts, styles) is not counted
    _settle(chat)
    calls = 0

    def count(_frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        _stream(chat, turns, words=40)
        _settle(chat)
    finally:
        sys.setprofile(None)
    chat.close()
    chat.deleteLater()
    QApplication.processEvents()
    return calls


def test_streaming_an_answer_costs_the_same_at_50_and_at_2000_turns(qapp_instance: Any) -> None:
    short = _calls_streaming_at_the_end(SHORT)
    long = _calls_streaming_at_the_end(LONG)
    assert long <= short * CALLS_MARGIN, (
        f"streaming one answer made {long:,} calls at {LONG} turns against {short:,} at {SHORT}: "
        "some work per step walks the whole thread")


def _stored(path: Path, turns: int) -> tuple[Store, str]:
    store = Store(path)
    thread = store.create_thread(robot="assistant", title="grown")
    parent = None
    for i in range(turns):
        turn = store.add_turn(thread.id, user_text=f"question {i}", parent_turn_id=parent)
        store.append_events(thread.id, turn.id, _events(i, f"r{i}"))
        store.finish_turn(turn.id, "finished")
        parent = turn.id
    return store, thread.id


def test_a_runs_end_reads_the_current_turns_place_not_the_branchs_events(tmp_path: Path) -> None:
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    store, thread_id = _stored(tmp_path / "t.db", 30)
    last = store.path(thread_id)[-1]
    store.add_turn(thread_id, user_text="asked again", parent_turn_id=last.parent_turn_id)  # a fork: 2 siblings
    store.close()
    workspace = Workspace(db_path=tmp_path / "t.db", provider=ScriptedProvider(default="ok"))
    try:
        session = workspace.open_thread(thread_id)
        whole = session.transcript()[-1]
        read: list[object] = []
        path_events = session.store.path_events

        def counted(*args: Any, **kwargs: Any) -> Any:
            read.append(args)
            return path_events(*args, **kwargs)

        session.store.path_events = counted  # type: ignore[method-assign]
        assert session.current_turn_place() == (whole.id, whole.sibling_index, whole.sibling_count) == (whole.id, 1, 2)
        assert read == []
    finally:
        workspace.close()


def _kept(chat: ChatView) -> Counter[str]:
    """The Qt objects in the column and the chat's state objects, once what was given back is deleted."""
    for _ in range(3):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QApplication.processEvents()
        gc.collect()
    kept = Counter(type(o).__name__ for o in chat.column.findChildren(QObject))
    kept.update(type(o).__name__ for o in gc.get_objects() if str(getattr(type(o), "__module__", "")).startswith("ui.chat.model"))
    return kept


def test_a_thread_grown_live_holds_what_it_holds_reopened(qapp_instance: Any, tmp_path: Path) -> None:
    live = _chat()
    for i in range(LIVE):
        _stream(live, i)
    live.scroll_to_bottom()
    _settle(live)
    grown = _kept(live)
    live.close()
    live.deleteLater()
    QApplication.processEvents()

    store, thread_id = _stored(tmp_path / "t.db", LIVE)
    reopened = _chat()
    reopened.show_thread(LazyTranscript(store, thread_id))
    _settle(reopened)
    with reopened.turn_window.deferring(hold=True):
        while reopened.presenter.hidden_turns:  # (the count known so far: above the last page, as it is read)
            reopened.presenter.load_earlier(reopened.presenter.hidden_turns)
    # Up two screens and back, as the live chat's screen went over every turn: a thread opened makes only the
    # turns near its screen, the live one kept those it made up to where it releases them.
    reopened.scroll_to_bottom()
    _settle(reopened)
    bar = reopened.verticalScrollBar()
    bar.setValue(bar.maximum() - 2 * reopened.viewport().height())
    _settle(reopened)
    reopened.scroll_to_bottom()
    _settle(reopened)
    again = _kept(reopened)
    assert len(reopened.presenter.state.turns) == LIVE
    for name in sorted(set(grown) | set(again)):
        # a turn more or fewer near the screen; nothing that grows with the turns added
        assert grown[name] <= again[name] * 1.25 + 8, f"{name}: {grown[name]} kept live, {again[name]} reopened"
    assert sum(grown.values()) <= sum(again.values()) * 1.2


def test_the_inspector_keeps_a_live_streams_deltas_joined_as_the_store_does() -> None:
    from ui.inspector.trace import JOIN_DELTAS_S, join_text_deltas

    def delta(seq: int, text: str, ts: float, run: str = "r") -> ev.TextDelta:
        return ev.TextDelta(run_id=run, robot="assistant", seq=seq, ts=ts, text=text)

    first = delta(1, "Hel", 100.0)
    joined, kept = join_text_deltas(first, [delta(2, "lo", 100.1), delta(3, " there", 100.2)])
    assert joined is not None and kept == []
    assert (joined.text, joined.seq, joined.ts) == ("Hello there", 1, 100.0)  # the first's seq and time
    # another run's delta, a delta past the store's window, another event: each starts a new one
    later = 100.0 + JOIN_DELTAS_S + 0.01
    tool = ev.ToolUse(run_id="r", robot="assistant", seq=5, id="c", name="read_file", input={})
    joined, kept = join_text_deltas(first, [delta(2, "x", 100.1, run="other"), delta(3, "y", later), tool,
                                            delta(6, "a", later + 0.01), delta(7, "b", later + 0.02)])
    assert joined is None
    assert [(type(e).__name__, getattr(e, "text", None)) for e in kept] == [
        ("TextDelta", "x"), ("TextDelta", "y"), ("ToolUse", None), ("TextDelta", "ab")]
