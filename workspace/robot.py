"""``Robot``: a configured LLM agent with a conversation, tools, MCP servers and memory.

Besides running (``stream`` / ``arun`` / ``run``), a robot is RobotLab's pipeline step
(:meth:`Robot.call` with a :class:`workspace.pipeline.StepResult`), a tool of other robots
(:meth:`Robot.as_tool`, ``robots=[...]``), and may answer with a validated object
(``output_type=``, :mod:`workspace.output`).

Its parts that stand alone live elsewhere: the tools a run gets in :mod:`workspace.robot_tools`,
the preparation of a run (its :class:`~workspace.agent.RunSpec`) in :mod:`workspace.robot_runs`,
the loop in :mod:`workspace.agent`, tools in :mod:`workspace.tools`, output in
:mod:`workspace.output`, templates in :mod:`workspace.templates`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.agent import AgentRun
from workspace.agent.guards import DEFAULT_MAX_TOOLS, DoomLoopDetector
from workspace.approval import as_gate
from workspace.bus import BusMessaging
from workspace.errors import ConfigurationError, RunFailedError, ToolLoopError
from workspace.events import RunCancelled, RunFailed
from workspace.hooks import Hook, HookRegistry
from workspace.learning import RobotLearning
from workspace.ledger import BudgetExceeded, Ledger
from workspace.memory import Memory
from workspace.messages import Message
from workspace.providers.base import with_defaults
from workspace.result import RobotResult
from workspace.robot_checks import _budget_ledger, _check_settings, _legacy_mcp_servers, _whole
from workspace.robot_config import RobotConfig, finish_spec, layer_options, watch_content
from workspace.robot_conversation import RobotConversation
from workspace.robot_runs import prepare
from workspace.robot_tools import ToolSource, resolve_tools, take_tools, to_tool
from workspace.run_config import RunConfig
from workspace.runnable import Runnable
from workspace.templates import Template, skill_ids
from workspace.tools import selection
from workspace.tools.base import Tool
from workspace.tools.manifest import ToolManifest

if TYPE_CHECKING:
    from workspace.agent_skills import AgentSkill, AgentSkillCatalog
    from workspace.approval import ApprovalGate, PolicyFn
    from workspace.bus import MessageBus
    from workspace.config import Config
    from workspace.context import ContextManager
    from workspace.events import ContextCompacted
    from workspace.output import OutputMode, OutputSchema
    from workspace.pipeline import StepResult
    from workspace.providers.base import Provider


class Robot(RobotConfig, RobotConversation, BusMessaging, RobotLearning, Runnable):
    """A robot: a system prompt or template, a model, tools, MCP servers and a memory.

    The conversation is kept across runs, like a chat; :meth:`reset` clears it.
    Model precedence: explicit ``model`` > template front matter > configuration
    (``llm.model``; empty means the offline demo).

    ``api_key`` is this robot's own key for its model (kept in memory only: never written to a file,
    the database or a log). ``fallback_models`` are tried in order when the model has an outage or a
    rate limit (model ids, or ``{"model": ..., "api_base": ...}``). ``max_cost`` (USD) and
    ``max_total_tokens`` are each run's budget: the run stops before a model call once it is used up
    (``stop_reason`` ``max_cost`` / ``max_total_tokens``). Front matter may set all but the key.
    ``token_budget`` / ``cost_budget`` (RobotLab's) span the robot's life: a :class:`~workspace.ledger.Ledger`
    (``robot.ledger``, or ``ledger=`` to share one) each model call reserves from, and a run that spends it
    raises :class:`~workspace.ledger.BudgetExceeded`.

    Robots talk on a message bus and delegate to each other (:class:`~workspace.bus.BusMessaging`:
    ``with_bus``, ``send_message``, ``on_message``, ``spawn``, ``delegate``), and learn
    (:class:`~workspace.learning.RobotLearning`: ``learn``, ``learnings``, ``search_history``; ``learn=True``
    for the knowledge tools, ``knowledge_store=``, ``review_memory=``, ``on_memory_write=``).
    ``skills`` are template skills: their bodies go before the template's (depth-first, each once); a name that
    is no template but an agent skill (a ``SKILL.md`` folder) is one of the robot's :attr:`agent_skills` instead.

    ``config=`` takes the workspace's :class:`~workspace.config.Config` or RobotLab's
    :class:`~workspace.run_config.RunConfig` (:mod:`workspace.robot_config`: its fields fill in the settings the
    keywords leave out; ``robot.run_config``, ``robot.effective_config``). ``on_content``: called with each piece
    of the answer's text. The conversation: :class:`~workspace.robot_conversation.RobotConversation`
    (``messages``, ``replace_messages``, ``update``, the token totals, ``mcp_discovery``, ``connect_mcp``).
    """

    def __init__(
        self,
        name: str,
        system_prompt: str | None = None,
        template: str | Path | Template | None = None,
        context: Mapping[str, Any] | Callable[..., Mapping[str, Any]] | None = None,
        model: str | None = None,
        tools: Any = "inherit",
        mcp: Any = "inherit",
        memory: Memory | None = None,
        description: str | None = None,
        max_turns: int | None = None,
        *,
        local_tools: Iterable[Tool | Callable[..., Any]] | None = None,
        provider: Provider | None = None,
        api_base: str | None = None,
        on_tool_call: Callable[..., Any] | None = None,
        on_tool_result: Callable[..., Any] | None = None,
        config: Config | RunConfig | None = None,
        folder: str | Path | None = None,
        approval: ApprovalGate | PolicyFn | None = None,
        mcp_manager: ToolSource | None = None,
        bus: MessageBus | None = None,
        template_dirs: Iterable[Path] = (),
        api_key: str | None = None,
        fallback_models: Iterable[str | Mapping[str, Any]] | None = None,
        max_cost: float | None = None,
        max_total_tokens: int | None = None,
        token_budget: int | None = None,
        cost_budget: float | None = None,
        ledger: Ledger | None = None,
        context_window: int | None = None,
        context_policy: str | None = None,
        output_type: Any = None,
        output_mode: OutputMode = "auto",
        output_retries: int | None = None,
        robots: Iterable[Robot | str] | None = None,
        mcp_resources: bool | None = None,
        api_base_file: str | Path | None = None,
        max_tool_rounds: int | None = None,
        doom_loop_threshold: int | None = None,
        max_tools: int | None = None,
        mcp_servers: Iterable[Any] | None = None,
        skills: str | Iterable[str] | None = None,
        learn: bool | None = None,
        learn_domain: str | None = None,
        knowledge_store: Any = None,
        review_memory: str | None = None,
        on_memory_write: Callable[..., Any] | None = None,
        tool_share: float | None = None,
        on_content: Callable[..., Any] | None = None,
        mcp_discovery: bool | None = None,
        **settings: Any,
    ) -> None:
        if template is None and system_prompt is None:
            raise ValueError("Must provide either template or system_prompt")
        if mcp_servers is not None:
            mcp = _legacy_mcp_servers(str(name), mcp_servers, mcp)
        if "store_path" in settings:  # RobotLab's name for where durable knowledge is kept
            store_path = settings.pop("store_path")
            if knowledge_store is None and store_path is not None:
                knowledge_store = Path(store_path) / "knowledge.db" if Path(store_path).suffix == "" else store_path
        for key in ("auto_compact", "compact_threshold"):
            if key in settings:
                raise ConfigurationError(
                    f"Robot '{name}': {key} is RobotLab's; here a conversation nearing the model's window is "
                    "compacted by default: context_policy='compact' (the default), 'truncate' or 'error', and "
                    "llm.compaction_threshold in the configuration for the threshold (0.8 of the window by default); "
                    "robot.compress_history(...) compresses it RobotLab's way when you call it")
        if settings:
            _check_settings(settings, Robot.__init__)
        run_config, config = (config, None) if isinstance(config, RunConfig) else (None, config)
        explicit = {"model": model, "tools": None if selection.is_inherit(tools) else tools, "ledger": ledger,
                    "mcp": None if selection.is_inherit(mcp) else mcp, "on_tool_call": on_tool_call,
                    "on_tool_result": on_tool_result, "bus": bus, "max_tool_rounds": max_tool_rounds,
                    "token_budget": token_budget, "cost_budget": cost_budget, "max_tools": max_tools,
                    "doom_loop_threshold": doom_loop_threshold, **settings}
        template_dirs = [Path(d) for d in template_dirs]
        self.name = str(name)
        self.folder = Path(folder).resolve() if folder is not None else None
        self._config = config
        self.template: Template | None = None
        self.template_name: str | None = None
        if isinstance(template, Template):
            self.template, self.template_name = template, template.name
        elif template is not None:
            from workspace.templates import find_template, search_path

            self.template_name = str(template)
            dirs = [*template_dirs, *search_path(self.folder, kind="templates"),
                    *search_path(self.folder, kind="robots")]
            self.template = find_template(str(template), dirs)
        tmpl = self.template
        #: The template skills asked for (the constructor's, then the template's front matter's), and the
        #: templates they expand to, in order (see workspace.templates.expand_skills).
        self.skills: list[str] = [*skill_ids(skills), *skill_ids(tmpl.metadata.get("skills") if tmpl else None)]
        self.skill_templates: list[Template] = []
        #: The agent skills (SKILL.md folders) ``skills`` names that are no template: one a run's message asks for
        #: is given to that run (its instructions and its scripts), as with ``agent_skills=``.
        self.agent_skills: list[AgentSkill] = []
        self._skill_catalog: AgentSkillCatalog | None = None
        if self.skills:
            from workspace.agent_skills import AgentSkillCatalog, expand_robot_skills
            from workspace.templates import search_path

            skill_dirs = [*template_dirs, *search_path(self.folder, kind="templates"),
                          *search_path(self.folder, kind="robots")]
            self._skill_catalog = AgentSkillCatalog(folder=self.folder, template_dirs=template_dirs)
            self.skill_templates, self.agent_skills = expand_robot_skills(
                self.skills, skill_dirs, robot=self.name, visited={tmpl.name} if tmpl is not None else set(),
                catalog=self._skill_catalog)
        self.system_prompt = system_prompt
        # RobotLab's cascade: each skill's front matter, then the template's, then the constructor's (the last
        # skill that says wins over the ones before it).
        from_skills: dict[str, Any] = {}
        for skill in self.skill_templates:
            for key, value in (("description", skill.description), ("tools", skill.tools)):
                if value is not None:
                    from_skills[key] = value
        self.description = description if description is not None else (
            tmpl.description if tmpl and tmpl.description is not None else from_skills.get("description"))
        self.context = context
        self._explicit_model = model
        self.api_base = api_base if api_base is not None else (tmpl.api_base if tmpl else None)
        from workspace.trust import written_in_folder

        #: Where ``api_base`` was written: a file inside the opened folder (a robot's, a network's) makes it the
        #: folder's address, which gets none of the user's keys unless they configured it (workspace.urls.key_may_go).
        self.api_base_in_folder = written_in_folder(
            api_base_file if api_base is not None else (tmpl.path if tmpl else None), self.folder)
        #: Where the robot file's ``fallback_models`` were written: inside the opened folder, their addresses are the
        #: folder's too (as ``api_base_in_folder``).
        self.fallbacks_in_folder = fallback_models is None and tmpl is not None and \
            written_in_folder(tmpl.path, self.folder)
        self._api_key = api_key or None
        if api_key:
            from workspace.secrets import register_secret

            register_secret(api_key, name=f"api_key of robot {self.name}")
        self.fallback_models: list[str | Mapping[str, Any]] = list(
            fallback_models if fallback_models is not None else (tmpl.fallback_models if tmpl else None) or ())
        self.max_cost = max_cost if max_cost is not None else (tmpl.max_cost if tmpl else None)
        self.max_total_tokens = max_total_tokens if max_total_tokens is not None else (
            tmpl.max_total_tokens if tmpl else None)
        self.max_turns = max_turns or (tmpl.max_turns if tmpl else None)
        #: RobotLab's budget ledger: every model call of every run reserves from it and settles in it
        #: (``token_budget`` / ``cost_budget`` make one for this robot's lifetime; ``ledger=`` shares one).
        front = tmpl.metadata if tmpl is not None else {}
        if ledger is None and token_budget is None and cost_budget is None:  # a robot file's own budgets
            token_budget, cost_budget = front.get("token_budget"), front.get("cost_budget")
        self.ledger: Ledger | None = _budget_ledger(str(name), ledger, token_budget, cost_budget)
        skill_settings = {k: v for skill in self.skill_templates for k, v in skill.settings.items()}
        self.settings: dict[str, Any] = {**skill_settings, **(tmpl.settings if tmpl else {}), **settings}
        self.local_tools: list[Tool] = []
        for item in local_tools or ():
            self.local_tools.append(to_tool(item))
        if tools == "inherit" and tmpl is not None and tmpl.tools is not None:
            tools = tmpl.tools
        elif tools == "inherit" and from_skills.get("tools") is not None:
            tools = from_skills["tools"]
        if mcp == "inherit" and tmpl is not None and tmpl.mcp is not None:
            mcp = tmpl.mcp
        if tmpl is not None and tmpl.path is not None and folder is not None:
            from workspace.trust import template_problem

            problem = template_problem(tmpl, Path(folder))
            if problem:
                raise ConfigurationError(problem)
        self.tools_config, given_tools, self._tools_from_objects = take_tools(tools)
        self.local_tools.extend(given_tools)
        selection.check_level(mcp, what="mcp")
        self.mcp_config: Any = list(mcp) if isinstance(mcp, list | tuple) else mcp
        #: The MCP tools the robot's last run was offered (RobotLab's ``mcp_tools``), from the servers
        #: that were up then.
        self.mcp_tools: list[Tool] = []
        self.memory = memory if memory is not None else Memory()
        self.on_tool_call = on_tool_call
        self.on_tool_result = on_tool_result
        #: The approval gate (a function given as ``approval=`` becomes a CallbackGate).
        self.approval: ApprovalGate | None = as_gate(approval)
        self.mcp_manager = mcp_manager
        self.history: list[Message] = []
        self._provider = with_defaults(provider) if provider is not None else None
        self._active: AgentRun | None = None
        meta = tmpl.metadata if tmpl is not None else {}
        #: The model's context window in tokens, when set here or in the front matter (else the
        #: configuration, the server or the model information says; see workspace.context).
        self.context_window: int | None = context_window if context_window is not None else meta.get("context_window")
        if self.context_window is not None and (isinstance(self.context_window, bool)
                                                or not isinstance(self.context_window, int)
                                                or self.context_window < 256):
            raise ConfigurationError(f"Robot '{self.name}': context_window must be a whole number of tokens, at "
                                     f"least 256 (got {self.context_window!r})")
        self._context_policy: str | None = None
        self.context_policy = context_policy if context_policy is not None else meta.get("context_policy")
        self._context_manager: ContextManager | None = None
        #: The answer's type (``output_type=``, or the file's ``output_schema``): see workspace.output.
        self.output_type: Any = output_type if output_type is not None else (
            tmpl.metadata.get("output_schema") if tmpl is not None else None)
        self.output_mode: OutputMode = output_mode
        self.output_retries = output_retries
        self._output_schema: OutputSchema | None = None
        if self.output_type is not None:
            self._output_schema = self._schema_of(self.output_type)
        #: Read its MCP servers' resources itself (``list_mcp_resources`` / ``read_mcp_resource``): the argument,
        #: else the file's ``mcp_resources: true``. Off by default.
        self.mcp_resources: bool = bool(mcp_resources if mcp_resources is not None else meta.get("mcp_resources"))
        #: Other robots this robot may call as tools (Robot objects, or names of robot files).
        self.robots: list[Robot | str] = list(robots) if robots is not None else list(
            tmpl.metadata.get("robots") or []) if tmpl is not None else []
        #: The tool loop's guards (RobotLab 0.2): the most tool calls of a run (None: no limit), the repeats
        #: that warn the model of a loop (0: never), the most tools offered.
        self.max_tool_rounds = _whole(max_tool_rounds, "max_tool_rounds", self.name, minimum=1)
        self.doom_loop_threshold: int = DoomLoopDetector.DEFAULT_THRESHOLD if doom_loop_threshold is None else \
            _whole(doom_loop_threshold, "doom_loop_threshold", self.name, minimum=0) or 0
        self.max_tools: int = _whole(max_tools, "max_tools", self.name, minimum=1) or DEFAULT_MAX_TOOLS
        from workspace.tool_search import check_share

        try:  # the share of the model's window the tools' schemas may take before the run searches instead
            self.tool_share: float = check_share(tool_share if tool_share is not None else meta.get("tool_share"),
                                                 robot=self.name)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        #: This robot's hooks (``robot.on``): its runs, their model and tool calls, its compactions.
        self.hooks = HookRegistry()
        self._setup_learning(learn=learn if learn is not None else meta.get("learn"),
                             learn_domain=learn_domain or meta.get("learn_domain"), knowledge_store=knowledge_store,
                             review_memory=review_memory, on_memory_write=on_memory_write)
        self._setup_run_config(run_config, explicit=explicit, on_content=on_content, provider_given=provider is not None)
        self._setup_conversation(mcp_discovery if mcp_discovery is not None else meta.get("mcp_discovery"))
        if bus is None and self.bus is None and meta.get("bus") is not None:
            # a robot file's ``bus: name`` (no bus given, none by a config): the process's bus of that name
            from workspace.bus import named_bus

            self._name_bus(named_bus(str(meta["bus"])))  # joined at its first run (BusMessaging._join_bus)
        elif bus is not None:  # RobotLab's ``bus:``: on that bus from the start (see with_bus)
            self.with_bus(bus)

    @property
    def config(self) -> Config:
        if self._config is None:
            from workspace.config import load_config

            self._config = load_config(self.folder)
        return self._config

    def _config_value(self, key: str, default: Any) -> Any:
        if self._config is None and self._provider is not None:
            return default
        value = self.config.get(key, default)
        return default if value is None else value

    @property
    def model(self) -> str | None:
        """The model id this robot uses (None: the offline demo)."""
        if self._explicit_model:
            return self._explicit_model
        if self.template is not None and self.template.model:
            return self.template.model
        if self._provider is not None:
            return self._provider.model_id
        return self.config.llm.model or None

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            from workspace.providers import provider_for

            options = {"api_key": self._api_key} if self._api_key else {}
            self._provider = provider_for(self.model, api_base=self.api_base, config=self.config,
                                          folder_written=self.api_base_in_folder, **options)
        return self._provider

    @provider.setter
    def provider(self, value: Provider) -> None:
        self._provider = with_defaults(value)

    @property
    def api_key(self) -> str | None:
        """Whether this robot has a key of its own: the key itself is never shown (``"***"`` or None)."""
        return "***" if self._api_key else None

    def _fallback_makers(self) -> list[Callable[[], Provider]]:
        """One provider factory per fallback model (built only when the run needs it)."""
        config = self.config if (self._config is not None or self._provider is None) else None
        makers: list[Callable[[], Provider]] = []
        for entry in self.fallback_models:
            if isinstance(entry, Mapping):
                model, base = str(entry.get("model") or ""), entry.get("api_base")
            else:
                model, base = str(entry), None

            def make(model: str = model, base: Any = base) -> Provider:
                from workspace.providers import provider_for

                return provider_for(model, api_base=str(base) if base else None, config=config,
                                    folder_written=self.fallbacks_in_folder)

            makers.append(make)
        return makers

    @property
    def tools(self) -> list[Tool]:
        """RobotLab's alias of ``local_tools``."""
        return self.local_tools

    # -- the context window -----------------------------------------------------------------------
    @property
    def context_policy(self) -> str | None:
        """What happens when the conversation outgrows the model's window: ``"compact"`` (the default:
        older messages are summarised), ``"truncate"`` (the oldest turns are left out) or ``"error"``
        (the run fails before sending). None: the configuration's ``llm.context_policy``."""
        return self._context_policy

    @context_policy.setter
    def context_policy(self, value: str | None) -> None:
        if value is not None:
            from workspace.context import check_policy

            try:
                check_policy(value)
            except ValueError as exc:
                raise ConfigurationError(f"Robot '{self.name}': {exc}") from None
        self._context_policy = value
        manager = getattr(self, "_context_manager", None)
        if manager is not None and value is not None:
            manager.policy = value

    @property
    def context_manager(self) -> ContextManager:
        """Keeps this robot's requests within its model's context window (see :mod:`workspace.context`);
        it holds the summary of the compacted part of :attr:`history`."""
        if self._context_manager is None:
            self._context_manager = self._new_context_manager()
        return self._context_manager

    def _new_context_manager(self) -> ContextManager:
        from workspace.context import DEFAULT_THRESHOLD, ContextManager, window_setting
        from workspace.context.manager import DEFAULT_LOCAL_SHARE

        config = self.config if (self._config is not None or self._provider is None) else None
        window = self.context_window
        if window is None and config is not None:
            window = window_setting(config.get("llm.context_window"), self.model,
                                    default_model=config.get("llm.model"))
        policy = self._context_policy or (config.get("llm.context_policy") if config is not None else None)
        threshold = config.get("llm.compaction_threshold") if config is not None else None
        max_chars = config.get("llm.max_tool_result_chars") if config is not None else None
        share = config.get("llm.local_max_tokens_share") if config is not None else None
        summarizer: Callable[[], Provider] | None = None
        compaction_model = config.get("llm.compaction_model") if config is not None else None
        if compaction_model and compaction_model != self.model and config is not None:
            def summarizer() -> Provider:
                from workspace.providers import provider_for

                return provider_for(compaction_model, config=config)

        try:
            return ContextManager(policy=policy or "compact", window=window,
                                  threshold=float(threshold or DEFAULT_THRESHOLD),
                                  max_result_chars=int(max_chars) if max_chars else None, summarizer=summarizer,
                                  local_max_tokens_share=DEFAULT_LOCAL_SHARE if share is None else float(share))
        except ValueError as exc:
            raise ConfigurationError(f"Robot '{self.name}': {exc}") from None

    async def compact(self) -> ContextCompacted | None:
        """Summarise the older messages of the conversation now (``/compact``): every turn before the
        latest one. The model is sent the summary in their place from now on; :attr:`history` keeps
        them. Returns the :class:`~workspace.events.ContextCompacted` event (None: nothing to compact).
        """
        if self._active is not None and not self._active.done:
            raise RuntimeError(f"Robot '{self.name}' is running; compact its conversation when the run is over")
        if not self.history:
            return None
        try:
            system = self.render_system({"message": ""})
        except Exception:  # a template that needs run variables: count the plain prompt
            system = self.system_prompt
        from workspace import hooks

        with hooks.scope(hooks.collect(hooks.GLOBAL, self.hooks), self):  # this robot's compaction hooks
            event = await self.context_manager.compact(self.provider, system=system, history=self.history)
        if event is None:
            return None
        import uuid

        return event.replace(run_id=f"compact-{uuid.uuid4().hex[:12]}", robot=self.name)

    # -- system prompt --------------------------------------------------------------------------
    def build_context(self, network: Any = None) -> dict[str, Any]:
        ctx = self.context
        if ctx is None:
            return {}
        if callable(ctx):
            try:
                value = ctx(network=network) if "network" in inspect.signature(ctx).parameters else ctx()
            except TypeError:
                value = ctx()
            return dict(value) if isinstance(value, Mapping) else {}
        return dict(ctx) if isinstance(ctx, Mapping) else {}

    def render_system(self, variables: Mapping[str, Any] | None = None, *, network: Any = None) -> str | None:
        parts = []
        if self.template is not None or self.skill_templates:
            values = {**self.build_context(network), **(variables or {})}
            for template in [*self.skill_templates, *([self.template] if self.template is not None else [])]:
                rendered = template.render(values)
                if rendered:
                    parts.append(rendered)
        if self.system_prompt:
            parts.append(self.system_prompt)
        return "\n\n".join(parts) if parts else None

    # -- tools ----------------------------------------------------------------------------------
    async def resolve_tools(
        self, *, run_tools: Any = "inherit", run_mcp: Any = "inherit", network_tools: Any = "inherit",
        network_mcp: Any = "inherit",
    ) -> ToolManifest:
        """The tools a run may use, after the global -> network -> robot -> run hierarchy (waiting
        for every MCP server named to start or fail)."""
        manifest, _pending = await resolve_tools(self, run_tools=run_tools, run_mcp=run_mcp,
                                                 network_tools=network_tools, network_mcp=network_mcp)
        return manifest

    def on(self, handler: type[Hook], *, context: Mapping[str, Any] | None = None) -> Robot:
        """Register a :class:`~workspace.hooks.Hook` subclass for this robot's runs (``context`` seeds its
        ``ctx.local``); returns the robot."""
        self.hooks.on(handler, context=context)
        return self

    # -- running --------------------------------------------------------------------------------
    def stream(self, message: object, **options: Any) -> AgentRun:
        """Start a run; iterate the returned :class:`AgentRun` for its events.

        ``message``: its text, a :class:`~workspace.messages.UserMessage`, its dict, or any object (its ``str``).
        Options: ``tools``, ``mcp`` (run level of the hierarchies), ``memory`` (a Memory to
        use, or a dict merged into the robot's), ``network_memory``, ``max_turns``,
        ``approval``, ``folder``, ``changes``, ``settings``, ``task``, ``run_id``,
        ``output_type`` / ``output_mode`` (this run's structured output), ``history`` (a
        conversation to use instead of the robot's: the run may go on beside another),
        ``parent_run_id`` / ``parent_tool_id`` (the run this one works for), ``attachments`` (files,
        images and MCP resources sent with the message: :class:`~workspace.attachments.Attachment`
        objects or file paths, inside the run's folder when it has one), ``agent_skills`` (an
        :class:`~workspace.agent_skills.AgentSkillCatalog`: the instructions of the skills the message
        asks for go before the system prompt, this run only); any other keyword is a template
        variable for this run (``customer=...``).
        """
        own = options.get("history") is None  # a run with a conversation of its own may run alongside
        if own and self._active is not None and not self._active.done:
            raise RuntimeError(
                f"Robot '{self.name}' is already running; wait for its run to finish or stop it first"
            )
        options = layer_options(self, options)  # RunConfig's layers: workspace.robot_config
        spec = prepare(self, message, options)
        finish_spec(self, spec, options)
        run = AgentRun(spec)
        watch_content(self, run, options)
        if own:
            self._active = run
        if options.get("parent_run_id") is None:  # a run inside a run is traced as part of it
            from workspace import tracing

            tracing.attach(run, self._config)
        return run

    # -- structured output ----------------------------------------------------------------------------
    def _schema_of(self, output_type: Any) -> OutputSchema:
        from workspace.output import robot_schema

        where = f" ({self.template.path})" if self.template is not None and self.template.path else ""
        return robot_schema(output_type, robot=self.name, where=where)

    @property
    def output_schema(self) -> OutputSchema | None:
        """The schema of the robot's answer (None: it answers in text)."""
        return self._output_schema

    def _structured_output(self, options: Mapping[str, Any]) -> Any:
        given = options.get("output_type")
        schema = self._schema_of(given) if given is not None else self._output_schema
        if schema is None:
            return None
        from workspace.output import DEFAULT_RETRIES, StructuredOutput

        retries = self.output_retries
        if retries is None:
            config = self.config if self._config is not None or self._provider is None else None
            retries = int(config.get("agent.output_retries", DEFAULT_RETRIES)) if config else DEFAULT_RETRIES
        return StructuredOutput(schema, mode=options.get("output_mode") or self.output_mode, retries=retries)

    # -- other robots as tools --------------------------------------------------------------------------
    def as_tool(self, name: str | None = None, description: str | None = None) -> Tool:
        """This robot as a tool of another robot (:mod:`workspace.robots_as_tools`)."""
        from workspace.robots_as_tools import robot_tool

        return robot_tool(self, name=name, description=description)

    # -- RobotLab's pipeline step -------------------------------------------------------------------------
    def call(self, result: StepResult) -> StepResult:
        """RobotLab's ``Robot#call``: run on what the pipeline ``result`` carries and continue with this
        robot's RobotResult (stored under the robot's name in the context). See workspace.pipeline."""
        from workspace.pipeline import robot_call

        return robot_call(self, result)

    async def acall(self, result: StepResult) -> StepResult:
        """:meth:`call` inside a running event loop."""
        from workspace.pipeline import robot_acall

        return await robot_acall(self, result)

    async def arun(self, message: object, **options: Any) -> RobotResult:
        """Run to the end and return the RobotResult; a failed run raises RunFailedError."""
        run = self.stream(message, **options)
        terminal = await run.wait()
        if isinstance(terminal, RunFailed):
            if isinstance(run.error, ToolLoopError | BudgetExceeded):  # RobotLab raises these itself
                raise run.error
            raise RunFailedError(terminal.error)
        if isinstance(terminal, RunCancelled) and run.result is not None:
            return run.result
        assert run.result is not None
        return run.result

    def run(self, message: object, **options: Any) -> RobotResult:
        """Blocking wrapper of :meth:`arun` for scripts (not inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            running = False
        else:
            running = True
        if running:
            raise RuntimeError("Robot.run() cannot be called from a running event loop; use 'await robot.arun(...)'")
        # Outside the ``except``: a failure of the run must not carry "no running event loop" as its context.
        return asyncio.run(self.arun(message, **options))

    def continue_(self, **options: Any) -> AgentRun:
        """Ask the model to go on with an answer cut off at the token limit (``stop_reason == "length"``):
        a run of :data:`~workspace.agent.CONTINUE_PROMPT`, which sees the cut answer in the conversation."""
        from workspace.agent import CONTINUE_PROMPT

        return self.stream(CONTINUE_PROMPT, **options)

    def reset(self) -> Robot:
        """Forget the conversation (the memory stays; see :meth:`reset_memory`)."""
        self.history.clear()
        if self._context_manager is not None:
            self._context_manager.reset()
        return self

    def reset_memory(self) -> Robot:
        self.memory.reset()
        return self

    @property
    def crew(self) -> list[Robot]:
        """RobotLab's ``Runnable``: a robot is a crew of one."""
        return [self]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "template": self.template_name,
            "system_prompt": self.system_prompt,
            "local_tools": [t.name for t in self.local_tools],
            "mcp_tools": [t.name for t in self.mcp_tools],
            "mcp_config": self.mcp_config,
            "tools_config": self.tools_config,
            "mcp_servers": list(dict.fromkeys(t.mcp for t in self.mcp_tools if t.mcp)),
            "model": self.model,
            "mcp_resources": self.mcp_resources or None,
            "fallback_models": [dict(f) if isinstance(f, Mapping) else f for f in self.fallback_models] or None,
            "max_cost": self.max_cost,
            "max_total_tokens": self.max_total_tokens,
            "skills": list(self.skills) or None,
            "bus": True if self.bus is not None else None,  # RobotLab's: whether the robot has a bus
        }
        return {k: v for k, v in out.items() if v is not None}

    def __repr__(self) -> str:
        return f"<Robot {self.name!r} model={self.model or 'offline demo'!r}>"
