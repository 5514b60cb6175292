"""A local conversation stays local: what went wrong with a real local model (llama.cpp's
server), played by the loopback server (tests/fakes/llm_server.py).

- A thread held with a local server goes on there when it is continued (``run --continue``, the window
  reopening it) without ``--api-base``; a switch to another server is the user's, recorded as a
  ``model_changed`` event that says where the conversation goes now.
- A tool call the model writes in prose or in a fenced code example is text, not a call; only the forms
  of chat templates (Hermes/Qwen ``<tool_call>``, Llama 3 ``<|python_tag|>`` or a bare JSON call as the whole
  message, Mistral ``[TOOL_CALLS]``) are calls, and their card says they came from the model's text.
- The token count of a model without a known tokenizer comes from the server's ``/tokenize``, else is
  calibrated from the usage the server reports; a request is never refused on an estimate alone.
- An answer cut off by a full context window says so; a local model gets a default ``max_tokens``.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply, template_tokens
from faultkit import ROOT, Matrix

from workspace import events as ev
from workspace.cli import main
from workspace.cli.render import EventPrinter
from workspace.config import load_config
from workspace.context import window as context_window
from workspace.context.tokens import TokenCounter
from workspace.messages import TextMessage
from workspace.persistence import Store
from workspace.result import STOP_NOTES
from workspace.robot import Robot
from workspace.session import Workspace
from workspace.tools import tool

pytestmark = pytest.mark.timeout(120)

AREA_SERVER = "local: a thread keeps its server"
AREA_TEXT = "local: tool calls written as text"
AREA_TOKENS = "local: counting a local model's tokens"
AREA_FULL = "local: a looping model, a full window"
HOSTED = "openai/gpt-4o-mini"  # a hosted model's name that a local server may serve too


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default_text="from the local server") as srv:
        yield srv


def write_robot(home: Path) -> None:
    path = home / "config" / "robots" / "bot.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\ndescription: test robot\ntools: []\n---\nYou help.", encoding="utf-8")


def db_of(home: Path) -> Path:
    return home / "data" / "workspace.db"


def model_events(db: Path) -> list[ev.ModelChanged]:
    with Store(db) as store:
        (thread,) = store.list_threads()
        return [e for _, e in store.thread_events(thread.id) if isinstance(e, ev.ModelChanged)]


def test_run_continue_goes_to_the_threads_server(server: FakeLLMServer, robotlab_home: Path,
                                                 matrix: Matrix, capsys: pytest.CaptureFixture[str]) -> None:
    write_robot(robotlab_home)
    matrix.case(AREA_SERVER, "run --continue without --api-base goes to the thread's local server")
    assert main(["run", "bot", "hello", "--model", HOSTED, "--api-base", server.base_url, "--plain"]) == 0
    assert len(server.requests) == 1
    assert main(["run", "--continue", "and then?", "--plain"]) == 0, capsys.readouterr().err
    assert len(server.requests) == 2, "the continued thread did not reach the local server"
    assert capsys.readouterr().out.count("from the local server") == 2
    assert model_events(db_of(robotlab_home)) == []  # no switch: nothing to say

    matrix.case(AREA_SERVER, "--thread ID --api-base OTHER is a switch, recorded as model_changed")
    with FakeLLMServer(default_text="from the other server") as other:
        with Store(db_of(robotlab_home)) as store:
            (thread,) = store.list_threads()
        assert main(["run", "--thread", thread.id[:8], "once more", "--api-base", other.base_url, "--plain"]) == 0
        assert len(other.requests) == 1
        (changed,) = model_events(db_of(robotlab_home))
        assert changed.api_base == other.base_url and changed.previous_api_base == server.base_url
        assert f"at {other.base_url}" in changed.describe()
        # and it goes on there
        assert main(["run", "--continue", "still there?", "--plain"]) == 0
        assert len(other.requests) == 2 and len(server.requests) == 2


async def test_the_window_reopening_a_local_thread_goes_to_its_server(server: FakeLLMServer,
                                                                      robotlab_home: Path, matrix: Matrix) -> None:
    write_robot(robotlab_home)
    matrix.case(AREA_SERVER, "the window reopening a thread held with a local server goes on there")
    command = ["run", "bot", "hello", "--model", HOSTED, "--api-base", server.base_url, "--plain"]
    assert await asyncio.to_thread(main, command) == 0
    with Store(db_of(robotlab_home)) as store:
        (thread,) = store.list_threads()
        assert thread.metadata["api_base"] == server.base_url
    # The window: the user's configuration (no llm.api_base), the thread from the list.
    workspace = Workspace(config=load_config(None), store=Store(db_of(robotlab_home)))
    try:
        session = workspace.open_thread(thread.id)
        run = session.send("and then?")
        await asyncio.wait_for(run.wait(), 30)
        assert len(server.requests) == 2, [e.kind for e in run.events]

        matrix.case(AREA_SERVER, "switching a local thread to the hosted provider is said in the chat")
        changed = session.set_model("openai/gpt-4o")
        assert changed is not None and changed.api_base == "" and changed.previous_api_base == server.base_url
        assert "hosted" in changed.describe() and server.base_url in changed.describe()
        again = ev.event_from_dict(json.loads(json.dumps(changed.to_dict())))
        assert again == changed
        assert "api_base" not in session.thread.metadata
    finally:
        await workspace.aclose()


async def test_a_window_thread_keeps_its_server_when_the_settings_change(server: FakeLLMServer,
                                                                         robotlab_home: Path, matrix: Matrix) -> None:
    write_robot(robotlab_home)
    matrix.case(AREA_SERVER, "a window thread keeps its server when Settings point at another one")
    db = db_of(robotlab_home)

    def settings(model: str, base: str) -> Any:
        return load_config(env={}, overrides={"llm": {"model": model, "api_base": base, "max_retries": 0}})

    first = Workspace(config=settings("openai/local", server.base_url), store=Store(db))
    try:
        session = first.new_thread("bot")
        await asyncio.wait_for(session.send("hello").wait(), 30)
        thread_id = session.thread_id
        assert session.thread.metadata == {"api_base": server.base_url, "server_model": "openai/local"}
    finally:
        await first.aclose()
    with FakeLLMServer(default_text="from the other server") as other:
        again = Workspace(config=settings("openai/local", other.base_url), store=Store(db))
        try:
            await asyncio.wait_for(again.open_thread(thread_id).send("more").wait(), 30)
        finally:
            await again.aclose()
        assert len(server.requests) == 2 and not other.requests

        matrix.case(AREA_SERVER, "a window thread follows the robot's model when Settings change the model")
        chosen = Workspace(config=settings("openai/another", other.base_url), store=Store(db))
        try:
            await asyncio.wait_for(chosen.open_thread(thread_id).send("and more").wait(), 30)
        finally:
            await chosen.aclose()
        assert len(server.requests) == 2 and len(other.requests) == 1
        with Store(db) as store:
            assert store.get_thread(thread_id).metadata == {"api_base": other.base_url, "server_model": "openai/another"}


def chat(*args: str, typed: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workspace", "chat", *args], input=typed, capture_output=True,
                          text=True, cwd=ROOT, env=dict(os.environ), timeout=90)


def test_chat_continue_goes_to_the_threads_server(server: FakeLLMServer, robotlab_home: Path, matrix: Matrix) -> None:
    matrix.case(AREA_SERVER, "chat --continue without --api-base goes to the thread's local server")
    first = chat("--model", HOSTED, "--api-base", server.base_url, typed="hello\n")
    assert first.returncode == 0, first.stderr
    assert len(server.requests) == 1
    again = chat("--continue", typed="and then?\n")
    assert again.returncode == 0, again.stderr
    assert len(server.requests) == 2, again.stdout + again.stderr
    assert "from the local server\n✓ done" in again.stdout
    assert model_events(db_of(robotlab_home)) == []


def test_a_key_in_the_api_base_is_not_kept_with_the_thread(server: FakeLLMServer, robotlab_home: Path,
                                                          matrix: Matrix) -> None:
    write_robot(robotlab_home)
    matrix.case(AREA_SERVER, "the thread keeps its server's address, never a key in it")
    base = server.base_url.replace("http://", "http://user:sk-local-secret-1234567890@") + "?api-key=sk-abc123456789"
    assert main(["run", "bot", "hello", "--model", HOSTED, "--api-base", base, "--plain"]) == 0
    with Store(db_of(robotlab_home)) as store:
        (thread,) = store.list_threads()
    stored: Any = thread.metadata["api_base"]
    assert stored == server.base_url and "secret" not in json.dumps(thread.metadata)
    matrix.lost(0, "keys")


# --------------------------------------------------------------------------------------------
# Tool calls written as text: only a chat template's forms, never a code example

RAN: list[str] = []


@tool
def list_files(path: str = ".") -> str:
    """List the files of a folder."""
    RAN.append(path)
    return "a.txt"


def lean_robot(server: FakeLLMServer) -> Robot:
    config = load_config(env={}, overrides={"llm": {"max_retries": 1}})
    return Robot("r", system_prompt="You help.", model="openai/fake", api_base=server.base_url + "/v1",
                 config=config, tools=[list_files])


async def events_of(run: Any) -> list[ev.Event]:
    async def go() -> list[ev.Event]:
        return [e async for e in run]
    return await asyncio.wait_for(go(), timeout=30)


EXAMPLES = {
    "a Python example defining its own list_files()": (
        "You could write it yourself:\n```python\nimport os\n\ndef list_files(path='.'):\n"
        "    return os.listdir(path)\n\nlist_files()\n```\nThen call it."),
    "a fenced block holding only list_files()": "Run this:\n```python\nlist_files(path=\".\")\n```",
    "a JSON call in a json code example": (
        'The call would be:\n```json\n{"name": "list_files", "arguments": {"path": "."}}\n```'),
    "a <tool_call> shown in a code example": (
        'Qwen writes calls like this:\n```\n<tool_call>{"name": "list_files", "arguments": {}}</tool_call>\n```'),
    "a <tool_call> in inline code": 'Qwen writes `<tool_call>{"name": "list_files", "arguments": {}}</tool_call>`.',
    "a bare JSON call after prose": 'For example:\n{"name": "list_files", "parameters": {"path": "."}}',
    "a call in prose": "You can call list_files(path='.') to see them.",
}


@pytest.mark.parametrize("case", list(EXAMPLES))
async def test_a_call_in_prose_or_a_code_example_runs_nothing(server: FakeLLMServer, matrix: Matrix,
                                                                case: str) -> None:
    matrix.case(AREA_TEXT, f"{case}: no tool runs, the text stays")
    RAN.clear()
    server.enqueue(EXAMPLES[case])
    events = await events_of(lean_robot(server).stream("How do I list files?"))
    assert not [e for e in events if isinstance(e, ev.ToolUse)] and RAN == []
    (text,) = [e for e in events if isinstance(e, ev.Text)]
    assert text.text == EXAMPLES[case]
    assert len(server.requests) == 1
    matrix.lost(0, "tool runs")


TEMPLATE_FORMS = {
    "Hermes/Qwen <tool_call>": '<tool_call>\n{"name": "list_files", "arguments": {"path": "src"}}\n</tool_call>',
    "Llama 3 <|python_tag|>": '<|python_tag|>{"name": "list_files", "parameters": {"path": "src"}}',
    "Llama 3 bare JSON as the whole message": '{"name": "list_files", "parameters": {"path": "src"}}',
    "Mistral [TOOL_CALLS]": '[TOOL_CALLS] [{"name": "list_files", "arguments": {"path": "src"}}]',
}


@pytest.mark.parametrize("form", list(TEMPLATE_FORMS))
async def test_a_chat_templates_call_runs_and_says_it_came_from_text(server: FakeLLMServer, matrix: Matrix,
                                                                     form: str) -> None:
    matrix.case(AREA_TEXT, f"{form}: runs, its tool_use says from_text")
    RAN.clear()
    server.enqueue(TEMPLATE_FORMS[form], "Here they are.")
    events = await events_of(lean_robot(server).stream("List src"))
    (use,) = [e for e in events if isinstance(e, ev.ToolUse)]
    assert use.name == "list_files" and use.input == {"path": "src"} and use.from_text and RAN == ["src"]
    assert ev.event_from_dict(json.loads(ev.to_json(use))) == use
    structured = ev.ToolUse(run_id="r", robot="r", name="list_files")
    assert "from_text" not in structured.to_dict()  # a server's call: the stored row is as before
    out = io.StringIO()
    printer = EventPrinter(out)
    printer(use)
    printer(structured)
    assert out.getvalue().splitlines() == ["→ list_files (from the model's text) {\"path\": \"src\"}", "→ list_files {}"]


# --------------------------------------------------------------------------------------------
# Counting tokens: the server's tokenizer, else the estimate calibrated by the server's counts

PROSE = ("The quick brown fox jumps over the lazy dog, and then it runs back into the forest where its friends "
         "are waiting for dinner. ")


def conversation(exchanges: int) -> list[TextMessage]:
    out: list[TextMessage] = []
    for i in range(exchanges):
        out += [TextMessage("user", f"Question {i}: " + PROSE * 2), TextMessage("assistant", PROSE * 3)]
    return out


def usages(events: list[ev.Event]) -> list[ev.ContextUsage]:
    return [e for e in events if isinstance(e, ev.ContextUsage)]


def local_robot(server: FakeLLMServer, history: list[TextMessage], **llm: Any) -> Robot:
    config = load_config(env={}, overrides={"llm": {"max_retries": 1, **llm}})
    robot = Robot("r", system_prompt="You help.", model="openai/local", api_base=server.base_url + "/v1",
                  config=config)
    robot.history = list(history)
    return robot


@pytest.fixture(autouse=True)
def fresh_servers() -> Iterator[None]:
    context_window.clear_cache()
    yield
    context_window.clear_cache()


async def test_the_servers_tokenizer_counts_what_the_server_counts(matrix: Matrix) -> None:
    matrix.case(AREA_TOKENS, "llama.cpp's /tokenize: the count before the call is the server's, no early compaction")
    history = conversation(20)
    with FakeLLMServer(tokenize=True, context_window=4096) as server:
        sent = {"messages": [{"role": "system", "content": "You help."},
                             *({"role": m.role, "content": m.content} for m in history),
                             {"role": "user", "content": "Go on."}]}
        truth = template_tokens(sent)
        guess = TokenCounter().messages([*history, TextMessage("user", "Go on.")])
        assert guess > 1.25 * truth and 0.75 * 4096 < truth < 0.8 * 4096  # the estimate alone would compact
        events = await events_of(local_robot(server, history).stream("Go on."))
        before, after = usages(events)[:2]
        assert server.tokenized > 0 and len(server.requests) == 1
        assert not [e for e in events if isinstance(e, ev.ContextCompacted)]
        reported = after.used - 1  # the server's prompt tokens and the answer's one token ("ok")
        assert reported == truth
        assert abs(before.used - truth) <= 0.03 * truth, (before.used, truth)


async def test_without_a_tokenizer_the_estimate_asks_the_server_then_is_calibrated(matrix: Matrix) -> None:
    matrix.case(AREA_TOKENS, "no /tokenize: a request the server accepts is sent, not refused on the estimate")
    history = conversation(20)
    with FakeLLMServer(tokenizer=True, context_window=4096) as server:
        robot = local_robot(server, history)
        guess = TokenCounter().messages(robot.history)
        assert guess > 4096 - 512  # past the hard limit by the estimate alone
        events = await events_of(robot.stream("Go on."))
        assert isinstance(events[-1], ev.RunFinished), events[-1]
        assert len(server.requests) == 1 and server.overflows == 0
        assert not [e for e in events if isinstance(e, ev.ContextCompacted)]
        first = usages(events)
        truth = first[1].used - 1

        matrix.case(AREA_TOKENS, "no /tokenize: after the first call the estimate is calibrated by the server's count")
        events = await events_of(robot.stream("And?"))
        before, after = usages(events)[:2]
        reported = after.used - 1
        assert reported > truth
        assert abs(before.used - reported) <= 0.05 * reported, (before.used, reported)


# --------------------------------------------------------------------------------------------
# A looping small model; an answer stopped by a full window


def finished(events: list[ev.Event]) -> ev.RunFinished:
    end = events[-1]
    assert isinstance(end, ev.RunFinished), end
    return end


async def test_a_local_model_gets_a_default_max_tokens(matrix: Matrix) -> None:
    matrix.case(AREA_FULL, "a looping local model is held to llm.local_max_tokens_share of the window")
    with FakeLLMServer(tokenizer=True, context_window=4096) as server:
        server.enqueue(Reply(text="I will check again. ", loops=True))
        events = await events_of(local_robot(server, []).stream("Count the files."))
        assert server.requests[0]["max_tokens"] == 1024  # 0.25 of 4,096
        end = finished(events)
        assert end.result.stop_reason == "length"  # the limit it was given, with room left: max_tokens
        assert end.result.usage.output_tokens == 1024

        matrix.case(AREA_FULL, "a max_tokens of the robot's own is sent as it is")
        server.enqueue(Reply(text="again ", loops=True))
        await events_of(local_robot(server, [], max_tokens=300).stream("Count."))
        assert server.requests[-1]["max_tokens"] == 300


async def test_an_answer_stopped_by_a_full_window_says_so(matrix: Matrix) -> None:
    matrix.case(AREA_FULL, "an answer the full window stopped says so, not 'raise max_tokens'")
    with FakeLLMServer(tokenizer=True, context_window=4096) as server:
        server.enqueue(Reply(text="I will check again. ", loops=True))
        robot = local_robot(server, [], local_max_tokens_share=0)  # no limit: it writes until the window is full
        events = await events_of(robot.stream("Count the files."))
        assert "max_tokens" not in server.requests[0]
        end = finished(events)
        assert end.result.stop_reason == "context_full"
        note = STOP_NOTES["context_full"]
        assert "context window is full" in note and "raising max_tokens cannot help" in note
        assert ev.event_from_dict(json.loads(ev.to_json(end))).result.stop_reason == "context_full"

        matrix.case(AREA_FULL, "a nearly full window: the default max_tokens does not stop it first; 'full' is said")
        server.enqueue(Reply(text="I will check again. ", loops=True))
        events = await events_of(local_robot(server, conversation(20)).stream("Go on."))
        assert not [e for e in events if isinstance(e, ev.ContextCompacted)]
        assert server.requests[-1]["max_tokens"] == 1024  # more than the ~900 tokens of room the window has left
        end = finished(events)
        assert end.result.stop_reason == "context_full"
        assert end.result.usage.input_tokens + end.result.usage.output_tokens == 4096
