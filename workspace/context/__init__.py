"""Context window management: each model's window, token counts, compaction and truncation.

- :mod:`~workspace.context.window`: how many tokens a model's window holds (a setting, the server,
  litellm's model information, a default);
- :mod:`~workspace.context.tokens`: counting tokens (the model's tokenizer, else a safe estimate), and
  what each tool's schema costs (:func:`tool_costs`: shown where tools are chosen and in the context meter);
- :mod:`~workspace.context.compaction`: summarising older messages without separating a tool call
  from its result;
- :mod:`~workspace.context.results`: tool results too big for the model, cut with a note;
- :mod:`~workspace.context.view`: what of the conversation the model is sent (the summary in place of
  the compacted messages, results cut, the oldest turns left out under the ``"truncate"`` policy);
- :mod:`~workspace.context.budget`: a request counted against the window, the counts corrected by the
  server's, and the room left for the answer;
- :mod:`~workspace.context.policy`: the context policies, a server's refusal of a request as too long,
  and the errors that name what to do;
- :mod:`~workspace.context.requests`: each model call's request as sent, recorded as what changed;
- :mod:`~workspace.context.manager`: :class:`ContextManager`, which the agent loop asks before every
  model call (``ContextManager.stream``) and which ``Robot.compact()`` / ``ThreadSession.compact()``
  use for ``/compact``.

Providers may help: ``provider.context_window() -> int | None`` (the litellm provider reads litellm's
model map) and ``provider.token_counter() -> Callable[[str], int] | None`` (the model's tokenizer);
both are called in a worker thread, once per model.
"""

from __future__ import annotations

from workspace.context.budget import Prepared
from workspace.context.compaction import Compaction
from workspace.context.manager import ContextManager
from workspace.context.policy import (
    DEFAULT_THRESHOLD,
    POLICIES,
    ContextPolicy,
    check_policy,
    is_context_overflow,
)
from workspace.context.tokens import TokenCounter, biggest_tools, estimate, tool_costs
from workspace.context.window import DEFAULT_WINDOW, WindowInfo, resolve_window, window_setting

__all__ = [
    "DEFAULT_THRESHOLD",
    "DEFAULT_WINDOW",
    "POLICIES",
    "Compaction",
    "ContextManager",
    "ContextPolicy",
    "Prepared",
    "TokenCounter",
    "WindowInfo",
    "biggest_tools",
    "check_policy",
    "estimate",
    "is_context_overflow",
    "resolve_window",
    "tool_costs",
    "window_setting",
]
