"""How many tokens a model's context window holds.

In this order, the first that knows:

1. a setting: ``Robot(context_window=...)``, ``context_window:`` in a robot file's front matter,
   ``llm.context_window`` in the configuration (a number for the configured model, or a mapping of
   model ids to numbers);
2. the server, for a model on a server of its own (an ``api_base``, or a local provider prefix such
   as ``ollama_chat/``): Ollama's ``/api/show`` (``num_ctx``, else the model's ``context_length``
   capped at Ollama's default of 4,096, which it uses unless told otherwise), vLLM's ``/v1/models``
   (``max_model_len``), llama.cpp's ``/props`` (``n_ctx``), LM Studio's ``/api/v0/models``
   (the loaded or the maximum context length). Asked once per server and model, with a short
   timeout, off the event loop;
3. the provider, for hosted models: ``provider.context_window()`` (the litellm provider reads
   litellm's model map);
4. a conservative default (:data:`DEFAULT_WINDOW`) for any other language model.

Providers that are not language models (the offline demo, the test doubles: ``is_language_model``
False) have no window (None): nothing is counted or compacted for them unless a setting gives one.
The server is found from the provider's ``api_base`` (or ``base_url``) and model id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workspace.urls import LOCAL_DEFAULT_BASES, probe_opener

if TYPE_CHECKING:
    from workspace.providers.base import Provider

__all__ = [
    "DEFAULT_WINDOW",
    "OLLAMA_DEFAULT_CTX",
    "WindowInfo",
    "clear_cache",
    "probe_server",
    "resolve_window",
    "server_tokenizer",
    "window_from_message",
    "window_setting",
]

log = logging.getLogger("workspace.context")

#: The window assumed when nothing says otherwise (small enough for most local servers' defaults).
DEFAULT_WINDOW = 8192
#: The context Ollama gives a model unless ``num_ctx`` is set (its default for years; newer versions
#: may give more, never less).
OLLAMA_DEFAULT_CTX = 4096
#: Seconds one question to a server may take.
PROBE_TIMEOUT = 1.0
#: How long an unanswered probe is remembered before the server is asked again (seconds).
RETRY_AFTER = 60.0

#: Provider prefixes whose model name the server knows without the prefix.
_SERVER_PREFIXES = frozenset({"openai", "ollama", "ollama_chat", "lm_studio", "lmstudio", "hosted_vllm", "vllm",
                              "llamafile", "custom_openai", "text-completion-openai", "llamacpp", "llama_cpp"})


@dataclass(frozen=True, slots=True)
class WindowInfo:
    """A context window: its size in tokens and where that came from ("setting", "server",
    "model info", "default", "learned": from a server's refusal)."""

    tokens: int
    source: str

    def describe(self) -> str:
        return {"setting": "set in the configuration", "server": "reported by the server",
                "model info": "litellm's model information", "default": "assumed: nothing reported it",
                "learned": "from the server's refusal"}.get(self.source, self.source)


def window_setting(value: Any, model: str | None, *, default_model: str | None = None) -> int | None:
    """A window from ``llm.context_window``: a number applies to the configured model (``default_model``;
    to every model when that is unknown), a mapping by model id (also without the provider prefix)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if default_model and model and model != default_model:
            return None
        return int(value) if value > 0 else None
    if isinstance(value, Mapping) and model:
        bare = model.split("/", 1)[1] if "/" in model else model
        for key in (model, bare):
            found = value.get(key)
            if isinstance(found, int | float) and not isinstance(found, bool) and found > 0:
                return int(found)
    return None


_PATTERNS = (
    re.compile(r"maximum context length (?:is|of) (\d[\d,]*)", re.I),
    re.compile(r"context (?:window|length|size) (?:is |of |limit of )?(\d[\d,]*)", re.I),
    re.compile(r"n_ctx[^\d]{0,12}(\d[\d,]*)", re.I),
    re.compile(r"(\d[\d,]*)[- ]token (?:context|window|limit)", re.I),
)


def window_from_message(text: str) -> int | None:
    """The window a server's refusal names ("maximum context length is 2048 tokens", "exceed context
    window of 2048", "n_ctx: 2048"), if it names one."""
    for pattern in _PATTERNS:
        match = pattern.search(text or "")
        if match:
            try:
                value = int(match.group(1).replace(",", ""))
            except ValueError:
                continue
            if value >= 256:
                return value
    return None


# --------------------------------------------------------------------------------------------
# Asking the server


_cache: dict[tuple[str, str], tuple[int | None, float]] = {}
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget what servers said (tests; a server restarted with another context size or tokenizer)."""
    with _cache_lock:
        _cache.clear()
        _tokenizers.clear()


def server_of(model: str | None, api_base: str | None) -> tuple[str, str] | None:
    """``(root URL, model name as the server knows it)`` for a model on a server of its own, else None."""
    if not model:
        return None
    prefix, _, rest = model.partition("/")
    prefix = prefix.lower() if rest else ""
    base = api_base or LOCAL_DEFAULT_BASES.get(prefix)
    if not base:
        return None
    name = rest if rest and prefix in _SERVER_PREFIXES else model
    root = base.rstrip("/")
    for suffix in ("/v1", "/api"):
        if root.endswith(suffix):
            root = root[: -len(suffix)]
    return root, name


def _get(url: str, *, data: dict[str, Any] | None = None, timeout: float = PROBE_TIMEOUT) -> Any:
    import urllib.error
    import urllib.request

    body = json.dumps(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    opener = probe_opener(url)  # no proxy for this machine, no redirect followed
    try:
        with opener.open(request, timeout=timeout) as response:
            if response.status != 200:
                return None
            return json.loads(response.read(2_000_000) or b"null")
    except urllib.error.HTTPError:  # an answer: not this kind of server
        return None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:  # no answer at all: ask it nothing more
        raise _NoAnswer(str(exc)) from exc
    except ValueError:
        return None


class _NoAnswer(Exception):
    """The server did not answer a probe (refused, timed out): the other questions would wait as long."""


def _positive(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _ollama(root: str, name: str) -> int | None:
    show = _get(f"{root}/api/show", data={"model": name})
    if not isinstance(show, dict):
        return None
    for line in str(show.get("parameters") or "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "num_ctx":
            found = _positive(parts[1])
            if found:
                return found
    running = _get(f"{root}/api/ps")  # newer versions say what a loaded model was given
    for entry in (running or {}).get("models") or () if isinstance(running, dict) else ():
        if isinstance(entry, dict) and entry.get("name") in (name, f"{name}:latest", name.split(":")[0]):
            found = _positive(entry.get("context_length"))
            if found:
                return found
    info = show.get("model_info") or {}
    trained = next((_positive(v) for k, v in info.items() if str(k).endswith(".context_length")), None) \
        if isinstance(info, dict) else None
    return min(trained, OLLAMA_DEFAULT_CTX) if trained else OLLAMA_DEFAULT_CTX


def _openai_models(root: str, name: str) -> int | None:
    listed = _get(f"{root}/v1/models")
    entries = listed.get("data") if isinstance(listed, dict) else None
    if not isinstance(entries, list):
        return None
    chosen = [e for e in entries if isinstance(e, dict) and e.get("id") == name] or (
        entries if len(entries) == 1 else [])
    for entry in chosen:
        if not isinstance(entry, dict):
            continue
        for key in ("max_model_len", "context_length", "max_context_length", "context_window"):
            found = _positive(entry.get(key))
            if found:
                return found
    return None


def _llama_cpp(root: str, name: str) -> int | None:
    props = _get(f"{root}/props")
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict):
        found = _positive(settings.get("n_ctx"))
        if found:
            return found
    return _positive(props.get("n_ctx"))


def _lm_studio(root: str, name: str) -> int | None:
    from urllib.parse import quote

    entry = _get(f"{root}/api/v0/models/{quote(name, safe='')}")
    if not isinstance(entry, dict) or "id" not in entry:
        return None
    return _positive(entry.get("loaded_context_length")) or _positive(entry.get("max_context_length"))


def _remembered(where: tuple[str, str]) -> tuple[bool, int | None]:
    """(True, the window) when ``where`` was asked recently enough (an answer is kept, no answer for
    ``RETRY_AFTER`` seconds); (False, None) when it must be asked."""
    with _cache_lock:
        found = _cache.get(where)
    if found is not None and (found[0] is not None or time.monotonic() - found[1] < RETRY_AFTER):
        return True, found[0]
    return False, None


def probe_server(model: str | None, api_base: str | None) -> int | None:
    """Ask the model's server for its context window (blocking: call it in a thread); remembered per
    server and model. None: no server, or none of the known questions got an answer."""
    where = server_of(model, api_base)
    if where is None:
        return None
    known, remembered = _remembered(where)
    if known:
        return remembered
    root, name = where
    ollama = (model or "").lower().startswith("ollama") or ":11434" in root
    # Ollama's question is a POST: only asked of what looks like Ollama (its prefix or its port).
    order = (_ollama, _openai_models, _llama_cpp, _lm_studio) if ollama else (_openai_models, _llama_cpp, _lm_studio)
    window: int | None = None
    for probe in order:
        try:
            window = probe(root, name)
        except _NoAnswer as exc:  # a server that does not answer one question keeps the others waiting
            log.debug("context window probe %s at %s: no answer (%s)", probe.__name__, root, exc)
            window = None
            break
        except Exception as exc:  # a strange answer is no answer
            log.debug("context window probe %s at %s failed: %s", probe.__name__, root, exc)
            window = None
        if window:
            log.debug("context window of %s at %s: %d (%s)", name, root, window, probe.__name__.strip("_"))
            break
    with _cache_lock:
        _cache[where] = (window, time.monotonic())
    return window


# --------------------------------------------------------------------------------------------
# The server's own tokenizer

#: Texts whose count a server tokenizer keeps (the longest texts first to go).
TOKENIZE_CACHE = 4096
_tokenizers: dict[str, tuple[bool, float]] = {}


def server_tokenizer(model: str | None, api_base: str | None) -> Callable[[str], int] | None:
    """A function counting a text's tokens with the server's own tokenizer, where the server offers one
    (llama.cpp's ``POST /tokenize`` ``{"content": ...}`` -> ``{"tokens": [...]}``), else None. Blocking (call
    it in a thread; the function it returns blocks too and says so: its ``blocking`` is True); whether a
    server has one is asked once per server (again after ``RETRY_AFTER`` seconds when it did not answer)."""
    where = server_of(model, api_base)
    if where is None:
        return None
    root = where[0]
    with _cache_lock:
        known = _tokenizers.get(root)
    if known is not None and (known[0] or time.monotonic() - known[1] < RETRY_AFTER):
        return _tokenize_fn(root) if known[0] else None
    try:
        answer = _get(f"{root}/tokenize", data={"content": "Hello, world"})
        offered = isinstance(answer, dict) and isinstance(answer.get("tokens"), list)
    except _NoAnswer:
        offered = False
    with _cache_lock:
        _tokenizers[root] = (offered, time.monotonic())
    if offered:
        log.debug("token counts of %s come from its server's /tokenize", root)
    return _tokenize_fn(root) if offered else None


def _tokenize_fn(root: str) -> Callable[[str], int]:
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def count(text: str) -> int:
        with lock:
            found = counts.get(text)
        if found is not None:
            return found
        answer = _get(f"{root}/tokenize", data={"content": text}, timeout=max(PROBE_TIMEOUT, 5.0))
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if not isinstance(tokens, list):
            raise ValueError(f"{root}/tokenize gave no tokens")
        with lock:
            if len(counts) >= TOKENIZE_CACHE:
                counts.clear()
            counts[text] = len(tokens)
        return len(tokens)

    count.blocking = True  # type: ignore[attr-defined]
    return count


async def resolve_window(provider: Provider, *, setting: int | None = None, default: int = DEFAULT_WINDOW) -> WindowInfo | None:
    """The window of ``provider``'s model (see the module docstring for the order)."""
    if setting:
        return WindowInfo(int(setting), "setting")
    if not provider.is_language_model:
        return None
    model, api_base = provider.model_id, provider.api_base
    where = server_of(model, api_base)
    if where is not None:
        known, found = _remembered(where)  # asked before (the warm-up asks ahead): no thread for it
        if not known:
            found = await asyncio.to_thread(probe_server, model, api_base)
        if found:
            return WindowInfo(found, "server")
    known, value = provider.known_context_window()  # asked before (or nothing to ask): no thread for it
    if not known:
        try:
            value = await asyncio.to_thread(provider.context_window)
        except Exception as exc:
            log.debug("%s: context_window() failed: %s", model, exc)
            value = None
    size = _positive(value)
    if size:
        return WindowInfo(size, "model info")
    return WindowInfo(default, "default")
