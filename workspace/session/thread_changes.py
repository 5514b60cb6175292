"""A thread's proposed file changes: the change set of its runs, verify, apply, undo and redo, kept in
the database while anything of it is unsettled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.persistence import StoreError
from workspace.session.recording import RecordedRun
from workspace.session.thread_state import ThreadState

if TYPE_CHECKING:
    from collections.abc import Sequence

    from workspace.changes import ApplyResult, ChangeHistory, ChangeSet, HistoryEntry, RestoreResult
    from workspace.session.verify import VerifyProgress, VerifySetting

log = logging.getLogger("workspace.session")


class ThreadChanges(ThreadState):
    """The file-changes half of :class:`~workspace.session.thread.ThreadSession`."""

    # -- file changes -----------------------------------------------------------------------------
    def _changes_for_run(self) -> ChangeSet:
        """The thread's change set; a fresh one once everything proposed so far is settled."""
        from workspace.changes import ChangeSet

        current = self.changes
        if current is not None and Path(current.folder) != self.workspace.folder:
            self.save_changes()  # kept for its own folder
            current = None
        if current is None or (not current.pending_files and not current.has_undelivered_outcome):
            mode = str(self.workspace.config.get("review.mode", "review"))
            assert self.workspace.folder is not None
            current = self.changes = ChangeSet(self.workspace.folder, mode=mode, thread_id=self.thread_id)
        return current

    def verify_setting(self) -> VerifySetting:
        """The verify command in force for this thread (its robot's ``verify:``, else ``review.verify``), with
        a notice when the folder's own was ignored because the folder is not trusted."""
        from workspace.session.verify import verify_command

        robot = None if self.is_network else self.robot
        return verify_command(self.workspace.config, robot, folder=self.workspace.folder)

    async def verify_changes(self, subset: str = "accepted", *,
                             on_output: Callable[[str], None] | None = None) -> ev.VerifyFinished | None:
        """Run the verify command in the sandbox on the thread's change set: ``subset`` "proposed" (the set as
        proposed, rejected hunks left out) or "accepted" (exactly the hunks accepted so far: what Apply would
        write). Returns the ``verify_finished`` event, recorded after the thread's current turn when no run
        goes (None: no verify command, or nothing proposed). The model hears the result with the review
        outcome. Raises :class:`~workspace.isolation.SandboxUnavailable` where no sandbox can be made."""
        from workspace.session.verify import run_verify

        changes = self.changes
        setting = self.verify_setting()
        if changes is None or not changes.pending_files or setting.command is None:
            return None
        event = await run_verify(setting.command, changes, subset=subset, on_output=on_output)
        turn_id = self.thread.current_turn_id
        if turn_id is not None and not self.running:
            turn = self.store.get_turn(turn_id)
            event = ev.stamp(event, run_id=turn.run_id or f"verify-{uuid.uuid4().hex[:12]}", robot=self._thread.robot,
                             seq=0)
            with contextlib.suppress(StoreError):
                self.store.append_event(self.thread_id, turn_id, event)
        await asyncio.to_thread(self.save_changes)
        return event

    def _proposed_in(self, run: RecordedRun) -> bool:
        """True when ``run`` proposed changes into the thread's change set that still wait for review."""
        changes = self.changes
        if changes is None or not changes.pending_files:
            return False
        return any(isinstance(e, ev.ChangeProposed) and e.change_set_id == changes.id for e in run.events)

    def start_verify(self, subset: str = "proposed") -> asyncio.Task[ev.VerifyFinished | None] | None:
        """Run :meth:`verify_changes` on ``subset`` as a task of the running event loop (the sandbox works off
        it), one at a time per thread: a verify still going is cancelled (its command and everything it started
        are killed) and this one takes its place. The workspace's ``verify_listeners`` are told when it starts
        and ends (:class:`~workspace.session.verify.VerifyProgress`). None when there is nothing to verify
        (no verify command, nothing proposed). Raises RuntimeError without a running event loop."""
        import time

        from workspace.session.verify import SUBSETS, VerifyProgress

        if subset not in SUBSETS:
            raise ValueError(f"subset must be one of {', '.join(SUBSETS)}, not {subset!r}")
        loop = asyncio.get_running_loop()
        command = self.verify_setting().command
        changes = self.changes
        if command is None or changes is None or not changes.pending_files:
            return None
        self.cancel_verify()
        progress = VerifyProgress(thread_id=self.thread_id, subset=subset, command=command, started=time.monotonic())
        task = loop.create_task(self._verify(progress), name=f"verify-{self.thread_id[:8]}")
        self._verify_task = self.last_verify = task
        self.workspace._verifies.add(task)
        task.add_done_callback(self.workspace._verifies.discard)
        task.add_done_callback(lambda t: self._verify_cancelled(t, progress))
        self._tell_verify(progress)
        return task

    def _verify_cancelled(self, task: asyncio.Task[Any], progress: VerifyProgress) -> None:
        import dataclasses

        if task.cancelled():  # also one cancelled before it began: its listeners hear it ended
            self._tell_verify(dataclasses.replace(progress, running=False, superseded=True),
                              current=self._verify_task is None)  # nothing took its place (an apply, a close)

    def cancel_verify(self) -> bool:
        """Cancel the verify going now (True if one was): the window says it was superseded."""
        task, self._verify_task = self._verify_task, None
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def _verify(self, progress: VerifyProgress) -> ev.VerifyFinished | None:
        import dataclasses

        from workspace.isolation import IsolationError, SandboxUnavailable

        me = asyncio.current_task()
        try:
            event = await self.verify_changes(progress.subset)
        except (SandboxUnavailable, IsolationError, OSError) as exc:
            if self._verify_task is me:
                self._tell_verify(dataclasses.replace(progress, running=False, error=f"The verify command could not "
                                                      f"run: {exc}"))
            return None
        except Exception as exc:  # anything else: said, so no window waits on a verify that ended
            log.exception("verify failed")
            if self._verify_task is me:
                self._tell_verify(dataclasses.replace(progress, running=False, error=f"The verify failed: {exc}"))
            return None
        if self._verify_task is me:
            self._verify_task = None
            self._tell_verify(dataclasses.replace(progress, running=False, event=event,
                                                  error=None if event is not None else "Nothing to verify now."))
        return event

    async def _verify_before_apply(self) -> ev.VerifyFinished | None:
        """The accepted hunks verified as :meth:`start_verify` does (so a window sees it run and end)."""
        task = self.start_verify("accepted")
        if task is None:
            return None
        try:
            return await task
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                raise
            raise RuntimeError("The verify before Apply was replaced by a newer one; nothing was applied. "
                               "Apply again.") from None

    def _tell_verify(self, progress: VerifyProgress, *, current: bool = True) -> None:
        if current:
            self.verifying = progress
        for listener in list(self.workspace.verify_listeners):
            try:
                listener(progress)
            except Exception:  # a listener must never break the verify
                log.exception("verify listener failed")

    async def apply_changes(self, *, files: Sequence[str] | None = None, accept_pending: bool = False,
                            on_conflict: str = "refuse", verify: bool = True,
                            if_verify_fails: str = "refuse") -> ApplyResult:
        """Apply the decided hunks (off the event loop) and record the ``change_decided`` event.

        The options are those of :meth:`workspace.changes.ChangeSet.apply`. The model hears the
        outcome in front of the next message sent in this thread.

        With a verify command (:meth:`verify_setting`) and ``verify``, it first runs on exactly the hunks
        accepted (with ``accept_pending``: and the undecided ones) and, when it fails, raises
        :class:`~workspace.session.verify.VerifyFailed` (carrying the event) and writes nothing, unless
        ``if_verify_fails`` is "apply". A window asks the user, then calls again with "apply" (or
        ``verify=False`` to use the result it already has). The verify covers every accepted hunk of the
        set, also with ``files``; ``accept_pending`` accepts the undecided hunks first, also when it fails.
        """
        import asyncio

        from workspace.session.verify import VerifyFailed

        if if_verify_fails not in ("refuse", "apply"):
            raise ValueError(f"if_verify_fails is 'refuse' or 'apply', not {if_verify_fails!r}")
        changes = self.changes
        if changes is None:
            raise RuntimeError("Nothing to apply: no change was proposed in this thread")
        self.cancel_verify()  # a verify of the set as it was: the apply's own (or the caller's result) counts
        if verify and self.verify_setting().command is not None:
            if accept_pending:
                changes.accept(*[h.id for h in changes.hunks(pending_only=True)])
            if changes.counts().accepted:
                checked = await self._verify_before_apply()
                if checked is not None and not checked.passed and if_verify_fails == "refuse":
                    raise VerifyFailed(checked)
        result = await asyncio.to_thread(changes.apply, files=files, accept_pending=accept_pending,
                                         on_conflict=on_conflict)
        # The thread's current turn as stored now: another window or a branch switch may have moved it.
        turn_id = self.thread.current_turn_id
        if turn_id is not None and result.settled:
            with contextlib.suppress(StoreError):
                self.store.append_event(self.thread_id, turn_id, changes.decided_event())
        await asyncio.to_thread(self.save_changes)
        return result

    async def undo_changes(self, entry_id: str | None = None, *, force: bool = False) -> RestoreResult:
        """Undo the latest applied change (or ``entry_id``) off the event loop, and tell the model at the
        next message: the outcome it has not heard yet says undone, or a note says an earlier change was."""
        return await self._restore_changes_op("undo", entry_id, force)

    async def redo_changes(self, entry_id: str | None = None, *, force: bool = False) -> RestoreResult:
        """Redo what the last undo restored (or ``entry_id``); the model's next note follows it."""
        return await self._restore_changes_op("redo", entry_id, force)

    async def _restore_changes_op(self, op: str, entry_id: str | None, force: bool) -> RestoreResult:
        import asyncio

        history = self.change_history()
        result = await asyncio.to_thread(history.undo if op == "undo" else history.redo, entry_id, force=force)
        entry = result.entry
        if result.ok and entry is not None and entry.paths:
            self._note_restore(op, entry)
            await asyncio.to_thread(self.save_changes)
        return result

    def _note_restore(self, op: str, entry: HistoryEntry) -> None:
        """Record an undo / redo in the thread's change set (one is made to carry it when none is open)."""
        from workspace.changes import ChangeSet
        from workspace.sandbox import Sandbox

        changes = self.changes
        if changes is not None and Path(changes.folder) != Path(entry.folder):
            self.save_changes()  # kept for its own folder
            changes = None
        if changes is None:
            folder = self.workspace.folder
            if folder is None or Sandbox(folder).root != Path(entry.folder):
                return  # an entry of a folder not open now
            mode = str(self.workspace.config.get("review.mode", "review"))
            changes = self.changes = ChangeSet(folder, mode=mode, thread_id=self.thread_id)
        changes.record_restore(op, entry.paths, change_set_id=entry.change_set_id)

    def save_changes(self) -> None:
        """Keep the change set in the database while anything of it is unsettled or unheard by the
        model (so quitting mid-review loses nothing); drop it once it is neither."""
        with self._save_lock:  # a save off the loop and one on it never interleave (the last one wins)
            self._save_changes()

    def _save_changes(self) -> None:
        changes = self.changes
        if changes is None or self.store.closed:
            return
        try:
            if changes.pending_files or changes.has_undelivered_outcome:
                self.store.save_change_set(self.thread_id, changes.snapshot())
            else:
                self.store.drop_change_set(self.thread_id, changes.folder)
        except (StoreError, OSError) as exc:
            log.warning("could not keep the proposed changes of thread %s: %s", self.thread_id, exc)

    def _restore_changes(self) -> None:
        """The change set saved by :meth:`save_changes`, when it belongs to the folder open now."""
        from workspace.changes import ChangeSet

        folder = self.workspace.folder
        if folder is None:
            return
        try:
            data = self.store.load_change_set(self.thread_id, folder)
        except StoreError as exc:
            log.warning("could not read the proposed changes of thread %s: %s", self.thread_id, exc)
            return
        if data is None:
            return  # none kept for this folder (another folder's come back when it is open again)
        try:
            self.changes = ChangeSet.from_snapshot(data)
        except Exception as exc:  # a snapshot whose contents are gone must not stop the thread opening
            log.warning("the proposed changes of thread %s could not be restored: %s", self.thread_id, exc)

    def change_history(self) -> ChangeHistory:
        """Checkpoints of this thread's applied changes: undo, redo, the net diff since the start."""
        from workspace.changes import ChangeHistory

        if self.workspace.folder is None:
            raise RuntimeError("No folder is open")
        return ChangeHistory(self.workspace.folder, self.thread_id)

