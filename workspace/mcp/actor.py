"""One MCP server connection's life on the official SDK: the actor task that owns it.

The SDK's transports and ``ClientSession`` are async context managers built on anyio task groups:
they must be entered and exited by the same task. So each connection runs in its own long-lived
asyncio task, the *actor*, which enters the transport and the session, performs the handshake,
lists the tools, reports ``ready`` and then waits until it is told to close (or the server goes
away). The client's requests (:mod:`workspace.mcp.client`) come from any task of the same event
loop and use the session directly.

Between the transport and the session sits a small pump that forwards messages and notices what
the SDK does not report: the server closing its stdout (it crashed or exited) and lines on stdout
that are not JSON-RPC. Either one fails the connection with a reason that names the fix; pending
calls end at once with that reason, and the next call starts the server again.

A server's stderr goes to a pipe read by a small thread; the last lines are kept for the status
view (values of the server's ``env`` and ``headers`` are masked). Opening the transports and
reading their failures is :mod:`workspace.mcp.transport`.

Why one class of about 600 lines: :class:`ConnectionActor` is the state of one task (the session,
the pump, the pending calls, the stop request) and its transitions; split across classes, each
half would reach into the other's fields under the same task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable
from typing import Any, TextIO

import anyio
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession

from workspace.errors import MCPError
from workspace.mcp.config import ServerSpec
from workspace.mcp.status import ServerState
from workspace.mcp.stdio import LineTooLong
from workspace.mcp.transport import (
    NOT_UTF8,
    TOO_DEEP,
    bad_line,
    explain,
    garbage_kind,
    leaves,
    open_transport,
)
from workspace.secrets import redact

log = logging.getLogger("workspace.mcp")

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
#: A stdio server still running this long after its connection began to close is killed (its process group),
#: whatever the actor task is doing. The SDK's own shutdown (close stdin, 2 s, SIGTERM, 2 s, SIGKILL) ends
#: sooner; this is for when it is cut short (see :meth:`ConnectionActor._kill_later`).
KILL_AFTER = 8.0

CLIENT_INFO = types.Implementation(name="robotlab-workspace", version="0.1.0")


class ConnectionActor:
    """A server connection owned by an actor task: its state, start and stop, and the server's output and
    notifications; see the module documentation. :class:`workspace.mcp.client.Connection` adds the requests."""

    def __init__(
        self, spec: ServerSpec, *, on_change: Callable[[ConnectionActor], Any] | None = None,
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
        #: Why some of the tools the server listed are not offered (more than MAX_TOOLS), else None.
        self.tools_note: str | None = None
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
        #: Why the handshake failed when it got no answer after a stdout line of bytes that are not UTF-8.
        self._not_utf8: str | None = None
        self._stderr_total = 0
        self._start_mark = 0
        self._stderr_eof: threading.Event | None = None
        #: The stdio server's child process (the SDK's anyio Process) while the actor runs.
        self._process: Any = None

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
        self._not_utf8 = None
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
                read, write = await open_transport(self.spec, stack, stderr_pipe=self._stderr_pipe,
                                                   oauth=self._oauth, on_process=self._on_process)
                stack.callback(self._kill_later)  # runs first when the connection closes, however it closes
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
            if self._stopping or all(isinstance(e, asyncio.CancelledError) for e in leaves(exc)):
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
            process, self._process = self._process, None
            if process is not None:  # the SDK's shutdown was cut short before its kill: the server must not outlive us
                self._kill(process, "its connection ended")
            ready.set()

    def _on_process(self, process: Any) -> None:
        self._process = process

    def _kill_later(self) -> None:
        """The connection is closing: kill the server if it still runs :data:`KILL_AFTER` s from now.

        The SDK's shutdown (shielded) closes stdin, waits, terminates and kills, and only then lets its stdout
        reader stop waiting for the end of the server's output. A second cancellation of the actor (the event
        loop cancelling every task as it closes, after a close that stopped waiting; :meth:`stop` timing out)
        goes through that shield: the kill never comes, the reader waits for ever on a server that runs on,
        and so does whoever waits for the actor. A timer is not a task, so it fires even then; the kill ends
        the server's output, and with it the actor.
        """
        process = self._process
        if process is None:
            return
        with contextlib.suppress(RuntimeError):  # no running loop: nothing can wait for the actor either
            asyncio.get_running_loop().call_later(KILL_AFTER, self._kill_if_current, process)

    def _kill_if_current(self, process: Any) -> None:
        if process is self._process:  # else the actor is done with it (and killed it if it still ran)
            self._kill(process, f"it was still running {KILL_AFTER:g} s after its connection began to close")

    def _kill(self, process: Any, why: str) -> None:
        """Kill the stdio server's process group (the SDK starts it in a session of its own) if it still runs."""
        if process.returncode is not None or getattr(process, "_robotlab_killed", False):
            return  # it exited and was reaped (so its pid is not someone else's now), or it was killed already
        with contextlib.suppress(AttributeError):
            process._robotlab_killed = True
        log.warning("MCP server '%s' (pid %s): killing it, %s", self.name, process.pid, why)
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if hasattr(os, "killpg"):
                os.killpg(process.pid, signal.SIGKILL)
            else:  # pragma: no cover - Windows: the SDK's job object holds the tree
                process.kill()

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
                    if isinstance(item, LineTooLong):  # nothing more is read: the connection ends, saying why
                        self.note(str(item))
                        self._close_reason = str(item)
                        return
                    if isinstance(item, Exception):
                        line = bad_line(item)
                        kind = garbage_kind(line, item)
                        if kind == TOO_DEEP:
                            self.note(f"stdout line that is {TOO_DEEP}: {line[:80]}")
                        elif kind == NOT_UTF8:
                            self.note(f"skipped a stdout line of {NOT_UTF8} (shown as \ufffd), not JSON-RPC: {line}")
                        else:
                            self.note(f"stdout line that is not JSON-RPC: {line}")
                        if len(self._garbage) < 3:
                            self._garbage.append(line)
                        garbage += 1
                        if self.state is ServerState.READY or garbage >= GARBAGE_BEFORE_READY:
                            self._close_reason = self._garbage_reason(line, kind)
                            return
                        if kind == NOT_UTF8 and self._close_reason is None:
                            # Said if the handshake then gets no answer (the bytes may have been the answer).
                            self._not_utf8 = self._garbage_reason(line, kind)
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
        """The server's tools, at most :data:`~workspace.mcp.catalogue.MAX_TOOLS` (the first it lists; no page is
        asked for past that); :attr:`tools_note` says so when some were left out."""
        from workspace.mcp.catalogue import MAX_TOOLS, too_many_tools

        tools: list[types.Tool] = []
        cursor: str | None = None
        listed = 0
        for _ in range(100):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            listed += len(result.tools)
            tools.extend(result.tools[: max(0, MAX_TOOLS - len(tools))])
            cursor = result.next_cursor
            if not cursor or listed > MAX_TOOLS:
                break
        note = too_many_tools(self.name, listed, more=bool(cursor)) if listed > MAX_TOOLS else None
        if note is not None and note != self.tools_note:
            log.warning("%s", note)
            self.note(note)
        self.tools_note = note
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

    def _garbage_reason(self, line: str, kind: str) -> str:
        if kind == TOO_DEEP:
            return (f"the server wrote {TOO_DEEP}, not JSON-RPC this client can read, to stdout: {line[:80]!r}…. "
                    "Its results must nest less deep: fix the server or what it was asked")
        if kind == NOT_UTF8:
            what, encoded = f"{NOT_UTF8} (not JSON-RPC)", " in UTF-8"
        else:
            what, encoded = "something that is not JSON-RPC", ""
        return (f"the server wrote {what} to stdout: {line!r}. An MCP stdio server must write only JSON-RPC "
                f"messages{encoded} to stdout (logs belong on stderr): fix the server or its arguments")

    def _explain(self, exc: BaseException, phase: str) -> str:
        """A reason that names the fix, from whatever the SDK or the transport raised (see :func:`explain`)."""
        if phase != "ready" and self._close_reason in (None, "the server exited") and self._not_utf8 is not None:
            self._close_reason = self._not_utf8.replace("to stdout", "to stdout instead of answering the MCP "
                                                        "handshake", 1)
        sign_in = None
        if self.needs_sign_in:
            from workspace.mcp.oauth import sign_in_message

            sign_in = sign_in_message(self.name, again=self.auth_state == "sign-in-again")
        return explain(exc, phase, self.spec, close_reason=self._close_reason, sign_in=sign_in,
                       with_stderr=self._with_stderr)
