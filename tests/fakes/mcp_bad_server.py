"""A small, deliberately misbehaving MCP stdio server for fault tests (no SDK: starts fast).

``python mcp_bad_server.py MODE``:

* ``ok`` — a working server with tools ``echo`` (text), ``crash`` (exits mid-call with
  status 3), ``sleep`` (answers after ``seconds``; a ``notifications/cancelled`` for it is
  written to stderr as ``cancelled request <id>``) and ``garble`` (writes a non-JSON line to
  stdout instead of answering);
* ``silent`` — reads everything, never answers;
* ``garbage`` — answers every request with a line that is not JSON;
* ``exit`` — writes an error to stderr and exits with status 1 at once;
* ``asks`` — ``ok`` plus tools that send the client requests and answer with what came back:
  ``garbage_sampling`` (a ``sampling/createMessage`` whose params are garbage), ``sample`` (a proper
  one: the tool's result is the client's answer), ``sample_then_garble`` (a proper one, then a
  non-JSON line on stdout instead of the tool's result) and ``bad_schema`` (an ``elicitation/create``
  whose schema is not an elicitation schema).

Every start appends a line to the file named by ``$FAKE_MCP_STARTS`` (when set), so tests
can count restarts.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time

TOOLS = [
    {"name": "echo", "description": "Echo the message back",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "crash", "description": "Exit in the middle of the call",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "sleep", "description": "Answer after some seconds",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "garble", "description": "Write garbage to stdout instead of answering",
     "inputSchema": {"type": "object", "properties": {}}},
]


ASK_TOOLS = [
    {"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}}
    for name, description in (
        ("garbage_sampling", "Ask for a completion with garbage parameters"),
        ("sample", "Ask for a completion and return the answer"),
        ("sample_then_garble", "Ask for a completion, then write garbage instead of the result"),
        ("bad_schema", "Ask for input with a schema that is not an elicitation schema"),
    )
]
#: What each tool sends the client: (method, params).
ASKS: dict[str, tuple[str, dict[str, object]]] = {
    "garbage_sampling": ("sampling/createMessage", {"messages": "garbage", "maxTokens": "lots"}),
    "sample": ("sampling/createMessage", {"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                                          "maxTokens": 20}),
    "sample_then_garble": ("sampling/createMessage",
                           {"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                            "maxTokens": 20}),
    "bad_schema": ("elicitation/create", {"message": "Tell me", "requestedSchema": {
        "type": "object", "properties": {"nested": {"type": "object", "properties": {"a": {"type": "string"}}}}}}),
}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def text_result(request_id: object, text: str, *, error: bool = False) -> None:
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}], "isError": error}})


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    starts = os.environ.get("FAKE_MCP_STARTS")
    if starts:
        with open(starts, "a", encoding="utf-8") as fh:
            fh.write(f"{mode} {os.getpid()}\n")
    log(f"fake MCP server starting in mode {mode}")
    if mode == "exit":
        log("fatal: missing API_TOKEN (this server needs one)")
        return 1
    pending: dict[object, float] = {}  # sleep calls: id -> when to answer
    asked: dict[object, tuple[object, str]] = {}  # our request id -> (the tool call's id, the tool)
    buffer = b""
    while True:
        timeout = max(0.0, min(pending.values()) - time.monotonic()) if pending else None
        ready, _, _ = select.select([sys.stdin.buffer], [], [], timeout)
        now = time.monotonic()
        for request_id, due in list(pending.items()):
            if due <= now:
                del pending[request_id]
                text_result(request_id, "slept")
        if not ready:
            continue
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:
            return 0
        buffer += chunk
        while b"\n" in buffer:
            raw, buffer = buffer.split(b"\n", 1)
            if not raw.strip():
                continue
            message = json.loads(raw)
            method = message.get("method")
            request_id = message.get("id")
            if mode == "silent":
                continue
            if mode == "garbage":
                if request_id is not None:
                    sys.stdout.write("Welcome to the garbage server! <html>not json</html>\n")
                    sys.stdout.flush()
                continue
            if method is None and request_id in asked:  # the client's answer to a request of ours
                call_id, tool = asked.pop(request_id)
                if tool == "sample_then_garble":
                    sys.stdout.write("here is your result, in prose rather than JSON-RPC\n")
                    sys.stdout.flush()
                    continue
                answer = message.get("result", message.get("error"))
                text_result(call_id, json.dumps(answer), error="error" in message)
                continue
            if method == "initialize":
                send({"jsonrpc": "2.0", "id": request_id, "result": {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake-bad-server", "version": "1.0"}}})
            elif method == "notifications/cancelled":
                cancelled = message.get("params", {}).get("requestId")
                log(f"cancelled request {cancelled}")
                pending.pop(cancelled, None)
            elif method == "tools/list":
                send({"jsonrpc": "2.0", "id": request_id,
                      "result": {"tools": TOOLS + (ASK_TOOLS if mode == "asks" else [])}})
            elif method == "tools/call":
                name = message["params"]["name"]
                args = message["params"].get("arguments") or {}
                if name == "echo":
                    text_result(request_id, f"echo: {args.get('message')}")
                elif name == "crash":
                    log("about to crash in the middle of a call")
                    os._exit(3)
                elif name == "sleep":
                    pending[request_id] = time.monotonic() + float(args.get("seconds", 30))
                elif name == "garble":
                    sys.stdout.write("oops, this is a debug print on stdout\n")
                    sys.stdout.flush()
                elif mode == "asks" and name in ASKS:
                    ours = f"ask-{len(asked) + 1}-{request_id}"
                    asked[ours] = (request_id, name)
                    ask_method, ask_params = ASKS[name]
                    send({"jsonrpc": "2.0", "id": ours, "method": ask_method, "params": ask_params})
                else:
                    text_result(request_id, f"Unknown tool: {name}", error=True)
            elif method == "ping":
                send({"jsonrpc": "2.0", "id": request_id, "result": {}})
            elif request_id is not None:
                send({"jsonrpc": "2.0", "id": request_id,
                      "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    sys.exit(main())
