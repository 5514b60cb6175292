"""Routing: how a finished task's answer picks the optional tasks to run.

A :class:`Route` rule maps answer patterns to tasks; without a rule (or a router function) a task's
*structured answer* decides (:func:`structured_targets`): a JSON object with an ``activate`` /
``route`` / ``next`` key, a line ``activate: name``, or an answer that is exactly an optional task's
name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Route", "as_names", "pattern_text", "structured_targets"]

_ACTIVATE_KEYS = ("activate", "route", "next", "tasks", "task")


def as_names(value: Any) -> list[str]:
    """Task names from a name, a task (anything with ``.name``), a list of them, or None."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return [_name_of(v) for v in value]
    return [_name_of(value)]


def _name_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    raise TypeError(f"Expected a task name, got {value!r}")


def _norm(name: Any) -> str:
    return re.sub(r"[\s-]+", "_", str(name).strip().lower())


def json_object(text: str) -> Any:
    """The JSON object in an answer (fenced or surrounded by prose), or None."""
    s = text.strip()
    if s.startswith("```"):
        s = re.sub(r"^```[\w-]*\s*", "", s)
        s = re.sub(r"\s*```\s*$", "", s)
    if not s.startswith("{"):
        start, end = s.find("{"), s.rfind("}")
        if start < 0 or end <= start:
            return None
        s = s[start : end + 1]
    try:
        return json.loads(s)
    except ValueError:
        return None


def structured_targets(text: str, candidates: Iterable[str], *, data: Any = None) -> list[str]:
    """Optional tasks a structured answer names (see the module docstring), among ``candidates``.
    ``data``: the task's structured output (its RobotResult's ``output_data`` as JSON), read first."""
    lookup = {_norm(c): c for c in candidates}
    if not lookup or (not text and data is None):
        return []
    if not isinstance(data, Mapping):
        data = json_object(text) if text and "{" in text else None
    if isinstance(data, Mapping):
        for key in _ACTIVATE_KEYS:
            if key in data:
                return _pick(_as_plain_list(data[key]), lookup)
        return []
    m = re.search(r"^\s*(?:activate|route(?:\s+to)?|next)\s*[:=]\s*(.+?)\s*$", text, re.IGNORECASE | re.MULTILINE)
    if m:
        return _pick(re.split(r"[,;]\s*|\s+and\s+|\s+", m.group(1).strip(" .")), lookup)
    plain = _norm(text.strip().strip("*`_\"'.!").strip())
    return [lookup[plain]] if plain in lookup else []


def _as_plain_list(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [str(value)] if value is not None else []


def _pick(names: Iterable[str], lookup: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    for name in names:
        hit = lookup.get(_norm(name.strip("*`_\"'.")))
        if hit is not None and hit not in out:
            out.append(hit)
    return out


@dataclass
class Route:
    """A routing rule: the answer of task ``source`` picks the optional task(s) to run.

    ``match`` maps a pattern to a task name (or a list of names); patterns are tried in order
    and the first that occurs in the answer wins. A pattern matches as a whole word or phrase,
    ignoring case; ``re:<regex>`` is a regular expression. Nothing matches: ``default`` (a
    name, a list, or None for nothing). With ``field``, the task's structured output (a robot
    with an output type: its ``output_data``), or else an answer that is a JSON object, is matched
    on that field's value (a dotted path reaches into nested objects: ``decision.category``).
    """

    match: dict[str, str | list[str]] = field(default_factory=dict)
    default: str | list[str] | None = None
    field: str | None = None
    source: str | None = None

    def targets(self) -> list[str]:
        """Every task this rule may activate."""
        out: list[str] = []
        for value in [*self.match.values(), self.default]:
            for name in as_names(value):
                if name not in out:
                    out.append(name)
        return out

    def choose(self, text: str, *, data: Any = None) -> list[str]:
        """The task(s) this rule picks for an answer (``data``: the task's structured output, if any)."""
        value = text or ""
        if self.field:
            found = _field(data, self.field) if data is not None else _MISSING
            if found is _MISSING:
                found = _field(json_object(value), self.field)
            if found is not _MISSING:
                value = str(found)
        for pattern, target in self.match.items():
            if _matches(str(pattern), value):
                return as_names(target)
        return as_names(self.default)

    def labels(self) -> dict[str, list[str]]:
        """target -> the patterns that lead to it (``otherwise`` for the default), for pictures."""
        out: dict[str, list[str]] = {}
        for pattern, target in self.match.items():
            for name in as_names(target):
                out.setdefault(name, []).append(pattern_text(str(pattern)).strip('"'))
        for name in as_names(self.default):
            out.setdefault(name, []).append("otherwise")
        return out

    def describe(self) -> str:
        parts = [f"{pattern_text(p)} → {', '.join(as_names(t))}" for p, t in self.match.items()]
        if self.default:
            parts.append(f"otherwise → {', '.join(as_names(self.default))}")
        on = f" (field '{self.field}')" if self.field else ""
        return "; ".join(parts) + on

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": self.source, "match": dict(self.match), "default": self.default,
                               "field": self.field}
        return {k: v for k, v in out.items() if v is not None}


_MISSING = object()


def _field(data: Any, path: str) -> Any:
    """``data[a][b]`` for the path ``a.b`` (a key with a dot in it is found whole first)."""
    if isinstance(data, Mapping) and path in data:
        return data[path]
    for part in path.split("."):
        if not isinstance(data, Mapping) or part not in data:
            return _MISSING
        data = data[part]
    return data


def pattern_text(pattern: str) -> str:
    """A pattern as people read it: ``"billing"`` or the bare regular expression."""
    return pattern[3:] if pattern.startswith("re:") else f'"{pattern}"'


def _matches(pattern: str, text: str) -> bool:
    if pattern.startswith("re:"):
        return re.search(pattern[3:], text, re.IGNORECASE) is not None
    return re.search(rf"(?<![\w-]){re.escape(pattern.strip())}(?![\w-])", text, re.IGNORECASE) is not None
