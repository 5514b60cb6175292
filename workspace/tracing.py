"""Tracing: runs exported as OpenTelemetry spans, built from their events.

Off by default. On when any of these says so: the setting ``tracing.otel: true`` (config.yaml, or
``ROBOT_LAB_TRACING__OTEL=true``), the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) being set, or ``robotlab run/network run/chat --otel``.
Spans go over OTLP/HTTP (``pip install 'robotlab-workspace[otel]'``: opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-http) to the endpoint the standard ``OTEL_EXPORTER_OTLP_*``
variables name (default ``http://localhost:4318``), through the tracer provider the program set
as OpenTelemetry's global one when it has one (an embedding program keeps its own set-up), else
through one of ours (``service.name`` = ``robotlab``, or ``OTEL_SERVICE_NAME``).

It is an event consumer (:class:`RunTracer`, an observer of the run's event stream,
:meth:`workspace.agent.EventRun.add_observer`): nothing in the agent loop knows about it, and when
it is off a run pays one check when it starts. Spans, after OpenTelemetry's GenAI semantic
conventions:

- ``invoke_agent <robot>`` for a run (a network's run too), from ``run_started`` to its terminal
  event: ``gen_ai.operation.name`` ``invoke_agent``, ``gen_ai.agent.name``, ``gen_ai.request.model``,
  ``gen_ai.provider.name``, the run's ``gen_ai.usage.input_tokens`` / ``output_tokens``, ``error.type``
  and an error status when it failed;
- ``chat <model>`` for each model call, ending at its ``usage`` event: ``gen_ai.operation.name``
  ``chat``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``;
- ``execute_tool <tool>`` for each tool call, from ``tool_use`` to its result or error:
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``, approvals as span events;
- ``task <name>`` for each task of a network, between the network's span and the task robot's run.

A run inside a run nests: a robot used as a tool under its ``execute_tool`` span, a network's
task run under its ``task`` span. Message contents and tool arguments are not exported; error messages
go through :func:`workspace.secrets.redact`. Each span also carries ``gen_ai.system`` (the provider of
the model id, ``_OTHER`` when the id names none) and a model call's ``gen_ai.request.temperature`` /
``max_tokens`` when its recorded request set them.

A recorded trace is exported the same way, after the fact (the Trace dock's Export trace…):
:func:`spans_of` replays a thread's events through :class:`RunTracer` into the SDK's in-memory exporter,
:func:`otlp_json` writes those spans as an OTLP JSON file (``ExportTraceServiceRequest`` in the OTLP/JSON
encoding: hex ids, integer enums), and :func:`send_trace` sends them over OTLP/HTTP to
:func:`export_endpoint`: the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``
or the setting ``tracing.endpoint``. With none of them set, nothing is sent anywhere. This is the one module
that imports OpenTelemetry, always inside the function that needs it (never at start-up).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from workspace import events as ev
from workspace.paths import env_values
from workspace.secrets import redact

__all__ = ["ENV_SWITCH", "RunTracer", "TraceExportError", "attach", "available", "export_endpoint", "otlp_json",
           "send_trace", "set_tracer_provider", "spans_of", "wanted"]

log = logging.getLogger(__name__)

#: The environment variable of the ``tracing.otel`` setting.
ENV_SWITCH = "ROBOT_LAB_TRACING__OTEL"
_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
#: The variables :func:`wanted` reads: the switch first.
_WATCHED = (ENV_SWITCH, *_ENDPOINT_VARS)
_TRUE = frozenset({"1", "true", "yes", "on"})
INSTRUMENTATION = "robotlab.workspace"

_provider: Any = None
_warned = False


def wanted(config: Any = None) -> bool:
    """Whether runs are traced: the setting, its environment variable, or an OTLP endpoint (cheap: asked for every
    run, the variables read with no exception for those not set, :func:`workspace.paths.env_values`)."""
    switch, *endpoints = env_values(_WATCHED)
    if switch is not None:
        return str(os.environ.get(ENV_SWITCH) or "").strip().lower() in _TRUE
    if config is not None:
        try:
            if config.get("tracing.otel"):
                return True
        except Exception:  # a configuration without the section
            pass
    return any(endpoints)


def available() -> bool:
    """Whether the OpenTelemetry SDK is installed (the ``otel`` extra)."""
    import importlib.util

    return importlib.util.find_spec("opentelemetry.sdk") is not None


def set_tracer_provider(provider: Any) -> None:
    """Trace runs through ``provider`` (an SDK ``TracerProvider``; tests give one with an in-memory
    exporter). ``None``: back to the default (the global provider, or one of ours exporting OTLP)."""
    global _provider
    _provider = provider


def _tracer() -> Any:
    global _provider
    from opentelemetry import trace

    if _provider is None:
        current = trace.get_tracer_provider()
        # The program set up an SDK provider: use it; else one of ours.
        _provider = current if hasattr(current, "add_span_processor") else _own_provider()
    return _provider.get_tracer(INSTRUMENTATION)


def _resource() -> Any:
    from opentelemetry.sdk.resources import Resource

    from workspace.version import __version__

    return Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "robotlab",
                            "service.version": __version__})


def _own_provider() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=_resource())
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        log.warning("tracing is on but the OTLP exporter is missing: pip install 'robotlab-workspace[otel]'")
        return provider
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def attach(run: Any, config: Any = None) -> RunTracer | None:
    """Trace ``run`` (an AgentRun or NetworkRun) when tracing is on; None when it is off."""
    if not wanted(config):
        return None
    global _warned
    if not available():
        if not _warned:
            _warned = True
            log.warning("tracing is on (tracing.otel, %s or an OTLP endpoint) but OpenTelemetry is not installed: "
                        "pip install 'robotlab-workspace[otel]'", ENV_SWITCH)
        return None
    tracer = RunTracer(_tracer(), root_run_id=str(getattr(run, "run_id", "")))
    run.add_observer(tracer)
    return tracer


def _ns(ts: float) -> int:
    return int(ts * 1_000_000_000)


def _provider_name(model: str | None) -> str | None:
    if model and "/" in model:
        return model.split("/", 1)[0]
    return None


def _model_attributes(model: str) -> dict[str, Any]:
    """``gen_ai.request.model`` and the provider's name (``gen_ai.provider.name``, and ``gen_ai.system`` as the
    older conventions call it: ``_OTHER`` when the model's id names no provider)."""
    attributes: dict[str, Any] = {"gen_ai.request.model": model}
    provider = _provider_name(model)
    if provider:
        attributes["gen_ai.provider.name"] = provider
    attributes["gen_ai.system"] = provider or "_OTHER"
    return attributes


@dataclass(slots=True)
class _RunSpans:
    span: Any
    robot: str
    model: str | None = None
    #: When the model call under way began (run start, or the end of the last tool call).
    call_start: float | None = None
    #: Text or tool calls came in this model call (a call without a usage event still gets its span).
    call_seen: bool = False
    tools: dict[str, Any] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    #: The parameters of the model call under way's request (its recorded ``model_request``).
    request: dict[str, Any] = field(default_factory=dict)
    #: The last model call's span ended with its usage (its final text comes after it: not another call).
    reported: bool = False


class RunTracer:
    """Spans for one run and the runs inside it, from its events (see the module docstring).

    Call it with every event of the run's stream, in order (an observer of the run).
    """

    def __init__(self, tracer: Any, *, root_run_id: str = "") -> None:
        from opentelemetry import context

        self.tracer = tracer
        self.root_run_id = root_run_id
        #: The context current when the run started: an embedding program's span becomes its parent.
        self._outer = context.get_current()
        self._runs: dict[str, _RunSpans] = {}
        self._tasks: dict[tuple[str, str], Any] = {}

    # -- the stream ----------------------------------------------------------------------------------
    def __call__(self, event: ev.Event) -> None:
        match event:
            case ev.RunStarted():
                self._run_started(event)
            case ev.ModelRequest():
                self._request(event)
            case ev.Usage():
                self._model_call(event, usage=event)
            case ev.TextDelta() | ev.Text() | ev.ReasoningDelta() | ev.Reasoning():
                run = self._runs.get(event.run_id)
                if run is not None:
                    run.call_seen = True
            case ev.RunStatus():
                self._status(event)
            case ev.ToolUse():
                self._tool_use(event)
            case ev.ApprovalRequested() | ev.ApprovalDecided():
                self._approval(event)
            case ev.ToolResult() | ev.ToolError():
                self._tool_done(event)
            case ev.TaskStarted():
                self._task_started(event)
            case ev.TaskFinished():
                self._task_finished(event)
            case ev.RunFinished() | ev.RunFailed() | ev.RunCancelled():
                self._run_ended(event)
            case _:
                pass  # the other kinds (memory, changes, MCP notices, context, model switches): not GenAI spans

    # -- runs ------------------------------------------------------------------------------------------
    def _parent_context(self, event: ev.Event) -> Any:
        from opentelemetry import trace

        parent_run = self._runs.get(event.parent_run_id or "")
        if parent_run is not None:
            tool = parent_run.tools.get(event.parent_tool_id or "")
            if tool is not None:
                return trace.set_span_in_context(tool)
        task = self._tasks.get((event.parent_run_id or "", event.task or ""))
        if task is not None:
            return trace.set_span_in_context(task)
        if parent_run is not None:
            return trace.set_span_in_context(parent_run.span)
        return self._outer

    def _run_started(self, event: ev.RunStarted) -> None:
        from opentelemetry.trace import SpanKind

        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": event.robot,
            "robotlab.run_id": event.run_id,
        }
        model = event.model if event.model and " " not in event.model else None  # an id, not a label
        if model:
            attributes.update(_model_attributes(model))
        if event.task:
            attributes["robotlab.task"] = event.task
        if event.parent_run_id:
            attributes["robotlab.parent_run_id"] = event.parent_run_id
        span = self.tracer.start_span(f"invoke_agent {event.robot}", context=self._parent_context(event),
                                      kind=SpanKind.INTERNAL, attributes=attributes, start_time=_ns(event.ts))
        self._runs[event.run_id] = _RunSpans(span=span, robot=event.robot, model=model, call_start=event.ts)

    def _run_ended(self, event: ev.TerminalEvent) -> None:
        from opentelemetry.trace import Status, StatusCode

        run = self._runs.pop(event.run_id, None)
        if run is None:
            return
        if run.call_start is not None and run.call_seen:
            self._model_call(event, usage=None)  # a model call that reported no usage
        for call_id, tool in list(run.tools.items()):  # calls that never finished
            tool.set_status(Status(StatusCode.ERROR, "the run ended before the tool call finished"))
            tool.end(end_time=_ns(event.ts))
            run.tools.pop(call_id, None)
        span = run.span
        span.set_attribute("gen_ai.usage.input_tokens", run.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", run.output_tokens)
        match event:
            case ev.RunFinished():
                reason = getattr(event.result, "stop_reason", None)
                if reason:
                    span.set_attribute("robotlab.stop_reason", str(reason))
            case ev.RunFailed():
                span.set_attribute("error.type", event.error_type or "Error")
                span.set_status(Status(StatusCode.ERROR, redact(event.error)))
            case ev.RunCancelled():
                span.set_attribute("robotlab.cancelled", redact(event.reason))
        span.end(end_time=_ns(event.ts))

    # -- model calls -------------------------------------------------------------------------------------
    def _model_call(self, event: ev.Event, *, usage: ev.Usage | None) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind

        run = self._runs.get(event.run_id)
        if run is None:
            return
        model = (usage.model if usage is not None else None) or run.model or "model"
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", **_model_attributes(model)}
        for key in ("temperature", "max_tokens", "top_p"):
            value = run.request.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes[f"gen_ai.request.{key}"] = value
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
            if usage.cost is not None:
                attributes["robotlab.cost_usd"] = usage.cost
            if usage.estimated:  # the server sent no usage: the counts are estimates
                attributes["robotlab.usage_estimated"] = True
            if usage.reasoning_tokens:
                attributes["gen_ai.usage.reasoning_tokens"] = usage.reasoning_tokens
            run.input_tokens += usage.input_tokens
            run.output_tokens += usage.output_tokens
            if run.model is None and usage.model:  # the run began with a provider's label: now the id
                run.model = usage.model
                run.span.set_attribute("gen_ai.request.model", usage.model)
        start = run.call_start if run.call_start is not None else event.ts
        span = self.tracer.start_span(f"chat {model}", context=trace.set_span_in_context(run.span),
                                      kind=SpanKind.CLIENT, attributes=attributes, start_time=_ns(start))
        span.end(end_time=_ns(event.ts))
        run.call_start = None
        run.call_seen = False
        run.reported = usage is not None

    def _request(self, event: ev.ModelRequest) -> None:
        """The model call starts when its request is sent (its parameters are the span's)."""
        run = self._runs.get(event.run_id)
        if run is None:
            return
        if run.call_seen and run.call_start is not None and not run.reported:  # the call before reported no usage
            self._model_call(event, usage=None)
        run.call_start, run.call_seen, run.reported = event.ts, False, False
        run.request = {**(run.request if event.reused_from else {}), **event.body}

    def _status(self, event: ev.RunStatus) -> None:
        """Retries, fallbacks and notices as events of the run's span (the waits in between are not)."""
        run = self._runs.get(event.run_id)
        if run is None or event.state not in ("retrying", "fallback", "notice"):
            return
        attributes: dict[str, Any] = {"robotlab.state": event.state}
        if event.retry_in is not None:
            attributes["robotlab.retry_in"] = event.retry_in
        if event.state == "fallback" and event.model:
            attributes["gen_ai.request.model"] = event.model
        run.span.add_event(f"run_status {event.state}", attributes, timestamp=_ns(event.ts))

    # -- tool calls --------------------------------------------------------------------------------------
    def _tool_use(self, event: ev.ToolUse) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind

        run = self._runs.get(event.run_id)
        if run is None:
            return
        if run.call_start is not None and run.call_seen:
            self._model_call(event, usage=None)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.name,
            "gen_ai.tool.call.id": event.id,
            "gen_ai.tool.type": "extension" if event.server else "function",
        }
        if event.server:
            attributes["robotlab.mcp_server"] = event.server
        run.tools[event.id] = self.tracer.start_span(
            f"execute_tool {event.name}", context=trace.set_span_in_context(run.span), kind=SpanKind.INTERNAL,
            attributes=attributes, start_time=_ns(event.ts))

    def _approval(self, event: ev.ApprovalRequested | ev.ApprovalDecided) -> None:
        run = self._runs.get(event.run_id)
        tool = run.tools.get(event.id) if run is not None else None
        if tool is None:
            return
        if isinstance(event, ev.ApprovalRequested):
            tool.add_event("approval_requested", timestamp=_ns(event.ts))
        else:
            tool.add_event("approval_decided", {"robotlab.decision": event.decision, "robotlab.scope": event.scope},
                           timestamp=_ns(event.ts))

    def _tool_done(self, event: ev.ToolResult | ev.ToolError) -> None:
        from opentelemetry.trace import Status, StatusCode

        run = self._runs.get(event.run_id)
        if run is None:
            return
        span = run.tools.pop(event.id, None)
        if span is None:
            return
        if isinstance(event, ev.ToolError):
            error = event.error
            message = error.get("message", error) if isinstance(error, dict) else error
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, redact(str(message))[:500]))
        span.end(end_time=_ns(event.ts))
        if not run.tools:
            run.call_start = event.ts  # the next model call starts when the turn's tools are done

    # -- network tasks -------------------------------------------------------------------------------------
    def _task_started(self, event: ev.TaskStarted) -> None:
        from opentelemetry import trace

        run = self._runs.get(event.run_id)
        if run is None or not event.task:
            return
        self._tasks[(event.run_id, event.task)] = self.tracer.start_span(
            f"task {event.task}", context=trace.set_span_in_context(run.span),
            attributes={"robotlab.task": event.task, "gen_ai.agent.name": event.robot},
            start_time=_ns(event.ts))

    def _task_finished(self, event: ev.TaskFinished) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self._tasks.pop((event.run_id, event.task or ""), None)
        if span is None:
            return
        span.set_attribute("robotlab.task.status", event.status)
        if event.status == "failed":
            span.set_status(Status(StatusCode.ERROR, redact(str(event.error or "failed"))))
        span.end(end_time=_ns(event.ts))


    # -- the end of a recorded trace ------------------------------------------------------------------------
    def end_open(self, ts: float) -> None:
        """End what is still open at ``ts`` (a trace exported while its run goes on): marked unfinished."""
        for run_id in list(self._runs):
            run = self._runs.pop(run_id)
            for tool in run.tools.values():
                tool.set_attribute("robotlab.unfinished", True)
                tool.end(end_time=_ns(ts))
            run.span.set_attribute("robotlab.unfinished", True)
            run.span.set_attribute("gen_ai.usage.input_tokens", run.input_tokens)
            run.span.set_attribute("gen_ai.usage.output_tokens", run.output_tokens)
            run.span.end(end_time=_ns(ts))
        for key in list(self._tasks):
            self._tasks.pop(key).end(end_time=_ns(ts))


# -- a recorded trace, exported ---------------------------------------------------------------------------


class TraceExportError(Exception):
    """A trace could not be sent: the message says why and what to do."""


def export_endpoint(config: Any = None) -> str | None:
    """Where a trace export sends its spans (the full URL of OTLP/HTTP's traces), or None: nowhere.

    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it is, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` or the setting
    ``tracing.endpoint`` with ``/v1/traces`` added (the variables' own rules)."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not base and config is not None:
        try:
            base = str(config.get("tracing.endpoint") or "").strip()
        except Exception:  # a configuration without the key
            base = ""
    if not base:
        return None
    return base if base.rstrip("/").endswith("/v1/traces") else base.rstrip("/") + "/v1/traces"


def spans_of(events: list[ev.Event]) -> list[Any]:
    """The spans of a recorded trace (the SDK's ``ReadableSpan``), as :class:`RunTracer` makes them live; what
    is still open at the last event ends there, marked ``robotlab.unfinished``."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=_resource())
    provider.add_span_processor(SimpleSpanProcessor(memory))
    from opentelemetry import context

    token = context.attach(context.Context())  # a recorded trace is a trace of its own, under nobody's span
    try:
        tracer = RunTracer(provider.get_tracer(INSTRUMENTATION))
    finally:
        context.detach(token)
    for event in events:
        tracer(event)
    if events:
        tracer.end_open(max(e.ts for e in events))
    provider.shutdown()
    return list(memory.get_finished_spans())


def _hex_ids(value: Any) -> Any:
    """OTLP/JSON's ids are hex, where protobuf's JSON mapping writes bytes as base64."""
    import base64

    if isinstance(value, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str)
                    else _hex_ids(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def otlp_json(events: list[ev.Event]) -> str:
    """The spans of a recorded trace as an OTLP JSON file (what an OTLP/HTTP receiver takes as
    ``application/json``; secrets masked)."""
    import json

    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    data = _hex_ids(MessageToDict(encode_spans(spans_of(events)), use_integers_for_enums=True))
    return redact(json.dumps(data, indent=2, ensure_ascii=False))


def send_trace(events: list[ev.Event], *, endpoint: str, timeout: float = 10.0) -> int:
    """Send the spans of a recorded trace to ``endpoint`` over OTLP/HTTP (protobuf; headers from
    ``OTEL_EXPORTER_OTLP_HEADERS``); the number of spans sent. Blocking: call it off the event loop.

    Raises :class:`TraceExportError` when the receiver did not take them."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    spans = spans_of(events)
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    try:
        result = exporter.export(spans)
    finally:
        exporter.shutdown()
    if result is not SpanExportResult.SUCCESS:
        raise TraceExportError(
            f"The OpenTelemetry endpoint {redact(endpoint)} did not take the trace's {len(spans)} spans: check that "
            "a collector listens there, or change OTEL_EXPORTER_OTLP_ENDPOINT (or tracing.endpoint in config.yaml)")
    return len(spans)
