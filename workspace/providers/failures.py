"""Reading provider failures: the provider's own words, the HTTP status, ``Retry-After``, and whether
a failure is a connection problem or a timeout.

litellm's exceptions subclass the OpenAI SDK's, so the same readings serve both providers of real
models (:mod:`workspace.providers.streaming` classifies with them). Standard library only.
"""

from __future__ import annotations

import ast
import email.utils
import errno
import json
import re
import time
from typing import Any

from workspace.errors import ProviderError
from workspace.secrets import redact

__all__ = [
    "Failure",
    "is_connection_error",
    "is_timeout",
    "mask_keys",
    "provider_message",
    "refused",
    "retry_after",
    "status_of",
    "tidy_connect_message",
    "unreachable",
]


class Failure(Exception):
    """A classified failure of one attempt (internal to the providers): the error to raise, whether
    another attempt may succeed, and the wait the server asked for (``Retry-After``)."""

    def __init__(self, error: ProviderError, *, retryable: bool, wait: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retryable = retryable
        self.wait = wait


_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*|\w+Error:\s*|\w+Exception\s*-\s*)+")
_HANDLE_WITH = re.compile(r"\.?\s*Handle with `litellm\.\w+`\.?")
_RECEIVED = re.compile(r"\s*(?:Received Model Group|LiteLLM Retried|Original exception).*$", re.S)
#: Credentials a server may echo back in an error ("Incorrect API key provided: Bearer sk-…").
_BEARER = re.compile(r"(?i)\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{6,}")
_KEYLIKE = re.compile(r"\b(sk|pk|rk|ak|gsk|xai|hf)[-_][A-Za-z0-9_-]{6,}")
_ECHOED = re.compile(r"(?i)(api[ _-]?key(?: provided)?[\"']?\s*[:=]\s*[\"']?)(?!(?:Bearer|Basic|Token)\b)([^\s\"',.]{6,})")


def mask_keys(text: str) -> str:
    """``text`` with known secrets and anything shaped like a key or a bearer token masked."""
    text = redact(text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} ***", text)
    text = _KEYLIKE.sub(lambda m: f"{m.group(1)}-***", text)
    return _ECHOED.sub(lambda m: f"{m.group(1)}***" if "***" not in m.group(2) and "<" not in m.group(2)
                       else m.group(0), text)


def provider_message(exc: BaseException) -> str:
    """The provider's own words, without litellm's class-name prefixes and JSON wrapping, keys masked."""
    return mask_keys(_provider_message(exc))


def _provider_message(exc: BaseException) -> str:
    raw = getattr(exc, "message", None)
    text = str(raw) if raw else str(exc)
    text = _HANDLE_WITH.sub("", text)
    text = _RECEIVED.sub("", text)
    text = _PREFIX.sub("", text.strip()).strip()
    body = text
    if body.startswith(("b'", 'b"')) and body.endswith(("'", '"')):
        # litellm quotes some providers' error bodies as a bytes repr: b'{"error": ...}'.
        try:
            value = ast.literal_eval(body)
            body = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        except (ValueError, SyntaxError):
            body = body[2:-1]
    if body.startswith("{"):
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            err = payload.get("error", payload)
            if isinstance(err, dict) and err.get("message"):
                return str(err["message"])
            if isinstance(err, str):
                return err
            if payload.get("message"):
                return str(payload["message"])
    # The OpenAI SDK's "Error code: 429 - {'error': {...}}" (a Python repr of the body).
    match = re.match(r"^Error code: \d+ - (\{.*\})$", body, re.S)
    if match:
        try:
            payload = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            payload = None
        if isinstance(payload, dict):
            err = payload.get("error", payload)
            if isinstance(err, dict) and err.get("message"):
                return str(err["message"])
            if isinstance(err, str):
                return err
    return body or text or type(exc).__name__


def retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header on the error, if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
    except Exception:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an SDK error, if it has one."""
    code = getattr(exc, "status_code", None)
    try:
        return int(code) if code is not None else None
    except (TypeError, ValueError):
        return None


def names_of(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def is_connection_error(exc: BaseException) -> bool:
    names = names_of(exc)
    return bool(names & {"APIConnectionError", "ConnectError", "ConnectionError", "ClientConnectionError",
                         "ClientConnectorError", "ServerDisconnectedError", "RemoteProtocolError",
                         "ReadError", "ClientPayloadError", "ConnectionResetError"}) \
        or isinstance(exc, ConnectionError)


_CONNECT_TEXT = re.compile(r"^Connection error\.?$|Cannot connect to host|Connect call failed|Connection refused|"
                           r"Name or service not known|nodename nor servname|Temporary failure in name resolution|"
                           r"getaddrinfo failed|No address associated", re.I)


def unreachable(exc: BaseException) -> bool:
    """True when the request never reached a server (refused, unknown host), however litellm wraps it:
    some providers report it as an HTTP 500 with the connection error as the cause or the text."""
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        names = names_of(node)
        if node is not exc and (is_connection_error(node) or names & {"ClientConnectorError", "gaierror"}):
            return True
        if _CONNECT_TEXT.search(_provider_message(node).strip()):
            return True
        original = getattr(node, "original_exception", None)
        node = original if isinstance(original, BaseException) and id(original) not in seen else (
            node.__cause__ or node.__context__)
    return False


def refused(exc: BaseException) -> bool:
    """True when the server's port refused the connection (nothing listens there): a
    ``ConnectionRefusedError`` under the SDK's or litellm's wrapping. By type, not by text: an HTTP
    error whose body mentions a refused connection (a proxy whose upstream is down) answered."""
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if isinstance(node, ConnectionRefusedError) or getattr(node, "errno", None) == errno.ECONNREFUSED:
            return True
        original = getattr(node, "original_exception", None)
        node = original if isinstance(original, BaseException) and id(original) not in seen else (
            node.__cause__ or node.__context__)
    return False


def tidy_connect_message(message: str) -> str:
    return re.sub(r" ssl:<[^>]*>", "", message).rstrip(" .")


_TIMEOUT_TEXT = re.compile(r"\btime(?:d)?[ -]?out\b", re.I)


def is_timeout(exc: BaseException) -> bool:
    names = names_of(exc)
    if isinstance(exc, TimeoutError) or names & {"Timeout", "APITimeoutError", "TimeoutException",
                                                 "ReadTimeout", "ServerTimeoutError"}:
        return True
    # aiohttp's read timeout reaches us as an APIConnectionError "Timeout on reading data from socket".
    return "APIConnectionError" in names and bool(_TIMEOUT_TEXT.search(_provider_message(exc)))


_CONTEXT_TEXT = re.compile(r"context (?:length|window|size)|maximum context|exceeds? the (?:model'?s? )?context|"
                           r"n_ctx|too many tokens|prompt is too long|input is too long|reduce the length", re.I)


def is_context_overflow(exc: BaseException, message: str) -> bool:
    """A request refused because the prompt is longer than the model's context window."""
    return "ContextWindowExceededError" in names_of(exc) or bool(_CONTEXT_TEXT.search(message))


def describe_wait(seconds: float) -> str:
    """``3 s``, ``4 min``, ``1 h 5 min`` (for a ``Retry-After`` people read)."""
    if seconds < 90:
        return f"{seconds:.3g} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"
