"""A small MCP stdio server that fails on purpose, for the fault matrix (no SDK: starts fast).

``python mcp_fault_server.py MODE [SECONDS]``:

* ``ok`` — a working server with the tools ``echo`` (text), ``crash`` (the process exits in the
  middle of the call), ``huge`` (answers ``mb`` megabytes of text), ``sleep`` (answers after
  ``seconds``) and ``garble`` (writes a line that is not JSON-RPC to stdout instead of answering);
* ``slow`` — like ``ok``, but waits SECONDS (default 3) before answering ``initialize``;
* ``crash`` — writes an error to stderr and exits with status 1 at once;
* ``silent`` — reads everything, never answers;
* ``garbage`` — answers every request with a line that is not JSON;
* ``badutf8`` — like ``ok``, but writes a line of bytes that are not UTF-8 on stdout before its
  answer to ``initialize`` (a banner in Latin-1);
* ``badutf8-among`` — the same, and such a line before each answer after the handshake too;
* ``badutf8-only`` — answers ``initialize`` with bytes that are not UTF-8 only (never a valid line).

The tool ``deep`` answers a result whose ``structuredContent`` nests ``depth`` (default 100,000) lists deep.

Every start appends ``MODE PID`` to the file named by ``$FAULT_MCP_STARTS`` (when set). A careless
server: it prints ``$FAULT_MCP_TOKEN`` on stderr at start and answers it from the tool ``whoami``
(the secrets sweep plants a token there and checks that no output, log, database or export shows it).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# Started as a script by path: the servers' shared part lives in tests/fakes.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
from jsonrpc_stdio import StdioServer, log, record_start, text_result

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
    {"name": "deep", "description": "Answer a result nested very deep",
     "inputSchema": {"type": "object", "properties": {"depth": {"type": "integer"}}}},
]

#: What ``badutf8`` writes on stdout among its JSON-RPC lines: Latin-1 text, not UTF-8.
NOT_UTF8 = "Démarrage du serveur… ©".encode("latin-1", errors="replace") + b" \xff\xfe\n"

LINE = "2024-05-01 12:00:00 INFO worker-7 processed request id=0123456789 in 12 ms status=ok\n"



def huge_text(mb: float) -> str:
    size = int(mb * 1024 * 1024)
    return (LINE * (size // len(LINE) + 1))[:size]


class FaultServer(StdioServer):
    server_name = "fault-server"

    def __init__(self, mode: str, delay: float) -> None:
        super().__init__(mode, TOOLS)
        self.delay = delay

    def initialize(self, message: dict[str, Any]) -> None:
        if self.mode == "slow":
            time.sleep(self.delay)
        if self.mode.startswith("badutf8"):
            write_bytes(NOT_UTF8)
            if self.mode == "badutf8-only":
                return
        super().initialize(message)

    def handle(self, message: dict[str, Any]) -> None:
        if self.mode == "badutf8-among" and message.get("id") is not None and message.get("method") != "initialize":
            write_bytes(NOT_UTF8)
        super().handle(message)

    def call(self, request_id: object, name: str, args: dict[str, Any]) -> None:
        if name == "deep":
            depth = int(args.get("depth", 100_000))
            structured = '{"x": ' + "[" * depth + "]" * depth + "}"
            write_bytes(('{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "result": {"content": '
                         '[{"type": "text", "text": "deep"}], "structuredContent": ' + structured + "}}\n").encode())
        elif name == "huge":
            text_result(request_id, huge_text(float(args.get("mb", 10))))
        elif name == "whoami":
            text_result(request_id, f"my token is {os.environ.get('FAULT_MCP_TOKEN', '(none)')}")
        else:
            super().call(request_id, name, args)


def write_bytes(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    delay = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    record_start("FAULT_MCP_STARTS", mode)
    log(f"fault MCP server starting in mode {mode}")
    if os.environ.get("FAULT_MCP_TOKEN"):  # a careless server that prints its credentials
        log(f"authenticating with token {os.environ['FAULT_MCP_TOKEN']}")
    if mode == "crash":
        log("fatal: cannot open the index (this server crashes at start)")
        return 1
    return FaultServer(mode, delay).serve()


if __name__ == "__main__":
    sys.exit(main())
