"""An approval asked before its call's events reach the chat: the approval gate runs in the run's task, ahead
of the window, which gets the run's events through the recording and the bridge — on a loaded machine a good
part of a second later. The chat then waits for the call's own ``tool_use`` (it comes after the text before it)
rather than making the card from the request: a network lane shows the model's text, then its tool card, as the
reopened thread does, and the time to first token is the model's, not the moment the approval was asked.

A card is still made from the request when nothing streams into the chat (an approval asked outside a run)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from tests.ui.chat_dump import dump_state, dump_widgets
from tests.ui.conftest import wait_until
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


async def test_an_approval_asked_ahead_of_its_lane_waits_for_the_call_in_its_place(qapp_instance: Any) -> None:
    from ui.chat.view.chat import APPROVAL_CARD_WAIT_MS, ChatView

    loop = asyncio.get_running_loop()
    chat = ChatView()
    chat.resize(900, 1200)
    chat.show()
    future: asyncio.Future[Any] = loop.create_future()
    try:
        presenter = chat.presenter
        turn = presenter.add_user("go")
        presenter.set_user(turn, turn_id="t1")
        presenter.feed_all(_network_start())
        # The gate asks; the left task's events (its text, then its tool_use) are still on their way here.
        chat.ask_approval(_request(), future)
        await asyncio.sleep(3 * APPROVAL_CARD_WAIT_MS / 1000)  # the card's wait is over, more than once
        assert chat.card("c1", "a") is None, "a card was made ahead of the text that comes before it"
        assert chat.pending_approval() is None

        presenter.feed_all(_left_until_asked())
        panel = chat.pending_approval()
        assert panel is not None and chat.card("c1", "a") is not None  # the approval is in the call's own card
        lane = _lane_lines(dump_widgets(chat), "left")
        assert lane[0] == "text 'Storing **left**.'" and lane[1].startswith("tool remember"), lane
        panel.approve()
        assert future.done() and future.result().approved
        presenter.feed_all(_left_after_approval())

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
        if not future.done():
            future.cancel()
            await asyncio.sleep(0)  # the card's panel hears it while it is there
        chat.close()
        chat.deleteLater()


async def test_an_approval_with_nothing_streaming_still_gets_a_card(qapp_instance: Any) -> None:
    from ui.chat.view.chat import ChatView

    loop = asyncio.get_running_loop()
    chat = ChatView()
    chat.resize(900, 1200)
    chat.show()
    future: asyncio.Future[Any] = loop.create_future()
    try:
        chat.presenter.add_user("go")
        chat.ask_approval(_request(), future)  # no run of this chat streams: its events never come here
        await wait_until(lambda: chat.pending_approval() is not None, what="the card made from the request")
        card = chat.card("c1", "a")
        assert card is not None and card.approval is not None
        run = chat.presenter.run("a")
        assert run is not None and run.first_token is None  # the request is not the model's first token
    finally:
        if not future.done():
            future.cancel()
            await asyncio.sleep(0)  # the card's panel hears it while it is there
        chat.close()
        chat.deleteLater()
