"""Rules and ``autoApprove`` entries that match no tool, said where the policy is shown.

A rule written for a tool that no configured server offers (a misspelling, the server's own name without
the server, a tool that was renamed) is never applied: the tool it meant runs as the defaults say. Settings ›
Approvals and ``robotlab config show`` list such rules with what was probably meant. The tools are what the
:class:`~workspace.mcp.manager.MCPManager` knows: a server that is not running has no known tools, and a rule
that may be about it is said to be unchecked for it, never to match nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from workspace.approval import ApprovalPolicy, KnownTools, rule_problems
from workspace.mcp.catalogue import matches
from workspace.mcp.resources import LIST_TOOL, READ_TOOL
from workspace.mcp.status import ServerState

if TYPE_CHECKING:
    from workspace.mcp.manager import MCPManager


def local_tool_names(robots: Iterable[str] = ()) -> list[str]:
    """The tools that run in the process and that a rule may name: the built-in tools, the MCP resource tools,
    and ``robots`` (names of robots, which other robots may use as tools)."""
    from workspace.tools import registry

    names = [tool.name for tool in registry.builtin_tools()] + [LIST_TOOL, READ_TOOL]
    return names + [re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] for name in robots]


def known_tools(manager: MCPManager, *, local: Iterable[str] | None = None) -> KnownTools:
    """Each configured server's tools as far as ``manager`` knows them (None: not running, not known)."""
    servers: dict[str, Sequence[tuple[str, str]] | None] = {}
    for status in manager.statuses():
        if status.state == ServerState.READY or status.tools:
            servers[status.name] = [(info.name, info.original) for info in status.tools]
        else:
            servers[status.name] = None
    return KnownTools(servers=servers, local=list(local) if local is not None else local_tool_names())


def auto_approve_problems(manager: MCPManager, known: KnownTools) -> list[str]:
    """``autoApprove`` / ``alwaysAllow`` entries that match no tool of their server."""
    import difflib

    problems: list[str] = []
    for name in manager.server_names():
        spec = manager.spec(name)
        if spec is None or not spec.auto_approve:
            continue
        tools = known.servers.get(name)
        for pattern in spec.auto_approve:
            if pattern == "*":
                continue
            label = f"mcpServers.{name}.autoApprove entry '{pattern}'"
            if tools is None:
                problems.append(f"{label} could not be checked: the server is not running, so its tools are not "
                                "known (start it to check)")
                continue
            if any(matches(original, [pattern], name) for _robot_name, original in tools):
                continue
            names = [n for pair in tools for n in pair]
            close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.6)
            hint = (": did you mean " + " or ".join(repr(c) for c in close) + "?") if close else \
                f"; its tools are: {', '.join(t for _n, t in tools) or '(none)'}"
            problems.append(f"{label} matches no tool of '{name}'{hint}")
    return problems


def approval_problems(policy: ApprovalPolicy, manager: MCPManager, *,
                      local: Iterable[str] | None = None) -> list[str]:
    """Every rule of ``policy`` and every ``autoApprove`` entry that matches no tool (or could not be checked)."""
    known = known_tools(manager, local=local)
    return rule_problems(policy, known) + auto_approve_problems(manager, known)
