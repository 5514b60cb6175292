"""A command running in bubblewrap (:mod:`workspace.isolation.bubblewrap`): its output streamed and bounded, its
time limit, its stop (the whole process tree killed), and what it wrote read back as changes."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import signal
import time
from pathlib import Path
from typing import Literal

from workspace.isolation.base import (
    Change,
    CommandResult,
    FolderChanges,
    IsolationError,
    Limits,
    OutputCallback,
    OutputCollector,
)
from workspace.isolation.bubblewrap_runs import is_empty, recycle_run, remove_tree

#: How long a stop waits for the killed tree's output pipe to close.
STOP_GRACE_S = 1.0


class BubblewrapCommand:
    """A command running in bubblewrap: :meth:`stop` it, await :meth:`result`."""

    def __init__(
        self,
        *,
        command: str,
        process: asyncio.subprocess.Process,
        run: Path,
        folder: Path,
        pending: dict[str, bytes | None],
        limits: Limits,
        timeout_s: float,
        on_output: OutputCallback | None,
        status_fd: int,
    ) -> None:
        self.command = command
        self._process = process
        self._run = run
        self._folder = folder
        self._pending = pending
        self._limits = limits
        self._timeout_s = timeout_s
        self._on_output = on_output
        self._status_fd = status_fd
        self._started = time.monotonic()
        self._stopped_by: Literal["timeout", "output", "stop"] | None = None
        self._stop_reason = ""
        self._killed = asyncio.Event()
        self._result: CommandResult | None = None
        self._task: asyncio.Task[CommandResult] | None = None
        self._released = False

    @property
    def pid(self) -> int:
        return self._process.pid

    def stop(self, reason: str = "stopped") -> None:
        """Kills the command and everything it started; :meth:`result` then returns."""
        self._kill("stop", reason)

    def _kill(self, why: Literal["timeout", "output", "stop"], reason: str) -> None:
        if self._process.returncode is None and self._stopped_by is None:
            self._stopped_by = why
            self._stop_reason = reason
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._killed.set()

    async def result(self) -> CommandResult:
        """Waits for the end of the command and returns what it did (cancelling stops it)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._finish())
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            self.stop("cancelled")
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._task), STOP_GRACE_S + 1)
            raise

    async def _finish(self) -> CommandResult:
        collector = OutputCollector(self._limits.keep_chars)
        stderr_task = asyncio.ensure_future(self._read_stderr())
        timer = asyncio.get_running_loop().call_later(
            self._timeout_s, self._kill, "timeout", f"the time limit of {self._timeout_s:g} s"
        )
        try:
            await self._pump(collector)
            await self._process.wait()
        finally:
            timer.cancel()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)  # anything left in the group
        setup_errors = await stderr_task
        status = self._read_status()
        try:
            # The chain's stderr holds only the set-up's and bwrap's own messages (the command's
            # stderr goes to its output): any is a failure to start, as is no child started.
            message = "\n".join(line for line in setup_errors.splitlines() if "no pid_max" not in line)
            if self._stopped_by is None and ("child-pid" not in status or message.strip()):
                raise IsolationError(
                    f"the sandbox could not start the command: {message.strip() or 'no reason given'}"
                )
            notes = self._notes(collector, setup_errors)
            exit_code: int | None = status.get("exit-code")
            if self._stopped_by is not None:
                exit_code = None
            if not self._pending and is_empty(self._run / "upper"):
                # Nothing pending, nothing written: nothing to read back or empty, so no thread is needed.
                changes = FolderChanges()
                self._release()
            else:  # one hop to a thread: the writes read back, then the run directory released
                changes = await asyncio.to_thread(self._changes_then_release)
            return CommandResult(
                command=self.command,
                exit_code=exit_code,
                output=collector.result(),
                changes=changes,
                duration_s=time.monotonic() - self._started,
                stopped_by=self._stopped_by,
                notes=tuple(notes),
            )
        finally:
            if not self._released:
                await asyncio.to_thread(self._release)

    async def _pump(self, collector: OutputCollector) -> None:
        """Streams the output to the callback until its end. After a kill the rest of the pipe is
        read (and kept, unless the output limit killed the command) for at most
        :data:`STOP_GRACE_S`: asyncio's ``wait()`` returns only once the pipe is closed."""
        stream = self._process.stdout
        assert stream is not None
        limit = self._limits.max_output_bytes
        discard = False
        deadline: float | None = None
        loop = asyncio.get_running_loop()
        while True:
            read = asyncio.ensure_future(stream.read(65536))
            if not self._killed.is_set():
                killed = asyncio.ensure_future(self._killed.wait())
                await asyncio.wait({read, killed}, return_when=asyncio.FIRST_COMPLETED)
                killed.cancel()
            if not read.done():
                deadline = deadline or loop.time() + STOP_GRACE_S
                done, _ = await asyncio.wait({read}, timeout=max(0.0, deadline - loop.time()))
                if not done:
                    read.cancel()
                    self._close_pipes()
                    break
            data = read.result()
            if not data:
                text = collector.feed(b"", final=True)
                if text and not discard:
                    await self._emit(text)
                break
            if discard:
                continue
            if collector.bytes + len(data) > limit:
                text = collector.feed(data[: max(0, limit - collector.bytes)], final=True)
                if text:
                    await self._emit(text)
                self._kill("output", f"more than {limit:,} bytes of output")
                discard = True
                continue
            text = collector.feed(data)
            if text:
                await self._emit(text)

    def _close_pipes(self) -> None:
        """The last resort when a killed command's pipe stays open: asyncio's transport closed."""
        transport = getattr(self._process, "_transport", None)
        if transport is not None:
            transport.close()

    async def _emit(self, text: str) -> None:
        if self._on_output is None:
            return
        outcome = self._on_output(text)
        if inspect.isawaitable(outcome):
            await outcome

    async def _read_stderr(self) -> str:
        stream = self._process.stderr
        assert stream is not None
        chunks: list[bytes] = []
        size = 0
        while data := await stream.read(65536):
            if size < 65536:
                chunks.append(data)
            size += len(data)
        return b"".join(chunks).decode("utf-8", errors="replace")

    def _read_status(self) -> dict[str, int]:
        status: dict[str, int] = {}
        os.set_blocking(self._status_fd, False)
        data = b""
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(self._status_fd, 65536):
                data += chunk
        os.close(self._status_fd)
        for line in data.decode("utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError, TypeError):
                value = json.loads(line)
                if isinstance(value, dict):
                    status.update({k: v for k, v in value.items() if isinstance(v, int)})
        return status

    def _notes(self, collector: OutputCollector, setup_errors: str) -> list[str]:
        notes: list[str] = []
        if self._stopped_by == "timeout":
            notes.append(
                f"Stopped: the command ran past {self._stop_reason}; it and everything it started were killed."
            )
        elif self._stopped_by == "output":
            notes.append(
                f"Stopped: the command wrote {self._stop_reason}; it and everything it started were killed."
            )
        elif self._stopped_by == "stop":
            notes.append(f"Stopped ({self._stop_reason}): the command and everything it started were killed.")
        left_out = collector.result().left_out
        if left_out:
            notes.append(
                f"{left_out:,} characters of output were left out in the middle (its start and end are kept)."
            )
        if "no pid_max" in setup_errors:
            notes.append(
                "The process limit is RLIMIT_NPROC alone (this kernel has no per-namespace pid_max)."
            )
        return notes

    def _release(self) -> None:
        """The run's directory kept for the next command when this one ended by itself (nothing of it can be
        running), removed otherwise."""
        self._released = True
        if self._stopped_by is None and self._process.returncode is not None:
            recycle_run(self._run)
        else:
            remove_tree(self._run)

    def _changes_then_release(self) -> FolderChanges:
        try:
            return self._changes()
        finally:
            self._release()

    def _changes(self) -> FolderChanges:
        """The upper directory read back: the paths first, then the content of at most
        ``max_changes`` proposed ones (ignored ones keep their size only: a build's output is never
        read into memory). Only the upper directory is listed: a command that wrote nothing costs
        one empty listing."""
        upper = self._run / "upper"
        if is_empty(upper):
            return FolderChanges()
        from workspace.isolation.ignore import ignore_matcher
        from workspace.isolation.layers import FolderView, load_change, scan_upper

        view = FolderView(self._folder, self._pending)
        is_ignored = ignore_matcher(view.read)
        proposed: list[Change] = []
        ignored: list[Change] = []
        truncated = False
        for written in scan_upper(upper, view):
            skip = is_ignored(written.path)
            bucket = ignored if skip else proposed
            if len(bucket) >= self._limits.max_changes:
                truncated = True
                continue
            change = load_change(
                written, view, max_change_bytes=self._limits.max_change_bytes, content=not skip
            )
            if change is not None:
                bucket.append(change)
        return FolderChanges(proposed=tuple(proposed), ignored=tuple(ignored), truncated=truncated)
