"""Long conversations against a model with a small window, end to end on loopback.

The loopback server (tests/fakes/llm_server.py) plays a model with a 2,048-token window: a longer
prompt is refused (HTTP 400 "maximum context length", or llama-cpp-python's empty 200). The model's
answers are computed by :class:`Model`: a summary when asked to compact, else a tool call for a user
message and a short answer for a tool result. Robots reach it through the litellm provider, as a
local OpenAI-compatible server.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace import events as ev
from workspace.config import load_config
from workspace.context import window as window_module
from workspace.context.compaction import SUMMARY_HEADER, SUMMARY_INSTRUCTIONS
from workspace.errors import ContextOverflowError
from workspace.exports import export_events_jsonl, export_markdown
from workspace.messages import Message
from workspace.providers.base import Chunk, ProviderBase
from workspace.providers.litellm_provider import LiteLLMProvider
from workspace.robot import Robot
from workspace.session import Workspace
from workspace.tools import tool

ROOT = Path(__file__).resolve().parent.parent
SUMMARY_START = SUMMARY_INSTRUCTIONS.split(".")[0]
FILLER = "lorem ipsum dolor sit amet " * 12


@pytest.fixture(autouse=True)
def _fresh_probes() -> Iterator[None]:
    window_module.clear_cache()  # a port reused by another test's server must be asked again
    yield
    window_module.clear_cache()


class Model:
    """The loopback model: summarises when asked to compact; calls ``tool`` for a user message (with
    ``args(text)``), answers a tool result in a few words."""

    def __init__(self, tool: str = "lookup", args: Any = None) -> None:
        self.tool = tool
        self.args = args or (lambda text: {"query": text[-40:]})
        self.summaries: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        system = str(messages[0].get("content") or "") if messages and messages[0]["role"] == "system" else ""
        if system.startswith(SUMMARY_START):
            self.summaries.append(body)
            asked = sorted({int(n) for n in re.findall(r"Question (\d+)", json.dumps(messages))})
            return Reply.say(f"Summary {len(self.summaries)}: the user asked questions {asked}; each was looked "
                             "up and answered.")
        self.requests.append(body)
        last = messages[-1]
        if last["role"] == "tool":
            return Reply.say("Found it: " + str(last["content"])[:60])
        return Reply.tool(self.tool, self.args(str(last.get("content"))))


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"Result for {query}: {FILLER}"


def provider_for(server: FakeLLMServer) -> LiteLLMProvider:
    return LiteLLMProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test", timeout=10.0,
                           backoff=0.01, max_retries=1)


def question(i: int) -> str:
    return f"Question {i}: tell me about topic number {i}, please. " + "x" * 60


async def drive(robot: Robot, text: str) -> list[ev.Event]:
    return [event async for event in robot.stream(text)]


def pairs_are_whole(request: dict[str, Any]) -> bool:
    """Every tool message answers a call of the request, and every call is answered."""
    called: list[str] = []
    answered: list[str] = []
    for message in request["messages"]:
        called += [c["id"] for c in message.get("tool_calls") or ()]
        if message["role"] == "tool":
            if message["tool_call_id"] not in called:
                return False
            answered.append(message["tool_call_id"])
    return sorted(called) == sorted(answered)


def at_a_boundary(history: list[Message], cut: int) -> bool:
    """A cut of the history never leaves a tool result without its call (or a call without results)."""
    return not history[cut].is_tool_result and not history[cut - 1].is_tool_call


# -- 60 turns with tool calls in a 2,048-token window ------------------------------------------------


@pytest.mark.parametrize("overflow", ["error", "empty"])
async def test_sixty_turns_with_tool_calls_never_fail_and_compact_keeping_pairs(overflow: str) -> None:
    model = Model()
    with FakeLLMServer(reply_fn=model, context_window=2048, overflow=overflow) as server:
        robot = Robot("helper", system_prompt="You look things up.", provider=provider_for(server), tools=[lookup])
        compactions: list[ev.ContextCompacted] = []
        for i in range(60):
            summaries = len(model.summaries)
            events = await drive(robot, question(i))
            assert isinstance(events[-1], ev.RunFinished), events[-1]
            compactions += [e for e in events if isinstance(e, ev.ContextCompacted)]
            # every model call's usage reaches the run's totals, the summaries' included
            assert len([e for e in events if isinstance(e, ev.Usage)]) == 2 + len(model.summaries) - summaries
            sent = [r for r in model.requests if f"Question {i}:" in json.dumps(r["messages"])]
            assert len(sent) == 2  # the latest turn stays whole: both of its requests carry the question
        assert server.overflows == 0  # compacted before the window was full: never refused
    assert len(compactions) >= 2
    assert len(model.summaries) >= len(compactions)
    history = robot.history
    assert len(history) == 60 * 4  # every message is kept: user, call, result, answer
    for event in compactions:
        assert event.trigger == "threshold" and event.window == 2048
        assert event.tokens_after < event.tokens_before <= 2048
        assert at_a_boundary(history, event.replaced_count)
        assert history[event.replaced_count].is_user  # a turn's start: the latest turns are whole
    assert all(pairs_are_whole(r) for r in model.requests)
    last = model.requests[-1]["messages"]
    assert last[1]["role"] == "user" and last[1]["content"].startswith(SUMMARY_HEADER)
    assert "Question 0:" not in json.dumps(last)  # long summarised
    counts = [e for e in compactions if e.replaced_count]
    assert [e.replaced_count for e in counts] == sorted(e.replaced_count for e in counts)


async def test_the_meter_counts_come_from_the_server_after_each_call() -> None:
    model = Model()
    with FakeLLMServer(reply_fn=model, context_window=2048) as server:
        robot = Robot("helper", system_prompt="You look things up.", provider=provider_for(server), tools=[lookup])
        events = await drive(robot, question(1))
        usages = [e for e in events if isinstance(e, ev.ContextUsage)]
        assert [u.estimated for u in usages] == [True, False, True, False]  # before and after each call
        assert all(u.window == 2048 for u in usages)
        reported = [e.input_tokens for e in events if isinstance(e, ev.Usage)]
        assert next(u.used for u in usages if not u.estimated) >= reported[0]
        assert usages[0].tools_tokens > 0 and usages[0].system_tokens > 0
        # the second request is counted from the server's count of the first plus what was added
        assert usages[2].used >= reported[0]


# -- the context-length error: compact and retry once, then a clear failure ----------------------------


async def test_a_refused_request_is_compacted_and_retried_once() -> None:
    model = Model()
    # The server does not say its window: the robot assumes 8,192 tokens until the server refuses.
    with FakeLLMServer(reply_fn=model, context_window=2048, report_window=False) as server:
        robot = Robot("helper", system_prompt="You look things up.", provider=provider_for(server), tools=[lookup])
        compactions: list[ev.ContextCompacted] = []
        for i in range(20):
            events = await drive(robot, question(i))
            assert isinstance(events[-1], ev.RunFinished), events[-1]
            compactions += [e for e in events if isinstance(e, ev.ContextCompacted)]
        assert server.overflows == 1  # refused once; the window named in the refusal is used from then on
    assert compactions[0].trigger == "overflow"
    assert compactions[0].window == 2048
    assert all(e.trigger == "threshold" for e in compactions[1:])


@pytest.mark.parametrize("lean", [True, False], ids=["openai-sdk", "litellm"])
async def test_an_empty_200_is_a_refusal_as_too_long_compacted_and_retried(lean: bool) -> None:
    """llama-cpp-python's streaming server answers a prompt longer than its window with an empty HTTP 200
    (and does not say its window): both providers report it as a context overflow (reason "empty"), so the
    conversation is compacted and the request retried, as for a 400 that says so."""
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    model = Model()
    with FakeLLMServer(reply_fn=model, context_window=2048, overflow="empty", report_window=False) as server:
        provider = (OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                             timeout=10.0, backoff=0.01, max_retries=1)
                    if lean else provider_for(server))
        robot = Robot("helper", system_prompt="You look things up.", provider=provider, tools=[lookup])
        compactions: list[ev.ContextCompacted] = []
        for i in range(20):
            events = await drive(robot, question(i))
            assert isinstance(events[-1], ev.RunFinished), events[-1]
            compactions += [e for e in events if isinstance(e, ev.ContextCompacted)]
        assert server.overflows >= 1
    assert compactions and compactions[0].trigger == "overflow"
    assert all(pairs_are_whole(r) for r in model.requests)


async def test_a_request_that_cannot_fit_fails_naming_what_to_do() -> None:
    model = Model()
    with FakeLLMServer(reply_fn=model, context_window=2048, report_window=False) as server:
        robot = Robot("helper", system_prompt="Rules. " * 1500, provider=provider_for(server), tools=[lookup])
        events = await drive(robot, "hello")
        assert server.overflows == 1 and len(server.requests) == 1  # retried only if compacting could help
    failed = events[-1]
    assert isinstance(failed, ev.RunFailed)
    assert failed.error_type == "ContextOverflowError"
    for words in ("does not fit the context window (2,048 tokens", "Start a new thread", "/compact",
                  "llm.context_window", "context_window in the robot's front matter", "larger context window"):
        assert words in failed.error


class Refusing(ProviderBase):
    """A provider whose server refuses every request as too long (its summaries too)."""

    model_id = "refusing/model"
    label = model_id
    api_base = "http://127.0.0.1:9/v1"
    supports_tools = supports_streaming = is_language_model = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def context_window(self) -> int:
        return 4096

    async def stream(self, *, system: str | None, messages: Any, tools: Any, settings: Any) -> Any:
        self.calls.append("summary" if (system or "").startswith(SUMMARY_START) else "request")
        raise ContextOverflowError("refusing/model: HTTP 400 — prompt is too long", status_code=400)
        yield Chunk  # pragma: no cover - an async generator


async def test_a_second_refusal_fails_after_one_retry() -> None:
    provider = Refusing()
    robot = Robot("helper", system_prompt="Be brief.", provider=provider)
    robot.history += [m for i in range(4) for m in _exchange(i)]
    events = await drive(robot, "and now?")
    failed = events[-1]
    assert isinstance(failed, ev.RunFailed)
    assert "even after compacting" in failed.error and "prompt is too long" in failed.error
    assert "Start a new thread" in failed.error
    compacted = [e for e in events if isinstance(e, ev.ContextCompacted)]
    assert compacted and compacted[0].trigger == "overflow"
    # the summary could not be written by the model either: a plain list stands in
    assert compacted[0].summary.startswith("(The model could not write this summary")
    assert provider.calls.count("request") == 2  # the request and one retry (summaries in between)
    assert provider.calls[0] == "request" and provider.calls[-1] == "request" and "summary" in provider.calls


def _exchange(i: int) -> list[Message]:
    from workspace.messages import TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage

    call = ToolMessage(id=f"c{i}", name="lookup", input={"query": f"q{i}"})
    return [TextMessage(role="user", content=f"Question {i}"), ToolCallMessage(tools=[call]),
            ToolResultMessage(tool=call, content={"data": FILLER}),
            TextMessage(role="assistant", content=f"Answer {i}", stop_reason="stop")]


# -- oversized tool results ---------------------------------------------------------------------


async def test_a_five_megabyte_tool_result_is_cut_for_the_model_and_kept_whole() -> None:
    big = "".join(f"line {n}: {FILLER[:60]}\n" for n in range(80_000))[:5_000_000]

    @tool
    def dump() -> str:
        """Return a big text."""
        return big

    model = Model(tool="dump", args=lambda text: {})
    with FakeLLMServer(reply_fn=model, context_window=2048) as server:
        robot = Robot("helper", system_prompt="You read.", provider=provider_for(server), tools=[dump])
        events = await drive(robot, "dump it")
        assert server.overflows == 0
    assert isinstance(events[-1], ev.RunFinished)
    result = next(e for e in events if isinstance(e, ev.ToolResult))
    assert result.payload == {"data": big}  # the inspector (and the thread) keep all of it
    sent = model.requests[1]["messages"][-1]
    assert sent["role"] == "tool" and len(sent["content"]) < 2_000
    assert "Cut to fit the context window" in sent["content"] and "of 5,000,000 characters" in sent["content"]
    assert "ask for a smaller part" in sent["content"]
    assert robot.history[2].content == {"data": big}


async def test_a_huge_file_read_says_where_to_read_on(tmp_path: Path) -> None:
    lines = [f"{n:06d} {FILLER}\n" for n in range(1, 15_001)]
    (tmp_path / "big.txt").write_text("".join(lines), encoding="utf-8")
    reads: list[int] = []

    def read_args(text: str) -> dict[str, Any]:
        return {"path": "big.txt"}

    model = Model(tool="read_file", args=read_args)

    def reply(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if messages[-1]["role"] == "tool" and not reads:
            model.requests.append(body)
            content = json.loads(messages[-1]["content"])
            hint = re.search(r"start_line=(\d+)", content["note"])
            assert hint is not None
            reads.append(int(hint.group(1)))
            return Reply.tool("read_file", {"path": "big.txt", "start_line": reads[0]})
        return model(body)

    with FakeLLMServer(reply_fn=reply, context_window=4096) as server:
        robot = Robot("helper", system_prompt="You read files.", provider=provider_for(server), tools=["read_file"],
                      folder=tmp_path)
        events = await drive(robot, "read big.txt")
        assert server.overflows == 0
    assert isinstance(events[-1], ev.RunFinished)
    first = json.loads(model.requests[1]["messages"][-1]["content"])
    assert first["truncated"] is True and first["start_line"] == 1
    assert first["end_line"] == reads[0] - 1 == first["content"].count("\n")
    assert f"call read_file again with start_line={reads[0]}" in first["note"]
    second = json.loads(model.requests[2]["messages"][-1]["content"])
    assert second["content"].startswith(f"{reads[0]:06d} ")  # the model read on from there
    results = [e for e in events if isinstance(e, ev.ToolResult)]
    assert len(results[0].payload["data"]["content"]) > 100_000  # the whole read is kept


# -- the three policies ------------------------------------------------------------------------------


async def test_truncate_leaves_out_the_oldest_whole_turns() -> None:
    model = Model()
    with FakeLLMServer(reply_fn=model, context_window=2048) as server:
        robot = Robot("helper", system_prompt="You look things up.", provider=provider_for(server), tools=[lookup],
                      context_policy="truncate")
        for i in range(30):
            events = await drive(robot, question(i))
            assert isinstance(events[-1], ev.RunFinished), events[-1]
            assert not [e for e in events if isinstance(e, ev.ContextCompacted)]
        assert server.overflows == 0
    assert model.summaries == []  # nothing summarised
    assert len(robot.history) == 120
    assert all(pairs_are_whole(r) for r in model.requests)
    last = model.requests[-1]["messages"]
    assert last[1]["role"] == "user" and last[1]["content"].startswith("Question ")  # a whole turn first
    assert "Question 0:" not in json.dumps(last) and "Question 29:" in json.dumps(last)


async def test_error_fails_cleanly_before_sending_a_request_that_does_not_fit() -> None:
    model = Model()
    with FakeLLMServer(reply_fn=model, context_window=2048) as server:
        robot = Robot("helper", system_prompt="You look things up.", provider=provider_for(server), tools=[lookup],
                      context_policy="error")
        failed: ev.RunFailed | None = None
        for i in range(40):
            sent = len(server.requests)
            events = await drive(robot, question(i))
            if isinstance(events[-1], ev.RunFailed):
                failed = events[-1]
                break
        assert failed is not None
        # The request that would not fit was never sent (the run's first call may have been).
        assert server.overflows == 0 and len(server.requests) - sent in (0, 1)
    assert "context policy is 'error'" in failed.error and "/compact" in failed.error
    assert model.summaries == []


async def test_a_robot_file_sets_the_window_and_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "small.md"
    path.write_text("---\ncontext_window: 2048\ncontext_policy: truncate\n---\nYou look things up.\n",
                    encoding="utf-8")
    model = Model()
    with FakeLLMServer(reply_fn=model, context_window=2048, report_window=False) as server:
        robot = Robot("small", template=path, provider=provider_for(server), tools=[lookup])
        assert robot.context_window == 2048 and robot.context_policy == "truncate"
        for i in range(20):
            events = await drive(robot, question(i))
            assert isinstance(events[-1], ev.RunFinished)
        assert server.overflows == 0  # the setting was right: never refused


# -- threads: the store keeps everything, a reopened thread uses the summary --------------------------


def _notes_robot(home: Path) -> None:
    path = home / "config" / "robots" / "notes.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\nname: notes\ntools: [remember]\nmcp: none\n---\nYou take notes.\n", encoding="utf-8")


def _notes_model() -> Model:
    return Model(tool="remember", args=lambda text: {"key": text.split(":")[0], "value": text[-80:]})


async def test_a_thread_keeps_every_message_and_a_reopened_thread_uses_the_summary(
        tmp_path: Path, robotlab_home: Path) -> None:
    _notes_robot(robotlab_home)
    model = _notes_model()
    db = tmp_path / "threads.db"
    with FakeLLMServer(reply_fn=model, context_window=2048) as server:
        workspace = Workspace(config=load_config(), db_path=db, provider=provider_for(server))
        session = workspace.new_thread("notes")
        for i in range(25):
            run = session.send(f"Note {i}: remember the word zebra{i} " + "y" * 80)
            assert isinstance(await run.wait(), ev.RunFinished)
        stored = [e for _turn, e in workspace.store.thread_events(session.thread_id)
                  if isinstance(e, ev.ContextCompacted)]
        assert len(stored) >= 2
        assert "zebra0" not in json.dumps(model.requests[-1])  # compacted away for the model ...
        hits = workspace.store.search("zebra0")
        assert hits and hits[0].thread_id == session.thread_id  # ... but found by search
        markdown = export_markdown(workspace.store, session.thread_id)
        assert "zebra0" in markdown and markdown.count("**Conversation compacted**") == len(stored)
        assert stored[0].summary.splitlines()[0] in markdown
        assert '"kind":"context_compacted"' in export_events_jsonl(workspace.store, session.thread_id)
        thread_id = session.thread_id
        workspace.close()

        again = Workspace(config=load_config(), db_path=db, provider=provider_for(server))
        reopened = again.open_thread(thread_id)
        assert len(reopened.history()) == 25 * 4  # every original message
        for_model = reopened.model_messages()
        assert for_model[0].content.startswith(SUMMARY_HEADER)
        assert stored[-1].summary in for_model[0].content
        assert len(for_model) == 25 * 4 - stored[-1].replaced_count
        usage = reopened.context_usage()
        assert usage is not None and usage.window == 2048  # the meter of the reopened thread
        before = len(model.requests)
        run = reopened.send("Note 25: remember the word zebra25")
        assert isinstance(await run.wait(), ev.RunFinished)
        first = json.dumps(model.requests[before])
        assert SUMMARY_HEADER in first and "zebra0 " not in first and "zebra25" in first
        again.close()


async def test_compact_on_request_in_a_thread_and_in_the_library(tmp_path: Path, robotlab_home: Path) -> None:
    _notes_robot(robotlab_home)
    model = _notes_model()
    with FakeLLMServer(reply_fn=model, context_window=32_000) as server:
        workspace = Workspace(config=load_config(), db_path=tmp_path / "t.db", provider=provider_for(server))
        session = workspace.new_thread("notes")
        for i in range(3):
            assert isinstance(await session.send(f"Note {i}: remember the word zebra{i}").wait(), ev.RunFinished)
        assert not model.summaries  # far from the window: nothing compacted by itself
        tokens = session.usage().input_tokens
        event = await session.compact()
        assert session.usage().input_tokens > tokens  # the summary's tokens count in the thread's usage
        assert event is not None and event.trigger == "manual"
        assert event.replaced_count == 8 and event.newly_replaced == 8  # everything before the latest turn
        assert len(model.summaries) == 1
        last_turn = session.transcript()[-1]
        assert last_turn.events[-1] == event  # recorded on the current turn: the chat shows the marker
        assert await session.compact() is None  # nothing older than the latest turn is left
        before = len(model.requests)
        assert isinstance(await session.send("Note 3: remember zebra3").wait(), ev.RunFinished)
        sent = json.dumps(model.requests[before])
        assert SUMMARY_HEADER in sent and "zebra0" not in sent and "zebra2" in sent
        workspace.close()

        robot = Robot("helper", system_prompt="You look things up.", provider=provider_for(server), tools=[lookup])
        assert await robot.compact() is None  # an empty conversation
        for i in range(3):
            await drive(robot, question(i))
        compacted = await robot.compact()
        assert compacted is not None and compacted.robot == "helper" and compacted.replaced_count == 8
        assert len(robot.history) == 12  # the library keeps every message too
        messages = robot.context_manager.messages_for_model(robot.history)
        assert messages[0].content.startswith(SUMMARY_HEADER) and len(messages) == 4
        robot.reset()
        assert robot.context_manager.compaction is None


# -- the command line ----------------------------------------------------------------------------


def _robotlab(*args: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


def test_the_cli_context_flag_chooses_the_policy(robotlab_home: Path) -> None:
    _notes_robot(robotlab_home)
    with FakeLLMServer(reply_fn=_notes_model(), context_window=2048) as server:
        long = "Note 1: " + "remember this carefully " * 400
        result = _robotlab("run", "notes", long, "--model", "openai/fake", "--api-base", server.base_url + "/v1",
                           "--context", "error")
        assert result.returncode != 0
        # Only an estimate counted it: the server is asked, refuses, and the policy says nothing is compacted.
        assert len(server.requests) == 1 and server.overflows == 1
    assert "context policy is 'error'" in result.stdout + result.stderr
    bad = _robotlab("run", "notes", "hi", "--context", "shrink")
    assert bad.returncode == 2 and "invalid choice: 'shrink'" in bad.stderr
    shown = _robotlab("network", "run", "--help")
    assert "--context {compact,truncate,error}" in shown.stdout
