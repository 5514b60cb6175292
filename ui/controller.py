"""The window's session model, :class:`Controller`: the one typed surface the window asks of the core.

It owns the :class:`~workspace.session.Workspace` (store, robots, networks, approval gate, configuration),
the open :class:`~workspace.session.ThreadSession` and its :class:`~workspace.session.RecordedRun` s. What
the window does to a conversation goes through its typed methods — :meth:`send`, :meth:`stop`,
:meth:`continue_`, :meth:`edit_and_resend` / :meth:`regenerate` (forks), :meth:`switch_branch`,
:meth:`new_thread` / :meth:`open_thread`, :meth:`set_robot` / :meth:`set_network`, :meth:`reload_config` /
:meth:`apply_config` / :meth:`set_folder` (settings), :meth:`pending_approvals` — and the session's own typed
methods (``set_model``, ``apply_changes``, ``undo_changes``…) for the open thread. It reports back through Qt
signals. The core's types are imported under ``TYPE_CHECKING`` (the window's start does not wait for them),
so mypy follows a message from the composer (``ui/window/runs.py`` ``Runs.send``) through :meth:`send` to
``ThreadSession.send`` and on to the provider.

Runs belong to their thread, not to the open view: switching threads (or opening a new one) leaves a run
going in the background, its recording writes it to the store, and a watcher task follows each run for
:meth:`run_states` (streaming, waiting for your approval, waiting for a review, finished, failed: the sidebar
and the status bar show them). The open thread's run is consumed by the one :class:`~ui.bridge.RunBridge`
in a task owned by the :class:`~ui.tasks.TaskOwner`; another thread opening releases the bridge, and coming
back to a thread whose run goes on consumes it again (the chat shows the stored part, then goes on live).
Approvals: the gate's ``ask_fn`` is a coroutine that emits ``approval_needed(request, future)`` and awaits
the future, which the inline card resolves (the window gives it to the chat with the run's event that asks it:
:mod:`ui.window.asked`); one asked in a background thread waits (never denied for being out of sight) and its
card shows when the thread is open again (``approvals_reshown``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    import asyncio
    import threading
    from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence

    from ui.bridge import RunBridge
    from ui.tasks import TaskOwner
    from workspace import events as ev
    from workspace.approval import ApprovalDecision, ApprovalRequest
    from workspace.attachments import Attachment
    from workspace.catalog import RobotInfo
    from workspace.config import Config
    from workspace.knowledge import PendingMemoryWrite
    from workspace.network import Network, NetworkInfo
    from workspace.persistence import BackgroundSearch, SearchHit, Store, ThreadInfo
    from workspace.providers.base import Provider
    from workspace.result import Usage
    from workspace.session import RecordedRun, ThreadSession, Workspace

log = logging.getLogger("ui.controller")

DEFAULT_ROBOT = "assistant"

#: What a thread's run is at, for people (the sidebar's accessible text, the quit question).
RUN_STATE_WORDS = {
    "streaming": "streaming",
    "approval": "waiting for your approval",
    "review": "waiting for a review",
    "finished": "finished",
    "failed": "failed",
}


class Controller(QObject):
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
        #: Threads whose run ended while they were not open, until opened: "finished", "failed" or "review".
        self._unseen: dict[str, str] = {}
        self._robots: list[RobotInfo] | None = None
        #: The window's event loop, for what a worker thread has to say (set when start-up uses workers).
        self.window_loop: asyncio.AbstractEventLoop | None = None
        #: Thread search off the window's thread (made for the open store on the first search).
        self._searcher: BackgroundSearch | None = None
        #: The thread list read in the start-up's worker thread, for the first :meth:`list_threads` (then None).
        self._threads_ahead: list[ThreadInfo] | None = None
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

    # -- opening ------------------------------------------------------------------------------
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

    def open(self, *, recover: bool = False) -> None:
        """Open the workspace; a broken database falls back to an in-memory one, with a message.
        ``recover``: a damaged database is moved aside (kept) and a fresh one created."""
        import asyncio
        import threading

        from workspace import paths
        from workspace.persistence import Store, StoreError
        from workspace.session import Workspace

        if threading.current_thread() is threading.main_thread():
            with contextlib.suppress(RuntimeError):  # (no loop running: a test's window without one)
                self.window_loop = asyncio.get_running_loop()
        config, folder, provider = self.config, self.folder, self.provider
        path = Path(self.db_path) if self.db_path is not None else paths.database_path()
        self.store_error = self.store_error_reason = None
        try:
            # The file's full check (a read of every page) only after an unclean exit; else in a worker, below.
            store = Store(path, busy_timeout=1.5, recover=recover, integrity_check="after_unclean_exit")
            workspace = self.workspace = Workspace(store=store, config=config, folder=folder, provider=provider)
            if not store.checked_at_open:
                self._check_store_later(store)
        except StoreError as exc:
            self.store_error, self.store_error_reason = str(exc), exc.reason
            log.warning("store unavailable: %s", exc)
            workspace = self.workspace = Workspace(store=Store(":memory:"), config=config, folder=folder,
                                                   provider=provider)
            self._emit_problem(
                f"{exc}\n\nThe app is running with a temporary database: conversations in this session "
                "will not be kept after you quit."
            )
        workspace.approval.ask_fn = self._ask
        workspace.auto_verify = True  # a proposal is verified when its run ends (the review shows it)
        workspace.agent_skills = True  # the SKILL.md skills a message asks for, as the library's runs get them
        workspace.verify_listeners.append(self.verify_progress.emit)
        workspace.approval.question_fn = self._ask  # a robot's question, a person's task: a card in the chat
        workspace.on_memory_write = self._memory_write  # review.memory: ask: the Changes dock's Memory group
        names = self.robot_names()
        if names and self.robot_name not in names:
            self.robot_name = names[0]

    def _check_store_later(self, store: Store) -> None:
        """SQLite's ``quick_check`` of the database just opened, in a worker thread (its own read-only
        connection): damage found is said with the fix (the signal reaches the window's thread queued)."""
        import threading

        def check() -> None:
            problem = store.integrity_problem()
            if problem is not None:
                log.warning("%s", problem)
                self._emit_problem(problem)

        threading.Thread(target=check, name="robotlab-store-check", daemon=True).start()

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

    def retry_store(self, *, recover: bool = False) -> bool:
        """Leave the temporary database for the real one (after "Try again" or "Move aside and start
        fresh"); refused when this session's conversations live in the temporary one."""
        if self.workspace is None or self.store_error is None:
            return True
        if not self.idle or self.workspace.threads():
            self.problem.emit("This session's conversations are in the temporary database: quit and start the "
                              "app again to use your database.")
            return False
        self.workspace.close()
        self.session = None
        self.open(recover=recover)
        return self.store_error is None

    def close(self) -> None:
        for fut in list(self._pending):
            fut.cancel()
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        if self.workspace is not None:
            try:
                self.workspace.close()
            except Exception as exc:  # closing must never stop the app from quitting
                log.warning("closing the workspace failed: %s", exc)

    def reload_config(self) -> None:
        """Re-read the configuration (after Settings saved it); new runs use it."""
        from workspace.config import load_config

        try:
            self._trust_seen, self._trust_stamp = True, self._trust_mtime()
            config = self._config = load_config(self.folder)
        except Exception as exc:
            self.problem.emit(f"The configuration could not be read: {exc}")
            return
        self.apply_config(config)

    def apply_config(self, config: Config) -> None:
        """Use ``config`` from the next run of every thread on (a run going on keeps its own)."""
        self._config = config
        if self.workspace is not None:
            self.workspace.set_config(config)
            self._network_cache.clear()
        self.config_changed.emit()

    @staticmethod
    def _trust_mtime() -> float | None:
        from workspace.trust import trust_file

        try:
            return trust_file().stat().st_mtime
        except OSError:
            return None

    def _follow_trust(self) -> None:
        """Trust given or revoked elsewhere (``robotlab trust``) counts from the next message on."""
        if self.folder is not None and self._trust_seen and self._trust_mtime() != self._trust_stamp:
            self.reload_config()

    def set_folder(self, folder: Path | None) -> None:
        """Work in ``folder`` from now on; raises (RuntimeError, ValueError, ConfigurationError) with a
        message for people when it cannot (a run going, changes awaiting review, a bad config file)."""
        from workspace.config import load_config

        new = Path(folder).resolve() if folder is not None else None
        going = self.runs_going()
        if going and new != self.folder:  # runs of other threads too: say which, Esc alone stops the open one's
            titles = [self._thread_title(thread_id) for thread_id, _state in going]
            raise RuntimeError(f"{len(going)} run{'s are' if len(going) > 1 else ' is'} going ("
                               + ", ".join(f"‘{t}’" for t in titles)
                               + "): let them finish, or open each thread and stop it (Esc), then open the other folder")
        stamp = self._trust_mtime()
        config = load_config(new)
        if self.workspace is not None:
            self.workspace.set_folder(new, config=config)
        self.folder, self._config, self._trust_seen, self._trust_stamp = new, config, True, stamp
        self._robots = None
        self._networks = None
        self._network_cache.clear()

    @property
    def store(self) -> Store | None:
        return self.workspace.store if self.workspace is not None else None

    # -- robots -------------------------------------------------------------------------------
    def robots(self, *, refresh: bool = False) -> list[RobotInfo]:
        """The robots the catalog finds (read once; ``refresh=True`` reads the folders again)."""
        if self.workspace is None:
            return []
        robots = self._robots
        if robots is None or refresh:
            problems: list[str] = []
            try:
                robots = self._robots = list(self.workspace.robots(problems=problems))
                self.robot_problems = problems
            except Exception as exc:
                self._emit_problem(f"Could not list the robots: {exc}")
                return []
        return list(robots)

    def robot_names(self) -> list[str]:
        return [r.name for r in self.robots()]

    def set_robot(self, name: str) -> None:
        if name != self.robot_name or self.network_name is not None:
            self.robot_name = name
            self.network_name = None
            self.robot_changed.emit(name)
            self.preload_provider()

    def preload_provider(self) -> asyncio.Future[None] | threading.Thread | None:
        """Load what the first message to the current robot needs — its template, and the model library
        (litellm and its model map, or the openai SDK for an OpenAI-compatible server) — in a worker thread,
        so the first message waits only for what is left (the import takes seconds; the window keeps
        painting). Returns the future or thread doing it (None: nothing to load)."""
        if self.provider is not None or self.workspace is None or self.network_name is not None:
            return None
        import threading

        workspace, name = self.workspace, self.robot_name

        def work() -> None:
            try:
                from workspace.shared_imports import settle_shared_imports

                settle_shared_imports()  # pydantic whole first: the window's schemas wait on it, never half of it
                workspace.warm_up(name)
            except Exception as exc:  # the first message reports what is wrong, with its own words
                log.debug("warming up robot %s failed: %s", name, exc)

        import asyncio

        try:
            # On the loop's executor: its worker threads then exist before the first message needs one.
            return asyncio.get_running_loop().run_in_executor(None, work)
        except RuntimeError:  # no running loop (tests without one): a thread of its own
            thread = threading.Thread(target=work, name="robotlab-warm-up", daemon=True)
            thread.start()
            return thread

    # -- networks -----------------------------------------------------------------------------
    @property
    def target_kind(self) -> str:
        """What new threads talk to: "robot" or "network"."""
        return "network" if self.network_name is not None else "robot"

    def networks(self, *, refresh: bool = False) -> list[NetworkInfo]:
        """The networks found (project, user, shipped), read once unless ``refresh``."""
        if self.workspace is None:
            return []
        networks = self._networks
        if networks is None or refresh:
            try:
                networks = self._networks = list(self.workspace.networks())
            except Exception as exc:
                self._emit_problem(f"Could not list the networks: {exc}")
                return []
            self._network_cache.clear()
        return list(networks)

    def set_network(self, name: str) -> None:
        """New threads run the network ``name``."""
        if name != self.network_name:
            self.network_name = name
            self.robot_name = name
            self.robot_changed.emit(name)

    def network_for_dock(self) -> tuple[Network | None, str | None]:
        """(the Network to draw, or None; a note when it cannot be loaded) for the current thread,
        or for the picked network when no thread is open."""
        session = self.session
        try:
            if session is not None:
                if session.is_network:
                    return session.network, None
                return None, None
            if self.network_name is not None:
                network = self._network_cache.get(self.network_name)
                if network is None:
                    network = self._network_cache[self.network_name] = self.require_workspace().load_network(
                        self.network_name)
                return network, None
        except Exception as exc:
            return None, f"The network could not be loaded: {exc}"
        return None, None

    def model_label(self, robot_name: str | None = None) -> tuple[str, bool]:
        """(label, is_language_model) for the robot's model."""
        if self.provider is not None:
            return str(self.provider.label), bool(self.provider.is_language_model)
        from workspace.providers import is_offline
        from workspace.providers.demo import DEMO_LABEL

        name = robot_name or self.robot_name
        session = self.session
        chosen = (session.chosen_model
                  if session is not None and robot_name is None and not session.is_network else None)
        if chosen:  # the open thread was switched to another model
            return (DEMO_LABEL, False) if is_offline(chosen) else (chosen, True)
        model: str | None = None
        for info in self.robots():
            if info.name == name:
                model = info.model
        model = model or self.config.get("llm.model")
        if is_offline(model):
            return DEMO_LABEL, False
        return str(model), True

    # -- threads ------------------------------------------------------------------------------
    def read_thread_list_ahead(self) -> None:
        """Read the thread list now (in the start-up's worker thread) for the window's first
        :meth:`list_threads`, so the window's thread does not wait for it."""
        store = self.store
        if store is None:
            return
        try:
            self._threads_ahead = list(store.list_threads())
        except Exception as exc:  # the window's own read says it
            log.debug("the thread list was not read ahead: %s", exc)

    def list_threads(self) -> list[ThreadInfo]:
        ahead, self._threads_ahead = self._threads_ahead, None
        if self.store is None:
            return []
        if ahead is not None:
            threads = ahead
        else:
            try:
                threads = list(self.store.list_threads())
            except Exception as exc:
                self.problem.emit(f"Could not read the thread list: {exc}")
                return []
        self._read_marks(threads)
        return threads

    def _read_marks(self, threads: list[ThreadInfo]) -> None:
        """The runs that ended unseen before this window opened (their marks kept with their threads)."""
        from workspace.session.run_marks import marks

        going = {run.thread_id for run in self._runs}
        found = {t: m for t, m in marks(threads).items()
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

    def new_thread(self) -> None:
        self._leave()
        self.session = None
        self.pending_model = None
        self._remember_thread(None)
        self.thread_opened.emit(None)
        self.usage_changed.emit(None)

    def open_thread(self, thread_id: str) -> ThreadSession | None:
        if self.session is not None and self._thread_id(self.session) == thread_id:
            return self.session
        if self.workspace is None:
            self.problem.emit("Could not open the thread: the threads are still opening")
            return None
        try:
            session = self.workspace.open_thread(thread_id)
        except Exception as exc:
            self.problem.emit(f"Could not open the thread: {exc}")
            return None
        self._leave()  # the run of the thread left goes on in the background
        self.session = session
        load = getattr(session, "load_conversation", None)
        if load is not None:  # the conversation a send continues, read now in a worker, not at the send
            self.tasks.spawn(load(), name="load-conversation")
        self._remember_thread(thread_id)
        thread = session.thread
        robot: str | None = thread.robot
        network = robot if thread.kind == "network" else None
        available = [n.name for n in self.networks()] if network is not None else self.robot_names()
        if robot not in available:  # its robot file is gone: new threads keep the current choice
            robot = None
        if robot and (robot != self.robot_name or network != self.network_name):
            self.robot_name = robot
            self.network_name = network
            self.robot_changed.emit(robot)
        self.thread_opened.emit(session)  # the chat shows what is stored, the running turn so far included
        run = session.run
        if run is not None and run in self._runs:
            shown = list(run.events)
            self.run_resumed.emit(run.turn_id, run.run_id, shown)  # the chat shows that turn from the run's events
            self._show(run, skip=len(shown))  # … and goes on live from the next one
        waiting = self.waiting_approvals(thread_id)
        if waiting:
            self.approvals_reshown.emit([(request, future) for _thread, request, future in waiting])
        self._seen(thread_id, thread)
        self._emit_usage()
        return session

    def _seen(self, thread_id: str, thread: ThreadInfo) -> None:
        """The thread is on screen: its run's end is seen (its mark in the store goes too)."""
        from workspace.session.run_marks import clear_mark

        if self._unseen.pop(thread_id, None) is not None:
            self.run_states_changed.emit()
        try:
            clear_mark(self.require_store(), thread)
        except Exception as exc:  # a read-only or busy database: the mark shows again next time
            log.debug("the run mark of %s was not cleared: %s", thread_id, exc)

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
        self.stop_thread(thread_id)  # a deleted thread's run does not go on out of sight
        from workspace.delegation import stop_delegations

        stop_delegations(thread_id)  # nor what its robots delegated in the background
        if self.session is not None and self._thread_id(self.session) == thread_id:
            self.new_thread()
        self.threads_changed.emit()
        return True

    def delegations_running(self, thread_id: str) -> list[str]:
        """The robots doing what ``thread_id``'s robots delegated to them in the background, still running."""
        from workspace.delegation import running_delegations

        return [f.robot_name for f in running_delegations(thread_id)]

    def restore_thread(self, thread_id: str) -> None:
        try:
            self.require_store().restore_thread(thread_id)
        except Exception as exc:
            self.problem.emit(f"Could not restore the thread: {exc}")
        self.threads_changed.emit()

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

    # -- runs ---------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """The open thread has a run going (streaming, or waiting for an approval)."""
        session = self.session
        return self.bridge.running or (session is not None and session.run is not None and session.run in self._runs)

    @property
    def idle(self) -> bool:
        """No run is going on (none streaming, none being consumed)."""
        return not self.bridge.running and not self._runs

    @property
    def last_run(self) -> RecordedRun | None:
        """The run started last (None when none is running)."""
        return self._runs[-1] if self._runs else None

    def attachment_problem(self, attachments: Sequence[Attachment]) -> str | None:
        """Why ``attachments`` cannot go to the thread's model (images to a model that cannot see them), said
        before anything is sent; None when they can (or it is not known yet: the run checks again)."""
        if not any(a.is_image for a in attachments):
            return None
        try:
            if self.session is not None:
                provider = self.session.robot.provider
            elif self.workspace is not None:
                provider = self.workspace.load_robot(self.robot_name).provider
            else:
                return None
        except Exception:  # a network thread, a robot that cannot load: the send says what is wrong
            return None
        from workspace.attachments import vision_problem
        from workspace.providers import litellm_provider

        if isinstance(provider, litellm_provider.LiteLLMProvider) and provider.vision is None and \
                not provider.capabilities_known():
            return None  # not loaded yet (it loads after the first paint): the run checks, off the window's thread
        error, _note = vision_problem(provider, attachments)
        return error

    def send(self, text: str, *, attachments: Sequence[Attachment] | None = None) -> bool:
        if self.running:
            self.notice.emit("A run is in progress: stop it (Esc) before sending another message.")
            return False
        if self.workspace is None:
            self.notice.emit("Still opening your threads — send again in a moment.")
            return False
        self._follow_trust()
        created = False
        session = self.session
        if session is None:
            try:
                session = self.session = self.workspace.new_thread(self.robot_name, kind=self.target_kind)
                if self.pending_model is not None and self.target_kind != "network":
                    session.set_model(self.pending_model[0], api_base=self.pending_model[1])
            except Exception as exc:
                self.problem.emit(f"Could not start a thread with '{self.robot_name}': {exc}")
                return False
            finally:
                self.pending_model = None
            created = True
        try:
            run = session.send(text, attachments=attachments) if attachments else session.send(text)
        except Exception as exc:
            self.problem.emit(f"Could not send the message: {exc}")
            return False
        if created:  # the thread list shows it once the run is under way (the window's running_changed)
            self._remember_thread(self._thread_id(session))
        self._start(run)
        return True

    def continue_(self) -> bool:
        """Ask the model to go on with its last answer, cut off at the token limit (the "Continue" of a run
        whose result has ``stop_reason == "length"``)."""
        if self.session is None or self.running:
            self.notice.emit("Stop the current run (Esc) first." if self.running else "There is no answer to continue.")
            return False
        try:
            run = self.session.continue_()
        except Exception as exc:
            self.problem.emit(f"Could not continue the answer: {exc}")
            return False
        self._start(run)
        return True

    def edit_and_resend(self, turn_id: str, text: str, attachments: Sequence[Attachment] | None = None) -> bool:
        """The edited message in place of turn ``turn_id``'s, with ``attachments`` (None: the turn's own)."""
        return self._fork(lambda session: session.edit_and_resend(turn_id, text, attachments=attachments))

    def regenerate(self, turn_id: str) -> bool:
        return self._fork(lambda session: session.regenerate(turn_id))

    def _fork(self, start: Callable[[ThreadSession], RecordedRun]) -> bool:
        session = self.session
        if session is None:
            return False
        if self.running:
            self.notice.emit("Stop the current run (Esc) first.")
            return False
        try:
            run = start(session)
        except Exception as exc:
            self.problem.emit(f"Could not fork the thread: {exc}")
            return False
        self.thread_opened.emit(self.session)  # the branch on screen changed: re-render
        self._start(run)
        return True

    def switch_branch(self, turn_id: str, direction: int) -> None:
        """Show the sibling of ``turn_id`` that is ``direction`` (+1/-1) away."""
        if self.session is None or self.running:
            return
        try:
            siblings = [t.id for t in self.require_store().siblings(turn_id)]
            index = siblings.index(turn_id) + direction
            if not 0 <= index < len(siblings):
                return
            self.session.switch_branch(siblings[index])
        except Exception as exc:
            self.problem.emit(f"Could not switch branches: {exc}")
            return
        self.thread_opened.emit(self.session)
        self._emit_usage()

    def show_turn(self, turn_id: str) -> bool:
        """Show the branch of the open thread that goes through ``turn_id`` (a search hit on another
        branch); False when it cannot (a run going, a turn of another thread)."""
        if self.session is None or self.running:
            return False
        try:
            self.session.switch_branch(turn_id)
        except Exception as exc:
            self.problem.emit(f"Could not show that message: {exc}")
            return False
        self.thread_opened.emit(self.session)
        self._emit_usage()
        return True

    def _start(self, run: RecordedRun) -> None:
        self._runs.append(run)
        self._unseen.pop(run.thread_id, None)
        self.tasks.spawn(self._watch(run), name="run")
        self._show(run)
        self.run_states_changed.emit()

    def _show(self, run: RecordedRun, *, skip: int = 0) -> None:
        """The bridge feeds ``run`` (the open thread's) to the chat, from its first event (or after the first
        ``skip``, which the chat was given at once: the running state shows now, not at the next event)."""
        events = run if not skip else _after(run, skip)
        self._viewed = (run, self.tasks.spawn(self.bridge.consume(events, announce=bool(skip)), name="run-view"))

    def _leave(self) -> None:
        """The open thread is left: its run (if any) goes on, unseen; nothing more of it reaches the chat."""
        viewed, self._viewed = self._viewed, None
        if viewed is not None:
            self.bridge.release()
            viewed[1].cancel()  # the consuming task only: the run and its recording go on

    async def _watch(self, run: RecordedRun) -> None:
        """Follow ``run`` (whichever thread is open) until it ends: its state for the sidebar, and the
        notice when it ends out of sight."""
        from workspace import events as ev

        terminal: ev.Event | None = None
        try:
            async for event in run:
                if isinstance(event, ev.TERMINAL) and ev.ends(event, run.run_id):
                    terminal = event
        finally:
            if run in self._runs:
                self._runs.remove(run)
            state = self._end_state(run, terminal)
            if run.thread_id != self.thread_id:
                if state in ("finished", "failed", "review"):
                    self._unseen[run.thread_id] = state
                    self._keep_mark(run.thread_id, state)
                self.background_run_ended.emit(run.thread_id, state)
            self.run_states_changed.emit()
            self.threads_changed.emit()
            self._emit_usage()

    def _keep_mark(self, thread_id: str, state: str) -> None:
        from workspace.session.run_marks import keep_mark

        try:
            keep_mark(self.require_store(), thread_id, state)
        except Exception as exc:  # the mark shows until the window closes all the same
            log.debug("the run mark of %s was not kept: %s", thread_id, exc)

    def _end_state(self, run: RecordedRun, terminal: object) -> str:
        from workspace import events as ev

        if isinstance(terminal, ev.RunFailed):
            return "failed"
        if not isinstance(terminal, ev.RunFinished):
            return "cancelled"
        try:
            session = self.workspace.open_thread(run.thread_id) if self.workspace is not None else None
            changes = session.changes if session is not None else None
            if changes is not None and changes.pending_files:
                return "review"
        except Exception:  # a thread or change set that cannot say: the run finished all the same
            log.debug("could not read the pending changes of %s", run.thread_id)
        return "finished"

    def run_states(self) -> dict[str, str]:
        """What each thread's run is at, by thread id: "streaming", "approval" (waiting for your answer),
        and, until the thread is opened, "review", "finished" or "failed" (keys of :data:`RUN_STATE_WORDS`)."""
        states = dict(self._unseen)
        for run in self._runs:
            states[run.thread_id] = "streaming"
        for _thread, request, _future in self.waiting_approvals():
            thread = self._approval_thread(request)
            if thread is not None:
                states[thread] = "approval"
        return states

    def _thread_title(self, thread_id: str) -> str:
        try:
            return str(self.require_store().get_thread(thread_id).display_title or "Untitled thread")
        except Exception:  # gone, or an unreadable database: the words still make sense
            return "Untitled thread"

    def runs_going(self) -> list[tuple[str, str]]:
        """The threads with a run going, oldest run first: (thread id, its state)."""
        states = self.run_states()
        seen: list[str] = []
        for run in self._runs:
            if run.thread_id not in seen:
                seen.append(run.thread_id)
        return [(thread, states.get(thread, "streaming")) for thread in seen]

    def waiting_for_you(self) -> int:
        """How many things wait for you: approvals in every thread, and threads whose changes wait for a review."""
        return len(self.waiting_approvals()) + sum(1 for s in self._unseen.values() if s == "review")

    def stop(self) -> None:
        """Stop the open thread's run: the stream, in-flight tools, its pending approvals (runs of other
        threads go on)."""
        self.stop_thread(self.thread_id)

    def stop_thread(self, thread_id: str | None) -> None:
        """Stop the runs of ``thread_id`` and the approvals waiting in it."""
        for run in list(self._runs):
            if run.thread_id != thread_id:
                continue
            try:
                run.cancel()
            except Exception as exc:
                log.warning("cancel failed: %s", exc)
        for _thread, _request, fut in self.waiting_approvals(thread_id):
            fut.cancel()
        if self.session is not None and self.session.thread_id == thread_id and self.session.running:
            try:
                self.session.stop()
            except Exception as exc:
                log.warning("session stop failed: %s", exc)

    def stop_all(self) -> None:
        """Stop every thread's run (quitting): streams, tools, every approval waiting."""
        for run in list(self._runs):
            try:
                run.cancel("the app was closed")
            except Exception as exc:
                log.warning("cancel failed: %s", exc)
        for fut in list(self._pending):
            fut.cancel()

    def on_usage_event(self, _event: ev.Usage) -> None:
        self._emit_usage()

    # -- approvals ------------------------------------------------------------------------------
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

    # -- memory writes and what robots learnt ------------------------------------------------------
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


async def _after(run: AsyncIterable[ev.Event], skip: int) -> AsyncIterator[ev.Event]:
    """The events of ``run`` (which replays from its first) after the first ``skip``."""
    seen = 0
    async for event in run:
        seen += 1
        if seen > skip:
            yield event
