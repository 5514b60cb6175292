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
from mcp.shared.exceptions import MCPError

from workspace.mcp.results import output_text
from workspace.mcp.served import ResourceSource, ServedPrompt
from workspace.tools.base import Tool, ToolContext, ToolOutput
from workspace.version import __version__

log = logging.getLogger("workspace.mcp.server")

SERVER_NAME = "robotlab-workspace"
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
INSTRUCTIONS = (
    "Tools of a RobotLab Workspace: the built-in tools (files in the opened folder, shared memory) and "
    "ask_<robot> tools that hand a message to one of the workspace's robots and return its answer. Prompts: "
    "each robot's instructions. Resources: finished threads (transcripts and results)."
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


def build_server(tools: Iterable[Tool], *, folder: Path | None = None, prompts: Iterable[ServedPrompt] = (),
                 resources: ResourceSource | None = None) -> Server[Any]:
    """A low-level SDK server listing and calling ``tools``, and (when given) listing and rendering
    ``prompts`` and listing and reading ``resources``."""
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

    handlers: dict[str, Any] = {}
    prompt_table = {p.name: p for p in prompts}
    if prompt_table:
        handlers.update(_prompt_handlers(prompt_table))
    if resources is not None:
        handlers.update(_resource_handlers(resources))
    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool, **handlers)


def _prompt_handlers(table: dict[str, ServedPrompt]) -> dict[str, Any]:
    listed = [types.Prompt(name=p.name, title=p.title, description=p.description, arguments=[
        types.PromptArgument(name=a.name, description=a.description, required=a.required) for a in p.arguments
    ]) for p in table.values()]

    async def on_list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=listed)

    async def on_get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        prompt = table.get(params.name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt '{params.name}'. Prompts: {', '.join(sorted(table))}")
        arguments = dict(params.arguments or {})
        missing = [a.name for a in prompt.arguments if a.required and not arguments.get(a.name)]
        if missing:
            raise MCPError(INVALID_PARAMS, f"Prompt '{prompt.name}' needs the argument(s): {', '.join(missing)}")
        messages = prompt.render(arguments)
        return types.GetPromptResult(description=prompt.description, messages=[
            types.PromptMessage(role="assistant" if role == "assistant" else "user",
                                content=types.TextContent(type="text", text=text))
            for role, text in messages
        ])

    return {"on_list_prompts": on_list_prompts, "on_get_prompt": on_get_prompt}


def _resource_handlers(source: ResourceSource) -> dict[str, Any]:
    async def on_list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        items = source.listing()
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
            for r in items
        ])

    async def on_list_resource_templates(
        ctx: Any, params: types.PaginatedRequestParams | None,
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=uri, name=name, description=description)
            for uri, name, description in source.templates
        ])

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = source.read(uri)
            if not isinstance(text, str):
                text = await text
        except KeyError:
            raise MCPError(RESOURCE_NOT_FOUND, f"No resource {uri}; resources/list shows the threads") from None
        mime = "application/json" if uri.endswith(".json") else "text/markdown"
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    return {"on_list_resources": on_list_resources, "on_list_resource_templates": on_list_resource_templates,
            "on_read_resource": on_read_resource}


async def serve_stdio(tools: Iterable[Tool], *, folder: Path | None = None, prompts: Iterable[ServedPrompt] = (),
                      resources: ResourceSource | None = None) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(tools, folder=folder, prompts=prompts, resources=resources)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(tools: Iterable[Tool], *, port: int, folder: Path | None = None,
                     host: str = "127.0.0.1", prompts: Iterable[ServedPrompt] = (),
                     resources: ResourceSource | None = None) -> None:
    """Streamable HTTP on ``http://127.0.0.1:PORT/mcp`` until cancelled."""
    import uvicorn

    server = build_server(tools, folder=folder, prompts=prompts, resources=resources)
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
