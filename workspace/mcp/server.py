"""``robotlab mcp serve``: the workspace's own tools, served over MCP.

The same :class:`~workspace.tools.base.Tool` objects the agent loop uses are listed and
called here — one definition, two callers:

* the built-in tools (:func:`workspace.tools.registry.builtin_tools`: the read-only file tools
  working in ``--folder``, memory tools sharing one memory for the life of the server). The
  file-writing tools (``write_file``, ``edit_file``, ...) are left out: they propose changes
  into a run's change set for the user to review, and a served call has no change set, so
  they could only fail (:func:`writes_files`);
* every robot as a tool ``ask_<robot>`` taking a ``message`` (the robot runs headless and the tool
  returns its answer's text; cancelling the MCP request stops the robot's run).

Which tools make up that surface is decided by :mod:`workspace.surface` (above both the robots and
this package); this module only speaks MCP for a list of tools it is given.

Over stdio by default; with ``--http PORT``, streamable HTTP on ``127.0.0.1:PORT/mcp``
(loopback only, with the SDK's DNS-rebinding protection).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.server import Server

from workspace.mcp.results import output_text
from workspace.tools.base import Tool, ToolContext, ToolOutput
from workspace.version import __version__

log = logging.getLogger("workspace.mcp.server")

SERVER_NAME = "robotlab-workspace"
INSTRUCTIONS = (
    "Tools of a RobotLab Workspace: the built-in tools (files in the opened folder, shared memory) and "
    "ask_<robot> tools that hand a message to one of the workspace's robots and return its answer."
)


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
