"""RobotLab's error hierarchy and its error helpers (spec 1.11)."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any


class Error(Exception):
    """Base class of every RobotLab error."""


class ConfigurationError(Error):
    """A bad configuration value; the message names the file and the key."""


class ToolNotFoundError(Error):
    """A tool name that no manifest knows."""


class InferenceError(Error):
    """The model call failed (see :class:`ProviderError` for provider failures)."""


class ProviderError(InferenceError):
    """A provider call failed for good.

    ``status_code`` is the HTTP status when there was one; ``retryable`` says whether
    the failure is of a kind that retrying may cure (429, 5xx, timeouts, cut streams).
    ``reason`` names the kind of failure (:data:`PROVIDER_FAILURES`), None when unclassified.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        retryable: bool = False,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code
        self.retryable = retryable
        self.reason = reason

    #: True when the request did not fit the model's context window (see :class:`ContextOverflowError`;
    #: another provider may set it on its own errors).
    context_overflow: bool = False

    @property
    def is_outage(self) -> bool:
        """The model cannot answer now (rate limit, server error, unreachable, no answer in time):
        a robot's ``fallback_models`` are tried."""
        return self.reason in OUTAGE_FAILURES


#: What ``ProviderError.reason`` may say: ``rate_limit`` (429), ``server_error`` (5xx),
#: ``unreachable`` (no connection), ``timeout`` (no answer in time), ``cut`` (the stream ended early),
#: ``empty`` (HTTP 200 without a stream), ``not_a_stream`` (an HTML page or garbage instead of events),
#: ``auth`` (key missing or refused), ``context`` (the prompt is longer than the context window),
#: ``not_found``, ``bad_request``, ``too_long`` (an answer past ``llm.max_answer_chars``, stopped).
PROVIDER_FAILURES = frozenset({"rate_limit", "server_error", "unreachable", "timeout", "cut", "empty",
                               "not_a_stream", "auth", "context", "not_found", "bad_request", "too_long"})
#: The failures after which a robot's fallback models are tried.
OUTAGE_FAILURES = frozenset({"rate_limit", "server_error", "unreachable", "timeout"})
#: The failures that mean the request did not fit the model's context window: a refusal that says
#: so, and an empty HTTP 200 (how llama-cpp-python's server answers an over-long prompt).
OVERFLOW_FAILURES = frozenset({"context", "empty"})


class ContextOverflowError(ProviderError):
    """The request was longer than the model's context window.

    Providers raise it for a context-length refusal (litellm's ``ContextWindowExceededError``, an
    HTTP 400 saying "maximum context length": ``reason`` ``context``) and for a local server's empty
    answer to an over-long prompt (``reason`` ``empty``); the agent loop then compacts the
    conversation and retries once (:mod:`workspace.context`). ``window`` is the model's window when
    the provider said it.
    """

    context_overflow = True

    def __init__(self, message: str, *, provider: str | None = None, status_code: int | None = None,
                 window: int | None = None, reason: str = "context") -> None:
        super().__init__(message, provider=provider, status_code=status_code, retryable=False, reason=reason)
        self.window = window


class MCPError(Error):
    """An MCP server could not be reached or answered badly; ``retryable`` says whether trying again may help
    (RobotLab's ``MCPError(retryable:)``)."""

    def __init__(self, *args: object, retryable: bool = False) -> None:
        super().__init__(*args)
        self.retryable = retryable


class ToolError(Error):
    """A tool failed; raised by a tool, the model is sent ``Error (<tool>): <message>``, with ``" (retryable)"``
    when ``retryable`` (RobotLab's ``ToolError(retryable:)``): the model may call it again."""

    def __init__(self, *args: object, retryable: bool = False) -> None:
        super().__init__(*args)
        self.retryable = retryable


class AwaitTimeout(Error):
    """``Memory.wait_for`` gave up waiting for a key."""


class HistoryError(Error):
    """A conversation-history callback is missing or misbehaved."""


class RunFailedError(Error):
    """A robot run ended in ``run_failed``; ``arun`` raises this with the run's error."""


class ToolLoopError(InferenceError):
    """The run made more tool calls than ``max_tool_rounds`` allows (RobotLab's circuit breaker); not retryable."""


def retryable(error: BaseException | None) -> bool:
    """RobotLab's ``Errors.retryable?``: whether the operation that raised ``error`` may be tried again.
    ``ToolLoopError`` never; ``MCPError`` / ``ToolError`` when raised with ``retryable=True``; another
    ``InferenceError`` as it says (a provider's error knows whether it was passing); anything else never."""
    if error is None or isinstance(error, ToolLoopError):
        return False
    if isinstance(error, MCPError | ToolError):
        return getattr(error, "retryable", False) is True
    if isinstance(error, InferenceError):
        return getattr(error, "retryable", True) is not False
    return False


class SandboxError(Error):
    """A path outside the folder the user opened, or another refused file operation."""


#: Classes known to :func:`deserialize`, by RobotLab's names and by ours.
_KNOWN: dict[str, type[BaseException]] = {}
for _cls in (Error, ConfigurationError, ToolNotFoundError, InferenceError, ProviderError, ContextOverflowError,
             MCPError, ToolError, AwaitTimeout, HistoryError, RunFailedError, SandboxError, ToolLoopError):
    _KNOWN[_cls.__name__] = _cls
    _KNOWN[f"RobotLab::{_cls.__name__}"] = _cls
_KNOWN["RobotLab::Error"] = Error


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    if cls.__module__ == __name__:
        return f"RobotLab::{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def serialize(exc: BaseException, *, include_backtrace: bool = False) -> dict[str, Any]:
    """``{type, message, backtrace?, cause?}`` with the cause serialized recursively."""
    out: dict[str, Any] = {"type": _type_name(exc), "message": str(exc)}
    if include_backtrace and exc.__traceback__ is not None:
        lines = traceback.format_tb(exc.__traceback__)
        out["backtrace"] = [line.rstrip() for line in lines][:10]
    cause = exc.__cause__ or (exc.__context__ if not exc.__suppress_context__ else None)
    if cause is not None:
        out["cause"] = serialize(cause, include_backtrace=include_backtrace)
    return out


def deserialize(data: dict[str, Any]) -> BaseException:
    """Rebuild an exception from :func:`serialize`'s dict; unknown types become ``Exception``."""
    type_name = str(data.get("type", ""))
    message = str(data.get("message", ""))
    cls: type[BaseException] | None = _KNOWN.get(type_name)
    if cls is None:
        import builtins

        candidate = getattr(builtins, type_name, None)
        if isinstance(candidate, type) and issubclass(candidate, Exception):
            cls = candidate
    try:
        return (cls or Exception)(message)
    except TypeError:
        return Exception(message)


def format_error(exc: BaseException) -> str:
    """``"[ClassName] message"``."""
    return f"[{type(exc).__name__}] {exc}"


def capture(fn: Callable[[], Any]) -> dict[str, Any]:
    """``{"data": fn()}``, or ``{"error": serialize(e)}`` when ``fn`` raises an ``Exception``."""
    try:
        return {"data": fn()}
    except Exception as exc:
        return {"error": serialize(exc)}
