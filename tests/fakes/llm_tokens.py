"""The loopback server's token counts: about 4 characters a token, or a deterministic tokenizer and chat
template (:func:`tokenize`, :func:`template_tokens`) as a llama.cpp server counts them."""

from __future__ import annotations

import json
import re
from typing import Any


def estimate_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


#: The fake tokenizer's pieces: a word (with the space before it) in pieces of up to 6 letters, up to 3
#: digits, one mark of punctuation, a run of other white space: about what a BPE tokenizer of a local model
#: (Llama, Qwen) counts for English prose and code.
TOKEN_PIECES = re.compile(r" ?[A-Za-z]{1,6}| ?\d{1,3}|\s+|[^\sA-Za-z\d]")
#: Tokens the fake chat template adds per message (``<|im_start|>role\n`` ... ``<|im_end|>\n``).
TEMPLATE_TOKENS = 5


def tokenize(text: str) -> list[int]:
    """The fake server's deterministic tokenizer (what ``POST /tokenize`` answers): token ids of ``text``."""
    return [sum(piece.encode()) % 32_000 for piece in TOKEN_PIECES.findall(text)]


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return json.dumps(message)
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content else ""
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {} if isinstance(call, dict) else {}
        text += f"\n{function.get('name', '')} {function.get('arguments', '')}"
    return text


def template_tokens(request: dict[str, Any]) -> int:
    """The prompt's tokens by the fake tokenizer, as a llama.cpp server counts them: each message's text
    and its template tokens, the tool schemas' JSON, and the assistant's header."""
    tokens = sum(len(tokenize(_message_text(m))) + TEMPLATE_TOKENS for m in request.get("messages") or ())
    if request.get("tools"):
        tokens += len(tokenize(json.dumps(request["tools"], separators=(",", ":"))))
    return tokens + 3
