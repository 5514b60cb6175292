"""Where a :class:`~workspace.run_config.RunConfig` enters a robot and its runs, in RobotLab's layers.

A robot's own level is its file's front matter (the model settings, ``tools``, ``mcp`` and its ``config:``
block), under ``Robot(config=RunConfig(...))``, under the constructor's own keywords (they win). It fills
in the robot's settings themselves (``model``, ``settings``, ``tools_config``, ``mcp_config``, the
callbacks, ``bus``, the tool loop's guards, the budget ledger): there is no second copy to drift.

A run is layered network -> task -> robot -> run: a network's ``config`` with its task's merged over it
is the parent level (it reaches the robot as the run option ``network_config``; it gives the network level
of the tool and MCP hierarchies, and a model only to a robot without one of its own), the robot's own
settings win over it, and the run's ``config=`` (and its explicit options, e.g. ``settings=``) over those.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError
from workspace.robot_checks import _budget_ledger, _whole
from workspace.robot_tools import take_tools
from workspace.run_config import CALLBACK_FIELDS, FIELDS, LLM_FIELDS, RunConfig, coerce

if TYPE_CHECKING:
    from workspace.agent import AgentRun, RunSpec
    from workspace.bus import MessageBus
    from workspace.ledger import Ledger
    from workspace.providers.base import Provider
    from workspace.templates import Template
    from workspace.tools.base import Tool

#: Settings that are numbers with a default on the robot: "set" only when someone set them.
_DEFAULTED = ("doom_loop_threshold", "max_tools")


class RobotConfig:
    """A robot's RunConfig half (mixed into :class:`~workspace.robot.Robot`): ``run_config``, ``effective_config``,
    the ``on_content`` callback."""

    name: str
    folder: Path | None
    template: Template | None
    settings: dict[str, Any]
    tools_config: Any
    mcp_config: Any
    local_tools: list[Tool]
    _tools_from_objects: bool
    on_tool_call: Callable[..., Any] | None
    on_tool_result: Callable[..., Any] | None
    max_tool_rounds: int | None
    doom_loop_threshold: int
    max_tools: int
    ledger: Ledger | None
    _explicit_model: str | None
    _provider: Provider | None

    if TYPE_CHECKING:  # the Robot's own (workspace.bus.BusMessaging's, Robot's): for the type checker only
        @property
        def bus(self) -> MessageBus | None: ...

        def with_bus(self, bus: MessageBus | None = None) -> Any: ...

        @property
        def model(self) -> str | None: ...

    def _setup_run_config(self, given: RunConfig | Mapping[str, Any] | None, *, explicit: Mapping[str, Any],
                          on_content: Callable[..., Any] | None, provider_given: bool) -> None:
        """Apply the robot's own level: its file's front matter, then ``config=``; a field whose constructor
        keyword was given (``explicit``, None when not) keeps the keyword's value."""
        #: Streaming callback: called with each piece of the answer's text as it arrives (RobotLab's ``on_content:``).
        self.on_content: Callable[..., Any] | None = on_content
        self._provider_given = provider_given
        self._config_set: set[str] = {k for k in _DEFAULTED if explicit.get(k) is not None}
        meta = self.template.metadata if self.template is not None else {}
        where = self.template.path if self.template is not None and self.template.path else None
        try:
            layered = RunConfig.from_front_matter(meta)
        except ValueError as exc:
            raise ConfigurationError(f"{where or 'front matter'}: {exc}") from None
        block = meta.get("config")
        if where is not None and self.folder is not None and isinstance(block, Mapping) and block.get("mcp"):
            from workspace.trust import folder_file_problem  # a file in the opened folder: its trust rules

            problem = folder_file_problem(where, self.folder, mcp=block["mcp"])
            if problem:
                raise ConfigurationError(problem)
        try:
            layered = layered.merge(coerce(given))
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"Robot '{self.name}': {exc}") from None
        for name in layered:
            value = layered.get(name)
            if name in ("model", "tools", "mcp") and meta.get(name) is not None and value == meta.get(name):
                continue  # the file's own key, which the constructor applied already
            if explicit.get(name) is None:
                self._apply_field(name, value)
        budgets = [layered.token_budget, layered.cost_budget]
        if any(b is not None for b in budgets) and all(explicit.get(k) is None
                                                       for k in ("token_budget", "cost_budget", "ledger")):
            self.ledger = _budget_ledger(self.name, None, layered.token_budget, layered.cost_budget)

    def _apply_field(self, name: str, value: Any) -> None:
        if name == "model":
            self._explicit_model = value
            if not self._provider_given:
                self._provider = None
        elif name in LLM_FIELDS:
            self.settings[name] = value
        elif name == "tools":
            self.tools_config, objects, self._tools_from_objects = take_tools(value)
            self.local_tools.extend(t for t in objects if t.name not in {x.name for x in self.local_tools})
        elif name == "mcp":
            self.mcp_config = value
        elif name in CALLBACK_FIELDS:
            setattr(self, name, value)
        elif name == "bus":
            self.with_bus(value)
        elif name in ("max_tool_rounds", *_DEFAULTED):
            setattr(self, name, value)
            self._config_set.add(name)
        # token_budget / cost_budget: the ledger (above); max_concurrent_robots: a network's.

    @property
    def has_own_model(self) -> bool:
        """Whether the model is the robot's own (given, in its file, or its provider's), not the configuration's."""
        return bool(self._explicit_model or (self.template is not None and self.template.model)
                    or self._provider_given)

    @property
    def run_config(self) -> RunConfig:
        """The robot's own level as a :class:`RunConfig`: the fields it set, read from its settings now."""
        values: dict[str, Any] = {"model": self.model if self.has_own_model else None}
        values.update({k: self.settings.get(k) for k in LLM_FIELDS if k != "model"})
        values["tools"] = None if self.tools_config == "inherit" else self.tools_config
        values["mcp"] = None if self.mcp_config == "inherit" else self.mcp_config
        values.update({k: getattr(self, k, None) for k in CALLBACK_FIELDS})
        values["bus"] = self.bus
        values["max_tool_rounds"] = self.max_tool_rounds
        values.update({k: getattr(self, k) for k in _DEFAULTED if k in self._config_set})
        limits = self.ledger.limits if self.ledger is not None else {}
        values["token_budget"] = int(limits["tokens"]) if "tokens" in limits else None
        values["cost_budget"] = limits.get("cost")
        out = RunConfig()
        for name, value in values.items():
            if value is not None:
                out._values[name] = value  # read from settings already checked
        return out

    @property
    def effective_config(self) -> dict[str, Any]:
        """RobotLab's ``effective_config``: the robot's settings that are set, as a dict in :data:`FIELDS` order
        (the model the configuration gives and the guards' defaults included)."""
        out = self.run_config.to_dict()
        if "model" not in out and self.model:
            out["model"] = self.model
        out.setdefault("doom_loop_threshold", self.doom_loop_threshold)
        out.setdefault("max_tools", self.max_tools)
        return {k: out[k] for k in FIELDS if k in out}


def layer_options(robot: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """A run's ``options`` with its ``network_config`` (the parent level) and ``config`` (the run's level) laid
    over the robot's own (see the module): the tool and MCP levels, the guards, a ledger for the budgets."""
    out = dict(options)
    if not _layered(options):  # the robot's own level is in its settings already
        return out
    parent, run = _levels(robot, options)
    if parent.tools is not None and out.get("network_tools", "inherit") == "inherit":
        out["network_tools"] = parent.tools
    if parent.mcp is not None and out.get("network_mcp", "inherit") == "inherit":
        out["network_mcp"] = parent.mcp
    for key in ("tools", "mcp"):
        if run.get(key) is not None and out.get(key, "inherit") == "inherit":
            out[key] = run.get(key)
    for key in ("max_tool_rounds", *_DEFAULTED):
        if key not in out:
            own = getattr(robot, key) if key == "max_tool_rounds" or key in robot._config_set else None
            value = next((v for v in (run.get(key), own, parent.get(key)) if v is not None), None)
            if value is not None:
                out[key] = _whole(value, key, robot.name, minimum=0 if key == "doom_loop_threshold" else 1)
    budgets = parent.merge(run)
    if out.get("ledger") is None and robot.ledger is None and (
            budgets.token_budget is not None or budgets.cost_budget is not None):
        out["ledger"] = _budget_ledger(robot.name, None, budgets.token_budget, budgets.cost_budget)
    return out


def finish_spec(robot: Any, spec: RunSpec, options: Mapping[str, Any]) -> None:
    """The layers' model settings, model and tool callbacks put into ``spec`` (built by ``prepare``)."""
    if not _layered(options):
        return
    parent, run = _levels(robot, options)
    given = options.get("settings") or {}
    settings = dict(spec.settings)
    for key in LLM_FIELDS[1:]:
        if parent.get(key) is not None and key not in robot.settings and key not in given:
            settings[key] = parent.get(key)
        if run.get(key) is not None and key not in given:
            settings[key] = run.get(key)
    spec.settings = settings
    model = run.model or (parent.model if not robot.has_own_model else None)
    if model and model != robot.model and options.get("provider") is None:
        if robot._provider_given:
            raise ConfigurationError(
                f"Robot '{robot.name}' was given a provider, so a RunConfig's model ({model}) cannot change it: "
                "give this run its own provider= instead, or build the robot with model= and api_base=")
        from workspace.providers import provider_for
        from workspace.providers.base import with_defaults

        own_key = {"api_key": robot._api_key} if robot._api_key else {}
        spec.provider = with_defaults(provider_for(model, api_base=robot.api_base, config=robot.config,
                                                   folder_written=robot.api_base_in_folder, **own_key))
    for key in ("on_tool_call", "on_tool_result"):
        callback = run.get(key) or getattr(robot, key) or parent.get(key)
        if callback is not None:
            setattr(spec, key, callback)


def watch_content(robot: Any, run: AgentRun, options: Mapping[str, Any]) -> None:
    """Call the stored ``on_content`` (the robot's, else the network's) and then the run's (``on_content=`` or its
    ``config``) with each piece of the run's own answer text, as the run's events are read."""
    if robot.on_content is None and options.get("on_content") is None and not _layered(options):
        return
    parent, level = _levels(robot, options)
    callbacks = [c for c in (robot.on_content or parent.on_content, options.get("on_content") or level.on_content)
                 if c is not None]
    if not callbacks:
        return
    from workspace import events as ev

    def observe(event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta) and event.run_id == run.run_id:
            for callback in callbacks:
                callback(event.text)

    run.add_observer(observe)


def _layered(options: Mapping[str, Any]) -> bool:
    """Whether a run has a level over the robot's own: a network's (and its task's) or its own ``config``."""
    return options.get("network_config") is not None or options.get("config") is not None


def _levels(robot: Any, options: Mapping[str, Any]) -> tuple[RunConfig, RunConfig]:
    try:
        return coerce(options.get("network_config")), coerce(options.get("config"))
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"Robot '{robot.name}': {exc}") from None
