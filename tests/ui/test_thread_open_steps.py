"""Opening a stored thread makes its turns' widgets in later steps, the newest first, not in the click's step.

Real threads in a real database, shown in a chat view as the window shows them. The step that shows a thread
reads its last turns' data and makes none of their widgets; the steps after it make them a frame's budget at a
time, the last turn first, the screen kept at the column's end meanwhile, until every turn on screen is widgets.
Showing another thread while one is still coming in leaves only the new thread's turns, as do five threads
shown one after the other, a step apart (a person clicking down the thread list), in the window too, where the
workers reading threads apart, held back while a thread's last turns are made, go on afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakes.long_threads import add_long_thread, add_tool_thread, question
from PySide6.QtWidgets import QApplication

from ui.chat.model.presenter import INITIAL_TURNS
from ui.chat.view.chat import ChatView
from ui.chat.view.stream import MarkdownStream
from ui.transcript import LazyTranscript
from workspace.persistence import Store

#: How long the widgets of the turns on screen may take to come (s): only a bound on a hang, generous. A step due
#: in the next frame waits on a real timer, so how many passes of the event loop they take depends on the machine.
MOST_SECONDS = 60.0


def _chat() -> ChatView:
    chat = ChatView()
    chat.resize(700, 900)  # (the window's size: a screen of several turns, the last one not in its middle)
    chat.show()
    return chat


def _step() -> None:
    """One pass of the event loop, a millisecond on (a step due in the next frame waits on a timer)."""
    QApplication.processEvents()
    time.sleep(0.001)


def _until(done: Callable[[], bool], each: Callable[[], None] | None = None) -> int:
    """Steps until ``done``; ``each`` runs after every step. How many it took."""
    steps = 0
    deadline = time.monotonic() + MOST_SECONDS
    while not done():
        assert time.monotonic() < deadline, "the turns on screen never all came"
        _step()
        if each is not None:
            each()
        steps += 1
    return steps


def _screen_made(chat: ChatView) -> bool:
    """Whether every turn reaching the screen is widgets and the chat has nothing left to make."""
    window = chat.turn_window
    if window.busy or not chat.presenter.state.turns:
        return False
    top = chat.verticalScrollBar().value()
    bottom = top + chat.viewport().height()
    return not any(gap.span(turn)[1] >= top and gap.span(turn)[0] <= bottom
                   for turn, gap in window.placeholders.items())


def _texts(chat: ChatView) -> set[str]:
    """The user messages' and answers' text the chat shows as widgets."""
    return ({m.text for m in chat.user_messages()}
            | {w.text for w in chat.items() if isinstance(w, MarkdownStream)})


def test_the_step_showing_a_thread_makes_no_widget_and_the_next_ones_make_the_newest_first(
        qapp_instance: Any, tmp_path: Path) -> None:
    store = Store(tmp_path / "tools.db")
    thread_id = add_tool_thread(store, 40)
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        # The click's step: the last turns' data, no widget of theirs (they held the window for 100 ms).
        turns = chat.presenter.state.turns
        assert len(turns) == INITIAL_TURNS and turns[-1].user is not None
        assert turns[-1].user.text == question(39)
        assert chat.turn_window.made == 0 and chat.user_messages() == []
        assert all(chat.turn_window.is_placeholder(t) for t in turns)

        # The next steps: the last turn first, then the ones above it; the screen stays at the column's end.
        # The order the turns' widgets are begun in: a step may make more than one turn when its kinds of widget
        # cost little lately (what the turn window learned from earlier tests), so it is watched per turn begun.
        bar = chat.verticalScrollBar()
        window = chat.turn_window
        begun: list[int] = []
        make = window._make

        def making(turn: Any) -> Any:
            begun.append(turns.index(turn))
            return make(turn)

        window._make = making  # type: ignore[method-assign]
        kept_at_end: list[bool] = []

        def look() -> None:
            if window.made:
                kept_at_end.append(bar.value() == bar.maximum())

        steps = _until(lambda: _screen_made(chat), look)
        assert begun and begun[0] == len(turns) - 1, f"turns begun, in order: {begun}"
        assert begun == sorted(begun, reverse=True), f"not the newest first: {begun}"
        assert steps > 1  # (came in several steps, not one)
        assert all(kept_at_end), "the screen left the column's end while turns came in above it"
        assert question(39) in _texts(chat) and question(38) in _texts(chat)
        assert not chat.turn_window.is_placeholder(turns[-1])
    finally:
        chat.close()
        chat.deleteLater()
        store.close()


def test_another_thread_shown_while_one_comes_in_leaves_only_its_own_turns(
        qapp_instance: Any, tmp_path: Path) -> None:
    tools, plain, short = Store(tmp_path / "a.db"), Store(tmp_path / "b.db"), Store(tmp_path / "c.db")
    a, b, c = add_tool_thread(tools, 30), add_long_thread(plain, 30)[0], add_long_thread(short, 3)[0]
    chat = _chat()
    try:
        chat.show_thread(LazyTranscript(tools, a))
        _until(lambda: chat.turn_window.made > 0)  # the first of its widgets made, the others still to come
        assert chat.turn_window.busy
        chat.show_thread(LazyTranscript(plain, b))
        _until(lambda: _screen_made(chat))
        texts = _texts(chat)
        assert "question 29" in texts and "answer 29" in texts
        assert not any(t.startswith("Question") for t in texts), "a widget of the thread left stayed"

        # Five threads shown one after the other, a step apart: the last one shows, alone.
        for source in (LazyTranscript(tools, a), LazyTranscript(plain, b), LazyTranscript(tools, a),
                       LazyTranscript(plain, b), LazyTranscript(short, c)):
            chat.show_thread(source)
            _step()
        _until(lambda: _screen_made(chat))
        _until(lambda: not chat.turn_window.busy)
        assert [m.text for m in chat.user_messages()] == ["question 0", "question 1", "question 2"]
        assert _texts(chat) == {f"question {i}" for i in range(3)} | {f"answer {i}" for i in range(3)}
    finally:
        chat.close()
        chat.deleteLater()
        for store in (tools, plain, short):
            store.close()


def test_an_approval_asked_in_a_turn_still_to_come_makes_that_turn_and_shows_its_panel(
        qapp_instance: Any, tmp_path: Path) -> None:
    """A thread opened while its robot waits for an approval (a run in the background, asking): the window hands the
    approval over in the step that shows the thread, when its last turn is not widgets yet. That turn is made there
    and then, and its call's card asks; nothing waits for the later steps, which could never attach it."""
    import asyncio

    from workspace.approval import ApprovalRequest

    store = Store(tmp_path / "asking.db")
    thread_id = add_tool_thread(store, 20)
    chat = _chat()
    loop = asyncio.new_event_loop()
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        last = chat.presenter.state.turns[-1]
        assert chat.turn_window.is_placeholder(last)
        chat.ask_approval(ApprovalRequest(call_id="c19", run_id="r19", robot="assistant", tool="read_file",
                                          input={"path": "file_19.py"}), loop.create_future())
        assert not chat.turn_window.is_placeholder(last)
        card = chat.card("c19", "r19")
        assert card is not None and card.approval is not None
        assert chat.approvals == [card.approval]
        _until(lambda: _screen_made(chat))
    finally:
        chat.close()
        chat.deleteLater()
        store.close()
        loop.close()

async def test_five_clicks_down_the_thread_list_end_on_the_last_thread_and_let_the_workers_go(
        provider: Any, db_path: Path) -> None:
    """In the window: five threads opened one after the other, a turn of the event loop apart, as fast clicks do.
    The window ends on the last one, only its turns shown, and the workers reading threads apart, held back while
    a thread's last turns are made, go on once they are."""
    import asyncio

    from tests.fakes.app_window import running_app, turns_made, wait_until

    store = Store(db_path)
    tools, plain, short = add_tool_thread(store, 30), add_long_thread(store, 30)[0], add_long_thread(store, 3)[0]
    store.close()
    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        window = root.window
        window.threads.new()
        await asyncio.sleep(0.05)
        for thread_id in (tools, plain, tools, plain, short):
            window.threads.open(thread_id)
            await asyncio.sleep(0)
        chat, held = window.chat, root.controller.store
        await turns_made(chat)
        assert root.controller.thread_id == short
        assert _texts(chat) == {f"question {i}" for i in range(3)} | {f"answer {i}" for i in range(3)}
        await wait_until(lambda: held._background_free.is_set(), what="the workers let go")


def test_the_first_step_of_a_thread_shown_waits_a_frame_and_a_turns_footer_comes_after_its_message(
        qapp_instance: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """The step making a thread's first turn's widgets ran on the next turn of the event loop after the click's, with
    the paint of what the click changed (the list, the title, the column emptied): one stall of a frame and more. It
    waits a frame after the click's step now. And a turn's user message and its run's footer were made in one step;
    now the footer is a step of its own (here each step makes one widget)."""
    from ui.chat.view import virtual
    from ui.chat.view.messages import RunFooter, UserMessage

    store = Store(tmp_path / "tools.db")
    thread_id = add_tool_thread(store, 6)
    monkeypatch.setattr(virtual, "STEP_BUDGET", 0.0)  # (a widget a frame: each step makes one)
    chat = _chat()
    window = chat.turn_window
    QApplication.processEvents()  # (the steps the chat's showing left due)
    step, made = window._step, []

    def watched() -> None:  # the user messages and footers each step made
        before = len(chat.findChildren(UserMessage)), len(chat.findChildren(RunFooter))
        step()
        made.append((len(chat.findChildren(UserMessage)) - before[0], len(chat.findChildren(RunFooter)) - before[1]))

    window._step = watched  # type: ignore[method-assign]
    window.schedule()  # (a step already due when the thread is shown, as a scroll or a resize leaves one)
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        QApplication.processEvents()  # the turn of the event loop after the click's step: the window paints
        assert made and chat._turn_widgets == {} and window.busy, "widgets were made right after the click's step"
        _until(lambda: _screen_made(chat))
        assert sum(m for m, _ in made) >= 2 and sum(f for _, f in made) >= 2  # (turns made, with their footers)
        assert not any(m and f for m, f in made), f"a step made a user message and a footer: {made}"
    finally:
        window._step = step  # type: ignore[method-assign]
        chat.close()
        chat.deleteLater()
        store.close()


def test_a_step_whose_own_layout_moves_the_range_still_leaves_the_next_one_to_the_next_frame(
        qapp_instance: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """A step that makes a widget lays the column out: the scroll range changes and the chat asks for a step. That
    ask, at once, came before the step's own "the next frame" (its budget spent) and won: the next step was due on
    the next turn of the event loop, and on a busy machine (a frame of wall time later) made widgets again at once,
    step after step with no frame between them. Now the step ends with the latest delay asked while it ran."""
    from PySide6.QtCore import QTimer

    from ui.chat.view import virtual

    started: list[tuple[int, Any]] = []

    class Timer:  # QTimer, its single shots noted
        @staticmethod
        def singleShot(delay: int, call: Any) -> None:  # (Qt's name)
            started.append((delay, call))
            QTimer.singleShot(delay, call)

    store = Store(tmp_path / "tools.db")
    thread_id = add_tool_thread(store, 6)
    monkeypatch.setattr(virtual, "STEP_BUDGET", 0.0)  # (a widget a frame: a step that made one has spent it)
    monkeypatch.setattr(virtual, "QTimer", Timer)
    chat = _chat()
    window = chat.turn_window
    QApplication.processEvents()
    step, asked = window._step, []

    def watched() -> None:  # the delays of the next steps a step that made a widget left due
        before, count = len(started), len(chat._widgets)
        step()
        if len(chat._widgets) > count and window._making is not None:  # (a turn's widgets still to come)
            asked.append([delay for delay, call in started[before:] if call is watched])

    window._step = watched  # type: ignore[method-assign]
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        _until(lambda: _screen_made(chat))
        assert len(asked) >= 3 and all(asked), asked
        assert all(delays == [delays[0]] and delays[0] >= 1 for delays in asked), f"next steps due: {asked}"
    finally:
        window._step = step  # type: ignore[method-assign]
        chat.close()
        chat.deleteLater()
        store.close()
