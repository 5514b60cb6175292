"""Validation of what users write (front matter, network YAML, config, ``mcpServers``) with pydantic.

Each file format has a pydantic v2 model; this module turns pydantic's errors into messages a
person can act on: the file, the line where YAML gives it, the key, and for an unknown key the
closest valid one::

    robots/billing.md:4: unknown setting 'temprature' — did you mean 'temperature'?
    config.yaml:7: llm.temperature: 7 is out of range: must be at most 2

Use :func:`load_yaml` to read YAML with the line of every key, then :func:`validate` with a model
built on :class:`workspace.schemas.base.StrictModel` (unknown keys are errors). This module does not
import pydantic (the models' modules do, and are imported on use), so ``import workspace`` does not
pay for it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from workspace.errors import ConfigurationError
from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "Lines",
    "SchemaError",
    "closest",
    "did_you_mean",
    "load_yaml",
    "read_yaml_file",
    "validate",
    "yaml_with_lines",
]

M = TypeVar("M", bound="BaseModel")
#: A location inside a document: keys and list indexes from the top.
Loc = tuple[str | int, ...]


class SchemaError(ConfigurationError):
    """One or more problems in a file (or a set of keyword arguments); ``problems`` lists them,
    each already formatted with the file and line."""

    def __init__(self, problems: Sequence[str], *, source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        if len(self.problems) == 1:
            message = self.problems[0]
        else:
            head = f"{len(self.problems)} problems in {source}:" if source else f"{len(self.problems)} problems:"
            message = "\n".join([head, *(f"  - {p}" for p in self.problems)])
        super().__init__(message)


@dataclass
class Lines:
    """Where each key of a YAML document is: ``line(("robots", "billing", "model"))`` -> 12.

    ``offset`` is added to every line (front matter starts after the opening ``---``)."""

    source: str | None = None
    offset: int = 0
    _lines: dict[Loc, int] = field(default_factory=dict)

    def line(self, loc: Loc) -> int | None:
        """The 1-based line of ``loc`` or of its nearest parent that has one."""
        loc = tuple(loc)
        while True:
            found = self._lines.get(loc)
            if found is not None:
                return found + self.offset
            if not loc:
                return None
            loc = loc[:-1]

    def also_under(self, prefix: Loc, other: Loc) -> Lines:
        """Find the keys under ``prefix`` under ``other`` as well (a section with two spellings,
        such as ``mcp_servers`` and ``mcpServers``); returns self."""
        n = len(prefix)
        for loc, line in list(self._lines.items()):
            if loc[:n] == tuple(prefix):
                self._lines.setdefault((*other, *loc[n:]), line)
        return self

    def where(self, loc: Loc) -> str:
        """``file:line`` (or ``file``, or an empty string) for messages."""
        line = self.line(loc)
        if self.source and line is not None:
            return f"{self.source}:{line}"
        if self.source:
            return self.source
        return f"line {line}" if line is not None else ""


def yaml_with_lines(text: str, *, source: str | None = None, offset: int = 0) -> tuple[Any, Lines]:
    """Parse YAML (safe, within :mod:`workspace.yaml_limits`) and record the line of every mapping key
    and list item.

    A syntax error (or a document past the limits) propagates as ``yaml.YAMLError`` (for callers with their own wording of it);
    :func:`load_yaml` turns it into a :class:`SchemaError`."""
    from workspace.yaml_limits import load_with_node

    lines = Lines(source=source, offset=offset)
    data, node = load_with_node(text)
    if node is not None:
        _walk(node, (), lines._lines)
    return data, lines


def load_yaml(text: str, *, source: str | None = None, offset: int = 0) -> tuple[Any, Lines]:
    """Parse YAML (safe) and record the line of every mapping key and list item.

    A syntax error is a :class:`SchemaError` naming the file, the line and the column."""
    import yaml

    try:
        return yaml_with_lines(text, source=source, offset=offset)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = source or "YAML"
        if mark is not None:
            where = f"{where}:{mark.line + 1 + offset}:{mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        raise SchemaError([f"{where}: not valid YAML: {problem}. Check the indentation and quoting there."],
                          source=source) from None


def read_yaml_file(path: Path, *, what: str = "configuration") -> tuple[dict[str, Any], Lines]:
    """A YAML (or JSON) mapping from ``path`` with the line of every key; errors name the file and the line."""
    import yaml

    try:
        text = read_text_bounded(path, CONFIG_FILE_BYTES, f"{what} file")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path}: the {what} file is not UTF-8 text ({exc})") from exc
    try:
        data, lines = yaml_with_lines(text, source=str(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigurationError(
            f"{path}: the {what} file is not valid YAML{where}: {problem}. Fix the file or move it away."
        ) from exc
    if data is None:
        return {}, lines
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{path}: the {what} file must hold a mapping of sections (like 'llm:'), not {type(data).__name__}"
        )
    return data, lines


def _walk(node: Any, loc: Loc, out: dict[Loc, int]) -> None:
    import yaml

    out.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = getattr(key_node, "value", None)
            if not isinstance(key, str):
                continue
            out[(*loc, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*loc, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            out[(*loc, index)] = item.start_mark.line + 1
            _walk(item, (*loc, index), out)


def closest(name: str, known: Sequence[str] | Any, *, cutoff: float = 0.6) -> str | None:
    """The known name closest to ``name`` (a typo's intended key), or None.

    ``cutoff`` is how alike they must be (0 to 1, :func:`difflib.get_close_matches`); the same name
    in other letter case always matches."""
    candidates = [str(k) for k in known]
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered:
        return lowered[name.lower()]
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=cutoff)
    return matches[0] if matches else None


def did_you_mean(name: str, known: Sequence[str] | Any) -> str:
    """`` — did you mean 'x'?`` or an empty string."""
    guess = closest(name, known)
    return f" — did you mean '{guess}'?" if guess else ""


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The pydantic model that holds the keys at ``loc`` inside ``model`` (None: not a model there)."""
    from pydantic import BaseModel

    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            current = _inner_model(current)
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            found = None
            for fname, finfo in current.model_fields.items():
                if part in (fname, finfo.alias):
                    found = finfo.annotation
                    break
            current = _inner_model(found) if found is not None else _inner_model(current)
        else:
            current = _inner_model(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _known_fields(model: type[BaseModel], loc: Loc) -> list[str]:
    """The field names (and aliases) valid at ``loc`` inside ``model``, for did-you-mean."""
    found = _model_at(model, loc)
    if found is None:
        return []
    return [finfo.alias or fname for fname, finfo in found.model_fields.items()]


def _hint(model: type[BaseModel], loc: Loc) -> tuple[Loc, str] | None:
    """``(loc of the field, hint)`` when the field at ``loc`` (or the field holding it, for an item of a
    list) has a hint in its model's ``hints`` class variable: ``{"temperature": "must be a number from
    0 to 2"}``. A hint replaces pydantic's wording of every value error of that field."""
    keys = [i for i, part in enumerate(loc) if isinstance(part, str)]
    if not keys:
        return None
    end = keys[-1]
    owner = _model_at(model, loc[:end])
    hints = getattr(owner, "hints", None) if owner is not None else None
    if isinstance(hints, Mapping) and loc[end] in hints:
        return loc[: end + 1], str(hints[loc[end]])
    return None


def _inner_model(annotation: Any) -> Any:
    """The pydantic model inside ``list[M]``, ``dict[str, M]``, ``M | None``... (else None)."""
    import typing

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_RANGE_WORDS = {"less_than_equal": "at most", "less_than": "less than",
                "greater_than_equal": "at least", "greater_than": "more than"}


def _message(error: Mapping[str, Any], model: type[BaseModel], lines: Lines, prefix: Loc) -> str:
    loc: Loc = tuple(p for p in error.get("loc", ()) if not (isinstance(p, str) and p.startswith("function-")))
    full = (*prefix, *loc)
    where = lines.where(full)
    lead = f"{where}: " if where else ""
    kind = error.get("type", "")
    if kind == "extra_forbidden" and loc:
        key = str(loc[-1])
        parent = _dotted((*prefix, *loc[:-1]))
        place = f" in {parent}" if parent else ""
        hint = did_you_mean(key, _known_fields(model, loc[:-1]))
        return f"{lead}unknown setting '{key}'{place}{hint or '. Remove it or check its spelling'}"
    name = _dotted(full) or "value"
    value = error.get("input")
    shown = repr(value) if isinstance(value, str) else _short(value)
    msg = str(error.get("msg", "invalid value"))
    ctx = error.get("ctx") or {}
    hinted = _hint(model, loc) if kind != "missing" else None
    if hinted is not None:
        field_loc, hint = hinted
        field_name = _dotted((*prefix, *field_loc))
        if kind in _RANGE_WORDS:
            return f"{lead}{name}: {shown} is out of range: '{field_name}' {hint}"
        return f"{lead}'{field_name}' {hint}, got {shown}"
    if kind in _RANGE_WORDS:
        bound = next(iter(ctx.values()), None)
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        words = _RANGE_WORDS[kind]
        return f"{lead}{name}: {shown} is out of range: it must be {words} {bound}"
    if kind == "missing":
        return f"{lead}{name} is required"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    return f"{lead}{name}: {shown} is not valid: {msg}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validate(model: type[M], data: Any, *, source: str | Path | None = None, lines: Lines | None = None,
             prefix: Loc = ()) -> M:
    """Validate ``data`` with ``model``; every problem in one :class:`SchemaError` that names the
    file, the line (from ``lines``) and, for an unknown key, the closest valid one.

    ``prefix`` is where ``data`` sits in the document (to find lines of a nested section)."""
    from pydantic import ValidationError

    src = str(source) if source is not None else (lines.source if lines is not None else None)
    if lines is None:
        lines = Lines(source=src)
    elif src is not None and lines.source is None:
        lines.source = src
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [_message(e, model, lines, prefix) for e in exc.errors(include_url=False)]
        raise SchemaError(list(dict.fromkeys(problems)), source=src) from None

