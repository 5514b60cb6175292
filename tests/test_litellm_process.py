"""litellm in a process of its own (the window's way): the same chunks, failures and answers as
litellm in this process, through a real child process and a real HTTP server on loopback.

One child serves the whole module (starting it imports litellm: seconds); the test that kills it
checks that the next request starts another.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace.context.manager import ContextManager
from workspace.errors import ContextOverflowError, ProviderError
from workspace.messages import Message, TextMessage
from workspace.providers.base import Chunk, StatusChunk, TextChunk, ToolSpec
from workspace.providers.litellm_process import SeparateLiteLLMProvider, litellm_process
from workspace.providers.litellm_provider import LiteLLMProvider
from workspace.providers.registry import provider_for, set_litellm_process

WEATHER = ToolSpec(name="get_weather", description="The weather in a city.",
                   parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
HELLO = [TextMessage(role="user", content="Hello")]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def clean_queue(server: FakeLLMServer) -> Iterator[None]:
    server.clear()
    yield
    server.clear()


def make(cls: type[LiteLLMProvider], server: FakeLLMServer, **options: Any) -> LiteLLMProvider:
    options.setdefault("backoff", 0.01)
    options.setdefault("timeout", 10.0)
    options.setdefault("api_key", "sk-test")
    return cls("openai/fake", api_base=server.base_url + "/v1", **options)


async def collect(provider: LiteLLMProvider, messages: Sequence[Message] = HELLO, *,
                  tools: Sequence[ToolSpec] = (WEATHER,)) -> list[Chunk]:
    async def run() -> list[Chunk]:
        return [c async for c in provider.stream(system="Be brief.", messages=messages, tools=tools, settings={})]
    return await asyncio.wait_for(run(), timeout=60)  # the first one waits for litellm's import


def answer(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks that are the answer (the waits' wording differs: "starting litellm" first)."""
    return [c for c in chunks if not isinstance(c, StatusChunk)]


async def test_the_same_chunks_as_litellm_in_this_process(server: FakeLLMServer) -> None:
    replies = [Reply.tool("get_weather", {"city": "Oslo"}, id="call_1"), Reply(text="Sunny.", reasoning="It is July.")]
    for cls in (LiteLLMProvider, SeparateLiteLLMProvider):
        server.enqueue(*replies)
        first = await collect(make(cls, server))
        second = await collect(make(cls, server))
        if cls is LiteLLMProvider:
            here = (answer(first), answer(second))
        else:
            assert (answer(first), answer(second)) == here
    sent = server.requests
    assert sent[0]["messages"] == sent[2]["messages"] and sent[0]["tools"] == sent[2]["tools"]
    assert "Sunny." in "".join(c.text for c in here[1] if isinstance(c, TextChunk))


async def test_a_refusal_as_too_long_stays_a_context_overflow(server: FakeLLMServer) -> None:
    server.enqueue(Reply.error(400, "This model's maximum context length is 2048 tokens. However, you requested "
                                    "5000 tokens. Please reduce the length of the messages."))
    with pytest.raises(ContextOverflowError) as caught:
        await collect(make(SeparateLiteLLMProvider, server))
    assert caught.value.context_overflow and caught.value.reason == "context"


async def test_a_refused_key_says_what_to_do_and_keeps_its_reason(server: FakeLLMServer) -> None:
    server.enqueue(Reply.error(401, "Incorrect API key provided"))
    with pytest.raises(ProviderError) as caught:
        await collect(make(SeparateLiteLLMProvider, server))
    assert caught.value.reason == "auth" and caught.value.status_code == 401
    assert "sk-test" not in str(caught.value)


async def test_retries_show_as_they_happen(server: FakeLLMServer) -> None:
    server.enqueue(Reply.error(429, times=1, retry_after=0.05), "Now it works.")
    chunks = await collect(make(SeparateLiteLLMProvider, server))
    retrying = [c for c in chunks if isinstance(c, StatusChunk) and c.state == "retrying"]
    assert len(retrying) == 1 and retrying[0].retry_in == pytest.approx(0.05)
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Now it works."


async def test_stop_mid_stream_ends_the_request_in_the_other_process(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("one two three four five six seven eight", chunk_size=4, chunk_delay=0.2))
    provider = make(SeparateLiteLLMProvider, server)
    await collect(make(SeparateLiteLLMProvider, server, timeout=10.0), tools=())  # started and loaded
    before = server.disconnects
    server.enqueue(Reply.say("one two three four five six seven eight", chunk_size=4, chunk_delay=0.2))
    stream = provider.stream(system=None, messages=HELLO, tools=(), settings={})
    async for chunk in stream:
        if isinstance(chunk, TextChunk):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert await asyncio.to_thread(server.wait_for_disconnects, before + 1, 10.0)
    server.enqueue("Still here.")
    chunks = await collect(provider, tools=())
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Still here."


async def test_a_crashed_process_fails_what_waits_and_the_next_call_starts_another(server: FakeLLMServer) -> None:
    provider = make(SeparateLiteLLMProvider, server)
    await collect(provider, tools=())
    process = litellm_process()
    started = process.started
    server.enqueue(Reply.say("slow answer", stall_before=5.0))
    stream = provider.stream(system=None, messages=HELLO, tools=(), settings={})
    got: list[Any] = []

    async def read() -> None:
        try:
            async for chunk in stream:
                got.append(chunk)
        except ProviderError as exc:
            got.append(exc)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0.3)
    await asyncio.to_thread(process.kill)
    await asyncio.wait_for(reader, 10)
    error = got[-1]
    assert isinstance(error, ProviderError) and "litellm's process stopped unexpectedly" in str(error)
    assert "llm.litellm_process" in str(error)
    server.clear()
    server.enqueue("Back again.")
    chunks = await collect(provider, tools=())
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Back again."
    assert process.started == started + 1


async def test_what_is_known_of_a_model_is_asked_once_and_never_waited_for_on_the_loop() -> None:
    provider = SeparateLiteLLMProvider("openai/gpt-4o-mini")
    assert provider.known_context_window() in ((False, None), (True, 128_000))
    window = await asyncio.to_thread(provider.context_window)
    assert window == 128_000
    assert provider.known_context_window() == (True, 128_000)
    assert provider.supports_vision() is True  # known now: answered on the loop without waiting
    counter = await asyncio.to_thread(provider.token_counter)
    assert counter is not None and counter.blocking
    here = LiteLLMProvider("openai/gpt-4o-mini").token_counter()
    assert here is not None
    text = "Counting tokens the way the model does, in another process."
    assert await asyncio.to_thread(counter, text) == here(text)
    assert counter(text) == here(text)  # kept: on the loop too


async def test_the_context_manager_counts_with_the_tokenizer_of_the_other_process() -> None:
    provider = SeparateLiteLLMProvider("openai/gpt-4o-mini")
    manager = ContextManager()
    history = [TextMessage(role="user", content="Hello " * 50)]
    prepared = await manager.prepare(provider, system="Be brief.", history=history, tools=[WEATHER])
    here = ContextManager()
    expected = await here.prepare(LiteLLMProvider("openai/gpt-4o-mini"), system="Be brief.", history=history,
                                  tools=[WEATHER])
    assert prepared.used == expected.used and (await manager.counter(provider)).tokenizer == "openai/gpt-4o-mini"


async def test_a_missing_key_is_named_from_the_other_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = SeparateLiteLLMProvider("anthropic/claude-3-5-haiku-20241022")
    assert await provider.check_environment() == ["ANTHROPIC_API_KEY"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-settings")  # saved in Settings after the start
    assert await provider.check_environment() == []


def test_the_window_runs_litellm_apart_and_the_library_here(server: FakeLLMServer) -> None:
    from workspace.config import load_config

    config = load_config(env={}, overrides={"llm": {"provider": "litellm"}})
    assert type(provider_for("openai/fake", api_base=server.base_url + "/v1", config=config)) is LiteLLMProvider
    set_litellm_process("separate")
    assert isinstance(provider_for("openai/fake", api_base=server.base_url + "/v1", config=config),
                      SeparateLiteLLMProvider)
    same = load_config(env={}, overrides={"llm": {"provider": "litellm", "litellm_process": "same"}})
    assert type(provider_for("openai/fake", api_base=server.base_url + "/v1", config=same)) is LiteLLMProvider


def test_this_process_never_imports_litellm(server: FakeLLMServer) -> None:
    server.enqueue("From the other process.")
    script = textwrap.dedent(f"""
        import asyncio, json, sys
        from workspace.messages import TextMessage
        from workspace.providers.litellm_process import SeparateLiteLLMProvider, shutdown

        async def main():
            provider = SeparateLiteLLMProvider("openai/fake", api_base={server.base_url + '/v1'!r}, api_key="sk-x")
            text = [c.text async for c in provider.stream(system=None, messages=[TextMessage(role="user",
                    content="hi")], tools=[], settings={{}}) if hasattr(c, "text")]
            return "".join(text)

        text = asyncio.run(main())
        shutdown()
        print(json.dumps({{"text": text, "litellm": "litellm" in sys.modules, "openai": "openai" in sys.modules}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"text": "From the other process.", "litellm": False,
                                                         "openai": False}


def test_answers_go_to_the_loop_that_asked() -> None:
    """Two event loops in two threads (a worker's own loop) each get their own stream's answers."""
    results: dict[str, str] = {}

    def run(name: str) -> None:
        async def main() -> None:
            provider = SeparateLiteLLMProvider("openai/fake", api_base=_server_url + "/v1", api_key="sk-x",
                                               timeout=10.0)
            chunks = [c async for c in provider.stream(system=None, messages=[TextMessage(role="user", content=name)],
                                                       tools=[], settings={})]
            results[name] = "".join(c.text for c in chunks if isinstance(c, TextChunk))
        asyncio.run(main())

    with FakeLLMServer(reply_fn=lambda body: Reply.say("to " + body["messages"][-1]["content"])) as srv:
        _set_url(srv.base_url)
        threads = [threading.Thread(target=run, args=(name,)) for name in ("alpha", "beta")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert results == {"alpha": "to alpha", "beta": "to beta"}


_server_url = ""


def _set_url(url: str) -> None:
    global _server_url
    _server_url = url


async def test_the_rehearsal_after_loading_is_a_whole_streamed_call(caplog: pytest.LogCaptureFixture) -> None:
    """litellm's process rehearses one streamed call with a tool against a loopback server of its own: litellm
    takes the canned answer as a real one (a failure would only be logged, so it is checked here)."""
    import logging

    from workspace.providers import litellm_host

    with caplog.at_level(logging.DEBUG, logger="workspace.providers.litellm_host"):
        await asyncio.wait_for(litellm_host._rehearse(), timeout=60)
    assert not [r for r in caplog.records if "rehearsal call failed" in r.getMessage()]


async def test_a_call_without_its_key_fails_at_once_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = SeparateLiteLLMProvider("anthropic/claude-3-5-haiku-20241022", max_retries=3)
    with pytest.raises(ProviderError) as caught:
        await collect(provider, tools=())
    assert "ANTHROPIC_API_KEY" in str(caught.value) and caught.value.reason == "auth"
    assert "retries" not in str(caught.value)


async def test_a_line_that_is_not_a_request_is_skipped_and_an_unknown_request_is_refused() -> None:
    process = litellm_process()
    spec = {"model_id": "openai/gpt-4o-mini", "api_base": None, "api_key": None, "options": {}}
    assert await process.ask("count", provider=spec, texts=["hello"]) == [1]
    process._outbox.put(b"this is not JSON\n")  # as a broken writer would send it
    assert await process.ask("count", provider=spec, texts=["hello world"]) == [2]
    with pytest.raises(ValueError, match="does not know the request 'dance'"):
        await process.ask("dance")


async def test_the_windows_model_list_comes_from_litellms_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing hosted models reads litellm's 1.5 MB model map: where litellm runs apart, that process reads
    it (the same ids), so the window's interpreter lock is not held for it."""
    from workspace.config import load_config
    from workspace.providers import listing

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000")
    here = await listing.list_models(load_config(env={}, overrides={"llm": {"litellm_process": "same"}}), hosted=True)
    calls: list[str] = []
    process = litellm_process()
    ask = process.ask_blocking
    monkeypatch.setattr(process, "ask_blocking", lambda op, **kw: calls.append(op) or ask(op, **kw))
    listing.clear_cache()
    apart = await listing.list_models(load_config(env={}, overrides={"llm": {"litellm_process": "separate"}}),
                                      hosted=True)
    assert calls == ["known_chat_models"]
    assert apart.ids == here.ids and "anthropic/claude-sonnet-4-5" in apart.ids
    listing.clear_cache()


def test_a_bundle_starts_litellms_process_through_its_own_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-contained bundle has no ``python -m``: its executable is asked to be litellm's process, and the
    bundle's entry point (run here as a script, as the bundle runs it) answers the protocol."""
    from pathlib import Path

    from workspace.providers import litellm_host
    from workspace.providers.litellm_process import host_command

    assert host_command()[1:] == ["-m", "workspace.providers.litellm_host"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert host_command() == [sys.executable, litellm_host.BUNDLE_ARG]
    monkeypatch.delattr(sys, "frozen")
    entry = Path(__file__).resolve().parents[1] / "packaging" / "robotlab_entry.py"
    assert f'LITELLM_HOST_ARG = "{litellm_host.BUNDLE_ARG}"' in entry.read_text(encoding="utf-8")
    request = {"id": 1, "op": "count", "texts": ["hello world"],
               "provider": {"model_id": "openai/gpt-4o-mini", "api_base": None, "api_key": None, "options": {}}}
    child = subprocess.Popen([sys.executable, str(entry), litellm_host.BUNDLE_ARG], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(json.dumps(request) + "\n")
    child.stdin.flush()
    answer = child.stdout.readline()
    child.stdin.close()  # the window went away: the process ends
    assert child.wait(60) == 0
    assert json.loads(answer) == {"id": 1, "result": [2]}


async def test_an_image_reaches_the_server_encoded_off_the_event_loop(server: FakeLLMServer,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A request with an image is megabytes of JSON: it is encoded in a worker thread, not on the loop, and
    reaches the server as the same content parts."""
    from workspace.providers import litellm_process as module

    threads: list[str] = []
    encode = module.encode_request
    monkeypatch.setattr(module, "encode_request", lambda fields, *rest: threads.append(
        threading.current_thread().name) or encode(fields, *rest))
    url = "data:image/png;base64," + "iVBORw0KGgo" * 50_000
    picture = TextMessage(role="user", content=[{"type": "text", "text": "What is this?"},
                                                {"type": "image_url", "image_url": {"url": url}}])
    server.enqueue(Reply(text="A picture."))
    chunks = await collect(make(SeparateLiteLLMProvider, server), [picture], tools=())
    assert "A picture." in "".join(c.text for c in chunks if isinstance(c, TextChunk))
    assert threads and threading.main_thread().name not in threads
    parts = server.requests[-1]["messages"][-1]["content"]
    assert {"type": "image_url", "image_url": {"url": url}} in parts
    server.enqueue(Reply(text="Hi."))
    await collect(make(SeparateLiteLLMProvider, server), tools=())  # no image: encoded where it is sent
    assert threads[-1] == threading.main_thread().name


def test_a_question_not_answered_in_time_is_given_up_and_forgotten() -> None:
    """A process that never answers: the blocking question raises TimeoutError naming the request, and
    nothing stays registered waiting for it (the process is told to drop it)."""
    from workspace.providers.litellm_process import LiteLLMProcess

    silent = LiteLLMProcess([sys.executable, "-c", "import sys, time\nfor line in sys.stdin: pass"])
    try:
        with pytest.raises(TimeoutError, match="'load'"):
            silent.ask_blocking("load", timeout=0.3)
        assert silent._waiting == {}
    finally:
        silent.close()


def test_a_large_body_is_joined_to_its_request_id_as_one_line() -> None:
    from workspace.providers import wire

    body = wire.encode({"op": "stream", "messages": [{"role": "user", "content": "é\n"}]})
    line = wire.joined({"id": 7, "env": {"KEY": None}}, body)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert wire.decode(line) == (7, {"id": 7, "env": {"KEY": None}, "op": "stream",
                                     "messages": [{"role": "user", "content": "é\n"}]})
    assert wire.decode(wire.joined({"id": 8}, wire.encode({}))) == (8, {"id": 8})
    for broken in (b"", b'{"op": "x"}', b"[1]\n", b' {"op": "x"}\n'):  # no newline, not an object
        with pytest.raises(ValueError, match="not a line of an encoded object"):
            wire.joined({"id": 9}, broken)
