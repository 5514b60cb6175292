"""API keys: from the environment variables litellm reads, or from the OS keyring.

Keys are never written to the configuration, the database, exports or logs. The
desktop stores a key the user types in the keyring (service ``robotlab``, the
variable's name as the user name) when a keyring backend is available.
"""

from __future__ import annotations

import logging
import os

SERVICE = "robotlab"
log = logging.getLogger("workspace.secrets")

#: The key variable litellm reads for common providers (by the model id's prefix).
KEY_VARS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "cohere": "COHERE_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
}
#: Providers that run locally and need no key.
LOCAL_PROVIDERS = frozenset({"ollama", "ollama_chat", "lm_studio", "llamafile", "vllm", "hosted_vllm", "lmstudio"})


def provider_prefix(model: str) -> str:
    if "/" in model:
        return model.split("/", 1)[0].lower()
    low = model.lower()
    if low.startswith(("gpt", "o1", "o3", "o4", "chatgpt")):
        return "openai"
    if low.startswith("claude"):
        return "anthropic"
    if low.startswith("gemini"):
        return "gemini"
    return low


def key_var_for(model: str) -> str | None:
    return KEY_VARS.get(provider_prefix(model))


def _keyring() -> object | None:
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring):
            return None
        return keyring
    except Exception:
        return None


def keyring_available() -> bool:
    return _keyring() is not None


def get_key(var: str) -> str | None:
    """The key from the environment, else from the keyring; None when neither has it."""
    value = os.environ.get(var)
    if value:
        return value
    kr = _keyring()
    if kr is None:
        return None
    try:
        return kr.get_password(SERVICE, var)  # type: ignore[attr-defined]
    except Exception as exc:  # a locked or broken keyring is not fatal
        log.warning("could not read %s from the keyring: %s", var, type(exc).__name__)
        return None


def store_key(var: str, value: str) -> bool:
    """Store a key in the keyring; False when no keyring is available (nothing is written)."""
    kr = _keyring()
    if kr is None:
        return False
    try:
        kr.set_password(SERVICE, var, value)  # type: ignore[attr-defined]
        return True
    except Exception as exc:
        log.warning("could not store %s in the keyring: %s", var, type(exc).__name__)
        return False


def delete_key(var: str) -> None:
    kr = _keyring()
    if kr is None:
        return
    try:
        kr.delete_password(SERVICE, var)  # type: ignore[attr-defined]
    except Exception:
        pass


def export_key_for(model: str) -> bool:
    """Put the model's key from the keyring into the environment litellm reads; True if present."""
    var = key_var_for(model)
    if var is None:
        return True
    value = get_key(var)
    if value and not os.environ.get(var):
        os.environ[var] = value
    return bool(value)


def redact(text: str) -> str:
    """Replace any known key value that appears in ``text`` (for logs and exports)."""
    for var in KEY_VARS.values():
        value = os.environ.get(var)
        if value and len(value) >= 8 and value in text:
            text = text.replace(value, f"<{var}>")
    return text
