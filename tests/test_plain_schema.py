"""A flat tool schema of plain types is checked without jsonschema's machinery: the quick check says valid only
when jsonschema would (every draft), and anything else still gets jsonschema's answer and words."""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from workspace.tools import tool
from workspace.tools.base import Tool
from workspace.tools.plain_schema import plainly_valid

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    {"properties": {"n": {"type": "integer", "default": 3, "title": "N"}, "x": {"type": "number"}}},
    {"type": "object", "properties": {"on": {"type": "boolean", "description": "switch"}, "z": {"type": "null"}}},
    {"type": "object", "properties": {"city": {"type": "string", "minLength": 3}}},  # not plain: jsonschema decides
    {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
    {"type": "object", "properties": {"a": {"enum": ["x", "y"]}}},
    {"type": "object", "properties": {"a": {"type": "array"}}},
]
VALUES: list[Any] = ["Oslo", "", 3, 0, -1, 2.5, 1.0, True, False, None, [], {}, "ab"]
DRAFTS = [jsonschema.Draft4Validator, jsonschema.Draft7Validator, jsonschema.Draft202012Validator]


def argument_sets(schema: dict[str, Any]) -> list[dict[str, Any]]:
    names = [*schema.get("properties", {}), "extra"]
    out: list[dict[str, Any]] = [{}]
    for name in names:
        out += [{name: value} for value in VALUES]
    for a, b in itertools.product(VALUES, repeat=2):
        out.append(dict(zip(names[:2], (a, b), strict=False)))
    return out


@pytest.mark.parametrize("schema", SCHEMAS)
def test_valid_by_the_quick_check_only_when_jsonschema_agrees(schema: dict[str, Any]) -> None:
    quick = 0
    for arguments in argument_sets(schema):
        if plainly_valid(schema, arguments):
            quick += 1
            for draft in DRAFTS:
                assert list(draft(schema).iter_errors(arguments)) == [], (draft.__name__, schema, arguments)
    if all(set(rule) <= {"type", "title", "description", "default"} and isinstance(rule.get("type"), str)
           and rule["type"] != "array" for rule in schema["properties"].values()) and "additionalProperties" not in schema:
        assert quick > 0  # a plain schema is answered quickly for its good arguments


def test_a_tools_good_call_skips_jsonschema_and_a_bad_one_gets_its_words(monkeypatch: pytest.MonkeyPatch) -> None:
    @tool
    async def get_weather(city: str, days: int = 1) -> str:
        """Weather."""
        return city

    walked: list[Any] = []
    real = jsonschema.Draft202012Validator.iter_errors

    def iter_errors(self: Any, instance: Any, *args: Any) -> Any:
        walked.append(instance)
        return real(self, instance, *args)

    monkeypatch.setattr(jsonschema.Draft202012Validator, "iter_errors", iter_errors)
    assert get_weather.validate({"city": "Oslo"}) == []
    walked.clear()  # the schema itself was checked against its draft's once, as the validator was made
    assert get_weather.validate({"city": "Oslo", "days": 2}) == []
    assert walked == []
    assert get_weather.validate({"city": "Oslo", "days": "two"}) == ["days: 'two' is not of type 'integer'"]
    assert get_weather.validate({"days": 2}) == ["'city' is a required property"]
    assert len(walked) == 2


def test_a_schema_with_more_rules_is_left_to_jsonschema() -> None:
    short = Tool("t", "d", {"type": "object", "properties": {"city": {"type": "string", "minLength": 3}}})
    assert short.validate({"city": "Oslo"}) == []
    assert short.validate({"city": "Os"}) == ["city: 'Os' is too short"]
