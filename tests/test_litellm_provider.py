"""LiteLLMProvider end to end: through litellm to a real HTTP server on loopback.

The server (tests/fakes/llm_server.py) speaks the OpenAI chat API (``openai/fake`` with
``api_base=.../v1``) and Anthropic's messages API (``anthropic/claude-fake``); each test scripts
its answers, faults included, and reads back what the model was sent.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply, ToolCall
from fakes.redirecting import redirecting_to

from workspace.errors import ProviderError
from workspace.messages import Message, TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage
from workspace.providers.base import (
    Chunk,
    FinishChunk,
    Provider,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)
from workspace.providers.litellm_provider import LiteLLMProvider, load_litellm, missing_keys
from workspace.providers.openai_format import to_openai_messages

WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
HELLO = [TextMessage(role="user", content="Hello")]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def make(server: FakeLLMServer, style: str, **options: Any) -> LiteLLMProvider:
    options.setdefault("backoff", 0.01)
    options.setdefault("timeout", 10.0)
    options.setdefault("api_key", "sk-test")
    if style == "openai":
        return LiteLLMProvider("openai/fake", api_base=server.base_url + "/v1", **options)
    return LiteLLMProvider("anthropic/claude-fake", api_base=server.base_url, **options)


async def collect(provider: LiteLLMProvider, messages: Sequence[Message] = HELLO, *,
                  tools: Sequence[ToolSpec] = (WEATHER,), system: str | None = "Be brief.",
                  settings: dict[str, Any] | None = None) -> list[Chunk]:
    async def run() -> list[Chunk]:
        return [c async for c in provider.stream(system=system, messages=messages, tools=tools,
                                                 settings=settings or {})]
    # A hang is a failure: no test here needs more than a few seconds.
    return await asyncio.wait_for(run(), timeout=20)


def text_of(chunks: Sequence[Chunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextChunk))


def calls_of(chunks: Sequence[Chunk]) -> dict[int, dict[str, Any]]:
    """Assemble tool calls the way the agent loop does: id/name once, arguments concatenated."""
    calls: dict[int, dict[str, Any]] = {}
    for c in chunks:
        if isinstance(c, ToolCallChunk):
            call = calls.setdefault(c.index, {"id": None, "name": None, "fragments": []})
            if c.id:
                call["id"] = c.id
            if c.name:
                call["name"] = c.name
            if c.arguments:
                call["fragments"].append(c.arguments)
    return calls


styles = pytest.mark.parametrize("style", ["openai", "anthropic"])


# --------------------------------------------------------------------------------------------
# The protocol and the import rule


def test_is_a_provider() -> None:
    provider = LiteLLMProvider("openai/gpt-4o-mini")
    assert isinstance(provider, Provider)
    assert provider.label == provider.model_id == "openai/gpt-4o-mini"
    assert provider.supports_tools and provider.supports_streaming and provider.is_language_model


def test_importing_the_module_does_not_import_litellm() -> None:
    code = ("import sys, workspace.providers.litellm_provider as m; "
            "m.LiteLLMProvider('openai/x', api_base='http://127.0.0.1:1/v1'); "
            "print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------------------------
# Streams


@styles
async def test_text_only(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.say("Hello there, how are you today?"))
    chunks = await collect(make(server, style))
    assert text_of(chunks) == "Hello there, how are you today?"
    assert sum(isinstance(c, TextChunk) for c in chunks) > 1  # streamed, not one block
    assert not calls_of(chunks)
    assert isinstance(chunks[-1], FinishChunk) and chunks[-1].reason == "stop"
    usage = [c for c in chunks if isinstance(c, UsageChunk)]
    assert len(usage) == 1
    assert usage[0].input_tokens > 0 and usage[0].output_tokens > 0
    assert usage[0].cost is None  # the fake model has no price
    assert usage[0].model == make(server, style).model_id


@styles
async def test_usage_is_the_servers(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.say("counted", usage=(123, 45)))
    chunks = await collect(make(server, style))
    (usage,) = [c for c in chunks if isinstance(c, UsageChunk)]
    assert (usage.input_tokens, usage.output_tokens) == (123, 45)


async def test_cost_of_a_priced_model(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("priced", usage=(1000, 500)))
    provider = LiteLLMProvider("openai/gpt-4o-mini", api_base=server.base_url + "/v1", api_key="sk-test")
    chunks = await collect(provider)
    (usage,) = [c for c in chunks if isinstance(c, UsageChunk)]
    assert usage.cost is not None and usage.cost > 0


@styles
async def test_one_tool_call(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.tool("get_weather", {"city": "Oslo"}, id="call_1"))
    chunks = await collect(make(server, style))
    calls = calls_of(chunks)
    assert list(calls) == [0]
    assert calls[0]["id"] == "call_1" and calls[0]["name"] == "get_weather"
    assert json.loads("".join(calls[0]["fragments"])) == {"city": "Oslo"}
    assert isinstance(chunks[-1], FinishChunk) and chunks[-1].reason == "tool_calls"
    assert text_of(chunks) == ""


@styles
async def test_several_tool_calls_with_split_arguments(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.tools(
        ToolCall("get_weather", {"city": "Oslo", "unit": "celsius"}, id="call_a"),
        ToolCall("get_weather", {"city": "Bergen", "unit": "celsius"}, id="call_b"),
        ToolCall("get_time", {"zone": "Europe/Oslo"}, id="call_c"),
        text="Let me check. ", fragments=3))
    chunks = await collect(make(server, style))
    assert text_of(chunks) == "Let me check. "
    calls = calls_of(chunks)
    assert sorted(calls) == [0, 1, 2]
    assert [calls[i]["id"] for i in range(3)] == ["call_a", "call_b", "call_c"]
    assert [calls[i]["name"] for i in range(3)] == ["get_weather", "get_weather", "get_time"]
    for i, expected in enumerate([{"city": "Oslo", "unit": "celsius"}, {"city": "Bergen", "unit": "celsius"},
                                  {"zone": "Europe/Oslo"}]):
        assert len(calls[i]["fragments"]) >= 2  # fragments are passed through, not pre-assembled
        assert json.loads("".join(calls[i]["fragments"])) == expected
    # The id and name come first, with no arguments yet.
    first = next(c for c in chunks if isinstance(c, ToolCallChunk))
    assert first.id == "call_a" and first.name == "get_weather" and first.arguments == ""
    assert isinstance(chunks[-1], FinishChunk) and chunks[-1].reason == "tool_calls"


@styles
async def test_malformed_arguments_come_through_raw(server: FakeLLMServer, style: str) -> None:
    raw = '{"city": "Oslo", unit: celsius'
    server.enqueue(Reply.tool("get_weather", raw))
    chunks = await collect(make(server, style))
    calls = calls_of(chunks)
    assert "".join(calls[0]["fragments"]) == raw
    assert calls[0]["name"] == "get_weather"


async def test_reply_fn_drives_a_tool_round_trip(server: FakeLLMServer) -> None:
    def reply(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.say(f"It is {json.loads(last['content'])['sky']}.")
        return Reply.tool("get_weather", {"city": "Oslo"})

    server.reply_fn = reply
    provider = make(server, "openai")
    first = await collect(provider)
    call = calls_of(first)[0]
    tool = ToolMessage(call["id"], call["name"], json.loads("".join(call["fragments"])))
    transcript = [*HELLO, ToolCallMessage(tools=[tool]), ToolResultMessage(tool=tool, content={"data": {"sky": "sunny"}})]
    second = await collect(provider, transcript)
    assert text_of(second) == "It is sunny."


# --------------------------------------------------------------------------------------------
# What the model is sent


async def test_request_body_is_openai_chat_format(server: FakeLLMServer) -> None:
    weather = ToolMessage("call_w", "get_weather", {"city": "Oslo"})
    clock = ToolMessage("call_t", "get_time", {})
    broken = ToolMessage("call_x", "explode", {"n": 1})
    transcript: list[Message] = [
        TextMessage(role="user", content="Weather and time in Oslo?"),
        ToolCallMessage(tools=[weather, clock]),
        ToolResultMessage(tool=weather, content={"data": {"sky": "sunny", "temp": 21}}),
        ToolResultMessage(tool=clock, content={"data": "12:00"}),
        TextMessage(role="assistant", content="Sunny, 21°C, noon. Shall I try the other tool?"),
        ToolCallMessage(tools=[broken]),
        ToolResultMessage(tool=broken, content={"error": "kaboom"}),
        TextMessage(role="user", content="Thanks"),
    ]
    await collect(make(server, "openai"), transcript, system="You are a weather robot.",
                  settings={"temperature": 0.2, "max_tokens": 64, "top_p": None, "stop": ["\n\n"]})
    body = server.requests[-1]
    assert body["model"] == "fake"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.2 and body["max_tokens"] == 64 and body["stop"] == ["\n\n"]
    assert "top_p" not in body
    assert body["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "You are a weather robot."}
    assert messages[1] == {"role": "user", "content": "Weather and time in Oslo?"}
    call_turn = messages[2]
    assert call_turn["role"] == "assistant" and call_turn["content"] == ""  # "" rather than null
    assert [(c["id"], c["type"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in call_turn["tool_calls"]] == [("call_w", "function", "get_weather", {"city": "Oslo"}),
                                                  ("call_t", "function", "get_time", {})]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_w",
                           "content": json.dumps({"sky": "sunny", "temp": 21})}
    assert messages[4] == {"role": "tool", "tool_call_id": "call_t", "content": "12:00"}
    # Text followed by tool calls is one assistant turn.
    assert messages[5]["role"] == "assistant"
    assert messages[5]["content"] == "Sunny, 21°C, noon. Shall I try the other tool?"
    assert messages[5]["tool_calls"][0]["id"] == "call_x"
    assert messages[6] == {"role": "tool", "tool_call_id": "call_x", "content": json.dumps({"error": "kaboom"})}
    assert messages[7] == {"role": "user", "content": "Thanks"}
    assert len(messages) == 8


async def test_no_tools_key_without_tools_and_no_system_without_prompt(server: FakeLLMServer) -> None:
    await collect(make(server, "openai"), tools=(), system=None)
    body = server.requests[-1]
    assert "tools" not in body
    assert body["messages"] == [{"role": "user", "content": "Hello"}]


async def test_anthropic_request_carries_the_tool_round_trip(server: FakeLLMServer) -> None:
    tool = ToolMessage("toolu_1", "get_weather", {"city": "Oslo"})
    transcript = [*HELLO, ToolCallMessage(tools=[tool]), ToolResultMessage(tool=tool, content={"data": "sunny"})]
    await collect(make(server, "anthropic"), transcript, system="Be brief.")
    body = server.requests[-1]
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    # The tool-only assistant turn is just the tool_use block (no placeholder text for "").
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]
    blocks = [b for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
    result = next(b for b in blocks if b.get("type") == "tool_result")
    assert result["tool_use_id"] == "toolu_1"
    assert "sunny" in json.dumps(result["content"])
    assert server.request_log[-1].headers.get("x-api-key") == "sk-test"


@styles
async def test_a_huge_tool_result_is_cut_to_fit_with_a_note(server: FakeLLMServer, style: str) -> None:
    tool = ToolMessage("call_1", "read_file", {"path": "big.log"})
    huge = "".join(f"line {i}: " + "x" * 60 + "\n" for i in range(15_000))  # ~1 MB
    transcript = [*HELLO, ToolCallMessage(tools=[tool]), ToolResultMessage(tool=tool, content={"data": huge})]
    await collect(make(server, style, max_tool_result_chars=20_000), transcript)
    sent = json.dumps(server.requests[-1])
    assert len(sent) < 40_000 and "line 0:" in sent and "line 14999:" in sent
    assert "characters left out here" in sent and "ask for a smaller part" in sent


def test_tool_calls_without_ids_get_matching_stable_ids() -> None:
    tool = ToolMessage(None, "get_weather", {"city": "Oslo"})
    messages = to_openai_messages(None, [ToolCallMessage(tools=[tool]),
                                         ToolResultMessage(tool=tool, content="sunny")])
    call_id = messages[0]["tool_calls"][0]["id"]
    assert call_id and messages[1]["tool_call_id"] == call_id
    assert to_openai_messages(None, [ToolCallMessage(tools=[tool])])[0]["tool_calls"][0]["id"] == call_id


def test_tool_result_content_shapes() -> None:
    tool = ToolMessage("c", "t", {})
    def content(value: Any) -> str:
        return str(to_openai_messages(None, [ToolResultMessage(tool=tool, content=value)])[0]["content"])
    assert content({"data": "plain text"}) == "plain text"
    assert content({"data": [1, 2]}) == "[1, 2]"
    assert content({"error": {"type": "ValueError", "message": "bad"}}) == \
        json.dumps({"error": {"type": "ValueError", "message": "bad"}})
    assert content("just a string") == "just a string"
    assert content({"other": 1}) == json.dumps({"other": 1})


async def test_no_key_with_a_custom_base_sends_a_placeholder(server: FakeLLMServer) -> None:
    provider = LiteLLMProvider("openai/fake", api_base=server.base_url + "/v1")
    chunks = await collect(provider)
    assert text_of(chunks) == "ok"
    assert server.request_log[-1].headers["authorization"].startswith("Bearer ")


async def test_a_key_from_the_keyring_goes_with_the_first_call_and_never_into_its_record(
        server: FakeLLMServer, keyring_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workspace import secrets

    assert secrets.store_key("OPENAI_API_KEY", "sk-keyring-0000000000")
    monkeypatch.setenv("OPENAI_API_BASE", server.base_url + "/v1")  # litellm's own: no api_base, so the keyring
    provider = LiteLLMProvider("openai/fake", backoff=0.01, timeout=10.0)
    await asyncio.to_thread(load_litellm)  # seconds on a busy machine: not within collect's bound of a hang
    # As in a run: the inspector's record is built first (before the key is read), then the call sends it.
    recorded = provider.prepared_request(system="Be brief.", messages=HELLO, tools=(WEATHER,), settings={})
    assert text_of(await collect(provider)) == "ok"
    assert server.request_log[-1].headers["authorization"] == "Bearer sk-keyring-0000000000"
    assert "api_key" not in recorded and "sk-keyring" not in json.dumps(recorded)


# --------------------------------------------------------------------------------------------
# Failures


@styles
async def test_rate_limit_is_retried_honouring_retry_after(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.error(429, times=2, retry_after=0.05), Reply.say("finally"))
    provider = make(server, style, backoff=0.01)
    delays: list[float] = []

    async def record(seconds: float) -> None:
        delays.append(seconds)

    provider.sleep = record
    chunks = await collect(provider)
    assert text_of(chunks) == "finally"
    assert len(server.requests) == 3
    assert delays == [0.05, 0.05]


@styles
async def test_server_errors_until_retries_run_out(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.error(500, "the model is overloaded, try again later", times=10))
    provider = make(server, style, max_retries=2)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    err = info.value
    assert err.status_code == 500 and err.retryable and err.provider == provider.model_id
    message = str(err)
    assert "the model is overloaded, try again later" in message  # the provider's own words
    assert "HTTP 500" in message and server.base_url in message
    assert "gave up after 2 retries" in message
    assert len(server.requests) == 3


async def test_backoff_doubles_without_retry_after(server: FakeLLMServer) -> None:
    server.enqueue(Reply.error(503, times=3), Reply.say("up again"))
    provider = make(server, "openai", backoff=0.01, max_retries=3)
    delays: list[float] = []

    async def record(seconds: float) -> None:
        delays.append(seconds)

    provider.sleep = record
    assert text_of(await collect(provider)) == "up again"
    assert len(delays) == 3
    assert 0.01 <= delays[0] < delays[1] < delays[2] <= 0.05


@styles
async def test_auth_error_is_not_retried_and_names_the_key(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.error(401, "invalid x-api-key", times=5))
    provider = make(server, style, api_key=None)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert len(server.requests) == 1
    assert info.value.status_code == 401 and not info.value.retryable
    message = str(info.value)
    assert "invalid x-api-key" in message
    assert ("OPENAI_API_KEY" if style == "openai" else "ANTHROPIC_API_KEY") in message
    assert "gave up" not in message


@pytest.fixture
def redirecting(server: FakeLLMServer) -> Iterator[str]:
    """The address of a loopback server that redirects every request to ``server``."""
    with redirecting_to(server.base_url) as address:
        yield address


@styles
async def test_a_redirect_is_not_followed_and_names_where_it_pointed(server: FakeLLMServer, redirecting: str,
                                                                      style: str) -> None:
    """httpx drops only Authorization when a redirect changes origin: Anthropic's x-api-key went along."""
    model = "openai/fake" if style == "openai" else "anthropic/claude-fake"
    base = redirecting + ("/v1" if style == "openai" else "")
    provider = LiteLLMProvider(model, api_base=base, api_key="sk-redirected-0123456789", backoff=0.01, timeout=10.0)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert server.request_log == []  # nothing (no key, no prompt) reached the other server
    message = str(info.value)
    assert f"{server.base_url}/v1/" in message and "redirect" in message and "API base" in message
    assert not info.value.retryable and "gave up" not in message


async def test_bad_request_is_not_retried(server: FakeLLMServer) -> None:
    server.enqueue(Reply.error(400, "tools are not supported by this model", times=5))
    with pytest.raises(ProviderError) as info:
        await collect(make(server, "openai"))
    assert len(server.requests) == 1
    assert info.value.status_code == 400 and not info.value.retryable
    assert "tools are not supported by this model" in str(info.value)


@pytest.mark.parametrize("model", ["openai/fake", "anthropic/fake", "hosted_vllm/fake"])
async def test_unreachable_server_is_a_readable_error(model: str) -> None:
    with FakeLLMServer() as gone:
        base = gone.base_url
    api_base = base + "/v1" if not model.startswith("anthropic") else base
    provider = LiteLLMProvider(model, api_base=api_base, api_key="sk-test", max_retries=1, backoff=0.01)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    text = str(info.value)
    # Not "HTTP 500": nothing answered. The message says where and what to do.
    assert f"could not connect to {api_base}" in text and "HTTP 500" not in text, text
    assert "running?" in text and "SSLContext" not in text and info.value.retryable


@pytest.mark.parametrize("provider_class", ["litellm", "lean"])
async def test_a_server_on_this_machine_that_refuses_is_reported_at_once(provider_class: str) -> None:
    """Nothing listens on the local port (Ollama not started): retrying within seconds cannot start it, so
    the error comes at once (no "retrying" waits, no "gave up after 3 retries"), still naming the fix."""
    import time

    from workspace.providers import streaming
    from workspace.providers.base import StatusChunk
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    with FakeLLMServer() as gone:
        api_base = gone.base_url + "/v1"
    streaming.ANSWERED.discard(api_base)  # a server of an earlier test on the same port answered
    cls = LiteLLMProvider if provider_class == "litellm" else OpenAICompatibleProvider
    provider = cls("openai/fake", api_base=api_base, api_key="sk-test", max_retries=3, backoff=5.0)
    if provider_class == "litellm":  # loading the library (seconds on a busy machine) is not the wait measured
        from workspace.providers.litellm_provider import load_litellm

        await asyncio.to_thread(load_litellm)
    else:
        await asyncio.to_thread(importlib.import_module, "openai")
    seen: list[Chunk] = []
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
            seen.append(chunk)
    assert time.monotonic() - started < 5.0  # the first of three retries would wait 5 s (backoff=5.0)
    assert not [c for c in seen if isinstance(c, StatusChunk) and c.state == "retrying"]
    text = str(info.value)
    assert f"could not connect to {api_base}" in text and "running?" in text and "gave up" not in text, text
    assert info.value.retryable  # the chat's Retry: once the server is started


async def test_a_local_server_that_answered_before_and_now_refuses_is_retried() -> None:
    """It may be restarting (Ollama's service, a relaunched llama.cpp): the refusal is retried as before."""
    from workspace.providers.base import StatusChunk
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    server = FakeLLMServer().start()
    api_base = server.base_url + "/v1"
    provider = OpenAICompatibleProvider("openai/fake", api_base=api_base, api_key="sk-test", max_retries=1,
                                        backoff=0.01)
    assert text_of(await collect(provider, tools=()))
    server.stop()
    seen: list[Chunk] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
            seen.append(chunk)
    assert [c for c in seen if isinstance(c, StatusChunk) and c.state == "retrying"]
    assert "gave up after 1 retry" in str(info.value)


async def test_a_local_proxy_whose_upstream_refused_is_still_retried(server: FakeLLMServer) -> None:
    """An HTTP 500 whose text says "Connection refused" (a local proxy with its upstream down) came from a
    server that is running: retried as a server error (the refusal is told by its type, not its text)."""
    server.enqueue(Reply.error(500, "litellm.APIConnectionError: [Errno 111] Connection refused", times=2))
    with pytest.raises(ProviderError) as info:
        await collect(make(server, "openai", max_retries=1), tools=())
    assert len(server.requests) == 2 and "gave up after 1 retry" in str(info.value)


@styles
async def test_stream_cut_mid_way_is_an_error_not_a_hang(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.say("one two three four five six seven", cut_after=4))
    provider = make(server, style)
    seen: list[Chunk] = []
    with pytest.raises(ProviderError) as info:
        async def consume() -> None:
            async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
                seen.append(chunk)
        await asyncio.wait_for(consume(), timeout=20)
    assert "the stream ended before the model finished" in str(info.value)
    assert info.value.retryable
    assert text_of(seen)  # text had already arrived, so it was not retried behind the user's back
    assert not any(isinstance(c, FinishChunk) for c in seen)
    assert len(server.requests) == 1


@styles
async def test_stream_that_ends_without_a_finish_is_an_error(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.say("one two three four five", cut_after=4, cut_clean=True))
    with pytest.raises(ProviderError, match="the stream ended before the model finished"):
        await collect(make(server, style), tools=())


async def test_cut_before_any_content_is_retried(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("lost", cut_after=1), Reply.say("second time lucky"))
    chunks = await collect(make(server, "openai"))
    assert text_of(chunks) == "second time lucky"
    assert len(server.requests) == 2


async def test_a_stalled_stream_times_out(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("one two three four", stall_after=3, stall_seconds=30))
    with pytest.raises(ProviderError) as info:
        await collect(make(server, "openai", timeout=0.5))
    assert "timeout" in str(info.value)


# --------------------------------------------------------------------------------------------
# Cancellation


async def _first_text_then_cancel(provider: LiteLLMProvider) -> tuple[asyncio.Task[None], list[Chunk]]:
    seen: list[Chunk] = []
    got_text = asyncio.Event()

    async def consume() -> None:
        async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
            seen.append(chunk)
            if isinstance(chunk, TextChunk):
                got_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), timeout=20)
    task.cancel()
    return task, seen


@styles
async def test_cancel_mid_stream_ends_promptly(server: FakeLLMServer, style: str) -> None:
    server.enqueue(Reply.say("one two three four five", stall_after=3, stall_seconds=30))
    provider = make(server, style)
    task, seen = await _first_text_then_cancel(provider)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(task), timeout=5)
    assert task.cancelled()
    assert not any(isinstance(c, FinishChunk) for c in seen)
    # The HTTP stream was closed: the server sees the client hang up during its stall.
    assert await asyncio.to_thread(server.wait_for_disconnects, 1, 5)
    # The provider still works afterwards (the cancelled connection was not reused half-read).
    server.enqueue(Reply.say("still here"))
    assert text_of(await collect(provider)) == "still here"


async def test_cancel_while_waiting_for_the_answer(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("too late", stall_before=30))
    provider = make(server, "openai")

    async def consume() -> list[Chunk]:
        return [c async for c in provider.stream(system=None, messages=HELLO, tools=(), settings={})]

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(server.wait_for_requests, 1, 20)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(task), timeout=5)
    assert task.cancelled()
    assert await asyncio.to_thread(server.wait_for_disconnects, 1, 5)


# --------------------------------------------------------------------------------------------
# Keys


def test_missing_keys_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert missing_keys("openai/gpt-4o-mini") == ["OPENAI_API_KEY"]
    assert missing_keys("anthropic/claude-sonnet-4-5") == ["ANTHROPIC_API_KEY"]
    assert missing_keys("openai/gpt-4o-mini", api_key="sk-given") == []
    assert missing_keys("ollama/llama3.1") == []  # a local server with a default address
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert missing_keys("openai/gpt-4o-mini") == []


async def test_check_environment_runs_off_the_loop() -> None:
    provider = LiteLLMProvider("anthropic/claude-sonnet-4-5")
    assert await provider.check_environment() == ["ANTHROPIC_API_KEY"]


# --------------------------------------------------------------------------------------------
# The fake server itself


def test_fake_server_scripts_and_records() -> None:
    import urllib.request

    with FakeLLMServer(default_text="default") as srv:
        srv.enqueue(Reply.error(503, times=2), "scripted")

        def post(body: dict[str, Any]) -> tuple[int, Any]:
            req = urllib.request.Request(srv.base_url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=5) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        assert post({"n": 1})[0] == 503
        assert post({"n": 2})[0] == 503
        status, body = post({"n": 3})
        assert status == 200 and body["choices"][0]["message"]["content"] == "scripted"
        assert post({"n": 4})[1]["choices"][0]["message"]["content"] == "default"
        assert [r["n"] for r in srv.requests] == [1, 2, 3, 4]
        assert srv.pending == 0


# --------------------------------------------------------------------------------------------
# Through the agent loop


@styles
async def test_a_robot_runs_a_tool_round_trip_through_litellm(server: FakeLLMServer, style: str) -> None:
    from workspace.robot import Robot

    def reply(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        content = last.get("content")
        if last["role"] == "tool" or (isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content)):
            return Reply.say("It is SUNNY in Oslo.")
        return Reply.tools(("weather", {"city": "Oslo"}), text="Checking. ")

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    server.reply_fn = reply
    robot = Robot("forecaster", system_prompt="You forecast.", tools=[weather], provider=make(server, style))
    result = await asyncio.wait_for(robot.arun("Weather in Oslo?"), timeout=20)
    assert result.last_text_content == "It is SUNNY in Oslo."
    assert result.tool_calls[0].data == "sunny in Oslo"  # type: ignore[attr-defined]
    assert len(server.requests) == 2


async def test_malformed_arguments_reach_the_model_as_a_tool_error(server: FakeLLMServer) -> None:
    from workspace.robot import Robot

    server.enqueue(Reply.tool("weather", '{"city": "Oslo"'), Reply.say("Sorry, let me fix that."))

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    robot = Robot("forecaster", system_prompt="You forecast.", tools=[weather], provider=make(server, "openai"))
    result = await asyncio.wait_for(robot.arun("Weather in Oslo?"), timeout=20)
    assert result.last_text_content == "Sorry, let me fix that."
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "error" in json.loads(tool_message["content"])
