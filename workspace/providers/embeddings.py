"""Embeddings through litellm: an ``embed(texts) -> vectors`` function for a model id, as the agent skills'
catalog and the :class:`~workspace.documents.DocumentStore` take.

:func:`embedder_for` reads the configuration: ``llm.embedding_model`` (a litellm model id such as
``openai/text-embedding-3-small``, or ``openai/<name>`` on an OpenAI-compatible server) and
``llm.embedding_api_base`` (that server; None: the provider's own). With no ``embedding_model`` it gives
None, and the callers use the offline lexical measure (:mod:`workspace.similarity`), which needs no key.

The key is the provider's variable (``OPENAI_API_KEY``, ...) or the one kept in Settings, sent with the
call and never put in the environment; an error is raised as :class:`~workspace.errors.ProviderError`
with secrets masked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workspace.errors import ProviderError
from workspace.providers.base import ConfigLookup

#: The key sent to a server of one's own that asks for none (as the chat providers do).
PLACEHOLDER_KEY = "sk-no-key-required"


class LiteLLMEmbedder:
    """``await embedder(texts)``: one vector per text, in order, from ``model`` through litellm's
    ``aembedding``."""

    def __init__(self, model: str, *, api_base: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, user_key: bool = True) -> None:
        """``user_key=False``: ``api_base`` is not an address the user configured (the opened folder's file
        named it): none of the user's keys (environment, keyring) is sent there, only ``api_key`` if given."""
        if not model or not str(model).strip():
            raise ValueError("LiteLLMEmbedder needs a model id (e.g. 'openai/text-embedding-3-small'); "
                             "set llm.embedding_model in the configuration")
        self.model = str(model).strip()
        self.api_base = api_base or None
        self._api_key = api_key
        self.timeout = float(timeout)
        self.user_key = bool(user_key)

    def _key(self) -> str | None:
        if self._api_key:
            return self._api_key
        if not self.user_key:  # an address the user did not configure: none of their keys goes there
            return PLACEHOLDER_KEY if self.api_base else None
        from workspace import secrets

        var = secrets.key_var_for(self.model)
        key = secrets.get_key(var) if var else None
        return key or (PLACEHOLDER_KEY if self.api_base else None)

    async def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        items = [str(t) for t in texts]
        if not items:
            return []
        from workspace.providers.litellm_provider import load_litellm
        from workspace.shared_imports import import_in_thread

        litellm = await import_in_thread(load_litellm)
        request: dict[str, Any] = {"model": self.model, "input": items, "timeout": self.timeout, "num_retries": 0}
        if self.api_base:
            request["api_base"] = self.api_base
        key = self._key()
        if key:
            request["api_key"] = key
        try:
            response = await litellm.aembedding(**request)
        except Exception as exc:
            from workspace.secrets import redact

            raise ProviderError(f"Embeddings from {self.model} failed: {redact(str(exc))[:500]}",
                                provider=self.model) from None
        return _vectors(response, len(items), self.model)

    def __repr__(self) -> str:
        return f"<LiteLLMEmbedder {self.model!r}{' at ' + self.api_base if self.api_base else ''}>"


def _vectors(response: Any, expected: int, model: str) -> list[list[float]]:
    """The vectors of an embeddings response (OpenAI's shape: ``data[i].embedding``, ordered by ``index``)."""
    data = response.get("data") if isinstance(response, dict) else getattr(response, "data", None)
    rows: list[tuple[int, list[float]]] = []
    for position, item in enumerate(data or []):
        get = item.get if isinstance(item, dict) else lambda name, i=item: getattr(i, name, None)
        vector = get("embedding")
        index = get("index")
        if not isinstance(vector, list):
            raise ProviderError(f"Embeddings from {model}: item {position} has no 'embedding' list", provider=model)
        rows.append((index if isinstance(index, int) else position, [float(x) for x in vector]))
    if len(rows) != expected:
        raise ProviderError(f"Embeddings from {model}: {len(rows)} vectors for {expected} texts", provider=model)
    return [vector for _, vector in sorted(rows, key=lambda row: row[0])]


def embedder_for(config: ConfigLookup | None) -> LiteLLMEmbedder | None:
    """The embedder ``llm.embedding_model`` names (at ``llm.embedding_api_base``), or None when none is set."""
    if config is None:
        return None
    model = config.get("llm.embedding_model")
    if not model:
        return None
    base = config.get("llm.embedding_api_base") or None
    return LiteLLMEmbedder(str(model), api_base=base, user_key=_key_may_go(config, base))


def _key_may_go(config: ConfigLookup, base: str | None) -> bool:
    """Whether the user's key may go to ``base``: not when the opened folder's ``.robotlab/config.yaml`` named it,
    unless the user configured the same address (as :func:`workspace.urls.key_may_go` decides for chat models)."""
    from workspace.urls import from_folder_config, normal_base, user_api_bases

    if not base or not from_folder_config(config, "llm.embedding_api_base"):
        return True
    return normal_base(base) in user_api_bases(config)


__all__ = ["LiteLLMEmbedder", "embedder_for"]
