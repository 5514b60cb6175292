"""Structured output (workspace/output.py): ``Robot(output_type=...)`` against the loopback
OpenAI-compatible server, the native way (``response_format``) and the tool way (a forced
``final_result`` call), a model that first answers wrong, the retry limit, robot files'
``output_schema``, routing a network on a structured field, and ``robotlab run --output-schema``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from pydantic import BaseModel

from workspace import Robot, RobotResult, ScriptedProvider, ToolCall
from workspace import events as ev
from workspace.errors import ConfigurationError
from workspace.network import Network, Route
from workspace.output import FINAL_RESULT_TOOL, OutputSchema, OutputValidationError
from workspace.providers.litellm_provider import LiteLLMProvider


class Invoice(BaseModel):
    """An invoice for one customer."""

    customer: str
    total: float


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def provider(server: FakeLLMServer, **options: Any) -> LiteLLMProvider:
    return LiteLLMProvider("openai/fake", api_base=server.base_url + "/v1", **options)


async def run_all(robot: Robot, message: str, **options: Any) -> tuple[list[ev.Event], Any]:
    run = robot.stream(message, **options)
    events = [e async for e in run]
    return events, run


# -- the native way ------------------------------------------------------------------------------
async def test_native_structured_output_retries_invalid_json(server: FakeLLMServer) -> None:
    server.enqueue("Sure! Here is the invoice: customer Ada, 12.50", '{"customer": "Ada", "total": 12.5}')
    robot = Robot("clerk", system_prompt="You write invoices.", provider=provider(server, response_schema=True),
                  output_type=Invoice)
    events, run = await run_all(robot, "Invoice Ada for 12.50")
    assert isinstance(events[-1], ev.RunFinished)
    result = run.result
    assert isinstance(result.output_data, Invoice) and result.output_data == Invoice(customer="Ada", total=12.5)
    first, second = server.requests
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["name"] == "Invoice"
    assert first["response_format"]["json_schema"]["schema"]["required"] == ["customer", "total"]
    assert "tool_choice" not in first and "tools" not in first
    # The error went back to the model as a user message, after its invalid answer.
    assert second["messages"][-2]["role"] == "assistant"
    retry = second["messages"][-1]
    assert retry["role"] == "user" and "'Invoice'" in retry["content"] and "not JSON" in retry["content"]
    # The object round-trips as JSON.
    data = result.to_dict()
    assert data["output_data"] == {"customer": "Ada", "total": 12.5}
    assert RobotResult.from_dict(json.loads(json.dumps(data))).output_data == {"customer": "Ada", "total": 12.5}
    assert result.last_text_content == '{"customer": "Ada", "total": 12.5}'


async def test_the_provider_decides_the_way(server: FakeLLMServer) -> None:
    # litellm knows gpt-4o-mini takes a JSON schema, and not an unknown model behind an api_base.
    assert LiteLLMProvider("openai/gpt-4o-mini").supports_response_schema is True
    assert provider(server).supports_response_schema is False
    assert ScriptedProvider().supports_response_schema is False
    assert ScriptedProvider(response_schema=True).supports_response_schema is True
    # An explicit mode wins over the flag.
    server.enqueue('{"customer": "Bo", "total": 1}')
    robot = Robot("clerk", system_prompt="s", provider=provider(server), output_type=Invoice, output_mode="native")
    result = await robot.arun("Bo, 1")
    assert result.output_data.customer == "Bo" and "response_format" in server.requests[0]


async def test_the_lean_provider_sends_the_runs_response_format_and_tool_choice(server: FakeLLMServer) -> None:
    """The openai-SDK provider of OpenAI-compatible servers: native for servers known to take a JSON schema
    (vLLM, LM Studio, llama.cpp), the forced tool call for an unknown one; either way from the run's settings."""
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    base = server.base_url + "/v1"
    assert OpenAICompatibleProvider("hosted_vllm/qwen", api_base=base).supports_response_schema is True
    assert OpenAICompatibleProvider("lm_studio/qwen").supports_response_schema is True
    unknown = OpenAICompatibleProvider("openai/fake", api_base=base)
    assert unknown.supports_response_schema is False
    assert OpenAICompatibleProvider("openai/fake", api_base=base, response_schema=True).supports_response_schema

    server.enqueue('{"customer": "Ada", "total": 2}', Reply.tool(FINAL_RESULT_TOOL, {"customer": "Bo", "total": 1}))
    native = Robot("clerk", system_prompt="s", output_type=Invoice,
                   provider=OpenAICompatibleProvider("hosted_vllm/fake", api_base=base))
    assert (await native.arun("Ada, 2")).output_data == Invoice(customer="Ada", total=2)
    tools = Robot("clerk", system_prompt="s", output_type=Invoice, provider=unknown)
    assert (await tools.arun("Bo, 1")).output_data == Invoice(customer="Bo", total=1)
    first, second = server.requests
    assert first["model"] == "fake" and first["response_format"]["json_schema"]["name"] == "Invoice"
    assert "tools" not in first and "tool_choice" not in first
    assert second["tool_choice"] == {"type": "function", "function": {"name": FINAL_RESULT_TOOL}}
    assert "response_format" not in second


# -- the tool way --------------------------------------------------------------------------------
async def test_tool_structured_output_with_malformed_then_invalid_then_valid_arguments(server: FakeLLMServer) -> None:
    server.enqueue(
        Reply.tool(FINAL_RESULT_TOOL, '{"customer": "Ada", "total": '),  # not JSON
        Reply.tool(FINAL_RESULT_TOOL, {"customer": "Ada", "total": "a lot"}),  # JSON, not the schema
        Reply.tool(FINAL_RESULT_TOOL, {"customer": "Ada", "total": 12.5}),
    )
    robot = Robot("clerk", system_prompt="s", provider=provider(server), output_type=Invoice, output_retries=3)
    events, run = await run_all(robot, "Invoice Ada")
    assert isinstance(events[-1], ev.RunFinished) and run.result.output_data == Invoice(customer="Ada", total=12.5)
    first = server.requests[0]
    assert first["tool_choice"] == {"type": "function", "function": {"name": FINAL_RESULT_TOOL}}
    [tool] = first["tools"]
    assert tool["function"]["name"] == FINAL_RESULT_TOOL and tool["function"]["parameters"]["title"] == "Invoice"
    assert "response_format" not in first
    # Each wrong call was answered with an error the model could act on.
    errors = [e for e in events if isinstance(e, ev.ToolError)]
    assert len(errors) == 2 and "not valid JSON" in str(errors[0].error) and "total" in str(errors[1].error)
    second_messages = server.requests[1]["messages"]
    assert second_messages[-1]["role"] == "tool" and "error" in second_messages[-1]["content"]
    assert [e.name for e in events if isinstance(e, ev.ToolResult)] == [FINAL_RESULT_TOOL]
    # The conversation stays valid: every call has its result.
    assert robot.history[-1].is_tool_result


async def test_tool_way_with_other_tools_requires_a_tool_call() -> None:
    def lookup(name: str) -> float:
        """The amount a customer owes."""
        return 42.0

    p = ScriptedProvider([ToolCall("lookup", {"name": "Ada"}),
                          ToolCall(FINAL_RESULT_TOOL, {"customer": "Ada", "total": 42})])
    robot = Robot("clerk", system_prompt="s", provider=p, output_type=Invoice, tools=[lookup])
    result = await robot.arun("Invoice Ada")
    assert result.output_data.total == 42
    assert p.history[0].settings["tool_choice"] == "required"
    assert sorted(p.history[0].tool_names) == [FINAL_RESULT_TOOL, "lookup"]


async def test_a_text_answer_in_the_tool_way_is_accepted_when_it_validates_else_asked_again() -> None:
    p = ScriptedProvider(["I think it's Ada.", '```json\n{"customer": "Ada", "total": 2}\n```'])
    robot = Robot("clerk", system_prompt="s", provider=p, output_type=Invoice)
    result = await robot.arun("Invoice Ada")
    assert result.output_data == Invoice(customer="Ada", total=2)
    asked = p.history[1].messages[-1]
    assert asked.role == "user" and FINAL_RESULT_TOOL in asked.content


# -- failing clearly -----------------------------------------------------------------------------
async def test_the_retry_limit_fails_the_run_naming_the_schema_and_the_last_error(server: FakeLLMServer) -> None:
    server.enqueue("nope", "still nope", '{"customer": "Ada"}')
    robot = Robot("clerk", system_prompt="s", provider=provider(server, response_schema=True), output_type=Invoice,
                  output_retries=2)
    events, _ = await run_all(robot, "Invoice Ada")
    failed = events[-1]
    assert isinstance(failed, ev.RunFailed) and failed.error_type == "OutputValidationError"
    assert "'Invoice'" in failed.error and "after 3 tries" in failed.error and "total" in failed.error
    assert len(server.requests) == 3
    assert isinstance(failed.partial, RobotResult) and failed.partial.output_data is None
    with pytest.raises(Exception, match="Invoice"):
        await Robot("c", system_prompt="s", provider=ScriptedProvider(default="no"), output_type=Invoice,
                    output_retries=0).arun("x")


async def test_the_setting_gives_the_retry_limit(tmp_path: Path) -> None:
    from workspace.config import load_config

    config = load_config(None, overrides={"agent": {"output_retries": 0}})
    p = ScriptedProvider(["no", '{"customer": "A", "total": 1}'])
    robot = Robot("c", system_prompt="s", provider=p, output_type=Invoice, config=config)
    with pytest.raises(Exception, match="after 1 try"):
        await robot.arun("x")


# -- what output_type takes ----------------------------------------------------------------------
@dataclass
class Verdict:
    approved: bool
    reason: str


async def test_dataclasses_json_schemas_and_non_object_types() -> None:
    robot = Robot("judge", system_prompt="s", provider=ScriptedProvider(['{"approved": true, "reason": "fine"}'],
                                                                        response_schema=True), output_type=Verdict)
    result = await robot.arun("judge")
    assert result.output_data == Verdict(approved=True, reason="fine")
    assert result.to_dict()["output_data"] == {"approved": True, "reason": "fine"}

    schema = {"title": "Category", "type": "object", "properties": {"category": {"enum": ["billing", "tech"]}},
              "required": ["category"]}
    p = ScriptedProvider([ToolCall(FINAL_RESULT_TOOL, {"category": "sales"}),
                          ToolCall(FINAL_RESULT_TOOL, {"category": "billing"})])
    robot = Robot("router", system_prompt="s", provider=p, output_type=schema)
    assert (await robot.arun("route")).output_data == {"category": "billing"}

    p = ScriptedProvider([ToolCall(FINAL_RESULT_TOOL, {"result": ["a", "b"]})])
    robot = Robot("lister", system_prompt="s", provider=p, output_type=list[str])
    assert (await robot.arun("list")).output_data == ["a", "b"]
    assert OutputSchema.of(list[str]).wrapped and p.history[0].tools[0].parameters["required"] == ["result"]

    with pytest.raises(ConfigurationError, match="output_type"):
        Robot("bad", system_prompt="s", output_type="Invoice")
    with pytest.raises(OutputValidationError, match="not a valid JSON Schema"):
        OutputSchema.of({"type": "nonsense"})


async def test_a_run_can_ask_for_its_own_output_type() -> None:
    p = ScriptedProvider(['{"customer": "Ada", "total": 1}', "plain text"], response_schema=True)
    robot = Robot("clerk", system_prompt="s", provider=p)
    assert (await robot.arun("x", output_type=Invoice)).output_data == Invoice(customer="Ada", total=1)
    assert (await robot.arun("y")).output_data is None  # the next run answers in text again
    assert "response_format" not in p.history[1].settings


# -- robot files ---------------------------------------------------------------------------------
ROBOT_FILE = """---
name: triage
output_schema:
  title: Triage
  type: object
  properties:
    category: {type: string, enum: [billing, technical, general]}
    urgent: {type: boolean}
  required: [category, urgent]
---
Classify the request.
"""


async def test_front_matter_output_schema(tmp_path: Path) -> None:
    from workspace.schemas import SchemaError
    from workspace.templates import Template

    path = tmp_path / "triage.md"
    path.write_text(ROBOT_FILE)
    p = ScriptedProvider([ToolCall(FINAL_RESULT_TOOL, {"category": "billing", "urgent": False})])
    robot = Robot("triage", template=Template.load(path), provider=p)
    assert robot.output_schema is not None and robot.output_schema.name == "Triage"
    assert (await robot.arun("I was charged twice")).output_data == {"category": "billing", "urgent": False}

    bad = tmp_path / "bad.md"
    bad.write_text("---\noutput_schema: {type: nonsense}\n---\nHi\n")
    with pytest.raises(SchemaError, match=r"output_schema.*not a valid JSON Schema"):
        Template.load(bad)


# -- networks route on a structured field --------------------------------------------------------
async def test_a_route_decides_on_the_structured_output_field() -> None:
    schema = {"type": "object", "properties": {"category": {"type": "string"}, "note": {"type": "string"}},
              "required": ["category"]}
    # The tool way: the classifier's answer has no text at all, only the object.
    classifier = Robot("classifier", system_prompt="s", output_type=schema, provider=ScriptedProvider(
        [ToolCall(FINAL_RESULT_TOOL, {"category": "billing", "note": "mentions technical words"})]))
    billing = Robot("billing", system_prompt="b", provider=ScriptedProvider(["Refund on its way."]))
    technical = Robot("technical", system_prompt="t", provider=ScriptedProvider(["Restart it."]))
    net = Network("support")
    net.task("classifier", classifier)
    net.task("billing", billing, depends_on="optional")
    net.task("technical", technical, depends_on="optional")
    net.add_route(Route(match={"technical": "technical", "billing": "billing"}, field="category",
                        source="classifier"))
    result = await net.arun("I was charged twice")
    assert result.statuses == {"classifier": "done", "billing": "done", "technical": "skipped"}
    # The specialist got the customer's message; the classifier's text for people is its JSON.
    assert billing.provider.history[0].messages[-1].content == "I was charged twice"
    assert json.loads(result.tasks["classifier"].text) == {"category": "billing", "note": "mentions technical words"}
    # Without a rule, an "activate"/"route" field of the object picks the task.
    router = Robot("router", system_prompt="s", output_type={"type": "object", "properties": {"route": {}}},
                   provider=ScriptedProvider([ToolCall(FINAL_RESULT_TOOL, {"route": "technical"})]))
    net2 = Network("auto")
    net2.task("router", router)
    net2.task("technical", Robot("technical", system_prompt="t", provider=ScriptedProvider(["ok"])),
              depends_on="optional")
    assert (await net2.arun("hi")).statuses == {"router": "done", "technical": "done"}


# -- the command line ----------------------------------------------------------------------------
def test_cli_output_schema_plain_and_json(server: FakeLLMServer, tmp_path: Path) -> None:
    import subprocess

    schema = tmp_path / "invoice.json"
    schema.write_text(json.dumps({"title": "Invoice", "type": "object", "required": ["customer", "total"],
                                  "properties": {"customer": {"type": "string"}, "total": {"type": "number"}}}))
    server.enqueue(Reply.tool(FINAL_RESULT_TOOL, {"customer": "Ada"}),
                   Reply.tool(FINAL_RESULT_TOOL, {"customer": "Ada", "total": 7}))

    def robotlab(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ui.main", "run", "assistant", "Invoice Ada", "--no-record",
                               "--model", "openai/fake", "--api-base", server.base_url + "/v1",
                               "--output-schema", str(schema), *args], capture_output=True, text=True, timeout=120)

    plain = robotlab("--plain")
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout) == {"customer": "Ada", "total": 7}
    first = server.requests[0]
    assert first["tool_choice"] == "required"  # the assistant has tools of its own: a tool call is forced
    assert FINAL_RESULT_TOOL in [t["function"]["name"] for t in first["tools"]]

    server.enqueue(Reply.tool(FINAL_RESULT_TOOL, {"customer": "Bo", "total": 1}))
    lines = [json.loads(line) for line in robotlab("--json").stdout.splitlines()]
    assert lines[-1]["kind"] == ev.RunFinished.kind and lines[-1]["result"]["output_data"] == {"customer": "Bo",
                                                                                                "total": 1}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    failed = subprocess.run([sys.executable, "-m", "ui.main", "run", "assistant", "x", "--no-record",
                             "--output-schema", str(bad)], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2 and "--output-schema" in failed.stderr and "Traceback" not in failed.stderr


NETWORK = """\
name: triage
robots:
  classifier:
    system_prompt: Classify the request.
    output_schema:
      type: object
      properties: {category: {type: string, enum: [billing, technical]}}
      required: [category]
  billing: {system_prompt: You handle billing.}
  technical: {system_prompt: You handle technical problems.}
tasks:
  classifier:
    route: {field: category, match: {billing: billing, technical: technical}}
  billing: {depends_on: optional}
  technical: {depends_on: optional}
"""


async def test_a_network_file_routes_on_an_inline_robots_output_schema(tmp_path: Path) -> None:
    from workspace.network import load_network
    from workspace.providers.testing import FunctionProvider

    def model(messages: list[Any], info: Any) -> Any:
        if FINAL_RESULT_TOOL in [t.name for t in info.tools]:
            return ToolCall(FINAL_RESULT_TOOL, {"category": "technical"})
        return f"{info.system}: on it."

    path = tmp_path / "triage.yaml"
    path.write_text(NETWORK)
    net = load_network(path, provider=FunctionProvider(model))
    assert net.robots["classifier"].output_schema is not None
    result = await net.arun("The app crashes")
    assert result.statuses == {"classifier": "done", "billing": "skipped", "technical": "done"}
    assert result["classifier"].output_data == {"category": "technical"}
    assert result.last_text_content == "You handle technical problems.: on it."
