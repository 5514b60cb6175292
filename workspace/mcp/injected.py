"""MCP sessions a program connected itself, given to a robot (RobotLab's ``inject_mcp!``).

A session is anything with ``await list_tools()`` and ``await call_tool(name, arguments)`` as the SDK's
``ClientSession`` has them; its tools become the robot's MCP tools, named as the manager names them
(``<server>__<tool>``), and a call goes to that session. Nothing here imports the SDK: the session was made
by the program, and its results are read as :func:`workspace.mcp.results.result_to_output` reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from workspace.errors import ConfigurationError
from workspace.mcp.catalogue import MAX_TOOLS, too_many_tools
from workspace.mcp.naming import tool_name
from workspace.mcp.results import result_to_output
from workspace.tools.base import Tool, ToolOutput

log = logging.getLogger("workspace.mcp")


def check_clients(clients: Mapping[str, Any]) -> dict[str, Any]:
    """``clients`` (server name → connected session) checked: a session without ``list_tools`` and ``call_tool``
    is refused naming the server and what is expected."""
    out: dict[str, Any] = {}
    for name, session in clients.items():
        if not str(name).strip():
            raise ConfigurationError("inject_mcp: a client's server name is empty; give each session its server's "
                                     "name, like clients={'github': session}")
        missing = [m for m in ("list_tools", "call_tool") if not callable(getattr(session, m, None))]
        if missing:
            raise ConfigurationError(f"inject_mcp: the client of '{name}' has no {' or '.join(missing)}: give a "
                                     "connected session (the mcp SDK's ClientSession, after initialize())")
        out[str(name)] = session
    return out


async def session_tools(clients: Mapping[str, Any]) -> list[Tool]:
    """The tools each session lists, as robot tools calling that session, in the order the sessions were given."""
    tools: list[Tool] = []
    taken: set[str] = set()
    for server, session in clients.items():
        answer = await session.list_tools()
        listed = list(getattr(answer, "tools", answer))
        if len(listed) > MAX_TOOLS:
            log.warning("%s", too_many_tools(str(server), len(listed)))
        for info in listed[:MAX_TOOLS]:
            name = tool_name(server, str(info.name), taken=taken)
            taken.add(name)
            tools.append(_tool(server, session, info, name))
    return tools


def _tool(server: str, session: Any, info: Any, name: str) -> Tool:
    original = str(info.name)

    async def call(arguments: dict[str, Any]) -> ToolOutput:
        return result_to_output(await session.call_tool(original, arguments))

    schema = getattr(info, "inputSchema", None) or getattr(info, "input_schema", None)
    title = getattr(info, "title", None)
    description = getattr(info, "description", None) or title or f"The '{original}' tool of the MCP server '{server}'"
    return Tool(name, description, dict(schema) if schema else None, call, mcp=server,
                annotations={"mcpTool": original}, title=title)
