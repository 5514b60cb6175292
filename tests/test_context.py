"""workspace.context piece by piece: windows, counts, cuts, oversized results, policies.

The end-to-end behaviour against a model with a small window is in test_context_loopback.py.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer

from workspace import events as ev
from workspace.config import load_config
from workspace.context import (
    ContextManager,
    TokenCounter,
    estimate,
    is_context_overflow,
    window_setting,
)
from workspace.context import window as window_module
from workspace.context.compaction import (
    SUMMARY_HEADER,
    SUMMARY_INSTRUCTIONS,
    choose_cut,
    summary_message,
    turn_starts,
    unit_starts,
)
from workspace.context.results import result_limit, shorten_result_message
from workspace.context.window import WindowInfo, probe_server, resolve_window, server_of, window_from_message
from workspace.errors import ConfigurationError, ContextOverflowError, ProviderError, deserialize, serialize
from workspace.messages import (
    STOPPED_BEFORE_ANSWERING,
    Message,
    TextMessage,
    ToolCallMessage,
    ToolMessage,
    ToolResultMessage,
    alternating,
)
from workspace.providers import registry
from workspace.providers.base import ToolSpec
from workspace.providers.testing import FunctionProvider
from workspace.robot import Robot
from workspace.schemas import SchemaError
from workspace.templates import Template


@pytest.fixture(autouse=True)
def _fresh_probes() -> Iterator[None]:
    window_module.clear_cache()
    yield
    window_module.clear_cache()


def user(text: str) -> TextMessage:
    return TextMessage(role="user", content=text)


def answer(text: str, stop: str = "stop") -> TextMessage:
    return TextMessage(role="assistant", content=text, stop_reason=stop)


def calls(*names: str, prefix: str = "c") -> tuple[ToolCallMessage, list[ToolResultMessage]]:
    tools = [ToolMessage(id=f"{prefix}{i}", name=n, input={"q": "x" * 20}) for i, n in enumerate(names)]
    return ToolCallMessage(tools=tools), [ToolResultMessage(tool=t, content={"data": "y" * 200}) for t in tools]


def random_conversation(seed: int, turns: int = 12) -> list[Message]:
    rnd = random.Random(seed)
    out: list[Message] = []
    for t in range(turns):
        out.append(user(f"turn {t} " + "u" * rnd.randint(5, 200)))
        for step in range(rnd.randint(0, 3)):
            if rnd.random() < 0.5:
                out.append(answer("thinking " * rnd.randint(1, 5), stop="tool"))
            call, results = calls(*["t"] * rnd.randint(1, 3), prefix=f"{t}_{step}_")
            out += [call, *results]
        if rnd.random() < 0.9:
            out.append(answer("done " * rnd.randint(1, 30)))
    return out


# -- cutting a conversation ----------------------------------------------------------------------


def test_units_keep_calls_with_their_results_and_the_text_before_them() -> None:
    call, results = calls("a", "b")
    messages: list[Message] = [user("hi"), answer("let me look", stop="tool"), call, *results, answer("done"),
                               user("more")]
    assert unit_starts(messages) == [0, 1, 5, 6]
    assert turn_starts(messages) == {0, 6}


@pytest.mark.parametrize("seed", range(20))
def test_a_cut_never_separates_a_call_from_its_result(seed: int) -> None:
    messages = random_conversation(seed)
    counter = TokenCounter()
    for budget in (0, 50, 200, 600, 2000, 10_000):
        for start in (0, len(messages) // 3):
            cut = choose_cut(messages, counter.message, start=start, keep_budget=budget)
            if cut is None:
                continue
            assert start < cut < len(messages)
            assert not messages[cut].is_tool_result and not messages[cut - 1].is_tool_call
            assert not (messages[cut - 1].is_text and messages[cut - 1].stop_reason == "tool")
            kept = counter.messages(messages[cut:])
            turn = cut in turn_starts(messages)
            assert kept <= budget or cut == unit_starts(messages)[-1]  # at least the last unit is kept
            if turn and cut != unit_starts(messages)[-1]:
                later = [i for i in turn_starts(messages) if start < i < cut]
                assert all(counter.messages(messages[i:]) > budget for i in later)  # the most turns that fit


def test_a_cut_prefers_a_turns_start() -> None:
    call, results = calls("a")
    messages: list[Message] = [user("old " * 50), answer("old answer " * 30), user("new"), call, *results,
                               answer("new answer")]
    counter = TokenCounter()
    whole_turn = counter.messages(messages[2:])
    assert choose_cut(messages, counter.message, start=0, keep_budget=whole_turn) == 2
    # less room than the latest turn: a cut inside it, at a unit
    assert choose_cut(messages, counter.message, start=0, keep_budget=whole_turn - 1) == 3
    assert choose_cut(messages, counter.message, start=5, keep_budget=10) is None  # nothing left to cut


def test_the_summary_goes_in_front_of_the_first_kept_message() -> None:
    merged, yes = summary_message("They talked.", user("next question"))
    assert yes and merged.is_user
    assert merged.content == f"{SUMMARY_HEADER}\n\nThey talked.\n\n---\n\nnext question"
    call, _ = calls("a")
    alone, no = summary_message("They talked.", call)
    assert not no and alone.content == f"{SUMMARY_HEADER}\n\nThey talked."


# -- counting -------------------------------------------------------------------------------------


def test_the_estimate_errs_high() -> None:
    from workspace.providers.litellm_provider import token_counter

    count = token_counter("openai/gpt-4o-mini")
    assert count is not None  # litellm has OpenAI's tokenizer
    samples = [
        "The quick brown fox jumps over the lazy dog. " * 40,
        "def add(a: int, b: int) -> int:\n    return a + b\n" * 30,
        json.dumps({"path": "src/app.py", "lines": list(range(200)), "ok": True}),
        "Größenänderung übernehmen, élan, naïve café " * 20,
    ]
    for text in samples:
        assert estimate(text) >= count(text), text[:30]
    assert estimate("日本語のテキスト" * 50) >= len("日本語のテキスト" * 50)  # about a token a character
    assert token_counter("openai/fake") is None  # a local model litellm does not know: estimated


def test_the_estimate_counts_by_its_rule_and_an_ascii_text_with_no_regular_expression(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimate's rule written out (a token per 3.3 characters of words, per mark of punctuation, per 1.3 digits,
    per 2 extra bytes of UTF-8), against every ASCII character and texts of every kind; an ASCII text's digits and
    marks are counted from its bytes, the regular expression of marks not run over it."""
    import math
    import re

    from workspace.context import tokens

    def rule(text: str) -> int:
        digits = sum(text.count(d) for d in "0123456789")
        marks = len(re.findall(r"[^\w\s]", text))
        extra = len(text.encode("utf-8", "replace")) - len(text)
        return math.ceil((len(text) - digits - marks) / 3.3 + extra / 2 + digits / 1.3 + marks)

    samples = [chr(c) * k for c in range(128) for k in (1, 5)]
    samples += ["", "Weather in Oslo?", 'get_weather {"city": "Oslo", "days": 3}', "x = [1, 2, 3]\n\tprint(x)\x00\x7f",
                "Größenänderung übernehmen, élan 42", "日本語のテキスト、句読点。١٢٣ ٣٤", "emoji 😀 and a lone \ud800 surrogate",
                json.dumps({"path": "src/app.py", "lines": list(range(200))}) * 3]
    assert [estimate(text) for text in samples] == [rule(text) for text in samples]

    class Counting:
        def __init__(self) -> None:
            self.runs = 0

        def sub(self, *args: Any) -> str:
            self.runs += 1
            return str(re.compile(r"[^\w\s]").sub(*args))

    counting = Counting()
    monkeypatch.setattr(tokens, "_PUNCTUATION", counting)
    assert estimate('get_weather {"city": "Oslo"}') == rule('get_weather {"city": "Oslo"}')
    assert counting.runs == 0  # (before: the expression ran over every text, and a per-character table for digits)
    assert estimate("Größe: 3 €.") == rule("Größe: 3 €.") and counting.runs == 1


def test_each_message_is_counted_once() -> None:
    seen: list[str] = []

    def encode(text: str) -> int:
        seen.append(text)
        return len(text.split())

    counter = TokenCounter(encode)
    messages = random_conversation(1, turns=5)
    first = counter.messages(messages)
    again = counter.messages(messages)
    assert first == again and len(seen) == len(messages)
    assert counter.tokenizer == "tokenizer"

    def broken(text: str) -> int:
        raise RuntimeError("no")

    fallback = TokenCounter(broken)
    assert fallback.text("abcdef") == estimate("abcdef") and fallback.tokenizer == "estimate"


# -- windows ------------------------------------------------------------------------------------


def test_window_settings_name_a_model_or_the_configured_one() -> None:
    assert window_setting(8192, "openai/x") == 8192
    assert window_setting(8192, "openai/x", default_model="openai/x") == 8192
    assert window_setting(8192, "anthropic/y", default_model="openai/x") is None  # another model's
    mapping = {"openai/x": 4096, "llama3.1": 16384}
    assert window_setting(mapping, "openai/x") == 4096
    assert window_setting(mapping, "ollama_chat/llama3.1") == 16384  # without the prefix
    assert window_setting(mapping, "other") is None and window_setting(None, "x") is None


def test_a_refusal_names_the_window() -> None:
    assert window_from_message("This model's maximum context length is 2048 tokens. However ...") == 2048
    assert window_from_message("Requested tokens (3000) exceed context window of 2048") == 2048
    assert window_from_message("the request exceeds the available context size (n_ctx: 4,096)") == 4096
    assert window_from_message("prompt is too long: 210000 tokens > 200000 maximum") is None
    assert window_from_message("nothing here") is None


def test_the_server_of_a_model() -> None:
    assert server_of("openai/fake", "http://127.0.0.1:8080/v1") == ("http://127.0.0.1:8080", "fake")
    assert server_of("ollama_chat/llama3.1", None) == ("http://localhost:11434", "llama3.1")
    assert server_of("anthropic/claude-x", None) is None  # hosted: litellm's model map says
    assert server_of(None, "http://x") is None


@pytest.mark.parametrize(("model", "answers", "window"), [
    ("ollama_chat/qwen", {"/api/show": {"parameters": "num_ctx 8192\nstop x", "model_info": {}}}, 8192),
    ("ollama_chat/qwen", {"/api/show": {"model_info": {"qwen2.context_length": 32768}},
                          "/api/ps": {"models": [{"name": "qwen", "context_length": 16384}]}}, 16384),
    ("ollama_chat/qwen", {"/api/show": {"model_info": {"qwen2.context_length": 32768}}}, 4096),
    ("openai/m", {"/v1/models": {"data": [{"id": "m", "max_model_len": 32000}]}}, 32000),
    ("openai/m", {"/props": {"default_generation_settings": {"n_ctx": 4096}}}, 4096),
    ("openai/m", {"/api/v0/models/m": {"id": "m", "loaded_context_length": 8192, "max_context_length": 131072}},
     8192),
    ("openai/m", {}, None),
])
def test_each_kind_of_server_is_asked_its_way(monkeypatch: pytest.MonkeyPatch, model: str,
                                              answers: dict[str, Any], window: int | None) -> None:
    asked: list[str] = []

    def fake_get(url: str, *, data: Any = None, timeout: float = 1.0) -> Any:
        path = url.split(":11434", 1)[-1] if ":11434" in url else url.split(":8000", 1)[-1]
        asked.append(path)
        return answers.get(path)

    monkeypatch.setattr(window_module, "_get", fake_get)
    base = None if model.startswith("ollama") else "http://127.0.0.1:8000/v1"
    assert probe_server(model, base) == window
    assert probe_server(model, base) == window
    if window is not None:
        assert len(asked) == len(set(asked))  # answered once, then remembered
    if not model.startswith("ollama"):
        assert "/api/show" not in asked  # a POST is only sent to what looks like Ollama


def test_a_server_that_does_not_answer_is_asked_one_question_not_three() -> None:
    """Each question waits its timeout: a server that answers none (it accepts the connection and
    never reads) would keep a run's first call silent for three timeouts."""
    import socket
    import time

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        started = time.monotonic()
        assert probe_server("openai/m", f"http://127.0.0.1:{silent.getsockname()[1]}/v1") is None
        assert time.monotonic() - started < window_module.PROBE_TIMEOUT * 10  # an anti-hang bound
        silent.setblocking(False)
        asked = 0
        while True:  # the connections the probe opened wait in the backlog (even closed ones)
            try:
                conn, _ = silent.accept()
            except BlockingIOError:
                break
            conn.close()
            asked += 1
        assert asked == 1, asked
    finally:
        silent.close()


async def test_windows_come_from_the_setting_the_server_litellm_or_a_default() -> None:
    with FakeLLMServer(context_window=2048) as server:
        from workspace.providers.litellm_provider import LiteLLMProvider

        local = LiteLLMProvider("openai/fake", api_base=server.base_url + "/v1")
        assert await resolve_window(local) == WindowInfo(2048, "server")
        assert await resolve_window(local, setting=4096) == WindowInfo(4096, "setting")
        server.report_window = False
        window_module.clear_cache()
        assert await resolve_window(local) == WindowInfo(8192, "default")
    hosted = LiteLLMProvider("openai/gpt-4o-mini")
    assert await resolve_window(hosted) == WindowInfo(128_000, "model info")
    assert await resolve_window(FunctionProvider(lambda m, i: "hi")) is None  # a test double: no window
    assert WindowInfo(2048, "learned").describe() == "from the server's refusal"


# -- oversized tool results ------------------------------------------------------------------------


def test_the_result_limit_is_a_share_of_the_window() -> None:
    assert result_limit(None, 50_000) == 50_000
    assert result_limit(2048, 50_000) == 1536
    assert result_limit(1_000_000, 50_000) == 50_000
    assert result_limit(256, None) == 1000  # never below a thousand characters


@pytest.mark.parametrize(("params", "hint"), [
    (("path", "offset", "limit"), "call read again with offset and limit set to go on from line"),
    (("path", "head", "tail"), "call read again with head or tail"),
    ((), "ask for a smaller part"),
])
def test_a_cut_file_read_says_how_to_read_on(params: tuple[str, ...], hint: str) -> None:
    content = "".join(f"line {n}\n" for n in range(1, 100_001))
    call = ToolMessage(id="c1", name="read", input={"path": "f"})
    message = ToolResultMessage(tool=call, content={"data": {"path": "f", "content": content}})
    short = shorten_result_message(message, 2000, params=params)
    assert short is not None and short.tool == call
    text = json.dumps(short.content)
    assert len(text) < 2100 and hint in short.content["data"]["note"]
    data = short.content["data"]
    assert data["truncated"] is True and content.startswith(data["content"]) and data["content"].endswith("\n")
    assert f"of {len(content):,} characters" in data["note"]
    assert message.content["data"]["content"] == content  # the original is untouched


def test_small_results_and_errors() -> None:
    call = ToolMessage(id="c1", name="t", input={})
    assert shorten_result_message(ToolResultMessage(tool=call, content={"data": "ok"}), 1000) is None
    error = ToolResultMessage(tool=call, content={"error": "E" * 10_000})
    short = shorten_result_message(error, 1500)
    assert short is not None and short.is_error and "Cut to fit" in short.error and len(short.error) < 1500


# -- the manager with a test double ----------------------------------------------------------------


def summarising(replies: list[str]) -> FunctionProvider:
    def reply(messages: list[Message], info: Any) -> Any:
        if (info.system or "").startswith(SUMMARY_INSTRUCTIONS.split(".")[0]):
            replies.append("summary")
            return "They discussed turns."
        replies.append("answer")
        return "Answer " + "z" * 300

    return FunctionProvider(reply, model_id="scripted/model")


async def test_without_a_window_nothing_is_counted_or_changed() -> None:
    replies: list[str] = []
    provider = summarising(replies)
    robot = Robot("r", system_prompt="Hi.", provider=provider)
    for i in range(30):
        events = [e async for e in robot.stream(f"message {i} " + "w" * 400)]
        assert not [e for e in events if isinstance(e, ev.ContextUsage | ev.ContextCompacted)]
    assert replies == ["answer"] * 30
    assert len(provider.history[-1].messages) == 59  # the whole conversation, as before


async def test_a_window_setting_compacts_any_provider_and_the_compaction_model_summarises() -> None:
    replies: list[str] = []
    cheap: list[str] = []

    class Cheap:
        name = "cheap"

        def matches(self, model: str | None, api_base: str | None) -> bool:
            return model == "cheap/summariser"

        def create(self, model: str | None, **options: Any) -> Any:
            return FunctionProvider(lambda m, i: cheap.append("summary") or "Short summary.", model_id=str(model))

    registry.register(Cheap())
    try:
        config = load_config(overrides={"llm": {"compaction_model": "cheap/summariser", "compaction_threshold": 0.5}})
        robot = Robot("r", system_prompt="Hi.", provider=summarising(replies), config=config, context_window=2048)
        compacted = []
        for i in range(12):
            compacted += [e async for e in robot.stream(f"message {i} " + "w" * 400)
                          if isinstance(e, ev.ContextCompacted)]
    finally:
        registry.unregister("cheap")
    assert compacted and all(e.model == "cheap/summariser" for e in compacted)
    assert "summary" not in replies and cheap  # the robot's model never summarised
    assert robot.context_manager.threshold == 0.5
    assert all(e.tokens_before > 0.5 * 2048 for e in compacted)


async def test_policies_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="context_policy must be one of compact, truncate, error"):
        Robot("r", system_prompt="x", context_policy="shrink")
    with pytest.raises(ConfigurationError, match="context_window must be a whole number of tokens, at least 256"):
        Robot("r", system_prompt="x", context_window=10)
    with pytest.raises(ValueError, match="threshold"):
        ContextManager(threshold=1.5)
    with pytest.raises(SchemaError) as info:
        Template.parse("---\ncontext_policy: shrink\ncontext_window: 100\n---\nHi", name="t")
    text = str(info.value)
    assert "context_policy" in text and "context_window" in text
    with pytest.raises(ConfigurationError, match="llm.context_policy"):
        load_config(overrides={"llm": {"context_policy": "shrink"}})
    config = load_config(overrides={"llm": {"context_window": {"openai/x": 4096}}})
    robot = Robot("r", system_prompt="x", model="openai/x", config=config)
    assert robot.context_manager.window_setting == 4096
    robot.context_policy = "error"
    assert robot.context_manager.policy == "error"


def test_overflow_errors_are_recognised() -> None:
    assert is_context_overflow(ContextOverflowError("too long"))
    assert is_context_overflow(ProviderError("HTTP 400 — This model's maximum context length is 2048", status_code=400))
    assert is_context_overflow(ProviderError("the stream was empty: prompt exceeds the context size"))
    flagged = ProviderError("llama.cpp answered an empty stream")
    flagged.context_overflow = True  # how another provider may say it
    assert is_context_overflow(flagged)
    assert not is_context_overflow(ProviderError("HTTP 500 — context length unknown", status_code=500))
    assert not is_context_overflow(ProviderError("HTTP 401 — bad key", status_code=401))
    assert not is_context_overflow(ValueError("maximum context length"))
    round_trip = deserialize(serialize(ContextOverflowError("too long")))
    assert isinstance(round_trip, ContextOverflowError) and str(round_trip) == "too long"


async def test_the_litellm_provider_reports_a_context_length_refusal() -> None:
    from workspace.providers.litellm_provider import LiteLLMProvider

    with FakeLLMServer(context_window=256) as server:
        provider = LiteLLMProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test", timeout=10)
        with pytest.raises(ContextOverflowError) as info:
            async for _ in provider.stream(system=None, messages=[user("x " * 2000)], tools=[], settings={}):
                pass
        assert len(server.requests) == 1  # not retried
    assert "maximum context length is 256" in str(info.value) and info.value.status_code == 400


def test_tool_schemas_are_counted_once_each() -> None:
    spec = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
    counter = TokenCounter()
    one = counter.tool(spec)
    assert one > estimate("read_file") and counter.tools([spec, spec]) == 2 * one


def test_the_manager_keeps_the_history_untouched(tmp_path: Path) -> None:
    manager = ContextManager()
    history = random_conversation(3, turns=4)
    kept = list(history)
    # the view is the history itself, but for the assistant's placeholder after an unanswered message
    assert manager.messages_for_model(history) == alternating(history) and history == kept
    assert [m for m in manager.messages_for_model(history) if m.content != STOPPED_BEFORE_ANSWERING] == history
    from workspace.context import Compaction

    manager.restore(Compaction("S", 4))
    view = manager.messages_for_model(history)
    assert view[0].content.startswith(SUMMARY_HEADER) and len(history) == len(random_conversation(3, turns=4))
    manager.restore(Compaction("S", 10_000))  # a history shorter than the compaction: it is dropped on use
    assert manager.messages_for_model(history) == alternating(history) or manager.compaction is not None


def test_an_unanswered_message_gets_a_placeholder_answer_for_the_model() -> None:
    """A run stopped or failed before its first word: never two user messages in a row for the model."""
    call, results = calls("a")
    history: list[Message] = [user("one"), user("two"), answer("ok"), user("three"), answer("looking", stop="tool"),
                              call, *results, user("four")]
    view = ContextManager().messages_for_model(history)
    assert [m.role for m in view] == ["user", "assistant", "user", "assistant", "user", "assistant", "assistant",
                                      "tool_result", "user"]
    assert view[1].content == STOPPED_BEFORE_ANSWERING and view[2] is history[1]
