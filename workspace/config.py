"""Configuration in layers, lowest first.

1. built-in defaults (:data:`DEFAULTS`)
2. the user file (``robotlab paths`` shows where; ``config.yaml``)
3. the project file (``.robotlab/config.yaml`` in the folder the user opened)
4. environment variables ``ROBOT_LAB_<SECTION>__<KEY>`` (values read as YAML scalars,
   so ``ROBOT_LAB_LLM__TEMPERATURE=0.2`` is a number); RobotLab's
   ``ROBOT_LAB_RUBY_LLM__MODEL`` is accepted as ``llm.model``
5. explicit arguments (``load_config(overrides={"llm": {"model": ...}})``)

A bad value raises :class:`~workspace.errors.ConfigurationError` naming the file (or
variable) and the key, and what would be accepted. API keys are never part of the
configuration: they come from the environment variables litellm reads, or from the
OS keyring.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workspace.errors import ConfigurationError

ENV_PREFIX = "ROBOT_LAB_"
SECTION_ALIASES = {"ruby_llm": "llm"}

DEFAULTS: dict[str, Any] = {
    "llm": {
        # None: the offline demo, which needs no key and is labelled as not being a language model.
        "model": None,
        "api_base": None,
        "temperature": None,
        "top_p": None,
        "max_tokens": None,
        "timeout": 120.0,
        "max_retries": 3,
        # The most characters of one tool result sent to the model (the rest is cut, with a note).
        "max_tool_result_chars": 50_000,
    },
    "agent": {
        "max_turns": 20,
        "tool_timeout": 300.0,
        # The global level of the tool and MCP hierarchies (see workspace.tools.selection).
        "tools": "all",
        "mcp": "all",
    },
    "review": {"mode": "review"},
    "ui": {"theme": "light"},
    "demo": {"delay": 0.015},
    "mcpServers": {},
}

REVIEW_MODES = ("review", "auto", "readonly")
THEMES = ("light", "dark")


@functools.cache
def _schema() -> Any:
    """Pydantic models of the configuration (built on first use: pydantic costs import time)."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")

    class LLM(_Strict):
        model: str | None = None
        api_base: str | None = None
        temperature: float | None = Field(None, ge=0, le=2)
        top_p: float | None = Field(None, ge=0, le=1)
        max_tokens: int | None = Field(None, gt=0)
        timeout: float = Field(120.0, gt=0)
        max_retries: int = Field(3, ge=0, le=20)
        max_tool_result_chars: int = Field(50_000, ge=1_000)

    class Agent(_Strict):
        max_turns: int = Field(20, ge=1, le=1000)
        tool_timeout: float = Field(300.0, gt=0)
        tools: Literal["all", "none", "inherit"] | list[str] = "all"
        mcp: Literal["all", "none", "inherit"] | list[str] = "all"

    class Review(_Strict):
        mode: Literal["review", "auto", "readonly"] = "review"

    class UI(_Strict):
        theme: Literal["light", "dark"] = "light"

    class Demo(_Strict):
        delay: float = Field(0.015, ge=0, le=5)

    class Root(_Strict):
        llm: LLM = Field(default_factory=LLM)
        agent: Agent = Field(default_factory=Agent)
        review: Review = Field(default_factory=Review)
        ui: UI = Field(default_factory=UI)
        demo: Demo = Field(default_factory=Demo)
        mcpServers: dict[str, dict[str, Any]] = Field(default_factory=dict)
        approval: dict[str, Any] | None = None

    return Root


@dataclass
class Config:
    """The merged configuration, as plain nested dicts with attribute access by section."""

    data: dict[str, Any]
    #: Where each dotted key's value came from (file path, env var, "default", "argument").
    sources: dict[str, str] = field(default_factory=dict)
    folder: Path | None = None
    #: Settings of the folder's ``.robotlab/`` held back until the folder is trusted
    #: (see :mod:`workspace.trust`); empty when there are none or the folder is trusted.
    withheld: dict[str, Any] = field(default_factory=dict)

    @property
    def trusted(self) -> bool:
        return not self.withheld

    def __getattr__(self, name: str) -> Any:
        data = self.__dict__.get("data")
        if data is not None and name in data:
            value = data[name]
            return _Section(value) if isinstance(value, dict) else value
        raise AttributeError(name)

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    @property
    def mcp_servers(self) -> dict[str, dict[str, Any]]:
        return dict(self.data.get("mcpServers") or {})

    def source_of(self, dotted: str) -> str:
        return self.sources.get(dotted, "default")


class _Section:
    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._data[name]
        except KeyError:
            raise AttributeError(name) from None
        return _Section(value) if isinstance(value, dict) else value

    def __repr__(self) -> str:
        return f"Section({self._data!r})"


def read_yaml_file(path: Path, *, what: str = "configuration") -> dict[str, Any]:
    """A YAML (or JSON) mapping from ``path``; errors name the file and the line."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path}: the {what} file is not UTF-8 text ({exc})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigurationError(
            f"{path}: the {what} file is not valid YAML{where}: {problem}. Fix the file or move it away."
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{path}: the {what} file must hold a mapping of sections (like 'llm:'), not {type(data).__name__}"
        )
    return data


def _merge(base: dict[str, Any], layer: Mapping[str, Any], sources: dict[str, str], source: str,
           prefix: str = "") -> None:
    for key, value in layer.items():
        key = str(key)
        dotted = f"{prefix}{key}"
        if key == "mcp_servers" and not prefix:  # snake_case spelling of the mcpServers section
            key, dotted = "mcpServers", "mcpServers"
        if isinstance(value, Mapping) and isinstance(base.get(key), dict) and key != "mcpServers":
            _merge(base[key], value, sources, source, dotted + ".")
        elif key == "mcpServers" and isinstance(value, Mapping) and isinstance(base.get(key), dict):
            for name, server in value.items():  # servers merge by name, each replaced whole
                base[key][str(name)] = copy.deepcopy(server)
                sources[f"mcpServers.{name}"] = source
        else:
            base[key] = copy.deepcopy(value)
            sources[dotted] = source


def _env_layer(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    import yaml

    layer: dict[str, Any] = {}
    names: dict[str, str] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name[len(ENV_PREFIX):]:
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX):].split("__")]
        parts[0] = SECTION_ALIASES.get(parts[0], parts[0])
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw
        node = layer
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigurationError(f"{name}: conflicts with another ROBOT_LAB_ variable")
        node[parts[-1]] = value
        names[".".join(parts)] = name
    return layer, names


def load_config(
    folder: Path | None = None,
    *,
    user_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Merge every layer and validate the result."""
    from workspace import paths

    data = copy.deepcopy(DEFAULTS)
    sources: dict[str, str] = {}
    user = user_file if user_file is not None else paths.user_config_file()
    if user.is_file():
        _merge(data, read_yaml_file(user), sources, str(user))
    withheld: dict[str, Any] = {}
    if folder is not None:
        from workspace import trust

        project = paths.project_config_file(folder)
        layer = read_yaml_file(project) if project.is_file() else {}
        needed = trust.sensitive_settings(layer)  # what trust.needs_trust(folder) reads, already read here
        if needed and not trust.is_trusted(Path(folder), needed):
            withheld = needed
            layer = trust.strip_sensitive(layer)
        if layer:
            _merge(data, layer, sources, str(project))
    env_layer, env_names = _env_layer(os.environ if env is None else env)
    if env_layer:
        for dotted, var in env_names.items():
            sources[dotted] = var
        _merge(data, env_layer, {}, "environment")
    if overrides:
        _merge(data, overrides, sources, "argument")
    validated = validate(data, sources)
    return Config(validated, sources, Path(folder) if folder else None, withheld)


def validate(data: dict[str, Any], sources: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Validate merged data; errors name where the bad value came from and the key."""
    from pydantic import ValidationError

    sources = sources or {}
    root = _schema()
    try:
        model = root.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = [str(p) for p in err["loc"] if not str(p).startswith(("literal[", "list["))]
            dotted = ".".join(loc)
            origin = _source_for(dotted, sources)
            value = err.get("input")
            if err["type"] == "extra_forbidden":
                section = ".".join(loc[:-1])
                allowed = _allowed_keys(section)
                problems.append(
                    f"{origin}: unknown key '{dotted}'" + (f"; allowed keys: {', '.join(allowed)}" if allowed else "")
                )
            else:
                problems.append(f"{origin}: '{dotted}' = {value!r}: {err['msg']}")
        unique = list(dict.fromkeys(problems))
        raise ConfigurationError("Invalid configuration:\n  " + "\n  ".join(unique)) from None
    out: dict[str, Any] = model.model_dump()
    # Keep mcpServers exactly as written (unknown keys preserved for round trips).
    out["mcpServers"] = copy.deepcopy(data.get("mcpServers") or {})
    if out.get("approval") is None:
        out.pop("approval", None)
    return out


def _source_for(dotted: str, sources: Mapping[str, str]) -> str:
    probe = dotted
    while probe:
        if probe in sources:
            return sources[probe]
        probe = probe.rpartition(".")[0]
    return "defaults"


def _allowed_keys(section: str) -> list[str]:
    node: Any = DEFAULTS
    for part in section.split(".") if section else []:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        keys = list(node)
        if not section:
            keys.append("approval")
        return keys
    return []


def default_config_text() -> str:
    """The commented starter file ``robotlab config init`` writes."""
    return """\
# RobotLab Workspace configuration. Layers: defaults < this file < .robotlab/config.yaml
# in the opened folder < ROBOT_LAB_<SECTION>__<KEY> environment variables < arguments.
llm:
  # Any model litellm supports, e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5,
  # ollama_chat/llama3.1 (with api_base: http://localhost:11434). Leave empty for the offline demo.
  model:
  api_base:
  timeout: 120
agent:
  max_turns: 20
review:
  mode: review      # review | auto | readonly
ui:
  theme: light      # light | dark
# MCP servers, in the format of Claude Desktop / Cursor:
mcpServers: {}
"""
