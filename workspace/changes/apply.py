"""Applying decided changes to disk: conflict checks, the atomic multi-file write with
checkpoints and rollback, and rebasing a proposal on what is on disk now.

:meth:`ChangeSet.apply <workspace.changes.changeset.ChangeSet.apply>` decides what to write;
the functions here do the writing. Each file is written atomically (temp file, fsync,
``os.replace``, the old permissions kept, the result read back and verified), relative to the
folder handles of one :class:`~workspace.changes.folderio.FolderIO`, so a symlink swapped in
after the conflict check redirects nothing. Before the first write, the apply journal records
the set (:mod:`~workspace.changes.journal`): a kill mid-apply is recovered at the next start. If
a write fails, the files already written are restored, so a failing apply leaves every file as
it was and says so.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workspace.changes.errors import ChangeError, UnsafePathError
from workspace.changes.fileio import disk_state, sha256
from workspace.changes.folderio import FolderIO
from workspace.changes.hunks import Conflict, FileChange, Merge
from workspace.changes.outcome import format_outcome
from workspace.diffing import TextFormat, sniff, split_lines
from workspace.errors import SandboxError
from workspace.sandbox import Sandbox, display_path

if TYPE_CHECKING:
    from workspace.changes.history import ChangeHistory

log = logging.getLogger("workspace.changes")


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


def find_conflict(sandbox: Sandbox, fc: FileChange, merge: Merge, io: FolderIO | None = None) -> Conflict | None:
    """Why ``merge`` cannot be written now (the file changed on disk after the proposal, the
    rename's target appeared, the path left the folder or leads through a symlink now, the file
    cannot be read), or None when it can. Reads go through ``io`` (no symlink is followed)."""

    def problem(message: str, disk: bytes | None) -> Conflict:
        return Conflict(path=fc.path, base=fc.before, disk=disk, proposed=merge.data, message=message,
                        file_id=fc.id)

    if io is None:
        with FolderIO(sandbox) as own:
            return find_conflict(sandbox, fc, merge, own)
    shown = display_path(fc.path)
    try:
        sandbox.check_still_inside(fc.path)
        if merge.target != fc.path:
            sandbox.check_still_inside(merge.target)
        disk, _ = disk_state(sandbox, fc.path, io)
        target_kind = io.kind(merge.target) if merge.target != fc.path else None
    except SandboxError as exc:  # ChangeError and UnsafePathError too
        return problem(str(exc), None)
    except OSError as exc:
        return problem(f"{shown} cannot be read now ({exc.strerror or exc}); check its permissions, then apply "
                       "again", None)
    if (sha256(disk) if disk is not None else None) != fc.before_hash:
        what = "was deleted" if disk is None else ("was created" if fc.before is None else "changed")
        return problem(f"{shown} {what} on disk after the change was proposed", disk)
    if target_kind is not None:
        return problem(f"{display_path(merge.target)} now exists on disk, so {shown} cannot be renamed to it", disk)
    return None


def write_merges(sandbox: Sandbox, history: ChangeHistory, writes: list[tuple[FileChange, Merge]],
                 result: ApplyResult, *, change_set_id: str, summary: str, io: FolderIO) -> str | None:
    """Checkpoint, journal, write every file atomically through ``io``, verify; on failure restore
    what was written.

    Fills ``result``'s checkpoints, history entry and (when a path now leads through a symlink)
    conflicts; returns the error message, or None.
    """
    touched: dict[str, tuple[bytes | None, int | None]] = {}
    planned: dict[str, tuple[bytes | None, int | None]] = {}
    try:
        for fc, merge in writes:
            if fc.before is not None:
                mode = io.mode(fc.path)
                if mode is not None:
                    fc.before_mode = mode
            touched[fc.path] = (fc.before, fc.before_mode)
            planned[fc.path] = (None, None)
            if merge.target != fc.path:
                touched[merge.target] = (None, None)
            planned[merge.target] = (merge.data, fc.before_mode if merge.data is not None else None)
        entry = history.begin(touched, planned, change_set_id=change_set_id, summary=summary, io=io)
    except (OSError, SandboxError) as exc:
        return (f"Nothing was applied: the restore point could not be saved before writing ({exc}); every file is "
                "unchanged. Check that the app's data folder is writable and has free space, then apply again")
    result.checkpoint_id, result.entry_id = entry.before, entry.id
    done: list[str] = []
    created_dirs: list[str] = []
    current: FileChange | None = None
    try:
        for fc, merge in writes:
            current = fc
            if merge.data is not None:
                done.append(merge.target)
                io.write(merge.target, merge.data, mode=fc.before_mode, created=created_dirs)
                written, _ = io.state(merge.target)
                if written != merge.data:
                    raise OSError(f"{display_path(merge.target)} did not read back as written")
            if merge.target != fc.path or merge.data is None:
                done.append(fc.path)
                io.unlink(fc.path)
        io.sync()
    except Exception as exc:
        restore_error = _roll_back(io, done, touched, created_dirs)
        history.fail(entry, keep_journal=restore_error is not None)
        where = display_path(done[-1]) if done else "the first file"
        if isinstance(exc, UnsafePathError) and current is not None:
            conflict = Conflict(path=current.path, base=current.before, disk=None, proposed=None, message=str(exc),
                                file_id=current.id)
            current.conflict = conflict
            result.conflicts.append(conflict)
        if restore_error:
            return (f"Applying failed at {where}: {exc}. Restoring the files already written also failed "
                    f"({restore_error}); every file is either old or new, checkpoint {entry.before} holds the old "
                    "versions, and the next start offers to roll the set back or forward")
        restored = f"the {len(set(done))} file(s) already written were restored, so " if done else ""
        return f"Nothing was applied: writing {where} failed ({exc}); {restored}every file is unchanged"
    except BaseException:
        history.release(entry)  # cut short (a kill, an interrupt): the journal stays for recovery
        raise
    try:
        history.finish(entry, created_dirs=created_dirs)
    except OSError as exc:  # every file is written; only the record of it could not be saved
        log.warning("the change history could not record the apply of %s: %s", summary, exc)
        history.release(entry)  # the journal stays: the next start offers to settle it
    result.after_checkpoint_id = entry.after
    return None


def _roll_back(io: FolderIO, done: list[str], touched: dict[str, tuple[bytes | None, int | None]],
               created_dirs: list[str]) -> str | None:
    """Put back every file of ``done`` (through the same folder handles as the writes)."""
    error = None
    for rel in reversed(done):
        data, mode = touched[rel]
        try:
            if data is None:
                io.unlink(rel)
            else:
                current, _ = io.state(rel)
                if current != data:
                    io.write(rel, data, mode=mode)
        except UnsafePathError as exc:
            # The way to it is a symlink now. If this apply never wrote in that folder, the write
            # failed before touching anything (handles are never opened through a symlink): nothing
            # to undo. If it did (through a handle closed since), it cannot be reached safely now.
            if rel.rpartition("/")[0] in io.touched:
                error = f"{display_path(rel)}: {exc}"
            continue
        except Exception as exc:
            error = f"{display_path(rel)}: {exc}"
    for rel in reversed(created_dirs):
        with contextlib.suppress(OSError, SandboxError):
            io.rmdir(rel)
    with contextlib.suppress(OSError):
        io.sync()
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
