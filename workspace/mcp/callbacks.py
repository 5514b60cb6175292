"""The client side of a connection on the SDK: what a server may ask of us, and its notifications.

:func:`session_callbacks` gives a :class:`~workspace.mcp.actor.ConnectionActor`'s ``ClientSession``
its callbacks, which advertise the client capabilities in the handshake:

* ``sampling_callback`` and ``elicitation_callback`` hand the request (as wire JSON) to the
  manager's :class:`~workspace.mcp.requests.ClientRequests`, which routes it to the run calling
  the server; a refusal, a bad answer or any failure goes back to the server as a JSON-RPC error
  (nothing is lost: the run and the connection go on);
* ``list_roots_callback`` answers with the opened folder (``file://`` URI);
* ``logging_callback`` keeps the server's log notifications with their levels (the dock's log).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp.types as types

from workspace.mcp.requests import RequestFailed, RequestRefused

if TYPE_CHECKING:
    from workspace.mcp.actor import ConnectionActor

log = logging.getLogger("workspace.mcp")

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: Code of a request the user declined (MCP uses -1 for "user rejected" in sampling examples).
USER_REJECTED = -1


def _wire(params: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = params.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def session_callbacks(conn: ConnectionActor) -> dict[str, Any]:
    """Keyword arguments for ``ClientSession(...)`` (the manager's requests, the roots, the log)."""
    client = conn.client

    async def on_sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        if client is None:
            return types.ErrorData(code=INVALID_PARAMS, message="sampling is not available")
        try:
            answer = await client.requests.sample(conn, _wire(params))
            return types.CreateMessageResult.model_validate(answer)
        except RequestRefused as exc:
            conn.note(f"sampling refused: {exc}")
            return types.ErrorData(code=USER_REJECTED, message=str(exc))
        except RequestFailed as exc:
            conn.note(f"sampling failed: {exc}")
            return types.ErrorData(code=INTERNAL_ERROR, message=str(exc))
        except Exception as exc:
            conn.note(f"sampling failed: {type(exc).__name__}: {exc}")
            return types.ErrorData(code=INTERNAL_ERROR, message=f"The client could not sample: {exc}")

    async def on_elicitation(context: Any, params: Any) -> Any:
        wire = _wire(params)
        if wire.get("mode") == "url":
            conn.note(f"declined a URL elicitation ({wire.get('url', '')}): not supported yet")
            return types.ElicitResult(action="decline")
        if client is None:
            return types.ElicitResult(action="decline")
        try:
            answer = await client.requests.elicit(conn, wire)
            return types.ElicitResult.model_validate(answer)
        except RequestRefused as exc:
            conn.note(f"elicitation refused: {exc}")
            return types.ErrorData(code=INVALID_PARAMS, message=str(exc))
        except Exception as exc:
            conn.note(f"elicitation failed: {type(exc).__name__}: {exc}")
            return types.ErrorData(code=INTERNAL_ERROR, message=f"The client could not ask: {exc}")

    async def on_list_roots(context: Any) -> Any:
        roots = list(getattr(client, "roots", []) or [])
        return types.ListRootsResult(roots=[
            types.Root(uri=Path(root).resolve().as_uri(), name=Path(root).name or str(root))
            for root in roots
        ])

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        data = params.data
        text = data if isinstance(data, str) else repr(data)
        conn.add_log(str(params.level), text, params.logger)

    return {
        "sampling_callback": on_sampling,
        "elicitation_callback": on_elicitation,
        "list_roots_callback": on_list_roots,
        "logging_callback": on_log,
    }


#: The client requests whose parameters are checked before the SDK sees them, and their models.
_CHECKED = {"sampling/createMessage": "CreateMessageRequestParams", "elicitation/create": None}


def request_problem(message: Any) -> tuple[Any, str, str] | None:
    """``(request id, method, why)`` when ``message`` (a transport's SessionMessage) is a sampling or
    elicitation request from the server whose parameters are not valid; None otherwise.

    The SDK would answer such a request with a bare "Invalid request parameters"; the connection answers
    it instead, with what is wrong, and shows it to the person (the server's output, the run's card)."""
    inner = getattr(getattr(message, "message", None), "root", getattr(message, "message", None))
    method = getattr(inner, "method", None)
    if method not in _CHECKED or getattr(inner, "id", None) is None:
        return None
    params: Any = getattr(inner, "params", None)
    if hasattr(params, "model_dump"):
        params = params.model_dump(by_alias=True, exclude_none=True)
    request_id = getattr(inner, "id", None)
    if method == "elicitation/create":
        if not isinstance(params, dict):
            return request_id, method, "the parameters must be an object with message and requestedSchema"
        return None  # its schema is checked with a person-readable reason in workspace.mcp.requests
    from pydantic import ValidationError

    try:
        types.CreateMessageRequestParams.model_validate(params if params is not None else {})
    except ValidationError as exc:
        parts = []
        for error in exc.errors()[:4]:
            where = ".".join(str(p) for p in error.get("loc", ())) or "params"
            parts.append(f"{where}: {error.get('msg', 'not valid')} (got {_short(error.get('input'))})")
        return request_id, method, "the parameters are not valid: " + "; ".join(parts)
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def refusal(request_id: Any, problem: str) -> Any:
    """The JSON-RPC error that answers a request :func:`request_problem` refused."""
    from mcp.shared.message import SessionMessage

    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                             error=types.ErrorData(code=INVALID_PARAMS, message=problem)))
