"""RobotLab's conversation API of a robot, its token totals and its MCP extras (mixed into :class:`~workspace.robot.Robot`).

- ``robot.messages``: the conversation so far (a copy); ``clear_messages(keep_system=True)``;
  ``replace_messages(msgs)`` puts back a checkpoint (``saved = robot.messages``), checked message by message;
  ``update(template=, context=, system_prompt=, model=, temperature=, ...)`` changes the robot between runs.
  The system prompt is not a message here: it is rendered from the template for every run (``render_system``).
- ``result.input_tokens`` / ``output_tokens`` add up in ``robot.total_input_tokens`` / ``total_output_tokens``
  (every finished run); ``reset_token_totals()``.
- ``mcp_discovery``: on its first run the robot keeps only the MCP servers its message is about
  (:mod:`workspace.mcp.discovery`); ``await robot.connect_mcp()`` starts its servers now; ``failed_mcp_server_names``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from workspace.errors import ConfigurationError
from workspace.messages import Message

if TYPE_CHECKING:
    from workspace.agent import AgentRun
    from workspace.context import ContextManager
    from workspace.providers.base import Provider
    from workspace.result import RobotResult
    from workspace.robot_tools import ToolSource
    from workspace.templates import Template
    from workspace.tools.base import Tool

_UNSET: Any = object()


class RobotConversation:
    """The conversation, the token totals and the MCP extras of a robot (see the module)."""

    name: str
    folder: Path | None
    history: list[Message]
    template: Template | None
    template_name: str | None
    skill_templates: list[Template]
    agent_skills: list[Any]
    system_prompt: str | None
    context: Mapping[str, Any] | Callable[..., Mapping[str, Any]] | None
    settings: dict[str, Any]
    _explicit_model: str | None
    _provider: Provider | None
    _provider_given: bool
    _context_manager: ContextManager | None
    _active: AgentRun | None
    mcp_manager: ToolSource | None
    mcp_tools: list[Tool]

    def _setup_conversation(self, mcp_discovery: Any) -> None:
        #: The input and output tokens of every finished run so far (RobotLab's token tracking).
        self.total_input_tokens = 0
        self.total_output_tokens = 0
        #: Choose the MCP servers by the first message (RobotLab's ``mcp_discovery: true``).
        self.mcp_discovery = bool(mcp_discovery)
        #: The servers discovery kept (None: not chosen yet).
        self.discovered_mcp_servers: list[str] | None = None
        #: The MCP servers that failed to start at the last run or ``connect_mcp`` (retried at the next).
        self.failed_mcp_server_names: list[str] = []
        #: ``inject_mcp``: the sessions a program connected (server name → session) and the tools it gave (None:
        #: those the sessions list, read at the next run); ``_mcp_injected`` says whether it was called.
        self._mcp_clients: dict[str, Any] = {}
        self._mcp_given_tools: list[Tool] | None = None
        self._mcp_injected = False

    # -- the conversation ------------------------------------------------------------------------
    @property
    def messages(self) -> list[Message]:
        """The conversation so far, oldest first (a copy: keep it as a checkpoint for :meth:`replace_messages`)."""
        return list(self.history)

    def clear_messages(self, *, keep_system: bool = True) -> Self:
        """Forget the conversation. ``keep_system=False`` also drops the system prompt (the template, its skills
        and ``system_prompt``): the next runs send none until :meth:`update` gives one."""
        self._check_idle("clear its messages")
        self.history.clear()
        if self._context_manager is not None:
            self._context_manager.reset()
        if not keep_system:
            if self._explicit_model is None and self.template is not None and self.template.model:
                self._explicit_model = self.template.model  # the robot keeps the model its file gave
            self.template, self.template_name, self.skill_templates, self.system_prompt = None, None, [], None
            self.agent_skills = []
        return self

    def replace_messages(self, messages: Iterable[Message | Mapping[str, Any]]) -> Self:
        """Make ``messages`` the conversation (a checkpoint from :attr:`messages`, or their dicts); each is checked
        first, so a bad one leaves the conversation as it was."""
        self._check_idle("replace its messages")
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
            raise TypeError(f"Robot '{self.name}': replace_messages takes a list of messages (robot.messages), "
                            f"got {type(messages).__name__}")
        checked: list[Message] = []
        for index, item in enumerate(messages):
            if not isinstance(item, Message | Mapping):
                raise TypeError(f"Robot '{self.name}': message {index} is a {type(item).__name__}; give Message "
                                "objects (robot.messages) or their dicts ({'type': 'text', 'role': 'user', ...})")
            try:
                message = item if isinstance(item, Message) else Message.from_dict(item)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"Robot '{self.name}': message {index}: {exc}") from None
            if message.role == "system":
                raise ValueError(f"Robot '{self.name}': message {index} is a system message; the system prompt is "
                                 "not part of the conversation here: set it with robot.update(system_prompt=...)")
            checked.append(message)
        self.history[:] = checked
        if self._context_manager is not None:  # its summary was of the conversation replaced
            self._context_manager.reset()
        return self

    def update(self, *, template: str | Path | Template | None = _UNSET, context: Any = _UNSET,
               system_prompt: str | None = _UNSET, model: str | None = _UNSET, **settings: Any) -> Self:
        """Change the robot between runs and return it (RobotLab's ``update``): its ``template``,
        ``context``, ``system_prompt``, ``model``, and model settings (``temperature=``, ``max_tokens=``, ...;
        None removes one). The conversation stays."""
        self._check_idle("be updated")
        if settings:
            from workspace.schemas.robot import check_settings

            check_settings({k: v for k, v in settings.items() if v is not None}, what="setting of update()")
        if template is not _UNSET:
            self.template, self.template_name = self._find_template(template)
            if self._explicit_model is None and not self._provider_given:
                self._provider = None  # the new template may name another model
        if context is not _UNSET:
            self.context = context
        if system_prompt is not _UNSET:
            self.system_prompt = system_prompt
        if model is not _UNSET:
            _check_model(model)
            self._explicit_model = model
            if not self._provider_given:
                self._provider = None  # made again for the new model at the next run
        for key, value in settings.items():
            if value is None:
                self.settings.pop(key, None)
            else:
                self.settings[key] = value
        return self

    def _find_template(self, template: str | Path | Template | None) -> tuple[Template | None, str | None]:
        from workspace.templates import Template, find_template, search_path

        if template is None or isinstance(template, Template):
            return template, template.name if template is not None else None
        dirs = [*search_path(self.folder, kind="templates"), *search_path(self.folder, kind="robots")]
        return find_template(str(template), dirs), str(template)

    def _check_idle(self, what: str) -> None:
        if self._active is not None and not self._active.done:
            raise RuntimeError(f"Robot '{self.name}' is running; it can {what} when the run is over")

    # -- token totals ----------------------------------------------------------------------------
    def count_tokens(self, result: RobotResult) -> None:
        """Add a finished run's tokens to the totals."""
        self.total_input_tokens += result.input_tokens or 0
        self.total_output_tokens += result.output_tokens or 0

    def reset_token_totals(self) -> Self:
        """Set :attr:`total_input_tokens` and :attr:`total_output_tokens` back to 0; returns the robot."""
        self.total_input_tokens = self.total_output_tokens = 0
        return self

    # -- MCP ---------------------------------------------------------------------------------------
    async def connect_mcp(self) -> Self:
        """Start the robot's MCP servers now and wait until each is up or failed (RobotLab's ``connect_mcp!``):
        ``mcp_tools`` lists their tools, ``failed_mcp_server_names`` those that failed. Returns the robot."""
        from workspace.robot_tools import connect_mcp

        await connect_mcp(self)  # type: ignore[arg-type]  # a Robot: this class is its mixin
        return self

    def inject_mcp(self, *, clients: Mapping[str, Any] | None = None, tools: Iterable[Any] | None = None) -> Self:
        """RobotLab's ``inject_mcp!``: MCP connections a program made itself, used instead of starting the robot's
        servers (the configured ones are not started while injected). ``clients``: server name → a connected
        session (the mcp SDK's ``ClientSession`` after ``initialize()``), which :meth:`mcp_client` returns;
        ``tools``: the MCP tools to offer (Tool objects or functions); None: every tool the clients list, named
        ``<server>__<tool>`` as a configured server's are, read at the next run. A run's ``mcp="none"`` still
        offers none. Returns the robot."""
        from workspace.mcp.injected import check_clients
        from workspace.robot_tools import to_tool

        self._mcp_clients = check_clients(clients or {})
        self._mcp_given_tools = [to_tool(tool) for tool in tools] if tools is not None else None
        self._mcp_injected = True
        self.mcp_tools = list(self._mcp_given_tools or [])
        self.failed_mcp_server_names = []
        return self

    def mcp_client(self, name: str) -> Any:
        """RobotLab's ``mcp_client(name)``: the connected session of MCP server ``name``, an injected one (see
        :meth:`inject_mcp`), else the SDK session of that server while the robot's manager has it up; None when
        there is none (never connected, failed, stopped)."""
        if self._mcp_injected:
            return self._mcp_clients.get(name)
        manager = self.mcp_manager
        if manager is None:
            from workspace.mcp import default_manager

            manager = default_manager()
        session = getattr(manager, "session", None)
        return session(name) if session is not None else None


def _check_model(model: Any) -> None:
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigurationError(f"model must be a model id like 'openai/gpt-4o-mini', got {model!r}")
