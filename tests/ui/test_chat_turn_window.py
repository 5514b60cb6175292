"""The chat's cost does not grow with the thread: only the turns near the screen are widgets.

A stored thread of 2,000 messages is opened in a chat view and paged back to its top, then scrolled
down again: the message widgets alive never exceed a bound that does not depend on the thread's
length, turns far from the screen give their widgets back, and a turn scrolled back into view shows
the same text in new widgets. Turns sent live are released the same way, except the running one.
"""

from __future__ import annotations

import gc
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
from fakes.long_threads import add_long_thread, add_tool_thread
from PySide6.QtWidgets import QApplication
from shiboken6 import isValid

from ui.chat.view.chat import ChatView
from ui.chat.view.stream import MarkdownStream
from ui.idle import IdleWatch
from ui.transcript import LazyTranscript
from workspace import events as ev
from workspace.persistence import Store

TURNS = 1000  # 2,000 messages
#: The most message widgets the chat may hold at once, whatever the thread's length (a turn here is 3).
MOST_ALIVE = 150


def _thread(path: Path, turns: int) -> tuple[Store, str]:
    store = Store(path)
    return store, add_long_thread(store, turns)[0]


def _chat() -> ChatView:
    chat = ChatView()
    chat.resize(700, 500)
    chat.show()
    return chat


def _settle(rounds: int = 4) -> None:
    """``rounds`` passes of the event loop, a millisecond apart (the turn window's next step can wait for the
    next frame, a timer: passes back to back would all come before it)."""
    for _ in range(rounds):
        QApplication.processEvents()
        time.sleep(0.001)


def _made(chat: ChatView) -> None:
    """Passes of the event loop until the chat has made the turns near its screen: a thread shown makes their
    widgets in the steps after the one that showed it, the newest first."""
    _settle()
    rounds = 0
    while chat.turn_window.busy and rounds < 500:
        _settle(1)
        rounds += 1


def _answers(chat: ChatView) -> dict[str, MarkdownStream]:
    return {w.text: w for w in chat.items() if isinstance(w, MarkdownStream)}


def test_a_long_thread_keeps_only_the_turns_near_the_screen_as_widgets(qapp_instance: Any, tmp_path: Path) -> None:
    store, thread_id = _thread(tmp_path / "long.db", TURNS)
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _made(chat)
        bar = chat.verticalScrollBar()
        assert chat.user_messages()[-1].text == f"question {TURNS - 1}"
        shown_first = _answers(chat)[f"answer {TURNS - 2}"]  # (the last turn is always kept)
        most = len(chat.items())
        rounds = 0
        while (chat.hidden_turns or bar.value() or chat.turn_window.is_placeholder(chat.presenter.state.turns[0])
               or chat.turn_window.busy)\
                and rounds < 2000:  # a person dragging the scroll bar to the top, again and again
            bar.setValue(0)
            _settle(1)
            most = max(most, len(chat.items()))
            rounds += 1
        assert chat.hidden_turns == 0 and len(chat.presenter.state.turns) == TURNS
        assert chat.user_messages()[0].text == "question 0"  # the top, as widgets
        assert most <= MOST_ALIVE, f"{most} message widgets alive at once"
        assert chat.turn_window.released > 0
        assert len(chat.turn_window.placeholders) >= TURNS - MOST_ALIVE
        assert not isValid(shown_first)  # the widgets of a turn far from the screen were let go

        # Down again, all the way: the last turn comes back, in new widgets, with the same text.
        rounds = 0
        while (bar.value() < bar.maximum() or chat.turn_window.is_placeholder(chat.presenter.state.turns[-2])
               or chat.turn_window.busy)\
                and rounds < 2000:
            bar.setValue(bar.maximum())
            _settle(1)
            most = max(most, len(chat.items()))
            rounds += 1
        assert most <= MOST_ALIVE, f"{most} message widgets alive at once"
        back = _answers(chat)[f"answer {TURNS - 2}"]
        assert back.text == f"answer {TURNS - 2}" and back.isVisibleTo(chat)
        users = chat.user_messages()
        assert users[-1].text == f"question {TURNS - 1}" and users[0].text != "question 0"
    finally:
        chat.close()
        chat.deleteLater()
        store.close()


def test_earlier_turns_loaded_are_kept_out_of_the_collectors_walks_and_freed_at_an_idle_moment_after_another_thread_shows(
        qapp_instance: Any, tmp_path: Path) -> None:
    """A thread paged to its top holds the state of thousands of turns, and each full pass of the garbage
    collector walked all of it: one step of paging stalled for as long as that took, more the longer the thread.
    The turns loaded on demand are frozen out of its walks. Showing another thread does not give everything back
    to the collector at once (every full pass then walked it all, the libraries too: 40 ms and more): the window
    refreezes at its next idle moment (``ui.idle``), which frees the closed thread's state."""
    store, thread_id = _thread(tmp_path / "pages.db", 120)
    other, other_id = _thread(tmp_path / "other.db", 3)
    watch = IdleWatch()
    watch.start()
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _made(chat)
        shown_first = chat.presenter.state.turns[0]  # shown when the thread opened: not loaded on demand
        chat.load_earlier()
        rounds = 0
        while chat.turn_window.busy and rounds < 500:
            _settle(1)
            rounds += 1
        loaded = chat.presenter.state.turns[0]
        assert loaded is not shown_first and len(chat.presenter.state.turns) == 10 + 40
        walked = {id(o) for o in gc.get_objects()}  # what a full pass walks (the frozen are not in it)
        assert id(loaded) not in walked and id(loaded.user) not in walked
        assert gc.get_freeze_count() > 0

        refreezes = watch.refreezes
        chat.show_thread(LazyTranscript(other, other_id))
        _made(chat)
        assert gc.get_freeze_count() > 0, "everything was given back to the collector at once"
        assert [m.text for m in chat.user_messages()] == ["question 0", "question 1", "question 2"]
        gone = weakref.ref(loaded)
        del loaded, shown_first
        deadline = time.monotonic() + 60
        while watch.refreezes == refreezes and time.monotonic() < deadline:  # (the window quiet: an idle moment)
            time.sleep(0.01)
            QApplication.processEvents()
        gc.collect()
        assert gone() is None, "the closed thread's turns were left frozen: never freed"
    finally:
        watch.stop()
        chat.close()
        chat.deleteLater()
        store.close()
        other.close()


def test_the_search_jump_makes_its_turn_even_far_up(qapp_instance: Any, tmp_path: Path) -> None:
    store, thread_id = _thread(tmp_path / "jump.db", 300)
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _made(chat)
        target = LazyTranscript(store, thread_id).turns[5].id
        assert chat.reveal_turn(target, words=["answer"])
        _settle(6)
        rounds = 0  # (its widgets come a frame's budget at a time: on a busy machine in more passes than six)
        while chat.found_flash is None and rounds < 2000:
            _settle(1)
            rounds += 1
        answers = _answers(chat)
        assert "answer 5" in answers
        flash = chat.found_flash
        assert flash is not None
        bar = chat.verticalScrollBar()
        widget = answers["answer 5"]
        assert bar.value() <= widget.y() <= bar.value() + chat.viewport().height()
    finally:
        chat.close()
        chat.deleteLater()
        store.close()


def test_the_search_jumps_turn_is_made_a_widget_a_step_then_scrolled_to(
        qapp_instance: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search result's turn far up was made whole in the step that found it (a tool card, the answers: 15-20 ms
    of the window's CPU at once). Its widgets come a few a frame like the screen's turns (here one a frame: no
    budget), before them; the screen goes to it and outlines it once they are all made."""
    from ui.chat.view import virtual

    store = Store(tmp_path / "tools.db")
    thread_id = add_tool_thread(store, 120)
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _settle()
        target = LazyTranscript(store, thread_id).turns[5].id
        monkeypatch.setattr(virtual, "STEP_BUDGET", 0.0)
        assert chat.reveal_turn(target, words=["file_5.py"])
        turn = next(t for t in chat.presenter.state.turns if t.turn_id == target)
        assert turn not in chat._turn_widgets or chat.turn_window.is_placeholder(turn), "made at once"
        counts: list[int] = []
        for _ in range(400):
            if chat.found_flash is not None:
                break
            counts.append(len(chat._turn_widgets.get(turn, [])) if not chat.turn_window.is_placeholder(turn) else 0)
            _settle(1)
        assert chat.found_flash is not None, "the turn was never outlined"
        made = sorted(set(counts))
        assert len(made) >= 3, f"the turn's widgets came in {len(made)} steps: {made}"
        bar = chat.verticalScrollBar()
        flash = chat.found_flash.geometry()
        assert bar.value() <= flash.center().y() <= bar.value() + chat.viewport().height()
    finally:
        chat.close()
        chat.deleteLater()
        store.close()


def test_turns_sent_live_are_released_but_not_the_running_one(qapp_instance: Any) -> None:
    chat = _chat()
    try:
        for i in range(40):
            run = f"live{i}"
            chat.presenter.add_user(f"question {i}")
            chat.presenter.feed(ev.RunStarted(run_id=run, robot="assistant", seq=1, message=f"question {i}"))
            chat.presenter.feed(ev.TextDelta(run_id=run, robot="assistant", seq=2, text=f"answer {i} " * 30))
            if i < 39:
                chat.presenter.feed(ev.RunFinished(run_id=run, robot="assistant", seq=3))
            _settle(2)
        assert chat.turn_window.released > 0
        assert len(chat.items()) < 40 * 3
        # the running turn streams on into its widget
        chat.presenter.feed(ev.TextDelta(run_id="live39", robot="assistant", seq=3, text="and more"))
        _settle(2)
        assert _answers(chat)  # the last turn is widgets
        assert any(t.endswith("and more") for t in _answers(chat))
        # scrolled to the top, the running turn is kept (its run has not ended)
        chat.verticalScrollBar().setValue(0)
        _settle(6)
        last = chat.presenter.state.turns[-1]
        assert not chat.turn_window.is_placeholder(last)
        assert chat.user_messages()[0].text == "question 0"
        assert any(t.endswith("and more") for t in _answers(chat))  # its widget was not released
    finally:
        chat.close()
        chat.deleteLater()


#: How long paging on a test's clock may go on (s): a step put off to the next frame waits for a real timer, so
#: the number of passes it takes depends on the machine's speed; only a guard against a hang, generous.
PAGING_GUARD_S = 120.0


class _CountingClock:
    """A clock for the turn window's budget that moves half a millisecond each time it is read: a step's time
    is how often it looked at the clock (once a turn loaded or a widget made, and a few times a step)."""

    TICK = 0.0005

    def __init__(self) -> None:
        self.now = time.perf_counter() + 1000.0  # (after any time the window noted before)

    def perf_counter(self) -> float:
        self.now += self.TICK
        return self.now


def test_the_steps_of_one_pass_of_the_event_loop_share_one_budget(
        qapp_instance: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """Scrolling up a long thread runs, in one pass of the event loop, a slice of earlier turns loaded, a step
    making the turns that came near the screen and the next slice: each had a budget (a frame's half) of its
    own, so the pass held the window for two or three of them. They share one now; each still does at least
    one thing (a turn loaded, a widget made), so paging goes on, and the thread is paged to its top."""
    from ui.chat.view import virtual

    store, thread_id = _thread(tmp_path / "pass.db", 300)
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _made(chat)
        clock = _CountingClock()
        monkeypatch.setattr(virtual, "time", clock)
        bar = chat.verticalScrollBar()
        longest = 0.0
        deadline = time.monotonic() + PAGING_GUARD_S
        while (chat.hidden_turns or chat.turn_window.busy) and time.monotonic() < deadline:  # as the scale bench pages
            began = clock.now
            if bar.value() == 0 and chat.hidden_turns:
                chat.load_earlier()
            else:
                bar.setValue(0)
            QApplication.processEvents()
            longest = max(longest, clock.now - began)
            clock.now += 0.02  # (a frame painted before the next pass)
            time.sleep(0.001)  # (a step put off to the next frame waits for a timer, on the real clock)
        assert chat.hidden_turns == 0 and len(chat.presenter.state.turns) == 300
        # a budget, then one more thing done by each of the other steps of the pass, and their few looks
        assert longest <= virtual.STEP_BUDGET + 12 * clock.TICK, (
            f"a pass of the event loop took {longest * 1000:.1f} ms of budget ({virtual.STEP_BUDGET * 1000:.0f} ms each step)")
    finally:
        chat.close()
        chat.deleteLater()
        store.close()


class _SetClock:
    """A clock for the turn window's budget that moves only when the test says: what a step costs is what the
    test charges for the widgets it makes and for Qt's work after it."""

    def __init__(self) -> None:
        self.now = time.perf_counter() + 1000.0  # (after any time the window noted before)

    def perf_counter(self) -> float:
        return self.now


#: What an answer's widget costs, on the test's clock (s): a long answer with code costs ten times the rest.
ANSWER_COST = 0.005
#: What any other widget costs, and Qt's work laying out and styling after a step that made widgets (s).
OTHER_COST = 0.0005
QT_WORK = 0.003


def _page_up_on(clock: _SetClock, chat: ChatView) -> list[float]:
    """Page the chat to its top as bench_ui_thread_scale does, on ``clock``: how long each pass of the event loop
    took (a frame painted between two)."""
    bar = chat.verticalScrollBar()
    passes: list[float] = []
    deadline = time.monotonic() + PAGING_GUARD_S
    while (chat.hidden_turns or chat.turn_window.busy) and time.monotonic() < deadline:
        began = clock.now
        if bar.value() == 0 and chat.hidden_turns:
            chat.load_earlier()
        else:
            bar.setValue(0)
        QApplication.processEvents()
        passes.append(clock.now - began)
        clock.now += 0.02
        time.sleep(0.001)  # (a step put off to the next frame waits for a timer)
    return passes


def test_a_step_makes_a_widget_only_if_what_its_kind_cost_fits_in_the_budget_left(
        qapp_instance: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """A long answer with code costs ten times a header to make; a step made the next widget whenever its budget
    was not yet spent, so one started at the budget's end ran most of a frame over. A widget is made only if
    what one of its kind cost lately fits in what is left (a frame's first is made whatever it costs)."""
    from ui.chat.model.state import TextItem
    from ui.chat.view import virtual

    store, thread_id = _thread(tmp_path / "kinds.db", 120)
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _made(chat)
        clock = _SetClock()
        monkeypatch.setattr(virtual, "time", clock)
        make_item, make_turn = chat.item_added, chat.build_turn

        def item_added(item: Any) -> None:
            if not chat.turn_window.holds(item):
                clock.now += ANSWER_COST if isinstance(item, TextItem) else OTHER_COST
            make_item(item)

        def build_turn(turn: Any) -> None:
            clock.now += OTHER_COST
            make_turn(turn)

        monkeypatch.setattr(chat, "item_added", item_added)
        monkeypatch.setattr(chat, "build_turn", build_turn)
        passes = _page_up_on(clock, chat)
        assert chat.hidden_turns == 0 and chat.user_messages()[0].text == "question 0"
        over = [round(p * 1000, 1) for p in passes if p > virtual.STEP_BUDGET + OTHER_COST]
        # (the first answers made teach the window what one costs: one or two passes may run over meanwhile)
        assert len(over) <= 2, f"passes over the budget (ms): {over}"
    finally:
        chat.close()
        chat.deleteLater()
        store.close()


def test_the_steps_of_a_frame_share_its_budget_across_qts_work_between_them(
        qapp_instance: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """Qt lays out and styles what a step made before the next step of the pass runs (a slice of earlier turns
    loaded): a step starting more than a millisecond after the last one had a budget of its own, so a pass held
    the window for two budgets and Qt's work. The steps of a frame share its budget, counted from its start; one
    due once it is spent waits for the next frame."""
    from ui.chat.view import virtual

    store, thread_id = _thread(tmp_path / "frame.db", 300)
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _made(chat)
        chat.load_earlier()  # a page of placeholders above the screen
        while chat.turn_window.busy:
            _settle(1)
        clock = _CountingClock()
        monkeypatch.setattr(virtual, "time", clock)
        bar = chat.verticalScrollBar()
        began = chat.turn_window._pass_began
        bar.setValue(bar.maximum() // 3)  # into the placeholders: a step makes their widgets, the budget's worth
        rounds = 0
        while chat.turn_window._pass_began == began and rounds < 500:  # (on a busy machine, a pass may come first)
            QApplication.processEvents()
            rounds += 1
        assert chat.turn_window._pass_began != began, "no step ran on the clock"
        assert chat.turn_window.busy, "the step made every widget near the screen: nothing spent its budget"
        # The frame's budget spent by the step, then Qt lays out and styles what it made, more than a millisecond
        # (set, not added: whatever else read the clock meanwhile, a window left by an earlier test, say).
        clock.now = chat.turn_window._pass_began + virtual.STEP_BUDGET + QT_WORK
        turns = len(chat.presenter.state.turns)
        chat.load_earlier()  # "Show earlier turns" in the same frame: its first slice would load now
        assert len(chat.presenter.state.turns) == turns, "a slice loaded in a frame whose budget was spent"
        clock.now += virtual.FRAME  # the next frame: the slice loads (a timer)
        rounds = 0
        while len(chat.presenter.state.turns) == turns and rounds < 500:
            _settle(1)
            rounds += 1
        assert len(chat.presenter.state.turns) > turns
        while chat.turn_window.busy and rounds < 2000:  # (the page's other slices, before the store closes)
            clock.now += virtual.FRAME
            _settle(1)
            rounds += 1
    finally:
        chat.close()
        chat.deleteLater()
        store.close()


def test_a_turns_widgets_are_shown_by_the_step_that_makes_them(qapp_instance: Any, tmp_path: Path) -> None:
    """A new widget in the column was shown (styled, its size asked) by Qt on a later pass of the event loop, not
    in the step that made it: its cost fell outside the step's budget, in Qt's work after it (a third of a pass).
    The step shows what it makes."""
    store, thread_id = _thread(tmp_path / "shown.db", 30)
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _made(chat)
        chat.load_earlier()
        while chat.turn_window.busy:
            _settle(1)
        far = next(t for t in chat.presenter.state.turns if chat.turn_window.is_placeholder(t))
        window = chat.turn_window
        step, hidden, made = window._step, [], []

        def checked() -> None:  # (what each step left hidden, before any later pass of the event loop)
            step()
            if isValid(chat):
                hidden.append([type(w).__name__ for w in chat._turn_widgets.get(far, []) if not w.isVisible()])

        window._step = checked  # type: ignore[method-assign]
        window.make(far, then=lambda: made.append(True))  # (as a search result far up does)
        for _ in range(200):
            if made:
                break
            _settle(1)
        window._step = step  # type: ignore[method-assign]
        assert made and chat._turn_widgets[far]
        assert hidden and not any(hidden), hidden
    finally:
        chat.close()
        chat.deleteLater()
        store.close()


def test_a_tool_cards_result_text_is_made_when_first_opened(qapp_instance: Any) -> None:
    """Every turn made while paging up a long thread makes its tool cards, and each card made the text view of
    its result (a text browser with a style sheet of its own) though most are never opened: the most of what a
    card cost. The result's text is made when the card's result is first opened, and shows the whole value."""
    from ui.chat.model.state import TurnState
    from ui.chat.model.tool_calls import ToolCallItem
    from ui.chat.view.cards import ToolCard
    from ui.widgets.common import AutoHeightText

    value = {"content": "def f():\n    pass\n" * 5}
    card = ToolCard(call_id="c1", tool="read_file", robot="assistant", server=None, arguments={"path": "f.py"})
    try:
        card.apply(ToolCallItem(parent=TurnState(), call_id="c1", tool="read_file", robot="assistant", server=None,
                                arguments={"path": "f.py"}, status="ok", result={"data": value}, duration=0.01))
        card.show()
        _settle()
        results = [v for v in card.findChildren(AutoHeightText) if v.objectName() == "ToolResult"]
        assert not results and not card.result_expanded, "a closed result's text view was made with the card"
        card.set_result_expanded(True)
        _settle()
        results = [v for v in card.findChildren(AutoHeightText) if v.objectName() == "ToolResult"]
        assert len(results) == 1 and results[0].isVisibleTo(card) and "def f():" in results[0].toPlainText()
        card.set_result_expanded(False)
        assert not results[0].isVisibleTo(card)
        card.set_result_expanded(True)  # (opened again: the same view)
        assert [v for v in card.findChildren(AutoHeightText) if v.objectName() == "ToolResult"] == results
    finally:
        card.close()
        card.deleteLater()


def test_turns_grown_live_keep_no_more_widgets_than_the_same_turns_reopened(
        qapp_instance: Any, tmp_path: Path) -> None:
    """A thread grown live holds what the same thread reopened at its end holds: the turns on screen and the
    margin above it as widgets, the ones further up given back to the gap (their heights kept: the screen does not
    move). The live view kept three screens of widgets above the one shown, a reopened one a screen."""
    turns = 60
    store, thread_id = _thread(tmp_path / "same.db", turns)
    live, reopened = _chat(), _chat()
    try:
        for i in range(turns):  # the events add_long_thread stores, fed as the bridge feeds them
            run = f"r{i}"
            live.presenter.add_user(f"question {i}")
            live.presenter.feed(ev.RunStarted(run_id=run, robot="assistant", seq=1, message=f"question {i}"))
            live.presenter.feed(ev.TextDelta(run_id=run, robot="assistant", seq=2, text=f"answer {i}"))
            live.presenter.feed(ev.Text(run_id=run, robot="assistant", seq=2, text=f"answer {i}"))
            live.presenter.feed(ev.RunFinished(run_id=run, robot="assistant", seq=3))
            _settle(2)
        _made(live)
        reopened.show_thread(LazyTranscript(store, thread_id))
        _made(reopened)
        reopened.scroll_to_bottom()
        _made(reopened)
        bar = live.verticalScrollBar()
        assert bar.value() == bar.maximum() > 0  # the live view kept to its end, as the reopened one is
        assert live.user_messages()[-1].text == reopened.user_messages()[-1].text == f"question {turns - 1}"
        grown, opened = len(live.turn_window.live_turns()), len(reopened.turn_window.live_turns())
        per_screen = max(1, opened // 2)  # (the reopened view's widgets: the screen and a screen above it)
        assert grown <= opened + per_screen // 2 + 1, f"{grown} turns live as widgets, {opened} reopened"

        # Scrolled back up half a screen at a time (a wheel's steps), the turns given back are made again above
        # what is on screen and the ones left below are given back: what is on screen does not move.
        for _ in range(6):
            bar.setValue(bar.value() - live.viewport().height() // 2)
            anchor = live.turn_window.anchor_at(bar.value())
            assert anchor is not None
            _made(live)
            widget, below_top = anchor
            assert isValid(widget) and widget.geometry().top() - bar.value() == below_top
        *shown, last = [int(m.text.split()[1]) for m in live.user_messages()]  # (the last turn is always kept)
        assert last == turns - 1 and shown == list(range(shown[0], shown[0] + len(shown))) and shown[-1] < turns - 2
    finally:
        for chat in (live, reopened):
            chat.close()
            chat.deleteLater()
        store.close()
