"""Reviewing proposed file changes in a terminal: hunk by hunk prompts, the conflict choices,
and :func:`read_terminal_line`, the ``input()`` for coroutines that every terminal prompt of the
command line uses.

The change sets themselves (:mod:`workspace.changes`) know nothing of terminals; this is one
of their views, as the desktop's review window is another.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.changes import PENDING, ChangeError
from workspace.diffing import split_lines, strip_eol, unified_diff
from workspace.sandbox import display_path

if TYPE_CHECKING:
    from workspace.changes import ApplyResult, ChangeSet, FileChange, Hunk

#: Asks one question, returns the answer (the terminal's prompt, or a script in tests).
AskFn = Callable[[str], Awaitable[str]]
#: Runs the verify command on a subset ("proposed" or "accepted"): its ``verify_finished`` event, or None
#: (no verify command). :meth:`workspace.session.ThreadSession.verify_changes` is one.
VerifyFn = Callable[[str], Awaitable[Any]]


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class _StdinLines:
    """Lines of standard input for terminal prompts, read so that a prompt never keeps the process alive.

    ``asyncio.to_thread(input, ...)`` cannot be interrupted: after Ctrl-C the executor's worker
    stays blocked in ``input()`` and ``asyncio.run`` (and the interpreter's exit) wait for it, so
    the command hangs. Here a *daemon* thread reads the raw file descriptor with ``os.read`` (it
    holds no lock of ``sys.stdin``, so finalisation never waits on it either) and the prompt awaits
    its future, which cancellation abandons at once. Bytes read past the end of a line are kept for
    the next prompt (answers piped in as ``y\\nn\\nreason\\n`` arrive in one read). End of input
    (a closed or empty pipe, ``/dev/null``, Ctrl-D) raises :class:`EOFError`, like ``input()``.
    """

    def __init__(self, fd: int | None = None) -> None:
        self._fd = fd
        self._read_from: int | None = None  # the descriptor the buffered bytes came from
        self._buffer = b""
        self._eof = False
        # At most one read in flight: a prompt cancelled mid-read leaves its read to the next prompt.
        self._filling: Any = None  # concurrent.futures.Future[None] | None

    def _fileno(self) -> int | None:
        if self._fd is not None:
            return self._fd
        import sys

        stream = sys.stdin
        if stream is None:
            return None
        try:
            return stream.fileno()
        except (OSError, ValueError, AttributeError):  # closed, or replaced by an object without a descriptor
            return None

    def _fill(self, fd: int | None) -> None:
        """In the daemon thread: read until the buffer holds a whole line or the input ends."""
        while b"\n" not in self._buffer and not self._eof:
            if fd is None:
                self._eof = True
                break
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EBADF, EIO (the terminal went away): no more answers
                chunk = b""
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    async def readline(self) -> str:
        import asyncio
        import concurrent.futures
        import sys

        if self._filling is not None and not self._filling.done():
            # A prompt cancelled mid-read left its read running: it is the next answer, and the
            # buffer is the thread's until it ends.
            await asyncio.wrap_future(self._filling)
        elif self._fileno() != self._read_from:  # stdin was replaced: what came from the old one is no answer
            self._read_from, self._buffer = self._fileno(), b""
        if b"\n" not in self._buffer:
            fd = self._fileno()
            self._read_from = fd
            # Like input(), end of input is not remembered: a terminal can go on after Ctrl-D.
            self._eof = False
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.set_running_or_notify_cancel()  # so a cancelled prompt cannot cancel the read itself

            def work() -> None:
                try:
                    self._fill(fd)
                except BaseException as exc:  # pragma: no cover - defensive
                    future.set_exception(exc)
                else:
                    future.set_result(None)

            self._filling = future
            threading.Thread(target=work, name="robotlab-stdin", daemon=True).start()
            await asyncio.wrap_future(future)
        line, newline, rest = self._buffer.partition(b"\n")
        if not newline and not line:
            raise EOFError("end of input")
        self._buffer = rest
        encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
        return line.decode(encoding, errors="replace").removesuffix("\r")


_STDIN = _StdinLines()


async def read_terminal_line(prompt: str = "", *, out: Any = None) -> str:
    """``input(prompt)`` for coroutines: the prompt goes to ``out`` (default ``sys.stdout``; give
    ``sys.stderr`` when stdout carries machine-readable output), the answer comes from standard input.

    Cancelling the awaiting task (Ctrl-C under ``asyncio.run``) returns at once, and the reading
    thread never delays the exit; end of input raises :class:`EOFError`.
    """
    import sys

    stream = out if out is not None else sys.stdout
    if prompt:
        stream.write(prompt)
        stream.flush()
    try:
        return await _STDIN.readline()
    except EOFError:
        if prompt:  # end the prompt's line, so what is printed next starts on its own
            stream.write("\n")
            stream.flush()
        raise


class _Out:
    """Where the terminal review writes. With JSON lines on stdout (``--json``), stdout carries only
    JSON: the review's text and its prompts go to stderr, and ``data`` (stdout) gets JSON objects only."""

    def __init__(self, printer: Any) -> None:
        import sys

        self.json = bool(getattr(printer, "json_lines", False))
        self.data = getattr(printer, "out", None) or sys.stdout
        if self.json:
            self.out = sys.stderr
            self.color = _isatty(sys.stderr)
        else:
            self.out = self.data
            self.color = bool(getattr(printer, "_color", False))
        self.printer = printer

    def c(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def line(self, text: str = "") -> None:
        finish = getattr(self.printer, "finish", None)
        if callable(finish):
            finish()
        self.out.write(text + "\n")
        self.out.flush()

    def record(self, obj: Any) -> None:
        """One JSON object on its own line of the data stream (stdout)."""
        self.data.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.data.flush()

    def diff(self, text: str) -> None:
        for raw in text.splitlines():
            if raw.startswith(("+++", "---")):
                self.line(self.c("1", raw))
            elif raw.startswith("+"):
                self.line(self.c("32", raw))
            elif raw.startswith("-"):
                self.line(self.c("31", raw))
            elif raw.startswith("@@"):
                self.line(self.c("36", raw))
            else:
                self.line(raw)


#: Characters of file content the terminal review shows escaped: C0/C1 controls but the tab (an
#: escape sequence or a carriage return in a line could redraw what the review shows) and the
#: bidirectional controls (which reorder what follows them on screen, "Trojan Source").
_HIDDEN = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0))}
_HIDDEN.update({c: f"\\u{c:04x}" for c in (0x061c, 0x200e, 0x200f, *range(0x202a, 0x202f), *range(0x2066, 0x206a))})


def _visible(text: str) -> str:
    """A line of file content as the terminal may show it (see :data:`_HIDDEN`)."""
    return text if text.isprintable() else text.translate(_HIDDEN)


def _hunk_text(fc: FileChange, h: Hunk, out: _Out) -> None:
    if h.kind == "rename":
        out.line(out.c("33", f"  rename {fc.display_path}"))
        return
    if h.kind == "file":
        size = lambda b: "absent" if b is None else f"{len(b)} bytes"  # noqa: E731
        out.line(out.c("33", f"  whole file: {size(fc.before)} → {size(fc.after)}"))
        return
    before, after = fc.context(h)
    out.line(out.c("36", h.header()))
    for line in before:
        out.line(" " + _visible(strip_eol(line)))
    for sign, lines in (("-", h.old_lines), ("+", h.final_lines)):
        for line in lines:
            out.line(out.c("31" if sign == "-" else "32", sign + _visible(strip_eol(line))))
            if not line.endswith(("\n", "\r")):
                out.line(out.c("2", "\\ No newline at end of file"))
    for line in after:
        out.line(" " + _visible(strip_eol(line)))


async def _edit_text(initial: str, ask: AskFn, out: _Out, *, suffix: str) -> str | None:
    import asyncio
    import shlex
    import subprocess
    import tempfile

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor:
        with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False, encoding="utf-8") as fh:
            fh.write(initial)
            name = fh.name
        try:
            proc = await asyncio.to_thread(subprocess.run, [*shlex.split(editor), name], check=False)
            if proc.returncode != 0:
                out.line(f"The editor exited with status {proc.returncode}; the hunk is unchanged.")
                return None
            return Path(name).read_text(encoding="utf-8")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)
    out.line("Type the replacement lines; a line with only '.' ends, a line with only '!' cancels.")
    out.line(out.c("2", "Proposed text:"))
    for line in initial.splitlines():
        out.line(out.c("2", "  " + line))
    typed: list[str] = []
    while True:
        try:
            line = await ask("")
        except EOFError:
            return None
        if line == ".":
            return "".join(x + "\n" for x in typed)
        if line == "!":
            return None
        typed.append(line)


_REVIEW_HELP = """  y  accept this hunk            n  reject it (you can give a reason for the robot)
  e  edit the proposed text, then accept it
  a  accept this and the rest of the file   d  reject this and the rest of the file
  A  accept everything that is left          q  quit: reject everything that is left
  ?  this help"""


async def review_in_terminal(changes: ChangeSet, *, ask: AskFn, out: _Out) -> bool:
    """Ask about every undecided hunk. Returns False if the user quit."""
    files = [fc for fc in changes.pending_files if any(h.status == PENDING for h in fc.hunks)]
    for n_file, fc in enumerate(files, start=1):
        out.line()
        out.line(out.c("1", f"── {fc.display_path} ({fc.action}, +{fc.added} -{fc.removed}) "
                            f"[file {n_file}/{len(files)}]"))
        for h in list(fc.hunks):
            if h.status != PENDING:
                continue
            _hunk_text(fc, h, out)
            while True:
                try:
                    answer = (await ask(f"Hunk {h.number}/{len(fc.hunks)} of {display_path(fc.path)}: accept? "
                                        "[y,n,e,a,d,A,q,?] ")).strip()
                except EOFError:
                    answer = "q"
                if answer in ("y", "yes"):
                    changes.accept(h.id)
                elif answer in ("n", "no"):
                    try:
                        reason = (await ask("Reason for the robot (optional): ")).strip()
                    except EOFError:
                        reason = ""
                    changes.reject(h.id, reason=reason or None)
                elif answer == "e":
                    if h.kind == "rename" or fc.format is None:
                        out.line("This part cannot be edited; accept or reject it.")
                        continue
                    text = await _edit_text("".join(strip_eol(x) + "\n" for x in h.final_lines), ask, out,
                                            suffix=Path(fc.target).suffix or ".txt")
                    if text is None:
                        continue
                    if not h.final_lines or not h.final_lines[-1].endswith(("\n", "\r")):
                        text = text[:-1] if text.endswith("\n") else text
                    changes.edit_hunk(h.id, text)
                elif answer == "a":
                    changes.accept(*[x.id for x in fc.hunks if x.status == PENDING])
                elif answer == "d":
                    try:
                        reason = (await ask("Reason for the robot (optional): ")).strip()
                    except EOFError:
                        reason = ""
                    changes.reject(*[x.id for x in fc.hunks if x.status == PENDING], reason=reason or None)
                elif answer == "A":
                    changes.accept(*[x.id for x in changes.hunks(pending_only=True)])
                    return True
                elif answer == "q":
                    return False
                else:
                    out.line(_REVIEW_HELP)
                    continue
                break
            if all(x.status != PENDING for x in fc.hunks):
                break
    return True


async def verify_in_terminal(verify: VerifyFn, subset: str, *, out: _Out) -> Any:
    """Run ``verify`` on ``subset`` and show the result (``--json``: the ``verify_finished`` event on stdout).
    The event, or None (no verify command, or no sandbox here: said)."""
    from workspace.isolation import IsolationError, SandboxUnavailable

    try:
        event = await verify(subset)
    except (SandboxUnavailable, IsolationError) as exc:
        out.line(out.c("33", f"The verify command could not run: {exc}"))
        return None
    if event is None:
        return None
    if out.json:
        from workspace import events as ev

        out.record(ev.to_dict(event))
    out.line(out.c("32" if event.passed else "31", event.describe()))
    if not event.passed:
        for line in event.output.splitlines()[-VERIFY_SHOWN_LINES:]:
            out.line(out.c("2", "  " + _visible(line)))
    return event


#: Lines of a failing verify's output the terminal shows (its end).
VERIFY_SHOWN_LINES = 30


async def keep_pending(changes: ChangeSet, *, thread_id: str, printer: Any = None,
                       verify: VerifyFn | None = None) -> None:
    """No terminal to review a recorded run's proposal in (stdin is not one, or ``--json``) and no ``--apply``
    given: show it, run the verify command on it (as the review would first), and leave it pending in the thread,
    saying exactly how to apply it (``robotlab changes apply --thread ID --take ...``, every hunk) or pick hunks."""
    from workspace.changes.combine import CandidateChanges, pending_hunks

    if not changes.pending_files:
        return
    out = _Out(printer)
    counts = changes.counts()
    if out.json:
        out.record({"kind": "change_set", "change_set_id": changes.id, "files": changes.summary(),
                    "diff": changes.unified_diff(), "state": "pending", "thread_id": thread_id})
    else:
        out.line()
        out.diff(changes.unified_diff())
    if verify is not None:
        await verify_in_terminal(verify, "proposed", out=out)
    short = thread_id[:8]
    ids = " ".join(h.id for h in pending_hunks([CandidateChanges(0, changes.robot or "", changes)]))
    out.line(out.c("33", f"✎ {counts.files} proposed file change(s) ({counts.hunks} hunk(s)) are kept pending in "
                         f"thread {short}: there was no terminal to review them in."))
    out.line(f"  Apply them all: `robotlab changes apply --thread {short} --take {ids}`")
    out.line(f"  See them hunk by hunk: `robotlab changes list --thread {short}`; or open the thread in the window.")


async def settle_in_terminal(changes: ChangeSet, *, mode: str, printer: Any = None,
                             ask: AskFn | None = None, verify: VerifyFn | None = None,
                             never_why: str = "--apply never") -> ApplyResult | None:
    """Settle a run's proposed changes on the command line.

    ``mode``: ``auto`` applies everything, ``never`` prints the proposed diff and
    writes nothing (``never_why``: why, in the message), ``review`` shows each hunk and asks (accept / reject with a
    reason / edit / rest of file / all / quit), then applies. Prints the outcome and
    the checkpoint to undo from; ``ask`` replaces the terminal prompt (tests).

    With ``verify`` (a verify command is set), it runs on the proposed set before the review and on
    exactly the accepted hunks before the apply; when that fails, the review asks whether to apply
    anyway (no: nothing is written and the robot is told why); ``auto`` applies and says it failed.
    """
    import asyncio

    out = _Out(printer)
    if ask is None:
        stream = out.out

        async def ask(prompt: str) -> str:  # the prompt goes where the review's text goes
            return await read_terminal_line(prompt, out=stream)

    if not changes.pending_files:
        if changes.outcome():
            out.line(changes.outcome_message() or "")
        return None
    if mode == "never":
        if out.json:
            out.record({"kind": "change_set", "change_set_id": changes.id, "files": changes.summary(),
                        "diff": changes.unified_diff()})
        else:
            out.line()
            out.diff(changes.unified_diff())
        result = changes.discard(reason=f"not applied: {never_why}")
        count = len(result.settled)
        out.line(out.c("33", f"✎ {count} proposed file change(s) were NOT applied ({never_why}). "
                             "Use --apply review to review them, or --apply auto to apply them."))
        _emit_decided(changes, printer)
        return result
    if mode not in ("review", "auto"):
        raise ValueError(f"Unknown apply mode {mode!r}; use review, auto or never")
    counts = changes.counts()
    out.line()
    out.line(out.c("1", f"✎ {counts.files} file(s) changed by {changes.robot or 'the robot'}: {counts.hunks} "
                        f"hunk(s), +{counts.added} -{counts.removed}"))
    if verify is not None and mode == "review":
        await verify_in_terminal(verify, "proposed", out=out)
    if mode == "auto":
        changes.accept_all()
    elif not await review_in_terminal(changes, ask=ask, out=out):
        out.line("Stopped reviewing: the hunks not decided yet are not applied.")
    if verify is not None and changes.counts().accepted:
        checked = await verify_in_terminal(verify, "accepted", out=out)
        if checked is not None and not checked.passed and mode == "review":
            try:
                answer = (await ask("The verify command failed on the accepted hunks. Apply them anyway? [y/N] ")
                          ).strip().lower()
            except EOFError:
                answer = ""
            if answer not in ("y", "yes"):
                result = await asyncio.to_thread(
                    lambda: changes.discard(reason=f"not applied: the verify command {checked.command!r} failed"))
                out.line(out.c("33", "Nothing was applied: the verify command failed."))
                message = changes.outcome_message()
                if message:
                    out.line()
                    out.line(message)
                _emit_decided(changes, printer)
                return result
    result = await asyncio.to_thread(changes.apply)
    while result.conflicts and not result.settled:
        for conflict in result.conflicts:
            out.line(out.c("31", f"✗ {conflict.message}"))
            base, disk, _ = conflict.texts()
            if base is not None and disk is not None:
                out.line(out.c("2", "  what changed on disk since the proposal:"))
                out.diff(unified_diff(split_lines(base), split_lines(disk), old_name="proposal base",
                                      new_name="disk now"))
        if mode == "auto":
            choice = "r"
        else:
            try:
                choice = (await ask("[r]ebase the proposal on the file (keep both changes), [o]verwrite the file "
                                    "with the proposal, [s]kip these files, [q]uit (apply nothing)? ")
                          ).strip().lower()
            except EOFError:
                choice = "q"
        if choice in ("r", "o"):
            unmerged = []
            for conflict in result.conflicts:
                try:
                    changes.rebase(conflict.file_id or conflict.path, overwrite=choice == "o")
                except ChangeError:
                    unmerged.append(conflict.path)
            if unmerged:
                out.line(out.c("31", "✗ Both the disk and the proposal changed the same lines of "
                                     + ", ".join(map(display_path, unmerged)) + "; these files are skipped."))
            result = await asyncio.to_thread(lambda: changes.apply(on_conflict="skip"))
        elif choice == "s":
            result = await asyncio.to_thread(lambda: changes.apply(on_conflict="skip"))
        else:
            result = await asyncio.to_thread(lambda: changes.discard(reason="not applied: the file changed on disk"))
    if result.error:
        out.line(out.c("31", f"✗ {result.error}"))
    message = changes.outcome_message()
    if message:
        out.line()
        out.line(message)
    if result.checkpoint_id:
        out.line(out.c("2", f"Checkpoint {result.checkpoint_id} holds the files as they were before "
                            f"(history entry {result.entry_id})."))
    _emit_decided(changes, printer)
    return result


def _emit_decided(changes: ChangeSet, printer: Any) -> None:
    if printer is None or not getattr(printer, "json_lines", False):
        return
    printer(changes.decided_event())

