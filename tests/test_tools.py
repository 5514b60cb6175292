"""Spec 3: tool_test.rb, tool_config_test.rb, tool_manifest_test.rb — plus @tool and validation."""

from __future__ import annotations

import asyncio
import json
import threading
from enum import Enum
from typing import Any, Literal

import pytest

from workspace.errors import Error, ToolNotFoundError
from workspace.tools import Tool, ToolContext, ToolManifest, ToolOutput, tool
from workspace.tools import selection as ToolConfig


def adder(input: dict[str, Any]) -> Any:
    return input["a"] + input["b"]


# -- Tool (tool_test.rb) ----------------------------------------------------------------------
def test_handler_is_called_with_input() -> None:
    t = Tool("add", "Adds", handler=adder)
    assert t.call({"a": 2, "b": 3}) == 5


def test_handler_receives_robot_network_step() -> None:
    seen: dict[str, Any] = {}

    def handler(input: dict[str, Any], *, robot: Any, network: Any, step: Any) -> str:
        seen.update(robot=robot, network=network, step=step)
        return "ok"

    Tool("ctx", handler=handler).call({}, robot="r1", network="net", step="s")
    assert seen == {"robot": "r1", "network": "net", "step": "s"}


def test_attributes_and_to_dict() -> None:
    params = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    t = Tool("search", "Search for items", params, adder, mcp="github", strict=True)
    assert t.parameters == params
    assert t.is_mcp and t.mcp == "github"
    assert t.to_dict() == {"name": "search", "description": "Search for items", "parameters": params,
                           "mcp": "github", "strict": True}
    assert json.loads(t.to_json())["name"] == "search"
    assert not Tool("x").is_mcp
    assert Tool("x", strict=False).to_dict() == {"name": "x", "strict": False}
    assert t.params_schema == params and Tool("x").params_schema is None
    assert t.provider_params == {}


def test_no_handler_raises_library_error() -> None:
    with pytest.raises(Error, match="Tool 'nothing' has no handler defined"):
        Tool("nothing").call({})


def test_exception_in_handler_is_returned_as_error_and_library_errors_propagate() -> None:
    def bad(_: dict[str, Any]) -> None:
        raise Exception("Boom!")

    assert Tool("bad", handler=bad).call({}) == {"error": {"type": "Exception", "message": "Boom!"}}

    def lib(_: dict[str, Any]) -> None:
        raise Error("library")

    with pytest.raises(Error):
        Tool("lib", handler=lib).call({})


def test_to_json_schema_defaults() -> None:
    assert Tool("simple", "A simple tool").to_json_schema() == {
        "name": "simple",
        "description": "A simple tool",
        "parameters": {"type": "object", "properties": {}, "required": []},
    }
    assert "description" not in Tool("bare").to_json_schema()


# -- invoke: validation, threads, errors ---------------------------------------------------------
async def test_invoke_validates_before_the_handler_runs() -> None:
    called = []
    params = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    t = Tool("count", None, params, lambda inp: called.append(inp))
    out = await t.invoke({"n": "three"})
    assert out.is_error and called == []
    assert "'three' is not of type 'integer'" in out.data and "JSON schema" in out.data
    out = await t.invoke({})
    assert out.is_error and "'n' is a required property" in out.data
    out = await t.invoke(["not", "an", "object"])
    assert out.is_error and "JSON object" in out.data


async def test_sync_handler_runs_off_the_event_loop_thread() -> None:
    loop_thread = threading.get_ident()
    t = Tool("where", handler=lambda _: threading.get_ident())
    out = await t.invoke({})
    assert not out.is_error and out.data != loop_thread


async def test_async_handler_and_exceptions_become_error_outputs() -> None:
    async def ok(inp: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "fine"

    async def boom(inp: dict[str, Any]) -> str:
        raise KeyError("missing")

    assert (await Tool("ok", handler=ok).invoke({})).data == "fine"
    out = await Tool("boom", handler=boom).invoke({})
    assert out.is_error and out.data == "Error (boom): 'missing'"  # RobotLab's text for the model
    assert out.raw == {"type": "KeyError", "message": "'missing'"}  # the type, for the inspector


async def test_raise_on_error_lets_the_exception_through() -> None:
    def boom(inp: dict[str, Any]) -> str:
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        await Tool("critical", handler=boom, raise_on_error=True).invoke({})


async def test_timeout_is_an_error_output() -> None:
    async def slow(_: dict[str, Any]) -> None:
        await asyncio.sleep(5)

    out = await Tool("slow", handler=slow, timeout=0.05).invoke({})
    assert out.is_error and "timed out" in out.data


async def test_error_dict_and_tool_output_returns() -> None:
    t = Tool("e", handler=lambda _: {"error": "Order not found"})
    assert (await t.invoke({})) == ToolOutput("Order not found", is_error=True)
    t2 = Tool("o", handler=lambda _: ToolOutput("for model", raw={"full": True}))
    out = await t2.invoke({})
    assert out.data == "for model" and out.raw == {"full": True}


async def test_invalid_schema_from_a_server_does_not_block_calls() -> None:
    t = Tool("weird", parameters={"type": "no-such-type"}, handler=lambda _: "ran")
    assert (await t.invoke({"x": 1})).data == "ran"


# -- @tool ----------------------------------------------------------------------------------------
class Mood(Enum):
    HAPPY = "happy"
    SAD = "sad"


@tool
def weather(city: str, days: int = 1, unit: Literal["c", "f"] = "c", mood: Mood | None = None) -> dict[str, Any]:
    """Get the weather forecast.

    Longer explanation that is part of the description.

    Args:
        city: the city name
        days: how many days
            (continued on the next line)
        unit: temperature unit
    """
    return {"city": city, "days": days, "unit": unit}


def test_tool_decorator_builds_schema_from_hints_and_docstring() -> None:
    assert isinstance(weather, Tool)
    assert weather.name == "weather"
    assert weather.description is not None and weather.description.startswith("Get the weather forecast.")
    schema = weather.parameters
    assert schema is not None
    assert schema["type"] == "object" and schema["required"] == ["city"]
    props = schema["properties"]
    assert props["city"] == {"type": "string", "description": "the city name"}
    assert props["days"]["type"] == "integer" and props["days"]["default"] == 1
    assert "continued on the next line" in props["days"]["description"]
    assert props["unit"]["enum"] == ["c", "f"]


async def test_tool_decorator_invokes_with_keywords_and_validates() -> None:
    out = await weather.invoke({"city": "Paris", "days": 2})
    assert out.data == {"city": "Paris", "days": 2, "unit": "c"}
    assert (await weather.invoke({"city": "Paris", "unit": "k"})).is_error


async def test_an_argument_a_function_does_not_take_is_named_not_a_type_error() -> None:
    out = await weather.invoke({"city": "Paris", "dayz": 2})
    assert out.is_error and str(out.data).startswith(
        "Invalid arguments for tool 'weather': unknown argument 'dayz' — did you mean 'days'?")
    out = await weather.invoke({"city": "Paris", "colour": "red"})
    assert "unknown argument 'colour' (it takes: city, days, unit, mood)" in str(out.data) and "TypeError" not in str(out.data)

    @tool
    def loose(city: str, **more: Any) -> dict[str, Any]:
        """Takes anything."""
        return {"city": city, **more}

    assert (await loose.invoke({"city": "Oslo", "colour": "red"})).data == {"city": "Oslo", "colour": "red"}


async def test_context_parameter_is_injected_not_shown() -> None:
    @tool(name="who", read_only=True)
    async def who_am_i(greeting: str, ctx: ToolContext) -> str:
        return f"{greeting}, {ctx.robot}"

    assert who_am_i.name == "who" and who_am_i.read_only
    assert who_am_i.parameters is not None and "ctx" not in who_am_i.parameters["properties"]
    out = await who_am_i.invoke({"greeting": "hi"}, ToolContext(robot="bob"))
    assert out.data == "hi, bob"


# -- ToolConfig (tool_config_test.rb) --------------------------------------------------------------
def test_resolve_values() -> None:
    assert ToolConfig.resolve("inherit", ["a", "b"]) == ["a", "b"]
    assert ToolConfig.resolve(None, ["a"]) == []
    assert ToolConfig.resolve([], ["a"]) == []
    assert ToolConfig.resolve("none", ["a"]) == []
    assert ToolConfig.resolve(["x"], ["a"]) == ["x"]
    assert ToolConfig.resolve("all", []) == "all"
    assert ToolConfig.resolve("inherit", "inherit") == "all"


def test_resolve_chain_global_network_robot_run() -> None:
    assert ToolConfig.resolve_chain("all", "inherit", ["read"], "inherit") == ["read"]
    assert ToolConfig.resolve_chain(["a"], "inherit", "inherit", "inherit") == ["a"]
    assert ToolConfig.resolve_chain("all", ["a", "b"], "inherit", "none") == []
    assert ToolConfig.resolve_chain("all", "none", "inherit", ["z"]) == ["z"]


def test_resolve_tools_stringifies_objects() -> None:
    t = Tool("named")
    assert ToolConfig.resolve_tools([t, "other"]) == ["named", "other"]
    assert ToolConfig.resolve_tools("inherit", ["p"]) == ["p"]


def test_predicates_and_bad_values() -> None:
    assert ToolConfig.is_none(None) and ToolConfig.is_none([]) and ToolConfig.is_none("none")
    assert not ToolConfig.is_none(["a"]) and not ToolConfig.is_none("inherit")
    assert ToolConfig.is_inherit("inherit") and not ToolConfig.is_inherit("none")
    with pytest.raises(ValueError, match="Must be one of: inherit, none, all"):
        ToolConfig.resolve("everything")
    with pytest.raises(ValueError):
        ToolConfig.resolve(42)


def test_filter_tools_whitelist_empty_and_patterns() -> None:
    tools = [Tool("search"), Tool("read"), Tool("github__issues"), Tool("github__prs")]
    assert [t.name for t in ToolConfig.filter_tools(tools, ["search"])] == ["search"]
    assert ToolConfig.filter_tools(tools, []) == []
    assert len(ToolConfig.filter_tools(tools, "all")) == 4
    assert [t.name for t in ToolConfig.filter_tools(tools, ["github__*"])] == ["github__issues", "github__prs"]
    assert ToolConfig.filter_tools(["a", "b"], ["b"]) == ["b"]


# -- ToolManifest (tool_manifest_test.rb) ----------------------------------------------------------
def test_manifest_init_add_replace_remove() -> None:
    a, b = Tool("a", "first"), Tool("b")
    assert len(ToolManifest()) == 0 and len(ToolManifest(None)) == 0
    assert ToolManifest(a).names == ["a"]
    m = ToolManifest([a])
    assert m.add(b) is m
    m << Tool("a", "replaced")
    assert m.size == 2 and m["a"] is not None and m["a"].description == "replaced"
    assert m.remove("a") is not None and m.remove("missing") is None
    assert m["missing"] is None and "b" in m and m.has("b")


def test_manifest_fetch_error_lists_available() -> None:
    m = ToolManifest([Tool("get_weather"), Tool("calculate")])
    assert m.fetch("calculate").name == "calculate"
    with pytest.raises(ToolNotFoundError, match=r"Tool not found: nope\. Available tools: get_weather, calculate"):
        m.fetch("nope")


def test_manifest_collection_api_and_serialisation() -> None:
    m = ToolManifest([Tool("get_weather", "Test tool"), Tool("calculate", "Test tool")])
    assert [t.name for t in m] == ["get_weather", "calculate"] == m.names
    assert [t.name for t in m.values()] == m.names and not m.is_empty and ToolManifest().is_empty
    assert m.to_dict() == {"get_weather": {"name": "get_weather", "description": "Test tool"},
                           "calculate": {"name": "calculate", "description": "Test tool"}}
    assert json.loads(m.to_json()) == m.to_dict()
    assert set(m.to_json_schema()) == {"get_weather", "calculate"}
    assert m.clear() is m and m.is_empty
    assert m.replace([Tool("x")]).names == ["x"]
    assert m.merge(ToolManifest([Tool("y")])).merge(Tool("z")).names == ["x", "y", "z"]


def test_manifest_from_dict() -> None:
    m = ToolManifest.from_dict({"add": {"description": "Adds", "parameters": None, "handler": adder}})
    assert m.fetch("add").call({"a": 1, "b": 1}) == 2
