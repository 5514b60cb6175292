"""The shared validation helpers: file, line, did-you-mean, ranges, YAML syntax errors."""

from __future__ import annotations

import pytest
from pydantic import Field

from workspace.errors import ConfigurationError
from workspace.schemas import SchemaError, closest, load_yaml, validate
from workspace.schemas.base import StrictModel


class Llm(StrictModel):
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)


class Cfg(StrictModel):
    llm: Llm = Llm()
    robots: dict[str, Llm] = Field(default_factory=dict)
    items: list[Llm] = Field(default_factory=list)


def test_unknown_key_names_file_line_and_closest_key() -> None:
    data, lines = load_yaml("llm:\n  model: x\n  temprature: 0.3\n", source="config.yaml")
    with pytest.raises(SchemaError) as info:
        validate(Cfg, data, lines=lines)
    assert str(info.value) == "config.yaml:3: unknown setting 'temprature' in llm — did you mean 'temperature'?"
    assert isinstance(info.value, ConfigurationError)


def test_out_of_range_and_nested_locations() -> None:
    text = "robots:\n  a:\n    temperature: 7\nitems:\n  - model: m\n  - temperature: -1\n"
    data, lines = load_yaml(text, source="net.yaml")
    with pytest.raises(SchemaError) as info:
        validate(Cfg, data, lines=lines)
    problems = info.value.problems
    assert problems == [
        "net.yaml:3: robots.a.temperature: 7 is out of range: it must be at most 2",
        "net.yaml:6: items[1].temperature: -1 is out of range: it must be at least 0",
    ]


def test_unknown_key_without_a_close_match_says_what_to_do() -> None:
    with pytest.raises(SchemaError, match="unknown setting 'zzz'. Remove it or check its spelling"):
        validate(Cfg, {"zzz": 1}, source="x.yaml")


def test_yaml_syntax_error_names_line_and_column() -> None:
    with pytest.raises(SchemaError, match=r"bad.yaml:2:1: not valid YAML"):
        load_yaml("a: [1\n", source="bad.yaml")


def test_front_matter_offset_shifts_lines() -> None:
    _data, lines = load_yaml("name: x\ntemprature: 1\n", source="robot.md", offset=1)
    assert lines.line(("temprature",)) == 3


def test_closest_is_case_insensitive_first() -> None:
    assert closest("Temperature", ["temperature", "top_p"]) == "temperature"
    assert closest("nothing_like_it", ["temperature"]) is None
