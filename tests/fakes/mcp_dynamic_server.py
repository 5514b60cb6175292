"""A Python MCP server (the SDK's MCPServer, ex-FastMCP) for the tests, over stdio:

* ``whoami``: the ``LABEL`` environment variable it was started with (which settings a call used);
* ``grow``: adds a tool ``extra`` and tells the client (``notifications/tools/list_changed``);
* ``slow``: answers after ``seconds``;
* the prompt ``greet(name)`` (``name`` required), and the resources ``big://text`` (``BIG_RESOURCE_MB``
  megabytes of numbered lines, 1 by default), ``small://text``, ``json://data`` (a JSON object),
  ``image://dot.png`` (a 4x4 red PNG) and the template ``note://{topic}/{id}``;
* the prompt ``chat(topic)``: a user message, an assistant answer and a user follow-up.
"""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("dynamic-test-server")


@server.tool()
def whoami() -> str:
    """Which settings this process was started with."""
    return f"label={os.environ.get('LABEL', '')} pid={os.getpid()}"


@server.tool()
async def slow(seconds: float = 1.0) -> str:
    """Answer after some seconds."""
    await asyncio.sleep(seconds)
    return f"slept {seconds} label={os.environ.get('LABEL', '')}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool 'extra' and say the tool list changed."""

    def extra() -> str:
        """A tool added on the fly."""
        return "extra here"

    server.add_tool(extra, name="extra")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Say hello to {name}."


@server.resource("big://text")
def big_text() -> str:
    """A large text resource."""
    size = int(float(os.environ.get("BIG_RESOURCE_MB", "1")) * 1024 * 1024)
    lines, total, n = [], 0, 0
    while total < size:
        line = f"line {n} " + "x" * 60 + "\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)[:size]


@server.resource("small://text")
def small_text() -> str:
    """A small text resource."""
    return "just a few words"


@server.resource("json://data", mime_type="application/json")
def json_data() -> str:
    """A JSON document."""
    return '{"name": "robotlab", "tags": ["a", "b"], "nested": {"ok": true}}'


def _png() -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 4 for _ in range(4))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@server.resource("image://dot.png", mime_type="image/png")
def image_dot() -> bytes:
    """A tiny red square."""
    return _png()


@server.resource("note://{topic}/{id}")
def note(topic: str, id: str) -> str:
    """A note on a topic."""
    return f"note {id} about {topic}"


@server.prompt()
def chat(topic: str) -> list[dict[str, object]]:
    """A short scripted exchange about a topic."""
    return [
        {"role": "user", "content": {"type": "text", "text": f"Tell me about {topic}."}},
        {"role": "assistant", "content": {"type": "text", "text": f"{topic} is a big subject. What part?"}},
        {"role": "user", "content": {"type": "text", "text": "The basics, please."}},
    ]


if __name__ == "__main__":
    server.run("stdio")
