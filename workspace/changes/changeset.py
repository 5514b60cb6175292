"""The change set: the file changes a run proposes, their review hunk by hunk and their application.

See :mod:`workspace.changes` for the guarantees (reject really reverts, atomic per file,
conflicts, checkpoints, the outcome the model is told).
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.changes.apply import ApplyResult, find_conflict, rebased_content, write_merges
from workspace.changes.checkpoints import CheckpointStore
from workspace.changes.errors import ChangeError, ReadOnlyError
from workspace.changes.fileio import disk_state, sha256
from workspace.changes.folderio import FolderIO
from workspace.changes.history import ChangeHistory
from workspace.changes.hunks import ACCEPTED, PENDING, REJECTED, Conflict, FileChange, Hunk, Merge
from workspace.changes.outcome import format_outcome
from workspace.diffing import split_lines
from workspace.sandbox import Sandbox, display_path

if TYPE_CHECKING:
    import os

    from workspace.events import ChangeDecided

#: ``ChangeSet.mode``: proposals wait for review, are applied at once, or are refused.
MODES = ("review", "auto", "readonly")


@dataclass(frozen=True, slots=True)
class ReviewCounts:
    files: int
    hunks: int
    pending: int
    accepted: int
    rejected: int
    added: int
    removed: int


Listener = Callable[[str, "ChangeSet", dict[str, Any]], None]


class ChangeSet:
    """The file changes a run proposes, their review and their application.

    ``mode``: ``"review"`` (default: proposals wait for the user), ``"auto"`` (each
    proposal is applied at once, with a checkpoint) or ``"readonly"`` (proposals are
    refused). ``thread_id`` names the conversation whose :class:`ChangeHistory` records
    the applied sets (undo/redo, net diff); ``store`` is the checkpoint store (default:
    ``paths.data_dir()/checkpoints``).

    Thread-safe: tools propose from worker threads while a view may read and decide.

    About 590 lines: proposing, deciding, applying, rebasing and the persisted snapshot all
    read and change the same list of files under one lock, so they stay one class; what does
    not need that state lives beside it (the write and the rollback in
    :mod:`~workspace.changes.apply`, one file's hunks in :mod:`~workspace.changes.hunks`, undo
    in :mod:`~workspace.changes.history`).
    """

    def __init__(self, folder: str | os.PathLike[str], *, mode: str = "review", id: str | None = None,
                 thread_id: str | None = None, store: CheckpointStore | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"Unknown review mode {mode!r}; use one of {', '.join(MODES)}")
        self.sandbox = Sandbox(folder)
        self.folder = self.sandbox.root
        self.mode = mode
        self.id = id or uuid.uuid4().hex[:12]
        self.thread_id = thread_id
        #: Set from the first proposing tool call (used for ChangeDecided events).
        self.run_id: str | None = None
        self.robot: str | None = None
        self._store = store
        self._history: ChangeHistory | None = None
        self._files: list[FileChange] = []
        self._counter = 0
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._undelivered: list[dict[str, Any]] = []
        #: The latest verify of this set the model has not heard (``note_verify``), told with the outcome.
        self._verify: dict[str, Any] | None = None
        self.last_result: ApplyResult | None = None

    def __repr__(self) -> str:
        return f"<ChangeSet {self.id} {self.mode} files={len(self._files)} pending={len(self.pending_files)}>"

    # -- collections ----------------------------------------------------------------------------
    @property
    def files(self) -> list[FileChange]:
        """Every file change of the set, settled ones included, in proposal order."""
        with self._lock:
            return list(self._files)

    @property
    def pending_files(self) -> list[FileChange]:
        with self._lock:
            return [f for f in self._files if f.state == PENDING]

    @property
    def lock(self) -> threading.RLock:
        """Held by each writing tool call from reading the file to proposing, so parallel tool calls
        of one turn that edit the same file compose instead of overwriting each other."""
        return self._lock

    @property
    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = CheckpointStore()
        return self._store

    @property
    def history(self) -> ChangeHistory:
        if self._history is None:
            self._history = ChangeHistory(self.folder, self.thread_id, store=self.store)
        return self._history

    def file(self, key: str) -> FileChange:
        """A file change by id, path or new path (pending ones first)."""
        with self._lock:
            for fc in [*self.pending_files, *self._files]:
                if key in (fc.id, fc.path, fc.new_path):
                    return fc
        raise KeyError(f"No proposed change for {key!r}")

    def hunks(self, *, pending_only: bool = False, include_settled: bool = False) -> list[Hunk]:
        """Hunks in navigation order (files in proposal order, hunks top to bottom)."""
        with self._lock:
            files = self._files if include_settled else self.pending_files
            return [h for f in files for h in f.hunks if not pending_only or h.status == PENDING]

    def hunk(self, hunk_id: str) -> Hunk:
        with self._lock:
            for fc in self._files:
                for h in fc.hunks:
                    if h.id == hunk_id:
                        return h
        raise KeyError(f"No hunk {hunk_id!r} in change set {self.id}")

    def file_of(self, hunk_id: str) -> FileChange:
        with self._lock:
            for fc in self._files:
                if any(h.id == hunk_id for h in fc.hunks):
                    return fc
        raise KeyError(f"No hunk {hunk_id!r} in change set {self.id}")

    def next_hunk(self, current: str | None = None, *, undecided: bool = False) -> Hunk | None:
        """The hunk after ``current`` (``]c``), wrapping; ``undecided`` skips decided ones."""
        return self._step(current, 1, undecided)

    def prev_hunk(self, current: str | None = None, *, undecided: bool = False) -> Hunk | None:
        """The hunk before ``current`` (``[c``), wrapping."""
        return self._step(current, -1, undecided)

    def _step(self, current: str | None, delta: int, undecided: bool) -> Hunk | None:
        order = self.hunks()
        if not order:
            return None
        ids = [h.id for h in order]
        start = ids.index(current) if current in ids else (-1 if delta > 0 else 0)
        for k in range(1, len(order) + 1):
            h = order[(start + delta * k) % len(order)]
            if not undecided or h.status == PENDING:
                return h
        return None

    def counts(self) -> ReviewCounts:
        with self._lock:
            hunks = self.hunks()
            return ReviewCounts(
                files=len(self.pending_files), hunks=len(hunks),
                pending=sum(h.status == PENDING for h in hunks),
                accepted=sum(h.status == ACCEPTED for h in hunks),
                rejected=sum(h.status == REJECTED for h in hunks),
                added=sum(h.added for h in hunks), removed=sum(h.removed for h in hunks),
            )

    # -- listeners ------------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(what, change_set, detail)`` on every change; returns the unsubscriber.

        ``what`` is ``proposed``, ``decided``, ``edited``, ``applied``, ``conflict``,
        ``rebased`` or ``restored`` (an undo or redo, :meth:`record_restore`). Listeners run on the thread that made the change (tools run in
        worker threads): a Qt view must hop to the GUI thread itself.
        """
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def _notify(self, what: str, **detail: Any) -> None:
        for listener in list(self._listeners):
            try:
                listener(what, self, detail)
            except Exception:  # a view's bug must never break a tool call
                import logging

                logging.getLogger("workspace.changes").exception("change-set listener failed")

    # -- the proposed state (what tools read) ------------------------------------------------------
    def _lookup(self, rel: str) -> tuple[FileChange | None, str]:
        for fc in self._files:
            if fc.state != PENDING:
                continue
            if fc.target == rel:
                return fc, "self"
            if fc.new_path is not None and fc.path == rel:
                return fc, "source"
        return None, ""

    def _disk(self, rel: str) -> tuple[bytes | None, int | None]:
        return disk_state(self.sandbox, rel)


    def read_bytes(self, path: str) -> bytes | None:
        """The file as this run's pending proposals leave it (disk if untouched; None if absent)."""
        rel = self._rel(path)
        with self._lock:
            fc, role = self._lookup(rel)
            if fc is not None:
                return fc.after if role == "self" else None
        return self._disk(rel)[0]

    def pending_change(self, path: str) -> FileChange | None:
        """The pending change that affects ``path`` (as its file, or as a rename's source)."""
        rel = self._rel(path)
        with self._lock:
            return self._lookup(rel)[0]

    def pending_paths(self) -> dict[str, str]:
        """``{path: "created" | "modified" | "deleted" | "renamed to X" | "renamed from X"}``."""
        out: dict[str, str] = {}
        with self._lock:
            for fc in self.pending_files:
                if fc.new_path is not None:
                    out[fc.path] = f"renamed to {fc.new_path}"
                    out[fc.new_path] = f"renamed from {fc.path}"
                else:
                    out[fc.path] = {"create": "created", "delete": "deleted"}.get(fc.action, "modified")
        return out

    def _rel(self, path: str) -> str:
        return self.sandbox.resolve(path).rel

    # -- proposing (the file tools call these) ------------------------------------------------------
    def _check_mode(self) -> None:
        if self.mode == "readonly":
            raise ReadOnlyError(
                "The folder is open read-only (review mode: read-only), so no file can be changed. "
                "Describe the change to the user instead; they can switch the review mode to apply changes"
            )

    def _new_file(self, rel: str, before: bytes | None, after: bytes | None, mode: int | None,
                  new_path: str | None = None) -> FileChange:
        self._counter += 1
        fc = FileChange(id=f"f{self._counter}", path=rel, before=before, after=after, before_mode=mode,
                        new_path=new_path)
        self._files.append(fc)
        return fc

    def _drop_if_empty(self, fc: FileChange) -> FileChange | None:
        if fc.new_path is None and fc.before == fc.after:
            self._files.remove(fc)
            return None
        return fc

    def _note_caller(self, tool_id: str | None, fc: FileChange | None, run_id: str | None,
                     robot: str | None) -> None:
        if fc is not None and tool_id and tool_id not in fc.tool_ids:
            fc.tool_ids.append(tool_id)
        if run_id and self.run_id is None:
            self.run_id = run_id
        if robot and self.robot is None:
            self.robot = robot

    def propose(self, path: str, data: bytes | None, *, tool_id: str | None = None, create: bool = False,
                run_id: str | None = None, robot: str | None = None) -> FileChange | None:
        """Propose ``path`` to have ``data`` (None: delete it). Returns the file's change (composed
        with this run's earlier proposals for it), or None when the net result is no change.

        ``create`` refuses when the file already exists (disk or pending). In ``auto``
        mode the change is applied at once; check ``FileChange.state``.
        """
        self._check_mode()
        rel = self.sandbox.resolve(path, for_write=True).rel
        with self._lock:
            fc, role = self._lookup(rel)
            if role == "source":
                assert fc is not None
                raise ChangeError(
                    f"'{rel}' is being renamed to '{fc.new_path}' by a change proposed in this run; change "
                    f"'{fc.new_path}' instead, or use another name"
                )
            if fc is None:
                disk, mode = self._disk(rel)
                if create and disk is not None:
                    raise ChangeError(f"'{rel}' already exists; use edit_file or write_file to change it")
                if data is None and disk is None:
                    raise ChangeError(f"'{rel}' does not exist, so it cannot be deleted; check the name with "
                                      "list_files")
                if disk == data:
                    return None
                fc = self._new_file(rel, disk, data, mode)
            else:
                if create and fc.after is not None:
                    raise ChangeError(f"'{rel}' already exists (proposed earlier in this run); use edit_file or "
                                      "write_file to change it")
                if data is None and fc.after is None:
                    raise ChangeError(f"'{rel}' is already deleted by a change proposed in this run")
                if data is None and fc.new_path is not None:
                    # Renamed earlier in the run, now deleted: delete the original instead.
                    fc.new_path = None
                fc.after = data
                fc.recompute()
                if self._drop_if_empty(fc) is None:
                    self._note_caller(tool_id, None, run_id, robot)
                    self._notify("proposed", path=rel, file=None)
                    return None
            self._note_caller(tool_id, fc, run_id, robot)
        self._notify("proposed", path=rel, file=fc)
        if self.mode == "auto":
            self._apply_now(fc)
        return fc

    def add_change(self, path: str, before: bytes | None, after: bytes | None, *, before_mode: int | None = None,
                   new_path: str | None = None) -> FileChange:
        """Add a change made elsewhere against ``before`` (the base it was proposed on, not the disk now, so
        :meth:`apply` still refuses a file changed on disk since): the hunks a combined review took from
        several candidates' sets (:func:`workspace.changes.combine.combine`). Not in auto mode's sense: it waits."""
        rel = self.sandbox.resolve(path, for_write=True).rel
        if new_path is not None:
            new_path = self.sandbox.resolve(new_path, for_write=True).rel
        with self._lock:
            if self._lookup(rel)[0] is not None:
                raise ChangeError(f"'{rel}' already has a pending change in change set {self.id}")
            fc = self._new_file(rel, before, after, before_mode, new_path=new_path)
        self._notify("proposed", path=rel, file=fc)
        return fc

    def settle_elsewhere(self, accepted: Iterable[str], *, note: str) -> None:
        """Settle every pending file as decided by an apply made elsewhere (a combined review: another set
        wrote the files): the hunks ``accepted`` (ids) accepted, the others rejected as not taken. Nothing is
        written. The model hears the outcome with ``note`` (which hunks of whose were taken)."""
        chosen = set(accepted)
        with self._lock:
            settled: list[FileChange] = []
            for fc in self.pending_files:
                for h in fc.hunks:
                    if h.id in chosen:
                        h.status, h.reviewed = ACCEPTED, True
                    else:
                        h.status, h.reviewed, h.reason = REJECTED, True, h.reason or "not taken in the combined apply"
                fc.state = "applied" if any(h.status == ACCEPTED for h in fc.hunks) else REJECTED
                settled.append(fc)
            outcome = [{**fc.outcome(), "combined": note} for fc in settled]
            self._undelivered.extend(outcome)
        self._notify("applied", files=[fc.id for fc in settled], checkpoint_id=None)

    def _apply_now(self, fc: FileChange) -> None:
        """Auto mode: apply one proposal at once (the tool result tells the model, so no outcome note)."""
        result = self.apply(files=[fc.id], accept_pending=True, on_conflict="skip", _tell=False)
        if fc.state == PENDING:  # the write failed: settle it so it is not retried silently later
            with self._lock:
                fc.state, fc.reason = "failed", result.error

    def propose_rename(self, path: str, new_path: str, *, tool_id: str | None = None,
                       run_id: str | None = None, robot: str | None = None) -> FileChange | None:
        """Propose moving a file (content kept, composed with this run's edits of it)."""
        self._check_mode()
        src = self.sandbox.resolve(path, for_write=True).rel
        dst = self.sandbox.resolve(new_path, for_write=True).rel
        if src == dst:
            raise ChangeError(f"'{path}' and '{new_path}' are the same file; give a different new_path")
        with self._lock:
            fc, role = self._lookup(src)
            if role == "source" or (fc is None and self._disk(src)[0] is None) or (fc and fc.after is None):
                raise ChangeError(f"'{src}' does not exist, so it cannot be renamed; check the name with list_files")
            if self.sandbox.abspath(dst).is_dir():
                raise ChangeError(f"'{dst}' is a folder; give the full new file name, e.g. '{dst}/{Path(src).name}'")
            other, other_role = self._lookup(dst)
            if other_role == "source" or (other is not None and other.after is None):
                what = "renamed away" if other_role == "source" else "deleted"
                raise ChangeError(f"'{dst}' is being {what} by a change proposed in this run; pick another name, or "
                                  f"write the new content to '{dst}' with write_file")
            if (other is not None and other.after is not None) or (other is None and self._disk(dst)[0] is not None):
                raise ChangeError(f"'{dst}' already exists; choose a new name that is free, or delete it first")
            if fc is None:
                disk, mode = self._disk(src)
                fc = self._new_file(src, disk, disk, mode, new_path=dst)
            elif fc.before is None:
                fc.path = dst  # created in this run: create it under the new name
            else:
                fc.new_path = None if dst == fc.path else dst
            fc.recompute()
            result = self._drop_if_empty(fc)
            self._note_caller(tool_id, result, run_id, robot)
        self._notify("proposed", path=dst, file=result)
        if result is not None and self.mode == "auto":
            self._apply_now(result)
        return result

    # -- decisions --------------------------------------------------------------------------------
    def _decide(self, hunk_ids: Iterable[str], status: str, reason: str | None) -> list[Hunk]:
        changed = []
        with self._lock:
            for hid in hunk_ids:
                h = self.hunk(hid)
                if self.file_of(hid).state != PENDING:
                    raise ChangeError(f"Hunk {hid} belongs to a change that was already settled")
                h.status = status
                h.reason = reason if status != PENDING else None
                h.reviewed = True
                if status == REJECTED:
                    h.edited_lines = None
                    h._inline = None
                changed.append(h)
        self._notify("decided", hunks=[h.id for h in changed], status=status)
        return changed

    def accept(self, *hunk_ids: str) -> None:
        self._decide(hunk_ids, ACCEPTED, None)

    def reject(self, *hunk_ids: str, reason: str | None = None) -> None:
        """Reject hunks; ``reason`` is passed to the model."""
        self._decide(hunk_ids, REJECTED, (reason or "").strip() or None)

    def reset(self, *hunk_ids: str) -> None:
        """Back to undecided (and drop any edit)."""
        with self._lock:
            for hid in hunk_ids:
                self.hunk(hid).edited_lines = None
                self.hunk(hid)._inline = None
        self._decide(hunk_ids, PENDING, None)

    def accept_file(self, key: str) -> None:
        self.accept(*[h.id for h in self.file(key).hunks])

    def reject_file(self, key: str, *, reason: str | None = None) -> None:
        fc = self.file(key)
        self.reject(*[h.id for h in fc.hunks], reason=reason)
        fc.reason = (reason or "").strip() or None

    def accept_all(self) -> None:
        self.accept(*[h.id for h in self.hunks()])

    def reject_all(self, *, reason: str | None = None) -> None:
        for fc in self.pending_files:
            self.reject_file(fc.id, reason=reason)

    def edit_hunk(self, hunk_id: str, text: str) -> Hunk:
        """Replace a hunk's proposed text with the user's and accept it.

        ``text`` may use any newline style; it is stored in the file's style, and a
        final newline is added when the hunk is followed by more lines.
        """
        with self._lock:
            fc = self.file_of(hunk_id)
            h = self.hunk(hunk_id)
            if h.kind == "rename":
                raise ChangeError("The rename itself cannot be edited; accept or reject it")
            lines = split_lines(fc.user_text(text, hint="; use characters that encoding supports"))
            at_end = h.kind == "file" or fc.old_lines is None or h.old_end >= len(fc.old_lines)
            if lines and not lines[-1].endswith(("\n", "\r")) and not at_end:
                assert fc.format is not None  # user_text refuses binary files
                lines[-1] += fc.format.newline
            h.edited_lines = lines
            h._inline = None
            h.status = ACCEPTED
            h.reason = None
            h.reviewed = True
        self._notify("edited", hunks=[hunk_id])
        return h

    def set_file_text(self, key: str, text: str) -> FileChange:
        """Replace the whole proposed content of a file with the user's text; all its hunks accepted."""
        with self._lock:
            fc = self.file(key)
            if fc.state != PENDING:
                raise ChangeError(f"The change of {fc.path} was already settled")
            fc.after = fc.encode(fc.user_text(text))
            fc.user_edited = True
            fc.recompute()
            for h in fc.hunks:
                h.status, h.reason, h.edited_lines, h.reviewed = ACCEPTED, None, None, True
        self._notify("edited", file=fc.id)
        return fc

    # -- applying ---------------------------------------------------------------------------------
    def apply(self, *, files: Sequence[str] | None = None, accept_pending: bool = False,
              on_conflict: str = "refuse", _tell: bool = True) -> ApplyResult:
        """Write the accepted hunks of the pending files (or of ``files``: ids or paths).

        Undecided hunks count as rejected (``accept_pending`` accepts them instead).
        ``on_conflict``: ``"refuse"`` writes nothing when any file changed on disk
        since its proposal and returns the conflicts; ``"skip"`` settles those files as
        ``conflict`` (nothing written to them) and applies the others.
        """
        if on_conflict not in ("refuse", "skip"):
            raise ValueError("on_conflict must be 'refuse' or 'skip'")
        default = ACCEPTED if accept_pending else REJECTED
        try:  # the folder, opened once: the conflict checks and every write go through its handles
            io = FolderIO(self.sandbox)
        except OSError as exc:
            self.last_result = ApplyResult(error=f"Nothing was applied: the folder {display_path(self.folder)} cannot "
                                                 f"be opened ({exc.strerror or exc}); check that it still exists")
            return self.last_result
        with self._lock, io:
            chosen = [self.file(k) for k in files] if files is not None else self.pending_files
            chosen = [fc for fc in chosen if fc.state == PENDING]
            plan: list[tuple[FileChange, Merge]] = []
            conflicts: list[Conflict] = []
            conflicted: list[FileChange] = []
            for fc in chosen:
                merge = fc.merge(pending=default)
                if merge.changed:
                    problem = find_conflict(self.sandbox, fc, merge, io)
                    if problem is not None:
                        conflicts.append(problem)
                        conflicted.append(fc)
                        continue
                plan.append((fc, merge))
            result = ApplyResult(conflicts=conflicts)
            for fc, problem in zip(conflicted, conflicts, strict=True):
                fc.conflict = problem
            if conflicts and on_conflict == "refuse":
                names = ", ".join(display_path(c.path) for c in conflicts)
                result.error = (f"Nothing was applied: {names} changed on disk after the change was proposed. "
                                "Rebase the change on the current file, skip the file, or reject it")
                self.last_result = result
                self._notify("conflict", conflicts=[c.path for c in conflicts])
                return result
            writes = [(fc, m) for fc, m in plan if m.changed]
            if writes:
                error = write_merges(self.sandbox, self.history, writes, result, change_set_id=self.id,
                                     summary=self._summary_line(writes), io=io)
                if error is not None:
                    result.error = error
                    self.last_result = result
                    if result.conflicts:
                        self._notify("conflict", conflicts=[c.path for c in result.conflicts])
                    return result
            # Settle: decisions become final.
            for fc, merge in plan:
                for h in fc.hunks:
                    if h.status == PENDING:
                        h.status, h.reviewed = default, False
                fc.state = "applied" if merge.accepted else REJECTED
                fc.conflict = None
                (result.applied if merge.accepted else result.rejected).append(fc)
            if on_conflict == "skip":
                for fc, problem in zip(conflicted, conflicts, strict=True):
                    fc.state = "conflict"
                    fc.reason = problem.message
                    result.skipped.append(fc)
            result.outcome = [fc.outcome() for fc in result.settled]
            if _tell:
                self._undelivered.extend(result.outcome)
            self.last_result = result
        self._notify("applied", files=[fc.id for fc in result.settled], checkpoint_id=result.checkpoint_id)
        return result

    def _summary_line(self, writes: list[tuple[FileChange, Merge]]) -> str:
        names = [fc.display_path for fc, _ in writes]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        who = f"{self.robot}: " if self.robot else ""
        return f"{who}{shown}"

    def discard(self, *, reason: str | None = None, tell: bool = True) -> ApplyResult:
        """Reject every pending change (nothing is written) and settle it. ``tell``: the model hears of it in
        front of its next message (False: a proposal its next run does not see, one superseded by asking again)."""
        self.reject_all(reason=reason)
        return self.apply(_tell=tell)

    def rebase(self, key: str, *, text: str | None = None, overwrite: bool = False) -> FileChange | None:
        """Make a (conflicting) file's change start from what is on disk now.

        The proposal to keep is the conflict's ``proposed`` version (the accepted hunks)
        or, without a conflict, the whole proposal. By default it is merged three-way
        with the disk: both changes survive when they touch different lines, and
        :class:`ChangeError` is raised when they touch the same ones. ``overwrite``
        takes the proposal as it is; ``text`` is the user's own merge. Hunks are then
        recomputed against the disk (all accepted when they came from a conflict, the
        user's text or an overwrite). Returns None if nothing is left to change.
        """
        with self._lock:
            fc = self.file(key)
            if fc.state not in (PENDING, "conflict"):
                raise ChangeError(f"The change of {fc.path} was already settled")
            disk, mode = self._disk(fc.path)
            from_conflict = fc.conflict is not None
            fc.after = rebased_content(fc, disk, text=text, overwrite=overwrite)
            fc.before, fc.before_mode = disk, mode
            fc.before_hash = sha256(disk) if disk is not None else None
            fc.state, fc.conflict, fc.reason = PENDING, None, None
            fc.recompute()
            if text is not None or overwrite or from_conflict or fc.user_edited:
                for h in fc.hunks:
                    h.status, h.edited_lines, h.reason, h.reviewed = ACCEPTED, None, None, True
            result = self._drop_if_empty(fc)
        self._notify("rebased", file=fc.id)
        return result

    # -- persistence --------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready record of the set (contents go to the checkpoint store), to survive a restart.

        :meth:`from_snapshot` rebuilds it with the same ids and decisions, so a review
        interrupted by quitting the app can continue.
        """
        with self._lock:
            self.store.put_many(data for fc in self._files for data in (fc.before, fc.after) if data is not None)
            return {"id": self.id, "folder": str(self.folder), "mode": self.mode, "thread_id": self.thread_id,
                    "run_id": self.run_id, "robot": self.robot, "counter": self._counter,
                    "files": [fc.snapshot() for fc in self._files], "undelivered": list(self._undelivered),
                    "verify": dict(self._verify) if self._verify is not None else None}

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], *, store: CheckpointStore | None = None) -> ChangeSet:
        """The change set a :meth:`snapshot` recorded (same ids, decisions and pending outcome)."""
        changes = cls(data["folder"], mode=data.get("mode", "review"), id=data["id"],
                      thread_id=data.get("thread_id"), store=store)
        changes.run_id, changes.robot = data.get("run_id"), data.get("robot")
        changes._counter = int(data.get("counter", 0))
        changes._undelivered = list(data.get("undelivered", []))
        verify = data.get("verify")
        changes._verify = dict(verify) if isinstance(verify, dict) else None
        changes._files = [FileChange.from_snapshot(entry, changes.store.get) for entry in data.get("files", [])]
        return changes

    # -- outcome ----------------------------------------------------------------------------------
    def outcome(self) -> list[dict[str, Any]]:
        """``ChangeDecided.outcome`` for every settled file of the set."""
        with self._lock:
            return [fc.outcome() for fc in self._files if fc.state != PENDING]

    def outcome_message(self) -> str | None:
        """What the model should be told about every settled file of the set (None: nothing settled)."""
        outcome = self.outcome()
        return format_outcome(outcome, change_set_id=self.id, verify=self._verify) if outcome else None

    def take_outcome_message(self) -> str | None:
        """The outcome not yet delivered to the model, once (then it counts as delivered).

        The session calls this before sending the next user message and puts the text
        in front of it (see :func:`compose_user_message`).
        """
        with self._lock:
            outcome, self._undelivered = self._undelivered, []
            verify = self._verify
            if outcome:
                self._verify = None
        return format_outcome(outcome, change_set_id=self.id, verify=verify) if outcome else None

    def note_verify(self, result: dict[str, Any]) -> None:
        """Keep the latest verify of this set (``subset``, ``command``, ``passed``, ``exit_code``, ``output``,
        ``timed_out``): the model is told it with the review outcome, so it can fix what failed."""
        with self._lock:
            self._verify = dict(result)

    @property
    def last_verify(self) -> dict[str, Any] | None:
        """The latest verify kept by :meth:`note_verify` and not yet told to the model."""
        with self._lock:
            return dict(self._verify) if self._verify is not None else None

    @property
    def has_undelivered_outcome(self) -> bool:
        return bool(self._undelivered)

    def record_restore(self, op: str, paths: Iterable[str], *, change_set_id: str | None = None) -> None:
        """An undo (``op`` "undo") or redo of written changes, for the model's next note.

        The outcome of this set's apply that the model has not heard yet is marked undone (or no
        longer undone); otherwise an entry per file says that an earlier change was undone or
        redone. An undo and a redo the model never heard cancel out.
        """
        undone = op == "undo"
        mine = change_set_id in (None, self.id)
        with self._lock:
            seen: set[str] = set()
            for rel in paths:
                if rel in seen:
                    continue
                match = next((o for o in reversed(self._undelivered)
                              if rel in (o.get("path"), o.get("new_path"))
                              and (o.get("status") in ("undone", "redone") or (mine and o.get("status") == "applied"))),
                             None)
                if match is not None:
                    seen.update(str(p) for p in (match.get("path"), match.get("new_path")) if p)
                    if match.get("status") == "applied":
                        match["undone"] = undone
                    elif (match.get("status") == "undone") != undone:
                        self._undelivered.remove(match)
                    continue
                seen.add(rel)
                self._undelivered.append({"path": rel, "status": "undone" if undone else "redone",
                                          "action": "modify", "hunks": []})
        self._notify("restored", op=op)

    def summary(self, files: Iterable[FileChange] | None = None) -> list[dict[str, Any]]:
        """``ChangeProposed.files`` for the given (default: pending) files."""
        with self._lock:
            return [fc.summary() for fc in (files if files is not None else self.pending_files)]

    def decided_event(self, *, run_id: str | None = None, robot: str | None = None, seq: int = 0,
                      outcome: list[dict[str, Any]] | None = None,
                      checkpoint_id: str | None = None) -> ChangeDecided:
        """A ``change_decided`` event for the last apply (for the store and the UI)."""
        from workspace.events import ChangeDecided

        last = self.last_result
        return ChangeDecided(
            run_id=run_id or self.run_id or "", robot=robot or self.robot or "", seq=seq,
            change_set_id=self.id,
            outcome=outcome if outcome is not None else (last.outcome if last else self.outcome()),
            checkpoint_id=checkpoint_id if checkpoint_id is not None else (last.checkpoint_id if last else None),
        )

    def unified_diff(self, *, merged: bool = False, context: int = 3) -> str:
        """All pending files as one unified diff (``merged``: the decided result)."""
        return "".join(fc.unified_diff(merged=merged, context=context) for fc in self.pending_files)
