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
  whose schema is not an elicitation schema);
* ``many`` — ``ok`` plus ``COUNT`` tools (``python mcp_bad_server.py many COUNT``, default 2,500) named
  ``tool_00000`` …, listed in pages of :data:`PAGE` (``nextCursor``); each page asked for is written to
  stderr as ``tools/list page N``.

Every start appends a line to the file named by ``$FAKE_MCP_STARTS`` (when set), so tests
can count restarts.
"""

from __future__ import annotations

import json
import sys
from typing import Any

# Started as a script by path: its folder (with the servers' shared part) is on sys.path.
from jsonrpc_stdio import StdioServer, log, record_start, send, text_result, write_line

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



#: Tools per ``tools/list`` page in the mode ``many``.
PAGE = 500


def numbered_tools(count: int) -> list[dict[str, Any]]:
    return [{"name": f"tool_{i:05d}", "description": f"Tool number {i}",
             "inputSchema": {"type": "object", "properties": {}}} for i in range(count)]


class BadServer(StdioServer):
    server_name = "fake-bad-server"

    def __init__(self, mode: str, count: int = 2500) -> None:
        extra = ASK_TOOLS if mode == "asks" else numbered_tools(count) if mode == "many" else []
        super().__init__(mode, TOOLS + extra)
        #: Our request id -> (the tool call's id, the tool).
        self.asked: dict[object, tuple[object, str]] = {}

    def handle(self, message: dict[str, Any]) -> None:
        if self.mode == "many" and message.get("method") == "tools/list":
            cursor = (message.get("params") or {}).get("cursor")
            page = int(cursor) if cursor else 0
            log(f"tools/list page {page + 1}")
            result: dict[str, Any] = {"tools": self.tools[page * PAGE:(page + 1) * PAGE]}
            if (page + 1) * PAGE < len(self.tools):
                result["nextCursor"] = str(page + 1)
            send({"jsonrpc": "2.0", "id": message.get("id"), "result": result})
            return
        super().handle(message)

    def cancelled(self, request_id: object) -> None:
        log(f"cancelled request {request_id}")
        super().cancelled(request_id)

    def on_response(self, message: dict[str, Any]) -> bool:
        request_id = message.get("id")
        if request_id not in self.asked:
            return False
        call_id, tool = self.asked.pop(request_id)
        if tool == "sample_then_garble":
            write_line("here is your result, in prose rather than JSON-RPC")
            return True
        answer = message.get("result", message.get("error"))
        text_result(call_id, json.dumps(answer), error="error" in message)
        return True

    def call(self, request_id: object, name: str, args: dict[str, Any]) -> None:
        if self.mode == "asks" and name in ASKS:
            ours = f"ask-{len(self.asked) + 1}-{request_id}"
            self.asked[ours] = (request_id, name)
            ask_method, ask_params = ASKS[name]
            send({"jsonrpc": "2.0", "id": ours, "method": ask_method, "params": ask_params})
        else:
            super().call(request_id, name, args)


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    record_start("FAKE_MCP_STARTS", mode)
    log(f"fake MCP server starting in mode {mode}")
    if mode == "exit":
        log("fatal: missing API_TOKEN (this server needs one)")
        return 1
    return BadServer(mode, *(int(a) for a in sys.argv[2:3])).serve()


if __name__ == "__main__":
    sys.exit(main())
