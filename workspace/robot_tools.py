"""The tools of a :class:`~workspace.robot.Robot`: gathered, chosen and checked for a run.

A robot's tools come from four places: its own (functions and Tool objects), the built-in tools
(:mod:`workspace.tools.registry`), its MCP servers (:mod:`workspace.mcp`), and, when its file asks
for them, the MCP resource tools. The global -> network -> robot -> run hierarchy
(:mod:`workspace.tools.selection`) says which of them a run may use; a tool named that exists
nowhere is reported here. :meth:`workspace.robot.Robot.resolve_tools` is the public entry.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from workspace.agent import PendingTools
from workspace.errors import ConfigurationError
from workspace.messages import same_items
from workspace.tools import selection
from workspace.tools.base import Tool
from workspace.tools.decorator import function_tool
from workspace.tools.manifest import ToolManifest

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.robot import Robot

#: The robot's log (its records keep the logger name of workspace.robot, where they come from).
log = logging.getLogger("workspace.robot")


class ToolSource(Protocol):
    """Something that turns resolved MCP server references into tools (see workspace.mcp)."""

    async def tools_for(self, servers: list[Any], config: Config | None) -> list[Tool]: ...


def take_tools(tools: Any) -> tuple[Any, list[Tool], bool]:
    """A robot's ``tools=``: Tool objects and functions become local tools; names stay a whitelist.

    Returns the tool list setting, the robot's new local tools, and whether the tools were all given
    as objects (``tools=[fn]``)."""
    if isinstance(tools, Tool) or (callable(tools) and not isinstance(tools, str)):
        tools = [tools]
    if isinstance(tools, list | tuple):
        names: list[str] = []
        local: list[Tool] = []
        named = False
        for item in tools:
            if isinstance(item, str):
                names.append(item)
                named = True
            else:
                tool = to_tool(item)
                local.append(tool)
                names.append(tool.name)
        # Tools given as functions or Tool objects (``tools=[fn]``) say which of the robot's own and the
        # built-in tools it uses; they do not hide the tools of the MCP servers it names (``mcp=[...]``).
        return names, local, bool(names) and not named
    selection.check_level(tools, what="tools")
    return tools, [], False


class _Resolution:
    """A robot's tools as its last run resolved them, with what they were resolved from (see
    :func:`resolve_tools`)."""

    __slots__ = ("allowed", "chosen", "inputs", "local", "registry", "scripts", "servers")

    def __init__(self, inputs: tuple[Any, ...], local: list[Tool], registry: int, scripts: list[Tool],
                 allowed: Any, servers: Any, chosen: list[Tool]) -> None:
        self.inputs = inputs
        self.local = local
        self.registry = registry
        self.scripts = scripts
        self.allowed = allowed
        self.servers = servers
        self.chosen = chosen


#: Each robot's last resolution of its tools (kept while the robot lives).
_RESOLVED: weakref.WeakKeyDictionary[Robot, _Resolution] = weakref.WeakKeyDictionary()


def _frozen(value: Any) -> Any:
    """``value`` (a tool or MCP level: a name, a list of names or server specs) as it is now, to compare with
    later: a list changed in place is not equal to it then."""
    if value is None or type(value) is str or type(value) is bool:  # most levels ("inherit", a name): no ABC check
        return value
    if isinstance(value, list | tuple):
        return (type(value), tuple(_frozen(v) for v in value))
    if isinstance(value, Mapping):
        return (dict, tuple((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return frozenset(value)
    return value


async def resolve_tools(
    robot: Robot, *, run_tools: Any = "inherit", run_mcp: Any = "inherit", network_tools: Any = "inherit",
    network_mcp: Any = "inherit", mcp_wait: float | None = None, message: str | None = None,
) -> tuple[ToolManifest, PendingTools | None]:
    """:meth:`Robot.resolve_tools <workspace.robot.Robot.resolve_tools>`; with ``mcp_wait`` (seconds),
    MCP servers are waited for only that long (see :mod:`workspace.mcp.startup`) and the servers still
    starting or failed come back as :class:`~workspace.agent.PendingTools` (None when every server is up).

    A robot's run resolves the same tools as its run before unless something they come from changed: the
    levels (configuration, network, robot, run), the robot's own tools, the registry
    (:func:`workspace.tools.registry.version`), the script tools (their files are looked at every time) or
    its MCP servers' tools (asked for every time; a run with any is resolved in full). Those kept stand in
    for the rest of the resolution."""
    from workspace.tools import registry

    config = robot.config if (robot._config is not None or robot._provider is None) else None
    global_tools = config.get("agent.tools", "all") if config is not None else "all"
    global_mcp = config.get("agent.mcp", "all") if config is not None else "all"
    inputs = _frozen((global_tools, network_tools, robot.tools_config, run_tools, global_mcp, network_mcp,
                      robot.mcp_config, run_mcp, robot._tools_from_objects, robot.mcp_resources,
                      robot._mcp_injected))
    version = registry.version()
    kept = _RESOLVED.get(robot)
    if kept is not None and (kept.inputs != inputs or kept.registry != version
                             or not same_items(kept.local, robot.local_tools)):
        kept = None
    if kept is not None:
        allowed, servers = kept.allowed, kept.servers
    else:
        allowed = selection.resolve_chain(global_tools, network_tools, robot.tools_config, run_tools)
        servers = selection.resolve_chain(global_mcp, network_mcp, robot.mcp_config, run_mcp)
    scripts = _script_tools(robot) if allowed != selection.ALL else []
    mcp_tools, pending = await _mcp_tools(robot, servers, config, wait=mcp_wait, message=message)
    robot.mcp_tools = list(mcp_tools)
    if kept is not None and not mcp_tools and pending is None and same_items(kept.scripts, scripts):
        return ToolManifest(kept.chosen), None
    local = list(robot.local_tools)
    available: list[Tool] = list(local)
    have = {t.name for t in available}
    keep = True
    if allowed != selection.ALL:
        available.extend(t for t in registry.lookup(allowed) if t.name not in have)
        have = {t.name for t in available}
        available.extend(t for t in selection.filter_tools(scripts, allowed) if t.name not in have)
        if "ask_user" in (str(getattr(a, "name", a)) for a in allowed) and "ask_user" not in have:
            from workspace.ask_user import AskUser

            available.append(AskUser())  # named in a robot's file (tools: [ask_user]): the person answers
            keep = False  # a new one for every run
    elif robot.tools_config == selection.ALL:
        # A robot that says "tools: all" gets every built-in tool too. (Elsewhere "all" keeps
        # RobotLab's meaning, the robot's own and MCP tools: built-ins are named to be used.)
        available.extend(t for t in registry.builtin_tools() if t.name not in have)
    chosen = selection.filter_tools([*available, *mcp_tools], allowed)
    names_servers = not (selection.is_inherit(robot.mcp_config) or selection.is_none(robot.mcp_config))
    late_allowed = allowed
    if robot._tools_from_objects and names_servers:
        # ``tools=[fn]`` lists the robot's own tools; the MCP servers it names (``mcp=[...]``) bring
        # theirs (those of a server still starting too, when they join).
        late_allowed = selection.resolve_chain(global_tools, network_tools, "inherit", run_tools)
        have_now = {t.name for t in chosen}
        chosen.extend(t for t in selection.filter_tools(mcp_tools, late_allowed) if t.name not in have_now)
    available.extend(mcp_tools)
    if robot.mcp_resources:  # asked for by name in the robot's file: offered whatever the tool list says
        chosen.extend(t for t in _resource_tools(robot, servers, config) if t.name not in {c.name for c in chosen})
        keep = False
    if allowed != selection.ALL:
        keep = _check_tool_names(robot, allowed, available) and keep
    if pending is not None:
        pending = _FilteredPending(pending, late_allowed)
    if keep and not mcp_tools and pending is None:  # what the next run may take as it is
        _RESOLVED[robot] = _Resolution(inputs, local, version, scripts, allowed, servers, list(chosen))
    else:
        _RESOLVED.pop(robot, None)
    return ToolManifest(chosen), pending


def _script_tools(robot: Robot) -> list[Tool]:
    """The script tools (:mod:`workspace.script_tools`) robots can name, for ``robot``'s folder."""
    from workspace.script_tools import discover_script_tools

    tools, notices = discover_script_tools(robot.folder)
    for notice in notices:
        log.warning("%s", notice)
    return list(tools)


def _check_tool_names(robot: Robot, allowed: Any, available: list[Tool]) -> bool:
    """A tool named exactly that exists nowhere is a mistake to report, not to skip in silence (True: every
    name was found).

    Names of MCP tools (``server__tool``) only warn: their server may be down for now (its
    status in ``robotlab mcp list`` says why), and the robot can still work without them.
    """
    have = {t.name for t in available}
    names = [str(getattr(a, "name", a)) for a in allowed]
    missing = [n for n in names if n not in have and not any(c in n for c in "*?[")]
    if not missing:
        return True
    mcp_like = [n for n in missing if "__" in n]
    if mcp_like:
        log.warning("robot '%s': MCP tool(s) %s not available now (is the server running? robotlab mcp list)",
                    robot.name, ", ".join(mcp_like))
    unknown = [n for n in missing if "__" not in n]
    if unknown:
        from workspace.tools import registry

        known = sorted({t.name for t in registry.builtin_tools()} | {t.name for t in robot.local_tools})
        where = f" (in {robot.template.path})" if robot.template is not None and robot.template.path else ""
        raise ConfigurationError(
            f"Robot '{robot.name}'{where} asks for tool(s) that do not exist: {', '.join(unknown)}. "
            f"Built-in tools: {', '.join(known)}. Fix the name where the tool list is set: "
            f"{_tools_origin(robot.tools_config, unknown)}"
        )
    return False


def _tools_origin(tools_config: Any, names: list[str]) -> str:
    if isinstance(tools_config, list) and any(n in tools_config for n in names):
        return "the robot's 'tools:' list"
    return "the run's, the network's or the task's 'tools:', or agent.tools in the configuration"


async def mcp_prompt_text(robot: Robot) -> str | None:
    """The text of the MCP prompt a robot file names in its front matter::

        mcp_prompt: {server: everything, prompt: simple_prompt, arguments: {topic: tests}}
    """
    tmpl = robot.template
    value = tmpl.metadata.get("mcp_prompt") if tmpl is not None and tmpl.path is not None else None
    if value is None or tmpl is None:
        return None
    from workspace.schemas.robot import check_mcp_prompt

    prompt = check_mcp_prompt(value, where=str(tmpl.path), lines=tmpl.lines)
    manager = robot.mcp_manager
    if manager is None:
        from workspace.mcp import default_manager

        manager = default_manager()
    config = robot.config if (robot._config is not None or robot._provider is None) else None
    if config is not None and hasattr(manager, "configure"):
        manager.configure(config)
    template = await manager.prompt_template(prompt.server, prompt.prompt,  # type: ignore[union-attr]
                                             dict(prompt.arguments))
    return str(template.render())


def _mcp_manager(robot: Robot) -> Any:
    manager = robot.mcp_manager
    if manager is None:
        from workspace.mcp import default_manager

        manager = default_manager()
    return manager


def _resource_tools(robot: Robot, servers: Any, config: Config | None) -> list[Tool]:
    """``list_mcp_resources`` / ``read_mcp_resource`` over the robot's MCP servers (none without servers)."""
    if robot._mcp_injected:  # inject_mcp: the program's sessions have no resource tools of ours
        return []
    if servers == selection.ALL:
        configured = config.mcp_servers if config is not None else {}
        refs: list[Any] = [name for name, spec in configured.items() if not _disabled(spec)]
    else:
        refs = list(servers)
    manager = _mcp_manager(robot)
    servers_for = getattr(manager, "servers_for", None)
    if not refs or servers_for is None:
        return []
    try:
        names = servers_for(refs, config)
    except ConfigurationError:
        return []  # the MCP tools' own resolution reports an unknown server
    from workspace.mcp.resources import resource_tools

    return resource_tools(manager, names) if names else []


async def connect_mcp(robot: Robot) -> None:
    """RobotLab's ``connect_mcp!``: start the robot's MCP servers now (not at its first run) and wait until each is
    up or failed; ``robot.mcp_tools`` and ``robot.failed_mcp_server_names`` say which."""
    from workspace.mcp.config import DEFAULT_CONNECT_TIMEOUT

    config = robot.config if (robot._config is not None or robot._provider is None) else None
    global_mcp = config.get("agent.mcp", "all") if config is not None else "all"
    servers = selection.resolve_chain(global_mcp, "inherit", robot.mcp_config, "inherit")
    tools, _pending = await _mcp_tools(robot, servers, config, wait=DEFAULT_CONNECT_TIMEOUT + 5.0)
    robot.mcp_tools = list(tools)


async def _discovered(robot: Robot, manager: Any, refs: list[Any], config: Config | None,
                      message: str | None) -> list[Any]:
    """``mcp_discovery``: the servers of ``refs`` the robot's first message is about (:mod:`workspace.mcp.discovery`),
    chosen once and kept for its later runs."""
    names = manager.servers_for(refs, config)
    if robot.discovered_mcp_servers is None:
        if message is None:  # connect_mcp: every server, nothing chosen yet
            return names
        from workspace.mcp.discovery import select

        spec_of = getattr(manager, "spec", None)
        described = {}
        for name in names:
            spec = spec_of(name) if spec_of is not None else None
            raw = spec.raw if spec is not None else {}
            described[name] = str(raw.get("description") or "") if isinstance(raw, Mapping) else ""
        robot.discovered_mcp_servers = select(message, described)
        log.info("MCP discovery for robot '%s': %s", robot.name, ", ".join(robot.discovered_mcp_servers) or "none")
    return [name for name in names if name in robot.discovered_mcp_servers]


async def _mcp_tools(robot: Robot, servers: Any, config: Config | None, *,
                     wait: float | None = None, message: str | None = None) -> tuple[list[Tool], PendingTools | None]:
    if robot._mcp_injected:  # inject_mcp: the program's own sessions and tools, no server started
        if selection.is_none(servers):
            return [], None
        if robot._mcp_given_tools is None:
            from workspace.mcp.injected import session_tools

            robot._mcp_given_tools = await session_tools(robot._mcp_clients)
        return list(robot._mcp_given_tools), None
    if servers == selection.ALL:
        configured = config.mcp_servers if config is not None else {}
        refs: list[Any] = [name for name, spec in configured.items() if not _disabled(spec)]
    else:
        refs = list(servers)
    if not refs:
        return [], None
    manager = robot.mcp_manager
    if manager is None:
        try:
            from workspace.mcp import default_manager
        except ImportError as exc:  # pragma: no cover - the mcp extra is a dependency
            raise ConfigurationError(f"MCP servers are configured but MCP support is missing: {exc}") from exc
        manager = default_manager()
    if robot.mcp_discovery and hasattr(manager, "servers_for"):
        refs = await _discovered(robot, manager, refs, config, message)
    tools_ready = getattr(manager, "tools_ready", None)
    if wait is None or tools_ready is None:
        return await manager.tools_for(refs, config), None
    report = await tools_ready(refs, config, wait=wait)
    robot.failed_mcp_server_names = list(report.failed)
    for name, why in report.failed.items():  # the run says so too (an McpServers event)
        log.info("MCP server '%s' left out: %s", name, why)
    return list(report.tools), report.pending


def to_tool(item: Tool | Callable[..., Any]) -> Tool:
    """A robot's tool: a Tool as it is, a function through :func:`~workspace.tools.decorator.function_tool`."""
    if isinstance(item, Tool):
        return item
    if callable(item):
        return function_tool(item)
    raise ValueError(f"Invalid tool: {item!r}. Give a Tool, a function, or a tool name")


def _disabled(spec: Any) -> bool:
    return (isinstance(spec, Mapping) and bool(spec.get("disabled"))) or (
        isinstance(spec, Mapping) and spec.get("enabled") is False
    )


class _FilteredPending:
    """:class:`~workspace.agent.PendingTools` whose late tools go through the run's tool selection."""

    def __init__(self, inner: PendingTools, allowed: Any) -> None:
        self.inner = inner
        self.allowed = allowed

    @property
    def starting(self) -> list[str]:
        return self.inner.starting

    @property
    def failed(self) -> dict[str, str]:
        return self.inner.failed

    async def poll(self) -> tuple[list[Tool], list[str], dict[str, str]]:
        tools, joined, failed = await self.inner.poll()
        return selection.filter_tools(tools, self.allowed), joined, failed

    async def wait_for_tool(self, tool_name: str) -> bool:
        return await self.inner.wait_for_tool(tool_name)
