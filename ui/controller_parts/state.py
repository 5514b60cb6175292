"""The state of the window's session model and what every part of it uses: its signals, the workspace, the open
thread, the configuration, the problems it reports (on the window's thread). The base of the chain of parts
:class:`ui.controller.Controller` is made of (``ui/controller_parts/``)."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

    from ui.bridge import RunBridge
    from ui.tasks import TaskOwner
    from workspace.approval import ApprovalDecision, ApprovalRequest
    from workspace.catalog import RobotInfo
    from workspace.config import Config
    from workspace.knowledge import PendingMemoryWrite
    from workspace.network import Network, NetworkInfo
    from workspace.persistence import BackgroundBranch, BackgroundSearch, Store, ThreadInfo
    from workspace.providers.base import Provider
    from workspace.result import Usage
    from workspace.session import RecordedRun, ThreadSession, Workspace

log = logging.getLogger("ui.controller")

DEFAULT_ROBOT = "assistant"


class SessionState(QObject):
    """The session model's signals and state, and the few things every part asks (the store, the open thread)."""

    threads_changed = Signal()
    thread_opened = Signal(object)  # the ThreadSession (or None)
    run_state_changed = Signal(bool)
    robot_changed = Signal(str)
    usage_changed = Signal(object)  # Usage of the thread (tokens, cost) or None
    approval_needed = Signal(object, object)  # ApprovalRequest, asyncio.Future
    #: A robot proposed a durable memory write (review.memory: ask): the PendingMemoryWrite.
    memory_write_proposed = Signal(object)
    #: What robots learnt changed (a learning forgotten, a proposal accepted): the Memory dock's Learnt list.
    learnt_changed = Signal()
    problem = Signal(str)  # a message for the user (store, run start, settings)
    notice = Signal(str)
    #: A new configuration is in use (Settings saved, the MCP servers page, the file changed): the picker follows.
    config_changed = Signal()
    #: What a thread's run is at changed (:meth:`run_states`): the sidebar and the status bar follow.
    run_states_changed = Signal()
    #: A run ended in a thread that is not the open one: (thread id, its state: "finished", "failed",
    #: "review", "cancelled") — the desktop notification.
    background_run_ended = Signal(str, str)
    #: The open thread's run went on in the background and is shown again: (its turn id, its run id, its
    #: events so far).
    run_resumed = Signal(str, str, list)
    #: The open thread's approvals still waiting, as [(ApprovalRequest, Future)], oldest first: shown again
    #: when the thread opens (each was asked while another thread was open, or before it was left).
    approvals_reshown = Signal(list)
    #: Work a thread's robots delegated in the background started being followed or ended (its run ended first):
    #: the message box's Stop follows (:meth:`~ui.controller_parts.runs.RunFollowing.background_work`).
    background_changed = Signal()
    #: Stop (or deleting the thread) stopped work a thread's robots had delegated in the background: (the thread id,
    #: the ids of the delegates' runs, why: one of :mod:`workspace.delegation`'s ``STOPPED_*``), so the chat's lanes
    #: say they were stopped and why.
    delegations_stopped = Signal(str, list, str)
    #: A thread's verify started or ended (:class:`~workspace.session.verify.VerifyProgress`): the review shows it.
    verify_progress = Signal(object)

    def __init__(self, *, bridge: RunBridge, tasks: TaskOwner, config: Config | None = None,
                 folder: Path | None = None, provider: Provider | None = None, db_path: Path | str | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.tasks = tasks
        self.folder = folder
        self.provider = provider
        self.db_path = db_path
        self._config = config
        self.workspace: Workspace | None = None
        self._memory_writes: list[PendingMemoryWrite] = []
        #: The open thread (None: the next message starts a new one).
        self.session: ThreadSession | None = None
        self.store_error: str | None = None
        self.store_error_reason: str | None = None
        self.robot_name = DEFAULT_ROBOT
        #: Set when a network is what new threads talk to (``robot_name`` then holds its name too).
        self.network_name: str | None = None
        #: Every run going, in any thread, oldest first.
        self._runs: list[RecordedRun] = []
        #: The run the bridge feeds to the chat now (the open thread's) and the task doing it.
        self._viewed: tuple[RecordedRun, asyncio.Task[object]] | None = None
        #: The background delegations whose end is watched (:meth:`_watch_delegations`), by identity.
        self._delegations_watched: set[int] = set()
        #: The threads whose background delegations went on after their run ended, each with the turns of those
        #: delegations (by identity): the sidebar shows them working, quitting counts them, Stop stores their end.
        self._delegating: dict[str, dict[int, str]] = {}
        #: Threads whose run ended while they were not open, until opened: "finished", "failed" or "review".
        self._unseen: dict[str, str] = {}
        self._robots: list[RobotInfo] | None = None
        #: The window's event loop, for what a worker thread has to say (set when start-up uses workers).
        self.window_loop: asyncio.AbstractEventLoop | None = None
        #: Thread search off the window's thread (made for the open store on the first search).
        self._searcher: BackgroundSearch | None = None
        #: Branches of long threads read off the window's thread (made for the open store when first needed).
        self._brancher: BackgroundBranch | None = None
        #: The thread list read in the start-up's worker thread and its runs' marks (by thread id), for the first
        #: :meth:`list_threads` (then None).
        self._threads_ahead: tuple[list[ThreadInfo], dict[str, str]] | None = None
        self._networks: list[NetworkInfo] | None = None
        self._network_cache: dict[str, Network] = {}
        #: Approvals waiting for an answer, oldest first: (the request, its thread id, when it was asked).
        self._pending: dict[asyncio.Future[ApprovalDecision], tuple[ApprovalRequest, str | None, float]] = {}
        #: The trust file's mtime when this controller read the configuration (unseen: a configuration
        #: given to it, which it does not follow).
        self._trust_seen = False
        self._trust_stamp: float | None = None
        #: Robot files that could not be read at the last refresh (each message names the file).
        self.robot_problems: list[str] = []
        #: A model chosen in the composer before the thread exists: (model, api_base) for the thread the next
        #: message creates (ui/window/models.py); None: the robot's own.
        self.pending_model: tuple[str, str | None] | None = None
        self.bridge.running_changed.connect(self.run_state_changed)

    @property
    def config_loaded(self) -> bool:
        """Whether the configuration is read (start-up reads it in a worker thread after the first paint)."""
        return self._config is not None

    @property
    def config(self) -> Config:
        if self._config is None:
            from workspace.config import load_config

            self._trust_seen, self._trust_stamp = True, self._trust_mtime()
            self._config = load_config(self.folder)
        return self._config

    @staticmethod
    def _trust_mtime() -> float | None:
        from workspace.trust import trust_file

        try:
            return trust_file().stat().st_mtime
        except OSError:
            return None

    def _emit_problem(self, text: str) -> None:
        """:attr:`problem`, emitted on the window's thread: opening the database and its check run in worker
        threads at start-up, and a signal emitted there would run its lambdas (widgets) there."""
        import threading

        if threading.current_thread() is threading.main_thread():
            self.problem.emit(text)
            return
        loop = self.window_loop
        if loop is None or loop.is_closed():
            log.warning("not shown (no window): %s", text)
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._emit_problem_here, text)

    def _emit_problem_here(self, text: str) -> None:
        with contextlib.suppress(RuntimeError):  # the window closed meanwhile
            self.problem.emit(text)

    @property
    def store(self) -> Store | None:
        return self.workspace.store if self.workspace is not None else None

    def require_workspace(self) -> Workspace:
        """The workspace, or a RuntimeError (for the caller's message to people) before :meth:`open`."""
        if self.workspace is None:
            raise RuntimeError("the threads are still opening")
        return self.workspace

    def require_store(self) -> Store:
        """The thread store, or a RuntimeError (for the caller's message to people) before :meth:`open`."""
        return self.require_workspace().store

    @staticmethod
    def _thread_id(session: ThreadSession) -> str:
        return session.thread_id

    @property
    def thread_id(self) -> str | None:
        return self._thread_id(self.session) if self.session is not None else None

    def thread_usage(self) -> Usage | None:
        if self.session is None or self.store is None:
            return None
        try:
            return self.store.usage(self.session.thread_id)
        except Exception:
            return None

    def _emit_usage(self) -> None:
        self.usage_changed.emit(self.thread_usage())
