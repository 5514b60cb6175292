"""``robotlab mcp serve``: the workspace's own tools, served over MCP.

The same :class:`~workspace.tools.base.Tool` objects the agent loop uses are listed and
called here — one definition, two callers:

* the built-in tools (:func:`workspace.tools.registry.builtin_tools`: the read-only file tools
  working in ``--folder``, memory tools sharing one memory for the life of the server). The
  file-writing tools (``write_file``, ``edit_file``, ...) are left out: they propose changes
  into a run's change set for the user to review, and a served call has no change set, so
  they could only fail (:func:`writes_files`);
* every robot (:func:`workspace.catalog.list_robots`) as a tool ``ask_<robot>`` taking a
  ``message``: the robot runs headless (:meth:`Robot.stream`) and the tool returns its
  answer's text. Cancelling the MCP request stops the robot's run.

Over stdio by default; with ``--http PORT``, streamable HTTP on ``127.0.0.1:PORT/mcp``
(loopback only, with the SDK's DNS-rebinding protection).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.server import Server

from workspace import __version__
from workspace.events import RunFailed
from workspace.mcp import naming
from workspace.mcp.results import output_text
from workspace.tools.base import Tool, ToolContext, ToolOutput
from workspace.tools.selection import filter_tools

log = logging.getLogger("workspace.mcp.server")

SERVER_NAME = "robotlab-workspace"
INSTRUCTIONS = (
    "Tools of a RobotLab Workspace: the built-in tools (files in the opened folder, shared memory) and "
    "ask_<robot> tools that hand a message to one of the workspace's robots and return its answer."
)


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


def _annotations(tool: Tool) -> types.ToolAnnotations | None:
    hints = tool.annotations
    if not hints and not tool.title:
        return None
    return types.ToolAnnotations(
        title=tool.title,
        read_only_hint=hints.get("readOnlyHint"),
        destructive_hint=hints.get("destructiveHint"),
        idempotent_hint=hints.get("idempotentHint"),
        open_world_hint=hints.get("openWorldHint"),
    )


def to_mcp_tool(tool: Tool) -> types.Tool:
    schema = dict(tool.parameters) if tool.parameters else {"type": "object", "properties": {}}
    schema.setdefault("type", "object")
    return types.Tool(name=tool.name, title=tool.title, description=tool.description or "",
                      input_schema=schema, annotations=_annotations(tool))


def to_call_result(output: ToolOutput) -> types.CallToolResult:
    text = output_text(output.data)
    structured = output.data if isinstance(output.data, dict) and not output.is_error else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=structured, is_error=output.is_error)


def build_server(tools: Iterable[Tool], *, folder: Path | None = None) -> Server[Any]:
    """A low-level SDK server listing and calling ``tools``."""
    from workspace.memory import Memory

    table = {t.name: t for t in tools}
    listed = [to_mcp_tool(t) for t in table.values()]
    memory = Memory()

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = table.get(params.name)
        if tool is None:
            known = ", ".join(sorted(table)) or "(none)"
            return to_call_result(ToolOutput(f"Unknown tool '{params.name}'. Tools: {known}", is_error=True))
        context = ToolContext(robot="mcp-client", run_id="mcp", call_id=str(getattr(ctx, "request_id", "") or ""),
                              memory=memory, folder=folder)
        output = await tool.invoke(params.arguments or {}, context)
        return to_call_result(output)

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def serve_stdio(tools: Iterable[Tool], *, folder: Path | None = None) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(tools, folder=folder)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(tools: Iterable[Tool], *, port: int, folder: Path | None = None,
                     host: str = "127.0.0.1") -> None:
    """Streamable HTTP on ``http://127.0.0.1:PORT/mcp`` until cancelled."""
    import uvicorn

    server = build_server(tools, folder=folder)
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
