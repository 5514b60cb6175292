"""The trace of a thread as a tree, built from its events (Qt-free: the Trace dock's view sits over it).

A thread's runs are its top nodes; under a run, its model calls in order (one runs from the model's
first output to the results of the tools it asked for; the ``usage`` the provider reported for it
gives its tokens and cost); under a model call, the text it answered and
the tool calls it asked for; under a tool call, its request and its response (for an MCP server's tool,
shaped as the JSON-RPC ``tools/call`` it was, with the result the server sent), its approval, and the
runs it started (a robot used as a tool). A network's task runs sit under the network's run. Events
carry their run's id and their parent's (``parent_run_id``, ``parent_tool_id``): that is all the tree
needs, so live events are added one by one as they come (:meth:`TraceTree.add`).

Tokens and cost: a model call's are what the provider reported for it; any other node's are the sum
of the model calls beneath it — so a run's totals are the usage its provider reported (with its
nested runs'). Everything shown or exported goes through :func:`workspace.secrets.redact`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workspace import events as ev
from workspace.context.requests import whole
from workspace.secrets import redact, redactor

__all__ = ["TraceNode", "TraceTree", "build_tree"]

#: Events the tree does not show as nodes of their own (folded into their model call's text).
_FOLDED = (ev.TextDelta, ev.ReasoningDelta)


@dataclass(eq=False, slots=True)
class TraceNode:
    """One node: what it is (``kind``: run, model_call, text, tool_call, request, response, approval, message
    (between robots on a bus), event),
    its label, when it started and ended, its own usage (model calls) and the data its detail shows."""

    kind: str
    label: str
    start: float = 0.0
    end: float | None = None
    parent: TraceNode | None = None
    children: list[TraceNode] = field(default_factory=list)
    #: A model call's own usage (what the provider reported); 0 elsewhere.
    own_input_tokens: int = 0
    own_output_tokens: int = 0
    own_cost: float | None = None
    #: The run's id (every node of a run), the tool call's id (tool calls and what is under them).
    run_id: str = ""
    call_id: str = ""
    #: What the detail pane shows (JSON-ready, redacted when shown or exported).
    data: Any = None
    #: A tool call's name and arguments (for "Run again").
    tool: str = ""
    arguments: Any = None
    #: A tool call's result: ``{"data": ...}`` or ``{"error": ...}`` (None: not yet).
    result: Any = None
    #: A model call's (and its request node's) request as sent, whole: shown in the detail, not searched or
    #: exported (``data`` holds what the record keeps: what changed since the request before).
    request: dict[str, Any] | None = None
    #: This node's place among its parent's children (or among the tree's runs).
    pos: int = 0
    #: Sums of the model calls beneath (kept as usage arrives).
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    def add(self, child: TraceNode) -> TraceNode:
        child.parent = self
        child.pos = len(self.children)
        self.children.append(child)
        return child

    @property
    def duration(self) -> float | None:
        return None if self.end is None else max(0.0, self.end - self.start)

    def walk(self) -> Iterator[TraceNode]:
        yield self
        for child in self.children:
            yield from child.walk()

    def text(self, mask: Callable[[str], str] = redact) -> str:
        """What a search looks in: the label and the data (through ``mask``: the secrets masked)."""
        data = "" if self.data is None else _json(self.data)
        return mask(f"{self.kind} {self.label} {self.tool} {data}").lower()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "label": redact(self.label), "start": self.start,
                               "end": self.end, "input_tokens": self.input_tokens,
                               "output_tokens": self.output_tokens, "cost": self.cost}
        if self.run_id:
            out["run_id"] = self.run_id
        if self.call_id:
            out["call_id"] = self.call_id
        if self.data is not None:
            out["data"] = json.loads(redact(_json(self.data)))
        if self.children:
            out["children"] = [c.to_dict() for c in self.children]
        return out


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else _json(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _wire_name(name: str, server: str) -> str:
    """A server's tool as the server names it (the robot sees it as ``<server>__<tool>``)."""
    prefix = f"{server}__"
    return name[len(prefix):] if name.startswith(prefix) else name


class _Run:
    """A run being built: its node, its open model call, its tool calls by id."""

    __slots__ = ("call", "calls", "node", "since", "steps")

    def __init__(self, node: TraceNode) -> None:
        self.node = node
        #: When the model was last asked (the run's start, the last tool result): a model call's start.
        self.since = node.start
        self.call: TraceNode | None = None
        self.calls: dict[str, TraceNode] = {}
        self.steps = 0


class TraceTree:
    """The tree of a thread's events; :meth:`add` takes them in order (live or read back)."""

    def __init__(self) -> None:
        self.roots: list[TraceNode] = []
        self._runs: dict[str, _Run] = {}
        self.events = 0
        #: The requests as sent, whole, by id (a request records only what changed since the one it names).
        self._requests: dict[str, dict[str, Any]] = {}
        #: Each node's searchable text, kept between searches (typing a word searches at each key) until an
        #: event changes the tree.
        self._texts: dict[int, str] = {}
        #: Where each bus message's node went, by the message's key (its reply goes beside it).
        self._messages: dict[str, TraceNode] = {}

    # -- building ----------------------------------------------------------------------------------
    def extend(self, events: Iterable[ev.Event]) -> None:
        for event in events:
            self.add(event)

    def add(self, event: ev.Event) -> None:
        """Place ``event`` in the tree (a text delta only extends its model call's time)."""
        self.events += 1
        if self._texts:
            self._texts.clear()
        run = self._run(event)
        node = run.node
        node.end = event.ts if node.end is None or event.ts > node.end else node.end
        if isinstance(event, _FOLDED):
            self._model_call(run, event).end = event.ts
            return
        match event:
            case ev.RunStarted():
                node.start = run.since = event.ts
                node.end = None
                node.label = self._run_label(event)
                node.data = {"robot": event.robot, "model": event.model, "message": event.message,
                             "task": event.task}
            case ev.ModelRequest():
                self._request(run, event)
            case ev.Text() | ev.Reasoning():
                call = self._model_call(run, event)
                call.end = event.ts
                label = "Thinking" if isinstance(event, ev.Reasoning) else "Answer"
                call.add(TraceNode("text", f"{label}: {_short(event.text)}", event.ts, event.ts, run_id=run.node.run_id,
                                   data={"text": event.text}))
                response = call.data.setdefault("response", {})
                key = "reasoning" if isinstance(event, ev.Reasoning) else "text"
                response[key] = response.get(key, "") + event.text
            case ev.ToolUse():
                call = self._model_call(run, event)
                call.end = event.ts
                response = call.data.setdefault("response", {})
                response.setdefault("tool_calls", []).append({"id": event.id, "name": event.name,
                                                              "arguments": event.input})
                tool = call.add(TraceNode("tool_call", f"{event.name} {_short(event.input, 60)}", event.ts,
                                          run_id=run.node.run_id, call_id=event.id, tool=event.name,
                                          arguments=event.input,
                                          data={"id": event.id, "name": event.name, "server": event.server,
                                                "arguments": event.input}))
                run.calls[event.id] = tool
                if event.server:
                    tool.add(TraceNode("request", f"MCP request → {event.server}", event.ts, event.ts,
                                       run_id=run.node.run_id, call_id=event.id,
                                       data={"jsonrpc": "2.0", "method": "tools/call",
                                             "params": {"name": _wire_name(event.name, event.server),
                                                        "arguments": event.input}}))
                else:
                    tool.add(TraceNode("request", "Request", event.ts, event.ts, run_id=run.node.run_id,
                                       call_id=event.id, data={"name": event.name, "arguments": event.input}))
            case ev.ToolResult() | ev.ToolError():
                run.call = None  # the model's next answer is another call, asked now
                run.since = event.ts
                tool = self._tool(run, event.id, event.name, event.ts)
                tool.end = event.ts
                if isinstance(event, ev.ToolResult):
                    payload = event.payload  # {"data": ...}, as the model saw it (as a replay reads it)
                    tool.result = {"data": payload.get("data") if isinstance(payload, dict) else payload}
                    body: Any = {"result": event.raw if event.raw is not None else event.payload}
                else:
                    tool.result = {"error": event.error}
                    body = {"error": event.raw if event.raw is not None else event.error}
                tool.start = min(tool.start, event.ts - event.duration) if event.duration else tool.start
                ok = "ok" if isinstance(event, ev.ToolResult) else "error"
                label = f"MCP response ← {event.server} ({ok})" if event.server else f"Response ({ok})"
                data = {"jsonrpc": "2.0", **body} if event.server else body
                tool.add(TraceNode("response", label, event.ts, event.ts, run_id=run.node.run_id,
                                   call_id=event.id, data=data))
                tool.data = {**(tool.data or {}), "result": tool.result, "duration": event.duration}
            case ev.ApprovalRequested() | ev.ApprovalDecided():
                tool = self._tool(run, event.id, event.name, event.ts)
                what = (f"Approval: {event.decision} ({event.scope})" if isinstance(event, ev.ApprovalDecided)
                        else "Approval asked")
                tool.add(TraceNode("approval", what, event.ts, event.ts, run_id=run.node.run_id, call_id=event.id,
                                   data=event.to_dict()))
            case ev.ToolProgress() | ev.ToolOutput():
                tool = self._tool(run, event.id, event.name, event.ts)
                tool.end = event.ts if tool.end is None or event.ts > tool.end else tool.end
                if isinstance(event, ev.ToolOutput):
                    data = tool.data if isinstance(tool.data, dict) else {}
                    data["output"] = data.get("output", "") + event.text
                    tool.data = data
            case ev.Usage():
                if run.call is not None and "usage" in run.call.data:  # another call with no tool between
                    run.call = None
                call = self._model_call(run, event)
                call.end = event.ts
                call.own_input_tokens, call.own_output_tokens, call.own_cost = (
                    event.input_tokens, event.output_tokens, event.cost)
                call.label = f"Model call {run.steps} · {event.model or '?'}"
                call.data["usage"] = {"input_tokens": event.input_tokens, "output_tokens": event.output_tokens,
                                      "cost": event.cost, "reasoning_tokens": event.reasoning_tokens,
                                      "estimated": event.estimated}
                self._count(call, event.input_tokens, event.output_tokens, event.cost)
            case ev.RunFinished() | ev.RunFailed() | ev.RunCancelled():
                node.end = event.ts
                run.call = None
                outcome = {ev.RunFinished: "finished", ev.RunFailed: "failed", ev.RunCancelled: "cancelled"}
                node.data = {**(node.data or {}), "outcome": outcome[type(event)]}
                if isinstance(event, ev.RunFailed):
                    node.data["error"] = event.error
            case ev.RunStatus():  # connecting, waiting, retrying: the run's detail, not steps of their own
                statuses = (node.data if isinstance(node.data, dict) else {}).get("statuses", [])
                statuses.append(f"{event.state}: {event.detail}" if event.detail else event.state)
                node.data = {**(node.data or {}), "statuses": statuses[-20:]}
            case ev.ContextUsage():
                node.data = {**(node.data or {}), "context": {"used": event.used, "window": event.window}}
            case ev.BusMessage():
                self._bus_message(run, event)
            case _:
                node.add(TraceNode("event", f"{event.kind}", event.ts, event.ts, run_id=node.run_id,
                                   data=event.to_dict()))

    def _request(self, run: _Run, event: ev.ModelRequest) -> None:
        """The request a model call sent: the call's first step (a new call when the one open has answered)."""
        if run.call is not None and ("response" in run.call.data or "usage" in run.call.data):
            run.call = None
        call = self._model_call(run, event)
        request = self._requests[event.request_id] = whole(event, self._requests)
        call.request = request
        tools = request.get("tools")
        count = f"{len(request['messages'])} messages" + (f", {len(tools)} tools" if isinstance(tools, list) else "")
        call.add(TraceNode("request", f"Request → {event.model or '?'} ({count})", event.ts, event.ts,
                           run_id=run.node.run_id, request=request,
                           data={k: v for k, v in event.to_dict().items()
                                 if k in ("request_id", "model", "body", "messages", "reused_from", "reused_messages",
                                          "reused_keys")}))

    def _bus_message(self, run: _Run, event: ev.BusMessage) -> None:
        """A message between robots: under the ``send_message`` call that sent it (still waiting for its
        result), a reply beside the message it answers, else under its run."""
        sending = [c for c in run.calls.values() if c.tool == "send_message" and c.result is None]
        parent = sending[-1] if sending else self._messages.get(event.in_reply_to or "", run.node)
        parent.add(TraceNode("message", _short(event.describe()), event.ts, event.ts, run_id=run.node.run_id,
                             data=event.to_dict()))
        self._messages[event.message_id] = parent

    def _run_label(self, event: ev.RunStarted) -> str:
        who = event.robot + (f" / {event.task}" if event.task else "")
        text = f": {_short(event.message, 60)}" if event.message else ""
        return f"Run {who}{text}"

    def _run(self, event: ev.Event) -> _Run:
        run = self._runs.get(event.run_id)
        if run is not None:
            return run
        node = TraceNode("run", f"Run {event.robot}", event.ts, run_id=event.run_id)
        run = self._runs[event.run_id] = _Run(node)
        parent_run = self._runs.get(event.parent_run_id or "")
        if parent_run is None:
            node.pos = len(self.roots)
            self.roots.append(node)
        elif event.parent_tool_id and event.parent_tool_id in parent_run.calls:
            parent_run.calls[event.parent_tool_id].add(node)
        else:
            parent_run.node.add(node)
        return run

    def _model_call(self, run: _Run, event: ev.Event) -> TraceNode:
        if run.call is None:
            run.steps += 1
            run.call = run.node.add(TraceNode("model_call", f"Model call {run.steps}", min(run.since, event.ts),
                                              run_id=run.node.run_id, data={}))
        return run.call

    def _tool(self, run: _Run, call_id: str, name: str, ts: float) -> TraceNode:
        tool = run.calls.get(call_id)
        if tool is None:  # a result without its call (a trimmed trace): a node of its own
            tool = run.calls[call_id] = run.node.add(TraceNode("tool_call", name, ts, run_id=run.node.run_id,
                                                               call_id=call_id, tool=name, data={"id": call_id}))
        return tool

    @staticmethod
    def _count(node: TraceNode, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        at: TraceNode | None = node
        while at is not None:
            at.input_tokens += input_tokens
            at.output_tokens += output_tokens
            if cost is not None:
                at.cost = (at.cost or 0.0) + cost
            at = at.parent

    # -- reading -----------------------------------------------------------------------------------
    def children(self, node: TraceNode | None) -> list[TraceNode]:
        return self.roots if node is None else node.children

    def walk(self) -> Iterator[TraceNode]:
        for root in self.roots:
            yield from root.walk()

    def matching(self, text: str) -> set[int]:
        """The ids of the nodes whose text holds ``text`` and of their ancestors (a search keeps the path)."""
        needle = text.strip().lower()
        keep: set[int] = set()
        mask = redactor()
        texts = self._texts
        for node in self.walk():
            hay = texts.get(id(node))
            if hay is None:
                hay = texts[id(node)] = node.text(mask)
            if needle in hay:
                at: TraceNode | None = node
                while at is not None and id(at) not in keep:
                    keep.add(id(at))
                    at = at.parent
        return keep

    def to_json(self) -> str:
        """The trace as JSON (secrets masked): the runs, each with its nodes."""
        return json.dumps({"trace": [root.to_dict() for root in self.roots]}, indent=2, ensure_ascii=False,
                          default=str)


def build_tree(events: Iterable[ev.Event]) -> TraceTree:
    tree = TraceTree()
    tree.extend(events)
    return tree
