"""A document store searched by similarity (RobotLab's ``DocumentStore``): texts kept under keys, found by
what a query means (with an embedder) or by the words it shares with them (without one).

::

    docs = DocumentStore()                           # offline: no key, no download
    docs.store("q4", "Q4 revenue came in at $4.2M, up 18% year on year")
    docs.store("q3", "Q3 showed 15% growth, driven by APAC")
    docs.search("revenue growth", limit=2)           # [{"key": ..., "text": ..., "score": ...}, ...]

``embedder=`` is any ``embed(texts) -> vectors`` function, plain or ``async`` (the agent skills' kind): a
local model, or :class:`workspace.providers.embeddings.LiteLLMEmbedder` for a hosted or local embeddings
API (``embedder_for(config)`` gives the one ``llm.embedding_model`` names). With none, each text's vector
is the offline lexical measure's (:mod:`workspace.similarity`: stemmed, stop-word-filtered word counts).
An embedder that fails is logged and that search uses the lexical measure for every document.

Documents are embedded when searched: ``store`` only keeps the text (so it is cheap and never waits on a
network), and the first search embeds every document not embedded yet, in one batch; each vector (the
embedder's, or the lexical measure's word counts) is kept until its document is replaced or deleted. ``search`` works
from plain code and with a plain embedder; inside an event loop with an ``async`` embedder use
``await docs.asearch(...)``. The score is the cosine of the two vectors; a vector that is missing or of
another length than the query's scores 0.0. Results are the first ``limit``, highest score first (documents
stored earlier first among equal scores), whatever their score, as RobotLab's are.

The store is bounded (``max_documents``, ``max_chars`` per text): past either, ``store`` raises a
``ValueError`` saying what to do. Every method is thread-safe.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workspace.similarity import cosine, term_vector

log = logging.getLogger(__name__)

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]] | Awaitable[Sequence[Sequence[float]]]]

#: The most documents a store keeps, by default.
MAX_DOCUMENTS = 10_000
#: The longest text (characters) one document may have, by default.
MAX_CHARS = 1_000_000


@dataclass(slots=True)
class _Document:
    text: str
    vector: list[float] | None = None  # the embedder's (None: not embedded yet, or it failed)
    terms: dict[str, float] | None = None  # the lexical measure's (None: not computed yet)

    def term_vector(self) -> dict[str, float]:
        """The lexical measure's vector of the text, computed once (a replaced text is a new document)."""
        terms = self.terms
        if terms is None:
            terms = self.terms = term_vector(self.text)
        return terms


class DocumentStore:
    """Texts under keys, searched by similarity (see the module)."""

    def __init__(self, embedder: Embedder | None = None, *, max_documents: int = MAX_DOCUMENTS,
                 max_chars: int = MAX_CHARS) -> None:
        for name, value in (("max_documents", max_documents), ("max_chars", max_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"DocumentStore({name}=...) must be a whole number above 0 (got {value!r})")
        if embedder is not None and not callable(embedder):
            raise TypeError(f"DocumentStore(embedder=...) must be a function embed(texts) -> vectors, got "
                            f"{type(embedder).__name__}")
        self.embedder = embedder
        self.max_documents = max_documents
        self.max_chars = max_chars
        self._documents: dict[str, _Document] = {}
        self._lock = threading.RLock()

    # -- the collection ---------------------------------------------------------------------------------
    def store(self, key: Any, text: str) -> DocumentStore:
        """Keep ``text`` under ``key`` (a string, or anything made one), replacing what was there; returns the
        store. Past ``max_documents`` or ``max_chars`` it raises ``ValueError``."""
        name = _key(key)
        if not isinstance(text, str):
            raise TypeError(f"DocumentStore.store({name!r}, ...): the text must be a string, got {type(text).__name__}")
        if len(text) > self.max_chars:
            raise ValueError(f"The document {name!r} has {len(text):,} characters, more than this store takes "
                             f"({self.max_chars:,}): split it into parts stored under keys of their own, or make the "
                             "store with a larger DocumentStore(max_chars=...)")
        with self._lock:
            if name not in self._documents and len(self._documents) >= self.max_documents:
                raise ValueError(f"The document store is full ({self.max_documents:,} documents): delete() or clear() "
                                 f"some before storing {name!r}, or make the store with a larger "
                                 "DocumentStore(max_documents=...)")
            self._documents[name] = _Document(text)
        return self

    def delete(self, key: Any) -> DocumentStore:
        """Remove the document under ``key`` (nothing when there is none); returns the store."""
        with self._lock:
            self._documents.pop(_key(key), None)
        return self

    def clear(self) -> DocumentStore:
        """Remove every document; returns the store."""
        with self._lock:
            self._documents.clear()
        return self

    @property
    def size(self) -> int:
        with self._lock:
            return len(self._documents)

    @property
    def keys(self) -> list[str]:
        """The keys, in the order they were first stored."""
        with self._lock:
            return list(self._documents)

    @property
    def is_empty(self) -> bool:
        with self._lock:
            return not self._documents

    #: RobotLab's ``empty?``.
    empty = is_empty

    def __len__(self) -> int:
        return self.size

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return _key(key) in self._documents

    def get(self, key: Any) -> str | None:
        """The text under ``key`` (None when there is none)."""
        with self._lock:
            document = self._documents.get(_key(key))
            return document.text if document else None

    # -- search -----------------------------------------------------------------------------------------
    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The ``limit`` documents most similar to ``query``: ``[{"key", "text", "score"}]``, highest first.
        With an ``async`` embedder inside an event loop, use :meth:`asearch`."""
        if self.embedder is None or not _is_async(self.embedder):
            return _run_sync(self.asearch(query, limit=limit))
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.asearch(query, limit=limit))
        raise RuntimeError("DocumentStore.search() cannot wait for an async embedder inside a running event loop: "
                           "use 'await store.asearch(query, limit=...)' there")

    async def asearch(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """:meth:`search`, awaiting the embedder."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"DocumentStore.search(limit=...) must be a whole number, 0 or more (got {limit!r})")
        with self._lock:
            snapshot = list(self._documents.items())
        if not snapshot or limit == 0:
            return []
        scores = await self._embedding_scores(str(query), snapshot) if self.embedder is not None else None
        if scores is None:
            wanted = term_vector(str(query))
            scores = [_lexical(wanted, doc.term_vector()) for _, doc in snapshot]
        ranked = sorted(range(len(snapshot)), key=lambda i: -scores[i])  # stable: earlier documents first on ties
        return [{"key": snapshot[i][0], "text": snapshot[i][1].text, "score": scores[i]} for i in ranked[:limit]]

    async def _embedding_scores(self, query: str, snapshot: list[tuple[str, _Document]]) -> list[float] | None:
        """The cosine of the query's vector and each document's, embedding those not embedded yet with the
        query in one call; None when the embedder fails (the lexical measure is used instead)."""
        missing = [doc for _, doc in snapshot if doc.vector is None]
        try:
            vectors = await _embed(self.embedder, [query, *(doc.text for doc in missing)])
        except Exception as exc:
            log.warning("DocumentStore: embedding failed (%s); searching by words instead", exc)
            return None
        query_vector, *new = vectors
        with self._lock:
            for doc, vector in zip(missing, new, strict=True):
                doc.vector = vector  # a document replaced meanwhile is a new _Document: this one is dropped
        return [cosine(query_vector, doc.vector) for _, doc in snapshot]

    def __repr__(self) -> str:
        how = "lexical" if self.embedder is None else repr(self.embedder)
        return f"<DocumentStore {self.size} documents, {how}>"


def _key(key: Any) -> str:
    if key is None or (isinstance(key, str) and not key.strip()):
        raise ValueError("A document's key must be a non-empty string (or a name, a number)")
    return key if isinstance(key, str) else str(key)


def _lexical(query: dict[str, float], document: dict[str, float]) -> float:
    """The cosine of two normalised word vectors (the query's words are few: loop over them)."""
    return sum(weight * document.get(word, 0.0) for word, weight in query.items())


def _is_async(embedder: Any) -> bool:
    """Whether calling ``embedder`` gives a coroutine (an ``async def`` function, or an object whose
    ``__call__`` is one)."""
    return inspect.iscoroutinefunction(embedder) or inspect.iscoroutinefunction(type(embedder).__call__)


async def _embed(embedder: Any, texts: list[str]) -> list[list[float] | None]:
    value = embedder(texts)
    if inspect.isawaitable(value):
        value = await value
    vectors = list(value)
    if len(vectors) != len(texts):
        raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(texts)} texts")
    return [[float(x) for x in v] if v is not None else None for v in vectors]


def _run_sync(coroutine: Any) -> Any:
    """Run a coroutine that never suspends (no async embedder) to its end, inside or outside a loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("DocumentStore.search(): the embedder returned an awaitable; use 'await store.asearch(...)'")


__all__ = ["MAX_CHARS", "MAX_DOCUMENTS", "DocumentStore"]
