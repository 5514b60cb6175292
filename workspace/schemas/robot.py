"""Schemas of robots: the front matter of robot and template files, and ``Robot(**settings)``.

```
---
name: billing
description: Answers billing questions
model: openai/gpt-4o-mini
temperature: 0.2
tools: [read_file, search_files]
mcp: inherit
mcp_resources: true          # may read its MCP servers' resources itself (read-only tools)
robots: [refunds]            # other robots it may call as tools
output_schema:               # optional: the answer is a JSON object of this JSON Schema
  type: object
  properties: {category: {type: string}, answer: {type: string}}
  required: [category, answer]
x-owner: billing-team        # your own keys start with "x-": kept in Template.metadata, never checked
---
You answer billing questions for {{ company_name }}.
```

:class:`ModelSettings` are the settings of the model call (the keyword settings of ``Robot``, a
run's ``settings=``, and the same keys in front matter); :class:`FrontMatter` adds the robot's
own keys. Imported on use: it imports pydantic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, ConfigDict, Field, SkipValidation, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from workspace.schemas import Lines, SchemaError, closest, validate
from workspace.schemas.base import StrictModel, one_error

__all__ = [
    "FallbackModel",
    "FrontMatter",
    "McpPrompt",
    "ModelSettings",
    "check_front_matter",
    "check_mcp_prompt",
    "check_settings",
    "robot_json_schema",
]

LEVEL_HINT = "must be inherit, none, all or a list of names"
#: What a robot file's ``bus:`` must be (a name; ``true`` is a network file's form).
BUS_HINT = ("must be a bus name like 'team' (letters, digits, '-', '_' or '.'): robots whose files name the same "
            "bus talk on it with send_message")
BUS_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
#: Keys people add to front matter for themselves start with this (kept, never checked).
OWN_KEY_PREFIX = "x-"


def _number_to_text(value: Any) -> Any:
    """``name: 2024`` is the name "2024" (YAML reads it as a number)."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


Text = Annotated[str, BeforeValidator(_number_to_text)]
Level = Annotated[Literal["inherit", "none", "all"] | list[str] | None, one_error(LEVEL_HINT)]
McpLevel = Annotated[Literal["inherit", "none", "all"] | list[str | dict[str, Any]] | None, one_error(LEVEL_HINT)]
Stop = Annotated[str | list[str] | None, one_error("must be a string or a list of strings")]


class ModelSettings(StrictModel):
    """Settings of the model call, passed to the provider as they are."""

    hints: ClassVar[dict[str, str]] = {
        "temperature": "must be a number from 0 to 2",
        "top_p": "must be a number from 0 to 1",
        "top_k": "must be a positive whole number",
        "max_tokens": "must be a positive whole number",
        "presence_penalty": "must be a number from -2 to 2",
        "frequency_penalty": "must be a number from -2 to 2",
        "stop": "must be a string or a list of strings",
        "tool_choice": "must be auto, required, none or a tool's name",
    }

    temperature: float | None = Field(None, ge=0, le=2, strict=True,
                                      description="Sampling temperature, 0 to 2: lower is more focused")
    top_p: float | None = Field(None, ge=0, le=1, strict=True,
                                description="Nucleus sampling: the probability mass to sample from, 0 to 1")
    top_k: int | None = Field(None, ge=1, strict=True,
                              description="Sample from the k most likely tokens (providers that support it)")
    max_tokens: int | None = Field(None, ge=1, strict=True, description="The most tokens of one answer")
    presence_penalty: float | None = Field(None, ge=-2, le=2, strict=True,
                                           description="-2 to 2: positive values favour new topics")
    frequency_penalty: float | None = Field(None, ge=-2, le=2, strict=True,
                                            description="-2 to 2: positive values discourage repetition")
    stop: Stop = Field(None, description="Text (or texts) at which the model stops")
    tool_choice: str | None = Field(None, description="auto | required | none | a tool's name, sent with the tools "
                                    "(llama-cpp-python's server calls tools only when it is sent)")


class FallbackModel(StrictModel):
    """A model to try when the robot's own cannot answer (outage, rate limit)."""

    model: str = Field(description="Model id, e.g. anthropic/claude-haiku-4-5")
    api_base: str | None = Field(None, description="Its server's address, when it has one")


Fallbacks = Annotated[list[str | FallbackModel] | None,
                      one_error("must be a list of model ids (or of {model, api_base})")]


class McpPrompt(StrictModel):
    """An MCP server's prompt used as the start of the system prompt."""

    server: str = Field(description="A server of mcpServers")
    prompt: str = Field(description="The name of one of the server's prompts")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The prompt's arguments")


class RunConfigBlock(ModelSettings):
    """A robot file's ``config:`` block: RobotLab's RunConfig fields a file can give (workspace.run_config)."""

    model: str | None = Field(None, description="Model id, e.g. openai/gpt-4o-mini")
    tools: Level = Field(None, description="inherit | none | all | a list of tool names")
    mcp: McpLevel = Field(None, description="MCP servers: inherit | none | all | a list of server names")
    max_tool_rounds: int | None = Field(None, ge=1, strict=True, description="The most tool calls of one run")
    doom_loop_threshold: int | None = Field(None, ge=0, strict=True, description="Warn the model after this many "
                                            "repeats of the same tool call (0: never)")
    max_tools: int | None = Field(None, ge=1, strict=True, description="The most tools offered to the model")
    token_budget: int | None = Field(None, ge=1, strict=True, description="Tokens over the robot's life")
    cost_budget: float | None = Field(None, ge=0, description="US dollars over the robot's life")


class FrontMatter(ModelSettings):
    """The YAML front matter of a robot or template file."""

    model_config = ConfigDict(json_schema_extra={
        "patternProperties": {"^x-": {"description": "Your own data: kept, never checked"}}})
    hints: ClassVar[dict[str, str]] = {
        **ModelSettings.hints,
        "model": "must be a model id like 'openai/gpt-4o-mini'",
        "api_base": "must be an address like http://localhost:11434",
        "tools": LEVEL_HINT,
        "mcp": "must be inherit, none, all or a list of server names",
        "max_turns": "must be a positive whole number",
        "max_cost": "must be a number of US dollars, 0 or more",
        "max_total_tokens": "must be a positive whole number",
        "token_budget": "must be a positive whole number of tokens",
        "cost_budget": "must be a number of US dollars, 0 or more",
        "fallback_models": "must be a list of model ids (or of {model, api_base})",
        "mcp_resources": "must be true or false",
        "context_window": "must be a whole number of tokens, at least 256",
        "context_policy": "must be compact, truncate or error",
        "examples": "must be a list of messages, e.g. [\"list the files\", \"search for TODO\"]",
        "learn": "must be true or false",
        "bus": BUS_HINT,
    }

    name: Text | None = Field(None, description="The robot's name (default: the file name)")
    description: Text | None = Field(None, description="One line saying what the robot does")
    model: str | None = Field(None, description="Model id, e.g. openai/gpt-4o-mini or ollama_chat/llama3.1 "
                              "(explicit > front matter > configuration)")
    api_base: str | None = Field(None, description="Base URL of an OpenAI-compatible or local server; in files "
                                 "inside the opened folder only addresses on this machine")
    tools: Level = Field(None, description="inherit | none | all | a list of tool names ([] means none; "
                         "globs such as 'github__*' work)")
    mcp: McpLevel = Field(None, description="MCP servers: inherit | none | all | a list of server names")
    mcp_resources: bool | None = Field(None, strict=True, description="Let the robot read its MCP servers' "
                                       "resources itself (the read-only tools list_mcp_resources and "
                                       "read_mcp_resource); off by default")
    max_turns: int | None = Field(None, ge=1, strict=True, description="The most model turns of one run")
    max_cost: float | None = Field(None, ge=0, description="The most one run may cost in US dollars; the run stops "
                                   "(stop reason max_cost) before a model call once it is reached")
    max_total_tokens: int | None = Field(None, ge=1, strict=True, description="The most tokens (in + out) of one "
                                         "run; the run stops (stop reason max_total_tokens) once they are used")
    token_budget: int | None = Field(None, ge=1, strict=True, description="RobotLab's token budget over the "
                                     "robot's life (in + out, every run): each model call reserves from it first; "
                                     "the run that passes it fails with 'Token budget exceeded'")
    cost_budget: float | None = Field(None, ge=0, description="RobotLab's cost budget in US dollars over the "
                                      "robot's life: the run that passes it fails with 'Cost budget exceeded'")
    fallback_models: Fallbacks = Field(None, description="Models to try, in order, when the robot's model has an "
                                       "outage or a rate limit (a string, or {model, api_base})")
    context_window: int | None = Field(None, ge=256, strict=True, description="The model's context window in "
                                       "tokens, when the server or litellm does not say it")
    context_policy: Literal["compact", "truncate", "error"] | None = Field(
        None, description="When the conversation outgrows the window: compact (older messages summarised), "
        "truncate (the oldest turns left out) or error (the run fails before sending)")
    examples: Annotated[list[Text] | None, one_error("must be a list of messages, e.g. [\"list the files\"]")] = Field(
        None, description="Messages to start with: the window offers them in a new thread of this robot")
    # Checked when a run uses it (check_mcp_prompt): a bad one fails that run, naming the file.
    mcp_prompt: SkipValidation[McpPrompt | None] = Field(
        None, description="Start the system prompt with an MCP server's prompt")
    mcpServers: SkipJsonSchema[Any] = None
    output_schema: dict[str, Any] | None = Field(
        None, description="A JSON Schema the answer must match: the run's result carries the validated object "
        "(structured output)")
    robots: list[Text] | None = Field(None, description="Other robots (robot or template names) this robot may "
                                      "call as tools")
    verify: Text | None = Field(None, description="A command (e.g. \"pytest -q\") run in the sandbox on the changes "
                                "this robot proposes, and on the accepted hunks before Apply (review.verify otherwise)")
    skills: Annotated[list[Text] | Text | None, one_error("must be a template name or a list of them, e.g. "
                                                          "[tone, citations]")] = Field(
        None, description="Template skills: templates whose text goes before this one's (their own skills first, "
        "each once)")
    learn: bool | None = Field(None, strict=True, description="Give the robot the recall_knowledge and "
                               "record_knowledge tools over what it learnt in earlier runs")
    learn_domain: Text | None = Field(None, description="The topic area its knowledge is recorded under "
                                      "(default: general)")
    bus: Annotated[Text | None, one_error(BUS_HINT)] = Field(
        None, pattern=BUS_NAME, description="A message bus by name: robots whose files name the same bus, in one "
        "process, talk on it (each gets the send_message tool; robotlab run starts the others to answer)")
    config: RunConfigBlock | None = Field(None, description="RobotLab's RunConfig: model settings, tools, mcp, "
                                          "the tool loop's guards and the budgets, under this file's own keys")
    mcp_discovery: bool | None = Field(None, strict=True, description="On the first run, use only the MCP servers "
                                       "whose name and description are like the message")
    tool_share: float | None = Field(None, gt=0, le=1, description="The share of the model's context window the "
                                     "tools' schemas may take (default 0.25); past it the robot searches for the "
                                     "tools it needs (search_tools) instead of being sent them all")

    @field_validator("output_schema")
    @classmethod
    def _valid_schema(cls, value: Any) -> Any:
        if value is not None:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(value)
            except SchemaError as exc:
                raise ValueError(f"not a valid JSON Schema: {exc.message}") from exc
        return value

    @model_validator(mode="before")
    @classmethod
    def _own_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            return {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith(OWN_KEY_PREFIX))}
        return data

    @field_validator("mcpServers")
    @classmethod
    def _no_servers_here(cls, value: Any) -> Any:
        if value is not None:
            raise ValueError("robot files do not define MCP servers: define them under mcpServers in your "
                             "config.yaml (robotlab paths shows where) and name them here with mcp: [name]")
        return value


def check_front_matter(data: Mapping[str, Any], *, lines: Lines | None = None, source: str | None = None) -> None:
    """Raise :class:`SchemaError` naming the file, the line and the key of every problem."""
    validate(FrontMatter, dict(data), lines=lines, source=source)


def check_mcp_prompt(value: Any, *, where: str, lines: Lines | None = None) -> McpPrompt:
    """The front matter's ``mcp_prompt``, checked when a run needs it."""
    if not isinstance(value, Mapping):
        from workspace.errors import ConfigurationError

        raise ConfigurationError(f"{where}: mcp_prompt must be a mapping like {{server: NAME, prompt: NAME, "
                                 "arguments: {...}}} naming a server of mcpServers and one of its prompts")
    return validate(McpPrompt, dict(value), lines=lines, source=where if lines is None else None,
                    prefix=("mcp_prompt",))


def check_settings(settings: Mapping[str, Any], *, also_known: Iterable[str] = (),
                   what: str = "setting") -> dict[str, Any]:
    """Keyword settings of ``Robot(...)`` (or a run's ``settings=``), checked: an unknown name is an error
    with the closest known one (``also_known`` adds names such as Robot's own parameters to guess from),
    a value out of range too. Returns the settings unchanged."""
    known = list(ModelSettings.model_fields)
    problems = []
    for key in settings:
        if key in ModelSettings.model_fields:
            continue
        guess = closest(str(key), [*known, *also_known])
        tail = f" — did you mean '{guess}'?" if guess else f". The model settings are: {', '.join(known)}"
        problems.append(f"unknown {what} '{key}'{tail}")
    if problems:
        raise SchemaError(problems)
    validate(ModelSettings, dict(settings))
    return dict(settings)


def robot_json_schema() -> dict[str, Any]:
    """The JSON Schema of robot and template front matter (``robotlab schema robot``)."""
    schema = FrontMatter.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": "RobotLab robot file front matter",
        "description": "The YAML front matter of a robot or template file (.md): between the '---' lines.",
    }
