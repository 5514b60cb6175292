"""An elicitation's form, from the JSON schema a server sends with ``elicitation/create``.

MCP elicitation schemas are flat objects of primitive properties: strings (with ``format``
email / uri / date / date-time, ``minLength``/``maxLength``, ``pattern``), numbers and integers
(``minimum``/``maximum``), booleans, single choices (``enum``, with ``enumNames``, or ``oneOf`` of
``{const, title}``) and multiple choices (``type: array`` whose ``items`` have ``enum`` or
``anyOf`` of ``{const, title}``, with ``minItems``/``maxItems``). :func:`form_fields` turns a schema
into :class:`FormField` s — what the chat's form and the terminal's questions are built from —
and :func:`check` / :func:`parse_text` give the validation messages people read ("Enter a whole
number from 1 to 100"). :func:`content_of` makes the answer the server gets (empty optional
fields left out). Plain data; no Qt, no SDK.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

FieldKind: TypeAlias = Literal["string", "number", "integer", "boolean", "choice", "choices"]

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class FormField:
    """One property of an elicitation schema, as a form shows it."""

    name: str
    kind: FieldKind
    title: str = ""
    description: str = ""
    required: bool = False
    default: Any = None
    #: Choices: ``(value, label)`` pairs (the label is the value when the schema gives no title).
    options: tuple[tuple[Any, str], ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    #: ``email``, ``uri``, ``date`` or ``date-time`` (strings).
    format: str | None = None
    pattern: str | None = None

    @property
    def label(self) -> str:
        """The field's name for people: its title, else its property name."""
        return self.title or self.name

    @property
    def hint(self) -> str:
        """What the value must look like, when the schema says ("email address", "1 to 100")."""
        parts: list[str] = []
        if self.format in FORMAT_WORDS:
            parts.append(FORMAT_WORDS[self.format])
        if self.kind in ("number", "integer") and (self.minimum is not None or self.maximum is not None):
            parts.append(_range_text(self.minimum, self.maximum))
        if self.kind == "choices" and (self.min_items or self.max_items):
            parts.append(_count_text(self.min_items, self.max_items))
        return ", ".join(parts)

    def option_label(self, value: Any) -> str:
        for option, label in self.options:
            if option == value:
                return label
        return str(value)

    def shown(self, value: Any) -> str:
        """A value as the form shows it once answered (choices by their labels)."""
        if value is None or value == "":
            return "—"
        if self.kind == "boolean":
            return "yes" if value else "no"
        if self.kind == "choice":
            return self.option_label(value)
        if self.kind == "choices" and isinstance(value, list):
            return ", ".join(self.option_label(v) for v in value) or "—"
        if isinstance(value, float) and value.is_integer():
            return f"{value:g}"
        return str(value)


FORMAT_WORDS = {"email": "an email address", "uri": "a web address, https://…", "date": "a date, YYYY-MM-DD",
                "date-time": "a date and time, YYYY-MM-DDTHH:MM"}


def _number_text(value: float) -> str:
    return f"{value:g}"


def _range_text(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"from {_number_text(low)} to {_number_text(high)}"
    if low is not None:
        return f"at least {_number_text(low)}"
    assert high is not None
    return f"at most {_number_text(high)}"


def _count_text(low: int | None, high: int | None) -> str:
    if low and high:
        return f"choose {low} to {high}" if low != high else f"choose {low}"
    if low:
        return f"choose at least {low}"
    return f"choose at most {high}"


def _options(prop: Mapping[str, Any]) -> tuple[tuple[Any, str], ...]:
    enum = prop.get("enum")
    if isinstance(enum, list) and enum:
        names = prop.get("enumNames")
        labels = [str(n) for n in names] if isinstance(names, list) and len(names) == len(enum) else \
            [str(v) for v in enum]
        return tuple(zip(enum, labels, strict=True))
    for key in ("oneOf", "anyOf"):
        choices = prop.get(key)
        if isinstance(choices, list) and choices and all(isinstance(c, Mapping) and "const" in c for c in choices):
            return tuple((c["const"], str(c.get("title") or c["const"])) for c in choices)
    return ()


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def form_fields(schema: Mapping[str, Any]) -> list[FormField]:
    """The form of a (checked, see :func:`workspace.mcp.requests.schema_problem`) elicitation schema."""
    required = set(schema.get("required") or [])
    fields: list[FormField] = []
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, Mapping):
            continue
        kind: FieldKind
        options = _options(prop)
        items = prop.get("items") if isinstance(prop.get("items"), Mapping) else {}
        if prop.get("type") == "array":
            kind, options = "choices", _options(items or {})
        elif options:
            kind = "choice"
        elif prop.get("type") in ("number", "integer", "boolean"):
            kind = prop["type"]
        else:
            kind = "string"
        fields.append(FormField(
            name=str(name), kind=kind, title=str(prop.get("title") or ""),
            description=str(prop.get("description") or ""), required=name in required, default=prop.get("default"),
            options=options, minimum=_number(prop.get("minimum")), maximum=_number(prop.get("maximum")),
            min_length=_count(prop.get("minLength")), max_length=_count(prop.get("maxLength")),
            min_items=_count(prop.get("minItems")), max_items=_count(prop.get("maxItems")),
            format=str(prop["format"]) if prop.get("format") else None,
            pattern=str(prop["pattern"]) if prop.get("pattern") else None,
        ))
    return fields


def start_value(field: FormField) -> Any:
    """What the form shows first: the schema's default, else nothing chosen."""
    if field.default is not None:
        return list(field.default) if field.kind == "choices" and isinstance(field.default, list) else field.default
    return {"boolean": False, "choices": []}.get(field.kind)


def is_empty(value: Any) -> bool:
    return value is None or value == "" or value == []


def check(field: FormField, value: Any) -> str | None:
    """Why ``value`` does not fit ``field`` (a sentence that says what to enter), or None."""
    if is_empty(value):
        if field.required:
            return "Choose at least one." if field.kind == "choices" else (
                "Choose one." if field.kind == "choice" else "This field is required.")
        return None
    if field.kind == "string":
        if not isinstance(value, str):
            return "Enter text."
        if field.min_length is not None and len(value) < field.min_length:
            return f"Enter at least {field.min_length} characters."
        if field.max_length is not None and len(value) > field.max_length:
            return f"Enter at most {field.max_length} characters."
        problem = _format_problem(field.format, value)
        if problem:
            return problem
        if field.pattern:
            try:
                if re.search(field.pattern, value) is None:
                    return f"Enter text matching {field.pattern}."
            except re.error:
                return None
        return None
    if field.kind in ("number", "integer"):
        number = _number(value)
        if number is None or not math.isfinite(number):
            return "Enter a number."
        whole = field.kind == "integer"
        if whole and not number.is_integer():
            return "Enter a whole number" + (f" {_range_text(field.minimum, field.maximum)}" if
                                             field.minimum is not None or field.maximum is not None else "") + "."
        out_of_range = (field.minimum is not None and number < field.minimum) or \
            (field.maximum is not None and number > field.maximum)
        if out_of_range:
            noun = "a whole number" if whole else "a number"
            return f"Enter {noun} {_range_text(field.minimum, field.maximum)}."
        return None
    if field.kind == "boolean":
        return None if isinstance(value, bool) else "Choose yes or no."
    if field.kind == "choice":
        return None if any(o == value for o, _ in field.options) else \
            "Choose one of: " + ", ".join(label for _, label in field.options) + "."
    if not isinstance(value, list):
        return "Choose from the list."
    unknown = [v for v in value if not any(o == v for o, _ in field.options)]
    if unknown:
        return f"Not a choice: {', '.join(str(v) for v in unknown)}."
    if (field.min_items and len(value) < field.min_items) or (field.max_items and len(value) > field.max_items):
        return _count_text(field.min_items, field.max_items).capitalize() + "."
    return None


def _format_problem(fmt: str | None, value: str) -> str | None:
    if fmt == "email" and not _EMAIL.match(value):
        return "Enter an email address, like name@example.com."
    if fmt == "uri" and not _URI.match(value):
        return "Enter a web address, like https://example.com."
    if fmt == "date":
        try:
            datetime.date.fromisoformat(value)
        except ValueError:
            return "Enter a date as YYYY-MM-DD."
    if fmt == "date-time":
        try:
            datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return "Enter a date and time as YYYY-MM-DDTHH:MM."
    return None


def check_all(fields: Sequence[FormField], values: Mapping[str, Any]) -> dict[str, str]:
    """The problem of each field that has one (field name -> message)."""
    out: dict[str, str] = {}
    for field in fields:
        problem = check(field, values.get(field.name))
        if problem:
            out[field.name] = problem
    return out


def parse_text(field: FormField, text: str) -> Any:
    """A typed answer (a terminal's line) as the field's value; raises ValueError with what to type."""
    text = text.strip()
    if not text:
        return None if field.kind != "choices" else []
    if field.kind == "boolean":
        low = text.lower()
        if low in ("y", "yes", "true", "1", "on"):
            return True
        if low in ("n", "no", "false", "0", "off"):
            return False
        raise ValueError("Answer y (yes) or n (no).")
    if field.kind in ("number", "integer"):
        try:
            number = float(text)
        except ValueError:
            raise ValueError("Enter a whole number." if field.kind == "integer" else "Enter a number.") from None
        if field.kind == "integer" and number.is_integer():
            return int(number)
        return number
    if field.kind == "choice":
        return _choose(field, text)
    if field.kind == "choices":
        return [_choose(field, part) for part in re.split(r"[,\s]+", text) if part]
    return text


def _choose(field: FormField, text: str) -> Any:
    """A choice by its number in the list (1, 2, ...), its label or its value."""
    if text.isdigit() and 1 <= int(text) <= len(field.options):
        return field.options[int(text) - 1][0]
    for value, label in field.options:
        if text.casefold() in (label.casefold(), str(value).casefold()):
            return value
    raise ValueError(f"Not a choice: {text}. Type its number (1 to {len(field.options)}).")


def content_of(fields: Sequence[FormField], values: Mapping[str, Any]) -> dict[str, Any]:
    """The answer the server gets: every field with a value (empty optional fields left out)."""
    return {f.name: values[f.name] for f in fields if f.name in values and not is_empty(values[f.name])}


__all__ = ["FormField", "check", "check_all", "content_of", "form_fields", "is_empty", "parse_text", "start_value"]
