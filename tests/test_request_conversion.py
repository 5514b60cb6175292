"""A model call late in a long thread converts only what is new: each message's OpenAI form is made once
(:class:`~workspace.providers.openai_format.MessageConverter`) and reused while the message is sent, a message
replaced (a compaction, an edited turn, a redaction) is converted again, and what is sent and recorded is what
converting the whole conversation afresh gives."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tests.fakes.counted_reads import CountedReads
from workspace import events as ev
from workspace.context.requests import RequestRecorder, resolve
from workspace.messages import Message, TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage
from workspace.providers.base import ToolSpec
from workspace.providers.litellm_process import encode_request
from workspace.providers.openai_format import MessageConverter, to_openai_messages
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.providers.testing import ScriptedProvider

TOOLS = [ToolSpec(name="lookup", description="Look it up", parameters={"type": "object", "properties": {}})]


def turn(i: int, *, tools: bool = False) -> list[Message]:
    """A turn: the question, and the answer (with a tool call after some text and its result, when ``tools``)."""
    out: list[Message] = [TextMessage(role="user", content=f"Question {i}")]
    if tools:
        call = ToolMessage(id=f"call_{i}", name="lookup", input={"q": i})
        out += [TextMessage(role="assistant", content=f"Looking {i} up"),
                ToolCallMessage(role="assistant", tools=[call]),
                ToolResultMessage(tool=call, content={"data": f"result {i}"}),
                ToolCallMessage(role="assistant", tools=[ToolMessage(id=None, name="lookup", input={"again": i})])]
    out.append(TextMessage(role="assistant", content=f"Answer {i}"))
    return out


def thread(turns: int) -> list[Message]:
    return [m for i in range(turns) for m in turn(i, tools=i % 3 == 0)]


def test_a_longer_call_converts_only_the_new_messages_and_reuses_the_dicts() -> None:
    converter = MessageConverter()
    messages = thread(30)
    first = converter.convert("sys", messages)
    assert converter.converted == len(messages)
    assert first == to_openai_messages("sys", messages)
    longer = messages + turn(30, tools=True)
    second = converter.convert("sys", longer)
    assert converter.converted == len(longer)  # the 6 new messages only
    assert second == to_openai_messages("sys", longer)
    assert all(a is b for a, b in zip(first, second, strict=False))  # the same dicts: compared by identity
    # A tool call made right after text, in the next call: merged with that text as a fresh conversion does.
    text = TextMessage(role="assistant", content="Let me look")
    call = ToolCallMessage(role="assistant", tools=[ToolMessage(id="c9", name="lookup", input={})])
    converter.convert("sys", [*longer, text])
    merged = converter.convert("sys", [*longer, text, call])
    assert merged == to_openai_messages("sys", [*longer, text, call])
    assert merged[-1]["tool_calls"][0]["id"] == "c9" and merged[-1]["content"] == "Let me look"
    # The newest messages read back as new objects (as a session does with its last turn): only they are
    # converted, also when the one replaced was merged into the text before it.
    count = converter.converted
    call2 = ToolCallMessage(role="assistant", tools=[ToolMessage(id="c9", name="lookup", input={})])
    answer = [TextMessage(role="assistant", content="Found it")]
    again = converter.convert("sys", [*longer, text, call2, *answer])
    assert again == to_openai_messages("sys", [*longer, text, call2, *answer])
    assert converter.converted - count == 2
    assert all(a is b for a, b in zip(again[:-2], second, strict=False))


def test_a_replaced_message_is_converted_again() -> None:
    converter = MessageConverter()
    messages = thread(20)
    converter.convert("sys", messages)
    before = converter.converted
    # A compaction: the first 30 messages become one summary; an edited turn and a redaction: new objects.
    compacted = [TextMessage(role="user", content="Summary of the start"), *messages[30:]]
    compacted[5] = TextMessage(role="user", content="edited question")
    compacted[9] = TextMessage(role="assistant", content="[redacted]")
    out = converter.convert("sys", compacted)
    assert out == to_openai_messages("sys", compacted)
    assert converter.converted - before == 3  # the summary, the edited turn and the redaction
    # Another conversation on the same converter, and back: each keeps its own.
    other = thread(5)
    assert converter.convert(None, other) == to_openai_messages(None, other)
    again = converter.convert("sys", [*compacted, *turn(99)])
    assert again == to_openai_messages("sys", [*compacted, *turn(99)])
    # Other options (a provider's empty content, a shorter tool result) never get another's dicts.
    assert converter.convert("sys", compacted, empty_content=None) == to_openai_messages("sys", compacted,
                                                                                         empty_content=None)
    assert converter.convert("sys", compacted, max_result_chars=3) == to_openai_messages("sys", compacted,
                                                                                         max_result_chars=3)


def record_all(recorder: RequestRecorder, provider: Any, calls: Sequence[list[Message]]) -> list[ev.ModelRequest]:
    return [recorder.record(provider, system="sys", messages=m, tools=TOOLS, settings={"temperature": 0.2})
            for m in calls]


def comparable(events: Sequence[ev.ModelRequest]) -> list[Any]:
    return [(e.body, e.messages, e.reused_messages, e.reused_keys) for e in events]


def fresh_recorder() -> RequestRecorder:
    recorder = RequestRecorder()
    recorder.converter = MessageConverter(keep=0)  # no cache: every call converts the whole conversation
    return recorder


def test_requests_recorded_through_the_cache_equal_those_recorded_without_it() -> None:
    messages = thread(200)
    calls = [messages[:n] for n in range(300, len(messages) + 1, 50)]
    compacted = [TextMessage(role="user", content="Summary"), *messages[400:]]
    calls += [compacted, [*compacted, *turn(500, tools=True)]]
    for make in (lambda: ScriptedProvider(default="ok"),  # no build_request: the recorder's own conversion
                 lambda: OpenAICompatibleProvider("openai/m", api_base="http://127.0.0.1:9/v1")):
        cached, plain = make(), make()
        plain.converter = MessageConverter(keep=0)  # type: ignore[union-attr]  # the lean provider's own
        with_cache = record_all(RequestRecorder(), cached, calls)
        without = record_all(fresh_recorder(), plain, calls)
        assert comparable(with_cache) == comparable(without)
        whole_with = list(resolve(with_cache).values())
        whole_without = list(resolve(without).values())
        assert [{k: v for k, v in w.items() if k != "model"} for w in whole_with] == [
            {k: v for k, v in w.items() if k != "model"} for w in whole_without]
        assert len(whole_with[-1]["messages"]) == len(to_openai_messages("sys", calls[-1]))
        assert with_cache[-2].reused_messages == 1  # after the compaction: only the system prompt is the same
    # The lean provider converted each message once: the second call only the new ones.
    provider = OpenAICompatibleProvider("openai/m", api_base="http://127.0.0.1:9/v1")
    recorder = RequestRecorder()
    record_all(recorder, provider, [messages[:300]])
    record_all(recorder, provider, [messages[:310]])
    assert provider.converter.converted == 310


def test_the_wire_bytes_are_those_of_a_fresh_conversion() -> None:
    provider = OpenAICompatibleProvider("openai/m", api_base="http://127.0.0.1:9/v1")
    messages = thread(40)
    for n in (50, 100, len(messages)):
        body = provider.build_request(system="sys", messages=messages[:n], tools=TOOLS, settings={})
        fresh = dict(body, messages=to_openai_messages("sys", messages[:n]))
        assert json.dumps(body).encode() == json.dumps(fresh).encode()
        assert encode_request({"op": "stream", "request": body}) == encode_request({"op": "stream", "request": fresh})


class _Counted(dict[str, Any]):
    """A message dict that counts how often it is compared by value."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _Counted.compared += 1
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None


class _SameDicts:
    """A provider whose body's messages are the same dict objects at every call (as the cache gives)."""

    model_id = "m"

    def __init__(self) -> None:
        self.sent = [_Counted(role="user", content=f"m{i}") for i in range(1_000)]

    def build_request(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                      settings: Mapping[str, Any]) -> dict[str, Any]:
        return {"model": "m", "messages": self.sent[: len(messages)]}


def test_the_recorder_compares_the_same_dicts_by_identity() -> None:
    provider = _SameDicts()
    recorder = RequestRecorder()
    messages = [TextMessage(role="user", content=f"m{i}") for i in range(900)]
    recorder.record(provider, system=None, messages=messages[:800], tools=[], settings={})  # type: ignore[arg-type]
    _Counted.compared = 0
    event = recorder.record(provider, system=None, messages=messages, tools=[], settings={})  # type: ignore[arg-type]
    assert event.reused_messages == 800
    assert _Counted.compared == 0


def test_the_lean_providers_body_bytes_are_the_sdks_and_only_new_messages_are_written() -> None:
    from openai._utils._json import openapi_dumps

    provider = OpenAICompatibleProvider("openai/m", api_base="http://127.0.0.1:9/v1")
    messages = [*thread(40), TextMessage(role="user", content='ünïcode "quotes" \\ and \n newlines 😀')]
    n_written, n_sent = [], []
    for end in (60, 100, len(messages)):
        body = provider.build_request(system="sys", messages=messages[:end], tools=TOOLS, settings={"top_p": 0.5})
        assert provider.encoder.encode(body) == openapi_dumps(body)
        n_written.append(provider.encoder.written)
        n_sent.append(len(body["messages"]))
    assert n_written == n_sent  # each call wrote only the dicts the one before did not send
    compacted = [TextMessage(role="user", content="Summary"), *messages[50:]]
    body = provider.build_request(system="sys", messages=compacted, tools=TOOLS, settings={})
    assert provider.encoder.encode(body) == openapi_dumps(body)


def test_a_body_is_written_by_one_encoder_made_once(monkeypatch: Any) -> None:
    # json.dumps with options makes a new encoder at each call: a body's dozen values made a dozen a model call.
    from openai._utils._json import openapi_dumps

    provider = OpenAICompatibleProvider("openai/m", api_base="http://127.0.0.1:9/v1")
    body = provider.build_request(system="sys", messages=thread(3), tools=TOOLS,
                                  settings={"top_p": 0.5, "stop": ["ü", "\n"], "tool_choice": "lookup"})
    expected = openapi_dumps(body)
    made: list[object] = []
    real_init = json.JSONEncoder.__init__

    def counting_init(self: json.JSONEncoder, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONEncoder, "__init__", counting_init)
    assert provider.encoder.encode(body) == expected
    assert made == []


def test_a_longer_call_reads_only_the_new_messages_of_a_long_conversation() -> None:
    # A thread of 2,000 turns sent again one turn longer (its newest message read back as a new object, as a
    # session does): the converter finds the part it shares with the last call without walking the 4,000
    # messages, and extends its kept lists in place.
    converter = MessageConverter()
    messages = [m for i in range(2_000) for m in turn(i)]
    first = converter.convert("sys", CountedReads(messages))
    longer = [*messages[:-1], TextMessage(role="assistant", content="Answer 1999"), *turn(2_000)]
    CountedReads.reads, count = 0, converter.converted
    second = converter.convert("sys", CountedReads(longer))
    assert converter.converted - count == 3
    assert CountedReads.reads < 50  # the 3 new messages and a binary search's few (4,003 before)
    assert second == to_openai_messages("sys", longer)
    assert all(a is b for a, b in zip(first[:-1], second, strict=False))
    assert first == to_openai_messages("sys", messages)  # the list returned before is the caller's, unchanged


def test_the_request_recorded_and_the_one_sent_are_one_build_found_without_a_walk_of_the_conversation() -> None:
    # A model call builds its body once: for the record (the inspector's), then for the send, of the same list of
    # messages. The second finds the first by that list, its length and its ends: not a copy of 4,000 messages
    # kept with the body and a walk of them all at every call.
    provider = OpenAICompatibleProvider("openai/bench", api_base="http://127.0.0.1:9/v1")
    messages = CountedReads([m for i in range(2_000) for m in turn(i)])
    CountedReads.reads = 0
    recorded = provider.prepared_request(system="sys", messages=messages, tools=[], settings={})
    first = CountedReads.reads
    CountedReads.reads = 0
    assert provider.prepared_request(system="sys", messages=messages, tools=[], settings={}) is recorded
    assert CountedReads.reads < 10, CountedReads.reads
    assert first < 4_000 + 50, first  # the conversion's one read of each message, and no copy of them
    # Another list (a later call's, one turn longer) is built again.
    longer = CountedReads([*messages, *turn(2_000)])
    again = provider.prepared_request(system="sys", messages=longer, tools=[], settings={})
    assert again is not recorded and len(again["messages"]) == len(recorded["messages"]) + 2
