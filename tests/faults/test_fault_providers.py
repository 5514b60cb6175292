"""Provider faults: a robot on a loopback OpenAI-compatible server (tests/fakes/llm_server.py) that
misbehaves as real servers do, through BOTH providers of real models (the lean openai one and
litellm), end to end through the agent loop; then ``robotlab run --json`` in a subprocess where the
command line is the subject (exit codes, stderr without a traceback, no key in any output, Ctrl-C at
random moments with the recorded thread intact).

A case survives when the run ends (never a hang: every run is bounded by ``asyncio.wait_for``, and
the waits by ``llm.max_wait`` / ``llm.first_token_timeout``) with exactly one terminal event, a
failure's message names the fix, every retry and wait shows as a ``run_status`` event, and the
robot's key is in no event.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from faultkit import ROOT

from workspace import events as ev
from workspace.config import load_config
from workspace.robot import Robot
from workspace.tools import tool

pytestmark = pytest.mark.timeout(120)

KINDS = ["lean", "litellm"]
KEY = "sk-fault-matrix-0123456789abcdef"
HOW_LONG = 60.0  # no case may take longer than this: a hang is a failure
#: A case that must end within a wait it is set (llm.max_wait, a time-out) is given ten times that wait:
#: a bound on hanging that holds on a loaded machine, never a measure of speed. What the cases take is
#: printed by bench/bench_fault_timing.py.
SLACK = 10


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default_text="fine") as srv:  # what is not queued (a summary, say) is answered "fine"
        yield srv


@pytest.fixture(scope="module", autouse=True)
def libraries_loaded() -> None:
    """Both providers' libraries loaded once, so the time a case takes is the fault's alone."""
    import openai  # noqa: F401

    from workspace.providers.litellm_provider import load_litellm

    load_litellm()


@pytest.fixture(scope="module")
def silent() -> Iterator[str]:
    """An address that accepts connections (the kernel's backlog) and never reads or answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    sock.close()


def refused_address() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return f"http://127.0.0.1:{port}/v1"


@dataclass
class Outcome:
    events: list[ev.Event]
    seconds: float
    requests: int
    robot: Robot

    @property
    def terminal(self) -> ev.Event:
        return self.events[-1]

    @property
    def error(self) -> str:
        assert isinstance(self.terminal, ev.RunFailed), f"the run did not fail: {self.terminal!r}"
        return self.terminal.error

    @property
    def result(self) -> Any:
        assert isinstance(self.terminal, ev.RunFinished), f"the run did not finish: {self.terminal!r}"
        return self.terminal.result

    def of(self, cls: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]

    def statuses(self, state: str) -> list[ev.RunStatus]:
        return [e for e in self.of(ev.RunStatus) if e.state == state]


@dataclass
class Fault:
    name: str
    replies: tuple[Any, ...]
    check: Callable[[Outcome], None]
    llm: dict[str, Any] = field(default_factory=dict)
    #: "refused" / "silent" for an address without the server; None: the loopback server.
    address: str | None = None
    #: Turns answered before the fault (a conversation compaction can shorten).
    history: int = 0


def failed_saying(*words: str, retries: int | None = None, requests: int | None = None,
                  within: float = HOW_LONG, min_retries: int = 0) -> Callable[[Outcome], None]:
    def check(out: Outcome) -> None:
        for word in words:
            assert word in out.error, (word, out.error)
        if retries is not None:
            assert len(out.statuses("retrying")) == retries, [s.detail for s in out.statuses("retrying")]
        assert len(out.statuses("retrying")) >= min_retries, "a retry was not shown"
        if requests is not None:
            assert out.requests == requests
        assert out.seconds < within, out.seconds
    return check


def retried_then_answered(status: str, count: int, *, retry_in: float | None = None) -> Callable[[Outcome], None]:
    def check(out: Outcome) -> None:
        assert out.result.last_text_content == "fine"
        retries = out.statuses("retrying")
        assert len(retries) == count and all(status in r.detail for r in retries), [r.detail for r in retries]
        assert [r.attempt for r in retries] == list(range(1, count + 1))
        if retry_in is not None:
            assert all(r.retry_in == retry_in and "Retry-After" in r.detail for r in retries)
        assert out.requests == count + 1
    return check


def _no_usage(out: Outcome) -> None:
    [usage] = out.of(ev.Usage)
    assert usage.estimated and usage.input_tokens > 0 and usage.output_tokens > 0 and usage.cost is None
    assert out.result.usage.estimated and out.result.usage.cost is None


def _length(out: Outcome) -> None:
    assert out.result.stop_reason == "length" and out.result.last_text_content == "The first half"


def _reasoning(out: Outcome) -> None:
    assert [e.text for e in out.of(ev.Reasoning)] == ["I think, therefore."]
    assert [e.text for e in out.of(ev.Text)] == ["Hello!"]
    assert out.robot.history[-1].content == "Hello!"  # never sent back to the model


def _text_call(out: Outcome) -> None:
    assert [(e.name, e.input) for e in out.of(ev.ToolUse)] == [("get_weather", {"city": "Oslo"})]
    assert out.of(ev.ToolResult)[0].payload == {"data": "sunny in Oslo"}
    assert any("as text" in s.detail for s in out.statuses("notice"))
    assert out.result.last_text_content == "fine"


def _bad_arguments(out: Outcome) -> None:
    [error] = out.of(ev.ToolError)
    assert "JSON" in json.dumps(error.error), error.error  # the model is told what was wrong
    assert not out.of(ev.ToolResult) and out.result.last_text_content == "fine"


def _compacted(out: Outcome) -> None:
    compacted = out.of(ev.ContextCompacted)
    assert compacted and all(c.trigger == "overflow" and c.replaced_count > 0 for c in compacted)
    assert out.result.last_text_content == "fine" and not out.statuses("retrying")
    assert out.requests == 2 + len(out.of(ev.Usage)) - 1  # the refused call, the summaries, the answer
    assert len(out.robot.history) >= 2 * 3 + 2  # the robot's conversation keeps every message


def _streamed_cut(*words: str) -> Callable[[Outcome], None]:
    def check(out: Outcome) -> None:
        failed_saying(*words)(out)
        shown = "".join(e.text for e in out.of(ev.TextDelta))
        assert shown.startswith("one two"), shown  # what was shown before the cut stays shown
        assert out.statuses("streaming")
    return check


CONTEXT_REFUSAL = ("This model's maximum context length is 300 tokens. However, your messages resulted in "
                   "900 tokens. Please reduce the length of the messages.")

FAULTS = [
    # A local server not running: said at once, no retries (they cannot start it): well before the
    # max_wait of 60 s that retrying would use up.
    Fault("connection refused", (), failed_saying("could not connect", "running?", "correct the API base URL",
                                                  retries=0, within=60 / 2), {"max_wait": 60},
          address="refused"),
    Fault("accepts, never reads or answers", (), failed_saying("no answer from", "llm.max_wait", within=SLACK * 1.5),
          {"max_wait": 1.5, "first_token_timeout": 100}, address="silent"),
    Fault("takes the request, never answers (max_wait)", (Reply.say("late", stall_before=60, times=3),),
          failed_saying("no answer from", "Raise llm.max_wait", requests=1, within=SLACK * 1.5),
          {"max_wait": 1.5, "first_token_timeout": 100}),
    Fault("never sends the first token", (Reply.say("late", stall_after=0, stall_seconds=60),),
          failed_saying("no answer from", "llm.first_token_timeout", requests=1, within=SLACK * 0.5),
          {"first_token_timeout": 0.5}),
    # (the drop comes a moment after the chunks: a client that had not read them yet when the socket closed
    # loses them, nothing was shown, and it rightly tries again; aiohttp, under litellm, does that under load)
    Fault("stops mid-stream (connection dropped)", (Reply.say("one two three four five six", cut_after=3,
                                                              stall_after=3, stall_seconds=0.5),),
          _streamed_cut("the stream ended before the model finished", "llm.max_concurrent_requests")),
    Fault("stops mid-stream (clean end, no finish)", (Reply.say("one two three four five six", cut_after=3,
                                                                cut_clean=True),),
          _streamed_cut("the stream ended before the model finished")),
    Fault("a gap mid-stream", (Reply.say("one two three four", stall_after=3, stall_seconds=30),),
          _streamed_cut("stopped sending for 0.5 s", "llm.idle_timeout"), {"idle_timeout": 0.5}),
    Fault("429 with Retry-After 0.05 s", (Reply.error(429, times=2, retry_after=0.05), Reply.say("fine")),
          retried_then_answered("HTTP 429", 2, retry_in=0.05)),
    Fault("429 with Retry-After 3600 s", (Reply.error(429, times=3, retry_after=3600),),
          failed_saying("asks to wait 60 min", "Retry-After", "try again later, or raise llm.max_wait",
                        requests=1, within=60 / 2), {"max_wait": 60}),  # said at once, not after max_wait
    Fault("500 then an answer", (Reply.error(500), Reply.say("fine")), retried_then_answered("HTTP 500", 1)),
    Fault("502 then an answer", (Reply.error(502), Reply.say("fine")), retried_then_answered("HTTP 502", 1)),
    Fault("503 until max_wait", (Reply.error(503, "overloaded", times=30),),
          failed_saying("HTTP 503", "overloaded", "llm.max_wait (1.2 s) reached", within=SLACK * 1.2),
          {"max_wait": 1.2, "max_retries": 10}),
    Fault("401 echoing the key", (Reply.error(401, echo_key=True, times=3),),
          failed_saying("HTTP 401", "Incorrect API key provided", "check the API key", retries=0, requests=1)),
    Fault("404 unknown model", (Reply.error(404, "The model `fake` does not exist", times=3),),
          failed_saying("HTTP 404", "Check the model name ('openai/fake') and the API base URL", requests=1)),
    Fault("empty 200 (no history to compact)", (Reply(empty=True, times=3),),
          failed_saying("does not fit the context window", "Start a new thread", "llm.context_window")),
    Fault("HTML page with 200", (Reply(html="<html><head><title>Sign in</title></head></html>", times=3),),
          failed_saying("did not answer with an event stream", "HTML page titled 'Sign in'",
                        "is the api_base right?", requests=1)),
    Fault("garbage SSE", (Reply(garbage="<<<not json>>>", times=3),),
          failed_saying("did not answer with an event stream", "'<<<not json>>>'", "is the api_base right?",
                        requests=1)),
    Fault("stream without usage", (Reply.say("A short answer.", usage=False),), _no_usage),
    Fault("finish_reason length", (Reply.say("The first half", finish_reason="length"),), _length),
    Fault("reasoning_content", (Reply.say("Hello!", reasoning="I think, therefore."),), _reasoning),
    Fault("tool call written as text", (Reply.say('<tool_call>\n{"name": "get_weather", "arguments": '
                                                  '{"city": "Oslo"}}\n</tool_call>'), Reply.say("fine")), _text_call),
    Fault("invalid JSON tool arguments", (Reply.tool("get_weather", '{"city": "Os'), Reply.say("fine")),
          _bad_arguments),
    Fault("context-length error (compacts, retries once)",
          (Reply.error(400, CONTEXT_REFUSAL),), _compacted, history=3),
    Fault("empty 200 from an overflowing local server (compacts, retries once)",
          (Reply(empty=True),), _compacted, history=3),
]


def make_robot(kind: str, address: str, llm: dict[str, Any]) -> Robot:
    config = load_config(env={}, overrides={"llm": {"provider": "litellm" if kind == "litellm" else "auto",
                                                    "max_retries": 3, "max_wait": 10, **llm}})
    return Robot("r", system_prompt="You help.", model="openai/fake", api_base=address, config=config,
                 tools=[get_weather], api_key=KEY)


async def run_once(robot: Robot, message: str) -> list[ev.Event]:
    async def collect() -> list[ev.Event]:
        return [e async for e in robot.stream(message)]
    return await asyncio.wait_for(collect(), timeout=HOW_LONG)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
async def test_a_provider_fault_ends_clearly(server: FakeLLMServer, silent: str, fault: Fault, kind: str,
                                            matrix: Any) -> None:
    matrix.case("provider faults", f"{fault.name} ({kind})")
    address = {"refused": refused_address(), "silent": silent}.get(fault.address or "", server.base_url + "/v1")
    robot = make_robot(kind, address, fault.llm)
    server.clear()
    for n in range(fault.history):  # an earlier conversation, answered normally
        server.enqueue(Reply.say(f"Answer {n}: " + "words of an earlier answer " * 8))
        assert isinstance((await run_once(robot, f"Question {n}: " + "tell me more " * 8))[-1], ev.RunFinished)
    server.enqueue(*fault.replies)
    before = len(server.requests)
    started = time.monotonic()
    events = await run_once(robot, "Hi, what is the weather in Oslo?")
    outcome = Outcome(events, time.monotonic() - started, len(server.requests) - before, robot)
    terminals = [e for e in events if isinstance(e, ev.TERMINAL)]
    assert terminals == [events[-1]], terminals  # exactly one terminal event, the last
    fault.check(outcome)
    assert outcome.statuses("connecting"), "the wait was not shown"
    assert not [e for e in events if KEY in ev.to_json(e) or KEY[-12:] in ev.to_json(e)], "the key is in an event"
    server.clear()
    matrix.lost(0, "")


@pytest.mark.parametrize("kind", KINDS)
async def test_stop_at_random_moments_ends_at_once(server: FakeLLMServer, kind: str, matrix: Any) -> None:
    """run.cancel() (the window's Stop) while connecting, waiting, streaming or retrying: the run ends
    at once with run_cancelled, and what was streamed is the cancelled result's text."""
    matrix.case("provider faults", f"Stop at random moments, 6 trials ({kind})")
    rng = random.Random(16)
    robot = make_robot(kind, server.base_url + "/v1", {})
    server.clear()
    words, delay = 400, 0.02  # a stream of 8 s: a Stop that waited for its end would be seen
    for trial in range(6):
        server.enqueue(Reply.error(429, retry_after=0.2) if trial % 3 == 0 else Reply.say("x", stall_before=0.2),
                       Reply.say("one two three four five six seven eight nine ten " * (words // 10),
                                 chunk_delay=delay))
        run = robot.stream(f"trial {trial}")
        seen: list[ev.Event] = []

        async def consume(run: Any = run, seen: list[ev.Event] = seen) -> None:
            async for event in run:
                seen.append(event)

        task = asyncio.create_task(consume())
        await asyncio.sleep(rng.uniform(0.0, 0.6))
        stopped = time.monotonic()
        run.cancel()
        await asyncio.wait_for(task, timeout=HOW_LONG)
        assert time.monotonic() - stopped < words * delay / 2  # at once: long before the stream would end
        terminal = seen[-1]
        assert isinstance(terminal, ev.TERMINAL), terminal
        if isinstance(terminal, ev.RunCancelled):
            shown = "".join(e.text for e in seen if isinstance(e, ev.TextDelta))
            kept = terminal.partial.last_text_content if terminal.partial is not None else ""
            assert (kept or "") == shown or not shown, (kept, shown)
        server.clear()
    matrix.lost(0, "")


# -- the command line ------------------------------------------------------------------------------


def robotlab(address: str, *args: str, kind: str = "lean", db: Path | None = None) -> subprocess.CompletedProcess[str]:
    # llm.max_wait bounds hanging, not speed: on a loaded machine loading the provider's library in a
    # fresh process alone can take seconds, and every case here is said long before 60 s
    env = {**os.environ, "ROBOT_LAB_LLM__PROVIDER": "litellm" if kind == "litellm" else "auto",
           "ROBOT_LAB_LLM__MAX_WAIT": "60", "OPENAI_API_KEY": KEY}
    return subprocess.run([sys.executable, "-m", "workspace", "run", "assistant", "hi", "--json", "--model",
                           "openai/fake", "--api-base", address, *(["--db", str(db)] if db else []), *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=HOW_LONG * 2)


CLI_FAULTS = [  # the other cases are the same code under the command line: tested above, both providers
    ("connection refused", None, "could not connect", "lean"),
    ("401 echoing the key", Reply.error(401, echo_key=True, times=3), "Incorrect API key provided", "lean"),
    ("401 echoing the key", Reply.error(401, echo_key=True, times=3), "Incorrect API key provided", "litellm"),
    ("429 with Retry-After 3600 s", Reply.error(429, retry_after=3600, times=3), "asks to wait 60 min", "lean"),
    ("HTML page with 200", Reply(html="<html><title>Login</title></html>", times=3), "is the api_base right?", "lean"),
]


@pytest.mark.parametrize(("name", "reply", "says", "kind"), CLI_FAULTS, ids=[f"{c[0]}-{c[3]}" for c in CLI_FAULTS])
def test_robotlab_run_json_reports_a_provider_fault(server: FakeLLMServer, name: str, reply: Reply | None, says: str,
                                                    kind: str, matrix: Any, tmp_path: Path) -> None:
    matrix.case("provider faults", f"robotlab run --json: {name} ({kind})")
    server.clear()
    if reply is not None:
        server.enqueue(reply)
    address = refused_address() if reply is None else server.base_url + "/v1"
    done = robotlab(address, kind=kind, db=tmp_path / "threads.db")
    server.clear()
    assert done.returncode == 1, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]  # nothing but JSON lines
    assert events[-1]["kind"] == "run_failed" and says in events[-1]["error"], events[-1]
    assert [e["kind"] for e in events].count("run_failed") == 1
    assert "Traceback" not in done.stderr
    assert KEY not in done.stdout + done.stderr and KEY[-12:] not in done.stdout + done.stderr
    matrix.lost(0, "")


@pytest.mark.skipif(sys.platform == "win32", reason="signals are POSIX")
def test_ctrl_c_at_random_moments_ends_at_once_and_keeps_the_thread(server: FakeLLMServer, matrix: Any,
                                                                     tmp_path: Path) -> None:
    """SIGINT to ``robotlab run --json`` while it waits for the first token, retries or streams: exit
    130 within seconds, one run_cancelled line, no traceback, and the recorded thread holds the
    message and every streamed word that was printed."""
    from workspace.persistence import Store

    rng = random.Random(130)
    matrix.case("provider faults", "Ctrl-C to robotlab run at random moments, 4 trials (lean)")
    for trial in range(4):
        server.clear()
        # a stream of 30 s and a retry in 60 s: an exit that waited for either would be seen
        story = Reply.say("one two three four five six seven eight nine ten " * 30, chunk_delay=0.1)
        if trial == 1:  # Ctrl-C while it waits to retry
            server.enqueue(Reply.error(429, retry_after=60), story)
        else:  # while it waits for the first token, or mid-stream
            server.enqueue(story.but(stall_before=0.2 * trial))
        db = tmp_path / f"threads-{trial}.db"
        env = {**os.environ, "OPENAI_API_KEY": KEY}
        proc = subprocess.Popen([sys.executable, "-m", "workspace", "run", "assistant", f"trial {trial}", "--json",
                                 "--model", "openai/fake", "--api-base", server.base_url + "/v1", "--db", str(db)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env, text=True)
        try:
            assert server.wait_for_requests(1, timeout=60)
            time.sleep(rng.uniform(0.0, 0.6))
            started = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=HOW_LONG)
            assert time.monotonic() - started < 30 / 2  # within seconds: long before the stream would end
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        events = [json.loads(line) for line in out.splitlines()]
        assert [e["kind"] for e in events].count("run_cancelled") == 1 and events[-1]["kind"] == "run_cancelled"
        shown = "".join(e["text"] for e in events if e["kind"] == "text_delta")
        with Store(db) as store:
            [thread] = store.list_threads()
            [turn] = store.turns(thread.id)
            assert turn.user_text == f"trial {trial}"
            stored = store.turn_events(turn.id)
        kept = "".join(e.text for e in stored if isinstance(e, ev.TextDelta))
        assert kept == shown, (kept, shown)  # nothing printed is missing from the thread
        assert any(isinstance(e, ev.RunCancelled) for e in stored)
    server.clear()
    matrix.lost(0, "")
