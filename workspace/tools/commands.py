"""The built-in ``run_command`` tool: a shell command run in the sandbox, on the folder as the pending
changes would make it.

The command (``/bin/sh -c``) runs in :mod:`workspace.isolation`'s sandbox: the opened folder is seen
with the run's proposed changes that are not rejected on top of it (the *pending* layer), and nothing
the command does reaches the folder. What it created, changed or deleted there comes back as proposals
of the run's :class:`~workspace.changes.ChangeSet` (one ``change_proposed`` event, reviewed per hunk like
any other); what the folder's ``.gitignore`` covers (build output, caches) is reported, not proposed.

Its output streams as :class:`~workspace.events.ToolOutput` events while it runs (chunks coalesced, at
most one every :data:`OUTPUT_INTERVAL_S`; at most :data:`MAX_STREAMED_CHARS` per call are streamed and
kept with the thread, the last chunk saying so). The model gets the exit code and a bounded head and
tail of the output, with a note of what was left out. Cancelling the call (Esc, Ctrl-C: the run is
cancelled) kills the command and everything it started.

Where no sandbox can be made the tool refuses, with the sandbox's reason and what to install, unless the person
let the folder's commands run without one (:func:`workspace.trust.set_run_without_sandbox`): then each call is
asked about every time (no rule or grant allows it) and runs as a plain subprocess in the folder
(:mod:`workspace.isolation.unsandboxed`), its result saying ``"sandboxed": false``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.tools.base import ToolContext, ToolOutput
from workspace.tools.decorator import tool
from workspace.tools.registry import register

if TYPE_CHECKING:
    from workspace.changes import ChangeSet
    from workspace.isolation import CommandResult, Grant, Sandbox

#: Output events are sent at most this often (chunks arriving in between are joined).
OUTPUT_INTERVAL_S = 0.05
#: The most text one output event carries (more arriving at once is sent as several, in order), so no
#: consumer is handed megabytes in one piece.
MAX_CHUNK_CHARS = 64_000
#: Output streamed (and kept with the thread) per call, in characters; the rest is only counted.
MAX_STREAMED_CHARS = 1_000_000
#: Characters of the output's start and as many of its end the model receives.
MODEL_KEEP_CHARS = 6_000
#: The longest time limit a call may ask for, in seconds (the default is the sandbox's: 120 s).
MAX_TIMEOUT_S = 600.0

NO_FOLDER = ("No folder is open, so there is nothing to run a command on. Ask the user to open a folder "
             "(File > Open Folder in the app, or --folder DIR on the command line).")

_box: Sandbox | None = None
_box_lock = threading.Lock()


def _sandbox() -> Sandbox:
    """This system's sandbox, made once (:class:`~workspace.isolation.SandboxUnavailable` when none can be
    made: not remembered, so installing what it names works without a restart)."""
    global _box
    with _box_lock:
        if _box is None:
            from workspace.isolation import Limits, sandbox_for_platform

            _box = sandbox_for_platform(limits=Limits(keep_chars=MODEL_KEEP_CHARS))
        return _box


def pending_layer(changes: ChangeSet | None, *, accepted_only: bool = False) -> dict[str, bytes | None]:
    """The run's proposed changes as the command sees them: ``{path: content or None (deleted)}``, each
    file as its hunks leave it when the undecided and accepted ones apply and the rejected ones do not
    (``accepted_only``: the accepted ones alone, what an Apply now would write)."""
    if changes is None:
        return {}
    from workspace.changes.hunks import ACCEPTED, REJECTED

    layer: dict[str, bytes | None] = {}
    with changes.lock:
        for fc in changes.pending_files:
            merged = fc.merge(pending=REJECTED if accepted_only else ACCEPTED)
            if not merged.changed:
                continue
            if merged.target != fc.path:
                layer[fc.path] = None
            layer[merged.target] = merged.data
    return layer


class _OutputStream:
    """Turns the sandbox's output chunks into ``tool_output`` events: joined, at most one every
    :data:`OUTPUT_INTERVAL_S`, at most :data:`MAX_STREAMED_CHARS` in all (then one note)."""

    def __init__(self, send: Callable[[str], None]) -> None:
        self._send = send
        self._parts: list[str] = []
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._sent = 0
        self._capped = False

    def add(self, text: str) -> None:
        if self._capped:
            return
        self._parts.append(text)
        wait = self._last + OUTPUT_INTERVAL_S - time.monotonic()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(wait, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = "".join(self._parts)
        self._parts.clear()
        if not text or self._capped:
            return
        room = MAX_STREAMED_CHARS - self._sent
        if len(text) > room:
            self._capped = True
            text = (text[:room] + f"\n[… output past {MAX_STREAMED_CHARS:,} characters is not shown or kept; the "
                    "command's result has its end …]\n")
        self._sent += len(text)
        self._last = time.monotonic()
        for start in range(0, len(text), MAX_CHUNK_CHARS):
            self._send(text[start:start + MAX_CHUNK_CHARS])

    def note(self, text: str) -> None:
        """A line of ours after the output (the command was stopped)."""
        self.flush()
        self._send(text)


@tool(name="run_command", read_only=False, destructive=True, timeout=MAX_TIMEOUT_S + 30)
async def run_command(command: str, timeout_s: float | None = None, context: ToolContext | None = None) -> Any:
    """Run a shell command (/bin/sh -c) on the opened folder in a sandbox: build, lint or test what you
    proposed. The command sees the folder with your pending proposals applied; files it creates, changes or
    deletes become proposals for the user's review (nothing is written to disk). No network, no home folder.

    Args:
        command: e.g. "pytest -q" or "make lint"; run from the folder's root
        timeout_s: seconds before it is killed (default 120, at most 600)
    """
    if context is None or (context.folder is None and context.changes is None):
        return ToolOutput(NO_FOLDER, is_error=True)
    if timeout_s is not None and not 0 < timeout_s <= MAX_TIMEOUT_S:
        return ToolOutput(f"timeout_s must be between 0 and {MAX_TIMEOUT_S:g} seconds, not {timeout_s!r}; leave it "
                          "out for the default of 120 s", is_error=True)
    return await run_in_sandbox(command, context, timeout_s=timeout_s)


async def run_in_sandbox(command: str, context: ToolContext, *, timeout_s: float | None = None,
                         env: dict[str, str] | None = None, tool_name: str = "run_command",
                         grant: Grant | None = None, limits_note: str | None = None) -> Any:
    """Run ``command`` as ``run_command`` does (the sandbox, the pending layer, streamed output, the writes
    proposed) for the call in ``context``; ``tool_name`` names the tool in refusals and output events. ``grant``
    confines it (a skill script's capabilities; never run without the sandbox), and ``limits_note`` tells the
    model what it may do when it fails or is stopped."""
    from workspace.isolation import IsolationError, SandboxUnavailable

    changes: ChangeSet | None = context.changes
    folder = Path(context.folder if context.folder is not None else changes.folder)  # type: ignore[union-attr]
    unsandboxed = False
    try:
        box = await asyncio.to_thread(_sandbox)
    except SandboxUnavailable as exc:
        allowed = context.extras.get("without_sandbox") if tool_name == "run_command" and grant is None else None
        if allowed is None:
            hint = (f" To run commands in this folder anyway, without a sandbox and asked every time: robotlab trust "
                    f"{folder} --run-without-sandbox on (or the app's Settings)." if tool_name == "run_command" else "")
            return ToolOutput(f"{tool_name} cannot run here: {exc}{hint}", is_error=True)
        if allowed != "asked":
            return ToolOutput(f"{tool_name} runs without a sandbox in {folder} only when the user approves that very "
                              "call (no sandbox can be made here), and nobody was asked: run it in a thread where the "
                              "user answers approvals.", is_error=True)
        unsandboxed = True
    pending = await asyncio.to_thread(pending_layer, changes)
    stream = _OutputStream(lambda text: _emit_output(context, text, tool_name))
    try:
        if unsandboxed:
            from workspace.isolation import Limits
            from workspace.isolation.unsandboxed import run_unsandboxed

            result = await run_unsandboxed(command, folder, limits=Limits(keep_chars=MODEL_KEEP_CHARS),
                                           on_output=stream.add, timeout_s=timeout_s, env=env)
        else:
            result = await box.run(command, folder, pending=pending, on_output=stream.add, timeout_s=timeout_s,
                                   env=env, grant=grant)
    except IsolationError as exc:
        stream.flush()
        return ToolOutput(f"The command could not be run: {exc}", is_error=True)
    except asyncio.CancelledError:
        stream.note("\n[stopped: the command and everything it started were killed]\n")
        raise
    stream.flush()
    report = await _report(result, context, changes, sandboxed=not unsandboxed)
    if limits_note and (result.exit_code != 0 or result.stopped_by is not None):
        report.setdefault("notes", []).append(limits_note)
    return report


def _emit_output(context: ToolContext, text: str, tool_name: str = "run_command") -> None:
    """The one place a ``tool_output`` event is made."""
    if context.emit is not None:
        from workspace import events as ev

        context.emit(ev.ToolOutput(id=context.call_id, name=tool_name, text=text))


async def _report(result: CommandResult, context: ToolContext, changes: ChangeSet | None, *,
                  sandboxed: bool = True) -> Any:
    """The model's result, after proposing what the command changed in the folder (``sandboxed`` False: it ran
    without a sandbox, the result says so: ``"sandboxed": false``)."""
    proposed, refused, summaries, decided = await asyncio.to_thread(_propose, result, context, changes)
    if context.emit is not None and changes is not None:
        from workspace import events as ev

        if summaries:
            context.emit(ev.ChangeProposed(change_set_id=changes.id, files=summaries, tool_id=context.call_id or None))
        for applied in decided:
            context.emit(ev.ChangeDecided(change_set_id=changes.id, outcome=applied.outcome,
                                          checkpoint_id=applied.checkpoint_id))
    data: dict[str, Any] = {"exit_code": result.exit_code, "output": result.output.text,
                            "timed_out": result.timed_out, "changes": proposed}
    if result.stopped_by is not None:
        data["stopped_by"] = result.stopped_by
    if not sandboxed:
        data["sandboxed"] = False
    if result.changes.ignored:
        data["ignored"] = [c.path for c in result.changes.ignored]
    if refused:
        data["not_proposed"] = refused
    notes = list(result.notes)
    if result.changes.truncated:
        notes.append("The command changed more files than are reported; only the first ones were proposed.")
    if proposed and changes is not None:
        where = "applied (auto mode)" if changes.mode == "auto" else "proposed for the user's review, NOT on disk yet"
        notes.append(f"The files it wrote are {where}; later commands and reads in this run see them.")
    if data.get("ignored"):
        notes.append("Paths the folder's .gitignore covers (build output, caches) are reported, not proposed.")
    if notes:
        data["notes"] = notes
    return data


def _propose(result: CommandResult, context: ToolContext,
             changes: ChangeSet | None) -> tuple[list[str], list[dict[str, str]], list[dict[str, Any]], list[Any]]:
    """Propose the command's changes into the run's change set: (paths proposed, [{path, why}] not
    proposed, the ``change_proposed`` entries, the apply results in auto mode, one per file)."""
    from workspace.errors import SandboxError

    proposed: list[str] = []
    refused: list[dict[str, str]] = []
    summaries: list[dict[str, Any]] = []
    decided: list[Any] = []
    for change in result.changes.proposed:
        why = None
        if changes is None:
            why = "this run has no change set, so the command's writes were discarded"
        elif change.link is not None:
            why = f"it is a symbolic link (to {change.link}), which is not proposed"
        elif change.too_large:
            why = f"it is too large to propose ({change.size:,} bytes)"
        elif change.content is None and change.kind != "deleted":
            why = "its content could not be read"
        if why is None and changes is not None:
            try:
                with changes.lock:
                    fc = changes.propose(change.path, None if change.kind == "deleted" else change.content,
                                         tool_id=context.call_id or None, run_id=context.run_id or None,
                                         robot=context.robot or None)
            except SandboxError as exc:
                why = str(exc)
            else:
                proposed.append(change.path)
                if fc is not None:
                    summaries.append(fc.summary())
                    if changes.mode == "auto" and changes.last_result is not None:
                        decided.append(changes.last_result)
                continue
        refused.append({"path": change.path, "why": why or "not proposed"})
    return proposed, refused, summaries, decided


register(run_command)
