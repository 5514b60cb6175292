"""Tool calls written as text, and ``<think>`` blocks, recognised in what a model wrote."""

from __future__ import annotations

import pytest

from workspace.providers.text_calls import ThinkSplitter, find_text_calls

TOOLS = ["get_weather", "add", "list_files"]
PARAMS = {"get_weather": ["city"], "add": ["a", "b"], "list_files": ["path"]}


@pytest.mark.parametrize(("text", "style"), [
    ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>', "Hermes <tool_call>"),
    ('<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}', "Hermes <tool_call>"),
    ('[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Oslo"}}]', "Mistral [TOOL_CALLS]"),
    ('[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}', "Mistral [TOOL_CALLS]"),
    ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}}', "Llama <|python_tag|>"),
    ('<function=get_weather>{"city": "Oslo"}</function>', "Llama <function=…>"),
    ('```tool_code\nget_weather(city="Oslo")\n```', "Gemma ```tool_code```"),
    ('```tool_code\nprint(get_weather("Oslo"))\n```', "Gemma ```tool_code```"),
])
def test_the_chat_templates_forms(text: str, style: str) -> None:
    found = find_text_calls(f"Let me look that up.\n{text}", TOOLS, parameters=PARAMS)
    assert found.style == style
    assert [(c.name, c.arguments) for c in found.calls] == [("get_weather", {"city": "Oslo"})]
    assert found.text == "Let me look that up."


@pytest.mark.parametrize("text", [
    '{"name": "get_weather", "parameters": {"city": "Oslo"}}',
    '  {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}\n',
    '[{"name": "get_weather", "parameters": {"city": "Oslo"}}]',
])
def test_a_bare_json_call_is_a_call_only_as_the_whole_message(text: str) -> None:
    found = find_text_calls(text, TOOLS, parameters=PARAMS)
    assert found.style == "JSON" and [(c.name, c.arguments) for c in found.calls] == [("get_weather", {"city": "Oslo"})]
    assert found.text == ""
    after_prose = find_text_calls(f"The call looks like this:\n{text}", TOOLS, parameters=PARAMS)
    assert not after_prose.calls


def test_several_calls_in_one_answer() -> None:
    text = ('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>\n'
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>')
    found = find_text_calls(text, TOOLS)
    assert [c.name for c in found.calls] == ["add", "get_weather"] and found.text == ""


@pytest.mark.parametrize("text", [
    "The weather in Oslo is mild today.",
    '```python\nprint("hello")\n```',
    # Code examples: a call in a fenced block of a programming language (or none) is an example, not a call.
    '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```',
    '```python\nget_weather(city="Oslo")\n```',
    '```\nget_weather(city="Oslo")\n```',
    "Here is how:\n```python\ndef list_files():\n    return []\n```\n```python\nlist_files()\n```",
    # A template's marker shown in a code example or in inline code is not a call either.
    'Qwen writes:\n```\n<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>\n```',
    'Qwen writes `<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>` for a call.',
    'Mistral uses\n~~~\n[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Oslo"}}]\n~~~',
    '{"name": "Ada", "arguments": {"age": 3}}',            # not a tool of this run
    "Use get_weather(city='Oslo') to find out.",            # prose, not a fenced call
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    found = find_text_calls(text, TOOLS, parameters=PARAMS)
    assert not found.calls and found.attempted is None and found.text == text


def test_a_marker_without_a_readable_call_is_an_attempt() -> None:
    found = find_text_calls('<tool_call>{"name": "search_web", "arguments": {"q": "x"}}</tool_call>', TOOLS)
    assert not found.calls and found.attempted == "Hermes <tool_call>"
    broken = find_text_calls('<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>', TOOLS)
    assert not broken.calls and broken.attempted == "Hermes <tool_call>"


def split(pieces: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    text, thought = "", ""
    for piece in pieces:
        t, r = splitter.feed(piece)
        text, thought = text + t, thought + r
    t, r = splitter.flush()
    return text + t, thought + r


@pytest.mark.parametrize("pieces", [
    ["<think>I should greet.</think>\n\nHello!"],
    ["<", "th", "ink>", "I should ", "greet.", "</", "thi", "nk>", "\n\nHel", "lo!"],
    ["\n<think>", "I should greet.", "</think>", "Hello!"],
    ["<thinking>I should greet.</thinking>Hello!"],
])
def test_think_blocks_become_thinking(pieces: list[str]) -> None:
    assert split(pieces) == ("Hello!", "I should greet.")


def test_text_without_a_think_block_passes_at_once() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("Hello ") == ("Hello ", "")
    assert splitter.feed("<think>not at the start</think>") == ("<think>not at the start</think>", "")
    assert split(["<b>bold</b> start"]) == ("<b>bold</b> start", "")
    assert split(["<thin", "g>"]) == ("<thing>", "")


def test_an_unfinished_think_block_is_all_thinking() -> None:
    assert split(["<think>still thinking when the stream ended"]) == ("", "still thinking when the stream ended")
