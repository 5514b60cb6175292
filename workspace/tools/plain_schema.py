"""A quick answer for the common tool schema: a flat object of plain-typed properties.

jsonschema walks its whole machinery for every tool call; most tools' schemas (those made from a Python
function's signature, most MCP tools') are a flat object whose properties are strings, numbers, integers
or booleans. :func:`plainly_valid` says True only when ``arguments`` certainly meets such a schema (under
every draft of JSON Schema); anything else (another keyword, a failed check) is left to jsonschema, which
also words the problems, so the answers and the messages stay the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Keywords of the object schema that do not constrain a flat object's arguments beyond what is checked here.
_OBJECT_KEYS = frozenset({"type", "properties", "required", "title", "description"})
#: Keywords of a property's schema that constrain nothing but its type.
_PROPERTY_KEYS = frozenset({"type", "title", "description", "default", "examples"})


def _plain_type(kind: object, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":  # an int, not 1.0 (some drafts refuse it) and not a bool
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "null":
        return value is None
    return False


def plainly_valid(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> bool:
    """Whether ``arguments`` certainly meets ``schema``, a flat object of plain-typed properties (False also
    when the schema is not one: then jsonschema decides)."""
    if not _OBJECT_KEYS.issuperset(schema) or schema.get("type", "object") != "object":
        return False
    properties = schema.get("properties", {})
    required = schema.get("required", ())
    if not isinstance(properties, Mapping) or not isinstance(required, list | tuple):
        return False
    for name in required:
        if not isinstance(name, str) or name not in arguments:
            return False
    for name, value in arguments.items():
        rule = properties.get(name)
        if rule is None:
            continue  # not named by the schema: allowed by it (the tool's own check names it)
        if not isinstance(rule, Mapping) or not _PROPERTY_KEYS.issuperset(rule) or "type" not in rule:
            return False
        if not _plain_type(rule["type"], value):
            return False
    return True
