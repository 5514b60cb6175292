"""The eval file: robots, models and cases with what each answer must show (``robotlab eval FILE``).

A YAML file (read through :mod:`workspace.yaml_limits`, checked by the pydantic models below; a problem names
the file, the line, the case and the key, and the fix)::

    robot: support            # or robots: [a, b]; a name or a robot file (relative to the eval file)
    models: [openai/gpt-4o-mini]   # optional: the robot's own model otherwise; or {model, api_base}
    approve: deny             # tools that ask for approval: allow or deny (default deny)
    cases:
      - name: refund
        message: "I was charged twice"
        folder: fixtures/shop          # optional: copied, the robot works on the copy
        expect:
          - contains: "refund"         # also: regex, equals, json_schema
          - tool_called: {name: read_file, args: {path: orders.csv}}
          - change_proposed: {path: notes.md, contains: "refund"}
          - max_seconds: 30            # also: max_cost, verify: passed, rubric: {text: ..., model: ...}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from workspace.errors import ConfigurationError
from workspace.schemas.base import StrictModel

__all__ = ["ASSERTIONS", "Case", "EvalFile", "Expect", "ModelEntry", "eval_json_schema", "load_eval_file"]

#: The assertion kinds of ``expect:``, one key per item.
ASSERTIONS = ("contains", "regex", "equals", "json_schema", "tool_called", "change_proposed", "max_seconds",
              "max_cost", "verify", "rubric")


class ToolCalled(StrictModel):
    """A tool the robot called; ``args`` a subset of the call's arguments (nested mappings too)."""

    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None


class ChangeExpected(StrictModel):
    """A change the robot proposed to ``path`` (relative to the case's folder), its new text containing ``contains``."""

    path: str = Field(min_length=1)
    contains: str | None = None


class Rubric(StrictModel):
    """A model judges the answer against ``text``; it must answer ``{"pass": true|false, "reason": "..."}``."""

    text: str = Field(min_length=1)
    model: str | None = None
    api_base: str | None = None


class Expect(StrictModel):
    """One assertion: exactly one of its keys."""

    contains: str | None = None
    regex: str | None = None
    equals: str | None = None
    json_schema: dict[str, Any] | None = None
    tool_called: ToolCalled | None = None
    change_proposed: ChangeExpected | None = None
    max_seconds: float | None = Field(default=None, gt=0)
    max_cost: float | None = Field(default=None, ge=0)
    verify: Literal["passed", "failed"] | None = None
    rubric: Rubric | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Expect:
        given = [name for name in ASSERTIONS if getattr(self, name) is not None]
        if len(given) != 1:
            what = ", ".join(given) if given else "none"
            raise ValueError(f"each item of expect: has exactly one of {', '.join(ASSERTIONS)} (this one has "
                             f"{what}); write one item per assertion")
        return self

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            import re

            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression ({exc}); quote it in single quotes in YAML "
                                 "so backslashes stay as written") from None
        return value

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(value)
            except SchemaError as exc:
                raise ValueError(f"not a valid JSON Schema ({exc.message}); write one like "
                                 "{type: object, required: [answer]}") from None
        return value

    @property
    def kind(self) -> str:
        return next(name for name in ASSERTIONS if getattr(self, name) is not None)


class ModelEntry(StrictModel):
    """A model of the matrix: its id and, for an OpenAI-compatible server, its address; or, with ``router``, a
    group of deployments litellm's Router spreads the cases over (``model`` is then the group's name)."""

    model: str = Field(min_length=1)
    api_base: str | None = None
    #: The column's name in the table (default: the model id).
    label: str | None = None
    #: litellm's Router: ``model_list`` (its deployments, litellm's shape) and any other Router setting
    #: (``routing_strategy``, ...).
    router: dict[str, Any] | None = None

    @field_validator("router")
    @classmethod
    def _deployments(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        deployments = value.get("model_list")
        if not isinstance(deployments, list) or not deployments:
            raise ValueError("router: needs model_list:, the deployments, e.g. [{litellm_params: {model: "
                             "openai/llama, api_base: 'http://10.0.0.5:8000/v1'}}, ...]")
        for index, entry in enumerate(deployments):
            params = entry.get("litellm_params") if isinstance(entry, dict) else None
            if not isinstance(params, dict) or not isinstance(params.get("model"), str):
                raise ValueError(f"router: model_list[{index}] needs litellm_params: with model: (litellm's "
                                 "model id of that deployment), and api_base: / api_key: as it needs")
        return value

    @property
    def name(self) -> str:
        return self.label or self.model


class Case(StrictModel):
    """One case: a message sent to a robot in a fresh run, and what the run must show."""

    name: str = Field(min_length=1)
    message: str = Field(min_length=1)
    #: Files sent with the message, paths inside the case's folder (its copy).
    attachments: list[str] = Field(default_factory=list)
    #: A folder (relative to the eval file) copied to a temporary folder the robot works on.
    folder: str | None = None
    #: The conversation the case continues: a recorded thread's id (as `robotlab threads list` shows it), or a
    #: thread's JSON export (a file relative to the eval file).
    thread: str | None = None
    #: Tools that ask for approval in this case: allow or deny (default: the file's ``approve``).
    approve: Literal["allow", "deny"] | None = None
    max_turns: int | None = Field(default=None, ge=1)
    expect: list[Expect] = Field(default_factory=list)


class EvalFile(StrictModel):
    """The whole file: the robot(s), the models, the approval answer, the verify command and the cases."""

    robot: str | None = None
    robots: list[str] | None = None
    models: list[str | ModelEntry] | None = None
    #: The server of every model given as a plain id (an OpenAI-compatible address), unless the entry says.
    api_base: str | None = None
    #: What tools that ask for approval are answered: deny (default) or allow. File tools never write:
    #: they propose into the case's change set, which nothing applies.
    approve: Literal["allow", "deny"] = "deny"
    #: The command ``verify: passed`` runs in the sandbox on the proposed changes (default: the robot's
    #: ``verify:`` or the configuration's ``review.verify``).
    verify: str | None = None
    #: Seconds a case may run before it is stopped and failed.
    timeout: float = Field(default=300.0, gt=0)
    cases: list[Case] = Field(min_length=1)

    @model_validator(mode="after")
    def _robots_and_names(self) -> EvalFile:
        if (self.robot is None) == (self.robots is None):
            raise ValueError("name the robot with robot: NAME, or several with robots: [A, B] (one of the two)")
        if self.robots is not None and not self.robots:
            raise ValueError("robots: is empty; name at least one robot")
        seen: set[str] = set()
        for case in self.cases:
            if case.name in seen:
                raise ValueError(f"two cases are named {case.name!r}; give each case a name of its own")
            seen.add(case.name)
        return self

    def robot_names(self) -> list[str]:
        return list(self.robots) if self.robots is not None else [str(self.robot)]

    def model_entries(self) -> list[ModelEntry] | None:
        """The models of the matrix (None: each robot's own)."""
        if self.models is None:
            return None
        return [entry if isinstance(entry, ModelEntry) else ModelEntry(model=entry, api_base=self.api_base)
                for entry in self.models]


def load_eval_file(path: str | Path) -> EvalFile:
    """The eval file at ``path``, checked: a :class:`~workspace.errors.ConfigurationError` names the file, the
    line and the key (and the closest valid key for a misspelt one)."""
    from workspace.schemas import SchemaError, read_yaml_file, validate

    file = Path(path)
    if not file.is_file():
        raise ConfigurationError(f"eval file not found: {path} (no such file: {file.absolute()}); give the path "
                                 "of a YAML file with robot: and cases:")
    data, lines = read_yaml_file(file, what="eval")
    if not data:
        raise ConfigurationError(f"{path}: the eval file is empty; it needs robot: (or robots:) and cases:")
    try:
        spec = validate(EvalFile, data, source=file, lines=lines)
    except SchemaError as exc:
        raise SchemaError([_name_cases(problem, data) for problem in exc.problems], source=str(file)) from None
    for index, case in enumerate(spec.cases):
        if case.folder is not None and not (file.parent / case.folder).is_dir():
            where = lines.where(("cases", index, "folder"))
            raise ConfigurationError(f"{where}: case {case.name!r}: folder: {case.folder} is not a folder (paths "
                                     f"are relative to the eval file, {file.parent.absolute()})")
    return spec


def _name_cases(problem: str, data: Any) -> str:
    """``cases[2]`` in a problem as ``case 'refund' (cases[2])``: people know their cases by name."""
    import re

    cases = data.get("cases") if isinstance(data, dict) else None

    def named(match: re.Match[str]) -> str:
        index = int(match.group(1))
        case = cases[index] if isinstance(cases, list) and index < len(cases) else None
        name = case.get("name") if isinstance(case, dict) else None
        return f"case {name!r} ({match.group(0)})" if isinstance(name, str) else match.group(0)

    return re.sub(r"cases\[(\d+)\]", named, problem, count=1)


def eval_json_schema() -> dict[str, Any]:
    """The JSON Schema of eval files (``robotlab schema eval``)."""
    schema = EvalFile.model_json_schema()
    schema["title"] = "RobotLab eval file"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
