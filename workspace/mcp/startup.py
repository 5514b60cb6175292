"""Starting a run's MCP servers without making the run wait for a slow or unresponsive one.

:func:`tools_ready` (``MCPManager.tools_ready``) starts every server the run names concurrently,
in the background, and waits only a little: until ``wait`` seconds after each server's start
began (``agent.mcp_startup_wait``, 5 s by default). A server starting for longer than that (a
previous run already waited for it) is not waited for again, so one server that never answers
costs the first run at most ``wait`` seconds and the next ones nothing, instead of its 30 s
connect timeout on every run.

The :class:`ToolsReport` says which servers are ready (their tools), still starting, or failed
(why). For the servers still starting, :class:`LateServers` is what the agent loop polls before
each model turn: a server that came up since offers its tools from that turn on (the model
sees them in its next request; a turn already asked cannot gain tools), one that failed is
reported once. When the model calls a tool of a server that is still starting (it knows the
tool from an earlier run of the thread), the call waits for that server instead of failing
with "unknown tool".
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workspace.errors import MCPError
from workspace.mcp import naming
from workspace.mcp.status import ServerState

if TYPE_CHECKING:
    from workspace.mcp.config import ServerSpec
    from workspace.mcp.manager import MCPManager
    from workspace.mcp.status import ToolInfo
    from workspace.tools.base import Tool

#: How long a run waits for its MCP servers to start, by default (``agent.mcp_startup_wait``).
DEFAULT_STARTUP_WAIT = 5.0


@dataclass
class ToolsReport:
    """The state of a run's MCP servers when it starts (or at a later look)."""

    #: The enabled tools of the ready servers, named uniquely across servers.
    tools: list[Tool] = field(default_factory=list)
    ready: list[str] = field(default_factory=list)
    starting: list[str] = field(default_factory=list)
    #: Server name -> why it is not available.
    failed: dict[str, str] = field(default_factory=dict)
    #: What the agent loop polls for the servers still starting (None when none is or failed).
    pending: LateServers | None = None


async def tools_ready(manager: MCPManager, names: list[str], *, wait: float) -> ToolsReport:
    """Start ``names`` in the background, wait for them a little, and report (see the module)."""
    conns = {}
    for name in names:
        conn = manager.connection(name)
        conn.begin()
        conns[name] = conn
    now = time.monotonic()
    waits = []
    for conn in conns.values():
        if conn.running and conn.state is ServerState.STARTING and conn.started_at is not None:
            remaining = conn.started_at + wait - now
            if remaining > 0:
                waits.append(conn.wait_settled(remaining))
    if waits:
        await asyncio.gather(*waits)
    out = report(manager, names)
    if out.starting or out.failed:
        out.pending = LateServers(manager, out.starting, out.failed)
    return out


def report(manager: MCPManager, names: list[str]) -> ToolsReport:
    """Where ``names`` are now, with the tools of the ready ones (no waiting, nothing started)."""
    out = ToolsReport()
    pending: list[tuple[ServerSpec, ToolInfo]] = []
    for name in names:
        conn = manager.connection(name)
        if conn.state is ServerState.READY and conn.session is not None:
            out.ready.append(name)
            pending.extend((conn.spec, info) for info in manager._tool_infos(conn.spec, conn) if info.enabled)
        elif conn.running and conn.state is ServerState.STARTING:
            out.starting.append(name)
        else:
            out.failed[name] = conn.reason or "it is not running"
    out.tools = manager._tools_of(pending)
    return out


class LateServers:
    """The servers a run started without, polled by the agent loop before each model turn
    (:class:`workspace.agent.PendingTools`)."""

    def __init__(self, manager: MCPManager, starting: list[str], failed: dict[str, str]) -> None:
        self.manager = manager
        self.starting = list(starting)
        self.failed = dict(failed)

    async def poll(self) -> tuple[list[Tool], list[str], dict[str, str]]:
        """``(tools, joined, failed)``: the tools of servers that came up since the last look,
        their names, and the servers that failed since (name -> why)."""
        if not self.starting:
            return [], [], {}
        now = report(self.manager, self.starting)
        joined = [n for n in self.starting if n in now.ready]
        failed = {n: why for n, why in now.failed.items() if n in self.starting}
        self.starting = [n for n in self.starting if n in now.starting]
        tools = [t for t in now.tools if t.mcp in joined]
        return tools, joined, failed

    async def wait_for_tool(self, tool_name: str) -> bool:
        """When ``tool_name`` belongs to a server still starting, wait for that server (at most its
        connect timeout); True when it is up now (poll again for its tools)."""
        for name in self.starting:
            if tool_name.startswith(naming.server_prefix(name)):
                conn = self.manager.connection(name)
                try:
                    await conn.ensure_ready()
                except MCPError:
                    return False
                return True
        return False
