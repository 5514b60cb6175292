"""Opening one MCP server's transport on the SDK, and what its failures mean.

* stdio: the command is checked before it is started (:func:`resolve_command`: found, a program, with
  what to install when it is missing); the child gets the SDK's minimal environment, the variables of
  :data:`EXTRA_INHERITED_ENV` and its ``env``; its stderr goes to the pipe the connection reads; its stdout is
  read by :func:`workspace.mcp.stdio.stdio_client` (lines read in linear time, one at most 64 MiB).
* streamable HTTP and SSE: the entry's headers, its time limits and the OAuth sign-in
  (:mod:`workspace.mcp.oauth`).

:func:`explain` turns what the SDK or the transport raised while starting into a reason that names the
fix. The SDK logs a traceback for every stdout line that is not JSON-RPC and for a connection that needs
a sign-in; both are filtered here, because the connection reports them in words.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from mcp.shared.exceptions import MCPError as SDKError

from workspace.errors import MCPError
from workspace.mcp.config import ServerSpec
from workspace.mcp.masking import mask_url
from workspace.subprocess_fix import install as _install_subprocess_fix

_install_subprocess_fix()  # a process whose start is cancelled must not hang (see the module)

#: JSON-RPC error codes the SDK raises: the connection closed, a request timed out, no such method.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
METHOD_NOT_FOUND = -32601
#: Environment variables a stdio server inherits besides the SDK's minimal set
#: (HOME, LOGNAME, PATH, SHELL, TERM, USER). Anything else goes in the server's ``env``.
EXTRA_INHERITED_ENV = (
    "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
)


class _StdoutParseFilter(logging.Filter):
    """The SDK logs a traceback for every non-JSON stdout line; we report those ourselves."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Failed to parse JSONRPC message" not in record.getMessage()


logging.getLogger("mcp.client.stdio").addFilter(_StdoutParseFilter())


class _SignInFilter(logging.Filter):
    """A connection that needs a sign-in ends the SDK's transport with SignInRequired, which the SDK logs
    with a traceback ("Error in post_writer", "OAuth flow error"); the connection's status says it in words."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and any(type(e).__name__ == "SignInRequired" for e in leaves(exc)):
            return False
        return "needs you to sign in" not in record.getMessage()


for _name in ("mcp.client.streamable_http", "mcp.client.auth.oauth2", "mcp.client.sse"):
    logging.getLogger(_name).addFilter(_SignInFilter())


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(leaves(inner))
        return out
    return [exc]


#: What a stdout line holding bytes that are not UTF-8 is called (they are decoded as U+FFFD).
NOT_UTF8 = "bytes that are not UTF-8"


#: What a stdout line of JSON nested deeper than the SDK's parser reads (about 200 levels) is called.
TOO_DEEP = "a message nested too deep to parse (JSON past about 200 levels)"


def garbage_kind(line: str, exc: BaseException | None = None) -> str:
    """What a stdout line that is not JSON-RPC is, for messages: :data:`TOO_DEEP`, :data:`NOT_UTF8` or
    "something"."""
    if exc is not None and "recursion limit exceeded" in str(exc):
        return TOO_DEEP
    return NOT_UTF8 if "\ufffd" in line else "something"


def bad_line(exc: BaseException) -> str:
    """The offending text of a stdout line the SDK could not parse."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            value = errors()[0].get("input")
            if isinstance(value, str | bytes):
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                return text.strip()[:200]
        except Exception:
            pass
    text = str(exc)
    marker = "input_value="
    if marker in text:
        value = text.split(marker, 1)[1]
        for end in (", input_type=", "]"):
            if end in value:
                value = value.split(end, 1)[0]
                break
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        return value[:200]
    return text.splitlines()[0][:200] if text else type(exc).__name__


async def open_transport(
    spec: ServerSpec, stack: contextlib.AsyncExitStack, *, stderr_pipe: Callable[[], TextIO],
    oauth: Callable[[contextlib.AsyncExitStack], Awaitable[Any]],
    on_process: Callable[[Any], None] | None = None,
) -> tuple[Any, Any]:
    """The SDK's read and write streams for ``spec``, entered on ``stack``. ``stderr_pipe()`` is where a stdio
    server's stderr goes (called once the command is found); ``oauth(stack)`` is the sign-in of an HTTP server
    (None when it is never signed in to); ``on_process(process)`` gets a stdio server's child process once it
    runs (see :func:`server_process`)."""
    if spec.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters

        from workspace.mcp.stdio import client_for
        from workspace.secrets import keep_environment_private

        keep_environment_private()  # (the server gets the env below; ours is not readable as /proc/$PPID/environ)
        command = resolve_command(spec)
        env = {k: os.environ[k] for k in EXTRA_INHERITED_ENV if k in os.environ}
        env.update(spec.env)
        # Bytes that are not UTF-8 become U+FFFD: the line is then reported as such (see NOT_UTF8), instead of
        # ending the SDK's reader and every line after it ("no answer to the MCP handshake").
        params = StdioServerParameters(command=command, args=list(spec.args), env=env, cwd=spec.cwd,
                                       encoding_error_handler="replace")
        errlog = stderr_pipe()
        transport = client_for(params, errlog)
        try:
            streams = await stack.enter_async_context(transport)
        finally:
            errlog.close()  # the child holds its own copy; EOF comes when it exits
        process = server_process(transport)
        if on_process is not None and process is not None:
            on_process(process)
        return streams[0], streams[1]
    auth = await oauth(stack)
    if spec.transport == "http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        client = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(spec.headers), auth=auth,
                               timeout=httpx2.Timeout(spec.connect_timeout, read=max(300.0, spec.timeout)))
        )
        streams = await stack.enter_async_context(streamable_http_client(spec.url or "", http_client=client))
        return streams[0], streams[1]
    from mcp.client.sse import sse_client

    # No anyio timeout around this: a cancel scope must not cross the context's lifetime;
    # the HTTP client's own connect timeout bounds it.
    streams = await stack.enter_async_context(
        sse_client(spec.url or "", headers=dict(spec.headers), timeout=spec.connect_timeout,
                   sse_read_timeout=max(300.0, spec.timeout), auth=auth)
    )
    return streams[0], streams[1]


def server_process(transport: Any) -> Any:
    """The child process of the SDK's ``stdio_client`` context (entered), or None when it cannot be found.

    The SDK does not expose it; it is a local of the context's suspended generator. The connection needs it
    to kill the server when the SDK's own shutdown is cut short: a second cancellation of the task (the event
    loop closing, a stop that timed out) goes through the SDK's shielded shutdown before it kills the process,
    and its stdout reader then waits, shielded, for an end of file that a live server never sends.
    """
    frame = getattr(getattr(transport, "gen", None), "ag_frame", None)
    process = frame.f_locals.get("process") if frame is not None else None
    return process if isinstance(getattr(process, "pid", None), int) else None


def explain(
    exc: BaseException, phase: str, spec: ServerSpec, *, close_reason: str | None, sign_in: str | None,
    with_stderr: Callable[[str], str],
) -> str:
    """A reason that names the fix, from whatever the SDK or the transport raised in ``phase`` ("start",
    "handshake" or "ready"). ``close_reason``: why the connection closed, as the connection noticed it;
    ``sign_in``: what to do when the server needs a sign-in (None when it does not); ``with_stderr`` adds the
    server's last stderr lines to a reason."""
    errors = [e for e in leaves(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
    first = errors[0]
    for leaf in errors:  # prefer the most telling leaf
        if isinstance(leaf, MCPError | OSError | TimeoutError | SDKError):
            first = leaf
            break
    where = f"mcpServers.{spec.name}"
    failed = next((leaf for leaf in errors if type(leaf).__name__ == "SignInFailed"), None)
    if failed is not None:  # an interactive sign-in that did not finish: why
        return str(failed)
    if sign_in is not None:
        return sign_in
    if isinstance(first, MCPError):
        return str(first)
    if isinstance(first, FileNotFoundError) and spec.transport == "stdio":
        return f"command '{spec.command}' not found. " + install_hint(spec.command or "") + \
            f" or give its full path in {where}.command"
    if isinstance(first, PermissionError) and spec.transport == "stdio":
        return f"command '{spec.command}' cannot be run (permission denied): make it executable or fix " \
            f"{where}.command"
    garbage = bool(close_reason and "not JSON-RPC" in close_reason)
    if phase != "start" and (garbage or (
        spec.transport == "stdio" and close_reason and not isinstance(first, TimeoutError)
    )):
        assert close_reason is not None
        text = close_reason
        if phase == "handshake" and text == "the server exited":
            text = "the server exited before completing the MCP handshake"
            if spec.transport == "stdio":
                text += f" (check {where}.command and args)"
        return with_stderr(text)
    if isinstance(first, TimeoutError) and close_reason and NOT_UTF8 in close_reason:
        return with_stderr(close_reason)
    if isinstance(first, TimeoutError):
        return with_stderr(
            f"no answer to the MCP handshake within {spec.connect_timeout:g} s. Check that "
            f"{spec.describe() or 'it'} is an MCP server speaking {spec.transport}, or raise "
            f"{where}.connectTimeout if it is only slow to start"
        )
    if isinstance(first, SDKError):
        if first.code == CONNECTION_CLOSED:
            return with_stderr("the server closed the connection during the MCP handshake")
        if first.code == METHOD_NOT_FOUND and spec.transport != "stdio":
            return f"{mask_url(spec.url or '')} answered 404 Not Found: check {where}.url (the MCP endpoint " \
                "is usually /mcp, or /sse for SSE servers)"
        if first.code == REQUEST_TIMEOUT:
            return with_stderr(
                f"no answer to the MCP handshake within {spec.connect_timeout:g} s; raise "
                f"{where}.connectTimeout if the server is only slow to start"
            )
        hint = f"; check {where}.url and headers" if spec.transport != "stdio" else ""
        return with_stderr(f"the server answered the handshake with an error: {first.message}{hint}")
    name = type(first).__name__
    if spec.transport != "stdio" and ("Connect" in name or isinstance(first, ConnectionError)):
        return f"cannot connect to {mask_url(spec.url or '')}: {first}. Is the server running? " \
            f"Check {where}.url"
    if spec.transport != "stdio" and "HTTPStatusError" in name:
        status = getattr(getattr(first, "response", None), "status_code", "?")
        return f"{mask_url(spec.url or '')} answered HTTP {status}: check {where}.url and headers"
    return with_stderr(f"{name}: {first}")


def resolve_command(spec: ServerSpec) -> str:
    """The program a stdio server's ``command`` names, checked before it is started.

    A command with a path separator (``./srv.py``, ``bin/server``) is relative to the
    server's ``cwd`` when one is set (else to robotlab's working folder) and must be an
    executable file there; the absolute path is returned. A plain name (``npx``) is looked
    up on the ``PATH`` the server gets (its ``env.PATH`` when given, else robotlab's) and
    returned unchanged. Raises :class:`MCPError` naming the fix.
    """
    command = spec.command or ""
    where = f"mcpServers.{spec.name}"
    cwd = spec.cwd
    if cwd and not os.path.isdir(cwd):
        raise MCPError(f"the working folder '{cwd}' does not exist; fix {where}.cwd")
    if not command:
        raise MCPError(f"no command to start: set {where}.command")
    if os.sep in command or (os.altsep and os.altsep in command):
        base = cwd or os.getcwd()
        path = os.path.abspath(os.path.join(base, command))  # join keeps an absolute command as it is
        relative = f" (relative to {where}.cwd '{cwd}')" if cwd and not os.path.isabs(command) else ""
        if not os.path.exists(path):
            raise MCPError(f"command '{command}' not found: no such file {path}{relative}. "
                           f"Fix {where}.command")
        if os.path.isdir(path):
            raise MCPError(f"command '{command}' is a folder ({path}), not a program. Fix {where}.command")
        if os.name != "nt" and not os.access(path, os.X_OK):
            raise MCPError(f"command '{command}' cannot be run: {path} is not executable. Make it executable "
                           f"(chmod +x {path}) or start it through its interpreter ({where}.command: python, "
                           f"args: [{command}, ...])")
        return path
    search = spec.env.get("PATH")
    if search is not None and cwd:
        # The child looks up relative PATH entries from its own working folder.
        search = os.pathsep.join(os.path.join(cwd, entry) if entry else entry for entry in search.split(os.pathsep))
    if shutil.which(command, path=search) is None:
        on = f"on the PATH of {where}.env" if search is not None else "on PATH"
        raise MCPError(
            f"command '{command}' not found {on}. " + install_hint(command)
            + f" or give its full path in {where}.command"
        )
    return command


def install_hint(command: str) -> str:
    base = os.path.basename(command).lower()
    if base in ("npx", "node", "npm"):
        return "Install Node.js (it provides npx)"
    if base in ("uvx", "uv"):
        return "Install uv (https://docs.astral.sh/uv/)"
    if base in ("docker", "podman"):
        return f"Install {base}"
    if base.startswith("python"):
        return "Install Python"
    return f"Install '{command}'"
