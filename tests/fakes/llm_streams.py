"""The loopback server's answers as the two APIs write them: a whole JSON body, or the streamed events
(OpenAI's ``data: {...}`` chunks ending with ``data: [DONE]``; Anthropic's ``message_start`` ...
``message_stop``), text in pieces and tool-call arguments in fragments."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from .llm_replies import Reply
from .llm_tokens import estimate_tokens

_ids = itertools.count(1)


def split_text(text: str, size: int | None) -> list[str]:
    if not text:
        return []
    if size:
        return [text[i:i + size] for i in range(0, len(text), size)]
    pieces: list[str] = []
    current = ""
    for ch in text:
        current += ch
        if ch == " ":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def split_args(args: str, fragments: int) -> list[str]:
    if not args:
        return [""]
    n = max(1, min(fragments, len(args)))
    step = -(-len(args) // n)
    return [args[i:i + step] for i in range(0, len(args), step)]


def openai_answer(reply: Reply, request: dict[str, Any], *, prompt_tokens: Callable[[dict[str, Any]], int],
                  stream_usage: bool) -> dict[str, Any] | Iterator[bytes]:
    """OpenAI's chat completion for ``reply``: the JSON body, or (a streamed request) its SSE events.
    ``prompt_tokens`` counts the request's prompt as the server does; ``stream_usage`` False: never a usage chunk."""
    model = str(request.get("model") or "fake")
    rid = f"chatcmpl-fake{next(_ids)}"
    created = int(time.time())
    calls = [(c.id or f"call_fake{next(_ids)}", c) for c in reply.tool_calls]
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    prompt, completion = reply.usage if isinstance(reply.usage, tuple) else (
        prompt_tokens(request),
        max(1, (len(reply.text) + len(reply.reasoning)
                + sum(len(c.arguments_json()) + len(c.name) for _, c in calls)) // 4))
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if reply.reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": max(1, len(reply.reasoning) // 4)}
    if not request.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments_json()}} for cid, c in calls]
        return {
            "id": rid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage}
    include_usage = (bool((request.get("stream_options") or {}).get("include_usage")) and reply.usage is not False
                     and stream_usage)

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        payload = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason,
                                "logprobs": None}]}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def events() -> Iterator[bytes]:
        yield chunk({"role": "assistant", "content": ""})
        for piece in split_text(reply.reasoning, reply.chunk_size):
            yield chunk({reply.reasoning_field: piece})
        for piece in split_text(reply.text, reply.chunk_size):
            yield chunk({"content": piece})
        for index, (cid, call) in enumerate(calls):
            yield chunk({"tool_calls": [{"index": index, "id": cid, "type": "function",
                                         "function": {"name": call.name, "arguments": ""}}]})
            for fragment in split_args(call.arguments_json(), reply.fragments):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
        yield chunk({}, finish)
        if include_usage:
            payload = {"id": rid, "object": "chat.completion.chunk", "created": created,
                       "model": model, "choices": [], "usage": usage}
            yield b"data: " + json.dumps(payload).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"

    return events()


def anthropic_answer(reply: Reply, request: dict[str, Any]) -> dict[str, Any] | Iterator[bytes]:
    """Anthropic's message for ``reply``: the JSON body, or (a streamed request) its SSE events."""
    model = str(request.get("model") or "claude-fake")
    mid = f"msg_fake{next(_ids)}"
    calls = [(c.id or f"toolu_fake{next(_ids)}", c) for c in reply.tool_calls]
    stop = reply.finish_reason or ("tool_use" if calls else "end_turn")
    prompt, completion = reply.usage if isinstance(reply.usage, tuple) else (
        estimate_tokens([request.get("system"), request.get("messages", [])]),
        max(1, (len(reply.text) + sum(len(c.arguments_json()) + len(c.name) for _, c in calls)) // 4))
    if not request.get("stream"):
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for cid, call in calls:
            try:
                parsed: Any = json.loads(call.arguments_json() or "{}")
            except ValueError:
                parsed = {}
            content.append({"type": "tool_use", "id": cid, "name": call.name, "input": parsed})
        return {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion}}

    def event(name: str, payload: dict[str, Any]) -> bytes:
        return b"event: " + name.encode() + b"\ndata: " + json.dumps(payload).encode() + b"\n\n"

    def events() -> Iterator[bytes]:
        yield event("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": 1}}})
        index = 0
        if reply.reasoning:
            yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "thinking", "thinking": ""}})
            for piece in split_text(reply.reasoning, reply.chunk_size):
                yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "thinking_delta", "thinking": piece}})
            yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": {"type": "signature_delta", "signature": "sig"}})
            yield event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        if reply.text:
            yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "text", "text": ""}})
            for piece in split_text(reply.text, reply.chunk_size):
                yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "text_delta", "text": piece}})
            yield event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        for cid, call in calls:
            yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "tool_use", "id": cid,
                                                                  "name": call.name, "input": {}}})
            for fragment in split_args(call.arguments_json(), reply.fragments):
                yield event("content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": fragment}})
            yield event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        yield event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": completion}})
        yield event("message_stop", {"type": "message_stop"})

    return events()
