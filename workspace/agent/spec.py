"""What one run of the loop is given: :class:`RunSpec` (built by :class:`workspace.robot.Robot`), the MCP
servers still starting when it began (:class:`PendingTools`) and what the run says about them
(:func:`servers_message`)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from workspace import events as ev
from workspace import hooks
from workspace.agent.guards import DEFAULT_MAX_TOOLS, DoomLoopDetector
from workspace.approval import ApprovalGate
from workspace.attachments import Attachment
from workspace.context import ContextManager
from workspace.ledger import Ledger
from workspace.messages import Message
from workspace.output import StructuredOutput
from workspace.providers.base import Provider
from workspace.result import RobotResult
from workspace.tools.base import Tool
from workspace.tools.manifest import ToolManifest

__all__ = ["PendingTools", "RunSpec", "ToolCallback", "servers_message"]


ToolCallback = Callable[..., Any]


class PendingTools(Protocol):
    """Tools that may join a run after it started: the MCP servers still starting when it began
    (:class:`workspace.mcp.startup.LateServers`). The loop polls it before each model turn."""

    @property
    def starting(self) -> list[str]:
        """Servers still starting."""
        ...

    @property
    def failed(self) -> dict[str, str]:
        """Servers not available: name -> why."""
        ...

    async def poll(self) -> tuple[list[Tool], list[str], dict[str, str]]:
        """``(tools, joined, failed)`` since the last poll (no waiting)."""
        ...

    async def wait_for_tool(self, tool_name: str) -> bool:
        """Wait for the server ``tool_name`` belongs to, if it is still starting; True when it is up."""
        ...


def servers_message(*, starting: Sequence[str] = (), joined: Sequence[str] = (),
                    failed: Mapping[str, str] | None = None, tools: Sequence[str] = ()) -> str:
    """What an :class:`~workspace.events.McpServers` event says, one line per state."""

    def names(items: Sequence[str]) -> str:
        return ", ".join(f"'{n}'" for n in items)

    lines = []
    if starting:
        one = len(starting) == 1
        lines.append(f"MCP server{'' if one else 's'} {names(starting)} {'is' if one else 'are'} still starting: the "
                     f"run goes on without {'its' if one else 'their'} tools, which join when "
                     f"{'it is' if one else 'they are'} up")
    if joined:
        one = len(joined) == 1
        listed = f" ({', '.join(tools[:6])}{', …' if len(tools) > 6 else ''})" if tools else ""
        lines.append(f"MCP server{'' if one else 's'} {names(joined)} {'is' if one else 'are'} up: "
                     f"{'its' if one else 'their'} tools join the run from this turn{listed}")
    for name, why in (failed or {}).items():
        lines.append(f"MCP server '{name}' is not available, the run goes on without it: {why}")
    return "\n".join(lines)


@dataclass(slots=True)
class RunSpec:
    """Everything one run needs; built by :class:`workspace.robot.Robot`."""

    robot: str
    provider: Provider
    system: str | None
    #: The conversation so far; the run appends to it in place.
    history: list[Message]
    message: str
    tools: ToolManifest = field(default_factory=ToolManifest)
    settings: Mapping[str, Any] = field(default_factory=dict)
    max_turns: int = 20
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    task: str | None = None
    memory: Any = None
    network: Any = None
    folder: Path | None = None
    changes: Any = None
    approval: ApprovalGate | None = None
    on_tool_call: ToolCallback | None = None
    on_tool_result: ToolCallback | None = None
    #: Called with the final RobotResult (the robot appends it to memory).
    on_result: Callable[[RobotResult], None] | None = None
    thread_id: str | None = None
    #: Per-tool-call time limit (seconds) for tools without their own.
    tool_timeout: float | None = None
    #: Emit ``memory_changed`` for changes of ``memory`` during the run (a network watches itself).
    watch_memory: bool = True
    #: Resolves the run's tools (MCP servers connect here) when the run starts.
    tools_loader: Callable[[], Awaitable[ToolManifest]] | None = None
    #: Set by ``tools_loader`` when some MCP servers were still starting or failed.
    pending_tools: PendingTools | None = None
    #: Said to the person when the run starts (``run_status`` notices), e.g. by ``tools_loader``.
    notices: list[str] = field(default_factory=list)
    #: An extra shared sequence counter (a network run numbers all its tasks' events).
    sequence: Callable[[], int] | None = None
    #: Providers to ask, in order, when the model has an outage or a rate limit (built when needed).
    fallbacks: list[Callable[[], Provider]] = field(default_factory=list)
    #: The run stops before a model call once it cost this much (USD; only when the price is known).
    max_cost: float | None = None
    #: The run stops before a model call once it used this many tokens (in + out).
    max_total_tokens: int | None = None
    #: The budget ledger each model call reserves from and settles in (RobotLab's ``Budget::Ledger``; a
    #: robot's ``token_budget`` / ``cost_budget``, or one a network's tasks share); None: no ledger.
    ledger: Ledger | None = None
    #: A tool call the model wrote as text: "run" it, only give a "notice", or "off".
    text_tool_calls: str = "run"
    #: Keeps each request within the model's context window (compacts, truncates or refuses).
    context: ContextManager | None = None
    #: The answer must be a validated object (``Robot(output_type=...)``, :mod:`workspace.output`).
    output: StructuredOutput | None = None
    #: The run this one works for (a network's run, or the run whose tool call started it) and that
    #: tool call: set on every event (see :mod:`workspace.events`).
    parent_run_id: str | None = None
    parent_tool_id: str | None = None
    #: The run's place in a comparison (0, 1, ...), stamped on its events; None outside one.
    candidate: int | None = None
    #: Files, images and MCP resources sent with ``message`` (:mod:`workspace.attachments`).
    attachments: list[Attachment] = field(default_factory=list)
    #: The Robot object the hooks are told about (``ctx.robot``).
    owner: Any = None
    #: The hooks of this run, in order: global, network, robot, per run (:mod:`workspace.hooks`).
    hooks: tuple[hooks.Registration, ...] = ()
    #: The most tool calls a run may make; one more fails it with ToolLoopError (None: no limit).
    max_tool_rounds: int | None = None
    #: Warn the model when the same tool (or cycle of tools) is called this many times in a row (0: never).
    doom_loop_threshold: int = DoomLoopDetector.DEFAULT_THRESHOLD
    #: The most tools offered to the model (the rest are dropped, with a notice).
    max_tools: int = DEFAULT_MAX_TOOLS
    #: Started with the run (after ``run_started``), each given the run's ``emit``; each returns the function that
    #: stops it, called when the run ends (a robot's bus outside a network: :func:`workspace.bus.watch_run`).
    watchers: list[Callable[[Callable[[ev.Event], ev.Event]], Callable[[], None]]] = field(default_factory=list)
