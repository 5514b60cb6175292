"""The stdio transport of an MCP server: the SDK's ``stdio_client`` with a stdout reader that costs in
proportion to what the server writes, and a limit to one line.

The SDK's reader (``mcp.client.stdio.stdio_client``, mcp 2.3) joins what it holds of a line with each chunk
read and splits the whole of it again (``(buffer + chunk).split("\\n")``): a line of N bytes read in chunks of
64 KiB costs N²/128 KiB of copying, and a 100 MiB tool result took about 87 s of CPU, on the event loop of the
window, before the result was cut to :data:`~workspace.mcp.results.MAX_RESULT_CHARS`; only the call's time
limit ended it. Here each chunk is searched for a newline once, the pieces of a line are joined once when it
ends, and a line longer than :data:`MAX_LINE_BYTES` is not kept: the connection fails with
:class:`LineTooLong`, saying so, and the rest of the server's output is read and dropped until it is stopped.

Everything else is the SDK's: the process start (the command found, the environment, stderr), the message
parsing and the shutdown (stdin closed, the process tree stopped, every wait bounded), called as the SDK's own
``stdio_client`` calls them. Lines are split on the newline byte, which is never part of another character in
UTF-8 (the encoding the connection uses).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import anyio.lowlevel
from mcp.client import stdio as sdk
from mcp.shared.message import SessionMessage

from workspace.errors import MCPError

__all__ = ["MAX_LINE_BYTES", "SDK_PARTS", "LineTooLong", "client_for", "sdk_parts_missing", "stdio_client"]

#: The longest stdout line (one JSON-RPC message) of a stdio server that is read: 64 MiB, eight times what
#: a tool result keeps (:data:`~workspace.mcp.results.MAX_RESULT_CHARS`).
MAX_LINE_BYTES = 64 * 1024 * 1024


class LineTooLong(MCPError):
    """A stdio server wrote a line (one message) longer than the limit: the connection ends with it."""


def too_long(limit: int) -> LineTooLong:
    mib = limit / (1024 * 1024)
    return LineTooLong(f"the server wrote a message longer than {mib:g} MiB to stdout (one line of JSON-RPC); "
                       "it is not read: ask the tool for less at a time (a page, a range, a file it writes) or "
                       "fix the server")


class _Lines:
    """A line reader over chunks of bytes: :meth:`feed` gives the complete lines of a chunk; each byte is
    looked at once and a line's pieces are joined once, when it ends. Raises :class:`LineTooLong` as soon as
    the line being read is longer than ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if start < len(chunk):
                    self._parts.append(chunk[start:])
                    self._size += len(chunk) - start
                if self._size > self.limit:
                    raise too_long(self.limit)
                return lines
            if self._size + end - start > self.limit:
                raise too_long(self.limit)
            if self._parts:
                self._parts.append(chunk[start:end])
                lines.append(b"".join(self._parts))
                self._parts = []
                self._size = 0
            else:
                lines.append(chunk[start:end])
            start = end + 1


#: The SDK's own parts this reader is built of (private to ``mcp.client.stdio``: a release may rename them).
SDK_PARTS = ("_WRITER_FLUSH_TIMEOUT", "_aclose_all", "_create_platform_compatible_process", "_drain_stdout",
             "_get_executable_command", "_parse_line", "_stop_server_process", "get_default_environment", "logger")


def sdk_parts_missing(module: Any = sdk) -> list[str]:
    """The parts of :data:`SDK_PARTS` ``module`` lacks: with any missing, :func:`client_for` gives the SDK's own
    ``stdio_client`` (quadratic on a huge line, bounded only by the call's time limit) instead of failing."""
    return [name for name in SDK_PARTS if not hasattr(module, name)]


def client_for(server: Any, errlog: TextIO) -> Any:
    """:func:`stdio_client`, or the SDK's own when it no longer has the parts this one is built of (logged once)."""
    missing = sdk_parts_missing()
    if missing:
        if not _warned:
            _warned.append(True)
            log.warning("%s lacks %s: stdio MCP servers are read by the SDK's own reader (no %g MiB line limit)",
                        sdk.__name__, ", ".join(missing), MAX_LINE_BYTES / (1 << 20))
        return sdk.stdio_client(server, errlog=errlog)
    return stdio_client(server, errlog)


_warned: list[bool] = []  # whether the fallback was logged (once a process)
log = logging.getLogger("workspace.mcp")


@asynccontextmanager
async def stdio_client(server: Any, errlog: TextIO, *,
                       max_line_bytes: int | None = None) -> AsyncGenerator[tuple[Any, Any], None]:
    """The SDK's ``stdio_client(server, errlog)`` (``server``: its ``StdioServerParameters``), with the stdout
    reader of this module: a line longer than ``max_line_bytes`` (None: :data:`MAX_LINE_BYTES`) is sent to the
    session as :class:`LineTooLong` and nothing after it is."""
    command = await sdk._get_executable_command(server.command)
    process = await sdk._create_platform_compatible_process(
        command=command, args=server.args, env=sdk.get_default_environment() | (server.env or {}), errlog=errlog,
        cwd=server.cwd)
    # The spawn succeeded; no awaits until the task group is entered (a cancellation in the gap would leak it).
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout, "Opened process is missing stdout"
        lines = _Lines(MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes)
        try:
            async with read_stream_writer:
                try:
                    async for chunk in process.stdout:
                        try:
                            complete = lines.feed(chunk)
                        except LineTooLong as exc:
                            await read_stream_writer.send(exc)
                            return  # (the drain below reads the rest and drops it)
                        complete.reverse()
                        while complete:  # each line's bytes let go once decoded, before the text is parsed
                            text = complete.pop().decode(server.encoding, server.encoding_error_handler)
                            try:
                                await read_stream_writer.send(sdk._parse_line(text))
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return  # the session is gone; only the drain below remains
                finally:
                    await sdk._drain_stdout(process)
        except anyio.ClosedResourceError:
            pass  # our own shutdown closed the stdout stream under the read
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                sdk.logger.exception("Reading from the MCP server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin, "Opened process is missing stdin"
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    json = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    data = (json + "\n").encode(encoding=server.encoding, errors=server.encoding_error_handler)
                    await process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_stream_writer.aclose()  # the session sees the connection end, not a request hanging
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()  # the reader goes to its drain: a server stuck writing stdout then reads stdin
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT) as flush_scope:
            await writer_done.wait()
        if flush_scope.cancelled_caught:
            await anyio.lowlevel.cancel_shielded_checkpoint()
        await sdk._stop_server_process(process)
        await sdk._aclose_all(read_stream, write_stream, read_stream_writer, write_stream_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):  # every wait inside is bounded; the process must not leak
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
