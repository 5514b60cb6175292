"""What MCP servers ask of the client: sampling, elicitation, and the notifications of a call.

A server may send requests back while one of its tools runs: ``sampling/createMessage`` (a
completion from the client's model) and ``elicitation/create`` (a few values from the user). They
reach the run whose tool call is in flight on that connection (:meth:`ClientRequests.calling`),
so they show where the person is looking:

* **sampling** becomes an approval in the run (``ApprovalRequested`` / ``ApprovalDecided`` with
  the name ``sampling/createMessage`` and ``annotations.mcpRequest = "sampling"``): who asks (the
  server), the messages, the model it will use (the thread's). The person may edit the messages,
  approve or deny. Approved, the run's own provider answers, and a ``ToolResult`` with the same id
  records what the server got. The server's ``sampling`` setting (``ask``, the default, or
  ``allow``) decides whether to ask; the run's approval policy may still allow (``--yes``) or
  deny (no one to ask) first.
* **elicitation** is the same approval with the name ``elicitation/create``: the input holds the
  server's message, its JSON schema and ``content`` (the values, filled with the schema's
  defaults) that the person edits; approved is *accept* (the values checked against the schema),
  denied is *decline*, a stopped run is *cancel*.
* **progress** notifications of the call become ``ToolProgress`` events (the tool card's bar).

Outside a run (the MCP dock, ``robotlab mcp call``), :attr:`ClientRequests.fallback_ask` answers
(the CLI asks in the terminal, or denies when there is nobody to ask). Nothing here imports the
MCP SDK: requests and answers are the wire's JSON (camelCase).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.approval import ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from workspace.mcp.actor import ConnectionActor
    from workspace.providers.base import Provider
    from workspace.tools.base import ToolContext

log = logging.getLogger("workspace.mcp")

SAMPLING = "sampling/createMessage"
ELICITATION = "elicitation/create"
#: Sampling policies a server entry may set (``sampling: ask``).
SAMPLING_POLICIES = ("ask", "allow", "deny")
#: The longest sampled answer we ask the model for when the server names no limit.
DEFAULT_MAX_TOKENS = 1024

Ask = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


class RequestRefused(Exception):
    """A server's request the client does not carry out; the message goes back to the server."""


class RequestFailed(Exception):
    """A server's request the client tried and could not carry out (the model failed); the message
    goes back to the server, and the run shows it on the request's card."""


@dataclass
class _Call:
    context: ToolContext | None
    conn: ConnectionActor


_ids = itertools.count(1)


class ClientRequests:
    """Routes each server's requests to the run that is calling it (see the module)."""

    def __init__(self) -> None:
        self._calls: dict[int, list[_Call]] = {}
        #: Asked when no run is calling the server (``robotlab mcp call``, the dock); None: refuse.
        self.fallback_ask: Ask | None = None
        #: The provider that answers sampling outside a run (None: refuse).
        self.fallback_provider: Provider | None = None
        #: Servers the person allowed to sample without asking ("always allow this server"), from now
        #: on in this process; :func:`allow_sampling` also writes ``sampling: allow`` to the server's file.
        self.allowed: set[str] = set()

    # -- calls in flight ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def calling(self, conn: ConnectionActor, context: ToolContext | None) -> Iterator[Any]:
        """While a tool call runs on ``conn`` for ``context``'s run: requests go to that run; yields
        the progress callback that turns notifications into ``ToolProgress`` events."""
        entry = _Call(context, conn)
        calls = self._calls.setdefault(id(conn), [])
        calls.append(entry)
        conn.active_calls += 1
        try:
            yield _progress(context)
        finally:
            conn.active_calls -= 1
            calls.remove(entry)
            if not calls:
                self._calls.pop(id(conn), None)

    def _context(self, conn: ConnectionActor) -> ToolContext | None:
        calls = self._calls.get(id(conn))
        return calls[-1].context if calls else None

    # -- sampling ----------------------------------------------------------------------------------
    async def sample(self, conn: ConnectionActor, params: Mapping[str, Any]) -> dict[str, Any]:
        """Answer ``sampling/createMessage`` (wire JSON in, wire JSON out); raises RequestRefused."""
        context = self._context(conn)
        provider: Provider | None = _extra(context, "provider") or self.fallback_provider
        if provider is None:
            raise RequestRefused(f"{conn.name} asked for a completion (sampling), but no model is available here; "
                                 "it can only be answered during a robot's run")
        messages = params.get("messages")
        if not isinstance(messages, list) or not messages:
            raise RequestRefused("sampling/createMessage needs a non-empty 'messages' list")
        request_input: dict[str, Any] = {
            "messages": [_plain_message(m) for m in messages],
            "model": provider.label or provider.model_id or "the thread's model",
        }
        if params.get("systemPrompt"):
            request_input["systemPrompt"] = str(params["systemPrompt"])
        request_input["maxTokens"] = _max_tokens(params.get("maxTokens"))
        policy = sampling_policy(conn)
        if policy == "deny":
            raise RequestRefused(f"sampling is switched off for {conn.name} (mcpServers.{conn.name}.sampling: deny)")
        request_id = f"mcp-sampling-{next(_ids)}"
        decision = await self._decide(conn, context, SAMPLING, request_id, request_input,
                                      ask=policy != "allow")
        if not decision.approved:
            raise RequestRefused(f"The user declined the sampling request: {decision.reason or 'denied'}")
        if decision.scope == "server":  # "always allow this server": asked no more
            allow_sampling(conn)
        chosen = decision.input if isinstance(decision.input, Mapping) else request_input
        started = time.monotonic()
        try:
            text = await _complete(provider, chosen, _extra(context, "settings") or {})
        except RequestRefused as exc:
            _emit(context, ev.ToolError(id=request_id, name=SAMPLING, error=str(exc), server=conn.name,
                  duration=time.monotonic() - started))
            raise
        except Exception as exc:  # the model failed: the run goes on, the server is told why
            error = f"The model could not answer {conn.name}'s sampling request: {type(exc).__name__}: {exc}"
            _emit(context, ev.ToolError(id=request_id, name=SAMPLING, error=error, server=conn.name,
                  duration=time.monotonic() - started))
            raise RequestFailed(error) from exc
        answer = {"role": "assistant", "content": {"type": "text", "text": text},
                  "model": provider.model_id or request_input["model"], "stopReason": "endTurn"}
        _emit(context, ev.ToolResult(id=request_id, name=SAMPLING, payload={"data": text}, server=conn.name,
              duration=time.monotonic() - started))
        return answer

    # -- elicitation -------------------------------------------------------------------------------
    async def elicit(self, conn: ConnectionActor, params: Mapping[str, Any]) -> dict[str, Any]:
        """Answer ``elicitation/create``: ``{"action": accept|decline|cancel, "content": {...}}``."""
        context = self._context(conn)
        schema = params.get("requestedSchema")
        problem = schema_problem(schema)
        if problem is not None:
            _emit(context, ev.ToolError(id=f"mcp-elicitation-{next(_ids)}", name=ELICITATION,
                  error=f"{conn.name} asked for input with a schema that is not valid: {problem}", server=conn.name))
            raise RequestRefused(f"The requested schema is not valid: {problem}")
        assert isinstance(schema, Mapping)
        request_input = {"message": str(params.get("message") or ""), "requestedSchema": dict(schema),
                         "content": defaults(schema)}
        request_id = f"mcp-elicitation-{next(_ids)}"
        try:
            decision = await self._decide(conn, context, ELICITATION, request_id, request_input, ask=True,
                                          allow_by_policy=False)
        except RequestRefused:
            raise
        except BaseException:
            return {"action": "cancel"}
        if decision.reason == "cancel":
            return {"action": "cancel"}
        if not decision.approved:
            return {"action": "decline"}
        edited = decision.input if isinstance(decision.input, Mapping) else request_input
        content = edited.get("content", edited) if isinstance(edited, Mapping) else {}
        errors = validate(content, schema)
        if errors:
            error = f"The values do not fit the requested schema: {errors}"
            _emit(context, ev.ToolError(id=request_id, name=ELICITATION, error=error, server=conn.name))
            raise RequestRefused(error)
        _emit(context, ev.ToolResult(id=request_id, name=ELICITATION, payload={"data": dict(content)},
              server=conn.name))
        return {"action": "accept", "content": dict(content)}

    def refused(self, conn: ConnectionActor, method: str, problem: str) -> None:
        """A request of ``conn``'s that the client refused before anyone saw it (its parameters are not
        valid): the run calling the server shows it as an error card."""
        kind = "sampling" if method == SAMPLING else "elicitation"
        _emit(self._context(conn), ev.ToolError(id=f"mcp-{kind}-{next(_ids)}", name=method, error=problem,
              server=conn.name))

    # -- asking ------------------------------------------------------------------------------------
    async def _decide(self, conn: ConnectionActor, context: ToolContext | None, name: str, request_id: str,
                      request_input: dict[str, Any], *, ask: bool, allow_by_policy: bool = True) -> ApprovalDecision:
        gate = _extra(context, "approval")
        request = ApprovalRequest(
            call_id=request_id, robot=context.robot if context else "", tool=name, input=request_input,
            server=conn.name, annotations={"mcpRequest": name.split("/")[0]},
            run_id=context.run_id if context else "", task=context.task if context else None,
            thread_id=_extra(context, "thread_id"),
        )
        if not ask:
            _emit(context, ev.ToolUse(id=request_id, name=name, input=request_input, server=conn.name))
            return ApprovalDecision(approved=True, scope="server")
        action = "ask"
        if gate is not None:
            action = gate.decide(request)
            if action == "allow" and not allow_by_policy:
                action = "ask"
        if action == "allow":
            _emit(context, ev.ToolUse(id=request_id, name=name, input=request_input, server=conn.name))
            return ApprovalDecision(approved=True, scope="policy")
        if action == "deny":
            decision = ApprovalDecision(approved=False, scope="policy", reason=f"the approval policy denies {name}")
        else:
            asker: Ask | None = gate.ask if gate is not None else self.fallback_ask
            if asker is None:
                raise RequestRefused(f"{conn.name} asked for {name}, but there is nobody to ask here")
            _emit(context, ev.ApprovalRequested(id=request_id, name=name, input=request_input, server=conn.name,
                  annotations={"mcpRequest": name.split("/")[0]}))
            decision = await asker(request)
        _emit(context, ev.ApprovalDecided(id=request_id, name=name, decision=decision.decision,
              input=decision.input if decision.input is not None else request_input, reason=decision.reason,
              scope=decision.event_scope))
        return decision


def sampling_policy(conn: ConnectionActor) -> str:
    """The server's ``sampling`` setting: ask (default), allow or deny (allowed from a card since: allow)."""
    value = str(conn.spec.raw.get("sampling") or "ask").strip().lower()
    requests = getattr(conn.client, "requests", None)
    if value != "deny" and isinstance(requests, ClientRequests) and conn.name in requests.allowed:
        return "allow"
    return value if value in SAMPLING_POLICIES else "ask"


def allow_sampling(conn: ConnectionActor) -> str | None:
    """"Always allow this server": its sampling requests are answered without asking, now (this process)
    and from its configuration file on (``sampling: allow`` written to the file that defines it, which
    keeps its comments). Returns where it was saved, or None (a server defined inline, or a file that
    could not be written: the connection's log says why)."""
    requests = getattr(conn.client, "requests", None)
    if isinstance(requests, ClientRequests):
        requests.allowed.add(conn.name)
    from workspace.mcp.edit import set_server_key

    try:
        saved = set_server_key(conn.spec.source, conn.name, "sampling", "allow")
    except Exception as exc:
        conn.note(f"sampling is allowed for this session, but could not be saved: {exc}")
        return None
    if saved is None:
        conn.note("sampling is allowed for this session (the server is not defined in a file to save it in)")
    return saved


def _max_tokens(value: Any) -> int:
    """The server's ``maxTokens`` (a positive whole number), else :data:`DEFAULT_MAX_TOKENS`."""
    if isinstance(value, bool):
        return DEFAULT_MAX_TOKENS
    try:
        number = int(value)
    except (TypeError, ValueError):
        return DEFAULT_MAX_TOKENS
    return number if number > 0 else DEFAULT_MAX_TOKENS


def _extra(context: ToolContext | None, key: str) -> Any:
    return context.extras.get(key) if context is not None else None


def _emit(context: ToolContext | None, event: ev.Event) -> None:
    if context is not None and context.emit is not None:
        try:
            context.emit(event)
        except Exception:
            log.debug("could not emit %s", type(event).__name__, exc_info=True)


def _progress(context: ToolContext | None) -> Callable[[float, float | None, str | None], None] | None:
    if context is None or context.emit is None:
        return None
    call_id, name = context.call_id, str(context.extras.get("tool") or "")

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        _emit(context, ev.ToolProgress(id=call_id, name=name, progress=float(progress),
              total=float(total) if total is not None else None, message=message or ""))

    return on_progress


def _plain_message(message: Any) -> dict[str, Any]:
    """A sampling message as ``{"role", "text"}`` (other content summarised) for the card and the model."""
    if not isinstance(message, Mapping):
        raise RequestRefused(f"a sampling message must be an object, got {type(message).__name__}")
    role = str(message.get("role") or "user")
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text") or ""))
        elif isinstance(block, Mapping):
            parts.append(f"[{block.get('type', 'content')} {block.get('mimeType', '')}]".replace(" ]", "]"))
        elif block is not None:
            parts.append(str(block))
    return {"role": role if role in ("user", "assistant") else "user", "text": "\n".join(parts)}


async def _complete(provider: Provider, request: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    from workspace.messages import TextMessage
    from workspace.providers.base import TextChunk

    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestRefused("the edited request has no messages")
    history = []
    for m in messages:
        if not isinstance(m, Mapping):
            raise RequestRefused("each edited message must be an object with role and text")
        history.append(TextMessage(str(m.get("role") or "user"), str(m.get("text") or "")))
    options = dict(settings)
    options["max_tokens"] = _max_tokens(request.get("maxTokens"))
    parts: list[str] = []
    system = request.get("systemPrompt")
    async for chunk in provider.stream(system=str(system) if system else None, messages=history, tools=[],
                                       settings=options):
        if isinstance(chunk, TextChunk):
            parts.append(chunk.text)
    return "".join(parts)


# -- elicitation schemas -----------------------------------------------------------------------------
_PRIMITIVES = ("string", "number", "integer", "boolean")


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not an elicitation schema (a flat object of primitive properties), or None."""
    if not isinstance(schema, Mapping):
        return f"expected an object schema, got {type(schema).__name__}"
    if schema.get("type") != "object":
        return f"the top level must be {{\"type\": \"object\"}}, got type {schema.get('type')!r}"
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return "'properties' must be an object"
    for name, prop in properties.items():
        if not isinstance(prop, Mapping):
            return f"property '{name}' must be an object"
        kind = prop.get("type")
        if kind not in _PRIMITIVES and not (kind == "array" and isinstance(prop.get("items"), Mapping)):
            return f"property '{name}' has type {kind!r}; elicitation allows {', '.join(_PRIMITIVES)}"
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in properties for r in required):
        return "'required' must list property names"
    try:
        from jsonschema import Draft202012Validator

        Draft202012Validator.check_schema(dict(schema))
    except Exception as exc:
        return str(getattr(exc, "message", exc))
    return None


def defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Starting values for the form: each property's default (or an empty value of its type)."""
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            out[name] = prop["default"]
        elif prop.get("enum"):
            out[name] = prop["enum"][0]
        else:
            out[name] = {"string": "", "number": 0, "integer": 0, "boolean": False, "array": []}.get(str(prop.get("type")))
    return out


def validate(content: Any, schema: Mapping[str, Any]) -> str | None:
    """Why ``content`` does not fit ``schema`` (one line), or None."""
    try:
        from jsonschema import Draft202012Validator
    except ImportError:  # pragma: no cover - a dependency
        return None
    errors = sorted(Draft202012Validator(dict(schema)).iter_errors(content), key=lambda e: list(e.path))
    if not errors:
        return None
    first = errors[0]
    where = ".".join(str(p) for p in first.path)
    return f"{where + ': ' if where else ''}{first.message}"


def describe_request(name: str, request_input: Mapping[str, Any]) -> str:
    """Plain text of a sampling or elicitation request (the terminal's question)."""
    if name == SAMPLING:
        lines = [f"  [{m.get('role')}] {m.get('text')}" for m in request_input.get("messages", [])]
        return f"wants a completion from {request_input.get('model')}:\n" + "\n".join(lines)
    schema = json.dumps(request_input.get("requestedSchema", {}).get("properties", {}))
    return f"asks: {request_input.get('message')}\n  fields: {schema}"
