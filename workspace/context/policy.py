"""The context policy, a server's refusal of a request as too long, and what a person is told then.

Past the threshold (:data:`DEFAULT_THRESHOLD` of the window) the context manager acts by its policy:
``"compact"`` summarises the older messages, ``"truncate"`` leaves the oldest whole turns out of the
request, ``"error"`` fails a request that does not fit before it is sent. :func:`is_context_overflow`
tells a provider's refusal of a request longer than the model's window from its other failures (the
manager compacts or truncates and retries once); :func:`too_long_message` and :func:`refused_message`
are the errors said when even that does not fit, each naming what to do.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from workspace.errors import OVERFLOW_FAILURES, ContextOverflowError, ProviderError

if TYPE_CHECKING:
    from workspace.context.budget import Prepared

__all__ = [
    "DEFAULT_THRESHOLD",
    "POLICIES",
    "ContextPolicy",
    "check_policy",
    "is_context_overflow",
    "refused_message",
    "too_long_message",
]

ContextPolicy = Literal["compact", "truncate", "error"]
POLICIES: tuple[str, ...] = ("compact", "truncate", "error")
#: The share of the window past which the policy acts.
DEFAULT_THRESHOLD = 0.8

_OVERFLOW_TEXT = re.compile(
    r"context[ _-]?length|maximum context|context[ _-]?window|context_length_exceeded|too many tokens|"
    r"prompt is too long|input is too long|exceeds? (?:the )?(?:model'?s? )?(?:context|maximum)|\bn_ctx\b",
    re.I)

#: What a person can do about a conversation too long for the model's window.
_FIXES = ("Start a new thread, compact the conversation (/compact), set a larger window if the server "
          "allows one (llm.context_window in the configuration, or context_window in the robot's front "
          "matter), or use a model with a larger context window")


def is_context_overflow(exc: BaseException) -> bool:
    """Whether ``exc`` is a provider's refusal of a request longer than the model's window (an empty
    HTTP 200 from a local server included: ``ProviderError.reason`` ``empty``)."""
    if isinstance(exc, ContextOverflowError) or getattr(exc, "context_overflow", False):
        return True
    if isinstance(exc, ProviderError) and exc.reason in OVERFLOW_FAILURES:
        return True
    return (isinstance(exc, ProviderError) and exc.status_code in (None, 400, 413, 422)
            and bool(_OVERFLOW_TEXT.search(str(exc))))


def check_policy(value: Any, *, where: str = "context_policy") -> ContextPolicy:
    """``value`` if it is a context policy, else a ValueError naming the three."""
    if value not in POLICIES:
        raise ValueError(f"{where} must be one of {', '.join(POLICIES)} (got {value!r})")
    return value


def too_long_message(model: str | None, policy: ContextPolicy, prepared: Prepared, hard: int) -> str:
    """Why a request of ``prepared.used`` tokens is not sent: more than ``hard`` (the window less the
    answer's room) even after the policy acted."""
    window = prepared.window
    assert window is not None
    model = model or "the model"
    what = {"compact": "even after compacting the older messages",
            "truncate": "even without the older turns",
            "error": "(the context policy is 'error', so nothing was compacted; the 'compact' policy would "
                     "summarise older messages)"}[policy]
    cause = ""
    if prepared.tools_tokens * 4 >= window.tokens:  # the tools' schemas, not older messages, fill the window
        biggest = ", ".join(f"{name} ({tokens:,})" for name, tokens in prepared.biggest_tools.items())
        cause = (f" The tools' schemas take {prepared.tools_tokens:,} tokens of it (the biggest: {biggest}): "
                 "offer the robot fewer tools (tools: / mcp: in its file, or tools=[...]), or let it search "
                 "for them (a tool_share below 1).")
    return (f"{model}: the request ({prepared.used:,} tokens) does not fit the context window "
            f"({window.tokens:,} tokens, {window.describe()}; {window.tokens - hard:,} kept for the answer) "
            f"{what}.{cause} {_FIXES}")


def refused_message(model: str | None, policy: ContextPolicy, prepared: Prepared, exc: BaseException,
                    retried: bool) -> str:
    """Why a request the server refused as too long (``exc``) is not retried again: it was (``retried``),
    or the policy is ``"error"``."""
    model = model or "the model"
    window = prepared.window
    size = f" ({window.tokens:,} tokens, {window.describe()})" if window is not None else ""
    if retried:
        what = "even after " + ("compacting" if policy == "compact" else "leaving out the oldest turns")
    else:
        what = "(the context policy is 'error', so nothing was compacted)"
    return (f"{model}: the conversation is longer than the model's context window{size} {what} — the "
            f"server said: {exc}. {_FIXES}")
