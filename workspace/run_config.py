"""RobotLab's ``RunConfig``: the settings of a run given in layers (network -> task -> robot -> run).

A :class:`RunConfig` holds only the fields that were set. ``merge(other)`` makes a new one where the set
fields of ``other`` win, so a layer below is merged first::

    shared = RunConfig(model="openai/gpt-4o-mini", temperature=0.2)
    net = Network("support", config=shared)
    net.task("triage", triage, config=RunConfig(max_tool_rounds=3))        # over the network's
    robot = Robot("writer", template="writer", config=RunConfig(temperature=0.7))
    await robot.arun("Draft it", config=RunConfig(max_tokens=400))       # this run only

The fields are ours where we have the setting (a robot's ``model``, its model settings, ``tools`` and
``mcp``, the tool callbacks, ``bus``, the guards of the tool loop, the budgets, a network's
``max_concurrent_robots``), so a ``RunConfig`` fills those in rather than a second set of settings.
RobotLab's ``enable_cache``, ``ractor_pool_size``, ``auto_compact`` and ``compact_threshold`` are refused
with what to use here instead. Where each layer enters: :mod:`workspace.robot_config`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

#: The model's settings (sent with each model call; a robot's ``settings``).
LLM_FIELDS = ("model", "temperature", "top_p", "top_k", "max_tokens", "presence_penalty", "frequency_penalty",
              "stop")
#: The tool and MCP levels (``inherit`` / ``none`` / ``all`` / a list).
TOOL_FIELDS = ("mcp", "tools")
#: Called as the run goes: a tool call, its result, each piece of the answer's text.
CALLBACK_FIELDS = ("on_tool_call", "on_tool_result", "on_content")
#: The rest: the bus, the tool loop's guards, the budgets, a network's cap on robots at once.
INFRA_FIELDS = ("bus", "max_tool_rounds", "token_budget", "cost_budget", "max_concurrent_robots",
                "doom_loop_threshold", "max_tools")
FIELDS = (*LLM_FIELDS, *TOOL_FIELDS, *CALLBACK_FIELDS, *INFRA_FIELDS)
#: Fields that cannot go in a file (a function, a live bus); ``to_dict(json_safe=True)`` leaves them out.
LIVE_FIELDS = frozenset({*CALLBACK_FIELDS, "bus"})

#: RobotLab's fields we do not have, and what to use instead.
NOT_HERE = {
    "enable_cache": "answers are cached per request by a CachingProvider (workspace.evals.cache), not by a flag",
    "ractor_pool_size": "there are no Ractors here: a network's tasks run as asyncio tasks; cap them with "
                        "max_concurrent_robots",
    "auto_compact": "a conversation nearing the model's window is compacted by default: set the robot's "
                    "context_policy ('compact', 'truncate' or 'error')",
    "compact_threshold": "the threshold is the configuration's llm.compaction_threshold (0.8 of the window by "
                         "default)",
}

_WHOLE = {"max_tool_rounds": 1, "token_budget": 1, "max_concurrent_robots": 1, "doom_loop_threshold": 0,
          "max_tools": 1}


class RunConfig:
    """The fields of a run that were set (see the module). ``RunConfig(model=..., temperature=...)``;
    read a field as an attribute (None: not set); ``set(**fields)`` sets some and returns the config
    (chainable); an unknown field is an error naming the known ones."""

    __slots__ = ("_values",)

    _values: dict[str, Any]
    model: str | None
    temperature: float | None
    top_p: float | None
    top_k: int | None
    max_tokens: int | None
    presence_penalty: float | None
    frequency_penalty: float | None
    stop: str | list[str] | None
    mcp: Any
    tools: Any
    on_tool_call: Callable[..., Any] | None
    on_tool_result: Callable[..., Any] | None
    on_content: Callable[..., Any] | None
    bus: Any
    max_tool_rounds: int | None
    token_budget: int | None
    cost_budget: float | None
    max_concurrent_robots: int | None
    doom_loop_threshold: int | None
    max_tools: int | None

    def __init__(self, **fields: Any) -> None:
        object.__setattr__(self, "_values", {})
        self.set(**fields)

    # -- fields ---------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:  # only for names that are not fields (they are properties)
        raise AttributeError(_unknown(name))

    def __setattr__(self, name: str, value: Any) -> None:
        self.set(**{name: value})

    def set(self, **fields: Any) -> RunConfig:
        """Set these fields (None removes one) and return this config, for chaining."""
        for name in fields:
            if name not in FIELDS:
                raise ValueError(_unknown(name))
        for name, value in fields.items():
            if value is None:
                self._values.pop(name, None)
            else:
                self._values[name] = check_field(name, value)
        return self

    def get(self, name: str, default: Any = None) -> Any:
        """The field ``name``, or ``default`` when it is not set."""
        if name not in FIELDS:
            raise ValueError(_unknown(name))
        return self._values.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return (name for name in FIELDS if name in self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def empty(self) -> bool:
        """Whether no field is set."""
        return not self._values

    # -- layers ---------------------------------------------------------------------------------
    def merge(self, other: RunConfig | Mapping[str, Any] | None) -> RunConfig:
        """A new config: this one's fields, then the set fields of ``other`` (they win)."""
        merged = RunConfig()
        merged._values.update(self._values)
        if other is not None:
            merged._values.update(coerce(other)._values)
        return merged

    def to_dict(self, *, json_safe: bool = False) -> dict[str, Any]:
        """The set fields in the order of :data:`FIELDS`; ``json_safe`` leaves out the callbacks and the bus."""
        return {name: self._values[name] for name in self
                if not (json_safe and name in LIVE_FIELDS)}

    @classmethod
    def from_front_matter(cls, meta: Mapping[str, Any]) -> RunConfig:
        """RobotLab's ``from_front_matter``: a robot file's model settings, ``tools`` and ``mcp`` from its own
        keys, over its ``config:`` block (the other fields a file may set: the guards and the budgets)."""
        block = meta.get("config")
        if block is not None and not isinstance(block, Mapping):
            raise ValueError(f"config: must be a mapping of RunConfig fields, got {type(block).__name__}")
        base = cls()
        for name, value in (block or {}).items():
            if name in LIVE_FIELDS:
                raise ValueError(f"config.{name}: a robot file cannot give {name} (a function or a live bus); "
                                 f"set it in code: Robot(..., config=RunConfig({name}=...))")
            base.set(**{str(name): value})
        top = cls(**{k: meta[k] for k in (*LLM_FIELDS, *TOOL_FIELDS) if meta.get(k) is not None})
        return base.merge(top)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunConfig) and self._values == other._values

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={'<function>' if callable(v) and k in CALLBACK_FIELDS else v!r}"
                          for k, v in self.to_dict().items())
        return f"RunConfig({inner})"


def _reader(name: str) -> property:
    def read(self: RunConfig) -> Any:
        return self._values.get(name)

    read.__name__ = name
    return property(read, doc=f"The field {name} (None: not set).")


for _name in FIELDS:  # a field is read as a property (fast); setting goes through RunConfig.set
    setattr(RunConfig, _name, _reader(_name))


def coerce(value: RunConfig | Mapping[str, Any] | None) -> RunConfig:
    """``value`` as a RunConfig (a mapping of fields is checked like keywords; None is an empty one)."""
    if value is None:
        return RunConfig()
    if isinstance(value, RunConfig):
        return value
    if isinstance(value, Mapping):
        return RunConfig(**{str(k): v for k, v in value.items()})
    raise TypeError(f"config= must be a RunConfig or a mapping of its fields, got {type(value).__name__}")


def _unknown(name: str) -> str:
    if name in NOT_HERE:
        return f"RunConfig field '{name}' is RobotLab's but not ours: {NOT_HERE[name]}"
    from difflib import get_close_matches

    guess = get_close_matches(name, FIELDS, n=1, cutoff=0.75)
    hint = f" (did you mean '{guess[0]}'?)" if guess else ""
    return f"Unknown RunConfig field: {name}{hint}. The fields are: {', '.join(FIELDS)}"


def check_field(name: str, value: Any) -> Any:
    """``value`` checked for the field ``name`` (an error names the field and what it takes)."""
    if name in CALLBACK_FIELDS:
        if not callable(value):
            raise ValueError(f"RunConfig {name} must be a function, got {type(value).__name__}")
        return value
    if name == "bus":
        if not hasattr(value, "subscribe") and not hasattr(value, "publish"):
            raise ValueError(f"RunConfig bus must be a MessageBus, got {type(value).__name__}")
        return value
    if name == "model":
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"RunConfig model must be a model id like 'openai/gpt-4o-mini', got {value!r}")
        return value
    if name in TOOL_FIELDS:
        from workspace.tools import selection

        selection.check_level(value, what=name)
        return list(value) if isinstance(value, tuple) else value
    if name in _WHOLE:
        least = _WHOLE[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"RunConfig {name} must be a whole number of at least {least}, got {value!r}")
        return value
    if name == "cost_budget":
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise ValueError(f"RunConfig cost_budget must be a number of US dollars, 0 or more, got {value!r}")
        return float(value)
    from workspace.schemas.robot import check_settings

    try:
        check_settings({name: value}, what="RunConfig field")
    except Exception as exc:
        raise ValueError(f"RunConfig {exc}") from None
    return value
