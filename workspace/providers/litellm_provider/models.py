"""What litellm knows of a model, read from its model map: the keys it needs, its context window, vision,
the chat models a hosted provider offers, a tokenizer."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from workspace.providers.litellm_provider import loading
from workspace.providers.litellm_provider.loading import load_litellm

log = logging.getLogger("workspace.providers.litellm")

def missing_keys(model_id: str, *, api_key: str | None = None, api_base: str | None = None) -> list[str]:
    """The environment variables litellm needs for ``model_id`` that are not set.

    ``[]`` when an ``api_key`` is given. With a custom ``api_base`` the ``*_API_BASE``
    variables are not needed; Ollama's default base (localhost) needs nothing.
    Imports litellm (seconds, once): call it from a thread or a command line.
    """
    if api_key:
        return []
    litellm = load_litellm()
    try:
        found = litellm.validate_environment(model=model_id)
    except Exception as exc:  # unknown provider prefixes and the like
        log.debug("validate_environment(%s) failed: %s", model_id, exc)
        return []
    keys = [str(k) for k in (found or {}).get("missing_keys") or []]
    if not keys or (found or {}).get("keys_in_environment"):
        return []
    out: list[str] = []
    for key in keys:
        if key.endswith(("_API_BASE", "_BASE_URL")) and (api_base or key == "OLLAMA_API_BASE"):
            continue
        out.append(key)
    return out


T = TypeVar("T")


class _PerModel(Generic[T]):
    """A per-model answer that costs a worker thread the first time (litellm's model map, loading a
    tokenizer) and is then remembered: :meth:`known` tells, without blocking, whether it is there, so
    the first request of a new thread's robot needs no thread hop for it."""

    def __init__(self, compute: Callable[[str], T]) -> None:
        self._compute = compute
        self._answers: dict[str, T] = {}
        functools.update_wrapper(self, compute)

    def __call__(self, model_id: str) -> T:
        if model_id not in self._answers:
            self._answers[model_id] = self._compute(model_id)
        return self._answers[model_id]

    def known(self, model_id: str) -> tuple[bool, T | None]:
        """(True, the answer) when it was worked out already; (False, None) when it needs a thread."""
        if model_id in self._answers:
            return True, self._answers[model_id]
        return False, None


@_PerModel
def context_window(model_id: str) -> int | None:
    """The model's context window (input tokens) from litellm's model map; None when litellm does not
    know the model (a local server's model, a new one). Imports litellm (seconds, once): call it in a
    thread. Remembered per model (the warm-up asks it before the first message)."""
    litellm = load_litellm()
    try:
        info = litellm.get_model_info(model_id)
    except Exception:  # "This model isn't mapped yet"
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    try:
        return int(value) if value else None
    except (TypeError, ValueError):
        return None


def supports_vision(model_id: str, *, api_base: str | None = None) -> bool | None:
    """Whether litellm's model map says the model takes images (``supports_vision``); None when litellm does
    not know the model (a local server's, a new one): nobody knows. Imports litellm: call it in a thread."""
    litellm = load_litellm()
    try:
        info = litellm.get_model_info(model_id)
    except Exception:  # "This model isn't mapped yet"
        return None
    return bool(info.get("supports_vision"))  # a mapped model that does not say: no (litellm's own rule)
#: The providers of litellm's model map that each key prefix covers (Cohere's chat models are "cohere_chat").
_MAP_PROVIDERS: dict[str, tuple[str, ...]] = {"cohere": ("cohere", "cohere_chat")}
_model_map: dict[str, Any] | None = None


def _read_model_map() -> dict[str, Any]:
    """litellm's model map: the loaded module's when litellm is imported, else its bundled JSON file, read
    without importing litellm (milliseconds instead of seconds; the same data, as the import is told to use
    the local map)."""
    global _model_map
    if loading._litellm is not None:
        found = getattr(loading._litellm, "model_cost", None)
        if isinstance(found, dict) and found:
            return found
    if _model_map is None:
        import importlib.util
        import json
        from pathlib import Path

        spec = importlib.util.find_spec("litellm")  # finds the package; does not import it
        data: dict[str, Any] = {}
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            path = Path(location) / "model_prices_and_context_window_backup.json"
            if path.is_file():
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError) as exc:
                    log.debug("litellm's model map %s could not be read: %s", path, exc)
                break
        _model_map = data if isinstance(data, dict) else {}
    return _model_map


def known_chat_models(provider: str) -> list[str]:
    """The chat models litellm knows for ``provider`` (a model-id prefix: ``openai``, ``anthropic``,
    ``gemini``...), as model ids with that prefix (``anthropic/claude-sonnet-4-5``), sorted; fine-tuning
    templates (``ft:``) left out. Reads litellm's model map without importing litellm: quick, but call it
    off the event loop the first time (a ~1 MB JSON file)."""
    wanted = set(_MAP_PROVIDERS.get(provider, (provider,)))
    found: set[str] = set()
    for key, info in _read_model_map().items():
        if not isinstance(info, dict) or info.get("litellm_provider") not in wanted:
            continue
        if info.get("mode", "chat") != "chat":
            continue
        bare = key.split("/", 1)[1] if key.startswith(f"{provider}/") else key
        if not bare or bare.startswith("ft:") or bare == "sample_spec":
            continue
        found.add(f"{provider}/{bare}")
    return sorted(found)


@_PerModel
def token_counter(model_id: str) -> Callable[[str], int] | None:
    """A function counting the tokens of a text with the model's own tokenizer, where litellm has it
    without downloading anything (OpenAI's models: tiktoken; Anthropic's older models); None for other
    models, which are estimated instead. Imports litellm: call it in a thread. Remembered per model
    (loading an encoding takes a while; the warm-up loads it before the first message)."""
    litellm = load_litellm()
    try:
        provider = str(litellm.get_llm_provider(model_id)[1])
        from litellm.utils import huggingface_tokenizer_kind, select_tokenizer
    except Exception:
        return None
    bare = model_id.split("/", 1)[1] if "/" in model_id else model_id
    kind = huggingface_tokenizer_kind(bare)
    openai_model = provider in ("openai", "azure") and bare in set(litellm.open_ai_chat_completion_models)
    if not (openai_model or kind == "anthropic"):
        return None
    try:
        tokenizer: Any = select_tokenizer(model=bare)
        encoder: Any = tokenizer["tokenizer"]
    except Exception as exc:
        log.debug("no tokenizer for %s: %s", model_id, exc)
        return None
    if tokenizer.get("type") == "openai_tokenizer":
        return lambda text: len(encoder.encode(text, disallowed_special=()))
    return lambda text: len(getattr(encoder.encode(text), "ids", ()))



def load_for(model: str | None) -> Any:
    """litellm imported and warmed up (:func:`~workspace.providers.litellm_provider.loading.load_litellm`), and
    ``model``'s own tokenizer loaded where it has one (it counts when a server reports no usage)."""
    litellm = load_litellm(warm=True)
    if model:
        token_counter(model)
    return litellm
