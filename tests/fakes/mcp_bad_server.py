"""A small, deliberately misbehaving MCP stdio server for fault tests (no SDK: starts fast).

``python mcp_bad_server.py MODE``:

* ``ok`` — a working server with tools ``echo`` (text), ``crash`` (exits mid-call with
  status 3), ``sleep`` (answers after ``seconds``; a ``notifications/cancelled`` for it is
  written to stderr as ``cancelled request <id>``) and ``garble`` (writes a non-JSON line to
  stdout instead of answering);
* ``silent`` — reads everything, never answers;
* ``garbage`` — answers every request with a line that is not JSON;
* ``exit`` — writes an error to stderr and exits with status 1 at once.

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
                send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
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
                else:
                    text_result(request_id, f"Unknown tool: {name}", error=True)
            elif method == "ping":
                send({"jsonrpc": "2.0", "id": request_id, "result": {}})
            elif request_id is not None:
                send({"jsonrpc": "2.0", "id": request_id,
                      "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    sys.exit(main())
