"""One connection to one MCP server, on the official SDK (stdio, streamable HTTP, SSE).

The SDK's transports and ``ClientSession`` are async context managers built on anyio
task groups: they must be entered and exited by the same task. So each connection
runs in its own long-lived asyncio task, the *actor*, which enters the transport and
the session, performs the handshake, lists the tools, reports ``ready`` and then
waits until it is told to close (or the server goes away). Calls come from any task
of the same event loop: they use the session directly (the session's dispatcher
correlates requests and responses), so a call costs what the SDK's own
``ClientSession.call_tool`` costs.

Between the transport and the session sits a small pump that forwards messages and
notices what the SDK does not report: the server closing its stdout (it crashed or
exited) and lines on stdout that are not JSON-RPC. Either one fails the connection
with a reason that names the fix; pending calls end at once with that reason, and the
next call starts the server again.

Cancellation: when the task awaiting :meth:`Connection.call_tool` is cancelled (the
user stopped the run), the SDK's dispatcher sends ``notifications/cancelled`` for the
request before the cancellation propagates (``cancel_on_abandon``, the default for
every request but ``initialize``), and the connection stays usable. A per-call time
limit (``timeout``) is the SDK's request timeout, which sends the same notification.

A server's stderr goes to a pipe read by a small thread; the last lines are kept for
the status view (values of the server's ``env`` and ``headers`` are masked).

Why one module of this size: :class:`Connection` is one actor — the transport, the session, the
handshake, the server's requests (sampling, elicitation, roots), its notifications and the calls all
live in the task that entered the SDK's context managers, and must; splitting the class would split
that task's state across modules without making any part usable alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import anyio
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession
from mcp.shared.exceptions import MCPError as SDKError

from workspace.errors import MCPError
from workspace.mcp.config import ServerSpec
from workspace.mcp.masking import mask_url
from workspace.mcp.status import ServerState
from workspace.secrets import redact

log = logging.getLogger("workspace.mcp")

CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
METHOD_NOT_FOUND = -32601

#: Lines of stderr kept per server.
STDERR_LINES = 200
#: Lines longer than this are cut in the stderr view.
MAX_LINE = 2000
#: Non-JSON lines tolerated on stdout before the handshake (some servers print a banner).
GARBAGE_BEFORE_READY = 20
#: After a failed start, automatic use waits this long before trying again (restart() does not wait).
RETRY_AFTER_FAILED_START = 10.0
#: How long stop() waits for a clean shutdown before cancelling the actor.
STOP_TIMEOUT = 10.0
#: Environment variables a stdio server inherits besides the SDK's minimal set
#: (HOME, LOGNAME, PATH, SHELL, TERM, USER). Anything else goes in the server's ``env``.
EXTRA_INHERITED_ENV = (
    "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
)

CLIENT_INFO = types.Implementation(name="robotlab-workspace", version="0.1.0")


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
        if exc is not None and any(type(e).__name__ == "SignInRequired" for e in _leaves(exc)):
            return False
        return "needs you to sign in" not in record.getMessage()


for _name in ("mcp.client.streamable_http", "mcp.client.auth.oauth2", "mcp.client.sse"):
    logging.getLogger(_name).addFilter(_SignInFilter())


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(_leaves(inner))
        return out
    return [exc]


def _bad_line(exc: BaseException) -> str:
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


class Connection:
    """A server connection owned by an actor task; see the module documentation."""

    def __init__(
        self, spec: ServerSpec, *, on_change: Callable[[Connection], Any] | None = None,
        stderr_lines: int = STDERR_LINES, client: Any = None,
    ) -> None:
        #: The manager (its ``requests`` and ``roots``); None for a connection of its own (a test).
        self.client = client
        #: Tool calls in flight (the manager's ClientRequests counts them).
        self.active_calls = 0
        #: Replaced or removed by a configuration change: stops once its calls are done.
        self.retired = False
        self.retire_reason: str | None = None
        #: The server's log notifications: (time, level, logger, text), newest last.
        self.log: deque[tuple[float, str, str, str]] = deque(maxlen=stderr_lines)
        #: Subscribed resource URIs -> whether the server said it changed since it was last read.
        self.subscriptions: dict[str, bool] = {}
        #: When each subscribed resource last changed (time.time()), per the server's notifications.
        self.changed_at: dict[str, float] = {}
        #: Bumped on ``notifications/resources/list_changed`` (the dock lists the resources again).
        self.resources_version = 0
        #: OAuth sign-in (workspace.mcp.oauth): None when the server never asked for it, else "signed-in",
        #: "sign-in", "sign-in-again" or "signing-in" (the browser is open at sign_in_url).
        self.auth_state: str | None = None
        self.sign_in_url: str | None = None
        #: The next start may sign in interactively (MCPManager.sign_in).
        self.sign_in_next = False
        self._auth: Any = None
        self._refused: Any = None
        self._spec = spec
        self._secrets: list[str] = []
        self.spec = spec
        self.state = ServerState.STOPPED
        self.reason: str | None = None
        self.tools: list[types.Tool] = []
        self.server_info: str | None = None
        self.protocol_version: str | None = None
        self.instructions: str | None = None
        self.capabilities: types.ServerCapabilities | None = None
        self.stderr: deque[str] = deque(maxlen=stderr_lines)
        self.since = time.time()
        self.connect_seconds: float | None = None
        self.starts = 0
        #: When the current (or last) start began (time.monotonic()); None before the first.
        self.started_at: float | None = None
        self._on_change = on_change
        self._session: ClientSession | None = None
        self._actor: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._close: asyncio.Event | None = None
        self._close_reason: str | None = None
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failed_start_at: float | None = None
        self._stderr_lock = threading.Lock()
        self._stderr_flush_pending = False
        self._background: set[asyncio.Task[Any]] = set()
        self._garbage: list[str] = []
        self._stderr_total = 0
        self._start_mark = 0
        self._stderr_eof: threading.Event | None = None

    # -- state ------------------------------------------------------------------------------
    @property
    def spec(self) -> ServerSpec:
        return self._spec

    @spec.setter
    def spec(self, spec: ServerSpec) -> None:
        """New settings: used from the next start (a running connection keeps its own)."""
        self._spec = spec
        self._secrets = sorted(
            {v for v in (*spec.env.values(), *spec.headers.values(), *spec.filled_values) if v and len(v) >= 6},
            key=len, reverse=True,
        )

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def session(self) -> ClientSession | None:
        """The live session when ready (for callers that want the raw SDK), else None."""
        return self._session if self.state is ServerState.READY else None

    @property
    def running(self) -> bool:
        return self._actor is not None and not self._actor.done()

    def _set_state(self, state: ServerState, reason: str | None = None) -> None:
        self.state = state
        self.reason = reason
        self.since = time.time()
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change(self)
            except Exception:  # pragma: no cover - the hub already guards listeners
                log.exception("MCP status callback failed")

    def note(self, line: str) -> None:
        """Add a line to the stderr view (our own notes are prefixed with ``[robotlab]``)."""
        self._add_stderr(f"[robotlab] {line}")
        self._changed()

    def _mask(self, line: str) -> str:
        for secret in self._secrets:
            if secret in line:
                line = line.replace(secret, "***")
        return redact(line)  # and every other known secret (interpolated args, keyring values, ...)

    def _add_stderr(self, line: str) -> None:
        line = self._mask(line.rstrip("\r\n"))
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE] + " …"
        with self._stderr_lock:
            self.stderr.append(line)
            self._stderr_total += 1

    def stderr_tail(self, lines: int = 5, *, this_start: bool = False) -> list[str]:
        """The last ``lines`` lines (only those since the current start when ``this_start``)."""
        with self._stderr_lock:
            if this_start:
                lines = min(lines, self._stderr_total - self._start_mark)
            return list(self.stderr)[-lines:] if lines > 0 else []

    def _bound_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            if not self._loop.is_closed():
                raise MCPError(
                    f"MCP server '{self.name}' is connected from another event loop; use one manager per loop"
                )
            # The old loop is gone (and took its actor with it): start afresh.
            self._actor = None
            self._session = None
            self._ready = None
            if self.state in (ServerState.READY, ServerState.STARTING):
                self.state = ServerState.STOPPED
        self._loop = loop

    # -- lifecycle ---------------------------------------------------------------------------
    async def ensure_ready(self, *, retry: bool = False) -> ClientSession:
        """The ready session, starting (or restarting after a crash) the server if needed.

        Raises :class:`workspace.errors.MCPError` with the reason when it cannot start. A
        start that failed less than :data:`RETRY_AFTER_FAILED_START` seconds ago is not tried
        again unless ``retry`` is true (so every run does not wait for a broken server).
        """
        session = self._session
        if session is not None and self.state is ServerState.READY:
            return session
        self._bound_loop()
        actor = self._actor
        if actor is not None and not actor.done() and (
            self._stopping or (self._close is not None and self._close.is_set())
        ):
            # The connection died (or is being stopped): let the actor finish its clean-up first.
            await asyncio.wait({actor}, timeout=STOP_TIMEOUT)
        if not self.running:
            if (
                not retry and self.state is ServerState.FAILED and self._failed_start_at is not None
                and time.monotonic() - self._failed_start_at < RETRY_AFTER_FAILED_START
            ):
                raise MCPError(self._failure_text())
            self._start()
        ready = self._ready
        assert ready is not None
        await ready.wait()
        session = self._session
        if session is None or self.state is not ServerState.READY:
            raise MCPError(self._failure_text())
        return session

    def begin(self, *, retry: bool = False) -> bool:
        """Start the server in the background if it is not up or starting; returns at once.

        False when it is not started: a start failed less than :data:`RETRY_AFTER_FAILED_START`
        seconds ago (unless ``retry``; its status says why). Wait with :meth:`wait_settled`.
        """
        if self._session is not None and self.state is ServerState.READY:
            return True
        self._bound_loop()
        actor = self._actor
        if actor is not None and not actor.done() and (
            self._stopping or (self._close is not None and self._close.is_set())
        ):
            # The connection is going away: let ensure_ready wait for its clean-up, in the background.
            task = asyncio.get_running_loop().create_task(self._ensure_quietly(retry), name=f"mcp-begin-{self.name}")
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return True
        if self.running:
            return True
        if (
            not retry and self.state is ServerState.FAILED and self._failed_start_at is not None
            and time.monotonic() - self._failed_start_at < RETRY_AFTER_FAILED_START
        ):
            return False
        self._start()
        return True

    async def _ensure_quietly(self, retry: bool) -> None:
        with contextlib.suppress(MCPError):
            await self.ensure_ready(retry=retry)

    async def wait_settled(self, timeout: float | None) -> bool:
        """Wait (at most ``timeout`` seconds) until the current start is over; True when it is ready."""
        ready = self._ready
        if ready is not None and self.running and not ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ready.wait(), timeout)
        return self.state is ServerState.READY and self._session is not None

    def _failure_text(self) -> str:
        return f"MCP server '{self.name}' is not available: {self.reason or 'it stopped'}"

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self.starts += 1
        self.started_at = time.monotonic()
        self._ready = asyncio.Event()
        self._close = asyncio.Event()
        self._close_reason = None
        self._garbage = []
        self._stopping = False
        with self._stderr_lock:
            self._start_mark = self._stderr_total
        self._set_state(ServerState.STARTING)
        self._actor = loop.create_task(self._run(self._ready, self._close), name=f"mcp-server-{self.name}")

    async def start(self) -> None:
        """Start the server if it is not running; returns when it is ready (or raises)."""
        await self.ensure_ready(retry=True)

    def request_stop(self, reason: str | None = None) -> asyncio.Task[None] | None:
        """Begin stopping (synchronously: the next use waits and starts afresh); returns the actor."""
        actor = self._actor
        if actor is None or actor.done():
            return None
        self._stopping = True
        self._close_reason = reason or "the server was stopped"
        if self.state is ServerState.STARTING:
            actor.cancel()
        elif self._close is not None:
            self._close.set()
        return actor

    async def stop(self, reason: str | None = None) -> None:
        """Stop the server: in-flight calls end with an error, the process is shut down."""
        actor = self.request_stop(reason)
        if actor is None:
            if self.state is not ServerState.STOPPED or reason:
                self._set_state(ServerState.STOPPED, reason)
            return
        done, _ = await asyncio.wait({actor}, timeout=STOP_TIMEOUT)
        if not done:
            actor.cancel()
            await asyncio.wait({actor}, timeout=STOP_TIMEOUT)
        if reason:
            self.reason = reason
            self._changed()

    async def restart(self) -> None:
        """Stop and start again (raises MCPError when the new start fails)."""
        await self.stop()
        self._failed_start_at = None
        await self.ensure_ready(retry=True)

    # -- the actor ---------------------------------------------------------------------------
    async def _run(self, ready: asyncio.Event, close: asyncio.Event) -> None:
        started = time.monotonic()
        phase = "start"
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._open_transport(stack)
                group = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(group.cancel_scope.cancel)
                send, receive = anyio.create_memory_object_stream[Any](0)
                group.start_soon(self._pump, read, send, close, write)
                from workspace.mcp.callbacks import session_callbacks

                session = await stack.enter_async_context(
                    ClientSession(
                        receive, write, read_timeout_seconds=self.spec.connect_timeout,
                        message_handler=self._on_message, client_info=CLIENT_INFO, **session_callbacks(self),
                    )
                )
                phase = "handshake"
                # Signing in waits for a person (its own limit: workspace.mcp.oauth.SIGN_IN_TIMEOUT).
                with anyio.fail_after(None if self.sign_in_next else self.spec.connect_timeout):
                    init = await session.initialize()
                    self.capabilities = init.capabilities
                    self.tools = await self._list_tools(session) if init.capabilities.tools is not None else []
                info = init.server_info
                self.server_info = f"{info.name} {info.version}".strip() if info else None
                self.protocol_version = init.protocol_version
                self.instructions = init.instructions
                self.connect_seconds = time.monotonic() - started
                self._failed_start_at = None
                self._session = session
                if self._auth is not None:
                    await self._auth.signed_in_now()
                    if self._auth.signed_in:
                        self.auth_state, self.sign_in_url = "signed-in", None
                phase = "ready"
                self._set_state(ServerState.READY)
                ready.set()
                if self.subscriptions and init.capabilities.resources is not None:
                    group.start_soon(self._resubscribe, session)
                await close.wait()
                self._session = None
        except BaseException as exc:
            self._session = None
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            if self._stopping or all(isinstance(e, asyncio.CancelledError) for e in _leaves(exc)):
                # Stopped on purpose, or the event loop is shutting down: the actor just ends.
                reason = None if self._stopping and self._close_reason == "the server was stopped" else (
                    self._close_reason if self._stopping else "the connection was cancelled")
                self._set_state(ServerState.STOPPED, reason)
                return
            reason = self._explain(exc, phase)
            if self.auth_state == "signing-in":  # the sign-in did not finish: Sign in shows again
                self.auth_state, self.sign_in_url = "sign-in", None
            if phase != "ready":
                self._failed_start_at = time.monotonic()
            self._set_state(ServerState.FAILED, reason)
            log.info("MCP server '%s' failed: %s", self.name, reason)
        else:
            if self._stopping:
                reason = None if self._close_reason == "the server was stopped" else self._close_reason
                self._set_state(ServerState.STOPPED, reason)
            elif self.state is not ServerState.FAILED:
                reason = self._with_stderr(self._close_reason or "the server closed the connection")
                self._set_state(ServerState.FAILED, reason)
                log.info("MCP server '%s' failed: %s", self.name, reason)
        finally:
            self._session = None
            ready.set()

    async def _open_transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        spec = self.spec
        if spec.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command = self._check_command()
            env = {k: os.environ[k] for k in EXTRA_INHERITED_ENV if k in os.environ}
            env.update(spec.env)
            params = StdioServerParameters(command=command, args=list(spec.args), env=env, cwd=spec.cwd)
            errlog = self._stderr_pipe()
            try:
                streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            finally:
                errlog.close()  # the child holds its own copy; EOF comes when it exits
            return streams[0], streams[1]
        auth = await self._oauth(stack)
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

    async def _oauth(self, stack: contextlib.AsyncExitStack) -> Any:
        """The OAuth sign-in of an HTTP server (None when it is never signed in to; see workspace.mcp.oauth)."""
        from workspace.mcp.oauth import create_auth, oauth_options

        options = oauth_options(self.spec)
        self._auth = None
        if options is None or not self.spec.url:
            return None
        auth = await create_auth(self.name, self.spec.url, options, interactive=self.sign_in_next,
                                 opener=getattr(self.client, "sign_in_opener", None), on_state=self._on_auth_state)
        stack.push_async_callback(auth.aclose)
        self._auth = auth
        return auth

    def _on_auth_state(self, state: str, url: str | None) -> None:
        from workspace.mcp.oauth import SIGN_IN, SIGN_IN_AGAIN, sign_in_message

        self.auth_state, self.sign_in_url = state, url
        if state in (SIGN_IN, SIGN_IN_AGAIN):
            self._close_reason = sign_in_message(self.name, again=state == SIGN_IN_AGAIN)
        self._changed()

    @property
    def needs_sign_in(self) -> bool:
        return self.auth_state in ("sign-in", "sign-in-again")

    def _check_command(self) -> str:
        """The command to start, resolved the way the server will see it (see :func:`resolve_command`)."""
        return resolve_command(self.spec)

    def _stderr_pipe(self) -> TextIO:
        read_fd, write_fd = os.pipe()
        loop = asyncio.get_running_loop()
        self._stderr_eof = eof = threading.Event()
        thread = threading.Thread(target=self._read_stderr, args=(read_fd, loop, eof), daemon=True,
                                  name=f"mcp-stderr-{self.name}")
        thread.start()
        errlog: TextIO = os.fdopen(write_fd, "w")
        return errlog

    def _read_stderr(self, fd: int, loop: asyncio.AbstractEventLoop, eof: threading.Event) -> None:
        try:
            self._read_stderr_lines(fd, loop)
        finally:
            eof.set()

    def _read_stderr_lines(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for raw in pipe:
                self._add_stderr(raw.decode("utf-8", "replace"))
                with self._stderr_lock:
                    if self._stderr_flush_pending:
                        continue
                    self._stderr_flush_pending = True
                try:
                    loop.call_soon_threadsafe(self._flush_stderr)
                except RuntimeError:  # the loop is closed: keep reading so the child never blocks
                    with self._stderr_lock:
                        self._stderr_flush_pending = False

    def _flush_stderr(self) -> None:
        with self._stderr_lock:
            self._stderr_flush_pending = False
        self._changed()

    async def _pump(self, source: MemoryObjectReceiveStream[Any], sink: MemoryObjectSendStream[Any],
                    close: asyncio.Event, write: MemoryObjectSendStream[Any] | None = None) -> None:
        garbage = 0
        try:
            async with sink:
                async for item in source:
                    if isinstance(item, Exception):
                        line = _bad_line(item)
                        self.note(f"stdout line that is not JSON-RPC: {line}")
                        if len(self._garbage) < 3:
                            self._garbage.append(line)
                        garbage += 1
                        if self.state is ServerState.READY or garbage >= GARBAGE_BEFORE_READY:
                            self._close_reason = (
                                f"the server wrote something that is not JSON-RPC to stdout: {line!r}. "
                                "An MCP stdio server must write only JSON-RPC messages to stdout (logs belong "
                                "on stderr): fix the server or its arguments"
                            )
                            return
                        continue
                    if write is not None and self._refuse(item):
                        await write.send(self._refused)  # answered here, with what is wrong
                        continue
                    await sink.send(item)
                # End of stdout: the process is exiting. Give its last stderr lines a moment to
                # arrive, so the error the pending calls get can quote them.
                eof = self._stderr_eof
                if eof is not None:
                    for _ in range(25):
                        if eof.is_set():
                            break
                        await anyio.sleep(0.02)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            if self._close_reason is None:
                self._close_reason = (
                    "the server exited" if self.spec.transport == "stdio" else "the server closed the connection"
                )
            close.set()
            if not self._stopping and self.state is ServerState.READY:
                # Say so at once: calls that fail now, and the status view, must not see "ready".
                self._set_state(ServerState.FAILED, self._with_stderr(self._close_reason))

    def _refuse(self, item: Any) -> bool:
        """A sampling or elicitation request with parameters that are not valid: say so (the server's output,
        the run calling it) and keep the answer in ``_refused`` (see callbacks.request_problem)."""
        from workspace.mcp.callbacks import refusal, request_problem

        found = request_problem(item)
        if found is None:
            return False
        request_id, method, why = found
        text = f"{self.name} asked for {method}, but {why}"
        self.note(text)
        requests = getattr(self.client, "requests", None)
        if requests is not None:
            requests.refused(self, method, text)
        self._refused = refusal(request_id, f"{method}: {why}")
        return True

    async def _list_tools(self, session: ClientSession) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(100):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            tools.extend(result.tools)
            cursor = result.next_cursor
            if not cursor:
                break
        return tools

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.note(f"transport error: {message}")
            return
        if isinstance(message, types.ToolListChangedNotification):
            task = asyncio.get_running_loop().create_task(self._refresh_tools())
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        elif isinstance(message, types.ResourceUpdatedNotification):
            uri = str(message.params.uri)
            if uri in self.subscriptions:
                self.subscriptions[uri] = True
                self.changed_at[uri] = time.time()
                self._changed()
        elif isinstance(message, types.ResourceListChangedNotification):
            self.resources_version += 1
            self._changed()

    def add_log(self, level: str, text: str, logger: str | None = None) -> None:
        """A log notification of the server (kept with its level; also in the stderr view)."""
        line = self._mask(text)
        self.log.append((time.time(), level, logger or "", line[:MAX_LINE]))
        self._add_stderr(f"[{level}] {logger + ': ' if logger else ''}{text}")
        self._changed()

    async def roots_changed(self) -> None:
        """Tell the server the client's roots changed (``notifications/roots/list_changed``)."""
        session = self.session
        if session is None:
            return
        try:
            with warnings.catch_warnings():  # roots are deprecated by the 2026 drafts; servers still use them
                warnings.simplefilter("ignore")
                await session.send_roots_list_changed()
        except Exception as exc:
            self.note(f"could not tell the server the roots changed: {exc}")

    async def subscribe(self, uri: str, *, on: bool = True) -> None:
        """Subscribe to (or unsubscribe from) a resource's updates (``resources/subscribe``)."""
        await self.ensure_ready()
        if self.capabilities is None or self.capabilities.resources is None or \
                not self.capabilities.resources.subscribe:
            raise MCPError(f"MCP server '{self.name}' does not offer resource subscriptions (it did not announce "
                           "resources.subscribe): watch it by reading the resource again")

        async def send(session: ClientSession) -> Any:
            with warnings.catch_warnings():  # deprecated by the 2026 drafts; servers still offer it
                warnings.simplefilter("ignore")
                return await (session.subscribe_resource(uri) if on else session.unsubscribe_resource(uri))

        await self._request(f"resources/{'subscribe' if on else 'unsubscribe'} '{uri}'", send)
        if on:
            self.subscriptions.setdefault(uri, False)
        else:
            self.subscriptions.pop(uri, None)
            self.changed_at.pop(uri, None)
        self._changed()

    async def _resubscribe(self, session: ClientSession) -> None:
        """After a (re)start the server knows no subscriptions: ask again for those kept here."""
        for uri in list(self.subscriptions):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await session.subscribe_resource(uri)
            except Exception as exc:
                self.note(f"could not subscribe to {uri} again: {exc}")

    async def _refresh_tools(self) -> None:
        session = self.session
        if session is None:
            return
        try:
            self.tools = await self._list_tools(session)
        except Exception as exc:
            self.note(f"could not refresh the tool list: {exc}")
            return
        self._changed()

    def _with_stderr(self, reason: str) -> str:
        if self._garbage and "not JSON-RPC" not in reason:
            reason += (
                f". It wrote this to stdout, which is not JSON-RPC: {self._garbage[0]!r} (an MCP stdio server "
                "must write only JSON-RPC messages to stdout; logs belong on stderr)"
            )
        tail = [line for line in self.stderr_tail(8, this_start=True) if not line.startswith("[robotlab]")][-3:]
        if tail:
            return f"{reason}. Last stderr: " + " | ".join(tail)
        return reason

    def _explain(self, exc: BaseException, phase: str) -> str:
        """A reason that names the fix, from whatever the SDK or the transport raised."""
        leaves = [e for e in _leaves(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
        first = leaves[0]
        for leaf in leaves:  # prefer the most telling leaf
            if isinstance(leaf, MCPError | OSError | TimeoutError | SDKError):
                first = leaf
                break
        spec = self.spec
        where = f"mcpServers.{self.name}"
        failed = next((leaf for leaf in leaves if type(leaf).__name__ == "SignInFailed"), None)
        if failed is not None:  # an interactive sign-in that did not finish: why
            return str(failed)
        if self.needs_sign_in:
            from workspace.mcp.oauth import sign_in_message

            return sign_in_message(self.name, again=self.auth_state == "sign-in-again")
        if isinstance(first, MCPError):
            return str(first)
        if isinstance(first, FileNotFoundError) and spec.transport == "stdio":
            return f"command '{spec.command}' not found. " + _install_hint(spec.command or "") + \
                f" or give its full path in {where}.command"
        if isinstance(first, PermissionError) and spec.transport == "stdio":
            return f"command '{spec.command}' cannot be run (permission denied): make it executable or fix " \
                f"{where}.command"
        garbage = bool(self._close_reason and "not JSON-RPC" in self._close_reason)
        if phase != "start" and (garbage or (
            spec.transport == "stdio" and self._close_reason and not isinstance(first, TimeoutError)
        )):
            assert self._close_reason is not None
            text = self._close_reason
            if phase == "handshake" and text == "the server exited":
                text = "the server exited before completing the MCP handshake"
                if spec.transport == "stdio":
                    text += f" (check {where}.command and args)"
            return self._with_stderr(text)
        if isinstance(first, TimeoutError):
            return self._with_stderr(
                f"no answer to the MCP handshake within {spec.connect_timeout:g} s. Check that "
                f"{spec.describe() or 'it'} is an MCP server speaking {spec.transport}, or raise "
                f"{where}.connectTimeout if it is only slow to start"
            )
        if isinstance(first, SDKError):
            if first.code == CONNECTION_CLOSED:
                return self._with_stderr("the server closed the connection during the MCP handshake")
            if first.code == METHOD_NOT_FOUND and spec.transport != "stdio":
                return f"{mask_url(spec.url or '')} answered 404 Not Found: check {where}.url (the MCP endpoint " \
                    "is usually /mcp, or /sse for SSE servers)"
            if first.code == REQUEST_TIMEOUT:
                return self._with_stderr(
                    f"no answer to the MCP handshake within {spec.connect_timeout:g} s; raise "
                    f"{where}.connectTimeout if the server is only slow to start"
                )
            hint = f"; check {where}.url and headers" if spec.transport != "stdio" else ""
            return self._with_stderr(f"the server answered the handshake with an error: {first.message}{hint}")
        name = type(first).__name__
        if spec.transport != "stdio" and ("Connect" in name or isinstance(first, ConnectionError)):
            return f"cannot connect to {mask_url(spec.url or '')}: {first}. Is the server running? " \
                f"Check {where}.url"
        if spec.transport != "stdio" and "HTTPStatusError" in name:
            status = getattr(getattr(first, "response", None), "status_code", "?")
            return f"{mask_url(spec.url or '')} answered HTTP {status}: check {where}.url and headers"
        return self._with_stderr(f"{name}: {first}")

    # -- requests ----------------------------------------------------------------------------
    def _call_error(self, exc: SDKError, what: str, timeout: float | None) -> MCPError:
        where = f"mcpServers.{self.name}"
        if exc.code == REQUEST_TIMEOUT:
            return MCPError(
                f"MCP server '{self.name}' did not answer {what} within {timeout or self.spec.timeout:g} s; the "
                f"request was cancelled. Raise {where}.timeout if the tool is just slow"
            )
        if exc.code == CONNECTION_CLOSED and self.needs_sign_in:
            from workspace.mcp.oauth import sign_in_message

            return MCPError(sign_in_message(self.name, again=self.auth_state == "sign-in-again"))
        if exc.code == CONNECTION_CLOSED:
            reason = self._close_reason or self.reason or "the connection closed"
            if reason == "the server exited":
                reason = "the server exited (it may have crashed)"
            return MCPError(self._with_stderr(
                f"MCP server '{self.name}' stopped during {what}: {reason}. It is started again on the next call"
            ))
        return MCPError(f"MCP server '{self.name}' answered {what} with an error: {exc.message} (code {exc.code})")

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout: float | None = None,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
    ) -> types.CallToolResult:
        """Call a tool; errors of the connection raise MCPError (a tool's own error is a result)."""
        session = self._session
        if session is None or self.state is not ServerState.READY:
            session = await self.ensure_ready()
        limit = timeout if timeout is not None else self.spec.timeout
        try:
            return await session.call_tool(name, arguments, read_timeout_seconds=limit,
                                           progress_callback=_progress_fn(progress))
        except SDKError as exc:
            raise self._call_error(exc, f"'{name}'", limit) from None
        except RuntimeError as exc:  # invalid structured content, an unexpected result shape
            raise MCPError(f"MCP server '{self.name}' returned an unusable result for '{name}': {exc}") from None

    async def _request(self, what: str, fn: Callable[[ClientSession], Any]) -> Any:
        session = await self.ensure_ready()
        try:
            return await fn(session)
        except SDKError as exc:
            raise self._call_error(exc, what, None) from None

    async def list_tools(self, *, refresh: bool = False) -> list[types.Tool]:
        session = await self.ensure_ready()
        if refresh:
            try:
                self.tools = await self._list_tools(session)
            except SDKError as exc:
                raise self._call_error(exc, "tools/list", None) from None
            self._changed()
        return list(self.tools)

    async def list_prompts(self) -> list[types.Prompt]:
        await self.ensure_ready()
        if self.capabilities is None or self.capabilities.prompts is None:
            return []

        async def fetch(session: ClientSession) -> list[types.Prompt]:
            return await _paginate(session.list_prompts, "prompts")

        result: list[types.Prompt] = await self._request("prompts/list", fetch)
        return result

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> types.GetPromptResult:
        async def fetch(session: ClientSession) -> types.GetPromptResult:
            return await session.get_prompt(name, arguments)

        result: types.GetPromptResult = await self._request(f"prompt '{name}'", fetch)
        return result

    async def list_resources(self) -> list[types.Resource]:
        await self.ensure_ready()
        if self.capabilities is None or self.capabilities.resources is None:
            return []

        async def fetch(session: ClientSession) -> list[types.Resource]:
            return await _paginate(session.list_resources, "resources")

        result: list[types.Resource] = await self._request("resources/list", fetch)
        return result

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        await self.ensure_ready()
        if self.capabilities is None or self.capabilities.resources is None:
            return []

        async def fetch(session: ClientSession) -> list[types.ResourceTemplate]:
            return await _paginate(session.list_resource_templates, "resource_templates")

        result: list[types.ResourceTemplate] = await self._request("resources/templates/list", fetch)
        return result

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        async def fetch(session: ClientSession) -> types.ReadResourceResult:
            return await session.read_resource(uri)

        result: types.ReadResourceResult = await self._request(f"resource '{uri}'", fetch)
        if self.subscriptions.get(uri):
            self.subscriptions[uri] = False  # read since it changed
            self._changed()
        return result


async def _paginate(method: Callable[..., Any], attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        result = await method(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        items.extend(getattr(result, attr))
        cursor = result.next_cursor
        if not cursor:
            break
    return items


def _progress_fn(progress: Callable[[float, float | None, str | None], Any] | None) -> Any:
    if progress is None:
        return None

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        try:
            outcome = progress(value, total, message)
            if asyncio.iscoroutine(outcome):
                await outcome
        except Exception:
            log.debug("progress callback failed", exc_info=True)

    return on_progress


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
            f"command '{command}' not found {on}. " + _install_hint(command)
            + f" or give its full path in {where}.command"
        )
    return command


def _install_hint(command: str) -> str:
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


def dump_all(items: Iterable[Any]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]
