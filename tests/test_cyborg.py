"""RobotLab's cyborg on top of Person: channels (scripted, terminal), the interviewer (questions answered by
correlation id or oldest first, time limits, initiative), and a person on a bus with real robots answering
through the loopback model server: tasks, mentions, broadcasts, assign, remember / recall."""

from __future__ import annotations

import asyncio
import io
import os
from typing import Any

import pytest
from fakes.bus_robots import robot
from fakes.llm_server import FakeLLMServer

from workspace import (
    BusError,
    Channel,
    ChannelMessage,
    Interviewer,
    Memory,
    MessageBus,
    Network,
    Person,
    ScriptedChannel,
    TerminalChannel,
)
from workspace.network.person import mentions

# Bounds a hang only; no test measures time.
HANG = 30.0


class LineChannel(Channel):
    """A channel like a terminal (no correlation ids) fed by the test: what the person types."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.inbox: asyncio.Queue[ChannelMessage] = asyncio.Queue()

    def deliver(self, message: ChannelMessage) -> ChannelMessage:
        self.shown.append(message.content)
        return message

    def type(self, line: str) -> None:
        self.inbox.put_nowait(ChannelMessage(line))

    async def receive(self, timeout: float | None = None) -> ChannelMessage | None:
        try:
            return await asyncio.wait_for(self.inbox.get(), timeout)
        except TimeoutError:
            return None


async def wait_until(check: Any, what: str) -> None:
    async with asyncio.timeout(HANG):
        while not check():
            await asyncio.sleep(0.01)


# -- the interviewer ----------------------------------------------------------------------------------------
async def test_scripted_answers_match_their_questions_by_id_and_choices_are_numbered() -> None:
    channel = ScriptedChannel(["2", "", "ship it"])
    interviewer = Interviewer(channel)
    first = await interviewer.ask("Which colour?", choices=["red", "green"])
    second = await interviewer.ask("Your name?", default="Ada")
    third = await interviewer.ask("Anything else?")
    assert [first.id, second.id, third.id] == [1, 2, 3]
    assert await third.answer(timeout=HANG) == "ship it"  # waited on in any order
    assert await first.answer(timeout=HANG) == "green"  # "2" picks the second choice
    assert await second.answer(timeout=HANG) == "Ada"  # an empty answer is the default
    assert channel.asked == ["Which colour?\n  1. red\n  2. green", "Your name?", "Anything else?"]
    assert interviewer.outstanding == [] and interviewer.initiative == []
    await interviewer.close()


async def test_no_answer_in_time_gives_the_default_and_a_late_reply_is_initiative() -> None:
    channel = ScriptedChannel([])  # a person who never replies
    heard: list[str] = []
    interviewer = Interviewer(channel).on_initiative(lambda message: heard.append(message.content))
    question = await interviewer.ask("Approve?", default="no")
    assert await question.answer(timeout=0.2) == "no"
    assert interviewer.outstanding == []  # withdrawn: a late reply cannot claim it
    other = await interviewer.ask("Still there?")
    assert await interviewer.ask_and_wait("Anyone?", timeout=0.1) is None  # no default: None
    channel.say("yes, approve", in_reply_to=question.id)  # names a withdrawn question
    channel.say("actually, one more thing", in_reply_to=99)
    channel.say("here")  # names none: the oldest open question takes it
    assert await other.answer(timeout=HANG) == "here"
    await wait_until(lambda: len(heard) == 2, "the initiative")
    assert heard == ["yes, approve", "actually, one more thing"]
    assert [m.in_reply_to for m in interviewer.initiative] == [question.id, 99]
    await interviewer.close()


async def test_a_terminal_like_channel_answers_oldest_first_and_listen_hears_the_rest() -> None:
    channel = LineChannel()
    interviewer = Interviewer(channel, default_timeout=HANG)
    a = await interviewer.ask("First?")
    b = await interviewer.ask("Second?")
    channel.type("one")
    channel.type("two")
    assert (await b.answer(), await a.answer()) == ("two", "one")  # matched oldest first, not by who waits
    channel.type("by the way, the build is red")
    interviewer.listen()  # read even with no question open
    await wait_until(lambda: interviewer.initiative, "the initiative")
    assert interviewer.initiative[0].content == "by the way, the build is red"
    await interviewer.close()

    class Broken(LineChannel):
        def deliver(self, message: ChannelMessage) -> ChannelMessage:
            raise OSError("the terminal went away")

    failing = Interviewer(Broken())
    with pytest.raises(OSError, match="went away"):
        await failing.ask("Shown?")
    assert failing.outstanding == []  # a question never shown is not left open
    with pytest.raises(RuntimeError, match="closed"):
        await interviewer.ask("again?")
    with pytest.raises(TypeError, match="Channel"):
        Interviewer(object())  # type: ignore[arg-type]


async def test_the_terminal_channel_writes_the_question_and_reads_lines_until_the_end() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "r") as typed, os.fdopen(write_end, "w") as keyboard:
        shown = io.StringIO()
        channel = TerminalChannel(input=typed, output=shown, name="network")
        interviewer = Interviewer(channel)
        question = await interviewer.ask("Deploy?", choices=["yes", "no"])
        assert shown.getvalue() == "\n[network] Deploy?\n  1. yes\n  2. no\n> "
        keyboard.write("1\n")
        keyboard.flush()
        assert await question.answer(timeout=HANG) == "yes"
        keyboard.write("last words\n")
        keyboard.close()
        assert (await channel.receive(timeout=HANG)) == ChannelMessage("last words")
        assert await channel.receive(timeout=HANG) is None and channel.closed
        await interviewer.close()


def test_mentions_are_names_after_an_at_sign_not_inside_addresses() -> None:
    assert mentions("@editor and @analyst: see mail@example.com, cc @editor") == ["editor", "analyst"]
    assert mentions("no one in particular") == []


# -- with real robots against the loopback server ------------------------------------------------------------
async def test_a_person_with_a_scripted_channel_approves_a_robots_draft_in_a_network(bus_server: FakeLLMServer) -> None:
    channel = ScriptedChannel(["1"])
    network = Network("release")
    network.task("draft", robot("writer", bus_server, "You write release notes."))
    approver = Person("approver", channel=channel, choices=["approved", "rejected"], timeout=HANG,
                      memory=network.memory)
    network.task("approve", approver, depends_on=["draft"])
    result = await network.arun("v1.0 starts faster")
    assert result.results["approve"].last_text_content == "approved"
    approver.remember("release", "v1.0")  # the network's memory, shared with its robots
    assert network.memory.get("release") == "v1.0"
    assert [r.robot_name for r in network.memory.results] == ["writer", "approver"]
    assert "[You write release notes] V1.0 STARTS FASTER" in channel.asked[0]
    assert channel.asked[0].endswith("  1. approved\n  2. rejected")
    with pytest.raises(ValueError, match="not both"):
        Person("x", ask=lambda q, c, d: "y", channel=ScriptedChannel())


async def test_mentions_route_to_one_peer_and_no_mention_broadcasts(bus_server: FakeLLMServer) -> None:
    bus = MessageBus()
    channel = LineChannel()
    ada = Person("ada", channel=channel).with_bus(bus).serve()
    translator = robot("translator", bus_server, "You translate.").with_bus(bus).serve()
    robot("poet", bus_server, "You write poems.").with_bus(bus).serve()
    sent = ada.say("@translator bonjour")
    assert list(sent) == ["translator"]
    await bus.drain(timeout=HANG)
    assert channel.shown == ["@translator: [You translate] @TRANSLATOR BONJOUR"]
    assert ada.outbox[sent["translator"].key].replies[0].content == "[You translate] @TRANSLATOR BONJOUR"

    everyone = ada.say("good morning")
    assert sorted(everyone) == ["poet", "translator"]
    await bus.drain(timeout=HANG)
    assert sorted(channel.shown[1:]) == ["@poet: [You write poems] GOOD MORNING",
                                         "@translator: [You translate] GOOD MORNING"]
    assert sorted(str(body["messages"][-1]["content"]) for body in bus_server.requests) == [
        "@translator bonjour", "good morning", "good morning"]

    assert list(ada.say("@poet @nobody a haiku")) == ["poet"]
    assert "(no such peer: @nobody)" in channel.shown
    with pytest.raises(BusError, match=r"\(no peer named @nobody\); the peers on the bus: @translator, @poet"):
        ada.say("@nobody hello?")
    message = ada.assign(to=translator, task="merci")
    await bus.drain(timeout=HANG)
    assert ada.outbox[message.key].replies[0].content == "[You translate] MERCI"


async def test_a_robot_asks_the_person_on_the_bus_and_listen_routes_what_they_type(bus_server: FakeLLMServer) -> None:
    bus = MessageBus()
    channel = LineChannel()
    ada = Person("ada", channel=channel, timeout=HANG).with_bus(bus).serve().listen()
    editor = robot("editor", bus_server, "You edit.").with_bus(bus).serve()
    asked = editor.send_message(to="ada", content="Is the title right?")
    await wait_until(lambda: channel.shown, "the question")
    assert channel.shown == ["@editor: Is the title right?"]
    channel.type("yes, keep it")  # answers the open question (oldest first)
    await wait_until(lambda: editor.outbox[asked.key].replies, "the reply")
    assert [m.content for m in editor.outbox[asked.key].replies] == ["yes, keep it"]
    channel.type("@editor please also check the dates")  # unprompted: routed by its mention
    await wait_until(lambda: len(channel.shown) == 2, "the editor's reply")
    assert channel.shown[1] == "@editor: [You edit] @EDITOR PLEASE ALSO CHECK THE DATES"
    assert ada.interviewer is not None
    await ada.interviewer.close()


async def test_remember_and_recall_on_a_memory_shared_with_a_robot(bus_server: FakeLLMServer) -> None:
    shared = Memory()
    ada = Person("ada", channel=ScriptedChannel(), memory=shared)
    scribe = robot("scribe", bus_server, "You take notes.")
    scribe.memory = shared
    waiting = asyncio.ensure_future(ada.recall("decision", wait=HANG))
    await asyncio.sleep(0.05)
    shared.set("decision", "ship on Friday", writer="scribe")
    assert await waiting == "ship on Friday"
    assert ada.remember("owner", "ada") is ada
    assert scribe.memory.get("owner") == "ada" and shared.history("owner")[0].writer == "ada"
    assert await ada.recall("nothing yet", wait=0.1) is None
    assert await ada.recall("owner", wait=0) == "ada"
