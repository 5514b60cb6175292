"""API keys: from the environment variables litellm reads, or from the OS keyring.

Keys are never written to the configuration, the database, exports or logs. The
desktop stores a key the user types in the keyring (service ``robotlab``, the
variable's name as the user name) when a keyring backend is available.

:func:`redact` is the one redaction step. It replaces every known secret in a text by ``<NAME>``:
values of environment variables whose names look secret (:func:`is_secret_name`), values read
from or stored in the keyring here, and values given to :func:`register_secret` (MCP servers' env
and header values, see :mod:`workspace.mcp.masking`; the password and key of an ``api_base``, see
:func:`register_url_secrets`). Then it replaces credentials recognised by their shape, known or
not, by ``<redacted>``: ``Bearer <token>``, the values of ``Authorization``/``x-api-key``/
``api-key`` headers (as a provider may echo them: "Incorrect API key provided: Bearer sk-…"),
the password in a URL (``http://user:<redacted>@host/``) and secret-looking query values
(``?api-key=``, ``?key=``, ``?token=``...).

Where it is applied (the choke points, so a new ``print`` or table cannot forget it):

* the process's stdout and stderr: :func:`install_output_redaction` (the CLI's ``main`` and the
  app call it) wraps them in a :class:`RedactingStream`, so terminal output, ``--json`` lines,
  argparse errors and prompts are redacted; it also redacts uncaught exceptions' tracebacks
  (``sys.excepthook``, ``threading.excepthook``, ``sys.unraisablehook``): the crash reports;
* logs: :class:`RedactFilter` on every handler (:func:`install_log_redaction`);
* the threads database: every text a write stores (``workspace.persistence.database``);
* exports: :mod:`workspace.exports` redacts what it returns.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, TextIO

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
        from keyring.backends import fail, null

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring | null.Keyring):  # null forgets what it is given: no keyring either
            return None
        return keyring
    except Exception:
        return None


def keyring_available() -> bool:
    return _keyring() is not None


def get_key(var: str) -> str | None:
    """The key from the environment, else from the keyring, else from the keys file (:func:`keys_file`, where
    Settings keeps keys without a keyring); None when none has it."""
    return _find_key(var)[0]


def key_source(var: str) -> str | None:
    """Where :func:`get_key` finds ``var``'s key: ``"environment"``, ``"keyring"``, ``"file"`` (the keys file), or
    None when none has it."""
    return _find_key(var)[1]


def _find_key(var: str) -> tuple[str | None, str | None]:
    value = os.environ.get(var)
    if value:
        register_secret(value, name=var)
        return value, "environment"
    stored: str | None = None
    source = "keyring"
    kr = _keyring()
    if kr is not None:
        try:
            stored = kr.get_password(SERVICE, var)  # type: ignore[attr-defined]
        except Exception as exc:  # a locked or broken keyring is not fatal
            log.warning("could not read %s from the keyring: %s", var, type(exc).__name__)
    if not stored:
        stored, source = _file_keys().get(var), "file"
    if not stored:
        return None, None
    register_secret(stored, name=var)
    return stored, source


def keys_file() -> Any:
    """Where keys are kept without an OS keyring: ``keys.json`` in the config folder, readable only by the user
    (0600), as ``llm keys`` does. A :class:`pathlib.Path`."""
    from workspace import paths

    return paths.config_dir() / "keys.json"


class KeysFileError(OSError):
    """The keys file exists but cannot be read as keys (a FIFO, a device, too large, not a JSON object, not
    UTF-8): nothing is written over it, the message names the file and the fix."""


_warned_keys_file: set[str] = set()


def _file_keys(*, strict: bool = False) -> dict[str, str]:
    """The keys in the keys file; none when there is no such file. A file that cannot be read as keys is read
    bounded (:func:`workspace.readlimits.read_bounded`: never waited on, never read past its limit) and is a
    :class:`KeysFileError` when ``strict`` (a write would lose the keys it holds), else a warning (once per
    problem) and no keys."""
    import json

    from workspace.errors import ConfigurationError
    from workspace.readlimits import CONFIG_FILE_BYTES, read_bounded

    path = keys_file()
    try:
        data = json.loads(read_bounded(path, CONFIG_FILE_BYTES, "keys file").decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object of names and keys")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, ConfigurationError) as exc:
        why = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
        message = (f"The keys file cannot be read: {why}. Nothing was written over it: fix it (a JSON object of "
                   f"names and keys) or move it away, then save the key again")
        if strict:
            raise KeysFileError(message) from exc
        if message not in _warned_keys_file:
            _warned_keys_file.add(message)
            log.warning("%s", message)
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str) and v}


def _write_file_keys(keys: dict[str, str]) -> None:
    """The keys file written whole, 0600 from its first byte (created so, then renamed over the old one)."""
    import json

    path = keys_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(keys, out, indent=2, sort_keys=True)
            out.write("\n")
        os.chmod(tmp, 0o600)  # whatever the umask said
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def key_storage() -> str:
    """Where :func:`save_key` keeps a key, for people: the system keyring, or the keys file's path."""
    return "the system keyring" if keyring_available() else f"{keys_file()} (readable only by you)"


def save_key(var: str, value: str) -> str:
    """Keep a key the user typed (Settings): in the keyring, else in the keys file (0600). Returns where
    (:func:`key_storage`'s words); raises OSError when neither could keep it."""
    if keyring_available() and store_key(var, value):
        return key_storage()
    register_secret(value, name=var)
    keys = _file_keys(strict=True)  # a keys file that cannot be read is not written over (its keys would go)
    keys[var] = value
    _write_file_keys(keys)
    return f"{keys_file()} (readable only by you)"


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
    """Forget a stored key: the keyring's and the keys file's."""
    kr = _keyring()
    if kr is not None:
        try:
            kr.delete_password(SERVICE, var)  # type: ignore[attr-defined]
        except Exception:
            pass
    keys = _file_keys()  # an unreadable file gives no keys: nothing is written over it
    if keys.pop(var, None) is not None:
        _write_file_keys(keys)


def missing_key_message(model: str, var: str) -> str:
    """What a run of ``model`` without its key ``var`` says (the window, the command line, the library)."""
    return (f"{model}: no API key. Set {var} in the environment (export {var}=...) or enter it in Settings; "
            "from Python, Robot(..., api_key=...) gives a robot its own key")


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
    kind = _name_kind(name)
    return kind == _ALWAYS or (kind == _LONG and (value is None or len(value) >= MIN_KEY_LENGTH))


#: What a name says of its value (:func:`_name_kind`): never a secret, always one, one when long enough.
_NEVER, _ALWAYS, _LONG = 0, 1, 2


@functools.lru_cache(maxsize=4096)
def _name_kind(name: str) -> int:
    """What ``name`` says (:data:`_ALWAYS`, :data:`_LONG` or :data:`_NEVER`), worked out once per name: every
    recorded model request asks it of every key of its new messages (``role``, ``content``...)."""
    if _SECRET_NAME.search(name):
        return _ALWAYS
    if _KEY_NAME.search(name):
        return _LONG
    return _NEVER


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


_PR_SET_DUMPABLE = 4
_private: list[bool] = []


def keep_environment_private() -> bool:
    """Make this process's own files under ``/proc`` (its environment, which holds the keys; its memory) unreadable
    to the programs it starts that run as the same user outside a sandbox (a command run without the sandbox, an
    MCP server over stdio): ``prctl(PR_SET_DUMPABLE, 0)``, as ssh-agent does (it also means no core dump). Such a
    program gets a reduced environment, but ``/proc/$PPID/environ`` showed the whole of ours. A program started
    runs dumpable again (the kernel resets it at exec). Linux only; once; True when this process is so."""
    if _private:
        return _private[0]
    done = False
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            done = libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    _private.append(done)
    return done


def register_secret(value: str | None, *, name: str | None = None) -> None:
    """Redact ``value`` from now on (shown as ``<name>``, or ``<secret>``); short values are ignored."""
    if value and isinstance(value, str):
        _redactor.register(value, f"<{name}>" if name else "<secret>")


def forget_secrets(values: Iterable[str] | None = None) -> None:
    """Stop redacting registered ``values`` (all registered values when None); for tests."""
    _redactor.forget(values)


def redact(text: str) -> str:
    """``text`` with every known secret replaced by ``<NAME>`` and every credential recognised by
    its shape by ``<redacted>`` (for output, logs, exports and the database; see the module).

    Known secrets: values of environment variables whose names look secret (:func:`is_secret_name`),
    values read from or stored in the keyring here, and values given to :func:`register_secret`
    (MCP servers' env and header values). Values shorter than :data:`MIN_SECRET_LENGTH` are ignored.
    """
    if not text:
        return text
    return _redact_with(_redactor.current(), text)


def redactor() -> Callable[[str], str]:
    """:func:`redact` bound to the secrets known now: for redacting many texts in one go (the
    rows of a database write) without checking the environment for each."""
    state = _redactor.current()
    return lambda text: _redact_with(state, text) if text else text


def _redact_with(state: tuple[tuple[str, ...], dict[str, str], re.Pattern[str] | None], text: str) -> str:
    values, labels, pattern = state
    if pattern is not None:
        hits = [v for v in values if v in text]  # str.find is far faster than a regex scan
        if len(hits) == 1:
            text = text.replace(hits[0], labels[hits[0]])
        elif hits:
            text = pattern.sub(lambda m: labels[m.group(0)], text)
    return redact_credentials(text)


# -- credentials recognised by their shape ---------------------------------------------------
#: What a credential recognised by its shape is replaced with.
REDACTED = "<redacted>"

#: A query parameter whose name ends like one of these holds a secret (``api-key``, ``key``, ``sig``...).
_QUERY_NAMES = r"[\w.-]*?(?:key|token|secret|passw(?:or)?d|pwd|auth|signature|sig|credentials?)"
#: What a header value or token may be made of (never quotes or backslashes: the texts may be JSON).
_VALUE = r"[^\s\"'\\,;&<>{}()$*\[\]][^\s\"'\\,;&<>{}()\[\]]*"
# The patterns run on the lower-cased text (fast literal searches; the spans are the same).
#: ``Bearer <token>``: a provider echoing the Authorization header.
_BEARER = re.compile(r"bearer\s+([a-z0-9._~+/-][a-z0-9._~+/=-]*)")
#: ``Authorization: ...``, ``x-api-key: ...``, ``"api-key": "..."``, ``api_key=...``, ``X-Auth-Token: ...``.
_HEADERS = tuple(
    (hint, re.compile(name + r"\\?[\"']?\s*[:=]\s*\\?[\"']?(?:(?:bearer|basic|token)\s+)?(" + _VALUE + ")"))
    for hint, name in (("authoriz", r"authorization"), ("api", r"api[-_]?key"),
                       ("-token", r"(?:auth|private|access)-token"))
)
#: ``scheme://user:PASSWORD@host``.
_USERINFO = re.compile(r"://[^/\s:@\"'\\<>]*:([^/\s@\"'\\<>$*][^/\s@\"'\\<>]*)@")
#: ``?api-key=...``, ``&token=...`` (a query value whose name looks secret).
_QUERY = re.compile(r"[?&]" + _QUERY_NAMES + r"=([^&\s#\"'\\<>$*][^&\s#\"'\\<>]*)")


def _credential_like(value: str) -> bool:
    """Whether a header or Bearer value looks like a key rather than a word ("Bearer authentication",
    "api-key: required"): at least 8 characters, with a digit, or long, or key punctuation."""
    if len(value) < 8:
        return False
    return len(value) >= 20 or any(c.isdigit() for c in value) or any(c in "-_." for c in value)


def _credential_spans(low: str) -> list[tuple[int, int]]:
    """Where the credentials of :func:`redact_credentials` are in ``low`` (a lower-cased text)."""
    spans: list[tuple[int, int]] = []

    def add(match: re.Match[str], *, check: bool) -> None:
        start = match.start(1)
        value = match.group(1).rstrip(".")
        if not check or _credential_like(value):
            spans.append((start, start + len(value)))

    if "bearer" in low:
        for match in _BEARER.finditer(low):
            if match.start() == 0 or not low[match.start() - 1].isalnum():
                add(match, check=True)
    if ":" in low or "=" in low:
        for hint, pattern in _HEADERS:
            if hint in low:
                for match in pattern.finditer(low):
                    add(match, check=True)
    if "://" in low and "@" in low:
        for match in _USERINFO.finditer(low):
            add(match, check=False)
    if "?" in low and "=" in low:
        for match in _QUERY.finditer(low):
            add(match, check=False)
    return spans


def redact_credentials(text: str) -> str:
    """``text`` with credentials recognised by their shape replaced by ``<redacted>``: ``Bearer``
    tokens, ``Authorization``/``x-api-key``/``api-key`` header values, URL passwords and
    secret-looking query values (``?api-key=``, ``?key=``, ``?token=``). Part of :func:`redact`."""
    if ":" not in text and "=" not in text and "earer" not in text and "EARER" not in text:
        return text
    low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two: find on a same-length copy
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    spans = _credential_spans(low)
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    last = 0
    for start, end in spans:
        if start < last:  # overlapping finds (an api-key query value that is also a header value)
            start = last
            if end <= start:
                continue
        out.append(text[last:start])
        out.append(REDACTED)
        last = end
    out.append(text[last:])
    return "".join(out)


def register_url_secrets(url: str | None, *, name: str = "api_base") -> None:
    """Redact the credentials inside ``url`` (an ``api_base``) from now on, wherever they appear:
    the password (and the ``user:password`` pair as HTTP Basic sends it), a long bare user name
    (often a token), and secret-looking query values (``?api-key=``, ``?key=``...)."""
    if not isinstance(url, str) or not url or "${" in url:
        return
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        for value in {password, unquote(password)}:
            register_secret(value, name=f"{name} password")
        pair = f"{unquote(user or '')}:{unquote(password)}".encode()
        register_secret(base64.b64encode(pair).decode("ascii"), name=f"{name} password")
    elif user and len(user) >= 16:
        register_secret(unquote(user), name=f"{name} user")
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if re.fullmatch(_QUERY_NAMES, key, re.IGNORECASE):
            register_secret(value, name=f"{name} {key}")


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


# -- the process's output ---------------------------------------------------------------------
class RedactingStream(io.TextIOBase):
    """A text stream that redacts what is written to it before it reaches ``stream``.

    Text is passed on a line at a time (and on :meth:`flush`), so a key written in pieces
    (``print("Bearer", token)`` writes three times) is still seen whole. Everything else (``fileno``,
    ``isatty``, ``encoding``, ``buffer``...) is the wrapped stream's.
    """

    #: Text held without a newline is passed on (at a space) once it is this long.
    MAX_HELD = 65536

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self._held: list[str] = []
        self._held_size = 0
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            cut = text.rfind("\n") + 1
            if cut == 0 and self._held_size + len(text) < self.MAX_HELD:
                self._held.append(text)
                self._held_size += len(text)
                return len(text)
            if cut == 0:
                cut = max(text.rfind(" ") + 1, 1) if text else 0
            whole = "".join(self._held) + text[:cut]
            rest = text[cut:]
            self._held = [rest] if rest else []
            self._held_size = len(rest)
            self.stream.write(redact(whole))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._held:
                whole = "".join(self._held)
                self._held, self._held_size = [], 0
                self.stream.write(redact(whole))
            self.stream.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.stream, "encoding", "utf-8"))

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)

    def close(self) -> None:  # the wrapped stream is not ours to close
        with self._lock:
            try:
                self.flush()
            except (OSError, ValueError):
                pass
        super().close()

    def __getattr__(self, name: str) -> Any:  # buffer, line_buffering, mode, name, reconfigure...
        return getattr(self.stream, name)


def _redacting_excepthook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
    import traceback

    text = "".join(traceback.format_exception(exc_type, exc, tb))
    stream = sys.stderr if sys.stderr is not None else sys.__stderr__
    if stream is not None:
        stream.write(redact(text))
        stream.flush()


def _redacting_thread_hook(args: Any) -> None:
    if args.exc_type is SystemExit:
        return
    import traceback

    name = getattr(args.thread, "name", "?")
    text = "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback))
    if sys.stderr is not None:
        sys.stderr.write(redact(f"Exception in thread {name}:\n{text}"))
        sys.stderr.flush()


def _redacting_unraisable_hook(unraisable: Any) -> None:
    import traceback

    message = unraisable.err_msg or "Exception ignored in"
    text = f"{message}: {unraisable.object!r}\n"
    if unraisable.exc_type is not None:
        text += "".join(traceback.format_exception(unraisable.exc_type, unraisable.exc_value,
                                                   unraisable.exc_traceback))
    if sys.stderr is not None:
        sys.stderr.write(redact(text))
        sys.stderr.flush()


def install_output_redaction() -> Callable[[], None]:
    """Route everything the process prints through :func:`redact`: ``sys.stdout`` and ``sys.stderr``
    become :class:`RedactingStream` wrappers, uncaught exceptions (main thread, other threads,
    "Exception ignored") are printed redacted, and every log handler gets :class:`RedactFilter`.

    Returns a function that puts the streams back (the hooks stay: a crash report is redacted
    whenever it happens). Calling it again while installed does nothing more.
    """
    wrapped: list[tuple[str, TextIO]] = []
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, RedactingStream):
            setattr(sys, name, RedactingStream(stream))
            wrapped.append((name, stream))
    sys.excepthook = _redacting_excepthook
    threading.excepthook = _redacting_thread_hook
    sys.unraisablehook = _redacting_unraisable_hook
    install_log_redaction()

    def restore() -> None:
        for name, original in wrapped:
            current = getattr(sys, name)
            if isinstance(current, RedactingStream):
                try:
                    current.flush()
                except (OSError, ValueError):
                    pass
                if current.stream is original:
                    setattr(sys, name, original)

    return restore
