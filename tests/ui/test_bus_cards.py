"""Messages between robots on a network's bus in the chat: a compact "alice → bob" card in the sender's lane
(the reply of a robot that answers messages, which has no lane, under the question in the asker's lane), in
the sender's colour, the same live and reopened."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fakes.stored_turns import FakeInfo, FakeView

from tests.ui.chat_dump import dump_state, dump_widgets
from ui.chat.model.bus import BusMessageItem
from ui.chat.model.presenter import ChatPresenter
from ui.chat.model.state import LaneItem
from workspace import Robot, ScriptedProvider, ToolCall
from workspace import events as ev
from workspace.network import Network
from workspace.persistence import coalesce_text


def bus_events() -> list[ev.Event]:
    alice = Robot("alice", system_prompt="s", knowledge_store=False, tools="none", mcp="none",
                  provider=ScriptedProvider([[ToolCall("send_message", {"to": "bob", "content": "What is 2 + 2?"},
                                                       id="s1")], "Bob says 4."]))
    bob = Robot("bob", system_prompt="s", knowledge_store=False, provider=ScriptedProvider(["4, of course."]))
    network = Network("pair").with_bus(serve=[bob])
    network.task("ask", alice)

    async def run() -> list[ev.Event]:
        return [e async for e in network.stream("Ask bob")]

    return asyncio.run(run())


def test_bus_messages_are_items_in_the_senders_lane() -> None:
    events = bus_events()
    presenter = ChatPresenter()
    turn = presenter.add_user("Ask bob")
    presenter.feed_all(events)
    [lane] = [i for i in turn.items if isinstance(i, LaneItem)]
    messages = [i for i in lane.items if isinstance(i, BusMessageItem)]
    assert [(m.sender, m.to, m.text, m.in_reply_to, m.network) for m in messages] == [
        ("alice", "bob", "What is 2 + 2?", None, "pair"), ("bob", "alice", "4, of course.", "alice:1", "pair")]
    kinds = [type(i).__name__ for i in lane.items]
    assert kinds.index("BusMessageItem") > kinds.index("ToolCallItem")  # under the call that sent it
    assert not [i for i in turn.items if isinstance(i, BusMessageItem)]
    call = presenter.call("s1")
    assert call is not None and call.inner is not None  # bob's answer: a run inside the send_message card
    assert call.inner.robot == "bob" and call.inner.status == "done"
    # Reopened from the store, it looks the same.
    stored = ChatPresenter()
    stored.load_turn(FakeView(FakeInfo("t1"), coalesce_text(events), user_text="Ask bob"))
    live = ChatPresenter()
    live_turn = live.add_user("Ask bob")
    live.set_user(live_turn, turn_id="t1")
    live.feed_all(events)
    assert dump_state(stored.state) == dump_state(live.state)
    assert "bus alice → bob id=alice:1 'What is 2 + 2?'" in dump_state(live.state)


def test_a_robots_bus_messages_outside_a_network_are_items_of_its_turn() -> None:
    from workspace import MessageBus
    from workspace.robot_tools import to_tool

    async def run() -> list[ev.Event]:
        bus = MessageBus()
        alice = Robot("alice", system_prompt="s", knowledge_store=False, mcp="none",
                      provider=ScriptedProvider([[ToolCall("ask", {"text": "ping"}, id="a1")], "Bob said pong."]))

        async def ask(text: str) -> str:
            """Ask bob."""
            sent = alice.send_message(to="bob", content=text)
            await bus.drain(timeout=10)
            return str(alice.outbox[sent.key].replies[0].content)

        alice.local_tools.append(to_tool(ask))
        alice.with_bus(bus)
        Robot("bob", system_prompt="s", knowledge_store=False, provider=ScriptedProvider()).with_bus(bus) \
            .respond_to_tasks(lambda m: "pong")
        return [e async for e in alice.stream("Ask bob")]

    presenter = ChatPresenter()
    turn = presenter.add_user("Ask bob")
    presenter.feed_all(asyncio.run(run()))
    messages = [i for i in turn.items if isinstance(i, BusMessageItem)]
    assert [(m.sender, m.to, m.text, m.in_reply_to, m.network) for m in messages] == [
        ("alice", "bob", "ping", None, None), ("bob", "alice", "pong", "alice:1", None)]
    assert not [i for i in turn.items if isinstance(i, LaneItem)]  # no network: no lanes


def test_the_chat_shows_a_card_in_the_senders_colour(qapp_instance: Any) -> None:
    from ui.chat.view.bus_card import BusMessageCard
    from ui.chat.view.chat import ChatView
    from ui.chat.view.lanes import TaskLane
    from ui.widgets.status import robot_color

    chat = ChatView()
    chat.presenter.add_user("Ask bob")
    chat.presenter.feed_all(bus_events())
    [lane] = [w for w in chat.items() if isinstance(w, TaskLane)]
    cards = [w for w in lane.widgets() if isinstance(w, BusMessageCard)]
    assert [c.title for c in cards] == ["alice → bob", "bob → alice"]
    assert cards[0].body.text() == "What is 2 + 2?" and cards[0].kind.text() == "message · alice:1"
    assert cards[1].kind.text() == "reply · bob:1"
    assert robot_color("alice", "pair") in cards[0].styleSheet()
    assert robot_color("bob", "pair") in cards[1].styleSheet()
    text = dump_widgets(chat)
    assert "\n    bus alice → bob 'message · alice:1' 'What is 2 + 2?'" in text
    assert "\n    bus bob → alice 'reply · bob:1' '4, of course.'" in text


def test_a_long_message_shows_its_first_lines(qapp_instance: Any) -> None:
    from ui.chat.view.bus_card import SHOWN_LINES, BusMessageCard
    from ui.chat.view.chat import ChatView

    chat = ChatView()
    chat.presenter.add_user("go")
    text = "\n".join(f"line {n}" for n in range(30))
    chat.presenter.feed(ev.BusMessage(run_id="n1", robot="alice", seq=1, sender="alice", to="bob", content=text,
                                      message_id="alice:1"))
    [card] = [w for w in chat.items() if isinstance(w, BusMessageCard)]
    assert card.body.text().splitlines()[-1] == f"line {SHOWN_LINES - 1}…"
    assert card.body.toolTip() == text


async def test_the_window_shows_a_network_files_bus_messages_and_reopens_them(db_path: Path, robotlab_home: Path) -> None:
    """The example network file run in the window (its message typed and sent): the cards in the writer's lane,
    and the same cards when the thread is opened again from the database."""
    import shutil

    from examples.bus_network import NETWORK, provider
    from tests.fakes.app_window import running_app, wait_until
    from ui.chat.view.lanes import TaskLane

    networks = robotlab_home / "config" / "networks"
    networks.mkdir(parents=True, exist_ok=True)
    shutil.copy(NETWORK, networks / NETWORK.name)
    async with running_app(provider=provider(), db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        window = root.window
        window.robots.refresh()
        window.robot_picker.setCurrentIndex(window.robot_model.row_of("release-bus", "network"))
        window.runs.send("Release notes for v2.0")
        await wait_until(lambda: root.controller.idle and len(cards(window.chat)) == 2, timeout=60,
                         what="the network's run and its two messages")
        assert [c.title for c in cards(window.chat)] == ["writer → editor", "editor → writer"]
        [writer] = [w for w in window.chat.items() if isinstance(w, TaskLane) and w.task == "write"]
        assert all(c in writer.widgets() for c in cards(window.chat))
        live = [line.strip() for line in dump_widgets(window.chat).splitlines() if line.strip().startswith("bus ")]
        assert len(live) == 2
        thread = root.controller.thread_id
        assert thread is not None
        window.threads.new()
        await wait_until(lambda: not cards(window.chat), timeout=30, what="a new thread")
        window.threads.open(thread)
        await wait_until(lambda: len(cards(window.chat)) == 2, timeout=30, what="the reopened thread")
        assert [line.strip() for line in dump_widgets(window.chat).splitlines()
                if line.strip().startswith("bus ")] == live


def cards(chat: Any) -> list[Any]:
    from ui.chat.view.bus_card import BusMessageCard
    from ui.chat.view.lanes import TaskLane

    found = [w for w in chat.items() if isinstance(w, BusMessageCard)]
    for lane in (w for w in chat.items() if isinstance(w, TaskLane)):
        found += [w for w in lane.widgets() if isinstance(w, BusMessageCard)]
    return found
