"""``@tool``: build a :class:`Tool` from a typed function and its docstring.

The JSON schema comes from the type hints (through pydantic, imported on first use);
parameter descriptions come from a Google- or reST-style docstring. A parameter
annotated :class:`ToolContext` (or named ``context``) is injected, never shown to
the model.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

from workspace.tools.base import Tool, ToolContext

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$", re.IGNORECASE)
_OTHER_SECTION = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$", re.IGNORECASE)
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], |]+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into (description, {parameter: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    mode = "summary"
    current: str | None = None
    for line in lines:
        if _SECTION.match(line):
            mode, current = "args", None
            continue
        if _OTHER_SECTION.match(line):
            mode, current = "other", None
            continue
        rest = _REST_PARAM.match(line)
        if rest:
            current = rest.group(1)
            params[current] = rest.group(2).strip()
            mode = "rest"
            continue
        if line.strip().startswith(":return") or line.strip().startswith(":raises"):
            mode, current = "other", None
            continue
        if mode == "summary":
            summary.append(line)
        elif mode in ("args", "rest"):
            m = _ARG_LINE.match(line) if mode == "args" else None
            if m and (line[: len(line) - len(line.lstrip())] == "" or current is None or _indent(line) <= 4):
                current = m.group(1)
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    description = "\n".join(summary).strip()
    # Keep the first paragraph tight but whole.
    return description, params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_context(annotation: Any, name: str) -> bool:
    if annotation is ToolContext or annotation == "ToolContext":
        return True
    if ToolContext in typing.get_args(annotation):  # ToolContext | None
        return True
    return name == "context" and annotation in (inspect.Parameter.empty, Any)


def schema_for(fn: Callable[..., Any], *, descriptions: Mapping[str, str] | None = None) -> tuple[dict[str, Any], str | None]:
    """(JSON schema of ``fn``'s parameters, name of the injected context parameter or None)."""
    import pydantic

    descriptions = descriptions or {}
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {}
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for name, param in sig.parameters.items():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(name, param.annotation)
        if _is_context(annotation, name):
            context_param = name
            continue
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = param.default if param.default is not inspect.Parameter.empty else ...
        fields[name] = (
            annotation,
            pydantic.Field(default, description=descriptions.get(name) or None),
        )
    model = pydantic.create_model(f"{fn.__name__}_arguments", **fields)
    schema = model.model_json_schema()
    _strip_titles(schema)
    _compact_optionals(schema)
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    schema["type"] = "object"
    return schema, context_param


def _compact_optionals(schema: dict[str, Any]) -> None:
    """``X | None = None`` parameters as ``{"type": [X, "null"]}`` instead of pydantic's ``anyOf`` with
    ``"default": null``: the same schema in fewer tokens of the model's window (every request sends it)."""
    for prop in (schema.get("properties") or {}).values():
        if not isinstance(prop, dict):
            continue
        options = prop.get("anyOf")
        if (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options
                and all(isinstance(o, dict) and set(o) == {"type"} and isinstance(o["type"], str) for o in options)):
            other = next(o["type"] for o in options if o != {"type": "null"})
            del prop["anyOf"]
            prop["type"] = [other, "null"]
        if "default" in prop and prop["default"] is None:
            del prop["default"]


def _strip_titles(node: Any) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("title"), str) and ("type" in node or "anyOf" in node or "$ref" in node
                                                   or "properties" in node or "enum" in node):
            node.pop("title")
        for key, value in list(node.items()):
            if key == "properties" and isinstance(value, dict):
                for prop in value.values():
                    _strip_titles(prop)
            else:
                _strip_titles(value)
    elif isinstance(node, list):
        for item in node:
            _strip_titles(item)


def function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> Tool:
    """A :class:`Tool` whose handler calls ``fn(**arguments)``."""
    doc_description, doc_params = parse_docstring(fn.__doc__)
    schema, context_param = schema_for(fn, descriptions=doc_params)
    is_async = inspect.iscoroutinefunction(fn)

    if is_async:

        async def handler(arguments: dict[str, Any], context: ToolContext | None = None) -> Any:
            kwargs = dict(arguments)
            if context_param:
                kwargs[context_param] = context
            return await fn(**kwargs)

    else:

        def handler(arguments: dict[str, Any], context: ToolContext | None = None) -> Any:  # type: ignore[misc]
            kwargs = dict(arguments)
            if context_param:
                kwargs[context_param] = context
            return fn(**kwargs)

    handler.__name__ = fn.__name__
    handler.__doc__ = fn.__doc__
    t = Tool(
        name or fn.__name__,
        description if description is not None else (doc_description or None),
        schema,
        handler,
        annotations=annotations,
        timeout=timeout,
    )
    t.extra_arguments = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    return t


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorate a typed function to make it a :class:`Tool`.

    ``@tool`` or ``@tool(name=..., read_only=True)``. ``read_only`` / ``destructive`` set
    the MCP-style annotations the approval policy uses.
    """
    merged = dict(annotations or {})
    if read_only is not None:
        merged["readOnlyHint"] = read_only
    if destructive is not None:
        merged["destructiveHint"] = destructive

    def wrap(f: Callable[..., Any]) -> Tool:
        return function_tool(f, name=name, description=description, annotations=merged, timeout=timeout)

    if fn is not None:
        return wrap(fn)
    return wrap
