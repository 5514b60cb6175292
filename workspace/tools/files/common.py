"""What every file tool shares: limits, refusals, the run's view of the folder."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from workspace.diffing import TextFormat, sniff
from workspace.errors import SandboxError
from workspace.sandbox import Sandbox, display_path, is_temp_name
from workspace.tools.base import ToolContext, ToolOutput

if TYPE_CHECKING:
    from workspace.changes import ChangeSet
    from workspace.events import Event



MAX_READ_LINES = 2000
MAX_READ_CHARS = 200_000
#: read_file reads a file bigger than this as a stream (the lines asked for, never the whole file).
STREAM_BYTES = 8 * 1024 * 1024
MAX_LIST_ENTRIES = 1000
MAX_SEARCH_RESULTS = 500
MAX_SEARCH_FILE_BYTES = 4 * 1024 * 1024
#: The longest a search (the walk and every match) runs before it stops and says so.
MAX_SEARCH_SECONDS = 20.0
#: A regular expression matches a line in slices of time, the first this long, each twice the last up to
#: MAX_MATCH_SLICE_SECONDS: a cancelled search ends within a slice.
MATCH_SLICE_SECONDS = 0.05
MAX_MATCH_SLICE_SECONDS = 1.0
MAX_EDIT_BYTES = 16 * 1024 * 1024
MAX_DIFF_CHARS = 4000

NO_FOLDER = (
    "No folder is open, so there are no files to work with. Ask the user to open a folder "
    "(File > Open Folder in the app, or --folder DIR on the command line)."
)
NO_CHANGE_SET = (
    "This run cannot change files: it has no change set for review. Describe the change to the user instead."
)

F = TypeVar("F", bound=Callable[..., Any])


class Refused(Exception):
    """A call the model can fix; the message says how."""


def _guard(fn: F) -> F:
    """Turn refusals into error results with a plain sentence (no exception type noise)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (Refused, SandboxError) as exc:
            return ToolOutput(str(exc), is_error=True)

    return wrapper  # type: ignore[return-value]


#: The flag a reading tool's worker thread is given (:func:`_stoppable_in_thread`).
_stop_flag = threading.Event


async def _stoppable_in_thread(fn: Callable[..., Any], *args: Any, context: ToolContext | None) -> Any:
    """Run a reading tool's work in a worker thread with a flag (``stop``) it looks at between steps: set when the
    call is cancelled (Stop), so the thread ends soon after instead of running on to its time limit (a thread
    cannot be stopped from outside; cancelling the task only stops waiting for it)."""
    stop = _stop_flag()
    try:
        return await asyncio.to_thread(fn, *args, context=context, stop=stop)
    except asyncio.CancelledError:
        stop.set()
        raise


async def _write_in_thread(fn: Callable[..., Any], *args: Any, context: ToolContext | None) -> Any:
    """Run a writing tool's work in a worker thread, holding the change set's lock, and emit its
    events afterwards on the event loop (``ToolContext.emit`` feeds an asyncio queue)."""
    collected: list[Event] = []
    local = None
    if context is not None:
        local = dataclasses.replace(context, emit=collected.append)

    def work() -> Any:
        changes = context.changes if context is not None else None
        if changes is None:
            return fn(*args, context=local)
        with changes.lock:
            return fn(*args, context=local)

    result = await asyncio.to_thread(work)
    emit = context.emit if context is not None else None
    if emit is not None:
        for event in collected:
            emit(event)
    return result


# -- the workspace of a call --------------------------------------------------------------------


@dataclass(slots=True)
class _Workspace:
    sandbox: Sandbox
    changes: ChangeSet | None
    context: ToolContext | None

    def read(self, rel: str) -> bytes | None:
        """The file as the run's pending proposals leave it (None: absent). Disk reads never follow a
        symlink swapped in on the way (:func:`workspace.changes.fileio.disk_state`)."""
        if self.changes is not None:
            return self.changes.read_bytes(rel)
        from workspace.changes.errors import ChangeError
        from workspace.changes.fileio import disk_state

        try:
            return disk_state(self.sandbox, rel)[0]
        except ChangeError:
            return None

    def open_unchanged(self, rel: str) -> BinaryIO | None:
        """The file open on disk (binary; the caller closes it) when this run's proposals leave it as it
        is there; None when a proposal changes it, or there is no such file."""
        if self.changes is not None and self.changes.pending_change(rel) is not None:
            return None
        from workspace.changes.errors import ChangeError
        from workspace.changes.fileio import open_disk_file

        try:
            return open_disk_file(self.sandbox, rel)
        except ChangeError:
            return None

    def pending_note(self, rel: str) -> str | None:
        if self.changes is None:
            return None
        fc = self.changes.pending_change(rel)
        if fc is None:
            return None
        return ("This file has changes proposed in this run that await the user's review; you see the proposed "
                "text, which is not on disk yet.")

    def need_changes(self) -> ChangeSet:
        if self.changes is None:
            raise Refused(NO_CHANGE_SET)
        return self.changes


def _workspace(context: ToolContext | None) -> _Workspace:
    folder = context.folder if context is not None else None
    changes = context.changes if context is not None else None
    if folder is None and changes is not None:
        folder = changes.folder
    if folder is None:
        raise Refused(NO_FOLDER)
    if changes is not None and Path(folder).resolve() == changes.folder:
        sandbox = changes.sandbox
    else:
        sandbox = Sandbox(folder)
    return _Workspace(sandbox, changes, context)


def _text_of(rel: str, data: bytes) -> tuple[str, TextFormat]:
    fmt = sniff(data)
    if fmt is None:
        raise Refused(f"'{display_path(rel)}' is a binary file ({len(data):,} bytes); the file tools read and edit text files "
                      "only. delete_file and rename_file work on binary files")
    return fmt.decode(data), fmt


def _existing(ws: _Workspace, path: str) -> tuple[str, bytes]:
    rel, found = _existing_or_big(ws, path, stream_bytes=None)
    assert isinstance(found, bytes)
    return rel, found


def _existing_or_big(ws: _Workspace, path: str, *, stream_bytes: int | None) -> tuple[str, bytes | BinaryIO]:
    """The file's bytes, or with ``stream_bytes``, the file open on disk when it is unchanged by this
    run and bigger than that (the caller closes it)."""
    res = ws.sandbox.resolve(path)
    if stream_bytes is not None and not res.path.is_dir() and not is_temp_name(res.path.name):
        fh = ws.open_unchanged(res.rel)
        if fh is not None:
            keep = False
            try:
                keep = os.fstat(fh.fileno()).st_size > stream_bytes
                return res.rel, fh if keep else fh.read()
            finally:
                if not keep:
                    fh.close()
    if res.path.is_dir():
        raise Refused(f"'{display_path(path)}' is a folder, not a file; use list_files to see what is in it")
    data = None if is_temp_name(res.path.name) else ws.read(res.rel)
    if data is None:
        pending = ws.changes.pending_paths().get(res.rel) if ws.changes is not None else None
        if pending:
            raise Refused(f"'{display_path(res.rel)}' is {pending} by a change proposed in this run (awaiting review)")
        raise Refused(f"'{display_path(path)}' does not exist in the opened folder; check the name with list_files")
    return res.rel, data


# -- reading --------------------------------------------------------------------------------------
