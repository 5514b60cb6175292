"""Configuration in layers, lowest first.

1. built-in defaults (:data:`DEFAULTS`)
2. the user file (``robotlab paths`` shows where; ``config.yaml``)
3. the project file (``.robotlab/config.yaml`` in the folder the user opened)
4. environment variables ``ROBOT_LAB_<SECTION>__<KEY>`` (values read as YAML scalars,
   so ``ROBOT_LAB_LLM__TEMPERATURE=0.2`` is a number); RobotLab's
   ``ROBOT_LAB_RUBY_LLM__MODEL`` is accepted as ``llm.model``
5. explicit arguments (``load_config(overrides={"llm": {"model": ...}})``)

A bad value raises :class:`~workspace.errors.ConfigurationError` naming the file and
line (or the variable) and the key, and what would be accepted; an unknown key lists
the allowed ones and the closest ("did you mean ..."). Each layer is checked before it
is merged, with the schema of :mod:`workspace.schemas.config` (``robotlab schema config``). API keys are never part of the
configuration: they come from the environment variables litellm reads, or from the
OS keyring.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError

if TYPE_CHECKING:
    from workspace.schemas import Lines

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
        # A local server may be loading the model: the first token gets longer than gaps mid-stream.
        "first_token_timeout": 180.0,
        "idle_timeout": 60.0,
        # The most seconds one model call waits for its first token, every retry and pause included.
        "max_wait": 300.0,
        "max_retries": 3,
        # Requests at a time to one server; None: 1 for a server on this machine, no limit for hosted ones.
        "max_concurrent_requests": None,
        # auto: OpenAI-compatible servers through the openai SDK, the rest through litellm.
        "provider": "auto",
        # Where litellm runs: separate (its own process), same, auto (separate in the window, same elsewhere).
        "litellm_process": "auto",
        "tool_choice": None,
        # The most characters of one tool result sent to the model (the rest is cut, with a note).
        "max_tool_result_chars": 50_000,
        # The most characters one answer streams (its text, thinking and tool calls) before it is stopped.
        "max_answer_chars": 4_000_000,
        # The model's window when nothing reports it (a number, or model id -> number); see workspace.context.
        "context_window": None,
        # compact | truncate | error: what happens when a conversation outgrows the window.
        "context_policy": "compact",
        "compaction_threshold": 0.8,
        # A local model's answer is held to this share of its context window when max_tokens is not set
        # (a looping small model cannot write until the window is full); 0: no limit.
        "local_max_tokens_share": 0.25,
        # The model that summarises compacted messages (empty: the robot's own).
        "compaction_model": None,
        # Whether the model takes images: true/false, or model id -> true/false; None: litellm's model map says.
        "vision": None,
        # The embeddings model of document stores (a litellm id; None: the offline lexical measure) and its server.
        "embedding_model": None,
        "embedding_api_base": None,
    },
    # The largest files (bytes) sent with a message: text whole up to the first, images up to the second.
    "attachments": {"max_text_bytes": 100 * 1024, "max_image_bytes": 20 * 1024 * 1024},
    "agent": {
        "max_turns": 20,
        "tool_timeout": 300.0,
        # The global level of the tool and MCP hierarchies (see workspace.tools.selection).
        "tools": "all",
        "mcp": "all",
        # A tool call the model wrote as text (<tool_call>{...}</tool_call>, ...): run it, only say so, or ignore it.
        "text_tool_calls": "run",
        # Seconds a run waits for MCP servers still starting; it then goes on without them and their
        # tools join when they are up (0: never wait).
        "mcp_startup_wait": 5.0,
        # Times a structured answer (output_type / output_schema) that does not validate is sent back.
        "output_retries": 2,
    },
    # OpenTelemetry export of runs (workspace.tracing); OTEL_EXPORTER_OTLP_ENDPOINT switches it on too.
    "tracing": {"otel": False},
    "review": {"mode": "review", "memory": "auto"},
    "ui": {"theme": "light", "notifications": True},
    "demo": {"delay": 0.015},
    # The most a skill's script may be given (its SKILL.md capabilities are cut to these): see workspace.tools.grants.
    "sandbox": {"fs_read": ["."], "fs_write": ["."], "network": False, "timeout": 120.0},
    "mcpServers": {},
}

REVIEW_MODES = ("review", "auto", "readonly")
THEMES = ("light", "dark")


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
    #: The line of every key of each file read, by file path (for messages about a file's values).
    key_lines: dict[str, Lines] = field(default_factory=dict, repr=False)
    #: When it was read (``time.monotonic()``): the MCP manager never goes back to an older one.
    loaded_at: float = field(default_factory=time.monotonic, compare=False, repr=False)
    #: The ``llm.api_base`` values of the user's own layers (their file, ``ROBOT_LAB_`` variables, arguments),
    #: even when the folder's file overrides them: where the user's API keys may go (:func:`workspace.urls.key_may_go`).
    user_api_bases: tuple[str, ...] = field(default=(), compare=False, repr=False)

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

    from workspace import yaml_limits

    layer: dict[str, Any] = {}
    names: dict[str, str] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name[len(ENV_PREFIX):]:
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX):].split("__")]
        parts[0] = SECTION_ALIASES.get(parts[0], parts[0])
        try:
            value = yaml_limits.safe_load(raw) if raw.strip() else None
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
    from workspace.schemas import read_yaml_file
    from workspace.schemas.config import check_layer

    data = copy.deepcopy(DEFAULTS)
    sources: dict[str, str] = {}
    key_lines: dict[str, Lines] = {}
    own_bases: list[str] = []
    user = user_file if user_file is not None else paths.user_config_file()
    if user.is_file():
        user_layer, user_lines = read_yaml_file(user)
        check_layer(user_layer, lines=user_lines, source=str(user))
        own_bases.append(_api_base_of(user_layer))
        key_lines[str(user)] = user_lines.also_under(("mcp_servers",), ("mcpServers",))
        _merge(data, user_layer, sources, str(user))
    withheld: dict[str, Any] = {}
    if folder is not None:
        from workspace import trust

        project = paths.project_config_file(folder)
        layer: dict[str, Any] = {}
        lines: Lines | None = None
        if project.is_file():
            layer, lines = read_yaml_file(project)
        needed = trust.sensitive_settings(layer)  # what trust.needs_trust(folder) reads, already read here
        if needed and not trust.is_trusted(Path(folder), needed):
            withheld = needed
            layer = trust.strip_sensitive(layer)
        if layer:
            check_layer(layer, lines=lines, source=str(project))
            if lines is not None:
                key_lines[str(project)] = lines.also_under(("mcp_servers",), ("mcpServers",))
            _merge(data, layer, sources, str(project))
    env_layer, env_names = _env_layer(os.environ if env is None else env)
    if env_layer:
        check_layer(env_layer, env_names=env_names, env_prefix=ENV_PREFIX)
        for dotted, var in env_names.items():
            sources[dotted] = var
        _merge(data, env_layer, {}, "environment")
        own_bases.append(_api_base_of(env_layer))
    if overrides:
        check_layer(overrides, source="argument")
        _merge(data, overrides, sources, "argument")
        own_bases.append(_api_base_of(overrides))
    validated = validate(data, sources)
    return Config(validated, sources, Path(folder) if folder else None, withheld, key_lines,
                  user_api_bases=tuple(b for b in own_bases if b))


def _api_base_of(layer: Mapping[str, Any]) -> str:
    llm = layer.get("llm")
    value = llm.get("api_base") if isinstance(llm, Mapping) else None
    return str(value) if value else ""


def validate(data: dict[str, Any], sources: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Validate merged data; errors name where the bad value came from and the key."""
    from pydantic import ValidationError

    from workspace.schemas.config import ConfigFile, problems_of

    sources = sources or {}
    try:
        model = ConfigFile.model_validate(data)
    except ValidationError as exc:
        problems = problems_of(exc, origin=lambda loc: _source_for(".".join(str(p) for p in loc), sources))
        raise ConfigurationError("Invalid configuration:\n  " + "\n  ".join(problems)) from None
    out: dict[str, Any] = model.model_dump()
    # Keep mcpServers exactly as written (unknown keys preserved for round trips).
    out["mcpServers"] = copy.deepcopy(data.get("mcpServers") or {})
    out.pop("mcp_servers", None)
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
  # first_token_timeout: 180   # a local server may be loading the model
  # idle_timeout: 60           # the longest gap mid-stream
  # max_wait: 300              # one call's whole wait for its first token, retries included
  # max_answer_chars: 4000000  # an answer streaming past this many characters is stopped
  # tool_choice: auto          # llama-cpp-python's server calls tools only when this is sent
  # vision: true               # the model takes images (or per model: {llava: true, llama3.1: false})
  # embedding_model: openai/text-embedding-3-small   # document stores' embeddings (empty: word matching)
# attachments:
#   max_text_bytes: 102400     # text files are sent whole up to this size (bytes)
#   max_image_bytes: 20971520  # images up to this size (bytes)
agent:
  max_turns: 20
review:
  mode: review      # review | auto | readonly
  memory: auto      # auto: what a robot learns is kept at once | ask: proposed for you to accept or reject
ui:
  theme: light      # light | dark
  notifications: true   # tell the desktop when a long run ends or asks for approval in the background
# MCP servers, in the format of Claude Desktop / Cursor:
mcpServers: {}
"""
