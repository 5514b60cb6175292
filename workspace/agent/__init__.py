"""The tool-use loop: one provider-agnostic async loop that streams events.

- :mod:`workspace.agent.run`: :class:`AgentRun` (the loop: model turns, tools, budgets, the one
  terminal event) and :class:`EventRun` (what every run shares: an event queue iterated once);
- :mod:`workspace.agent.spec`: :class:`RunSpec` (what a run is given) and :class:`PendingTools`;
- :mod:`workspace.agent.event_run`: :class:`EventRun` on its own;
- :mod:`workspace.agent.tool_calls`: a turn's tool calls (approval, hooks, time limits, the guards);
- :mod:`workspace.agent.turn`: one model turn, from the provider's chunks to events (text, thinking,
  status, usage, tool calls; fallbacks on an outage; tool calls the model wrote as text).
"""

from __future__ import annotations

from workspace.agent.run import (
    CONTINUE_PROMPT,
    STOPPED_TOOL_ERROR,
    AgentRun,
    EventRun,
    PendingTools,
    RunSpec,
)

__all__ = ["CONTINUE_PROMPT", "STOPPED_TOOL_ERROR", "AgentRun", "EventRun", "PendingTools", "RunSpec"]
