"""A run of a :class:`~workspace.robot.Robot` prepared: the :class:`~workspace.agent.RunSpec` built
from the robot, the run's options and the configuration.

:func:`prepare` is what :meth:`Robot.stream <workspace.robot.Robot.stream>` hands to an
:class:`~workspace.agent.AgentRun`: the system prompt rendered, the model settings, the memory, the
change set of the folder, the attachments, the tools (loaded when the run starts) and the limits.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.agent import RunSpec
from workspace.approval import as_gate
from workspace.errors import ProviderError
from workspace.memory import Memory
from workspace.providers.base import with_defaults
from workspace.result import RobotResult
from workspace.robot_tools import mcp_prompt_text, resolve_tools
from workspace.tools.manifest import ToolManifest

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.hooks import Registration
    from workspace.robot import Robot

#: Run options that are not template variables.
RUN_OPTIONS = frozenset({
    "tools", "mcp", "memory", "network_memory", "network", "task", "max_turns", "approval", "settings",
    "run_id", "folder", "changes", "provider", "thread_id", "sequence", "watch_memory", "network_tools",
    "network_mcp", "max_cost", "max_total_tokens", "history", "parent_run_id", "parent_tool_id", "output_type",
    "output_mode", "attachments", "agent_skills",
    "hooks", "max_tool_rounds", "doom_loop_threshold", "max_tools", "candidate", "tool_share", "ledger",
    "config", "network_config", "on_content",
})


def prepare(robot: Robot, message: object, options: dict[str, Any]) -> RunSpec:
    """The RunSpec of ``robot``'s run on ``message`` with these ``options`` (see :meth:`Robot.stream`)."""
    from workspace.messages import UserMessage

    robot._join_bus()  # a robot file's ``bus: name``: its channel is joined when it first runs
    user = UserMessage.coerce(message) if not isinstance(message, str) else None
    text = user.content if user is not None else str(message)
    variables = {k: v for k, v in options.items() if k not in RUN_OPTIONS}
    variables["message"] = text
    memory = run_memory(robot, options)
    given = options.get("provider")
    provider = with_defaults(given) if given is not None else robot.provider
    system = robot.render_system(variables, network=options.get("network"))
    if user is not None and user.system_prompt:
        system = f"{system}\n\n{user.system_prompt}" if system else user.system_prompt
    learned = robot.learnings_prompt()
    if learned:  # RobotLab's learnings from earlier runs, at the end of the system prompt
        system = f"{system}\n\n{learned}" if system else learned
    read = config_read(robot)
    settings = run_settings(robot, options.get("settings"), read)
    folder = options.get("folder")
    folder_path = Path(folder).resolve() if folder is not None else robot.folder
    changes = options.get("changes")
    if changes is None and folder_path is not None:
        changes = _new_change_set(folder_path, robot, options.get("thread_id"))
    attachments: list[Any] = []
    if options.get("attachments"):
        from workspace.attachments import AttachmentLimits, coerce_attachments

        limits = AttachmentLimits.from_config(robot.config if (robot._config is not None or robot._provider is None)
                                              else None)
        attachments = coerce_attachments(options["attachments"], folder=folder_path, limits=limits)

    async def load_tools() -> ToolManifest:
        manifest, spec.pending_tools = await resolve_tools(
            robot, run_tools=options.get("tools", "inherit"), run_mcp=options.get("mcp", "inherit"),
            network_tools=options.get("network_tools", "inherit"),
            network_mcp=options.get("network_mcp", "inherit"), mcp_wait=read.mcp_wait, message=text,
        )
        from workspace.robots_as_tools import named_robot_tools

        for tool in named_robot_tools(robot):  # ``robots=``: other robots as tools
            if tool.name not in manifest:
                manifest.add(tool)
        if robot.learn_enabled:  # ``learn=True``: recall_knowledge and record_knowledge
            for tool in robot.knowledge_tools():
                if tool.name not in manifest:
                    manifest.add(tool)
        network = options.get("network")
        bus = getattr(network, "bus", None)
        if robot.bus is not None and robot.bus.name is not None:  # a robot file's ``bus: name``
            bus = robot.bus
        if bus is not None and robot.bus is bus and "send_message" not in manifest:  # a network's bus, a named one
            from workspace.bus import REPLY_TIMEOUT, message_tool

            timeout = getattr(network, "reply_timeout", None) or REPLY_TIMEOUT
            manifest.add(message_tool(robot, reply_timeout=timeout))
        catalog = options.get("agent_skills")
        if catalog is not None or robot.agent_skills:  # RobotLab's AgentSkills: those this message asks for
            from workspace.agent_skills import instructions, skill_script_tools

            selected = await catalog.select(text) if catalog is not None else []
            if robot.agent_skills:  # the robot's pending ones (its ``skills:``), scored as ``agent_skills=`` scores
                chooser = catalog if catalog is not None else robot._skill_catalog
                assert chooser is not None  # the robot's pending skills came from its catalog
                have = {skill.name for skill in selected}
                selected += [s for s in await chooser.select(text, among=robot.agent_skills) if s.name not in have]
            chosen = instructions(selected)
            if chosen:
                spec.system = f"{chosen}\n\n{spec.system}" if spec.system else chosen
            from workspace.tools.capabilities import Ceiling

            ceiling = Ceiling.from_config(robot.config if robot._config is not None or robot._provider is None
                                          else None)
            for tool in await skill_script_tools(_scripts_allowed(selected, folder_path, spec.notices),
                                                 ceiling=ceiling):
                if tool.name not in manifest:  # the skills' scripts/, as tools of this run alone
                    manifest.add(tool)
        prompt = await mcp_prompt_text(robot)
        if prompt:  # the robot file's ``mcp_prompt``: the server's prompt, then the file's own text
            spec.system = f"{prompt}\n\n{spec.system}" if spec.system else prompt
        return await _within_share(robot, manifest, provider, options.get("tool_share", robot.tool_share),
                                   spec.notices)

    history = options.get("history")
    spec = RunSpec(
        robot=robot.name, provider=provider, system=system,
        history=robot.history if history is None else history, message=text,
        settings=settings, max_turns=int(options.get("max_turns") or robot.max_turns or read.max_turns),
        task=options.get("task"), memory=memory, network=options.get("network"), folder=folder_path,
        changes=changes, approval=as_gate(options.get("approval")) or robot.approval,
        on_tool_call=robot.on_tool_call, on_tool_result=robot.on_tool_result,
        on_result=_appender(memory, robot), thread_id=options.get("thread_id"),
        tool_timeout=read.tool_timeout, sequence=options.get("sequence"),
        watch_memory=options.get("watch_memory", True), tools_loader=load_tools,
        fallbacks=robot._fallback_makers() if options.get("provider") is None else [],
        max_cost=options.get("max_cost", robot.max_cost),
        max_total_tokens=options.get("max_total_tokens", robot.max_total_tokens),
        text_tool_calls=read.text_tool_calls,
        context=robot.context_manager,
        output=robot._structured_output(options), parent_run_id=options.get("parent_run_id"),
        parent_tool_id=options.get("parent_tool_id"), attachments=attachments, candidate=options.get("candidate"),
        owner=robot, hooks=run_hooks(robot, options),
        max_tool_rounds=options.get("max_tool_rounds", robot.max_tool_rounds),
        doom_loop_threshold=options.get("doom_loop_threshold", robot.doom_loop_threshold),
        max_tools=options.get("max_tools", robot.max_tools),
        ledger=options.get("ledger") or robot.ledger,
    )
    network = options.get("network")
    from workspace.memory_review import reviewed

    if network is None and reviewed(memory) and robot.review_memory == "ask":  # writes that outlive the run
        from workspace.memory_review import review_writes

        spec.watchers.append(review_writes(memory, robot=robot.name, propose=robot._propose_soon))
    if robot.bus is not None and getattr(network, "bus", None) is not robot.bus:  # a bus outside a network
        from workspace.bus import watch_run

        spec.watchers.append(watch_run(robot))
    if options.get("run_id"):
        spec.run_id = str(options["run_id"])
    return spec


def _scripts_allowed(skills: list[Any], folder: Path | None, notices: list[str]) -> list[Any]:
    """``skills`` without those inside ``folder`` (the opened folder's templates) whose scripts the user has not
    allowed by trusting the folder, as its ``.robotlab/tools/``: not even their ``--help`` runs; a notice says
    how to trust it. Their instructions are prompt and stay."""
    if folder is None:
        return skills
    inside = [s for s in skills if s.scripts and s.path.resolve().is_relative_to(folder)]
    if not inside:
        return skills
    from workspace.trust import trust_command, trusted_by_user

    if trusted_by_user(folder):
        return skills
    for skill in inside:
        notices.append(f"The scripts of the skill '{skill.name}' ({skill.path / 'scripts'}) are not offered: the "
                       f"folder is not trusted. To use them, run {trust_command(folder)}, or use the window's banner.")
    return [s for s in skills if s not in inside]


async def _within_share(robot: Robot, manifest: ToolManifest, provider: Any, share: Any,
                        notices: list[str]) -> ToolManifest:
    """``manifest`` kept within ``share`` of the model's window (:mod:`workspace.tool_search`): past it, and when
    tools joining later push it past, the model is offered ``search_tools`` and the tools it finds."""
    from workspace.tool_search import check_share, narrow

    share = check_share(share, robot=robot.name)
    if share >= 1:
        return manifest
    try:  # a hosted model without its key: the first request says so (sizing its window would load litellm)
        provider.check_key()
    except ProviderError:
        return manifest
    info = await robot.context_manager.window(provider)
    if info is None:
        return manifest
    counter = await robot.context_manager.counter(provider)
    narrowed = narrow(manifest, window=info.tokens, share=share, cost=counter.tools)
    if narrowed is None:
        return manifest
    if narrowed.searching:
        notices.append(f"The {len(manifest)} tools' descriptions ({counter.tools(list(manifest)):,} tokens) would "
                       f"take more than {share:.0%} of the model's {info.tokens:,}-token window: the model searches "
                       "for the tools it needs (search_tools) instead of being sent them all")
    return narrowed


def run_hooks(robot: Robot, options: Mapping[str, Any]) -> tuple[Registration, ...]:
    """The hooks of a run, in RobotLab's order: global, the network's, the robot's, the run's ``hooks=``."""
    from workspace import hooks

    network = options.get("network")
    return hooks.collect(hooks.GLOBAL, getattr(network, "hooks", None), robot.hooks,
                         run=hooks.per_run(options.get("hooks")))


class ConfigRead:
    """What a robot's runs read of its configuration (``agent.max_turns``, ``agent.tool_timeout``,
    ``agent.mcp_startup_wait``, ``agent.text_tool_calls`` and the model settings ``llm.*``), read once per
    :class:`~workspace.config.Config` object: a configuration that changed is a new object (``load_config``: the
    window, the session and the CLI give a robot a new one, never edit one in place), so a robot given another one
    has it read at its next run. A robot given only a provider reads none (the defaults)."""

    __slots__ = ("config", "max_turns", "mcp_wait", "settings", "text_tool_calls", "tool_timeout")

    def __init__(self, config: Config | None) -> None:
        from workspace.config import DEFAULTS

        self.config = config
        self.max_turns = 20
        self.mcp_wait = float(DEFAULTS["agent"]["mcp_startup_wait"])
        self.tool_timeout: float | None = None
        self.text_tool_calls: str = "run"
        #: The configuration's model settings (``llm.temperature``, ...), under the robot's and the run's own.
        self.settings: dict[str, Any] = {}
        if config is None:
            return
        self.max_turns = int(config.get("agent.max_turns", 20))
        self.mcp_wait = float(config.get("agent.mcp_startup_wait", self.mcp_wait))
        timeout = config.get("agent.tool_timeout")
        self.tool_timeout = float(timeout) if timeout else None
        calls = config.get("agent.text_tool_calls", "run")
        self.text_tool_calls = "run" if calls is None else calls
        for key in ("temperature", "top_p", "max_tokens", "tool_choice"):
            value = config.get(f"llm.{key}")
            if value is not None:
                self.settings[key] = value


#: Each robot's :class:`ConfigRead`, with the Config object it was read from (kept while the robot lives).
_READ: weakref.WeakKeyDictionary[Robot, ConfigRead] = weakref.WeakKeyDictionary()


def config_read(robot: Robot) -> ConfigRead:
    """What ``robot``'s runs read of its configuration (see :class:`ConfigRead`): read again only for another
    Config object."""
    config = None if robot._config is None and robot._provider is not None else robot.config
    read = _READ.get(robot)
    if read is None or read.config is not config:
        read = _READ[robot] = ConfigRead(config)
    return read


def run_settings(robot: Robot, given: Mapping[str, Any] | None, read: ConfigRead | None = None) -> dict[str, Any]:
    """The model settings of a run: the configuration's ``llm.*``, then the robot's, then the run's."""
    if given:
        from workspace.schemas.robot import check_settings

        check_settings(given, what="run setting")
    base = (read or config_read(robot)).settings
    return {**base, **robot.settings, **(given or {})}


def run_memory(robot: Robot, options: Mapping[str, Any]) -> Memory:
    """The memory of a run: the network's shared one, else the robot's; ``memory=`` replaces or merges."""
    given_shared = options.get("network_memory")
    memory: Memory = given_shared if given_shared is not None else robot.memory
    network = options.get("network")
    if given_shared is None and network is not None and getattr(network, "memory", None) is not None:
        memory = network.memory
    given = options.get("memory")
    if isinstance(given, Memory):
        memory = given
    elif isinstance(given, Mapping):
        memory.merge(given)
    return memory


def _appender(memory: Memory, robot: Robot) -> Callable[[RobotResult], None]:
    def append(result: RobotResult) -> None:
        memory.append_result(result)
        robot.count_tokens(result)  # RobotLab's token totals
        if robot.learn_enabled:  # RobotLab's Reflector: the run's learnings become knowledge entries
            robot.reflect()

    return append


def _new_change_set(folder: Path, robot: Robot, thread_id: str | None) -> Any:
    from workspace.changes import ChangeSet

    mode = robot.config.get("review.mode", "review") if robot._config is not None else "review"
    return ChangeSet(folder, mode=mode, thread_id=thread_id)
