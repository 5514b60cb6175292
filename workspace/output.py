"""Structured output: a robot whose answer is a validated object, not text.

``Robot(output_type=...)`` takes a pydantic model, a dataclass (or any type pydantic can validate,
such as ``list[str]``) or a JSON Schema dict; robot files say ``output_schema:`` with a JSON Schema.
The run's :class:`~workspace.result.RobotResult` then carries the validated object in
``output_data`` (a model or dataclass instance; the plain JSON value for a JSON Schema).

Two ways to ask the model for it, chosen per run (``output_mode``):

``native``
    The provider's own structured output: litellm/OpenAI ``response_format`` with
    ``{"type": "json_schema", ...}``; the answer's text is the JSON. ``auto`` picks it when the
    provider says it supports it (its ``supports_response_schema`` flag, which the litellm
    provider answers with ``litellm.supports_response_schema``).
``tool``
    A forced final tool call: a ``final_result`` tool whose parameters are the schema, and
    ``tool_choice`` forcing a call (that tool when it is the only one; any tool when the robot has
    others to use first). The call's arguments are the object. ``auto`` picks it otherwise.

An answer that does not validate goes back to the model with the error (as the final_result
call's error, or a user message asking again) up to ``output_retries`` times (setting
``agent.output_retries``, default 2); then the run fails with an :class:`OutputValidationError`
naming the schema and the last error.

Schemas whose root is not an object (``list[str]``, ``{"type": "array"}``) are wrapped in
``{"result": ...}`` for the model and unwrapped for you: both ways need an object at the root.
pydantic and jsonschema are imported only when a schema is built or checked.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from workspace.errors import Error
from workspace.result import to_jsonable
from workspace.tools.base import Tool, ToolOutput

if TYPE_CHECKING:
    from workspace.providers.base import Provider

__all__ = [
    "FINAL_RESULT_TOOL",
    "OUTPUT_MODES",
    "OutputMode",
    "OutputSchema",
    "OutputValidationError",
    "StructuredOutput",
    "to_jsonable",
]

OutputMode: TypeAlias = Literal["auto", "native", "tool"]
OUTPUT_MODES: tuple[str, ...] = ("auto", "native", "tool")
#: The name of the tool the model calls with its answer in the ``tool`` mode.
FINAL_RESULT_TOOL = "final_result"
#: What the model hears after a valid final_result call.
FINAL_RESULT_ACCEPTED = "Final result processed."
DEFAULT_RETRIES = 2
_WRAP_KEY = "result"


class OutputValidationError(Error):
    """The model's answer did not match the output schema (after the retries), or a schema is unusable."""


def _schema_name(text: str) -> str:
    """A name the APIs accept (``^[a-zA-Z0-9_-]{1,64}$``)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")
    return (name or "output")[:64]


@dataclass(slots=True)
class OutputSchema:
    """The shape a robot's answer must have, built by :meth:`of` from what ``output_type`` was given."""

    #: The schema's name, for the model and for messages ("Invoice").
    name: str
    #: The JSON Schema the model sees (an object at the root; see ``wrapped``).
    schema: dict[str, Any]
    #: The type validated into (a pydantic model, a dataclass, ...); None for a JSON Schema dict.
    target: Any = None
    #: The schema's root is not an object: the model answers ``{"result": value}``.
    wrapped: bool = False
    description: str | None = None
    _adapter: Any = field(default=None, repr=False)
    _validator: Any = field(default=None, repr=False)

    @classmethod
    def of(cls, output_type: Any) -> OutputSchema:
        """From a pydantic model, a dataclass, a type pydantic validates, or a JSON Schema dict."""
        if isinstance(output_type, OutputSchema):
            return output_type
        if isinstance(output_type, Mapping):
            return cls._from_json_schema(dict(output_type))
        if output_type is None or isinstance(output_type, str | bytes):
            raise OutputValidationError(
                f"output_type must be a pydantic model, a dataclass or a JSON Schema dict, not {output_type!r}")
        from pydantic import TypeAdapter

        try:
            adapter: Any = TypeAdapter(output_type)
            schema = adapter.json_schema()
        except Exception as exc:
            raise OutputValidationError(f"output_type {output_type!r} has no JSON Schema: {exc}") from exc
        title = getattr(output_type, "__name__", None) or str(schema.get("title") or "output")
        doc = (getattr(output_type, "__doc__", None) or "").strip()
        if dataclasses.is_dataclass(output_type) and doc.startswith(f"{title}("):
            doc = ""  # the dataclass's generated signature says nothing
        out = cls(name=_schema_name(title), schema=schema, target=output_type, description=doc or None)
        out._adapter = adapter
        return out._wrap_if_needed()

    @classmethod
    def _from_json_schema(cls, schema: dict[str, Any]) -> OutputSchema:
        if not schema:
            raise OutputValidationError("the output schema is empty: give a JSON Schema like "
                                        '{"type": "object", "properties": {...}, "required": [...]}')
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise OutputValidationError(f"the output schema is not a valid JSON Schema: {exc.message}") from exc
        title = str(schema.get("title") or "output")
        out = cls(name=_schema_name(title), schema=schema, description=schema.get("description"))
        out._validator = Draft202012Validator(schema)
        return out._wrap_if_needed()

    def _wrap_if_needed(self) -> OutputSchema:
        if self.schema.get("type") == "object" or ("properties" in self.schema and "type" not in self.schema):
            return self
        inner = {k: v for k, v in self.schema.items() if k not in ("$defs", "definitions")}
        wrapped: dict[str, Any] = {"type": "object", "properties": {_WRAP_KEY: inner}, "required": [_WRAP_KEY],
                                   "additionalProperties": False}
        for key in ("$defs", "definitions"):
            if key in self.schema:
                wrapped[key] = self.schema[key]
        self.schema = wrapped
        self.wrapped = True
        return self

    # -- validating -----------------------------------------------------------------------------
    def validate(self, data: Any) -> Any:
        """The object for JSON ``data``; :class:`OutputValidationError` says what is wrong."""
        if self.wrapped:
            if not isinstance(data, Mapping) or _WRAP_KEY not in data:
                raise OutputValidationError(f'expected an object {{"{_WRAP_KEY}": ...}}, got {_short(data)}')
            data = data[_WRAP_KEY]
        if self._adapter is not None:
            from pydantic import ValidationError

            try:
                return self._adapter.validate_python(data)
            except ValidationError as exc:
                raise OutputValidationError(_pydantic_errors(exc)) from exc
        errors = sorted(self._validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            raise OutputValidationError("; ".join(_jsonschema_error(e) for e in errors[:5]))
        return data

    def validate_text(self, text: str) -> Any:
        """The object for an answer's text: JSON (also fenced, or inside prose), then :meth:`validate`."""
        data = parse_json(text)
        if data is _NOT_JSON:
            raise OutputValidationError(f"the answer is not JSON: {_short(text.strip()) or '(empty)'}")
        return self.validate(data)

    def dump(self, value: Any) -> Any:
        """``value`` (an object :meth:`validate` returned) as JSON data."""
        return to_jsonable(value)

    # -- what the model is told -------------------------------------------------------------------
    def response_format(self) -> dict[str, Any]:
        """The ``response_format`` of the native way (OpenAI's json_schema; litellm translates it)."""
        spec: dict[str, Any] = {"name": self.name, "schema": self.schema}
        if self.description:
            spec["description"] = self.description[:500]
        return {"type": "json_schema", "json_schema": spec}

    def final_result_tool(self, on_result: Any) -> Tool:
        """The ``final_result`` tool of the tool way; ``on_result(value)`` gets each valid object."""

        async def final_result(arguments: dict[str, Any]) -> ToolOutput:
            try:
                value = self.validate(arguments)
            except OutputValidationError as exc:
                return ToolOutput(f"The final result does not match the schema '{self.name}': {exc}. "
                                  "Call final_result again with corrected arguments.", is_error=True)
            on_result(value)
            return ToolOutput(FINAL_RESULT_ACCEPTED)

        about = f" ({self.description})" if self.description else ""
        return Tool(FINAL_RESULT_TOOL,
                    f"Give your final answer: call this with the answer as its arguments, matching the schema "
                    f"'{self.name}'{about}.", self.schema, final_result,
                    annotations={"readOnlyHint": True})


_NOT_JSON = object()


def robot_schema(output_type: Any, *, robot: str, where: str = "") -> OutputSchema:
    """:meth:`OutputSchema.of` for a robot: a problem is a ConfigurationError naming the robot (``where``:
    its file)."""
    from workspace.errors import ConfigurationError

    try:
        return OutputSchema.of(output_type)
    except OutputValidationError as exc:
        raise ConfigurationError(f"Robot '{robot}'{where}: {exc}") from exc


def parse_json(text: str) -> Any:
    """The JSON value of an answer: the whole text, a fenced block, or the outermost ``{...}``/``[...]``."""
    s = text.strip()
    if s.startswith("```"):
        s = re.sub(r"^```[\w-]*\s*", "", s)
        s = re.sub(r"\s*```\s*$", "", s)
    try:
        return json.loads(s)
    except ValueError:
        pass
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = s.find(open_), s.rfind(close)
        if 0 <= start < end:
            try:
                return json.loads(s[start:end + 1])
            except ValueError:
                continue
    return _NOT_JSON


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pydantic_errors(exc: Any) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != _WRAP_KEY) or "(root)"
        parts.append(f"{where}: {error.get('msg')}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _jsonschema_error(error: Any) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "(root)"
    return f"{where}: {error.message}"


# ---------------------------------------------------------------------------------------------
# In a run


@dataclass(slots=True)
class Verdict:
    """What the loop does after a model turn: finish with ``value``, ask again (``retry`` is the
    message for the model, None when the final_result call's error already told it), or go on."""

    done: bool = False
    value: Any = None
    retry: str | None = None


class StructuredOutput:
    """One run's structured output: prepares the request and checks each answer.

    Built by the robot (:meth:`for_run`); the agent loop calls :meth:`prepare` once the run's tools
    are known and :meth:`check` after every model turn.
    """

    def __init__(self, schema: OutputSchema, *, mode: OutputMode = "auto", retries: int = DEFAULT_RETRIES) -> None:
        if mode not in OUTPUT_MODES:
            raise OutputValidationError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}, not {mode!r}")
        self.schema = schema
        self.mode: OutputMode = mode
        self.retries = max(0, int(retries))
        #: The way used in this run ("native" or "tool"), once prepared.
        self.used: OutputMode | None = None
        self.failures = 0
        self.last_error: str | None = None
        self._accepted: list[Any] = []

    async def prepare(self, provider: Provider, tools: Any, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Choose the way; add the final_result tool to ``tools`` (a ToolManifest) for the tool way.
        Returns the run's settings with ``response_format`` or ``tool_choice``."""
        mode = self.mode
        if mode == "auto":
            native = await _supports_response_schema(provider)
            mode = "native" if native or not provider.supports_tools else "tool"
        self.used = mode
        out = dict(settings)
        if mode == "native":
            out.setdefault("response_format", self.schema.response_format())
            return out
        tools.add(self.schema.final_result_tool(self._accepted.append))
        if len(tools) == 1:
            out.setdefault("tool_choice", {"type": "function", "function": {"name": FINAL_RESULT_TOOL}})
        else:
            out.setdefault("tool_choice", "required")
        return out

    def is_output_tool(self, name: str) -> bool:
        return self.used == "tool" and name == FINAL_RESULT_TOOL

    def check(self, text: str, calls: list[Any], results: list[Any] | None = None) -> Verdict:
        """After a model turn (``calls``: its tool calls; ``results``: their results, once run)."""
        if self._accepted:
            return Verdict(done=True, value=self._accepted[-1])
        if calls:
            if self.used == "tool" and any(c.name == FINAL_RESULT_TOOL for c in calls):
                error = next((_error_text(r) for r in results or () if r.tool.name == FINAL_RESULT_TOOL
                              and r.is_error), "the final_result call was not accepted")
                self._failed(error)
                return Verdict()  # the call's error result tells the model
            return Verdict()  # other tools: the loop goes on
        try:
            value = self.schema.validate_text(text)
        except OutputValidationError as exc:
            self._failed(str(exc))
            if self.used == "tool":
                retry = (f"Your answer must be given by calling the {FINAL_RESULT_TOOL} tool with arguments "
                         f"matching the schema '{self.schema.name}' ({exc}). Call {FINAL_RESULT_TOOL} now.")
            else:
                retry = (f"Your answer does not match the schema '{self.schema.name}': {exc}. Answer again with "
                         "only a JSON object that matches the schema.")
            return Verdict(retry=retry)
        return Verdict(done=True, value=value)

    def turn_limit(self) -> None:
        """The run reached its turn limit without an answer in the schema: raise saying so."""
        last = f": {self.last_error}" if self.last_error else ""
        raise OutputValidationError(f"The run reached its turn limit before answering in the output schema "
                                    f"'{self.schema.name}'{last}")

    def _failed(self, error: str) -> None:
        self.failures += 1
        self.last_error = error
        if self.failures > self.retries:
            tries = self.failures
            raise OutputValidationError(
                f"The answer did not match the output schema '{self.schema.name}' after {tries} "
                f"{'try' if tries == 1 else 'tries'} ({self.used} structured output): {error}")


async def _supports_response_schema(provider: Provider) -> bool:
    """The provider's flag; a property (the litellm provider asks litellm, which it may import) is read
    off the event loop."""
    if isinstance(getattr(type(provider), "supports_response_schema", None), property):
        import asyncio

        return bool(await asyncio.to_thread(lambda: provider.supports_response_schema))
    return bool(provider.supports_response_schema)


def _error_text(result: Any) -> str:
    error = result.error
    if isinstance(error, Mapping):
        return str(error.get("message") or error)
    return str(error)
