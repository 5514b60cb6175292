"""The sandbox's platform-free part: its errors, limits, the result of a command and its output.

A platform's sandbox (:class:`Sandbox`; Linux: :mod:`workspace.isolation.bubblewrap`) runs one
shell command on a folder seen through the thread's pending changes and returns a
:class:`CommandResult`: exit code, a bounded head and tail of the output, what stopped it (time,
output size, a stop), and the files it created, changed or deleted in the folder (never written
to the folder itself).
"""

from __future__ import annotations

import codecs
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from workspace.errors import Error

#: What a command's output callback receives: each chunk of text, in order (stdout and stderr
#: merged). It may return an awaitable, which is awaited before the next chunk is read.
OutputCallback = Callable[[str], Awaitable[None] | None]

#: The pending proposed changes a command sees: folder-relative POSIX path -> new content, or
#: None for a deletion.
PendingChanges = Mapping[str, bytes | None]


class SandboxUnavailable(Error):
    """No sandbox can be made here: the message says why and what to install or enable."""


class IsolationError(Error):
    """A sandbox could be made but this command could not be started in it (bad input, a failed
    set-up); the message says what went wrong and how to fix it."""


@dataclass(frozen=True)
class Limits:
    """What a sandboxed command may use. ``None`` leaves a limit off (never the wall time)."""

    #: Wall time, in seconds, before the whole process tree is killed.
    timeout_s: float = 120.0
    #: Processes at the same time (the command and everything it starts).
    max_processes: int = 256
    #: Address space of each process, in bytes.
    max_memory_bytes: int | None = 4 << 30
    #: Size of any one file the command writes, in bytes.
    max_file_bytes: int | None = 1 << 30
    #: Output (stdout and stderr) streamed before the command is stopped, in bytes.
    max_output_bytes: int = 8 << 20
    #: Output kept in the result: this many characters of its start and as many of its end.
    keep_chars: int = 16_000
    #: A changed file's content is returned up to this size (larger: ``too_large``).
    max_change_bytes: int = 1 << 20
    #: Changes returned at most, proposed and ignored each (more: ``FolderChanges.truncated``).
    max_changes: int = 1000

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise IsolationError(f"timeout_s must be a positive number of seconds, not {self.timeout_s!r}")
        if self.max_processes < 1:
            raise IsolationError(f"max_processes must be at least 1, not {self.max_processes!r}")
        for name in ("max_output_bytes", "keep_chars", "max_change_bytes", "max_changes"):
            if getattr(self, name) < 0:
                raise IsolationError(f"{name} cannot be negative ({getattr(self, name)!r})")


@dataclass(frozen=True)
class Grant:
    """What one command may reach beyond the system's directories (a skill script's capabilities, already
    within the user's ceiling): ``read`` and ``write`` are folder-relative POSIX paths (``"."`` the whole
    folder); only those are visible in the folder, only the ``write`` ones writable (their writes proposed as
    any command's are); ``network`` keeps the host's network (otherwise loopback only)."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    network: bool = False

    @property
    def whole_folder_readable(self) -> bool:
        return "." in self.read or "." in self.write

    def describe(self) -> str:
        """The grant in a line, for the model and people."""
        readable = "the whole folder" if self.whole_folder_readable else (
            ", ".join(sorted({*self.read, *self.write})) or "none of the folder")
        writable = "the whole folder" if "." in self.write else (", ".join(self.write) or "nothing in the folder")
        return (f"readable: {readable}; writable: {writable}; network: "
                f"{'the host network' if self.network else 'none (loopback inside the sandbox only)'}")


@dataclass(frozen=True)
class Change:
    """One file the command created, changed or deleted inside the folder.

    ``content`` is the new bytes (None for a deletion, a symbolic link, a path the folder ignores,
    or a file over the size limit: ``too_large``); ``binary`` says it is not UTF-8 text; ``link`` is a symbolic link's
    target (the command made the path a link).
    """

    path: str
    kind: Literal["created", "changed", "deleted"]
    content: bytes | None = None
    size: int = 0
    binary: bool = False
    too_large: bool = False
    link: str | None = None

    @property
    def text(self) -> str | None:
        """The new content as text, None when there is none or it is binary."""
        if self.content is None or self.binary:
            return None
        return self.content.decode("utf-8")


@dataclass(frozen=True)
class FolderChanges:
    """What a command did to the folder, split by the folder's ``.gitignore`` files."""

    #: Changes to propose (not ignored), sorted by path.
    proposed: tuple[Change, ...] = ()
    #: Changes to paths the folder ignores (build output, caches, ``.git/``): reported, not proposed.
    ignored: tuple[Change, ...] = ()
    #: More changes than ``Limits.max_changes``: the rest were left out.
    truncated: bool = False

    @property
    def paths(self) -> list[str]:
        return [c.path for c in (*self.proposed, *self.ignored)]


@dataclass(frozen=True)
class BoundedOutput:
    """A command's output as kept: its head and tail, and how much was left out between them."""

    head: str = ""
    tail: str = ""
    total_chars: int = 0
    left_out: int = 0

    @property
    def text(self) -> str:
        """The output, with a note in place of what was left out."""
        if not self.left_out:
            return self.head + self.tail
        note = f"\n[… {self.left_out:,} characters of output left out …]\n"
        return self.head + note + self.tail


class OutputCollector:
    """Decodes output bytes as UTF-8 (bad bytes replaced) and keeps a bounded head and tail."""

    def __init__(self, keep_chars: int) -> None:
        self._keep = keep_chars
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self._total = 0
        self.bytes = 0

    def feed(self, data: bytes, *, final: bool = False) -> str:
        """Adds ``data``; returns the text it completes (may be empty)."""
        self.bytes += len(data)
        text = self._decoder.decode(data, final)
        if text:
            self._add(text)
        return text

    def _add(self, text: str) -> None:
        self._total += len(text)
        room = self._keep - self._head_len
        if room > 0:
            part = text[:room]
            self._head.append(part)
            self._head_len += len(part)
            text = text[room:]
        if text and self._keep:
            self._tail = (self._tail + text)[-self._keep :]

    def result(self) -> BoundedOutput:
        head = "".join(self._head)
        return BoundedOutput(
            head=head,
            tail=self._tail,
            total_chars=self._total,
            left_out=self._total - len(head) - len(self._tail),
        )


@dataclass(frozen=True)
class CommandResult:
    """How a sandboxed command ended and what it did.

    ``exit_code`` is None when the command was killed (time, output limit, a stop); ``stopped_by``
    says what killed it: ``"timeout"``, ``"output"`` (more than ``Limits.max_output_bytes``) or
    ``"stop"`` (:meth:`RunningCommand.stop`, a cancelled task). ``notes`` say each of those, and
    the limits the command ran into, for people and the model.
    """

    command: str
    exit_code: int | None
    output: BoundedOutput
    changes: FolderChanges
    duration_s: float
    stopped_by: Literal["timeout", "output", "stop"] | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def timed_out(self) -> bool:
        return self.stopped_by == "timeout"

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class RunningCommand(Protocol):
    """A command started in a sandbox."""

    def stop(self, reason: str = "stopped") -> None:
        """Kills the command and everything it started (within a second); ``result`` then ends."""

    async def result(self) -> CommandResult:
        """Waits for the end; cancelling the wait stops the command."""


class Sandbox(Protocol):
    """A platform's sandbox: Linux's is :class:`workspace.isolation.bubblewrap.BubblewrapSandbox`.

    macOS (Seatbelt) and Windows (AppContainer and a job object) would implement the same two
    methods; see docs/ARCHITECTURE.md.
    """

    limits: Limits

    async def start(
        self,
        command: str,
        folder: Path,
        *,
        pending: PendingChanges | None = None,
        on_output: OutputCallback | None = None,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        grant: Grant | None = None,
    ) -> RunningCommand: ...

    async def run(
        self,
        command: str,
        folder: Path,
        *,
        pending: PendingChanges | None = None,
        on_output: OutputCallback | None = None,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        grant: Grant | None = None,
    ) -> CommandResult: ...
