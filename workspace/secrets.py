"""API keys: from the environment variables litellm reads, or from the OS keyring.

Keys are never written to the configuration, the database, exports or logs. The
desktop stores a key the user types in the keyring (service ``robotlab``, the
variable's name as the user name) when a keyring backend is available.

:func:`redact` replaces every known secret in a text by ``<NAME>``: values of environment
variables whose names look secret (:func:`is_secret_name`), values read from or stored in the
keyring here, and values given to :func:`register_secret` (MCP servers' env and header values,
see :mod:`workspace.mcp.config`). :class:`RedactFilter` / :func:`install_log_redaction` apply it
to log records.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable

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
        register_secret(value, name=var)
        return value
    kr = _keyring()
    if kr is None:
        return None
    try:
        stored = kr.get_password(SERVICE, var)  # type: ignore[attr-defined]
    except Exception as exc:  # a locked or broken keyring is not fatal
        log.warning("could not read %s from the keyring: %s", var, type(exc).__name__)
        return None
    if stored:
        register_secret(stored, name=var)
    return stored


def store_key(var: str, value: str) -> bool:
    """Store a key in the keyring; False when no keyring is available (nothing is written)."""
    register_secret(value, name=var)  # redacted from here on, stored or not
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


# -- redaction ------------------------------------------------------------------------------------
#: Values shorter than this are never redacted (they would hit common words).
MIN_SECRET_LENGTH = 6
#: ``*_KEY`` variables count only from this length (``SORT_KEY=name`` is not a secret).
MIN_KEY_LENGTH = 12

_SECRET_NAME = re.compile(r"(?:^|_)API_?KEY$|(?:^|_)TOKEN$|SECRET|PASSWORD|PASSWD|(?:^|_)PASS$", re.I)
_KEY_NAME = re.compile(r"(?:^|_)KEY$", re.I)


def is_secret_name(name: str, value: str | None = None) -> bool:
    """Whether an environment variable called ``name`` holds a secret (case-insensitive).

    ``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``/``*PASSWD*`` and ``*_PASS`` always do;
    ``*_KEY`` does when ``value`` is at least :data:`MIN_KEY_LENGTH` characters (or not given).
    """
    if _SECRET_NAME.search(name):
        return True
    if _KEY_NAME.search(name):
        return value is None or len(value) >= MIN_KEY_LENGTH
    return False


class _Redactor:
    """The known secrets and one compiled pattern for them, rebuilt only when the set changes.

    Secrets come from the environment (variables whose names look secret, re-read when the
    environment changes) and from :func:`register_secret` (keyring values, MCP env/header values).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._registered: dict[str, str] = {}  # value -> label
        self._version = 0
        self._env_snapshot: tuple[tuple[object, object], ...] | None = None
        self._env: dict[str, str] = {}
        self._built_version = -1
        # What redact() reads, swapped as one tuple (readers take no lock).
        self._state: tuple[tuple[str, ...], dict[str, str], re.Pattern[str] | None] = ((), {}, None)

    def register(self, value: str, label: str) -> None:
        with self._lock:
            for v in {value, value.strip()}:
                if len(v) >= MIN_SECRET_LENGTH and v not in self._registered:
                    self._registered[v] = label
                    self._version += 1

    def forget(self, values: Iterable[str] | None) -> None:
        with self._lock:
            if values is None:
                self._registered.clear()
            else:
                for v in values:
                    self._registered.pop(v, None)
                    self._registered.pop(v.strip(), None)
            self._version += 1

    def _env_items(self) -> tuple[tuple[object, object], ...]:
        # os.environ keeps the encoded variables in _data; reading it skips decoding every entry.
        data = getattr(os.environ, "_data", None)
        return tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())

    def current(self) -> tuple[tuple[str, ...], dict[str, str], re.Pattern[str] | None]:
        snapshot = self._env_items()
        if snapshot == self._env_snapshot and self._version == self._built_version:
            return self._state
        with self._lock:
            if snapshot != self._env_snapshot:
                env: dict[str, str] = {}
                for name, value in os.environ.items():
                    if len(value) >= MIN_SECRET_LENGTH and is_secret_name(name, value):
                        env.setdefault(value, f"<{name}>")
                        if value.strip() != value and len(value.strip()) >= MIN_SECRET_LENGTH:
                            env.setdefault(value.strip(), f"<{name}>")
                self._env_snapshot = snapshot
                changed = env != self._env
                self._env = env
            else:
                changed = False
            if changed or self._version != self._built_version:
                labels = {**self._registered, **self._env}  # the variable's name wins
                if labels != self._state[1]:
                    values = tuple(sorted(labels, key=len, reverse=True))
                    pattern = re.compile("|".join(map(re.escape, values))) if values else None
                    self._state = (values, labels, pattern)
                self._built_version = self._version
            return self._state


_redactor = _Redactor()


def register_secret(value: str | None, *, name: str | None = None) -> None:
    """Redact ``value`` from now on (shown as ``<name>``, or ``<secret>``); short values are ignored."""
    if value and isinstance(value, str):
        _redactor.register(value, f"<{name}>" if name else "<secret>")


def forget_secrets(values: Iterable[str] | None = None) -> None:
    """Stop redacting registered ``values`` (all registered values when None); for tests."""
    _redactor.forget(values)


def redact(text: str) -> str:
    """``text`` with every known secret replaced by ``<NAME>`` (for logs, exports and the database).

    Known secrets: values of environment variables whose names look secret (:func:`is_secret_name`),
    values read from or stored in the keyring here, and values given to :func:`register_secret`
    (MCP servers' env and header values). Values shorter than :data:`MIN_SECRET_LENGTH` are ignored.
    """
    if not text:
        return text
    values, labels, pattern = _redactor.current()
    if pattern is None:
        return text
    hits = [v for v in values if v in text]  # str.find is far faster than a regex scan
    if not hits:
        return text
    if len(hits) == 1:
        return text.replace(hits[0], labels[hits[0]])
    return pattern.sub(lambda m: labels[m.group(0)], text)


class RedactFilter(logging.Filter):
    """A logging filter that redacts known secrets from the message and any traceback.

    Put it on handlers (a filter on a logger misses records propagated from child loggers):
    :func:`install_log_redaction` does that for the root logger's handlers.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: let the handler report it as usual
            return True
        redacted = redact(message)
        if redacted != message or record.args:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> RedactFilter:
    """Add a :class:`RedactFilter` to every handler of ``logger`` (the root logger) and to
    :data:`logging.lastResort`; call it after ``logging.basicConfig`` or adding handlers."""
    found = _log_filter
    handlers = list((logger or logging.getLogger()).handlers)
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for handler in handlers:
        if not any(isinstance(f, RedactFilter) for f in handler.filters):
            handler.addFilter(found)
    return found


_log_filter = RedactFilter()
