"""Applying decided changes to disk: conflict checks, the atomic multi-file write with
checkpoints and rollback, and rebasing a proposal on what is on disk now.

:meth:`ChangeSet.apply <workspace.changes.changeset.ChangeSet.apply>` decides what to write;
the functions here do the writing. Each file is written atomically (temp file, fsync,
``os.replace``, the old permissions kept, the result read back and verified). If a write fails,
the files already written are restored, so a failing apply leaves every file as it was.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.changes.errors import ChangeError
from workspace.changes.fileio import atomic_write, disk_state, makedirs, read_file_state, sha256, sync_dirs
from workspace.changes.hunks import Conflict, FileChange, Merge
from workspace.changes.outcome import format_outcome
from workspace.diffing import TextFormat, sniff, split_lines
from workspace.errors import SandboxError
from workspace.sandbox import Sandbox

if TYPE_CHECKING:
    from workspace.changes.history import ChangeHistory


@dataclass(slots=True)
class ApplyResult:
    """What :meth:`ChangeSet.apply` did."""

    applied: list[FileChange] = field(default_factory=list)
    rejected: list[FileChange] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    #: Conflicting files left out (``on_conflict="skip"``).
    skipped: list[FileChange] = field(default_factory=list)
    error: str | None = None
    #: The checkpoint taken right before writing (restore point) and right after.
    checkpoint_id: str | None = None
    after_checkpoint_id: str | None = None
    #: The :class:`ChangeHistory` entry (undo / redo it by id).
    entry_id: str | None = None
    outcome: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing refused: no conflict stopped the apply and no write failed."""
        return self.error is None and not (self.conflicts and not self.skipped)

    @property
    def settled(self) -> list[FileChange]:
        return [*self.applied, *self.rejected, *self.skipped]

    def message(self) -> str:
        return format_outcome(self.outcome) if self.outcome else (self.error or "")


def find_conflict(sandbox: Sandbox, fc: FileChange, merge: Merge) -> Conflict | None:
    """Why ``merge`` cannot be written now (the file changed on disk after the proposal, the
    rename's target appeared, the path left the folder), or None when it can."""

    def problem(message: str, disk: bytes | None) -> Conflict:
        return Conflict(path=fc.path, base=fc.before, disk=disk, proposed=merge.data, message=message,
                        file_id=fc.id)

    try:
        sandbox.check_still_inside(fc.path)
        if merge.target != fc.path:
            sandbox.check_still_inside(merge.target)
    except SandboxError as exc:
        return problem(str(exc), None)
    try:
        disk, _ = disk_state(sandbox, fc.path)
    except ChangeError as exc:
        return problem(str(exc), None)
    if (sha256(disk) if disk is not None else None) != fc.before_hash:
        what = "was deleted" if disk is None else ("was created" if fc.before is None else "changed")
        return problem(f"{fc.path} {what} on disk after the change was proposed", disk)
    if merge.target != fc.path and sandbox.abspath(merge.target).exists():
        return problem(f"{merge.target} now exists on disk, so {fc.path} cannot be renamed to it", disk)
    return None


def write_merges(sandbox: Sandbox, history: ChangeHistory, writes: list[tuple[FileChange, Merge]],
                 result: ApplyResult, *, change_set_id: str, summary: str) -> str | None:
    """Checkpoint, write every file atomically, verify; on failure restore what was written.

    Fills ``result``'s checkpoints and history entry; returns the error message, or None.
    """
    touched: dict[str, tuple[bytes | None, int | None]] = {}
    planned: dict[str, tuple[bytes | None, int | None]] = {}
    for fc, merge in writes:
        if fc.before is not None:
            with contextlib.suppress(OSError):
                fc.before_mode = stat.S_IMODE(os.stat(sandbox.abspath(fc.path)).st_mode)
        touched[fc.path] = (fc.before, fc.before_mode)
        planned[fc.path] = (None, None)
        if merge.target != fc.path:
            touched[merge.target] = (None, None)
        planned[merge.target] = (merge.data, fc.before_mode if merge.data is not None else None)
    entry = history.begin(touched, planned, change_set_id=change_set_id, summary=summary)
    result.checkpoint_id, result.entry_id = entry.before, entry.id
    done: list[str] = []
    created_dirs: list[str] = []
    dirs: set[Path] = set()
    try:
        for fc, merge in writes:
            target = sandbox.check_still_inside(merge.target)
            if merge.data is not None:
                created_dirs += makedirs(sandbox, target.parent)
                done.append(merge.target)
                atomic_write(target, merge.data, mode=fc.before_mode, dirs=dirs)
                written, _ = read_file_state(target)
                if written != merge.data:
                    raise OSError(f"{merge.target} did not read back as written")
            if merge.target != fc.path or merge.data is None:
                source = sandbox.check_still_inside(fc.path)
                done.append(fc.path)
                if source.exists():
                    os.unlink(source)
                    dirs.add(source.parent)
        sync_dirs(dirs)
    except Exception as exc:
        restore_error = _roll_back(sandbox, done, touched, created_dirs)
        history.fail(entry)
        if restore_error:
            return (f"Applying failed at {done[-1] if done else 'the first file'}: {exc}. Restoring the files "
                    f"already written also failed ({restore_error}); every file is either old or new, and "
                    f"checkpoint {entry.before} holds the old versions")
        return f"Nothing was applied: writing {done[-1] if done else 'a file'} failed ({exc}); every file is " \
               "unchanged"
    history.finish(entry, created_dirs=created_dirs)
    result.after_checkpoint_id = entry.after
    return None


def _roll_back(sandbox: Sandbox, done: list[str], touched: dict[str, tuple[bytes | None, int | None]],
               created_dirs: list[str]) -> str | None:
    error = None
    for rel in reversed(done):
        data, mode = touched[rel]
        try:
            path = sandbox.abspath(rel)
            if data is None:
                if path.exists():
                    os.unlink(path)
            else:
                current, _ = read_file_state(path)
                if current != data:
                    atomic_write(path, data, mode=mode)
        except Exception as exc:
            error = f"{rel}: {exc}"
    for rel in reversed(created_dirs):
        with contextlib.suppress(OSError):
            os.rmdir(sandbox.abspath(rel))
    return error


def rebased_content(fc: FileChange, disk: bytes | None, *, text: str | None, overwrite: bool) -> bytes | None:
    """The content ``fc``'s proposal gives when it starts from ``disk`` (see :meth:`ChangeSet.rebase`).

    The proposal is the conflict's ``proposed`` version (the accepted hunks) or, without a
    conflict, the whole proposal; merged three-way with the disk unless ``overwrite`` (the
    proposal as it is) or ``text`` (the user's own merge). :class:`ChangeError` when both changed
    the same lines, or the file cannot be merged.
    """
    from workspace.diffing import merge3

    proposed = fc.conflict.proposed if fc.conflict is not None else fc.after
    fmt = (sniff(disk) if disk is not None else None) or fc.format or TextFormat()
    if text is not None:
        return fmt.encode(fmt.with_newlines(text))
    if overwrite or proposed is None or disk is None or fc.before is None or fc.format is None:
        if not overwrite:
            raise ChangeError(f"{fc.path} cannot be merged with its new state on disk; overwrite it with "
                              "the proposal, give the merged text, or reject the change")
        return proposed
    try:
        base_lines = split_lines(fc.format.decode(fc.before))
        disk_lines = split_lines(fc.format.decode(disk))
        prop_lines = split_lines(fc.format.decode(proposed))
    except UnicodeDecodeError:
        raise ChangeError(f"{fc.path} changed its encoding on disk; overwrite it with the proposal, "
                          "give the merged text, or reject the change") from None
    merged = merge3(base_lines, disk_lines, prop_lines)
    if merged is None:
        raise ChangeError(f"The disk and the proposal both changed the same lines of {fc.path}; "
                          "overwrite it with the proposal, give the merged text, or reject the change")
    return fc.format.encode("".join(merged))
