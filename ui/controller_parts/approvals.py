"""Approvals asked by runs in any thread (each waits, never denied for being out of sight, until answered in its
thread), the memory writes robots propose, and what robots learnt (the Memory dock's Learnt list, Forget).
A link of the chain of classes :class:`ui.controller.Controller` is made of (``ui/controller_parts/``)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ui.controller_parts.targets import Targets

if TYPE_CHECKING:
    import asyncio

    from workspace.approval import ApprovalDecision, ApprovalRequest
    from workspace.knowledge import PendingMemoryWrite

log = logging.getLogger("ui.controller")


class ApprovalsAndLearning(Targets):
    """Approvals waiting in each thread, proposed memory writes, what robots learnt."""

    async def _ask(self, request: ApprovalRequest) -> ApprovalDecision:
        import asyncio

        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        # Asked in a thread that is not open, it waits there (no timeout, no denial) until answered there.
        self._pending[future] = (request, self._approval_thread(request), time.monotonic())
        future.add_done_callback(lambda _f: self.run_states_changed.emit())
        self.run_states_changed.emit()
        try:
            self.approval_needed.emit(request, future)
            return await future
        finally:
            self._pending.pop(future, None)

    def _approval_thread(self, request: ApprovalRequest) -> str | None:
        """The thread an approval is asked in: the request's, else the thread of the run asking."""
        if request.thread_id:
            return request.thread_id
        for run in self._runs:
            if run.run_id == request.run_id:
                return run.thread_id
        return self.thread_id

    def approval_thread(self, request: ApprovalRequest) -> str | None:
        """The thread ``request`` was asked in (as noted when it was asked)."""
        for fut, (asked, thread, _when) in self._pending.items():
            if asked is request and not fut.done():
                return thread
        return self._approval_thread(request)

    def waiting_approvals(self, thread_id: str | None = None) -> list[
            tuple[str | None, ApprovalRequest, asyncio.Future[ApprovalDecision]]]:
        """Approvals waiting for an answer (of ``thread_id`` only, when given), oldest first:
        (thread id, request, future)."""
        out = [(thread, request, fut, when) for fut, (request, thread, when) in self._pending.items()
               if not fut.done() and (thread_id is None or thread == thread_id)]
        out.sort(key=lambda row: row[3])
        return [(thread, request, fut) for thread, request, fut, _when in out]

    def oldest_approval_thread(self) -> str | None:
        """The thread of the approval waiting longest (None: none waits)."""
        waiting = self.waiting_approvals()
        return waiting[0][0] if waiting else None

    def _memory_write(self, pending: PendingMemoryWrite) -> None:
        self._memory_writes = [p for p in self._memory_writes if p.pending] + [pending]
        self.memory_write_proposed.emit(pending)

    def pending_memory_writes(self) -> list[PendingMemoryWrite]:
        """The memory writes proposed in this window and not decided yet, oldest first."""
        return [p for p in self._memory_writes if p.pending]

    def learnt(self) -> list[tuple[str, str, str]]:
        """What robots learnt in the opened folder: (robot, learning, ISO time first learnt)."""
        from workspace.knowledge import KnowledgeStore

        store = KnowledgeStore()
        try:
            return store.learnt_when(folder=self.workspace.folder if self.workspace is not None else None)
        finally:
            store.close()

    def forget_learning(self, robot: str, text: str) -> bool:
        """Forget one learning of ``robot`` in the opened folder (and in the open thread's robot, which
        holds its learnings); True when it was there."""
        from workspace.knowledge import KnowledgeStore

        folder = self.workspace.folder if self.workspace is not None else None
        session = self.session
        forgotten = False
        if session is not None and not session.is_network and session.robot.name == robot:
            forgotten = session.robot.forget_learning(text)
        store = KnowledgeStore()
        try:
            forgotten = store.forget_learning(text, robot=robot, folder=folder) or forgotten
        finally:
            store.close()
        self.learnt_changed.emit()
        return forgotten

    @property
    def pending_approvals(self) -> int:
        """Approvals waiting in the open thread."""
        return len(self.waiting_approvals(self.thread_id))
