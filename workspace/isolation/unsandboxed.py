"""A command run WITHOUT a sandbox: the escape hatch for a folder where none can be made.

Where :func:`~workspace.isolation.sandbox_for_platform` refuses (macOS and Windows for now, a kernel without
user namespaces), a person may let one folder's commands run anyway, asked every time
(:func:`workspace.trust.set_run_without_sandbox`). Such a command is a plain ``/bin/sh -c`` subprocess
directly in the folder: it can change and delete the folder's files and reach the network. It keeps what can
be kept without a sandbox: the same reduced environment (:func:`~workspace.isolation.bubblewrap.safe_environment`:
no keys, no tokens; and ours, with them, which it makes unreadable from it as ``/proc/$PPID/environ``),
the wall-time limit and the output limit, and stop kills its whole process group. What it
writes lands on disk at once (nothing is proposed for review), and it does not see the pending proposals.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from workspace.isolation.base import (
    CommandResult,
    FolderChanges,
    IsolationError,
    Limits,
    OutputCallback,
    OutputCollector,
)
from workspace.subprocess_fix import install as _install_subprocess_fix

_install_subprocess_fix()  # a process whose start is cancelled must not hang (see the module)

#: Seconds the rest of a killed command's output is read for.
STOP_GRACE_S = 1.0
#: The note every unsandboxed result carries, for people and the model.
UNSANDBOXED_NOTE = ("Ran WITHOUT a sandbox, directly in the folder (no sandbox can be made on this system): what it "
                    "wrote is on disk now, not proposed for review, and it did not see the pending proposals.")


async def run_unsandboxed(command: str, folder: Path, *, limits: Limits | None = None,
                          on_output: OutputCallback | None = None, timeout_s: float | None = None,
                          env: Mapping[str, str] | None = None) -> CommandResult:
    """Run ``command`` by ``/bin/sh -c`` in ``folder`` itself, with the sandbox's environment, time and output
    limits; cancelling kills it and everything it started (its process group)."""
    from workspace.isolation.bubblewrap import safe_environment

    limits = limits or Limits()
    if not isinstance(command, str) or not command.strip():
        raise IsolationError("the command is empty: give a shell command such as 'pytest -q'")
    if "\0" in command:
        raise IsolationError("the command holds a NUL character, which no shell command can")
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise IsolationError(f"the folder {folder} does not exist or is not a folder; open an existing folder")
    home = Path.home().resolve()
    if folder == home or folder in home.parents:
        raise IsolationError(f"the folder {folder} is your home folder or holds it; open a project folder instead")
    timeout = limits.timeout_s if timeout_s is None else timeout_s
    if not timeout > 0:
        raise IsolationError(f"timeout_s must be a positive number of seconds, not {timeout!r}")
    process = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env=safe_environment(env), cwd=str(folder), start_new_session=True)
    started = time.monotonic()
    collector = OutputCollector(limits.keep_chars)
    stopped_by: Literal["timeout", "output", "stop"] | None = None

    def kill(why: Literal["timeout", "output", "stop"]) -> None:
        nonlocal stopped_by
        if process.returncode is None and stopped_by is None:
            stopped_by = why
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    async def emit(text: str) -> None:
        if text and on_output is not None:
            outcome = on_output(text)
            if inspect.isawaitable(outcome):
                await outcome

    timer = asyncio.get_running_loop().call_later(timeout, kill, "timeout")
    stream = process.stdout
    assert stream is not None
    try:
        while True:
            try:
                data = await (asyncio.wait_for(stream.read(65536), STOP_GRACE_S) if stopped_by else stream.read(65536))
            except TimeoutError:
                break  # killed, and something that left its group still holds the pipe
            if not data:
                await emit(collector.feed(b"", final=True))
                break
            if collector.bytes + len(data) > limits.max_output_bytes:
                await emit(collector.feed(data[: max(0, limits.max_output_bytes - collector.bytes)], final=True))
                kill("output")
                break
            await emit(collector.feed(data))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_GRACE_S if stopped_by else None)
    except asyncio.CancelledError:
        kill("stop")
        raise
    finally:
        timer.cancel()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # anything left in its group
    notes = [UNSANDBOXED_NOTE]
    if stopped_by == "timeout":
        notes.append(f"Stopped: the command ran past the time limit of {timeout:g} s; it and everything it started "
                     "were killed.")
    elif stopped_by == "output":
        notes.append(f"Stopped: the command wrote more than {limits.max_output_bytes:,} bytes of output; it and "
                     "everything it started were killed.")
    left_out = collector.result().left_out
    if left_out:
        notes.append(f"{left_out:,} characters of output were left out in the middle (its start and end are kept).")
    return CommandResult(command=command, exit_code=None if stopped_by else process.returncode,
                         output=collector.result(), changes=FolderChanges(), duration_s=time.monotonic() - started,
                         stopped_by=stopped_by, notes=tuple(notes))


__all__ = ["UNSANDBOXED_NOTE", "run_unsandboxed"]
