"""Model answers cached by request, so a re-run of an eval costs nothing (``--no-cache``: not used,
``--refresh``: asked again and stored anew).

The key is a SHA-256 of the canonical request: the model id, the system prompt, the messages, the tools
and the settings, with what differs between two runs of the same case made the same (the case's temporary
folder is ``<folder>``, tool call ids are numbered in order) and secret-looking settings left out. The
answer is stored as its chunks (text, thinking, tool calls, usage, finish), redacted like everything that
leaves the process. One SQLite file, ``eval-cache.db`` in the user's cache folder (:func:`workspace.paths.cache_dir`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.providers.base import (
    Chunk,
    FinishChunk,
    ProviderBase,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)

if TYPE_CHECKING:
    from workspace.messages import Message
    from workspace.providers.base import Provider

__all__ = ["AnswerCache", "CachingProvider", "request_key"]

CACHE_FILE = "eval-cache.db"
_KINDS: dict[str, type[Any]] = {"text": TextChunk, "reasoning": ReasoningChunk, "tool_call": ToolCallChunk,
                                "usage": UsageChunk, "finish": FinishChunk}
_NAMES = {cls: name for name, cls in _KINDS.items()}
_SECRET_WORDS = ("key", "token", "secret", "password", "authorization", "header", "cookie", "credential")


def _public_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if not any(word in str(k).lower() for word in _SECRET_WORDS)}


def request_key(model: str, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                settings: Mapping[str, Any], replace: Mapping[str, str] | None = None) -> str:
    """The cache key of a request (see the module); each key of ``replace`` (the case's temporary folder, its
    change set's id) is read as its value, so two runs of a case ask the same."""
    from workspace.messages import ToolCallMessage

    request = {
        "model": model,
        "system": system,
        "messages": [m.to_dict() for m in messages],
        "tools": [{"name": t.name, "description": t.description, "parameters": dict(t.parameters)} for t in tools],
        "settings": _public_settings(settings),
    }
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, default=str)
    ids = [tool.id for m in messages if isinstance(m, ToolCallMessage) for tool in m.tools if tool.id]
    for number, call_id in enumerate(dict.fromkeys(ids), 1):
        text = text.replace(json.dumps(call_id), f'"call-{number}"')
    for old, new in (replace or {}).items():
        if old:
            text = text.replace(old, new)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chunk_dict(chunk: Chunk) -> dict[str, Any] | None:
    name = _NAMES.get(type(chunk))
    if name is None:  # status chunks (waits, retries) are not part of the answer
        return None
    return {"kind": name, **dataclasses.asdict(chunk)}


def _chunk(data: Mapping[str, Any]) -> Chunk:
    fields = dict(data)
    cls = _KINDS[str(fields.pop("kind"))]
    chunk: Chunk = cls(**fields)
    return chunk


class AnswerCache:
    """The SQLite file of cached answers; ``hits`` and ``misses`` count this run's lookups."""

    def __init__(self, path: str | Path | None = None, *, refresh: bool = False) -> None:
        if path is None:
            from workspace.paths import cache_dir

            path = cache_dir() / CACHE_FILE
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.refresh = refresh
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                         "chunks TEXT NOT NULL, created REAL NOT NULL)")

    def get(self, key: str) -> list[Chunk] | None:
        if self.refresh:
            return None
        with self._lock:
            row = self._db.execute("SELECT chunks FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return [_chunk(item) for item in json.loads(row[0])]

    def put(self, key: str, model: str, chunks: Sequence[Chunk]) -> None:
        from workspace.secrets import redact

        items = [d for d in (_chunk_dict(c) for c in chunks) if d is not None]
        text = redact(json.dumps(items, ensure_ascii=False))
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers (key, model, chunks, created) VALUES (?, ?, ?, ?)",
                             (key, model, text, time.time()))

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachingProvider(ProviderBase):
    """``inner`` with its answers served from ``cache`` when the same request was answered before."""

    def __init__(self, inner: Provider, cache: AnswerCache, *, replace: Mapping[str, str] | None = None,
                 on_lookup: Callable[[bool], None] | None = None) -> None:
        self.inner = inner
        self.cache = cache
        self.replace = dict(replace or {})
        self.on_lookup = on_lookup
        self.label = inner.label
        self.model_id = inner.model_id
        self.supports_tools = inner.supports_tools
        self.supports_streaming = inner.supports_streaming
        self.is_language_model = inner.is_language_model
        self.api_base = inner.api_base
        self.supports_response_schema = inner.supports_response_schema

    @property
    def is_local(self) -> bool | None:
        return self.inner.is_local

    def supports_vision(self) -> bool | None:
        return self.inner.supports_vision()

    def context_window(self) -> int | None:
        return self.inner.context_window()

    def known_context_window(self) -> tuple[bool, int | None]:
        return self.inner.known_context_window()

    def token_counter(self) -> Callable[[str], int] | None:
        return self.inner.token_counter()

    def known_token_counter(self) -> tuple[bool, Callable[[str], int] | None]:
        return self.inner.known_token_counter()

    def check_key(self) -> None:
        self.inner.check_key()

    async def stream(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     settings: Mapping[str, Any]) -> AsyncIterator[Chunk]:
        key = request_key(self.model_id, system=system, messages=messages, tools=tools, settings=settings,
                          replace=self.replace)
        cached = self.cache.get(key)
        if self.on_lookup is not None:
            self.on_lookup(cached is not None)
        if cached is not None:
            self.cache.hits += 1
            for chunk in cached:
                yield chunk
            return
        self.cache.misses += 1
        chunks: list[Chunk] = []
        async for chunk in self.inner.stream(system=system, messages=messages, tools=tools, settings=settings):
            chunks.append(chunk)
            yield chunk
        self.cache.put(key, self.model_id, chunks)  # only a whole answer: a failed call raised above
