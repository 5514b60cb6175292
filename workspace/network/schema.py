"""The schema of a network YAML file (pydantic v2), validated by :func:`workspace.schemas.validate`.

This module imports pydantic; :mod:`workspace.network` imports it only when a file is loaded.
The models check the shape of the file: which keys exist (an unknown key is an error with a
did-you-mean), their types and ranges (``temperature: 7`` is an error). What the names refer to
(robots, tasks, groups), cycles and the folder's trust rules are checked by
:mod:`workspace.network.loader`. :func:`network_json_schema` exports the JSON Schema for editors.

Fields whose value may take several forms (a name or a list of names, a robot's name or its
mapping) are validated by one function per field (:func:`_form`), so a wrong value gives one
message that says what is expected instead of one per alternative.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError, ValidatorFunctionWrapHandler, WrapValidator

from workspace.schemas.base import StrictModel
from workspace.schemas.robot import RunConfigBlock

__all__ = ["BusSpec", "NetworkFile", "RobotSpec", "RouteSpec", "TaskSpec", "network_json_schema", "salvage"]

_LEVEL_WORDS = ("inherit", "none", "all")
_CONCURRENCY_WORDS = ("auto", "threads", "async")


def _form(check: Callable[[Any], Any]) -> WrapValidator:
    """A validator that replaces pydantic's union: ``check`` returns the value or raises ValueError."""

    def validate(value: Any, _handler: ValidatorFunctionWrapHandler) -> Any:
        return check(value)

    return WrapValidator(validate)


def _level(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value in _LEVEL_WORDS):
        return value
    if isinstance(value, list) and all(isinstance(v, str | dict) for v in value):
        return value
    raise ValueError("must be inherit, none, all or a list of names")


def _names(value: Any) -> Any:
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return value
    raise ValueError("must be a task name or a list of task names")


def _keys(value: Any) -> Any:
    if isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
        return value
    raise ValueError("must be a memory key or a list of keys")


def _texts(value: Any) -> Any:
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return value
    raise ValueError("must be a text or a list of texts")


def _match(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise ValueError("match maps an answer word (or re:regex) to a task name")
    for key in value:
        if not isinstance(key, str):
            raise ValueError(f"the pattern {key!r} is not text: put it in quotes (YAML reads yes, no, on, off "
                             "and numbers as other values)")
    return _MATCH.validate_python(value)


def _depends_on(value: Any) -> Any:
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return value
    raise ValueError("must be 'none', 'optional' or a list of task names")


def _input(value: Any) -> Any:
    if isinstance(value, str) and value.strip():
        return value
    raise ValueError("must be 'run', 'upstream' or a template text")


def _concurrency(value: Any) -> Any:
    if isinstance(value, str) and value in _CONCURRENCY_WORDS:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return _POSITIVE.validate_python(value)  # "0 is out of range: it must be at least 1"
    raise ValueError("must be 'auto' or a positive number")


def _robot(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return RobotSpec.model_validate(value)
    raise ValueError("a robot is the name of a robot (under 'robots', or a robot file) or a mapping "
                     "(system_prompt, template, file or robot, and options)")


def _mapping(model: type[StrictModel], what: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, Mapping):
            return model.model_validate(value)
        raise ValueError(what)

    return check


def _task(value: Any) -> Any:
    if value is None:  # "a:" with nothing after it: a task with the defaults
        return TaskSpec()
    if isinstance(value, Mapping):
        return TaskSpec.model_validate(value)
    raise ValueError("a task is a mapping (robot, depends_on, context, ...)")


def _tasks(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _TASK_MAP.validate_python(value)
    if isinstance(value, list):
        return _TASK_LIST.validate_python(value)
    raise ValueError("a network needs 'tasks': a mapping of task name -> task")


def _group(value: Any) -> Any:
    if isinstance(value, Mapping) and set(value) == {"tasks"}:
        value = value["tasks"]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ValueError("a group is a list of task names")


_POSITIVE = TypeAdapter(Annotated[int, Field(ge=1)])

Level = Annotated[Literal["inherit", "none", "all"] | list[str | dict[str, Any]] | None, _form(_level),
                  Field(description="inherit | none | all | a list of names (tools or MCP servers)")]
Names = Annotated[str | list[str], _form(_names)]
Number = Annotated[float, Field(strict=True)]
Whole = Annotated[int, Field(strict=True, ge=1)]


class RobotSpec(StrictModel):
    """A robot: its instructions (system_prompt, template, file or robot) and options."""

    name: str | None = Field(None, description="the robot's name (default: its key)")
    description: str | None = None
    system_prompt: str | None = Field(None, description="the instructions; rendered with Jinja2 when they use {{ }}")
    template: str | None = Field(None, description="a template by name")
    robot: str | None = Field(None, description="a robot file (or template) by name")
    file: str | None = Field(None, description="a robot .md file, relative to the network file")
    model: str | None = Field(None, description="a model id like openai/gpt-4o-mini")
    api_base: str | None = None
    tools: Level = None
    mcp: Level = None
    context: dict[str, Any] | None = Field(None, description="template variables")
    max_turns: Whole | None = None
    temperature: Annotated[Number, Field(ge=0, le=2)] | None = None
    top_p: Annotated[Number, Field(ge=0, le=1)] | None = None
    top_k: Whole | None = None
    max_tokens: Whole | None = None
    presence_penalty: Annotated[Number, Field(ge=-2, le=2)] | None = None
    frequency_penalty: Annotated[Number, Field(ge=-2, le=2)] | None = None
    stop: Annotated[str | list[str], _form(_texts)] | None = None
    tool_choice: str | None = Field(None, description="auto | required | none | a tool's name")
    output_schema: dict[str, Any] | None = Field(
        None, description="a JSON Schema the answer must match (structured output); a route's field reads it")
    robots: list[str] | None = Field(None, description="other robots (robot files) this robot may call as tools")
    person: bool | None = Field(None, strict=True, description="a person, not a model, answers this robot's tasks "
                                "(RobotLab's cyborg): the network waits for them")
    timeout: Annotated[Number, Field(gt=0)] | None = Field(None, description="a person's time to answer, in seconds")
    default: str | None = Field(None, description="a person's answer when the time runs out (else the task fails)")
    choices: list[str] | None = Field(None, description="answers a person is offered")


RobotEntry = Annotated[str | RobotSpec, _form(_robot)]


class RouteSpec(StrictModel):
    """Which optional task(s) a task's answer activates."""

    match: Annotated[dict[str, Names], _form(_match)] | None = Field(
        None, description='answer pattern (a word or phrase, or "re:<regex>") -> task name(s); the first match wins')
    default: Names | None = Field(None, description="the task(s) when nothing matches")
    field: str | None = Field(None, description="match this field of an answer that is a JSON object")


class RouteEntry(RouteSpec):
    """A route listed under ``routes``: ``from`` names the task whose answer decides."""

    from_: str = Field(alias="from", description="the task whose answer decides")


class TaskSpec(StrictModel):
    """One step of the network: a robot, what it waits for and what it receives."""

    robot: RobotEntry | None = Field(None, description="a robot under 'robots', a robot file, or an inline robot "
                                                       "(default: the robot named like the task)")
    description: str | None = None
    depends_on: Annotated[str | list[str], _form(_depends_on)] | None = Field(
        None, description="none (default) | optional | a list of tasks or groups")
    context: dict[str, Any] | None = Field(None, description="template variables for this task")
    tools: Level = None
    mcp: Level = None
    memory: dict[str, Any] | None = Field(None, description="values merged into the shared memory when it starts")
    route: Annotated[RouteSpec, _form(_mapping(RouteSpec, "a route is a mapping: match (answer -> task), "
                                                                  "default, field"))] | None = None
    input: Annotated[str, _form(_input)] | None = Field(
        None, description="auto (default) | run | upstream | a Jinja2 template")
    wait_for: Annotated[str | list[str], _form(_keys)] | None = Field(None, description="memory keys to wait for")
    timeout: Annotated[Number, Field(gt=0)] | None = Field(None, description="seconds to wait for wait_for")
    on_error: Literal["fail", "continue"] | None = Field(
        None, description="fail (default): a failed robot fails the network; continue: its answer becomes "
        "\"Error: <type>: <message>\" and the tasks after it run (RobotLab's error-tolerant steps)")
    config: RunConfigBlock | None = Field(
        None, description="RobotLab's RunConfig for this task's robot, over the network's config (its own settings win)")


class NetworkConfigBlock(RunConfigBlock):
    """A network file's ``config:``: a robot's RunConfig fields, and the cap on robots running at once."""

    max_concurrent_robots: Annotated[int, Field(ge=1, strict=True)] | None = Field(
        None, description="the most robots running at once")


class NamedTaskSpec(TaskSpec):
    """A task in a list of tasks: the same keys, and its name."""

    name: str


class BusSpec(StrictModel):
    """The network's message bus: its robots talk (each gets the ``send_message`` tool)."""

    serve: Names | None = Field(None, description="robots (under 'robots', or a task's robot) that answer each "
                                "message sent to them with a run of their own")
    reply_timeout: Annotated[Number, Field(gt=0)] | None = Field(
        None, description="seconds send_message waits for the reply (default 120)")


def _bus(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        return BusSpec.model_validate(value)
    raise ValueError("bus is true (the robots talk on one message bus) or a mapping: serve (robots that answer "
                     "messages), reply_timeout (seconds)")


class BudgetSpec(StrictModel):
    """One budget for every task of the network (RobotLab's ``Budget::Ledger`` shared by its tasks)."""

    tokens: Annotated[int, Field(ge=1, strict=True)] | None = Field(
        None, description="the most tokens (input + output) all the tasks' model calls may use together")
    cost: Annotated[Number, Field(ge=0)] | None = Field(
        None, description="the most US dollars all the tasks' model calls may cost together")


class NetworkFile(StrictModel):
    """A network of robots (a RobotLab network YAML file)."""

    name: str | None = Field(None, description="default: the file name")
    description: str | None = None
    concurrency: Annotated[Literal["auto", "threads", "async"] | Annotated[int, Field(ge=1)],
                           _form(_concurrency)] = Field("auto", description="auto or the most tasks running at once")
    max_concurrent_robots: Annotated[int, Field(ge=1, strict=True)] | None = Field(
        None, description="RobotLab's cap on the robots running at once (with concurrency, the tighter holds)")
    tools: Level = None
    mcp: Level = None
    context: dict[str, Any] | None = Field(None, description="template variables for every robot")
    memory: dict[str, Any] | None = Field(None, description="initial shared-memory values")
    robots: dict[str, RobotEntry] | None = None
    tasks: Annotated[dict[str, TaskSpec | None] | list[NamedTaskSpec], _form(_tasks)] | None = Field(
        None, description="task name -> task (or a list of tasks with a name each)")
    groups: dict[str, Annotated[list[str], _form(_group)]] | None = Field(
        None, description="group name -> task names; a group name can be a dependency")
    routes: list[Annotated[RouteEntry, _form(_mapping(RouteEntry, "a route is a mapping: from, match, "
                                                                          "default, field"))]] | None = None
    bus: Annotated[bool | BusSpec, _form(_bus)] | None = Field(
        None, description="true, or serve / reply_timeout: the robots talk on one message bus (send_message)")
    budget: BudgetSpec | None = Field(
        None, description="tokens / cost: one budget the tasks share; each model call reserves what remains")
    config: NetworkConfigBlock | None = Field(
        None, description="RobotLab's RunConfig for every task's robot: model settings, tools, mcp, guards, budgets")


_MATCH = TypeAdapter(dict[str, Names])
_TASK_MAP = TypeAdapter(dict[str, Annotated[TaskSpec | None, _form(_task)]])
_TASK_LIST = TypeAdapter(list[NamedTaskSpec])


def salvage(data: Mapping[str, Any]) -> NetworkFile | None:
    """``data`` without the parts that have problems, validated quietly (None when that fails).

    A file with a bad value is reported with everything else that is wrong in it: the loader still
    checks the names, references and cycles of what is left. A problem removes the whole key of a
    task (its route, its robot...), the whole entry of ``robots``, ``groups`` or ``routes``, or the
    top-level key it is in, so what is left does not raise problems of its own."""
    current: Any = copy.deepcopy(dict(data))
    for _ in range(4):
        try:
            return NetworkFile.model_validate(current)
        except ValidationError as exc:
            locs = [tuple(e["loc"]) for e in exc.errors()]
        if not _prune(current, locs):
            return None
    return None


#: How deep a problem cuts, by top-level key: ``tasks.<name>.<key>``, ``routes[<i>]``...; else the key.
_CUT = {"tasks": 3, "robots": 2, "groups": 2, "routes": 2}
_DROP = object()


def _prune(data: Any, locs: list[tuple[Any, ...]]) -> bool:
    """Remove the part of ``data`` each location is in (see :data:`_CUT`); False when none was removed."""
    changed = False
    for loc in locs:
        limit = _CUT.get(str(loc[0]), 1) if loc else 0
        parent: Any = None
        key: Any = None
        node = data
        for part in loc[:limit]:
            inside = part in node if isinstance(node, dict) else (
                isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
            if not inside:
                break
            parent, key, node = node, part, node[part]
        if parent is None:
            continue
        if isinstance(parent, dict):
            parent.pop(key, None)
        else:
            parent[key] = _DROP
        changed = True
    _drop_marked(data)
    return changed


def _drop_marked(node: Any) -> None:
    if isinstance(node, dict):
        for value in node.values():
            _drop_marked(value)
    elif isinstance(node, list):
        node[:] = [v for v in node if v is not _DROP]
        for value in node:
            _drop_marked(value)


def network_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a network YAML file, for editors' completion and checks."""
    schema = NetworkFile.model_json_schema(by_alias=True)
    schema["required"] = ["tasks"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "RobotLab network",
        **{k: v for k, v in schema.items() if k != "title"},
    }
