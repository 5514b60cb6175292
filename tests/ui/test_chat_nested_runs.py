"""Runs inside runs in the chat: a robot used as a tool shows as a lane inside its call's card (live and
reopened alike, its end not ending the turn's run, its usage in the caller's footer), and a network
task's own terminal event (now in the stream) does not end the network's run."""

from __future__ import annotations

import asyncio
from typing import Any

from fakes.stored_turns import FakeInfo, FakeView

from tests.ui.chat_dump import dump_state, dump_widgets
from ui.chat.model.presenter import ChatPresenter
from ui.chat.model.state import CallLaneItem, LaneItem, NetworkItem, TextItem
from ui.chat.model.tool_calls import ToolCallItem
from workspace import Robot, ScriptedProvider, ToolCall
from workspace import events as ev
from workspace.network import Network
from workspace.persistence import coalesce_text


def robot_as_tool_events() -> list[ev.Event]:
    inner = Robot("helper", system_prompt="s", provider=ScriptedProvider([
        ["Looking. ", ToolCall("remember_nothing", {})], "It is sunny."]), tools=[remember_nothing])
    outer = Robot("boss", system_prompt="s", robots=[inner], provider=ScriptedProvider([
        ["Asking. ", ToolCall("helper", {"message": "Weather?"}, id="c1")], "Sunny, says the helper."]))

    async def run() -> list[ev.Event]:
        return [e async for e in outer.stream("go")]

    return asyncio.run(run())


def remember_nothing() -> str:
    """Remember nothing."""
    return "nothing"


def test_a_robot_used_as_a_tool_is_a_lane_inside_its_card() -> None:
    events = robot_as_tool_events()
    presenter = ChatPresenter()
    turn = presenter.add_user("go")
    inner_started = next(i for i, e in enumerate(events) if isinstance(e, ev.RunStarted) and e.robot == "helper")
    inner_ended = next(i for i, e in enumerate(events) if e.terminal and e.robot == "helper")
    presenter.feed_all(events[:inner_ended])
    call = presenter.call("c1")
    assert isinstance(call, ToolCallItem) and isinstance(call.inner, CallLaneItem)
    lane = call.inner
    assert lane.status == "running" and lane.robot == "helper" and not lane.collapsed
    assert [type(i).__name__ for i in lane.items] == ["TextItem", "ToolCallItem", "TextItem"]
    assert isinstance(lane.items[0], TextItem) and lane.items[0].text == "Looking. "
    presenter.feed(events[inner_ended])
    boss = presenter.run(events[0].run_id)
    assert boss is not None and boss.end is None  # the inner end did not end the turn's run
    assert lane.status == "done" and lane.collapsed and lane.usage.input_tokens > 0
    presenter.feed_all(events[inner_ended + 1:])
    # The turn: the boss's text and card (the lane inside it), one footer, the boss's totals.
    assert [type(i).__name__ for i in turn.items] == ["HeaderItem", "TextItem", "ToolCallItem", "TextItem"]
    assert turn.top_runs == [boss] and boss.end is not None and boss.end.outcome == "finished"
    assert boss.totals.total_tokens == events[-1].result.usage.total_tokens  # the inner run's tokens included
    assert turn.totals == boss.totals
    dump = dump_state(presenter.state)
    assert "      lane helper (as a tool) [done]" in dump and "          text 'It is sunny.'" in dump
    assert inner_started < inner_ended
    # Reopened from the store, it looks the same.
    stored = ChatPresenter()
    stored.load_turn(FakeView(FakeInfo("t1"), coalesce_text(events)))
    live = ChatPresenter()
    live_turn = live.add_user("go")
    live.set_user(live_turn, turn_id="t1")
    live.feed_all(events)
    assert dump_state(stored.state) == dump_state(live.state)


def test_an_interrupted_turn_stops_the_lane_of_its_robot_used_as_a_tool() -> None:
    events = robot_as_tool_events()
    cut = next(i for i, e in enumerate(events) if e.terminal and e.robot == "helper")
    presenter = ChatPresenter()
    presenter.load_turn(FakeView(FakeInfo("t1"), coalesce_text(events[:cut]), status="interrupted"))
    lane = presenter.call("c1").inner  # type: ignore[union-attr]
    assert lane is not None and lane.status == "cancelled"


def test_a_task_runs_end_does_not_end_the_network() -> None:
    net = Network("pair")
    net.task("first", Robot("a", system_prompt="s", provider=ScriptedProvider(["one"])))
    net.task("second", Robot("b", system_prompt="s", provider=ScriptedProvider(["two"])), depends_on=["first"])

    async def run() -> list[ev.Event]:
        return [e async for e in net.stream("go")]

    events = asyncio.run(run())
    first_end = next(i for i, e in enumerate(events) if e.terminal and e.robot == "a")
    presenter = ChatPresenter()
    turn = presenter.add_user("go")
    presenter.feed_all(events[:first_end + 1])
    group = next(i for i in turn.items if isinstance(i, NetworkItem))
    assert not group.ended and presenter.run(events[0].run_id).end is None  # type: ignore[union-attr]
    presenter.feed_all(events[first_end + 1:])
    lanes = [i for i in turn.items if isinstance(i, LaneItem)]
    assert group.ended and [lane.status for lane in lanes] == ["done", "done"]
    assert len(turn.top_runs) == 1


def test_the_chat_view_shows_the_lane_in_the_card(qapp_instance: Any) -> None:
    from ui.chat.view.cards import ToolCard
    from ui.chat.view.chat import ChatView
    from ui.chat.view.lanes import TaskLane

    chat = ChatView()
    chat.presenter.add_user("go")
    chat.presenter.feed_all(robot_as_tool_events())
    card = chat.card("c1")
    assert isinstance(card, ToolCard)
    [lane] = card.lanes()
    assert isinstance(lane, TaskLane) and lane.status == "done" and lane.collapsed
    assert [type(w).__name__ for w in lane.widgets()] == ["MarkdownStream", "ToolCard", "MarkdownStream"]
    text = dump_widgets(chat)
    assert "\n    lane helper" in text and "\n        text 'It is sunny.'" in text
    chat.presenter.set_lane_collapsed(chat.presenter.call("c1").inner, False, by_user=True)  # type: ignore[arg-type]
    assert not lane.collapsed
    chat.deleteLater()
