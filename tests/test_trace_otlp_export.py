"""A recorded trace exported to OpenTelemetry: sent over OTLP/HTTP to a real loopback receiver (the spans decoded
as a collector decodes them), written as an OTLP JSON file, no secret in either, nothing sent unless configured."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.otlp_receiver import Receiver
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from workspace import events as ev
from workspace import tracing
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.robot import Robot
from workspace.secrets import forget_secrets, register_secret
from workspace.tools import tool

SECRET = "db-pass-7f3a9c1e5b"
KEY = "sk-otlp-test-0123456789abcdef"


@tool
def lookup(query: str) -> str:
    """Look something up."""
    if "fail" in query:
        raise ValueError(f"could not connect with password {SECRET}")
    return f"Result for {query}"


@pytest.fixture
def recorded() -> Iterator[list[ev.Event]]:
    """A real run on loopback: a tool call that works, one that fails with a secret in its error, an answer."""
    register_secret(SECRET, name="DB_PASSWORD")
    try:
        with FakeLLMServer() as server:
            server.enqueue(Reply.tool("lookup", {"query": "tea"}, usage=(120, 9)))
            server.enqueue(Reply.tool("lookup", {"query": "fail now"}, usage=(150, 7)))
            server.enqueue(Reply.say("Tea is green.", usage=(190, 5)))
            provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key=KEY)
            robot = Robot("helper", system_prompt="You look things up.", provider=provider, tools=[lookup],
                          temperature=0.3)
            events: list[ev.Event] = []

            async def run() -> None:
                events.extend([e async for e in robot.stream(f"What is tea? My password is {SECRET}")])

            import asyncio

            asyncio.run(run())
        yield events
    finally:
        forget_secrets([SECRET])


def attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


def test_a_trace_is_sent_as_spans_with_the_genai_attributes_and_no_secret(recorded: list[ev.Event],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(recorded[-1], ev.RunFinished)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    with Receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        endpoint = tracing.export_endpoint()
        assert endpoint == receiver.url + "/v1/traces"
        register_secret(SECRET, name="DB_PASSWORD")
        try:
            sent = tracing.send_trace(recorded, endpoint=endpoint)
        finally:
            forget_secrets([SECRET])
    [(path, headers, body)] = receiver.posts
    assert path == "/v1/traces" and headers["content-type"] == "application/x-protobuf"
    assert SECRET.encode() not in body and KEY.encode() not in body
    request = ExportTraceServiceRequest.FromString(body)
    [resource_spans] = request.resource_spans
    assert attributes(resource_spans.resource)["service.name"] == "robotlab"
    spans = [s for scope in resource_spans.scope_spans for s in scope.spans]
    assert len(spans) == sent == 1 + 3 + 2  # the run, three model calls, two tool calls
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    [run] = by_name["invoke_agent helper"]
    chats = by_name["chat openai/fake"]
    tools = by_name["execute_tool lookup"]
    assert len(chats) == 3 and len(tools) == 2
    assert all(s.parent_span_id == run.span_id and s.trace_id == run.trace_id for s in chats + tools)
    chat = [attributes(s) for s in sorted(chats, key=lambda s: s.start_time_unix_nano)]
    assert [(a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) for a in chat] == [(120, 9), (150, 7),
                                                                                               (190, 5)]
    assert all(a["gen_ai.system"] == "openai" and a["gen_ai.request.model"] == "openai/fake" for a in chat)
    assert all(a["gen_ai.request.temperature"] == pytest.approx(0.3) for a in chat)
    # The run's totals are the usage the provider reported.
    assert (attributes(run)["gen_ai.usage.input_tokens"], attributes(run)["gen_ai.usage.output_tokens"]) == (460, 21)
    failed = next(s for s in tools if s.status.code == 2)
    assert "<DB_PASSWORD>" in failed.status.message and SECRET not in failed.status.message


def test_the_otlp_json_file_and_nothing_sent_unless_configured(recorded: list[ev.Event],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert tracing.export_endpoint() is None

    class Config:
        def get(self, key: str) -> Any:
            return {"tracing.endpoint": "http://collector.example:4318"}.get(key)

    assert tracing.export_endpoint(Config()) == "http://collector.example:4318/v1/traces"
    register_secret(SECRET, name="DB_PASSWORD")
    try:
        text = tracing.otlp_json(recorded)
    finally:
        forget_secrets([SECRET])
    assert SECRET not in text and KEY not in text
    data = json.loads(text)
    spans = [s for rs in data["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == 6
    run = next(s for s in spans if s["name"] == "invoke_agent helper")
    assert len(run["traceId"]) == 32 and len(run["spanId"]) == 16 and int(run["spanId"], 16)  # hex, not base64
    assert all(s["parentSpanId"] == run["spanId"] for s in spans if s is not run)
    assert {s["kind"] for s in spans} <= {1, 3}  # integers: INTERNAL, CLIENT


def test_a_receiver_that_refuses_says_what_to_do(recorded: list[ev.Event]) -> None:
    with Receiver() as receiver:
        receiver.server.RequestHandlerClass.do_POST = _refuse  # type: ignore[attr-defined]
        with pytest.raises(tracing.TraceExportError, match="OTEL_EXPORTER_OTLP_ENDPOINT"):
            tracing.send_trace(recorded, endpoint=receiver.url + "/v1/traces", timeout=2.0)


def _refuse(handler: BaseHTTPRequestHandler) -> None:
    handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    handler.send_response(400)
    handler.send_header("Content-Length", "0")
    handler.end_headers()
