"""The workspace's own tool surface: what ``robotlab mcp serve`` offers an MCP client.

The same :class:`~workspace.tools.base.Tool` objects the agent loop uses, one definition for two
callers: the built-in tools that can work without a change set (the read-only file tools, memory
tools) and every robot of the catalog as an ``ask_<robot>`` tool. It sits above the robots and the
MCP package; :mod:`workspace.mcp.server` serves whatever list it is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workspace.events import RunFailed
from workspace.mcp import naming
from workspace.tools.base import Tool, ToolContext, ToolOutput
from workspace.tools.selection import filter_tools

__all__ = ["WRITING_FILE_TOOLS", "robot_tool", "workspace_tools", "writes_files"]


def robot_tool(info: Any, *, folder: Path | None = None) -> Tool:
    """``ask_<robot>``: run the robot on a message and return the text of its answer."""
    robot_name = str(info.name)
    description = (info.description or f"The '{robot_name}' robot of this workspace").rstrip(".")

    async def ask(arguments: dict[str, Any], context: ToolContext | None = None) -> ToolOutput:
        from workspace.catalog import load_robot

        robot = load_robot(robot_name, folder=folder)
        run = robot.stream(str(arguments["message"]), folder=folder) if folder else robot.stream(
            str(arguments["message"]))
        try:
            terminal = await run.wait()
        except asyncio.CancelledError:
            run.cancel("the MCP client cancelled the request")
            raise
        result = run.result
        text = result.last_text_content if result is not None else None
        if isinstance(terminal, RunFailed):
            return ToolOutput(f"The robot '{robot_name}' failed: {terminal.error}", is_error=True)
        raw = result.to_dict() if result is not None else None
        return ToolOutput(text or "", raw=raw)

    name = "ask_" + naming.sanitize(robot_name)
    return Tool(
        name[: naming.MAX_LENGTH],
        f"Ask the '{robot_name}' robot: {description}. It answers the message in text.",
        {"type": "object", "properties": {"message": {"type": "string", "description": "what to ask or tell it"}},
         "required": ["message"]},
        ask,
        annotations={"readOnlyHint": False, "openWorldHint": True},
        title=f"Ask {robot_name}",
    )


#: The file tools that propose writes (workspace.tools.files), should that module not say itself.
WRITING_FILE_TOOLS = frozenset({"write_file", "edit_file", "apply_patch", "create_file", "delete_file",
                                "rename_file"})


def writes_files(tool: Tool) -> bool:
    """Whether ``tool`` is a built-in file tool that proposes changes for review (needs a change set).

    Those are the tools of :mod:`workspace.tools.files` not marked read-only (``readOnlyHint``).
    """
    try:
        from workspace.tools.files import FILE_TOOLS
    except ImportError:  # pragma: no cover - the module ships with the workspace
        return tool.name in WRITING_FILE_TOOLS
    return any(tool is t or tool.name == t.name for t in FILE_TOOLS) and not tool.annotations.get("readOnlyHint")


def workspace_tools(
    folder: Path | None = None, *, robots: bool = True, patterns: Sequence[str] | None = None,
) -> list[Tool]:
    """The tool surface ``serve`` exposes: built-ins that can work here (not the file-writing ones,
    see :func:`writes_files`), then ``ask_<robot>`` tools (optionally filtered)."""
    from workspace.tools.registry import builtin_tools

    tools = [t for t in builtin_tools() if not writes_files(t)]
    if robots:
        from workspace.catalog import list_robots

        names = {t.name for t in tools}
        for info in list_robots(folder):
            tool = robot_tool(info, folder=folder)
            if tool.name not in names:
                names.add(tool.name)
                tools.append(tool)
    if patterns:
        tools = filter_tools(tools, list(patterns))
    return tools
