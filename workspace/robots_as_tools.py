"""Robots as tools: a robot calls other robots in the same process.

``robot.as_tool(name=None, description=None)`` makes a :class:`~workspace.tools.base.Tool` that runs
the robot on the message the calling model gives (``{"message": "..."}``), in a fresh conversation
each call, and answers with the robot's last text (or its structured answer, when it has an output
type). Robots name others with ``robots=[...]`` (``Robot(robots=[helper, "reviewer"])``, or
``robots: [reviewer]`` in a robot file's front matter): each becomes such a tool.

The inner run is a run of its own inside the outer one:

- its events go into the outer run's stream as they happen, each carrying ``parent_run_id`` (the
  outer run) and ``parent_tool_id`` (the tool call), and it ends with its own terminal event
  before the call's ``tool_result`` (so the store keeps one tree, the window shows the run as a
  lane inside the tool's card, the terminal as indented lines);
- it shares the outer run's approval gate, folder, change set, thread and task;
- stopping the outer run stops it (its ``run_cancelled`` says why) before the outer run ends;
- its usage counts in the outer run's totals (the outer run's next ``usage`` event and its
  RobotResult's ``usage``), while its own ``usage`` events report each of its model calls once.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.result import RobotResult, to_jsonable
from workspace.tools.base import RunHandle, Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from workspace.agent import AgentRun
    from workspace.robot import Robot

__all__ = ["MESSAGE_SCHEMA", "named_robot_tools", "robot_tool", "tool_name"]

#: The arguments of a robot used as a tool.
MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What to ask or tell the robot, in full: it "
                                                                "does not see this conversation"}},
    "required": ["message"],
}


def tool_name(name: str) -> str:
    """A tool name the model APIs accept (``^[A-Za-z0-9_-]{1,64}$``)."""
    import re

    return (re.sub(r"[^A-Za-z0-9_-]", "_", name) or "robot")[:64]


def robot_tool(robot: Robot, *, name: str | None = None, description: str | None = None) -> Tool:
    """``robot`` as a tool of another robot (see the module docstring)."""
    about = description or robot.description or f"Ask the robot '{robot.name}'."
    text = (f"{about.rstrip('.')}. Runs the robot '{robot.name}' on your message (it sees only the message) "
            "and returns its answer.") if description is None else description

    async def run_robot(arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        return await _run(robot, str(arguments.get("message") or ""), context)

    return Tool(tool_name(name or robot.name), text, MESSAGE_SCHEMA, run_robot)


def named_robot_tools(robot: Robot) -> list[Tool]:
    """The tools of ``robot.robots`` (robots, or names of robot or template files found as the robot's
    templates are: loaded once, with the robot's folder and configuration)."""
    tools = []
    for index, item in enumerate(robot.robots):
        if isinstance(item, str):
            if item == robot.name:
                from workspace.errors import ConfigurationError

                raise ConfigurationError(f"Robot '{robot.name}' names itself in 'robots': a robot cannot be its "
                                         "own tool")
            template = robot.template
            dirs = [template.path.parent] if template is not None and template.path is not None else []
            item = robot.robots[index] = type(robot)(item, template=item, folder=robot.folder, config=robot._config,
                                                     mcp_manager=robot.mcp_manager, template_dirs=dirs)
        tools.append(item.as_tool())
    return tools


async def _run(robot: Robot, message: str, context: ToolContext) -> ToolOutput:
    parent = context.run
    options: dict[str, Any] = parent.child_options(context.call_id) if parent is not None else {}
    run = robot.stream(message, history=[], **options)
    pump = asyncio.ensure_future(_pump(run, parent))
    try:
        await asyncio.shield(pump)
    except asyncio.CancelledError:
        # The outer run was stopped: stop this one too, and let its end reach the stream first.
        reason = parent.stop_reason if parent is not None else None
        run.cancel(reason or "the run that called it was stopped")
        with contextlib.suppress(BaseException):
            await asyncio.shield(pump)
        if parent is not None:
            parent.add_usage(_usage(run))
        raise
    if parent is not None:
        parent.add_usage(_usage(run))
    return _answer(robot, run, pump.result())


async def _pump(run: AgentRun, parent: RunHandle | None) -> ev.Event | None:
    """Forward every event of ``run`` into the parent's stream; the run's terminal event."""
    terminal: ev.Event | None = None
    began = False
    async for event in run:
        ends = ev.ends(event, run.run_id)
        began = began or isinstance(event, ev.RunStarted)
        if parent is not None and (began or not ends):  # a run stopped before it began has nothing to end
            parent.forward(event)
        if ends:
            terminal = event
    return terminal


def _usage(run: AgentRun) -> Any:
    result = run.result
    return result.usage if result is not None else None


def _answer(robot: Robot, run: AgentRun, terminal: ev.Event | None) -> ToolOutput:
    result = run.result
    match terminal:
        case ev.RunFinished(result=RobotResult() as done):
            if done.output_data is not None:
                return ToolOutput(to_jsonable(done.output_data))
            text = done.last_text_content
            return ToolOutput("" if text is None else str(text))
        case ev.RunFailed():
            return ToolOutput(f"The robot '{robot.name}' failed: {terminal.error}", is_error=True)
        case ev.RunCancelled():
            partial = result.last_text_content if result is not None else None
            tail = f" Its answer so far: {partial}" if partial else ""
            return ToolOutput(f"The robot '{robot.name}' was stopped: {terminal.reason}.{tail}", is_error=True)
        case _:
            return ToolOutput(f"The robot '{robot.name}' ended without an answer", is_error=True)
