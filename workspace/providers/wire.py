"""What crosses the pipe between the window's process and litellm's own (:mod:`.litellm_process`,
:mod:`.litellm_host`): one JSON object per line.

A request is ``{"id": N, "op": ..., ...}``; its answers carry the same ``id``: ``{"chunk": {...}}`` for
each chunk of a stream, then ``{"done": true}``; ``{"result": ...}`` for the other ops; ``{"error":
{...}}`` when it failed. ``{"id": N, "op": "cancel"}`` stops request N (a closed stream, Stop).

Chunks travel as their dataclass fields plus ``type`` (the class name); a provider's error keeps its
class (:class:`ProviderError`, :class:`ContextOverflowError`: compaction depends on it) and fields.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from workspace.errors import ContextOverflowError, ProviderError
from workspace.providers.base import (
    Chunk,
    FinishChunk,
    ReasoningChunk,
    StatusChunk,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)

__all__ = ["chunk_from_dict", "chunk_to_dict", "decode", "dumps", "encode", "error_from_dict", "error_to_dict", "joined",
           "joined_parts",
           "tool_from_dict", "tool_to_dict"]

_CHUNKS: dict[str, type[Any]] = {cls.__name__: cls for cls in (TextChunk, ReasoningChunk, ToolCallChunk, UsageChunk,
                                                                FinishChunk, StatusChunk)}
#: Built-in exceptions rebuilt as themselves (a bad setting's ValueError stays a ValueError).
_BUILTIN = {cls.__name__: cls for cls in (ValueError, TypeError, KeyError, RuntimeError, TimeoutError, OSError)}


def dumps(value: Any) -> str:
    """A value's JSON as a line of the pipe writes it. Raises ``TypeError`` naming what cannot be sent."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode(message: Mapping[str, Any]) -> bytes:
    """One line of the pipe. Raises ``TypeError`` naming what cannot be sent (never sends it altered)."""
    return dumps(message).encode("utf-8") + b"\n"


def joined(head: Mapping[str, Any], body: bytes) -> bytes:
    """The line of ``head``'s fields followed by those of ``body`` (a line :func:`encode` made of an
    object; ``ValueError`` for anything else): a large body (a request with an image) can be encoded in a
    worker thread ahead of its request id. A key of both is sent twice; a reader keeps the last
    (``json.loads``): the body's."""
    return b"".join(joined_parts(head, body))


def joined_parts(head: Mapping[str, Any], body: bytes) -> tuple[bytes | memoryview, ...]:
    """:func:`joined`'s line in the pieces it is made of, written one after the other: the body is not copied
    (megabytes at turn 10,000; a fresh copy of them costs milliseconds of page faults)."""
    if not (body.startswith(b"{") and body.endswith(b"}\n")):
        raise ValueError(f"not a line of an encoded object: {body[:40]!r}…{body[-10:]!r}")
    if body == b"{}\n":
        return (encode(head),)
    if not head:
        return (body,)
    return encode(head)[:-2] + b",", memoryview(body)[1:]


def decode(line: bytes) -> tuple[int, dict[str, Any]]:
    """A line of the pipe: its request id and the whole message. ``ValueError`` for a line that is not one
    (what it was, cut to 200 characters)."""
    try:
        message = json.loads(line)
        return int(message["id"]), message
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{exc}: {line[:200]!r}") from exc


def chunk_to_dict(chunk: Chunk) -> dict[str, Any]:
    out = {f.name: getattr(chunk, f.name) for f in dataclasses.fields(chunk)}
    out["type"] = type(chunk).__name__
    return out


def chunk_from_dict(data: Mapping[str, Any]) -> Chunk:
    fields = dict(data)
    cls = _CHUNKS.get(str(fields.pop("type", "")))
    if cls is None:
        raise ProviderError(f"litellm's process sent a chunk of an unknown type: {data.get('type')!r}")
    chunk: Chunk = cls(**fields)
    return chunk


def tool_to_dict(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "parameters": dict(spec.parameters)}


def tool_from_dict(data: Mapping[str, Any]) -> ToolSpec:
    return ToolSpec(name=str(data["name"]), description=str(data.get("description") or ""),
                    parameters=data.get("parameters") or {"type": "object", "properties": {}})


def error_to_dict(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {"class": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ProviderError):
        out.update(provider=exc.provider, status_code=exc.status_code, retryable=exc.retryable, reason=exc.reason,
                   overflow=bool(exc.context_overflow))
    if isinstance(exc, ContextOverflowError):
        out["window"] = exc.window
    return out


def error_from_dict(data: Mapping[str, Any]) -> BaseException:
    """The error as the provider raised it in its process: its class where it is one of ours or a
    built-in one, else a :class:`ProviderError` with its message."""
    name = str(data.get("class") or "")
    message = str(data.get("message") or "litellm's process reported an error without a message")
    if name == "ContextOverflowError":
        return ContextOverflowError(message, provider=data.get("provider"), status_code=data.get("status_code"),
                                    window=data.get("window"), reason=str(data.get("reason") or "context"))
    if "reason" in data or name == "ProviderError":
        error = ProviderError(message, provider=data.get("provider"), status_code=data.get("status_code"),
                              retryable=bool(data.get("retryable")), reason=data.get("reason"))
        if data.get("overflow"):
            error.context_overflow = True
        return error
    builtin = _BUILTIN.get(name)
    if builtin is not None:
        return builtin(message)
    return ProviderError(f"{message} ({name} in litellm's process)" if name else message)
