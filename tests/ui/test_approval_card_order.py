"""An approval travels in its run's ordered event stream. The approval gate asks in the run's task, ahead of the
window, which gets the run's events through the recording and the bridge — on a loaded machine a good part of a
second later. The window does not hand the approval to the chat when it is asked but with the event that asks it
(``approval_requested``, after the call's ``tool_use``: ``ui.window.asked``), so the chat has the call's card
then, in its place after the text before it, and the approval shows on it at once: no timer, no waiting card.
A network lane shows the model's text, then its tool card, as the reopened thread does, and the time to first
token is the model's, not the moment the approval was asked.

An approval asked once its call is shown goes in at once; one that no stream of the chat carries (asked outside a
run) gets a card made from the request, at once too."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from tests.ui.chat_dump import dump_state, dump_widgets
from ui.chat.model.presenter import ChatPresenter
from workspace import events as ev
from workspace.approval import ApprovalRequest
from workspace.persistence import coalesce_text
from workspace.result import NetworkResult, RobotResult, TaskState, Usage

ARGS = {"key": "left", "value": 1}


def _t(cls: type[ev.Event], seq: int, run: str, robot: str, task: str, ts: float, **fields: Any) -> Any:
    return cls(run_id=run, robot=robot, task=task, seq=seq, ts=ts, **fields)


def _network_start() -> list[ev.Event]:
    return [ev.RunStarted(run_id="n1", robot="writers", seq=1, ts=200.0, message="go"),
            _t(ev.TaskStarted, 2, "n1", "left_bot", "left", 200.01, message="go")]


def _left_until_asked() -> list[ev.Event]:
    """The left task's run up to its approval: what the gate had asked about before any of it showed."""
    return [
        _t(ev.RunStarted, 1, "a", "left_bot", "left", 200.02),
        _t(ev.TextDelta, 2, "a", "left_bot", "left", 200.25, text="Storing "),
        _t(ev.TextDelta, 3, "a", "left_bot", "left", 200.26, text="**left**."),
        _t(ev.Text, 4, "a", "left_bot", "left", 200.27, text="Storing **left**."),
        _t(ev.ToolUse, 5, "a", "left_bot", "left", 200.28, id="c1", name="remember", input=ARGS),
        _t(ev.ApprovalRequested, 6, "a", "left_bot", "left", 200.28, id="c1", name="remember", input=ARGS),
    ]


def _left_after_approval() -> list[ev.Event]:
    left = RobotResult(robot_name="left_bot", output=[], usage=Usage(6, 5, 0.001), duration=0.5)
    tasks = {"left": TaskState(name="left", robot="left_bot", optional=False, depends_on=[], status="done",
                               result=left)}
    network = NetworkResult(network="writers", status="done", tasks=tasks, order=["left"], params={}, duration=0.6)
    return [
        _t(ev.ApprovalDecided, 7, "a", "left_bot", "left", 200.40, id="c1", name="remember", decision="approve",
           input=ARGS, scope="once"),
        _t(ev.ToolResult, 8, "a", "left_bot", "left", 200.41, id="c1", name="remember",
           payload={"key": "left", "stored": True}, duration=0.01),
        _t(ev.TextDelta, 9, "a", "left_bot", "left", 200.45, text="Stored."),
        _t(ev.Text, 10, "a", "left_bot", "left", 200.46, text="Stored."),
        _t(ev.Usage, 11, "a", "left_bot", "left", 200.47, input_tokens=6, output_tokens=5, total_input_tokens=6,
           total_output_tokens=5),
        _t(ev.RunFinished, 12, "a", "left_bot", "left", 200.48, result=left),
        _t(ev.TaskFinished, 3, "n1", "left_bot", "left", 200.49, status="done", result=left),
        ev.RunFinished(run_id="n1", robot="writers", seq=4, ts=200.6, result=network),
    ]


@dataclass
class _Stored:
    """A stored turn as the presenter reads it."""

    events: list[ev.Event]
    id: str = "t1"
    user_text: str = "go"
    status: str = "done"
    sibling_index: int = 0
    sibling_count: int = 1


def _request() -> ApprovalRequest:
    return ApprovalRequest(call_id="c1", robot="left_bot", tool="remember", input=ARGS, run_id="a", task="left")


def _lane_lines(dump: str, task: str) -> list[str]:
    """The lines of a lane's widgets in a widget dump (indented under the lane's own line)."""
    lines = dump.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"lane {task} "))
    return [line.strip() for line in lines[start + 1:] if line.startswith(" ")][:3]


def _asked(chat: Any, future: asyncio.Future[Any]) -> tuple[Any, Any]:
    """What the window does with a bridge's events and the controller's waiting approvals (``ui.window.runs``)."""
    from ui.bridge import RunBridge
    from ui.window.asked import show_asked

    waiting: list[tuple[str | None, ApprovalRequest, asyncio.Future[Any]]] = [("t1", _request(), future)]
    bridge = RunBridge(own_clock=False)
    bridge.view_event.connect(lambda event: show_asked(chat, event, lambda: [w for w in waiting if not w[2].done()]))
    return bridge, waiting


def _chat() -> Any:
    from ui.chat.view.chat import ChatView

    chat = ChatView()
    chat.resize(900, 1200)
    chat.show()
    return chat


async def _close(chat: Any, future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.cancel()
        await asyncio.sleep(0)  # the card's panel hears it while it is there
    chat.close()
    chat.deleteLater()


async def test_an_approval_asked_ahead_of_its_lane_shows_with_the_event_that_asks_it(qapp_instance: Any) -> None:
    from ui.window.asked import waits_for_its_call

    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    chat = _chat()
    try:
        presenter = chat.presenter
        turn = presenter.add_user("go")
        presenter.set_user(turn, turn_id="t1")
        bridge, _waiting = _asked(chat, future)
        for event in _network_start():
            bridge.feed(event)
        # The gate asks; the left task's events (its text, then its tool_use) are still on their way here: the
        # window leaves the approval to them.
        assert waits_for_its_call(chat, _request(), streaming=True)
        assert not waits_for_its_call(chat, _request(), streaming=False)  # nothing streams: it would show now
        assert chat.card("c1", "a") is None and chat.pending_approval() is None

        seen: list[tuple[str, bool, bool]] = []  # each event as the chat has it, the moment it got there
        bridge.view_event.connect(lambda e: seen.append((e.kind, chat.card("c1", "a") is not None,
                                                         chat.pending_approval() is not None)))
        for event in _left_until_asked():  # the text, the tool_use and the approval_requested in one flush
            bridge.feed(event)
        # No wait, no timer: the approval is on its card as the event asking it reaches the chat.
        assert seen[-2:] == [("tool_use", True, False), ("approval_requested", True, True)], seen
        panel = chat.pending_approval()
        assert panel is not None
        card = chat.card("c1", "a")
        assert card is not None and card.approval is panel  # the approval is in the call's own card
        assert panel.isVisible()  # shown already, though its card came in the same pass: the keyboard can go to it
        lane = _lane_lines(dump_widgets(chat), "left")
        assert lane[0] == "text 'Storing **left**.'" and lane[1].startswith("tool remember"), lane
        panel.approve()
        assert future.done() and future.result().approved
        for event in _left_after_approval():
            bridge.feed(event)
        bridge.flush()

        stored = ChatPresenter()
        events = _network_start() + _left_until_asked() + _left_after_approval()
        stored.load_turn(_Stored(coalesce_text(events)))
        assert dump_state(presenter.state) == dump_state(stored.state)
        live_run, stored_run = presenter.run("n1"), stored.run("n1")
        assert live_run is not None and stored_run is not None
        assert live_run.time_to_first_token is not None
        assert abs(live_run.time_to_first_token - 0.25) < 1e-9  # the left model's first words, after the start
        assert live_run.time_to_first_token == stored_run.time_to_first_token
    finally:
        await _close(chat, future)


async def test_an_approval_asked_after_its_event_came_shows_at_once(qapp_instance: Any) -> None:
    from ui.window.asked import waits_for_its_call

    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    chat = _chat()
    try:
        turn = chat.presenter.add_user("go")
        chat.presenter.set_user(turn, turn_id="t1")
        bridge, waiting = _asked(chat, future)
        held = waiting.pop()  # not asked yet when its events pass
        for event in _network_start() + _left_until_asked():
            bridge.feed(event)
        assert chat.card("c1", "a") is not None and chat.pending_approval() is None
        waiting.append(held)
        assert not waits_for_its_call(chat, _request(), streaming=True)  # its call is shown: now
        chat.ask_approval(_request(), future)
        card = chat.card("c1", "a")
        assert card is not None and card.approval is not None and chat.pending_approval() is card.approval
        assert len(chat.tool_cards()) == 1  # the call's own card, not one made from the request
    finally:
        await _close(chat, future)


async def test_an_approval_with_nothing_streaming_still_gets_a_card(qapp_instance: Any) -> None:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    chat = _chat()
    try:
        chat.presenter.add_user("go")
        chat.ask_approval(_request(), future)  # no run of this chat streams: its events never come here
        card = chat.card("c1", "a")  # made from the request, at once
        assert card is not None and card.approval is not None and chat.pending_approval() is card.approval
        run = chat.presenter.run("a")
        assert run is not None and run.first_token is None  # the request is not the model's first token
    finally:
        await _close(chat, future)


async def test_in_the_window_the_approval_is_on_its_card_when_its_event_comes(desktop: Any, provider: Any) -> None:
    from tests.fakes.app_window import wait_until
    from workspace.providers.testing import ToolCall

    w, c = desktop.window, desktop.controller
    c.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue(["Storing the colour.", ToolCall("remember", {"key": "colour", "value": "teal"}, id="c1")],
                     "Noted the colour.")
    at_its_event: list[tuple[bool, bool]] = []  # (its card is there, the approval is on it) as the event came
    desktop.bridge.view_event.connect(
        lambda e: at_its_event.append((w.chat.card("c1", e.run_id) is not None, w.chat.pending_approval() is not None))
        if isinstance(e, ev.ApprovalRequested) else None)
    w.threads.new()
    w.runs.send("remember the colour")
    await wait_until(lambda: at_its_event, what="the approval's event")
    assert at_its_event == [(True, True)]
    panel = w.chat.pending_approval()
    assert panel is not None and [card.approval for card in w.chat.tool_cards()] == [panel]
    panel.approve()
    await wait_until(lambda: c.idle, what="the run to end")
    texts = [run.answer_text for turn in w.chat.presenter.state.turns for run in turn.top_runs]
    assert texts and texts[-1].endswith("Noted the colour.")
    assert c.waiting_approvals() == []
