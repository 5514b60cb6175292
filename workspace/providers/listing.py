"""The models that are actually available: what Settings and the composer's model picker offer.

:func:`list_models` asks, concurrently and with a short timeout:

- the configured local server (``llm.api_base``, else the default address of the model's local
  provider, e.g. ``ollama_chat/`` -> ``http://localhost:11434``): Ollama's ``GET /api/tags`` on its
  base, any OpenAI-compatible server's ``GET /v1/models`` (LM Studio at :1234, vLLM, llama.cpp,
  Ollama's ``/v1``);
- litellm's known chat models of each hosted provider whose API key is set (in the environment or
  the system keyring, :mod:`workspace.secrets`); a provider without a key is never listed. litellm's
  model map is read without importing litellm (:func:`~workspace.providers.litellm_provider.known_chat_models`).

Answers are cached per endpoint for a while (:data:`CACHE_SECONDS`; a failure for less,
:data:`FAILURE_SECONDS`); ``refresh=True`` asks again. Nothing here raises into its caller: a
source that fails is a :class:`ModelSource` with a ``problem`` that says what to do ("no server at
http://localhost:11434: start Ollama ('ollama serve') or check the address in Settings").
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workspace.urls import LOCAL_DEFAULT_BASES, probe_opener

__all__ = [
    "CACHE_SECONDS",
    "ModelEntry",
    "ModelListing",
    "ModelSource",
    "clear_cache",
    "hosted_models",
    "list_models",
    "local_models",
    "server_kind",
]

log = logging.getLogger("workspace.providers.listing")

#: Seconds a server's list (or litellm's, per provider) is kept before it is asked again.
CACHE_SECONDS = 120.0
#: Seconds a failure is kept (a server being started is seen soon).
FAILURE_SECONDS = 10.0
#: Seconds one question to a server may take.
TIMEOUT = 2.0
#: Model prefixes a local OpenAI-compatible server's models keep (the rest get ``openai/``).
_OPENAI_PREFIXES = ("openai", "lm_studio", "lmstudio", "hosted_vllm", "llamafile", "custom_openai")


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One model to offer: ``id`` as a robot or Settings takes it (``ollama_chat/llama3.1``,
    ``anthropic/claude-sonnet-4-5``), where it comes from (``source``: the :class:`ModelSource`'s name)
    and the server's address for a local model."""

    id: str
    source: str
    api_base: str | None = None
    #: Shown next to the id ("3.8 GB", "local"), may be empty.
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ModelSource:
    """Where models were asked for: a local server (``endpoint`` its address) or a hosted provider.
    ``problem`` says why it gave no list, and what to do."""

    name: str
    kind: str  # "ollama", "openai-compatible", "hosted"
    endpoint: str | None = None
    models: tuple[ModelEntry, ...] = ()
    problem: str | None = None
    #: When the answer was got (time.time()).
    at: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class ModelListing:
    """Every source asked, in order (local servers first), and their models."""

    sources: tuple[ModelSource, ...] = ()

    @property
    def models(self) -> list[ModelEntry]:
        """The models of every source, without repeats (the first source naming one wins)."""
        seen: set[str] = set()
        out: list[ModelEntry] = []
        for source in self.sources:
            for entry in source.models:
                if entry.id not in seen:
                    seen.add(entry.id)
                    out.append(entry)
        return out

    @property
    def ids(self) -> list[str]:
        return [entry.id for entry in self.models]

    @property
    def problems(self) -> list[str]:
        """Why sources failed, each naming its fix."""
        return [source.problem for source in self.sources if source.problem]

    def find(self, model_id: str) -> ModelEntry | None:
        return next((entry for entry in self.models if entry.id == model_id), None)


# --------------------------------------------------------------------------------------------
# The cache


_cache: dict[tuple[str, str], ModelSource] = {}
_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every answer (tests; Settings' Refresh passes ``refresh=True`` instead)."""
    with _lock:
        _cache.clear()


def _cached(key: tuple[str, str], refresh: bool) -> ModelSource | None:
    if refresh:
        return None
    with _lock:
        found = _cache.get(key)
    if found is None:
        return None
    age = time.time() - found.at
    return found if age < (FAILURE_SECONDS if found.problem else CACHE_SECONDS) else None


def _keep(key: tuple[str, str], source: ModelSource) -> ModelSource:
    with _lock:
        _cache[key] = source
    return source


# --------------------------------------------------------------------------------------------
# Local servers


def server_kind(model: str | None, api_base: str | None) -> str:
    """``"ollama"`` for an Ollama server (its model prefix, or its port 11434 without a ``/v1`` path), else
    ``"openai-compatible"``."""
    prefix = (model or "").split("/", 1)[0].lower() if "/" in (model or "") else ""
    if prefix in ("ollama", "ollama_chat"):
        return "ollama"
    base = (api_base or "").rstrip("/")
    return "ollama" if ":11434" in base and not base.endswith("/v1") else "openai-compatible"


def _root(base: str) -> str:
    root = base.rstrip("/")
    for suffix in ("/v1", "/api"):
        if root.endswith(suffix):
            root = root[: -len(suffix)]
    return root


class _Unreachable(Exception):
    """Nothing accepted the connection (or it timed out)."""


def _fetch(url: str, timeout: float) -> tuple[int, Any]:
    """GET ``url``: (status, JSON or None). Raises :class:`_Unreachable` when no server answers."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    opener = probe_opener(url)  # no proxy for this machine, no redirect followed
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(5_000_000)
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code), None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise _Unreachable(str(getattr(exc, "reason", exc))) from None
    try:
        return status, json.loads(body or b"null")
    except ValueError:
        return status, None


def _ollama_entries(data: Any, base: str, prefix: str) -> list[ModelEntry] | None:
    entries = data.get("models") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    out: list[ModelEntry] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name") or entry.get("model") or "")
        if not name:
            continue
        if name.endswith(":latest"):
            name = name[: -len(":latest")]
        size = entry.get("size")
        detail = f"{size / 1e9:.1f} GB" if isinstance(size, int | float) and size > 0 else ""
        out.append(ModelEntry(f"{prefix}/{name}", source=base, api_base=base, detail=detail))
    return out


def _openai_entries(data: Any, base: str, prefix: str | None) -> list[ModelEntry] | None:
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    out: list[ModelEntry] = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("id"):
            continue
        name = str(entry["id"])
        window = next((entry.get(k) for k in ("max_model_len", "context_length", "max_context_length")
                       if isinstance(entry.get(k), int)), None)
        detail = f"{window:,} tokens" if window else ""
        out.append(ModelEntry(f"{prefix}/{name}" if prefix else name, source=base, api_base=base, detail=detail))
    return out


def _unreachable(base: str, kind: str) -> str:
    start = "start Ollama ('ollama serve')" if kind == "ollama" else "start the server"
    return f"no server at {base}: {start} or check the address (API base) in Settings"


def _ask_server(base: str, kind: str, prefix: str | None, timeout: float) -> ModelSource:
    """Blocking: the list of the server at ``base``."""
    root = _root(base)
    label = ("Ollama" if kind == "ollama" else "Local server") + f" at {base}"
    if kind == "ollama":
        try:
            status, data = _fetch(f"{root}/api/tags", timeout)
        except _Unreachable:
            return ModelSource(label, kind, base, problem=_unreachable(base, kind))
        found = _ollama_entries(data, base, prefix or "ollama_chat") if status == 200 else None
        if found is not None:
            return ModelSource(label, kind, base, tuple(found))
        # Not Ollama after all (or an old one): its OpenAI-compatible list.
    url = f"{base.rstrip('/')}/models" if base.rstrip("/").endswith("/v1") else f"{root}/v1/models"
    try:
        status, data = _fetch(url, timeout)
    except _Unreachable:
        return ModelSource(label, kind, base, problem=_unreachable(base, kind))
    if status in (401, 403):
        return ModelSource(label, kind, base, problem=f"the server at {base} refused to list its models (HTTP "
                           f"{status}): check its API key, or type the model id in Settings")
    found = _openai_entries(data, base, prefix) if status == 200 else None
    if found is None:
        return ModelSource(label, kind, base, problem=f"the server at {base} does not list its models (GET {url}: "
                           f"HTTP {status}): check the address (API base) in Settings, or type the model id")
    return ModelSource(label, kind, base, tuple(found))


def _local_target(model: str | None, api_base: str | None) -> tuple[str, str, str | None] | None:
    """(base, kind, prefix of the listed ids) of the configured local server, or None."""
    prefix = (model or "").split("/", 1)[0].lower() if "/" in (model or "") else ""
    base = api_base or LOCAL_DEFAULT_BASES.get(prefix)
    if not base:
        return None
    kind = server_kind(model, base)
    if kind == "ollama":
        return base, kind, prefix if prefix in ("ollama", "ollama_chat") else "ollama_chat"
    if prefix in _OPENAI_PREFIXES:
        return base, kind, prefix
    bare = bool(model) and "/" not in (model or "")
    return base, kind, None if bare else "openai"


async def local_models(model: str | None = None, api_base: str | None = None, *, refresh: bool = False,
                       timeout: float = TIMEOUT) -> ModelSource | None:
    """The configured local server's models (None: no local server is configured)."""
    target = _local_target(model, api_base)
    if target is None:
        return None
    base, kind, prefix = target
    key = ("server", f"{kind} {base} {prefix}")
    found = _cached(key, refresh)
    if found is not None:
        return found
    try:
        source = await asyncio.wait_for(asyncio.to_thread(_ask_server, base, kind, prefix, timeout), timeout + 1.0)
    except TimeoutError:
        source = ModelSource(f"Local server at {base}", kind, base, problem=_unreachable(base, kind))
    except Exception as exc:  # never into the caller: a source that failed says so
        log.debug("listing the models of %s failed: %s", base, exc, exc_info=True)
        source = ModelSource(f"Local server at {base}", kind, base,
                             problem=f"the models of {base} could not be listed ({type(exc).__name__}): type the model id")
    return _keep(key, source)


# --------------------------------------------------------------------------------------------
# Hosted providers


def _has_key(var: str, key_lookup: Callable[[str], str | None] | None) -> bool:
    if key_lookup is not None:
        return bool(key_lookup(var))
    from workspace import secrets

    return bool(secrets.get_key(var))


def _known_chat_models(provider: str, config: Any) -> list[str]:
    """litellm's chat models of ``provider``: asked of litellm's own process where litellm runs there (the
    window: reading its 1.5 MB model map holds the interpreter lock for 25-40 ms), else read here."""
    from workspace.providers.registry import litellm_separate

    if litellm_separate(config):
        from workspace.providers.litellm_process import litellm_process

        return list(litellm_process().ask_blocking("known_chat_models", provider=provider) or [])
    from workspace.providers.litellm_provider import known_chat_models

    return known_chat_models(provider)


def _hosted_blocking(providers: Iterable[str] | None, key_lookup: Callable[[str], str | None] | None,
                     refresh: bool, config: Any = None) -> list[ModelSource]:
    from workspace import secrets

    wanted = list(providers) if providers is not None else list(secrets.KEY_VARS)
    out: list[ModelSource] = []
    for provider in wanted:
        var = secrets.KEY_VARS.get(provider)
        if var is None or not _has_key(var, key_lookup):
            continue  # never list a provider whose key is not set
        key = ("hosted", provider)
        found = _cached(key, refresh)
        if found is None:
            try:
                ids = _known_chat_models(provider, config)
                problem = None if ids else (f"litellm knows no {provider} models: type the model id "
                                            f"('{provider}/MODEL') in Settings")
                found = ModelSource(provider, "hosted", None,
                                    tuple(ModelEntry(i, source=provider) for i in ids), problem=problem)
            except Exception as exc:
                log.debug("litellm's %s models could not be read: %s", provider, exc, exc_info=True)
                found = ModelSource(provider, "hosted", None, problem=f"litellm's list of {provider} models could "
                                    f"not be read ({type(exc).__name__}): type the model id in Settings")
            _keep(key, found)
        out.append(found)
    return out


async def hosted_models(*, providers: Iterable[str] | None = None, refresh: bool = False,
                        key_lookup: Callable[[str], str | None] | None = None,
                        config: Any = None) -> list[ModelSource]:
    """litellm's chat models for each hosted provider whose key is set (``key_lookup(var)``, default: the
    environment, then the system keyring). Off the event loop (the keyring and the model map may take a while);
    from litellm's own process where litellm runs there (``llm.litellm_process`` of ``config``)."""
    try:
        return await asyncio.to_thread(_hosted_blocking, providers, key_lookup, refresh, config)
    except Exception as exc:
        log.debug("listing hosted models failed: %s", exc, exc_info=True)
        return [ModelSource("hosted", "hosted", problem=f"the hosted models could not be listed ({exc}): type the "
                            "model id in Settings")]


# --------------------------------------------------------------------------------------------


async def list_models(config: Any = None, *, model: str | None = None, api_base: str | None = None,
                      refresh: bool = False, timeout: float = TIMEOUT, hosted: bool = True,
                      key_lookup: Callable[[str], str | None] | None = None,
                      extra: Mapping[str, str | None] | None = None) -> ModelListing:
    """Every available model (see the module docstring). ``model``/``api_base`` default to the configuration's
    ``llm.model``/``llm.api_base``; ``extra`` adds more local servers to ask ({model: api_base}, e.g. a robot's
    own). Never raises; failed sources carry their ``problem``."""
    if config is not None:
        model = model if model is not None else (config.get("llm.model") or None)
        api_base = api_base if api_base is not None else (config.get("llm.api_base") or None)
    targets: dict[str, tuple[str | None, str | None]] = {}
    for m, base in [(model, api_base), *((extra or {}).items())]:
        target = _local_target(m, base)
        if target is not None:
            targets.setdefault(f"{target[1]} {target[0]} {target[2]}", (m, base))
    jobs: list[Any] = [local_models(m, base, refresh=refresh, timeout=timeout) for m, base in targets.values()]
    if hosted:
        jobs.append(hosted_models(refresh=refresh, key_lookup=key_lookup, config=config))
    sources: list[ModelSource] = []
    for result in await asyncio.gather(*jobs, return_exceptions=True):
        if isinstance(result, BaseException):
            log.debug("a model source failed: %s", result)
            continue
        if isinstance(result, ModelSource):
            sources.append(result)
        elif isinstance(result, list):
            sources.extend(result)
    return ModelListing(tuple(sources))
