"""The schema of the configuration (``config.yaml``, ``.robotlab/config.yaml``, ``ROBOT_LAB_*`` variables).

:func:`check_layer` checks one layer before it is merged, so a problem names where it was
written: ``file:line`` for the user's and the project's file, the variable for
``ROBOT_LAB_<SECTION>__<KEY>``, "argument" for explicit arguments. Unknown keys list the allowed
ones and the closest (for a variable: the variable name that would work). Imported on use: it
imports pydantic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StrictBool, ValidationError

from workspace.errors import ConfigurationError
from workspace.schemas import Lines, _known_fields, closest
from workspace.schemas.base import StrictModel, one_error

__all__ = ["ConfigFile", "check_layer", "config_json_schema", "problems_of"]

Loc = tuple[str | int, ...]
LEVEL_HINT = "must be all, none, inherit or a list of names"
# The same order as workspace.schemas.robot's levels: typing caches Literals that are equal in any order,
# so another order would make the JSON Schema depend on which module was imported first.
Level = Annotated[Literal["inherit", "none", "all"] | list[str], one_error(LEVEL_HINT)]
VISION_HINT = "must be true or false (for every model), or model ids mapped to true or false"
Vision = Annotated[StrictBool | dict[str, StrictBool], one_error(VISION_HINT)]
BYTES_HINT = "must be a whole number of bytes, at least 1024 (102400 is 100 KB, 20971520 is 20 MB)"
Bytes = Annotated[int, Field(ge=1024, strict=True), one_error(BYTES_HINT)]


class LLM(StrictModel):
    """The model and how it is called."""

    model: str | None = Field(None, description="Model id (openai/gpt-4o-mini, ollama_chat/llama3.1, ...); "
                              "empty: the offline demo")
    api_base: str | None = Field(None, description="Base URL of an OpenAI-compatible or local server")
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature, 0 to 2")
    top_p: float | None = Field(None, ge=0, le=1, description="Nucleus sampling, 0 to 1")
    max_tokens: int | None = Field(None, gt=0, description="The most tokens of one answer")
    timeout: float = Field(120.0, gt=0, description="Seconds to connect and send a request; the default of the "
                           "two waits below")
    first_token_timeout: float = Field(180.0, gt=0, description="Seconds to wait for the first token of an answer "
                                       "(a local server may be loading the model)")
    idle_timeout: float = Field(60.0, gt=0, description="The longest gap between two pieces of a streamed answer")
    max_wait: float = Field(300.0, gt=0, description="The most seconds one model call waits for its first token, "
                            "every retry and pause included; a Retry-After beyond it fails at once")
    max_retries: int = Field(3, ge=0, le=20, description="Retries of a call that failed for a passing reason")
    max_concurrent_requests: int | None = Field(
        None, ge=0, description="Requests at a time to one server (0: no limit); empty: 1 for a server on this "
        "machine (some stop a stream when another request arrives), no limit for hosted providers")
    provider: Literal["auto", "litellm", "openai"] = Field(
        "auto", description="auto: OpenAI-compatible servers (a model with api_base) through the openai SDK, "
        "everything else through litellm; litellm or openai to choose")
    litellm_process: Literal["auto", "same", "separate"] = Field(
        "auto", description="Where litellm runs: separate (a process of its own: loading it never freezes the "
        "window), same (this process), auto (separate in the window, same on the command line)")
    tool_choice: str | None = Field(None, description="auto | required | none | a tool's name: sent with the tools "
                                    "(llama-cpp-python's server calls tools only when it is sent)")
    max_answer_chars: int = Field(4_000_000, ge=1_000, description="The most characters one answer streams (its "
                                  "text, thinking and tool calls) before it is stopped: a server that never ends "
                                  "its stream would fill the memory")
    max_tool_result_chars: int = Field(50_000, ge=1_000, description="The most characters of one tool result "
                                       "sent to the model (the rest is cut, with a note); less when a quarter of "
                                       "the context window is less")
    context_window: Annotated[int, Field(ge=256)] | dict[str, Annotated[int, Field(ge=256)]] | None = Field(
        None, description="The model's context window in tokens, when the server or litellm does not say it: a "
        "number (for llm.model), or model ids mapped to numbers")
    context_policy: Literal["compact", "truncate", "error"] = Field(
        "compact", description="When a conversation outgrows the window: compact (older messages summarised), "
        "truncate (the oldest turns left out) or error (the run fails before sending)")
    compaction_threshold: float = Field(0.8, ge=0.1, le=0.95, description="The share of the context window at "
                                        "which older messages are compacted")
    local_max_tokens_share: float = Field(
        0.25, ge=0, le=0.9, description="A local model's answer (a server on this machine) is held to this share of "
        "its context window when max_tokens is not set, so a looping small model cannot write until the window is "
        "full; 0: no limit")
    compaction_model: str | None = Field(None, description="The model that writes the summaries of compacted "
                                         "messages (a cheaper one); empty: the robot's own model")
    vision: Vision | None = Field(
        None, description="Whether the model takes images: true or false for every model, or model ids mapped to "
        "true or false; empty: litellm's model map says (a local server's model: not known, images are sent with a "
        "note)")
    embedding_model: str | None = Field(None, description="The embeddings model of document stores (a litellm id, "
                                        "e.g. openai/text-embedding-3-small); empty: they match words, offline")
    embedding_api_base: str | None = Field(None, description="The server of embedding_model (an OpenAI-compatible "
                                           "URL); empty: its provider's own. Named by the opened folder's config, "
                                           "it gets none of your keys")


class Attachments(StrictModel):
    """The largest files sent with a message (the window, robotlab run --attach, chat's /attach)."""

    max_text_bytes: Bytes = Field(100 * 1024, description="Text files (and a PDF's text) are sent whole up to "
                                  "this many bytes; a larger one is refused, naming the limit")
    max_image_bytes: Bytes = Field(20 * 1024 * 1024, description="Images (PNG, JPEG, GIF, WebP) are sent up to this "
                                   "many bytes (hosted models take about 20 MB)")


class Agent(StrictModel):
    """The agent loop, and the global level of the tool and MCP hierarchies."""

    hints: ClassVar[dict[str, str]] = {"tools": LEVEL_HINT, "mcp": LEVEL_HINT}

    max_turns: int = Field(20, ge=1, le=1000, description="The most model turns of one run")
    tool_timeout: float = Field(300.0, gt=0, description="Seconds one tool call may take")
    tools: Level = Field("all", description="Tools robots may use: all | none | a list of names")
    mcp: Level = Field("all", description="MCP servers robots may use: all | none | a list of names")
    text_tool_calls: Literal["run", "notice", "off"] = Field(
        "run", description="A tool call the model wrote as text in a chat template's form (<tool_call>{...}"
        "</tool_call>, <|python_tag|>, [TOOL_CALLS], a whole answer that is a JSON call; never a code example): run "
        "it, only say so in the chat, or ignore it")
    mcp_startup_wait: float = Field(5.0, ge=0, le=600, description="Seconds a run waits for MCP servers still "
                                    "starting; it then goes on without them and their tools join when they are up")
    output_retries: int = Field(2, ge=0, le=20, description="Times a structured answer that does not match the "
                                "robot's output schema goes back to the model before the run fails")


class Review(StrictModel):
    mode: Literal["review", "auto", "readonly"] = Field(
        "review", description="review: every file change waits for you; auto: applied at once; readonly: none")
    memory: Literal["auto", "ask"] = Field(
        "auto", description="auto: what a robot learns (learn, record_knowledge) and what a run writes to a memory "
        "that outlives it are kept at once; ask: they are proposed, and kept only when you accept them")
    verify: str | None = Field(None, description="A command (run by /bin/sh -c in the sandbox, e.g. \"pytest -q\") "
                               "that checks proposed changes: run on the proposed set and on the accepted hunks "
                               "before Apply. A folder's own is used once the folder is trusted")


class UI(StrictModel):
    theme: Literal["light", "dark"] = "light"
    notifications: bool = Field(True, strict=True, description="A desktop notification when a long run ends or "
                                "asks for approval while the window is in the background")


class Tracing(StrictModel):
    otel: bool = Field(False, description="Export runs as OpenTelemetry spans over OTLP (needs the otel extra; "
                       "the OTEL_EXPORTER_OTLP_* variables say where)")
    endpoint: str | None = Field(None, description="Where the Trace dock's Export trace sends a trace's spans over "
                                 "OTLP/HTTP (http://host:4318; /v1/traces is added) when OTEL_EXPORTER_OTLP_ENDPOINT "
                                 "is not set; unset: a trace is only saved as a file")


class SandboxCeiling(StrictModel):
    """The most a skill's script may be given: its SKILL.md capabilities are cut to these."""

    fs_read: list[str] = Field(["."], description="Folder-relative paths a skill's script may be let read "
                               "(\".\": the whole opened folder)")
    fs_write: list[str] = Field(["."], description="Folder-relative paths a skill's script may be let write "
                                "(its writes are proposed for review as any command's are)")
    network: bool = Field(False, strict=True, description="Whether a skill's script that asks for the network "
                          "(network: true) gets it; off: every script has loopback inside the sandbox only")
    timeout: float = Field(120.0, gt=0, le=600, description="The most seconds a skill's script may run (its own "
                           "timeout is cut to this)")


class Demo(StrictModel):
    delay: float = Field(0.015, ge=0, le=5, description="Seconds between the offline demo's words")


class ConfigFile(StrictModel):
    """A configuration file (every layer has this shape; each key is optional)."""

    llm: LLM = Field(default_factory=LLM)
    agent: Agent = Field(default_factory=Agent)
    attachments: Attachments = Field(default_factory=Attachments)
    review: Review = Field(default_factory=Review)
    ui: UI = Field(default_factory=UI)
    demo: Demo = Field(default_factory=Demo)
    sandbox: SandboxCeiling = Field(default_factory=SandboxCeiling)
    tracing: Tracing = Field(default_factory=Tracing)
    # Names are checked per server by the MCP manager (a YAML `off:` is a boolean: it says to quote it),
    # so one bad server never hides the others.
    mcpServers: dict[Any, dict[str, Any]] = Field(
        default_factory=dict, description="MCP servers, in the format of Claude Desktop and Cursor")
    mcp_servers: dict[Any, dict[str, Any]] | None = Field(None, description="The same as mcpServers")
    approval: dict[str, Any] | None = Field(None, description="The tool approval policy (rules)")


def _origin_in_env(names: Mapping[str, str]) -> Callable[[Loc], str]:
    def origin(loc: Loc) -> str:
        dotted = ".".join(str(p) for p in loc)
        if dotted in names:
            return names[dotted]
        for key, var in names.items():
            if key.startswith(dotted + "."):
                return var
        return "environment"

    return origin


def problems_of(exc: ValidationError, *, origin: Callable[[Loc], str], env_prefix: str | None = None) -> list[str]:
    """Messages for the errors of validating a layer with :class:`ConfigFile`: ``origin(loc)`` says where
    the value was written; with ``env_prefix`` the layer came from variables and a guess is a variable."""
    problems: list[str] = []
    for err in exc.errors(include_url=False):
        loc: Loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        dotted = ".".join(str(p) for p in loc)
        where = origin(loc)
        value = err.get("input")
        if err["type"] == "extra_forbidden":
            allowed = _known_fields(ConfigFile, loc[:-1])
            guess = closest(str(loc[-1]), allowed)
            hint = ""
            if guess and env_prefix and where.startswith(env_prefix):
                parts = where[len(env_prefix):].split("__")
                if len(parts) >= len(loc) and parts[len(loc) - 1] != guess.upper():
                    parts[len(loc) - 1] = guess.upper()
                    hint = f" — did you mean {env_prefix}{'__'.join(parts)}?"
            elif guess:
                hint = f" — did you mean '{guess}'?"
            listed = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
            problems.append(f"{where}: unknown key '{dotted}'{listed}{hint}")
            continue
        msg = str(err.get("msg", "invalid value"))
        ctx = err.get("ctx") or {}
        words = {"less_than_equal": "at most", "less_than": "less than", "greater_than_equal": "at least",
                 "greater_than": "more than"}.get(err["type"])
        if words:
            bound = next(iter(ctx.values()), None)
            if isinstance(bound, float) and bound.is_integer():
                bound = int(bound)
            msg = f"out of range: it must be {words} {bound}"
        elif err["type"] == "invalid_value" and loc and str(loc[-1]) in Agent.hints:
            msg = Agent.hints[str(loc[-1])]
        problems.append(f"{where}: '{dotted}' = {value!r}: {msg}")
    return list(dict.fromkeys(problems))


def check_layer(data: Mapping[str, Any], *, lines: Lines | None = None, source: str = "argument",
                env_names: Mapping[str, str] | None = None, env_prefix: str = "ROBOT_LAB_") -> None:
    """Validate one layer; raise :class:`ConfigurationError` ("Invalid configuration: ...") naming, for
    each problem, the file and line (``lines``), the variable (``env_names``: dotted key -> variable),
    or ``source``."""
    try:
        ConfigFile.model_validate(dict(data))
    except ValidationError as exc:
        if env_names is not None:
            problems = problems_of(exc, origin=_origin_in_env(env_names), env_prefix=env_prefix)
        else:
            file_lines = lines

            def origin(loc: Loc) -> str:
                return (file_lines.where(loc) if file_lines is not None else "") or source

            problems = problems_of(exc, origin=origin)
        raise ConfigurationError("Invalid configuration:\n  " + "\n  ".join(problems)) from None


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of a configuration file (``robotlab schema config``), its servers included."""
    from workspace.schemas.mcp import server_json_schema

    schema = ConfigFile.model_json_schema()
    server, defs = server_json_schema()
    schema.setdefault("$defs", {}).update(defs)
    for key in ("mcpServers", "mcp_servers"):
        prop = schema["properties"][key]
        target = prop if "anyOf" not in prop else next(p for p in prop["anyOf"] if p.get("type") == "object")
        target["additionalProperties"] = server
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": "RobotLab Workspace configuration",
        "description": "config.yaml (robotlab paths shows where) and .robotlab/config.yaml of a folder.",
    }
