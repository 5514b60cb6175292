"""The loopback server's ``POST /v1/embeddings`` (OpenAI's embeddings API, as OpenAI, vLLM, llama.cpp and
Ollama's OpenAI route answer it): ``{"model", "input": text or [texts], "encoding_format"}`` ->
``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}], "model", "usage"}``.

The vectors are deterministic and offline: each word (lower-case letters and digits) is hashed (CRC-32) into
one of :data:`DIMENSIONS` buckets, the counts L2-normalised, so texts that share words are near and texts
that share none are orthogonal. With ``"encoding_format": "base64"`` (what the openai SDK asks for by
default) each vector is the base64 of its little-endian float32 values, as real servers send it.
"""

from __future__ import annotations

import base64
import math
import re
import struct
import zlib
from typing import Any

#: The length of every vector.
DIMENSIONS = 64
_WORD = re.compile(r"[a-z0-9]+")


def embed_text(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The fake embedding of ``text`` (all zeros when it has no words)."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        vector[zlib.crc32(word.encode()) % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def embeddings_response(body: Any) -> tuple[int, dict[str, Any]]:
    """The status and JSON body answering an embeddings request ``body``."""
    request = body if isinstance(body, dict) else {}
    given = request.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return 400, {"error": {"message": "'input' must be a string or a non-empty list of strings",
                               "type": "invalid_request_error"}}
    base64_wanted = request.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = embed_text(text)
        encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if base64_wanted \
            else vector
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    tokens = sum(len(_WORD.findall(t.lower())) for t in texts)
    return 200, {"object": "list", "data": data, "model": str(request.get("model") or "fake-embed"),
                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
