"""Change review models (no widgets).

- :class:`ChangeReviewModel` — the files of a :class:`~workspace.changes.ChangeSet` (or a
  read-only list of :class:`~workspace.changes.FileChange`: the net diff of a thread, two
  texts compared) as a list model with each file's counts; hunk navigation (``]c`` /
  ``[c`` order across files) and the decisions go through it. The change set's listeners
  may run on worker threads (tools propose from threads): they only post a signal, and
  the model refreshes on the GUI thread, coalesced.
- :class:`ChangeActions` — what touches disk, always off the event loop through the
  :class:`~ui.tasks.TaskOwner`: apply (``ThreadSession.apply_changes``), conflict
  resolution (rebase / overwrite / skip), undo / redo (``ChangeHistory``), the thread's
  net diff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt, QTimer, Signal

from workspace.changes import ACCEPTED, PENDING, REJECTED, ChangeError, ReviewCounts

if TYPE_CHECKING:
    from ui.tasks import TaskOwner
    from workspace.changes import (
        ApplyResult,
        ChangeHistory,
        ChangeSet,
        Conflict,
        FileChange,
        HistoryEntry,
        Hunk,
        RestoreResult,
    )
    from workspace.session import ThreadSession

log = logging.getLogger("ui.review.model")

_T = TypeVar("_T")

Index = QModelIndex | QPersistentModelIndex


class _Relay(QObject):
    """Receives change-set notifications on any thread; the connection queues them to the GUI thread."""

    notified = Signal(str)


def counts_of(files: list[FileChange]) -> ReviewCounts:
    hunks = [h for fc in files for h in fc.hunks]
    return ReviewCounts(
        files=len(files), hunks=len(hunks),
        pending=sum(h.status == PENDING for h in hunks),
        accepted=sum(h.status == ACCEPTED for h in hunks),
        rejected=sum(h.status == REJECTED for h in hunks),
        added=sum(h.added for h in hunks), removed=sum(h.removed for h in hunks),
    )


class ChangeReviewModel(QAbstractListModel):
    """The files under review, one row each; decisions and navigation for the views."""

    FileRole = Qt.ItemDataRole.UserRole
    CountsRole = Qt.ItemDataRole.UserRole + 1
    StateRole = Qt.ItemDataRole.UserRole + 2

    #: Decisions, proposals or settlement changed what the views show (GUI thread, coalesced).
    changed = Signal()
    #: Another change set or file list is shown.
    source_changed = Signal()
    #: A decision was refused (e.g. the change was already applied): a message for the user.
    problem = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._changes: ChangeSet | None = None
        self._files: list[FileChange] = []
        self._read_only = False
        self.title = ""
        self._unsubscribe: Callable[[], None] | None = None
        self._relay = _Relay(self)
        self._relay.notified.connect(self._on_relay_notified)
        self._scheduled = False
        self.refreshes = 0
        #: The written changes of the shown change set were undone (its files show "undone").
        self.undone = False

    # -- binding ----------------------------------------------------------------------------------
    def bind(self, changes: ChangeSet | None, *, title: str = "") -> None:
        """Show ``changes`` (all its files, settled ones included) and follow its updates."""
        if changes is self._changes and not self._read_only and changes is not None:
            self.refresh()
            return
        self._detach()
        self.beginResetModel()
        self._changes = changes
        self.undone = False
        self._read_only = False
        self._files = changes.files if changes is not None else []
        self.title = title or (f"Changes proposed by {changes.robot}" if changes is not None and changes.robot
                               else "Proposed changes")
        self.endResetModel()
        if changes is not None:
            relay = self._relay

            def listener(what: str, _changes: ChangeSet, _detail: dict[str, Any]) -> None:
                relay.notified.emit(what)  # any thread: Qt queues it to the GUI thread

            self._unsubscribe = changes.subscribe(listener)
        self.source_changed.emit()
        self.changed.emit()

    def set_files(self, files: list[FileChange], *, title: str) -> None:
        """Show file changes that cannot be decided (a thread's net diff, two texts compared)."""
        self._detach()
        self.beginResetModel()
        self._changes = None
        self._read_only = True
        self._files = list(files)
        self.title = title
        self.endResetModel()
        self.source_changed.emit()
        self.changed.emit()

    def clear(self) -> None:
        self.bind(None)

    def set_undone(self, undone: bool) -> None:
        """The change set's written changes were undone (or redone): its applied files say so."""
        if undone != self.undone:
            self.undone = undone
            if self._files:
                self.dataChanged.emit(self.index(0), self.index(len(self._files) - 1))
            self.changed.emit()

    def state_of(self, fc: FileChange) -> str:
        """A file's state as shown: its change's, or "undone" for an applied file whose change was undone."""
        return "undone" if self.undone and fc.state == "applied" and not self._read_only else fc.state

    def _detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_relay_notified(self, _what: str) -> None:
        # Coalesce bursts (a tool proposing many files, accept all): one refresh per event-loop turn.
        if not self._scheduled:
            self._scheduled = True
            QTimer.singleShot(0, self.refresh)

    def refresh(self) -> None:
        """Re-read the change set (new files, decisions, settlement) and tell the views."""
        self._scheduled = False
        self.refreshes += 1
        if self._changes is not None:
            files = self._changes.files
            if [id(f) for f in files] != [id(f) for f in self._files]:
                self.beginResetModel()
                self._files = files
                self.endResetModel()
            elif files:
                self.dataChanged.emit(self.index(0), self.index(len(files) - 1))
        self.changed.emit()

    # -- reading ----------------------------------------------------------------------------------
    @property
    def change_set(self) -> ChangeSet | None:
        return self._changes

    @property
    def read_only(self) -> bool:
        return self._read_only or self._changes is None

    @property
    def files(self) -> list[FileChange]:
        return list(self._files)

    def file(self, row: int) -> FileChange:
        return self._files[row]

    def row_of(self, key: str) -> int:
        """Row of a file by id or path (-1: not shown)."""
        for row, fc in enumerate(self._files):
            if key in (fc.id, fc.path, fc.new_path):
                return row
        return -1

    def decidable(self, fc: FileChange | None) -> bool:
        return fc is not None and not self.read_only and fc.state == PENDING

    @property
    def pending_files(self) -> list[FileChange]:
        return [fc for fc in self._files if fc.state == PENDING] if not self.read_only else []

    def counts(self) -> ReviewCounts:
        """Counts over the files still under review (every file when read-only)."""
        return counts_of(self._files if self.read_only else self.pending_files)

    def hunk_order(self) -> list[tuple[FileChange, Hunk]]:
        """Hunks in navigation order: files in proposal order, hunks top to bottom (pending files only,
        unless nothing is pending)."""
        files = self.pending_files or self._files
        return [(fc, h) for fc in files for h in fc.hunks]

    def locate(self, hunk_id: str) -> tuple[FileChange, Hunk] | None:
        for fc in self._files:
            for h in fc.hunks:
                if h.id == hunk_id:
                    return fc, h
        return None

    def next_hunk(self, current: str | None = None, *, undecided: bool = False) -> tuple[FileChange, Hunk] | None:
        """The hunk after ``current`` (``]c``), wrapping; ``undecided`` skips decided ones."""
        return self._step(current, 1, undecided)

    def prev_hunk(self, current: str | None = None, *, undecided: bool = False) -> tuple[FileChange, Hunk] | None:
        """The hunk before ``current`` (``[c``), wrapping."""
        return self._step(current, -1, undecided)

    def _step(self, current: str | None, delta: int, undecided: bool) -> tuple[FileChange, Hunk] | None:
        order = self.hunk_order()
        if not order:
            return None
        ids = [h.id for _, h in order]
        start = ids.index(current) if current in ids else (-1 if delta > 0 else 0)
        for k in range(1, len(order) + 1):
            fc, h = order[(start + delta * k) % len(order)]
            if not undecided or h.status == PENDING:
                return fc, h
        return None

    # -- deciding ---------------------------------------------------------------------------------
    def _do(self, action: Callable[[ChangeSet], Any]) -> bool:
        changes = self._changes
        if changes is None or self._read_only:
            self.problem.emit("These changes are shown for reading only; nothing here can be accepted or rejected.")
            return False
        try:
            action(changes)
        except (ChangeError, KeyError) as exc:
            self.problem.emit(str(exc).strip("'\""))
            return False
        self.refresh()
        return True

    def accept(self, *hunk_ids: str) -> bool:
        return self._do(lambda c: c.accept(*hunk_ids))

    def reject(self, *hunk_ids: str, reason: str | None = None) -> bool:
        return self._do(lambda c: c.reject(*hunk_ids, reason=reason))

    def reset(self, *hunk_ids: str) -> bool:
        return self._do(lambda c: c.reset(*hunk_ids))

    def edit_hunk(self, hunk_id: str, text: str) -> bool:
        return self._do(lambda c: c.edit_hunk(hunk_id, text))

    def accept_file(self, key: str) -> bool:
        return self._do(lambda c: c.accept_file(key))

    def reject_file(self, key: str, *, reason: str | None = None) -> bool:
        return self._do(lambda c: c.reject_file(key, reason=reason))

    def accept_all(self) -> bool:
        return self._do(lambda c: c.accept_all())

    def reject_all(self, *, reason: str | None = None) -> bool:
        return self._do(lambda c: c.reject_all(reason=reason))

    # -- Qt ---------------------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._files)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._files):
            return None
        fc = self._files[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return fc.display_path
        if role == self.FileRole:
            return fc
        if role == self.CountsRole:
            return fc.counts()
        if role == self.StateRole:
            return self.state_of(fc)
        if role == Qt.ItemDataRole.ToolTipRole:
            c = fc.counts()
            return (f"{fc.display_path} — {fc.action}, +{c['added']} −{c['removed']}, {c['hunks']} hunk(s): "
                    f"{c['pending']} pending, {c['accepted']} accepted, {c['rejected']} rejected")
        return None


# ------------------------------------------------------------------------------------------------
# Applying, conflicts, undo / redo


@dataclass(slots=True)
class HistoryState:
    """What Undo / Redo would do now, and the thread's applied change sets (newest last)."""

    undo: HistoryEntry | None = None
    redo: HistoryEntry | None = None
    entries: list[HistoryEntry] = field(default_factory=list)


class ChangeActions(QObject):
    """Apply, resolve conflicts, undo / redo and the net diff of the current thread — off the loop.

    ``session`` returns the current :class:`~workspace.session.ThreadSession` (or None);
    every coroutine is spawned through ``tasks`` (a :class:`~ui.tasks.TaskOwner`).
    """

    busy_changed = Signal(bool)
    #: An apply settled files (ApplyResult).
    applied = Signal(object)
    #: The ChangeDecided event of an apply (for the chat's change card).
    decided = Signal(object)
    #: Applying refused: these files changed on disk (list[Conflict]); nothing was written.
    conflicts_found = Signal(list)
    #: Conflicts are gone (resolved, skipped or cancelled).
    conflicts_cleared = Signal()
    #: An undo / redo finished (RestoreResult, "undo" | "redo").
    restored = Signal(object, str)
    #: An undo / redo refused because files changed since (RestoreResult, "undo" | "redo").
    restore_refused = Signal(object, str)
    history_changed = Signal(object)  # HistoryState
    net_changes_ready = Signal(list)  # list[FileChange]
    #: (text, kind): kind is "info" or "error".
    message = Signal(str, str)
    #: Apply refused: the accepted hunks failed the verify command (its VerifyFinished); nothing was written.
    verify_failed = Signal(object)

    def __init__(self, session: Callable[[], ThreadSession | None], tasks: TaskOwner, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._session = session
        self.tasks = tasks
        self._busy = 0
        self.conflicts: list[Conflict] = []
        self._resolved: set[str] = set()
        self._skipped: set[str] = set()
        self.history = HistoryState()
        self.last_result: ApplyResult | None = None
        self._running: set[asyncio.Task[Any]] = set()

    # -- state --------------------------------------------------------------------------------------
    @property
    def session(self) -> ThreadSession | None:
        return self._session()

    @property
    def busy(self) -> bool:
        return self._busy > 0

    def _set_busy(self, delta: int) -> None:
        before = self.busy
        self._busy += delta
        if self.busy != before:
            self.busy_changed.emit(self.busy)

    def _spawn(self, coro: Coroutine[Any, Any, _T], name: str) -> asyncio.Task[_T]:
        task = self.tasks.spawn(self._busy_wrap(coro), name=name)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def _busy_wrap(self, coro: Coroutine[Any, Any, _T]) -> _T:
        self._set_busy(+1)
        try:
            return await coro
        finally:
            self._set_busy(-1)

    async def wait_idle(self) -> None:
        """Wait for every spawned action (tests, shutdown)."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)

    def _changes(self) -> ChangeSet | None:
        session = self.session
        return getattr(session, "changes", None) if session is not None else None

    @property
    def unresolved(self) -> list[Conflict]:
        return [c for c in self.conflicts if c.file_id not in self._resolved and c.file_id not in self._skipped]

    # -- apply ----------------------------------------------------------------------------------------
    def apply(self, *, verify: bool = True) -> asyncio.Task[Any] | None:
        """Write the accepted hunks (pending ones count as rejected) off the loop. With a verify command they are
        verified first, and a failure is :attr:`verify_failed` (nothing written); ``verify=False`` applies with
        the result the person was shown (their "Apply anyway")."""
        changes = self._changes()
        if changes is None or not changes.pending_files:
            self.message.emit("Nothing to apply: no change is waiting for review.", "info")
            return None
        if self.busy:
            self.message.emit("Still working on the previous action…", "info")
            return None
        self.conflicts, self._resolved, self._skipped = [], set(), set()
        return self._spawn(self._apply(on_conflict="refuse", verify=verify), "apply-changes")

    async def _apply(self, *, on_conflict: str, verify: bool = True) -> None:
        from workspace.session.verify import VerifyFailed

        session = self.session
        changes = self._changes()
        if session is None or changes is None:
            return
        try:
            result = await session.apply_changes(on_conflict=on_conflict, verify=verify)
        except VerifyFailed as failed:
            self.verify_failed.emit(failed.event)
            return
        except Exception as exc:
            self.message.emit(f"Applying failed: {exc}", "error")
            return
        self.last_result = result
        if result.conflicts and not result.settled:
            self.conflicts = list(result.conflicts)
            self._resolved, self._skipped = set(), set()
            self.conflicts_found.emit(self.conflicts)
            return
        if result.error:
            self.message.emit(result.error, "error")
            return
        had_conflicts = bool(self.conflicts)
        self.conflicts = []
        if had_conflicts:
            self.conflicts_cleared.emit()
        self.decided.emit(changes.decided_event())
        self.applied.emit(result)
        n_applied, n_rejected, n_skipped = len(result.applied), len(result.rejected), len(result.skipped)
        parts = [f"{n_applied} file{'s' if n_applied != 1 else ''} written"]
        if n_rejected:
            parts.append(f"{n_rejected} left unchanged")
        if n_skipped:
            parts.append(f"{n_skipped} skipped (changed on disk)")
        self.message.emit("Applied: " + ", ".join(parts) + ". The robot is told the outcome with your next "
                          "message.", "info")
        await self._load_history()

    # -- conflicts ----------------------------------------------------------------------------------
    def rebase(self, file_id: str, *, overwrite: bool = False) -> asyncio.Task[Any] | None:
        """Make the conflicting file's change start from the disk (merging, or overwriting), then apply
        once every conflict is resolved or skipped."""
        return self._spawn(self._rebase(file_id, overwrite), "rebase-change")

    async def _rebase(self, file_id: str, overwrite: bool) -> None:
        changes = self._changes()
        if changes is None:
            return
        try:
            await asyncio.to_thread(changes.rebase, file_id, overwrite=overwrite)
        except (ChangeError, KeyError) as exc:
            self.message.emit(str(exc).strip("'\""), "error")
            return
        self._resolved.add(file_id)
        await self._after_resolution()

    def skip(self, file_id: str) -> asyncio.Task[Any] | None:
        """Leave this conflicting file as it is on disk (its change is not applied)."""
        self._skipped.add(file_id)
        return self._spawn(self._after_resolution(), "skip-conflict")

    def cancel_conflicts(self) -> None:
        """Leave everything pending (nothing was written): review again, or apply later."""
        self.conflicts, self._resolved, self._skipped = [], set(), set()
        self.conflicts_cleared.emit()

    async def _after_resolution(self) -> None:
        if self.unresolved:
            self.conflicts_found.emit(self.unresolved)
            return
        skipped = bool(self._skipped)
        await self._apply(on_conflict="skip" if skipped else "refuse")

    # -- history --------------------------------------------------------------------------------------
    def _history(self) -> ChangeHistory | None:
        """The thread's ChangeHistory (None: no folder open, or a thread kind without file changes)."""
        session = self.session
        make = getattr(session, "change_history", None) if session is not None else None
        if not callable(make) or getattr(getattr(session, "workspace", None), "folder", None) is None:
            return None
        try:
            return make()
        except Exception as exc:  # e.g. the folder went away
            log.warning("no change history: %s", exc)
            return None

    def refresh_history(self) -> asyncio.Task[Any] | None:
        if self._history() is None:
            self.history = HistoryState()
            self.history_changed.emit(self.history)
            return None
        return self._spawn(self._load_history(), "change-history")

    async def _load_history(self) -> None:
        history = self._history()
        if history is None:
            return

        def read() -> HistoryState:
            return HistoryState(history.undoable(), history.redoable(), history.entries())

        try:
            self.history = await asyncio.to_thread(read)
        except Exception as exc:
            self.message.emit(f"Could not read the change history: {exc}", "error")
            return
        self.history_changed.emit(self.history)

    def undo(self, entry_id: str | None = None, *, force: bool = False) -> asyncio.Task[Any] | None:
        """Restore the files of the latest applied change (or ``entry_id``) to before it."""
        return self._spawn(self._restore("undo", entry_id, force), "undo-change")

    def redo(self, entry_id: str | None = None, *, force: bool = False) -> asyncio.Task[Any] | None:
        """Apply again what the last undo restored (or ``entry_id``)."""
        return self._spawn(self._restore("redo", entry_id, force), "redo-change")

    def undo_change_set(self, change_set_id: str, *, redo: bool = False) -> asyncio.Task[Any] | None:
        """Undo (or redo) every applied entry of one change set (auto mode applies one per tool call)."""
        return self._spawn(self._restore_set(change_set_id, redo), "undo-change-set")

    async def _restore(self, op: str, entry_id: str | None, force: bool) -> RestoreResult | None:
        history = self._history()
        if history is None:
            self.message.emit("No folder is open, so there is nothing to undo.", "info")
            return None
        # The session's undo / redo also tells the model at the next message (it heard the change was applied).
        session_op = getattr(self.session, f"{op}_changes", None)
        method = history.undo if op == "undo" else history.redo
        try:
            result: RestoreResult = (await session_op(entry_id, force=force) if callable(session_op)
                                     else await asyncio.to_thread(method, entry_id, force=force))
        except Exception as exc:
            self.message.emit(f"Could not {op}: {exc}", "error")
            return None
        if result.ok:
            self.restored.emit(result, op)
            self.message.emit(result.message or ("Undone." if op == "undo" else "Redone."), "info")
        elif result.conflicts:
            self.restore_refused.emit(result, op)
        else:
            self.message.emit(result.message, "info")
        await self._load_history()
        return result

    async def _restore_set(self, change_set_id: str, redo: bool) -> None:
        history = self._history()
        if history is None:
            return
        entries = await asyncio.to_thread(history.entries)
        states = ("undone",) if redo else ("applied", "applying")
        mine = [e for e in entries if e.change_set_id == change_set_id and e.state in states]
        if not mine:
            self.message.emit("Nothing to " + ("redo" if redo else "undo") + " for these changes.", "info")
            return
        for entry in (mine if redo else reversed(mine)):
            result = await self._restore("redo" if redo else "undo", entry.id, False)
            if result is None or not result.ok:
                return

    # -- the thread's net change ---------------------------------------------------------------------
    def load_net_changes(self) -> asyncio.Task[Any] | None:
        """Every file this thread changed, from before its first change to disk now."""
        if self._history() is None:
            self.message.emit("No folder is open, so this thread changed no files.", "info")
            return None
        return self._spawn(self._net(), "net-changes")

    async def _net(self) -> None:
        history = self._history()
        try:
            if history is None:
                raise RuntimeError("no folder is open")
            files = await asyncio.to_thread(history.net_changes)
        except Exception as exc:
            self.message.emit(f"Could not compute the thread's changes: {exc}", "error")
            return
        self.net_changes_ready.emit(files)


__all__ = ["ChangeActions", "ChangeReviewModel", "HistoryState", "counts_of"]
