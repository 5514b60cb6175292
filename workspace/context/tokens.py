"""Counting tokens: the model's tokenizer where one is known, else an estimate that errs high.

:class:`TokenCounter` counts what a request sends: the system prompt, each message as the provider
puts it on the wire (text; a tool call's name and JSON arguments; a tool result's text) and the tool
schemas. Every message is counted once: the count is kept by the message object (messages are not
changed once made), so counting a 200-turn thread again before the next call costs a lookup per
message. The counts of the message view the manager sends are corrected from what the server
reports (see :class:`workspace.context.budget.Budget`).

The estimate (:func:`estimate`) errs high: about 1.1 to 1.6 times what OpenAI's tokenizer counts for
prose, code, JSON, numbers, hex and CJK text alike, so the window fills up after the estimate says
so, not before; the server's own counts then correct it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from workspace.messages import GrowingFold, Message, json_text, result_text

__all__ = ["CHARS_PER_TOKEN", "IMAGE_TOKENS", "MESSAGE_OVERHEAD", "TokenCounter", "biggest_tools", "content_text",
           "estimate", "image_parts", "result_text", "tool_costs", "wire_text"]

#: Characters of words per estimated token.
CHARS_PER_TOKEN = 3.3
#: Tokens a message costs besides its text (role, separators of the chat template).
MESSAGE_OVERHEAD = 4
#: Tokens one tool call costs besides its name and arguments (id, type, wrapping).
CALL_OVERHEAD = 8
#: Tokens one tool schema costs besides its JSON (wrapping).
TOOL_OVERHEAD = 8
#: Tokens one attached image is counted as (see workspace.attachments.IMAGE_TOKENS: the same number).
IMAGE_TOKENS = 1_600
#: Counts kept at most (a long-lived robot's history is counted again after this many new messages).
CACHE_LIMIT = 50_000


_PUNCTUATION = re.compile(r"[^\w\s]")
#: The ASCII characters ``_PUNCTUATION`` does not match (word characters and white space): left out of an ASCII
#: text's bytes, what remains is its marks of punctuation.
_ASCII_WORD_OR_SPACE = bytes(c for c in range(128) if not _PUNCTUATION.match(chr(c)))
#: The digits as bytes: in UTF-8 they stand only for themselves (a character of several bytes has none of these).
_DIGIT_BYTES = b"0123456789"


def estimate(text: str) -> int:
    """Tokens of ``text`` by the safe estimate: a token per 3.3 characters of words, a token per mark of
    punctuation, per 1.3 digits, per 2 extra bytes of non-ASCII text. Above the count of OpenAI's
    tokenizer for prose (by about 40 %), code, JSON, numbers, hex and other scripts alike.

    The digits and the marks are counted by leaving them out of the text's bytes (``bytes.translate``, in C), not by
    a pass of Python's per-character tables (an ASCII text's marks too; another's by the regular expression):
    the same count, about 5 times faster for a short message and 20 times for a long file."""
    if not text:
        return 0
    n = len(text)
    if text.isascii():
        raw = text.encode("ascii")
        digits = n - len(raw.translate(None, _DIGIT_BYTES))
        marks = len(raw.translate(None, _ASCII_WORD_OR_SPACE))
        extra = 0
    else:
        raw = text.encode("utf-8", "replace")
        digits = len(raw) - len(raw.translate(None, _DIGIT_BYTES))
        marks = n - len(_PUNCTUATION.sub("", text))
        extra = len(raw) - n
    return math.ceil((n - digits - marks) / CHARS_PER_TOKEN + extra / 2 + digits / 1.3 + marks)


def content_text(content: Any) -> str:
    """A message's content as text: a string as is; content parts (a message with attachments) as their
    text parts joined, an image as ``[image]`` (its name is in the text part before it)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                texts.append(str(part.get("text") or ""))
            elif isinstance(part, Mapping) and part.get("type") == "image_url":
                texts.append("[image]")
            else:
                texts.append(json_text(part))
        return "\n\n".join(texts)
    return json_text(content)


def image_parts(content: Any) -> int:
    """How many image parts a message's content has."""
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, Mapping) and p.get("type") == "image_url")


def wire_text(message: Message) -> str:
    """The text of ``message`` that reaches the model (what is counted)."""
    if message.is_tool_call:
        return "\n".join(f"{t.name} {json_text(t.input)}"
                         for t in message.tools)  # type: ignore[attr-defined]
    if message.is_tool_result:
        kept = getattr(message, "text", None)  # a ToolResultMessage's, written once; a plain Message has none
        return kept if isinstance(kept, str) else result_text(message.content)
    return content_text(message.content)


class TokenCounter:
    """Counts tokens with ``encode`` (a function returning the token count of a text: the model's
    tokenizer) or, without one, :func:`estimate`; message counts are kept per message object."""

    __slots__ = ("_messages", "_sum", "_tools", "blocking", "encode", "tokenizer")

    def __init__(self, encode: Callable[[str], int] | None = None, *, tokenizer: str | None = None) -> None:
        self.encode = encode
        #: ``encode`` waits for another process (litellm's, in the window): count in a worker thread first.
        self.blocking = bool(getattr(encode, "blocking", False))
        #: What counts: the tokenizer's name, or "estimate".
        self.tokenizer = tokenizer or ("tokenizer" if encode is not None else "estimate")
        # id(message) -> (message, tokens): the message is held so its id is not reused meanwhile.
        self._messages: dict[int, tuple[Message, int]] = {}
        self._tools: dict[tuple[str, str, int], int] = {}
        # A conversation counted again one turn longer adds only its new messages' counts.
        self._sum: GrowingFold[int] = GrowingFold(0, lambda total, message: total + self.message(message))

    def text(self, text: str) -> int:
        if not text:
            return 0
        if self.encode is not None:
            try:
                return int(self.encode(text))
            except Exception:  # a tokenizer that fails once is not asked again: estimate from now on
                self.encode = None
                self.tokenizer = "estimate"
        return estimate(text)

    def message(self, message: Message) -> int:
        key = id(message)
        found = self._messages.get(key)
        if found is not None and found[0] is message:
            return found[1]
        tokens = MESSAGE_OVERHEAD + self.text(wire_text(message))
        if message.is_text:  # attached images: a fixed estimate each (their data URL is not text to count)
            tokens += IMAGE_TOKENS * image_parts(message.content)
        if message.is_tool_call:
            tokens += CALL_OVERHEAD * len(message.tools)  # type: ignore[attr-defined]
        if len(self._messages) >= CACHE_LIMIT:
            self._messages.clear()
        self._messages[key] = (message, tokens)
        return tokens

    def messages(self, messages: Iterable[Message]) -> int:
        if isinstance(messages, list | tuple):
            return self._sum(messages)
        return sum(self.message(m) for m in messages)

    def counted(self, message: Message) -> bool:
        """Whether ``message`` was counted already."""
        found = self._messages.get(id(message))
        return found is not None and found[0] is message

    def tools(self, specs: Sequence[Any]) -> int:
        """Tokens of the tool schemas (``ToolSpec``: name, description, parameters)."""
        total = 0
        for spec in specs:
            name = str(getattr(spec, "name", ""))
            description = str(getattr(spec, "description", "") or "")
            parameters = getattr(spec, "parameters", None)
            key = (name, description,
                   len(parameters) if type(parameters) is dict or isinstance(parameters, Mapping) else 0)
            tokens = self._tools.get(key)
            if tokens is None:
                body = json.dumps(parameters or {}, ensure_ascii=False, default=str, separators=(",", ":"))
                tokens = TOOL_OVERHEAD + self.text(name) + self.text(description) + self.text(body)
                self._tools[key] = tokens
            total += tokens
        return total

    def tool(self, spec: Any) -> int:
        """Tokens one tool schema costs (for showing each tool's cost)."""
        return self.tools([spec])


def _spec_of(tool: Any) -> Any:
    """A tool's schema: a ``ToolSpec`` as is, a :class:`~workspace.tools.Tool` through ``spec()``."""
    spec = getattr(tool, "spec", None)
    if callable(spec):
        return spec()
    parameters = getattr(tool, "parameters", None)
    if isinstance(parameters, Mapping) and not isinstance(parameters, dict):  # an MCP server's ToolInfo
        from types import SimpleNamespace

        return SimpleNamespace(name=getattr(tool, "name", ""), description=getattr(tool, "description", ""),
                               parameters=dict(parameters))
    return tool


def tool_costs(tools: Iterable[Any], counter: TokenCounter | None = None) -> dict[str, int]:
    """What each tool's schema (name, description, JSON schema of its parameters) costs in tokens of the
    model's window, counted as the context manager counts a request (``counter``: the model's
    :class:`TokenCounter`; default: the safe estimate). ``tools``: ``Tool`` objects, ``ToolSpec`` s, or
    anything with ``name``, ``description`` and ``parameters`` (an MCP server's ``ToolInfo``).
    Name -> tokens, costliest first; the sum is what a request's tool schemas take."""
    counter = counter if counter is not None else _DEFAULT_COUNTER
    costs = {str(getattr(spec, "name", "")): counter.tool(spec) for spec in map(_spec_of, tools)}
    return dict(sorted(costs.items(), key=lambda item: (-item[1], item[0])))


def biggest_tools(tools: Iterable[Any], counter: TokenCounter | None = None, *, count: int = 3) -> dict[str, int]:
    """The ``count`` costliest tool schemas (see :func:`tool_costs`)."""
    return dict(list(tool_costs(tools, counter).items())[:count])


#: The estimate's counter (tool schema counts are kept by name, description and size).
_DEFAULT_COUNTER = TokenCounter()
