"""The workspace's own tool surface: what ``robotlab mcp serve`` offers an MCP client.

The same :class:`~workspace.tools.base.Tool` objects the agent loop uses, one definition for two
callers: the built-in tools that can work without a change set (the read-only file tools, memory
tools) and every robot of the catalog as an ``ask_<robot>`` tool. It sits above the robots and the
MCP package; :mod:`workspace.mcp.server` serves whatever list it is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.events import RunFailed
from workspace.mcp import naming
from workspace.tools.base import Tool, ToolContext, ToolOutput
from workspace.tools.selection import filter_tools

if TYPE_CHECKING:
    from workspace.mcp.served import ResourceSource, ServedPrompt

__all__ = ["WRITING_FILE_TOOLS", "robot_tool", "workspace_prompts", "workspace_resources", "workspace_tools",
           "writes_files"]


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
    """Whether ``tool`` is a built-in tool that proposes changes for review (needs a change set).

    Those are the tools of :mod:`workspace.tools.files` not marked read-only (``readOnlyHint``), and
    ``run_command`` (what its command writes is proposed; it runs under the workspace's approval).
    """
    if tool.name == "run_command" and tool.mcp is None:
        return True
    from workspace.tools.script import ScriptTool

    if isinstance(tool, ScriptTool):
        return True
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


def workspace_prompts(folder: Path | None = None) -> list[ServedPrompt]:
    """Every robot's template as an MCP prompt: its instructions (the rendered system prompt), then
    the ``message`` argument (when given) as the user's request."""
    from workspace.catalog import list_robots
    from workspace.mcp.served import PromptArgument, ServedPrompt

    prompts: list[ServedPrompt] = []
    for info in list_robots(folder):
        robot_name = str(info.name)

        def render(arguments: Mapping[str, str], _name: str = robot_name) -> list[tuple[str, str]]:
            from workspace.catalog import load_robot

            robot = load_robot(_name, folder=folder)
            message = str(arguments.get("message") or "")
            system = robot.render_system({**dict(arguments), "message": message}) or ""
            messages = [("user", f"Follow these instructions (the '{_name}' robot of RobotLab Workspace):\n\n"
                                 f"{system}")] if system else []
            if message:
                messages.append(("user", message))
            return messages or [("user", f"(the '{_name}' robot has no instructions)")]

        prompts.append(ServedPrompt(
            name=naming.sanitize(robot_name)[: naming.MAX_LENGTH],
            description=(info.description or f"The '{robot_name}' robot's instructions").rstrip("."),
            arguments=(PromptArgument("message", "what to ask the robot (optional)", required=False),),
            render=render, title=f"{robot_name} (robot)",
        ))
    return prompts


THREAD_URI = "robotlab://threads/{id}"
RESULTS_URI = "robotlab://threads/{id}/results.json"


def workspace_resources(db_path: Path | None = None, *, limit: int = 200) -> ResourceSource:
    """Finished threads as resources: ``robotlab://threads/<id>`` (the transcript, Markdown) and
    ``robotlab://threads/<id>/results.json`` (the results, RobotLab's JSON). The database is opened
    for each request, so threads finished while serving appear."""
    from workspace.mcp.served import ResourceSource, ServedResource

    def store() -> Any:
        from workspace import paths
        from workspace.persistence import Store

        return Store.open(db_path or paths.database_path())

    def listing() -> list[ServedResource]:
        out: list[ServedResource] = []
        db = store()
        try:
            for thread in db.list_threads()[:limit]:
                if not thread.turn_count:
                    continue
                title = thread.title or f"Thread {thread.id[:8]}"
                out.append(ServedResource(THREAD_URI.format(id=thread.id), title,
                                          f"Conversation with {thread.robot} ({thread.turn_count} turns)",
                                          "text/markdown", title))
                out.append(ServedResource(RESULTS_URI.format(id=thread.id), f"{title} (results)",
                                          f"The results of the thread with {thread.robot}", "application/json"))
        finally:
            db.close()
        return out

    def read(uri: str) -> str:
        from workspace.exports import export_markdown, export_results_json

        prefix = "robotlab://threads/"
        if not uri.startswith(prefix):
            raise KeyError(uri)
        rest = uri[len(prefix):]
        thread_id, _, tail = rest.partition("/")
        db = store()
        try:
            try:
                thread_id = db.resolve_thread_id(thread_id)
            except Exception:
                raise KeyError(uri) from None
            if tail == "results.json":
                return export_results_json(db, thread_id)
            if tail:
                raise KeyError(uri)
            return export_markdown(db, thread_id)
        finally:
            db.close()

    return ResourceSource(listing=listing, read=read, templates=[
        (THREAD_URI, "thread", "A thread's transcript (Markdown), by id or id prefix"),
        (RESULTS_URI, "thread results", "A thread's results (JSON), by id or id prefix"),
    ])
