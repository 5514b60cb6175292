"""Compaction: older messages summarised by a model into one summary message.

A conversation is cut only between *units*: a user message; an assistant text; an assistant's tool
calls together with every result answering them (and the text the model wrote just before those
calls). So a tool call is never separated from its result, and a cut preferably falls where a user
message starts a turn, keeping the latest turns whole.

:func:`summarise` asks the model (or a cheaper ``llm.compaction_model``) for the summary, in as many
requests as the model's window needs: each carries the summary so far and the next part of the
transcript. When the model cannot answer, a plain list of what happened stands in for the summary,
so the conversation still goes on.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workspace.context.tokens import content_text, estimate, result_text
from workspace.messages import Message, TextMessage
from workspace.providers.base import TextChunk, UsageChunk
from workspace.providers.text_calls import ThinkSplitter

__all__ = [
    "SUMMARY_HEADER",
    "SUMMARY_INSTRUCTIONS",
    "Compaction",
    "choose_cut",
    "fallback_summary",
    "render_unit",
    "summarise",
    "summary_message",
    "turn_starts",
    "unit_starts",
]

log = logging.getLogger("workspace.context")

#: The system prompt of a summary request (the loopback test server recognises its first words).
SUMMARY_INSTRUCTIONS = """\
You compact conversations. The conversation below between a user and an AI assistant (with the \
tools it called) has grown too long for the assistant's context window. Write a summary that lets \
the assistant carry on without the original messages. Keep: the user's requests and goals (quote \
the most recent request word for word), decisions made, facts learned, the names of files, \
functions, commands and values that still matter, what the tools returned that is still needed, \
what was done and what is left to do. Leave out greetings and anything that was superseded. If a \
summary of the earlier part is given, fold it in: your summary replaces it. Write plain text, at \
most {words} words. Do not answer the user and do not call tools: only summarise."""

#: The first line of the summary message the model is sent in place of the compacted messages.
SUMMARY_HEADER = ("[Summary of the earlier conversation. The older messages were compacted to fit the "
                  "context window; they are still in the thread, but you only have this summary of them.]")
#: Between the summary and the user's message when both go in one message.
SEPARATOR = "\n\n---\n\n"


@dataclass(frozen=True, slots=True)
class Compaction:
    """The model is sent ``summary`` in place of the first ``upto`` messages of the conversation."""

    summary: str
    upto: int


def unit_starts(messages: Sequence[Message]) -> list[int]:
    """The index where each unit of ``messages`` starts (see the module docstring)."""
    starts: list[int] = []
    i, n = 0, len(messages)
    while i < n:
        starts.append(i)
        message = messages[i]
        j = i + 1
        if (message.is_text and message.is_assistant and message.stop_reason == "tool"
                and j < n and messages[j].is_tool_call):
            message = messages[j]
            j += 1
        if message.is_tool_call or message.is_tool_result:
            while j < n and messages[j].is_tool_result:
                j += 1
        i = j
    return starts


def turn_starts(messages: Sequence[Message], starts: Sequence[int] | None = None) -> set[int]:
    """The unit starts where a user message begins a turn."""
    units = unit_starts(messages) if starts is None else starts
    return {i for i in units if messages[i].is_user and messages[i].is_text}


def choose_cut(messages: Sequence[Message], tokens: Callable[[Message], int], *, start: int,
               keep_budget: int) -> int | None:
    """Where to cut ``messages`` so that what is kept after the cut costs at most ``keep_budget``
    tokens (by ``tokens``), keeping as much as fits: at a turn's start if one fits, else at a unit's
    start (within the latest turn), else only the last unit. The cut is after ``start`` (messages
    before it are summarised already) and before the end. None: nothing can be cut."""
    units = unit_starts(messages)
    turns = turn_starts(messages, units)
    n = len(messages)
    kept = 0
    best_turn: int | None = None
    best_unit: int | None = None
    bounds = [*units, n]
    for index in range(len(units) - 1, -1, -1):
        begin, end = bounds[index], bounds[index + 1]
        if begin <= start:
            break
        kept += sum(tokens(m) for m in messages[begin:end])
        if kept > keep_budget:
            break
        best_unit = begin
        if begin in turns:
            best_turn = begin
    if best_turn is not None:
        return best_turn
    if best_unit is not None:
        return best_unit
    last = units[-1] if units else None
    return last if last is not None and last > start else None


def summary_message(summary: str, first: Message | None) -> tuple[Message, bool]:
    """The message standing for the compacted ones; with ``first`` (the first message kept) a user text,
    one message with both (so user and assistant keep taking turns). Returns ``(message, merged)``."""
    body = f"{SUMMARY_HEADER}\n\n{summary.strip()}"
    if first is not None and first.is_user and first.is_text and isinstance(first.content, str):
        return TextMessage(role="user", content=f"{body}{SEPARATOR}{first.content}"), True
    return TextMessage(role="user", content=body), False


# --------------------------------------------------------------------------------------------
# The transcript a summary is written from


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} […{len(text) - limit:,} more characters]"


def render_unit(messages: Sequence[Message], *, result_chars: int = 1500) -> str:
    """Messages as transcript lines for the summary request (long tool results shortened)."""
    lines: list[str] = []
    for message in messages:
        if message.is_tool_call:
            for call in message.tools:  # type: ignore[attr-defined]
                args = json.dumps(call.input, ensure_ascii=False, default=str)
                lines.append(f"Assistant called the tool {call.name} with {_cut(args, result_chars)}")
        elif message.is_tool_result:
            tool = message.tool  # type: ignore[attr-defined]
            what = "Error from" if message.is_error else "Result of"  # type: ignore[attr-defined]
            lines.append(f"{what} {tool.name}: {_cut(result_text(message.content), result_chars)}")
        else:
            content = content_text(message.content)
            who = "User" if message.is_user else "Assistant" if message.is_assistant else message.role.capitalize()
            lines.append(f"{who}: {_cut(content, result_chars * 4)}")
    return "\n".join(lines)


def fallback_summary(previous: str | None, messages: Sequence[Message], *, reason: str, limit: int = 4000) -> str:
    """A summary without a model: the earlier summary, then a line per user message and tool call."""
    lines: list[str] = [f"(The model could not write this summary ({reason}); it lists what happened.)"]
    if previous:
        lines.append(previous.strip())
    for message in messages:
        if message.is_tool_call:
            lines += [f"- The assistant called {c.name}." for c in message.tools]  # type: ignore[attr-defined]
        elif message.is_text and message.is_user:
            lines.append(f"- The user wrote: {_cut(content_text(message.content), 300)}")
        elif message.is_text and message.is_assistant:
            lines.append(f"- The assistant answered: {_cut(str(message.content or ''), 200)}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: limit // 3] + "\n…\n" + text[-(limit * 2) // 3:]


async def _ask(provider: Any, *, previous: str | None, transcript: str, words: int, max_tokens: int,
               usage: list[UsageChunk]) -> str:
    parts = []
    if previous:
        parts.append(f"Summary of the conversation before this part:\n{previous.strip()}")
    parts.append(f"The conversation to summarise:\n<conversation>\n{transcript}\n</conversation>")
    parts.append("Write the summary now.")
    request = TextMessage(role="user", content="\n\n".join(parts))
    text: list[str] = []
    splitter = ThinkSplitter()  # a reasoning model's <think> block is not part of the summary
    async for chunk in provider.stream(system=SUMMARY_INSTRUCTIONS.format(words=words), messages=[request],
                                       tools=[], settings={"max_tokens": max_tokens}):
        if isinstance(chunk, TextChunk):
            text.append(splitter.feed(chunk.text)[0])
        elif isinstance(chunk, UsageChunk):
            usage.append(chunk)
    text.append(splitter.flush()[0])
    summary = "".join(text).strip()
    if not summary:
        raise ValueError("the model's summary was empty")
    return summary


async def summarise(provider: Any, messages: Sequence[Message], *, previous: str | None, input_budget: int,
                    max_tokens: int, usage: list[UsageChunk] | None = None) -> tuple[str, str | None]:
    """The summary of ``previous`` (an earlier summary) and ``messages``, written by ``provider``'s model
    in requests of at most about ``input_budget`` tokens each, answered in at most ``max_tokens``.
    Returns ``(summary, problem)``: ``problem`` says why a plain list stands in for a summary. The
    usage the requests reported is added to ``usage``."""
    spent: list[UsageChunk] = usage if usage is not None else []
    words = max(60, int(max_tokens * 0.6))
    overhead = estimate(SUMMARY_INSTRUCTIONS) + 60
    result_chars = max(300, min(4000, input_budget // 4))
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    # Each request carries the summary so far (at most max_tokens, or the earlier one) and a part.
    room = max(200, input_budget - overhead - max(estimate(previous or ""), max_tokens))
    starts = [*unit_starts(messages), len(messages)]
    for begin, end in itertools.pairwise(starts):
        text = render_unit(messages[begin:end], result_chars=result_chars)
        cost = estimate(text) + 1
        if current and size + cost > room:
            chunks.append("\n".join(current))
            current, size = [], 0
        current.append(text)
        size += cost
    if current:
        chunks.append("\n".join(current))
    summary = previous
    try:
        for transcript in chunks:
            summary = await _ask(provider, previous=summary, transcript=transcript, words=words,
                                 max_tokens=max_tokens, usage=spent)
    except Exception as exc:
        problem = str(exc) or type(exc).__name__
        log.warning("compaction: the model could not summarise (%s); a plain list stands in", problem)
        return fallback_summary(previous, messages, reason=problem), problem
    return summary or "", None
