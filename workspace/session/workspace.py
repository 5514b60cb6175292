"""The composition root, :class:`Workspace`: configuration, the thread store, approvals, the MCP servers and the robots."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.approval import ApprovalGate
from workspace.persistence import Store, StoreError, ThreadInfo
from workspace.session.recording import RecordedRun
from workspace.session.thread import ThreadSession
from workspace.session.thread_state import _hosted_past_local, _WithoutApiBase

if TYPE_CHECKING:
    from workspace.catalog import RobotInfo
    from workspace.changes import InterruptedApply, RecoveryResult
    from workspace.config import Config
    from workspace.delegation import DelegationFuture
    from workspace.knowledge import PendingMemoryWrite
    from workspace.network import Network, NetworkInfo
    from workspace.providers.base import Provider
    from workspace.robot import Robot
    from workspace.session.verify import VerifyProgress

log = logging.getLogger("workspace.session")


class Workspace:
    """Configuration, the thread store, approvals and robots: what the desktop is built on.

    ``provider``: when given, every robot uses it (tests pass a ``ScriptedProvider``).
    ``approval``: the gate whose policy and ``ask_fn`` every thread uses (default: the policy
    file ``robotlab paths`` shows, and nobody to ask until the front end sets ``ask_fn``).
    """

    def __init__(
        self,
        *,
        config: Config | None = None,
        folder: str | Path | None = None,
        store: Store | None = None,
        db_path: str | Path | None = None,
        provider: Provider | None = None,
        approval: ApprovalGate | None = None,
    ) -> None:
        from workspace import paths

        self.folder = Path(folder).resolve() if folder is not None else None
        if config is None:
            from workspace.config import load_config

            config = load_config(self.folder)
        self.config = config
        self.store = store if store is not None else Store.open(db_path or paths.database_path())
        if approval is None:
            from workspace.approval import ApprovalPolicy

            approval = ApprovalGate(ApprovalPolicy.load(paths.approval_policy_file()))
        self.approval = approval
        self.provider = provider
        #: Who reviews a memory write a robot proposes (``review.memory: ask``): the window's Changes dock sets
        #: it; None: the write waits in ``robot.pending_memory_writes``.
        self.on_memory_write: Callable[[PendingMemoryWrite], Any] | None = None
        self._sessions: dict[str, ThreadSession] = {}
        self._runs: set[RecordedRun] = set()
        #: Verify a thread's change set on its own after each run that proposed changes (a window turns it
        #: on; the command line verifies in its review instead): :meth:`ThreadSession.start_verify`.
        self.auto_verify = False
        #: Give each robot run the agent skills (``SKILL.md`` folders: the opened folder's, the user's and the
        #: shipped ones), read anew for each run, whose description matches the message picked per run (a
        #: window turns it on; the library passes ``agent_skills=`` itself): :class:`AgentSkillCatalog`.
        self.agent_skills = False
        #: Told of every thread's verify as it starts and ends (:class:`~workspace.session.verify.VerifyProgress`).
        self.verify_listeners: list[Callable[[VerifyProgress], None]] = []
        self._verifies: set[asyncio.Task[Any]] = set()
        #: What the threads' robots delegated in the background and still runs after the run that started it ended:
        #: by thread, each delegation's turn (:meth:`stop_delegated` stores its end there).
        self._delegated: dict[str, dict[DelegationFuture, str]] = {}

    # -- the folder ----------------------------------------------------------------------------------
    def set_folder(self, folder: str | Path | None, *, config: Config | None = None) -> None:
        """Work in another folder from now on (File > Open Folder): its configuration, robots and
        networks; threads keep their history and their next message works in the new folder.

        Refused while a run is going. Changes awaiting review stay with their folder (kept in the
        database) and come back when it is open again, so nothing is lost.
        """
        new = Path(folder).resolve() if folder is not None else None
        if new is not None and not new.is_dir():
            raise ValueError(f"{folder}: no such folder")
        if self.running:
            raise RuntimeError("Stop the running robots first (Esc), then open the other folder")
        if config is None:
            from workspace.config import load_config

            config = load_config(new)  # a bad file raises here, before anything changed
        for session in self._sessions.values():
            session.save_changes()  # changes awaiting review stay kept for their folder
        self.folder, self.config = new, config
        for session in self._sessions.values():  # rebuilt for the new folder on the next message
            session._robot = None
            session._network = None
            if session.changes is None or Path(session.changes.folder) != new:
                session.changes = None
                session._restore_changes()  # this folder's, when some wait here

    def set_config(self, config: Config) -> None:
        """A new configuration (Settings, the MCP servers page, the file edited on disk): every
        thread's next run uses it (robots are built again); a run in progress finishes with what
        it started with."""
        self.config = config
        for session in self._sessions.values():
            session._stale_config = True
            session._network = None if not session.running else session._network

    # -- applies a crash cut short ------------------------------------------------------------------
    def interrupted_applies(self, *, all_folders: bool = False) -> list[InterruptedApply]:
        """Applies (and undos, redos, restores) a crash cut short, of the open folder (of every folder
        with ``all_folders`` or when none is open): each file is whole, the set may be mixed. The
        window asks at start (and after opening a folder) and offers :meth:`recover_apply`;
        :meth:`recovery_notice` words them for its banner."""
        from workspace.changes import find_interrupted_applies

        return find_interrupted_applies(None if all_folders else self.folder)

    @staticmethod
    def recovery_notice(items: list[InterruptedApply]) -> str | None:
        """The banner text for :meth:`interrupted_applies` (None when there are none)."""
        if not items:
            return None
        if len(items) == 1:
            return items[0].message()
        return (f"{len(items)} applies were cut short by the program stopping. "
                + " ".join(f"({n}) {item.message()}" for n, item in enumerate(items, start=1)))

    def recover_apply(self, item: InterruptedApply, direction: str = "back", *,
                      force: bool = False) -> RecoveryResult:
        """Roll an interrupted apply back (every file as before) or forward (as the change makes it),
        remove its temp files, and say what was done (``RecoveryResult.message``). Refused while a
        run goes (it could be writing the same files); ``direction="discard"`` forgets the record."""
        from workspace.changes import RecoveryResult, discard_interrupted, recover

        if self.running:
            raise RuntimeError("Stop the running robots first (Esc), then recover the interrupted apply")
        if direction == "discard":
            discard_interrupted(item)
            return RecoveryResult(True, "Forgot the interrupted apply; the files were left as they are.",
                                  direction)
        return recover(item, direction, force=force)

    # -- robots ------------------------------------------------------------------------------------
    def robots(self, *, problems: list[str] | None = None) -> list[RobotInfo]:
        """The robots the catalog finds (project, user, shipped); unreadable files go to ``problems``."""
        from workspace.catalog import list_robots

        return list_robots(self.folder, problems=problems)

    def load_robot(self, name: str) -> Robot:
        from workspace.catalog import load_robot

        options: dict[str, Any] = {"config": self.config}
        if self.provider is not None:
            options["provider"] = self.provider
        robot: Robot = load_robot(name, folder=self.folder, **options)
        return robot

    def load_robot_with_model(self, name: str, model: str, *, api_base: str | None = None) -> Robot:
        """The robot ``name`` talking to ``model`` (a thread's choice): at ``api_base`` when given (a local
        server's model). A hosted provider's model (one with an API key variable) is never sent to the
        configured ``llm.api_base`` when that is a server on this machine (the local server Settings points
        at): it goes to its provider."""
        from workspace.catalog import load_robot

        options: dict[str, Any] = {"config": self.config, "model": model}
        if api_base:
            options["api_base"] = api_base
        if self.provider is not None:
            options["provider"] = self.provider
        robot: Robot = load_robot(name, folder=self.folder, **options)
        if self.provider is None and not api_base and robot.api_base is None and _hosted_past_local(model, self.config):
            from workspace.providers import provider_for

            robot.provider = provider_for(model, api_base=None, config=_WithoutApiBase(self.config))
        return robot

    def warm_up(self, robot_name: str) -> str | None:
        """Load what the first message to ``robot_name`` will need — its file and template (Jinja2), the
        built-in tools, and its model's library (litellm, or the openai SDK for an OpenAI-compatible server)
        — so the first reply is as quick as the later ones. Blocking (seconds for litellm) and touching no
        thread or store: run it in a worker thread. Returns the library loaded (None: none). Also asks a
        local server for the model's context window and loads the model's tokenizer (both remembered
        for the process), which the first message would otherwise wait for."""
        from workspace.shared_imports import gc_paused

        with gc_paused():  # the collector walking what the imports allocate would freeze other threads
            from workspace.providers import is_offline, preload
            from workspace.providers.registry import factories
            from workspace.tools import registry

            factories()  # reads the entry points of installed provider plugins once
            for module in ("workspace.robots_as_tools", "workspace.tracing"):  # what a run's first start imports
                importlib.import_module(module)
            robot = self.load_robot(robot_name)
            robot.render_system({"message": ""})
            for item in registry.builtin_tools():
                item.spec()
            if self.provider is not None:
                return None
            if is_offline(robot.model):  # the offline demo: its patterns
                from workspace.providers.demo import warm_up as warm_demo

                warm_demo()
                return None
            loaded = preload(robot.model, robot.api_base, self.config)
            if loaded is not None:
                _warm_context(robot)
            return loaded

    # -- networks ----------------------------------------------------------------------------------
    def networks(self) -> list[NetworkInfo]:
        """The networks found (project, user, shipped), as ``robotlab network list`` shows them."""
        from workspace.network import list_networks

        return list_networks(self.folder)

    def load_network(self, name: str | Path) -> Network:
        """A network by name (see :meth:`networks`) or file path, with the workspace's configuration
        and provider. Problems in the file raise ``NetworkFileError`` naming file, task and field."""
        from workspace.network import find_network_file, load_network

        path = find_network_file(name, self.folder)
        return load_network(path, folder=self.folder, config=self.config, provider=self.provider)

    def new_network_thread(self, name: str, *, title: str | None = None,
                           loader: Callable[[], Network] | None = None,
                           metadata: dict[str, Any] | None = None) -> ThreadSession:
        """A new thread whose messages each run the network ``name`` (validated now: a bad file raises).

        ``loader`` builds the network for each run instead of :meth:`load_network` (the command
        line's network files and overrides); ``metadata`` is kept with the thread (its origin).
        """
        network = loader() if loader is not None else self.load_network(name)
        info = self.store.create_thread(robot=network.name, title=title, kind="network",
                                        folder=str(self.folder) if self.folder else None, metadata=metadata)
        session = ThreadSession(self, info)
        session._network = network
        session.network_loader = loader
        self._sessions[info.id] = session
        return session

    # -- threads -------------------------------------------------------------------------------------
    def new_thread(self, robot_name: str, *, title: str | None = None, kind: str = "robot",
                   robot: Robot | None = None, metadata: dict[str, Any] | None = None) -> ThreadSession:
        """A new thread with the robot (an unknown robot raises ConfigurationError naming the known ones);
        ``kind="network"``: with the network of that name (:meth:`new_network_thread`).

        ``robot``: the robot to talk to, already built (the command line's, with its model and
        provider) instead of the catalog's; ``metadata`` is kept with the thread (its origin).
        """
        if kind == "network":
            return self.new_network_thread(robot_name, title=title, metadata=metadata)
        if kind != "robot":
            raise ValueError(f"Invalid thread kind: {kind!r}. Must be 'robot' or 'network'")
        from_catalog = robot is None
        if robot is None:
            robot = self.load_robot(robot_name)
        info = self.store.create_thread(robot=robot.name, title=title,
                                        folder=str(self.folder) if self.folder else None, metadata=metadata)
        session = ThreadSession(self, info)
        session._robot = robot
        session._robot_from_catalog = from_catalog
        self._sessions[info.id] = session
        return session

    def open_thread(self, thread_id: str, *, robot: Robot | None = None) -> ThreadSession:
        """The session of a stored thread (the same object while it is open); ``robot``: talk to
        this robot from now on (the command line's, with its model and provider)."""
        session = self._sessions.get(thread_id)
        if session is None:
            session = ThreadSession(self, self.store.get_thread(thread_id))
            session._restore_changes()
            self._sessions[thread_id] = session
        if robot is not None:
            session.use_robot(robot)
        return session

    def threads(self, include_deleted: bool = False) -> list[ThreadInfo]:
        return self.store.list_threads(include_deleted)

    @property
    def running(self) -> list[RecordedRun]:
        return [r for r in self._runs if not r.done]

    def _run_done(self, run: RecordedRun) -> None:
        self._runs.discard(run)
        self._note_delegations(run.thread_id, run.turn_id)

    # -- what runs delegated in the background ------------------------------------------------------
    def _note_delegations(self, thread_id: str, turn_id: str) -> None:
        """The run of ``turn_id`` ended (its recording too): what its robots delegated in the background and still
        runs belongs to that turn, where its end is stored when it is stopped (:meth:`stop_delegated`)."""
        from workspace.delegation import running_delegations

        for future in running_delegations(thread_id):
            turns = self._delegated.setdefault(thread_id, {})
            if future not in turns:
                turns[future] = turn_id

                def ended(done: DelegationFuture, turns: dict[DelegationFuture, str] = turns) -> None:
                    turns.pop(done, None)

                future.add_done_callback(ended)

    def stop_delegated(self, thread_id: str, *, reason: str) -> list[DelegationFuture]:
        """Stop what the robots of ``thread_id`` delegated in the background
        (:func:`~workspace.delegation.stop_delegations`) and store, with ``reason`` (one of
        :mod:`workspace.delegation`'s ``STOPPED_*``), the end of each delegate's run that went on after the run that
        started it ended, in that run's turn (:func:`~workspace.delegation.record_stopped`), so the reopened thread
        says why it stopped. A delegation whose caller's run still goes ends in that run's recording. The delegations
        that were still running."""
        from workspace.delegation import record_stopped, stop_delegations

        turns = self._delegated.pop(thread_id, {})
        stopped = stop_delegations(thread_id)
        by_turn: dict[str, list[str]] = {}
        for future in stopped:
            turn_id = turns.get(future)
            if turn_id is not None and future.run_id:
                by_turn.setdefault(turn_id, []).append(future.run_id)
        for turn_id, run_ids in by_turn.items():
            try:
                record_stopped(self.store, thread_id, turn_id, run_ids, reason=reason)
            except (StoreError, OSError) as exc:  # stopped all the same; the lane says "not followed" when reopened
                log.warning("could not store that the delegated work of thread %s was stopped: %s", thread_id[:8],
                            exc)
        return stopped

    def _stop_all_delegated(self, reason: str | None) -> None:
        from workspace.delegation import STOPPED_AT_CLOSE

        if self.store.closed:
            return
        for thread_id in {run.thread_id for run in self._runs} | set(self._delegated):
            self.stop_delegated(thread_id, reason=reason or STOPPED_AT_CLOSE)

    # -- closing ------------------------------------------------------------------------------------
    def close(self, *, delegated: str | None = None) -> None:
        """Cancel running runs and close the store, also one passed in (their turns are marked
        ``interrupted`` unless they recorded their end already). What their robots delegated in the background
        stops too; the end of a delegate's run that went on after the run that started it ended is stored with
        the reason ``delegated`` (default :data:`~workspace.delegation.STOPPED_AT_CLOSE`), see
        :meth:`stop_delegated`.

        Prefer ``await aclose()`` inside an event loop: it lets the runs record their
        ``run_cancelled`` event first.
        """
        self._stop_all_delegated(delegated)
        for run in list(self._runs):
            run.cancel("the workspace was closed")
        for task in list(self._verifies):
            task.cancel()
        for session in self._sessions.values():
            session.save_changes()  # review decisions made since the last run or apply
        self.store.close()

    async def aclose(self, timeout: float = 5.0, *, delegated: str | None = None) -> None:
        """Cancel running runs, wait (up to ``timeout`` s) for them to record their end, close (``delegated``: as
        for :meth:`close`)."""
        self._stop_all_delegated(delegated)
        runs = list(self._runs)
        for run in runs:
            run.cancel("the workspace was closed")
        verifies = list(self._verifies)
        for task in verifies:
            task.cancel()
        tasks: list[asyncio.Task[Any]] = [r._task for r in runs if r._task is not None] + verifies
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        self.close(delegated=delegated)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()



__all__ = ["Workspace"]


def _warm_context(robot: Robot) -> None:
    """What the first request's context check asks once per model: the window (a local server is
    asked, a few loopback requests) and the tokenizer (the server's /tokenize, else litellm's, where the model
    has one). Failures
    stay quiet here: the first message asks again and reports them."""
    try:
        provider = robot.provider
        from workspace.context.window import probe_server, server_of, server_tokenizer

        api_base, model = provider.api_base, provider.model_id
        if server_of(model, api_base) is not None:
            probe_server(model, api_base)
            server_tokenizer(model, api_base)  # whether the server counts tokens itself (llama.cpp's /tokenize)
        provider.context_window()  # litellm's model map (remembered)
        provider.token_counter()  # the tokenizer (remembered)
    except Exception as exc:
        log.debug("warming up the context of %s failed: %s", robot.name, exc)
