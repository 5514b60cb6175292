"""What the small MCP stdio servers of the tests share: the stdin loop and the JSON-RPC answers (no SDK:
they start fast).

:class:`StdioServer` reads JSON-RPC lines from stdin and answers the handshake, ``tools/list``,
``tools/call`` of the tools every such server has and ``ping``; its modes ``silent`` (never answers)
and ``garbage`` (answers every request with a line that is not JSON) are the same everywhere.
The tools every server has:

* ``echo`` (text), ``crash`` (the process exits with status 3 in the middle of the call);
* ``sleep`` (answers ``slept`` after ``seconds``; a ``notifications/cancelled`` forgets it);
* ``garble`` (writes a line that is not JSON-RPC to stdout instead of answering).

A server subclasses it: its own tools in :meth:`StdioServer.call`, answers to requests of its own in
:meth:`StdioServer.on_response`. The servers are started as scripts (``python path/to/server.py MODE``),
so they import this module from its folder (tests/fakes), which is on ``sys.path`` for a script of
this folder; tests/faults/mcp_fault_server.py puts it there.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import Any


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def write_line(text: str) -> None:
    """A line on stdout that is not JSON-RPC."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def text_result(request_id: object, text: str, *, error: bool = False) -> None:
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}], "isError": error}})


def record_start(variable: str, mode: str) -> None:
    """Append ``MODE PID`` to the file named by ``$variable`` (when set), so tests can count starts."""
    starts = os.environ.get(variable)
    if starts:
        with open(starts, "a", encoding="utf-8") as fh:
            fh.write(f"{mode} {os.getpid()}\n")


class StdioServer:
    """An MCP server on stdin and stdout in ``mode``, offering ``tools``; see the module documentation."""

    #: The ``serverInfo.name`` of the handshake.
    server_name = "fake-server"

    def __init__(self, mode: str, tools: list[dict[str, Any]]) -> None:
        self.mode = mode
        self.tools = tools
        #: Sleep calls: id -> when to answer.
        self.pending: dict[object, float] = {}

    def serve(self) -> int:
        """Answer until stdin closes (then 0)."""
        buffer = b""
        while True:
            timeout = max(0.0, min(self.pending.values()) - time.monotonic()) if self.pending else None
            ready, _, _ = select.select([sys.stdin.buffer], [], [], timeout)
            now = time.monotonic()
            for request_id, due in list(self.pending.items()):
                if due <= now:
                    del self.pending[request_id]
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
                self.handle(json.loads(raw))

    def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        request_id = message.get("id")
        if self.mode == "silent":
            return
        if self.mode == "garbage":
            if request_id is not None:
                write_line("Welcome to the garbage server! <html>not json</html>")
            return
        if method is None and self.on_response(message):
            return
        if method == "initialize":
            self.initialize(message)
        elif method == "notifications/cancelled":
            self.cancelled(message.get("params", {}).get("requestId"))
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": self.tools}})
        elif method == "tools/call":
            self.call(request_id, message["params"]["name"], message["params"].get("arguments") or {})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": f"Method not found: {method}"}})

    def initialize(self, message: dict[str, Any]) -> None:
        send({"jsonrpc": "2.0", "id": message.get("id"), "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": self.server_name, "version": "1.0"}}})

    def cancelled(self, request_id: object) -> None:
        self.pending.pop(request_id, None)

    def on_response(self, message: dict[str, Any]) -> bool:
        """The client's answer to a request of the server's own; False when it is not one (then it is
        answered as an unknown method)."""
        return False

    def call(self, request_id: object, name: str, args: dict[str, Any]) -> None:
        if name == "echo":
            text_result(request_id, f"echo: {args.get('message')}")
        elif name == "crash":
            log("about to crash in the middle of a call")
            os._exit(3)
        elif name == "sleep":
            self.pending[request_id] = time.monotonic() + float(args.get("seconds", 30))
        elif name == "garble":
            write_line("oops, this is a debug print on stdout")
        else:
            text_result(request_id, f"Unknown tool: {name}", error=True)
