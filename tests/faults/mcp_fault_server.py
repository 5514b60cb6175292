"""A small MCP stdio server that fails on purpose, for the fault matrix (no SDK: starts fast).

``python mcp_fault_server.py MODE [SECONDS]``:

* ``ok`` — a working server with the tools ``echo`` (text), ``crash`` (the process exits in the
  middle of the call), ``huge`` (answers ``mb`` megabytes of text), ``sleep`` (answers after
  ``seconds``) and ``garble`` (writes a line that is not JSON-RPC to stdout instead of answering);
* ``slow`` — like ``ok``, but waits SECONDS (default 3) before answering ``initialize``;
* ``crash`` — writes an error to stderr and exits with status 1 at once;
* ``silent`` — reads everything, never answers;
* ``garbage`` — answers every request with a line that is not JSON.

Every start appends ``MODE PID`` to the file named by ``$FAULT_MCP_STARTS`` (when set). A careless
server: it prints ``$FAULT_MCP_TOKEN`` on stderr at start and answers it from the tool ``whoami``
(the secrets sweep plants a token there and checks that no output, log, database or export shows it).
"""

from __future__ import annotations

import json
import os
import select
import sys
import time

TOOLS = [
    {"name": "echo", "description": "Echo the message back",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
    {"name": "crash", "description": "Exit in the middle of the call", "inputSchema": {"type": "object"}},
    {"name": "huge", "description": "Answer a lot of text",
     "inputSchema": {"type": "object", "properties": {"mb": {"type": "number"}}}},
    {"name": "sleep", "description": "Answer after some seconds",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "garble", "description": "Write garbage to stdout instead of answering",
     "inputSchema": {"type": "object"}},
    {"name": "whoami", "description": "Say which token the server was given", "inputSchema": {"type": "object"}},
]

LINE = "2024-05-01 12:00:00 INFO worker-7 processed request id=0123456789 in 12 ms status=ok\n"


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def text_result(request_id: object, text: str, *, error: bool = False) -> None:
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}], "isError": error}})


def huge_text(mb: float) -> str:
    size = int(mb * 1024 * 1024)
    return (LINE * (size // len(LINE) + 1))[:size]


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    delay = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    starts = os.environ.get("FAULT_MCP_STARTS")
    if starts:
        with open(starts, "a", encoding="utf-8") as fh:
            fh.write(f"{mode} {os.getpid()}\n")
    log(f"fault MCP server starting in mode {mode}")
    if os.environ.get("FAULT_MCP_TOKEN"):  # a careless server that prints its credentials
        log(f"authenticating with token {os.environ['FAULT_MCP_TOKEN']}")
    if mode == "crash":
        log("fatal: cannot open the index (this server crashes at start)")
        return 1
    pending: dict[object, float] = {}
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
                if mode == "slow":
                    time.sleep(delay)
                send({"jsonrpc": "2.0", "id": request_id, "result": {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fault-server", "version": "1.0"}}})
            elif method == "notifications/cancelled":
                pending.pop(message.get("params", {}).get("requestId"), None)
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
                elif name == "huge":
                    text_result(request_id, huge_text(float(args.get("mb", 10))))
                elif name == "sleep":
                    pending[request_id] = time.monotonic() + float(args.get("seconds", 30))
                elif name == "garble":
                    sys.stdout.write("oops, this is a debug print on stdout\n")
                    sys.stdout.flush()
                elif name == "whoami":
                    text_result(request_id, f"my token is {os.environ.get('FAULT_MCP_TOKEN', '(none)')}")
                else:
                    text_result(request_id, f"Unknown tool: {name}", error=True)
            elif method == "ping":
                send({"jsonrpc": "2.0", "id": request_id, "result": {}})
            elif request_id is not None:
                send({"jsonrpc": "2.0", "id": request_id,
                      "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    sys.exit(main())
