"""The thread list of the window's session model: read (ahead, in start-up's worker), searched (off the window's
thread), the thread left open remembered for the next start, threads renamed, deleted and restored.
A link of the chain of classes :class:`ui.controller.Controller` is made of (``ui/controller_parts/``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ui.controller_parts.runs import RunFollowing

if TYPE_CHECKING:
    from workspace.persistence import PathPage, SearchHit, ThreadInfo

log = logging.getLogger("ui.controller")


class ThreadList(RunFollowing):
    """The thread list: read, searched, renamed, deleted, restored; the last thread remembered."""

    def read_thread_list_ahead(self) -> list[ThreadInfo] | None:
        """Read the thread list now (in the start-up's worker thread) for the window's first
        :meth:`list_threads`, so the window's thread does not wait for it; its runs' marks are read from it
        here too. The list read (None: none was)."""
        store = self.store
        if store is None:
            return None
        from workspace.session.run_marks import marks

        try:
            threads = list(store.list_threads())
        except Exception as exc:  # the window's own read says it
            log.debug("the thread list was not read ahead: %s", exc)
            return None
        self._threads_ahead = threads, marks(threads)
        return threads

    def list_threads(self) -> list[ThreadInfo]:
        ahead, self._threads_ahead = self._threads_ahead, None
        if self.store is None:
            return []
        if ahead is not None:
            threads, found = ahead
        else:
            from workspace.session.run_marks import marks

            try:
                threads = list(self.store.list_threads())
            except Exception as exc:
                self.problem.emit(f"Could not read the thread list: {exc}")
                return []
            found = marks(threads)
        self._read_marks(found)
        return threads

    def _read_marks(self, marks: dict[str, str]) -> None:
        """The runs that ended unseen before this window opened (``marks``: those kept with the threads listed)."""
        going = {run.thread_id for run in self._runs}
        found = {t: m for t, m in marks.items()
                 if t not in self._unseen and t not in going and t != self.thread_id}
        if found:
            self._unseen.update(found)
            self.run_states_changed.emit()

    async def search_in_background(self, query: str) -> list[SearchHit] | None:
        """:meth:`search` off the window's thread (a worker with its own connection to the database); None
        when a newer query was asked meanwhile (its hits are the ones to show)."""
        store = self.store
        if store is None or not query:
            return []
        from workspace.persistence import BackgroundSearch

        searcher = self._searcher
        if searcher is None or searcher.store is not store:
            if searcher is not None:
                searcher.close()
            from ui.formatting import HIGHLIGHT

            searcher = self._searcher = BackgroundSearch(store, highlight=HIGHLIGHT)
        try:
            return await searcher.search(query)
        except Exception as exc:
            self.problem.emit(f"Search failed: {exc}")
            return []

    async def branch_in_background(self, thread_id: str, turn_id: str) -> PathPage:
        """The ids of the branch from ``turn_id`` up to its root (root first), read off the window's thread
        (a worker with its own connection to the database): what a long thread's transcript does not read
        before its first paint."""
        from workspace.persistence import BackgroundBranch

        store = self.require_store()
        brancher = self._brancher
        if brancher is None or brancher.store is not store:
            if brancher is not None:
                brancher.close()
            brancher = self._brancher = BackgroundBranch(store)
        return await brancher.walk_up(thread_id, turn_id)

    def search(self, query: str) -> list[SearchHit]:
        if self.store is None or not query:
            return []
        from ui.formatting import HIGHLIGHT

        try:
            return list(self.store.search(query, highlight=HIGHLIGHT))
        except Exception as exc:
            self.problem.emit(f"Search failed: {exc}")
            return []

    def _remember_thread(self, thread_id: str | None) -> None:
        """The thread to open when the app starts next time (None: start on a new thread)."""
        from workspace.persistence import StoreError

        store = self.store
        if store is not None and not store.closed:
            try:
                store.set_meta("last_thread", thread_id)
            except StoreError as exc:  # a busy database must not stop opening a thread
                log.info("could not note the open thread: %s", exc)

    def last_thread(self) -> str | None:
        """The thread that was open when the app was last closed, if it is still there."""
        store = self.store
        if store is None or store.closed:
            return None
        try:
            thread_id = store.get_meta("last_thread")
            if thread_id and not store.get_thread(thread_id).is_deleted:
                return thread_id
        except Exception:  # gone, or an unreadable database: start on a new thread
            return None
        return None

    def rename_thread(self, thread_id: str, title: str) -> None:
        try:
            self.require_store().rename_thread(thread_id, title)
        except Exception as exc:
            self.problem.emit(f"Could not rename the thread: {exc}")
        self.threads_changed.emit()

    def delete_thread(self, thread_id: str) -> bool:
        try:
            self.require_store().delete_thread(thread_id)
        except Exception as exc:
            self.problem.emit(f"Could not delete the thread: {exc}")
            return False
        from workspace.delegation import STOPPED_WITH_THREAD, THREAD_DELETED

        # A deleted thread's run does not go on out of sight, nor what it delegated (its rows stay until purged, so
        # after Undo its turn and a delegate's lane say that they stopped because the thread was deleted).
        self.stop_thread(thread_id, reason=THREAD_DELETED, delegated=STOPPED_WITH_THREAD)
        if self.session is not None and self._thread_id(self.session) == thread_id:
            self.new_thread()
        self.threads_changed.emit()
        return True

    def restore_thread(self, thread_id: str) -> None:
        try:
            self.require_store().restore_thread(thread_id)
        except Exception as exc:
            self.problem.emit(f"Could not restore the thread: {exc}")
        self.threads_changed.emit()

    def new_thread(self) -> None:
        self._leave()
        self.session = None
        self.pending_model = None
        self._remember_thread(None)
        self.thread_opened.emit(None)
        self.usage_changed.emit(None)
