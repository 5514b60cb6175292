"""Tracing (workspace/tracing.py): runs as OpenTelemetry spans built from their events, captured with
the SDK's in-memory exporter: the parent/child shape (run -> model calls and tool calls; a robot used
as a tool under its call; a network's tasks), the GenAI attributes, and off by default."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from workspace import Robot, ScriptedProvider, ToolCall, tracing
from workspace.network import Network
from workspace.providers.testing import Fail


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(tracing.ENV_SWITCH, "true")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.set_tracer_provider(provider)
    yield exporter
    tracing.set_tracer_provider(None)


def tree(exporter: InMemorySpanExporter) -> list[tuple[int, str]]:
    """The spans as (depth, name), parents before children, siblings by start time."""
    finished = list(exporter.get_finished_spans())
    ids = {s.context.span_id for s in finished}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in finished:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        children.setdefault(parent, []).append(s)
    out: list[tuple[int, str]] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda x: x.start_time or 0):
            out.append((depth, s.name))
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return out


def span(exporter: InMemorySpanExporter, name: str) -> Any:
    return next(s for s in exporter.get_finished_spans() if s.name == name)


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def test_a_run_with_a_tool_call(spans: InMemorySpanExporter) -> None:
    robot = Robot("forecaster", system_prompt="s", tools=[weather], provider=ScriptedProvider(
        [["Checking. ", ToolCall("weather", {"city": "Oslo"}, id="w1")], "Sunny."], model_id="openai/gpt-4o-mini",
        label="openai/gpt-4o-mini"))
    result = await robot.arun("Weather in Oslo?")
    assert tree(spans) == [
        (0, "invoke_agent forecaster"),
        (1, "chat openai/gpt-4o-mini"),
        (1, "execute_tool weather"),
        (1, "chat openai/gpt-4o-mini"),
    ]
    run = span(spans, "invoke_agent forecaster")
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "forecaster"
    assert run.attributes["gen_ai.request.model"] == "openai/gpt-4o-mini"
    assert run.attributes["gen_ai.provider.name"] == "openai"
    assert run.attributes["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    assert run.attributes["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    chats = [s for s in spans.get_finished_spans() if s.name.startswith("chat")]
    assert all(c.attributes["gen_ai.operation.name"] == "chat" for c in chats)
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == result.usage.input_tokens
    tool = span(spans, "execute_tool weather")
    assert dict(tool.attributes) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
                                     "gen_ai.tool.call.id": "w1", "gen_ai.tool.type": "function"}
    # In time: the first model call, then the tool, then the second call, all inside the run.
    first, second = sorted(chats, key=lambda c: c.start_time)
    assert run.start_time <= first.start_time <= first.end_time <= tool.start_time
    assert tool.end_time <= second.start_time <= second.end_time <= run.end_time


async def test_a_robot_used_as_a_tool_nests_under_its_call(spans: InMemorySpanExporter) -> None:
    inner = Robot("helper", system_prompt="s", provider=ScriptedProvider(["It is sunny."]))
    outer = Robot("boss", system_prompt="s", robots=[inner],
                  provider=ScriptedProvider([ToolCall("helper", {"message": "Weather?"}), "Sunny."]))
    await outer.arun("go")
    assert tree(spans) == [
        (0, "invoke_agent boss"),
        (1, "chat scripted"),
        (1, "execute_tool helper"),
        (2, "invoke_agent helper"),
        (3, "chat scripted"),
        (1, "chat scripted"),
    ]
    inner_span = span(spans, "invoke_agent helper")
    assert inner_span.attributes["robotlab.parent_run_id"] == span(spans, "invoke_agent boss").attributes[
        "robotlab.run_id"]


async def test_a_network_traces_its_tasks(spans: InMemorySpanExporter) -> None:
    net = Network("pair")
    net.task("first", Robot("a", system_prompt="s", provider=ScriptedProvider(["one"])))
    net.task("second", Robot("b", system_prompt="s", provider=ScriptedProvider(["two"])), depends_on=["first"])
    await net.arun("go")
    assert tree(spans) == [
        (0, "invoke_agent pair"),
        (1, "task first"),
        (2, "invoke_agent a"),
        (3, "chat scripted"),
        (1, "task second"),
        (2, "invoke_agent b"),
        (3, "chat scripted"),
    ]
    assert span(spans, "task first").attributes["robotlab.task.status"] == "done"


async def test_failures_and_tool_errors_set_the_error_status(spans: InMemorySpanExporter) -> None:
    def broken() -> str:
        """Breaks."""
        raise RuntimeError("boom")

    robot = Robot("r", system_prompt="s", tools=[broken],
                  provider=ScriptedProvider([ToolCall("broken", {}), Fail("the model went away")]))
    with pytest.raises(Exception, match="went away"):
        await robot.arun("go")
    run = span(spans, "invoke_agent r")
    assert run.status.status_code == StatusCode.ERROR and run.attributes["error.type"] == "ProviderError"
    tool = span(spans, "execute_tool broken")
    assert tool.status.status_code == StatusCode.ERROR and "boom" in (tool.status.description or "")


async def test_an_embedders_span_is_the_parent(spans: InMemorySpanExporter) -> None:
    provider = tracing._provider
    with provider.get_tracer("app").start_as_current_span("handle request"):
        await Robot("r", system_prompt="s", provider=ScriptedProvider(["hi"])).arun("go")
    assert tree(spans) == [(0, "handle request"), (1, "invoke_agent r"), (2, "chat scripted")]


async def test_off_by_default_and_switched_by_setting_or_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from workspace.config import load_config

    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracing.ENV_SWITCH):
        monkeypatch.delenv(name, raising=False)
    assert tracing.wanted() is False and tracing.wanted(load_config(None)) is False
    run = Robot("r", system_prompt="s", provider=ScriptedProvider(["hi"])).stream("go")
    assert run._observers == ()  # nothing watches the stream
    await run.wait()
    assert tracing.wanted(load_config(None, overrides={"tracing": {"otel": True}})) is True
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert tracing.wanted() is True
    monkeypatch.setenv(tracing.ENV_SWITCH, "false")  # the setting's own variable wins
    assert tracing.wanted() is False
    monkeypatch.setenv(tracing.ENV_SWITCH, "true")
    assert tracing.wanted(load_config(None)) is True and tracing.available()


def test_the_otlp_exporter_is_used_when_nothing_else_is_set_up(monkeypatch: pytest.MonkeyPatch) -> None:
    tracing.set_tracer_provider(None)
    try:
        provider = tracing._own_provider()
        processors = provider._active_span_processor._span_processors
        assert [type(p.span_exporter).__name__ for p in processors] == ["OTLPSpanExporter"]
        assert provider.resource.attributes["service.name"] == "robotlab"
        provider.shutdown()
    finally:
        tracing.set_tracer_provider(None)
