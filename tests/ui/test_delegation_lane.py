"""A delegation a robot's tool started (in the background) shows in the chat as a run inside that call's card,
like a robot used as a tool: a lane with the delegate's answer, done when it finished, the same reopened."""

from __future__ import annotations

import asyncio
from typing import Any

from fakes.delegating_robots import background_events
from fakes.stored_turns import FakeInfo, FakeView

from tests.ui.chat_dump import dump_state, dump_widgets
from ui.chat.model.presenter import ChatPresenter
from ui.chat.model.state import CallLaneItem, TextItem
from workspace.persistence import coalesce_text


def test_the_delegated_run_is_a_lane_in_the_card_of_the_call_that_started_it() -> None:
    events = asyncio.run(background_events())
    presenter = ChatPresenter()
    turn = presenter.add_user("Summarise Q4")
    presenter.feed_all(events)
    call = presenter.call("c1")
    assert call is not None and isinstance(call.inner, CallLaneItem)
    lane = call.inner
    assert lane.robot == "summarizer" and lane.status == "done"
    assert [i.text for i in lane.items if isinstance(i, TextItem)] == ["Revenue grew 18%."]
    assert len(turn.top_runs) == 1 and turn.top_runs[0].end is not None
    stored = ChatPresenter()
    stored.load_turn(FakeView(FakeInfo("t1"), coalesce_text(events), user_text="Summarise Q4"))
    live = ChatPresenter()
    live.set_user(live.add_user("Summarise Q4"), turn_id="t1")
    live.feed_all(events)
    assert dump_state(stored.state) == dump_state(live.state)


def test_the_chat_view_shows_it_inside_the_card(qapp_instance: Any) -> None:
    from ui.chat.view.cards import ToolCard
    from ui.chat.view.chat import ChatView
    from ui.chat.view.lanes import TaskLane

    chat = ChatView()
    chat.presenter.add_user("Summarise Q4")
    chat.presenter.feed_all(asyncio.run(background_events()))
    card = chat.card("c1")
    assert isinstance(card, ToolCard)
    [lane] = card.lanes()
    assert isinstance(lane, TaskLane) and lane.status == "done"
    assert "text 'Revenue grew 18%.'" in dump_widgets(chat)


def test_a_delegation_still_going_when_the_caller_ends_says_it_was_not_followed() -> None:
    from ui.chat.model.runs import BACKGROUND_NOT_FOLLOWED
    from workspace import Robot
    from workspace.providers.testing import Pause, ScriptedProvider, ToolCall
    from workspace.tools.base import Tool

    slow = Robot("slow", system_prompt="s", knowledge_store=False,
                 provider=ScriptedProvider([["Thinking ", Pause(5), "done."]]))

    async def start(arguments: dict[str, Any]) -> str:
        await manager.delegate(to=slow, task="work", background=True)
        return "started"

    manager = Robot("manager", system_prompt="s", knowledge_store=False,
                    local_tools=[Tool("start", "Start the work", {"type": "object", "properties": {}}, start)],
                    provider=ScriptedProvider([[ToolCall("start", {}, id="c1")], [Pause(0.3), "Started it."]]))

    async def run() -> list[Any]:
        return [e async for e in manager.stream("go")]

    events = asyncio.run(run())
    assert any(e.robot == "slow" and e.parent_tool_id == "c1" for e in events)  # it began inside the call
    presenter = ChatPresenter()
    presenter.add_user("go")
    presenter.feed_all(events)
    call = presenter.call("c1")
    assert call is not None and call.inner is not None
    assert call.inner.status == "cancelled" and call.inner.reason == BACKGROUND_NOT_FOLLOWED
