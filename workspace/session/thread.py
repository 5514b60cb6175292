"""One conversation: :class:`ThreadSession` (send, fork, switch branches, compact, change the model) and its approval gate."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from workspace import events as ev
from workspace.approval import Action, ApprovalDecision, ApprovalGate, ApprovalRequest, AskFn
from workspace.persistence import StoreError, ThreadInfo, TurnInfo, coalesce_text
from workspace.result import Usage
from workspace.session.recording import RecordedRun, TurnView, title_from

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Sequence

    from workspace.agent import EventRun
    from workspace.attachments import Attachment
    from workspace.changes import ApplyResult, ChangeHistory, ChangeSet, HistoryEntry, RestoreResult
    from workspace.messages import Message
    from workspace.network import Network, NetworkRun
    from workspace.providers.base import ConfigLookup
    from workspace.robot import Robot
    from workspace.session.verify import VerifyProgress, VerifySetting
    from workspace.session.workspace import Workspace

log = logging.getLogger("workspace.session")


class _ThreadGate(ApprovalGate):
    """The workspace's policy and way of asking, with "this thread" grants kept per thread."""

    def __init__(self, shared: ApprovalGate) -> None:
        super().__init__(shared.policy, shared.ask_fn)
        self._shared = shared

    def decide(self, request: ApprovalRequest) -> Action:
        self.policy = self._shared.policy
        return super().decide(request)

    async def adecide(self, request: ApprovalRequest) -> Action | ApprovalDecision:
        if not self._granted(request) and type(self._shared).adecide is not ApprovalGate.adecide:
            return await self._shared.adecide(request)  # a gate that decides in its own way (a function)
        return await super().adecide(request)  # a denial by effect says which effect

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.policy = self._shared.policy
        self.ask_fn = self._shared.ask_fn
        return await super().ask(request)

    def answers_questions(self) -> AskFn | None:
        return self._shared.answers_questions()


def _hosted_past_local(model: str, config: ConfigLookup | None) -> bool:
    """Whether ``model`` is a hosted provider's while the configured ``llm.api_base`` is a local server."""
    from workspace.secrets import KEY_VARS, provider_prefix
    from workspace.urls import is_loopback_url

    base = config.get("llm.api_base") if config is not None else None
    prefix = provider_prefix(model)
    if not (base and is_loopback_url(str(base)) and "/" in model and prefix in KEY_VARS):
        return False
    if prefix != "openai":
        return True
    # openai/NAME is also how a local OpenAI-compatible server's models are named: hosted when litellm knows it.
    from workspace.providers.litellm_provider import known_chat_models

    return model in known_chat_models("openai")


def thread_server(robot: Robot) -> str | None:
    """The server ``robot`` talks to: its provider's API base (else the robot's), without credentials;
    None for a hosted provider's own service (or a provider with no address)."""
    from workspace.urls import without_credentials

    base = robot.provider.api_base or robot.api_base
    return without_credentials(base) or None if isinstance(base, str) and base else None


class _WithoutApiBase:
    """A configuration lookup without ``llm.api_base`` (for a hosted model chosen beside a local server)."""

    def __init__(self, config: ConfigLookup) -> None:
        self._config = config

    def get(self, key: str, default: Any = None) -> Any:
        return default if key == "llm.api_base" else self._config.get(key, default)


@dataclass
class _Conversation:
    """The conversation along a branch up to ``leaf`` (None: before the first message), as
    :meth:`Store.history_messages` gives it, and the ``context_compacted`` events along that branch."""

    leaf: str | None
    messages: list[Message] = field(default_factory=list)
    compactions: list[ev.Event] = field(default_factory=list)


class ThreadSession:
    """One conversation thread: send messages, fork, switch branches, read the transcript."""

    def __init__(self, workspace: Workspace, thread: ThreadInfo) -> None:
        self.workspace = workspace
        self.store = workspace.store
        self.thread_id = thread.id
        self._thread = thread
        self._robot: Robot | None = None
        self._network: Network | None = None
        self.approval = _ThreadGate(workspace.approval)
        #: The latest run started in this session (running or done).
        self.run: RecordedRun | None = None
        self._save_lock = threading.Lock()
        #: Proposed file changes awaiting review (when the workspace has a folder open).
        self.changes: ChangeSet | None = None
        #: How a network thread gets a fresh network for each run (default: the workspace's
        #: ``load_network`` of the thread's network name). The command line sets it for a network
        #: given as a file, with its --model and --api-base.
        self.network_loader: Callable[[], Network] | None = None
        #: The workspace's configuration changed since the robot was built (Workspace.set_config).
        self._stale_config = False
        self._robot_from_catalog = False
        #: The conversation a robot thread's next message continues, kept in memory: a send extends it
        #: with the turn it added (read off the event loop once the run ended) instead of re-reading the
        #: whole thread. None: not known yet (read on demand: :meth:`load_conversation`).
        self._conversation: _Conversation | None = None
        self._extending: Future[None] | None = None
        #: The thread's verify going now or last finished (:meth:`start_verify`), and its task while it runs.
        self.verifying: VerifyProgress | None = None
        self._verify_task: asyncio.Task[ev.VerifyFinished | None] | None = None

    # -- state -------------------------------------------------------------------------------------
    @property
    def thread(self) -> ThreadInfo:
        """The thread as stored now (title, usage, current turn...)."""
        if not self.store.closed:
            self._thread = self.store.get_thread(self.thread_id)
        return self._thread

    @property
    def kind(self) -> str:
        """``"robot"`` or ``"network"``."""
        return self._thread.kind

    @property
    def is_network(self) -> bool:
        return self._thread.kind == "network"

    @property
    def robot(self) -> Robot:
        """The thread's robot, built from the catalog on first use (and the workspace's provider);
        built again after :meth:`Workspace.set_config` once no run of the thread goes on."""
        if self.is_network:
            raise RuntimeError(f"Thread {self.thread_id[:8]} talks to network '{self._thread.robot}', not a robot; "
                               "use session.network")
        if self._robot is not None and self._stale_config and not self.running:
            self._stale_config = False
            if self._robot_from_catalog:  # (the command line's own robot stays as it was given)
                self._robot = None
        if self._robot is None:
            self._robot = self._robot_with_model(self.chosen_model, self.server)
            self._robot_from_catalog = True
        return self._robot

    @property
    def server(self) -> str | None:
        """The server the thread was held with (metadata ``api_base``: an API base, never a key); None: the
        model's hosted provider, or not known yet. The thread goes on there until the user switches."""
        value = self._thread.metadata.get("api_base")
        return value if isinstance(value, str) and value else None

    # -- the thread's model ----------------------------------------------------------------------
    @property
    def chosen_model(self) -> str | None:
        """The model this thread was switched to (its metadata's ``model``); None: the robot's own."""
        value = self._thread.metadata.get("model")
        return value if isinstance(value, str) and value else None

    def default_model(self) -> str | None:
        """The model the thread's robot has of its own (its file's, else the configuration's)."""
        if self.is_network:
            return None
        try:
            return self.workspace.load_robot(self._thread.robot).model
        except Exception:  # a robot given as a file the catalog does not know (the command line's)
            return None

    def _robot_with_model(self, model: str | None, api_base: object = None) -> Robot:
        """The catalog's robot, with ``model`` (and the server ``api_base``) when given: the robot's own model
        goes on at the thread's server too, whatever the configuration says now (unless the robot's model is
        no longer the one the thread was held with: the user chose another, at its own server)."""
        base = str(api_base) if isinstance(api_base, str) and api_base else None
        if not model:
            robot = self.workspace.load_robot(self._thread.robot)
            held = self._thread.metadata.get("server_model")
            if (base is None or not robot.model or self.workspace.provider is not None or robot.api_base == base
                    or (isinstance(held, str) and held != robot.model)):
                return robot
            model = robot.model
        return self.workspace.load_robot_with_model(self._thread.robot, model, api_base=base)

    def set_model(self, model: str | None, *, api_base: str | None = None) -> ev.ModelChanged | None:
        """Use ``model`` for this thread's next runs (None or the robot's own model: back to the robot's
        default); ``api_base``: the server of a local model (from :mod:`workspace.providers.listing`).
        Recorded in the thread: its metadata (``model``, ``api_base``) and a ``model_changed`` event after
        the current turn, returned for the live chat (None: nothing changed, or no turn to put it after).
        Refused while a run goes."""
        if self.is_network:
            raise RuntimeError(f"Thread {self.thread_id[:8]} talks to network '{self._thread.robot}': its tasks' "
                               "robots choose their models")
        self._not_running("change the model")
        default = self.default_model()
        previous = self.robot.model
        if not model or (model == default and not api_base):
            model, api_base = None, None
        robot = self._robot_with_model(model, api_base)
        self._robot = robot
        self._robot_from_catalog = True
        return self.record_model(robot.model, previous=previous, api_base=api_base or thread_server(robot),
                                 default=default, chosen=model)

    def record_model(self, model: str | None, *, previous: str | None, api_base: str | None = None,
                     default: str | None = None, chosen: str | bool | None = True) -> ev.ModelChanged | None:
        """Record a switch of the thread's model (the command line builds its robot itself): the metadata says ``chosen`` (True: ``model``; None: the robot's default), and a ``model_changed``
        event goes after the current turn. Returns that event (None: the model did not change, or the
        thread has no turn yet: the metadata alone says it)."""
        from workspace.urls import without_credentials

        keep = model if chosen is True else chosen
        previous_base = self.server or ""
        base = without_credentials(api_base) if api_base else ""
        self._thread = self.store.update_thread_metadata(self.thread_id, model=keep or None, api_base=base or None,
                                                         server_model=model if base and not keep else None)
        if (model or "") == (previous or "") and base == previous_base:
            return None
        turn_id = self._thread.current_turn_id
        if turn_id is None:
            return None
        turn = self.store.get_turn(turn_id)
        event = ev.ModelChanged(run_id=turn.run_id or f"model-{uuid.uuid4().hex[:12]}", robot=self._thread.robot,
                                model=model or "", previous=previous or "",
                                robot_default=default is not None and model == default,
                                api_base=base, previous_api_base=previous_base)
        self.store.append_event(self.thread_id, turn_id, event)
        return event

    @property
    def network(self) -> Network:
        """A network thread's network (loaded on first use; the one of the latest run after a run)."""
        if not self.is_network:
            raise RuntimeError(f"Thread {self.thread_id[:8]} talks to robot '{self._thread.robot}', not a network")
        if self._network is None:
            self._network = self._load_network()
        return self._network

    def _load_network(self) -> Network:
        if self.network_loader is not None:
            return self.network_loader()
        return self.workspace.load_network(self._thread.robot)

    def use_robot(self, robot: Robot) -> None:
        """Talk to ``robot`` from the next message on (another model or provider for the thread's
        robot, as ``/model`` in ``robotlab chat`` does). It must be the thread's robot, by name."""
        if self.is_network:
            raise RuntimeError(f"Thread {self.thread_id[:8]} talks to network '{self._thread.robot}', not a robot")
        if robot.name != self._thread.robot:
            raise ValueError(f"Thread {self.thread_id[:8]} talks to robot '{self._thread.robot}', not "
                             f"'{robot.name}'; start a new thread to talk to another robot")
        self._not_running("change the robot")
        self._robot = robot

    @property
    def network_run(self) -> NetworkRun | None:
        """The latest :class:`~workspace.network.NetworkRun` of a network thread (live task states), or None."""
        run = self.run
        return cast("NetworkRun", run.agent_run) if run is not None and run.is_network else None

    @property
    def running(self) -> bool:
        return self.run is not None and not self.run.done

    def usage(self) -> Usage:
        """Tokens and cost of every run of the thread."""
        return self.store.usage(self.thread_id)

    # -- running ------------------------------------------------------------------------------------
    def send(self, text: str, *, attachments: Iterable[Attachment | str | os.PathLike[str]] | None = None,
             **options: Any) -> RecordedRun:
        """Send a message after the current turn; iterate the returned run for its events.

        ``attachments``: files, images and MCP resources sent with the message
        (:class:`~workspace.attachments.Attachment` objects, or paths inside the opened folder); their
        content is stored once in the thread's database, and sent again with the conversation.
        ``options`` are more run options for ``Robot.stream`` / ``Network.stream`` (template
        parameters, ``max_turns``: values of any kind, as the robot's template takes them); the thread's
        own (approval, folder, changes) are set here.
        """
        if attachments is not None:
            options["attachments"] = attachments
        return self._start(text, self.thread.current_turn_id, options)

    def continue_(self) -> RecordedRun:
        """Ask the model to go on with its last answer, cut off at the token limit (the turn's result has
        ``stop_reason == "length"``): a message of :data:`workspace.agent.CONTINUE_PROMPT` after the
        current turn; the model sees its cut answer in the conversation and continues it."""
        from workspace.agent import CONTINUE_PROMPT

        return self.send(CONTINUE_PROMPT)

    def edit_and_resend(self, turn_id: str, text: str, *,
                        attachments: Iterable[Attachment | str | os.PathLike[str]] | None = None) -> RecordedRun:
        """Send ``text`` in place of turn ``turn_id``'s message: a new sibling branch. ``attachments``: what goes
        with it (as for :meth:`send`; empty: nothing); None: the attachments of turn ``turn_id``'s message."""
        turn = self._own_turn(turn_id)
        options = self._attachments_of(turn_id) if attachments is None else {"attachments": list(attachments)}
        return self._start(text, turn.parent_turn_id, options)

    def regenerate(self, turn_id: str) -> RecordedRun:
        """Ask again: a new sibling of ``turn_id`` with the same message and attachments."""
        turn = self._own_turn(turn_id)
        return self._start(turn.user_text, turn.parent_turn_id, self._attachments_of(turn_id))

    def attachments(self, turn_id: str) -> list[Attachment]:
        """The files, images and resources sent with turn ``turn_id``'s message, with their content."""
        refs = self.store.turn_attachments([turn_id]).get(turn_id) or []
        return self.store.load_attachments(refs)

    def _attachments_of(self, turn_id: str) -> dict[str, Any]:
        found = self.attachments(turn_id)
        return {"attachments": found} if found else {}

    def stop(self, reason: str = "stopped by the user") -> None:
        """Cancel the running run (its stream and tool calls); nothing when idle."""
        if self.run is not None and not self.run.done:
            self.run.cancel(reason)

    def switch_branch(self, turn_id: str) -> TurnInfo:
        """Show the branch through ``turn_id`` (its latest continuation becomes current)."""
        self._not_running("switch branches")
        self._own_turn(turn_id)
        leaf = self.store.set_current(self.thread_id, turn_id)
        self._thread = self.store.get_thread(self.thread_id)
        return leaf

    def _own_turn(self, turn_id: str) -> TurnInfo:
        turn = self.store.get_turn(turn_id)
        if turn.thread_id != self.thread_id:
            raise ValueError(f"Turn {turn_id!r} belongs to another thread")
        return turn

    def _not_running(self, what: str) -> None:
        if self.running:
            raise RuntimeError(f"The thread is running; stop the run (or wait for it) before you {what}")

    def _remember_server(self, robot: Robot) -> None:
        """Keep the server the thread is held with (its first run's, or the one the user switched to), so a
        reopened or continued thread goes on there and not to the hosted provider of the same model prefix."""
        held = self._thread.metadata.get("server_model")
        if self.server is not None and (self.chosen_model or not isinstance(held, str) or held == robot.model):
            return  # (the robot's own model changed in the settings: the thread is held where it goes now)
        base = thread_server(robot)
        if base or self.server is not None:
            model = None if self.chosen_model or not base else robot.model  # the robot's own: which, at that server
            self._thread = self.store.update_thread_metadata(self.thread_id, api_base=base, server_model=model)

    def _start(self, text: str, parent_turn_id: str | None, extra: dict[str, Any] | None = None) -> RecordedRun:
        self._not_running("send another message")
        if not text or not text.strip():
            raise ValueError("The message is empty; type something to send")
        extra = dict(extra or {})
        attachments = self._take_attachments(extra)
        network: Network | None = None
        robot: Robot | None = None
        if self.is_network:
            # A fresh network for every run: its memory starts from the file's values, and lives only inside the
            # run (scratch: its writes are not reviewed, they are never kept).
            network = self._load_network()
            network.memory.scratch = True
        else:
            robot = self.robot
            self._remember_server(robot)
            if robot.bus is not None and robot.bus.name is not None:  # a robot file's ``bus: name``: its peers answer
                from workspace.catalog import bus_peers

                peer_options: dict[str, Any] = {"config": self.workspace.config}
                if self.workspace.provider is not None:
                    peer_options["provider"] = self.workspace.provider
                bus_peers(robot, folder=self.workspace.folder, **peer_options)
        if self.changes is not None:
            # The review outcome of earlier proposals reaches the model in front of this message
            # (stored that way too, so a rebuilt conversation tells the model the same truth).
            from workspace.changes import compose_user_message

            text = compose_user_message(self.changes.take_outcome_message(), text)
        # The conversation along the branch being continued, rebuilt from the store.
        if network is not None:
            histories = self.network_histories(parent_turn_id)
            for bot in _network_robots(network):
                bot.history = list(histories.get(bot.name, []))
            self._restore_compactions(_network_robots(network), parent_turn_id)
        else:
            conversation = self._conversation_to(parent_turn_id)
            history = list(conversation.messages)
            assert robot is not None
            _restore_compaction(robot, conversation.compactions)
        problems: list[str] = []
        turn_id = uuid.uuid4().hex
        try:
            if attachments:  # stored before the message that refers to them
                self.store.save_attachments(attachments)
            self.store.add_turn(self.thread_id, user_text=text, parent_turn_id=parent_turn_id, turn_id=turn_id)
        except StoreError as exc:
            if exc.reason not in ("locked", "io") or not self.store.queued_writes:
                raise
            problems.append(f"could not record the message yet: {exc}")  # kept queued; the run goes on
        if not self._thread.title:
            typed = text
            if text.startswith("<change-review>"):  # (importing workspace.changes only then keeps a first run quick)
                from workspace.changes import split_user_message

                typed = split_user_message(text)[1]
            title = title_from(typed)
            if title:
                try:
                    self._thread = self.store.rename_thread(self.thread_id, title)
                except StoreError as exc:
                    problems.append(f"could not record the title yet: {exc}")
        options: dict[str, Any] = {**extra, "thread_id": self.thread_id, "approval": self.approval}
        if self.workspace.agent_skills and network is None and "agent_skills" not in options:
            from workspace.agent_skills import AgentSkillCatalog

            options["agent_skills"] = AgentSkillCatalog(folder=self.workspace.folder)
        if attachments:
            options["attachments"] = attachments
        if self.workspace.folder is not None:
            options["folder"] = self.workspace.folder
            options["changes"] = self._changes_for_run()
        name = network.name if network is not None else robot.name if robot is not None else self._thread.robot
        on_write = self.workspace.on_memory_write
        if on_write is not None:  # review.memory: ask: proposed writes go to the front end's review
            for bot in _network_robots(network) if network is not None else [robot] if robot is not None else []:
                bot.watch_memory_writes(on_write)
        try:
            if network is not None:
                event_run: EventRun = network.stream(text, **options)
                self._network = network
            else:
                assert robot is not None
                robot.history = history
                event_run = robot.stream(text, **options)
        except Exception as exc:  # the run could not start: keep the message, record why
            with contextlib.suppress(StoreError):
                self.store.append_event(self.thread_id, turn_id, ev.RunFailed(
                    run_id=f"failed-{turn_id}", robot=name, seq=1, error=str(exc) or type(exc).__name__,
                    error_type=type(exc).__name__))
                self.store.finish_turn(turn_id, "failed")
            raise
        def done(finished: RecordedRun) -> None:
            self.workspace._run_done(finished)
            if network is None:
                self._extend_conversation(parent_turn_id, finished)
            if self.changes is None:
                return
            if self.workspace.auto_verify and self._proposed_in(finished):
                with contextlib.suppress(RuntimeError):  # no event loop (a run driven by hand): nothing to verify on
                    self.start_verify("proposed")
            try:  # off the event loop: the snapshot writes the proposed contents to the checkpoint store
                asyncio.get_running_loop().run_in_executor(None, self.save_changes)
            except RuntimeError:
                self.save_changes()

        run = RecordedRun(event_run, store=self.store, thread_id=self.thread_id, turn_id=turn_id, on_done=done)
        for problem in problems:
            run._warn(StoreError(problem))
        self.run = run
        self.workspace._runs.add(run)
        return run

    # -- the conversation kept in memory -------------------------------------------------------------
    def _conversation_to(self, leaf: str | None) -> _Conversation:
        """The conversation along the branch ending at ``leaf``: the one kept, or (another branch, a
        reopened thread) read from the store once."""
        extending, self._extending = self._extending, None
        if extending is not None:
            extending.result()  # the turn that just ended (a read of that turn alone, off the event loop)
        conversation = self._conversation
        if conversation is not None and conversation.leaf == leaf:
            return conversation
        conversation = _Conversation(leaf)
        if leaf is not None:
            conversation.messages = self.store.history_messages(self.thread_id, leaf)
            for _turn, found in self.store.path_events(self.thread_id, leaf, classes=(ev.ContextCompacted,)):
                conversation.compactions += found
        self._conversation = conversation
        return conversation

    async def load_conversation(self) -> None:
        """Read the conversation the next message continues now, off the event loop (a thread just
        opened), so that the first send does not read the thread on the caller's thread."""
        if self.is_network or self._conversation is not None:
            return
        try:
            current = self.thread.current_turn_id
            await asyncio.to_thread(self._read_conversation_kept, current)
        except (StoreError, OSError) as exc:  # the send reads it then, and says what is wrong
            log.info("the conversation of thread %s was not read ahead: %s", self.thread_id, exc)

    def _read_conversation_kept(self, leaf: str | None) -> None:
        """Read the conversation to ``leaf`` with the cyclic garbage collector paused, then frozen with it
        (:func:`workspace.shared_imports.gc_paused`): it lives as long as the thread is open, and a
        collection of the oldest generation walked every message of it (200-400 ms at 10,000 turns, holding
        the interpreter lock) whenever one fell during a send, so a send's cost grew with the thread."""
        from workspace.shared_imports import gc_paused

        with gc_paused():
            self._conversation_to(leaf)

    def _extend_conversation(self, parent_turn_id: str | None, finished: RecordedRun) -> None:
        """After a run of this session ended: the kept conversation grows by its turn (read alone, in a
        worker thread); when the turn is not all in the database yet, the next send reads the thread."""
        kept = self._conversation
        if kept is None or kept.leaf != parent_turn_id:
            return
        if finished.save_error is not None or self.store.queued_writes or self.store.closed:
            self._conversation = None
            return
        turn_id = finished.turn_id

        def extend() -> None:
            try:
                turn = self.store.get_turn(turn_id)
                messages = self.store.turn_messages([turn])
                compactions = self.store.events_of([turn_id], (ev.ContextCompacted,))[turn_id]
            except Exception as exc:  # the next send reads the thread instead
                if not self.store.closed:
                    log.warning("the conversation of thread %s could not be extended: %s", self.thread_id,
                                exc)
                if self._conversation is kept:
                    self._conversation = None
                return
            if self._conversation is kept:
                self._conversation = _Conversation(turn_id, kept.messages + messages, kept.compactions + compactions)

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop to keep free (a script): now
            extend()
            return
        self._extending = _reader().submit(extend)

    def _take_attachments(self, extra: dict[str, Any]) -> list[Attachment]:
        """The ``attachments`` option, read (paths inside the opened folder) and checked before anything is
        recorded: a file that cannot be attached raises, and the message is not sent."""
        given = extra.pop("attachments", None)
        if not given:
            return []
        from workspace.attachments import AttachmentError, AttachmentLimits, coerce_attachments

        if self.is_network:
            raise AttachmentError("Attachments go to a robot's thread; a network's tasks get their messages from "
                                  "the network. Send the message without attachments, or open a robot's thread")
        return coerce_attachments(given, folder=self.workspace.folder,
                                  limits=AttachmentLimits.from_config(self.workspace.config))

    def network_histories(self, leaf_turn_id: str | None) -> dict[str, list[Message]]:
        """Each robot's conversation along the branch ending at ``leaf_turn_id`` (a network thread).

        For every task a turn ran: the message the task received, then what its robot answered
        (from the task's result, or from its events when the run never finished), in the order
        the tasks started. Keyed by robot name; robots that never ran are left out.
        """
        if not leaf_turn_id:
            return {}
        from workspace.messages import TextMessage
        from workspace.persistence import conversation_from_events, conversation_from_result
        from workspace.result import RobotResult

        histories: dict[str, list[Message]] = {}
        for _turn, events in self.store.path_events(self.thread_id, leaf_turn_id):
            started: dict[str, ev.Event] = {}
            own: dict[str, list[ev.Event]] = {}
            results: dict[str, Any] = {}
            top = events[0].run_id if events else ""
            for event in events:
                task = event.task
                if task is None or event.parent_run_id not in (None, top):
                    continue  # not a task's own event (a robot used as a tool inside it)
                if isinstance(event, ev.TaskStarted):
                    started.setdefault(task, event)
                elif isinstance(event, ev.TaskFinished):
                    results[task] = event.result
                elif not event.terminal:
                    own.setdefault(task, []).append(event)
            for task, first in started.items():
                messages = histories.setdefault(first.robot, [])
                message = getattr(first, "message", "")
                if message:
                    messages.append(TextMessage(role="user", content=message))
                value = results.get(task)
                if isinstance(value, dict):
                    try:
                        value = RobotResult.from_dict(value)
                    except (KeyError, TypeError, ValueError):
                        value = None
                if isinstance(value, RobotResult):
                    messages += conversation_from_result(value)
                else:
                    messages += conversation_from_events(coalesce_text(own.get(task, [])))
        return histories

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
        self._verify_task = task
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

    # -- reading ------------------------------------------------------------------------------------
    def transcript(self, leaf_turn_id: str | None = None) -> list[TurnView]:
        """The turns of the current branch (or the one ending at ``leaf_turn_id``), root first."""
        pairs = self.store.path_events(self.thread_id, leaf_turn_id)
        if not pairs:
            return []
        branches = self.store.branch_map(self.thread_id)
        views = []
        for turn, events in pairs:
            siblings = branches.get(turn.parent_turn_id, [turn.id])
            index = siblings.index(turn.id) if turn.id in siblings else 0
            views.append(TurnView(turn, coalesce_text(events), index, len(siblings), tuple(siblings)))
        return views

    def current_turn_place(self) -> tuple[str, int, int] | None:
        """The current turn's id, its 0-based index among its siblings and their count (what the last turn
        of :meth:`transcript` says), read from the turns table alone: two indexed queries, not the branch's
        events, so it costs the same in a thread of any length. None when the thread has no turn yet."""
        current = self.thread.current_turn_id
        if current is None:
            return None
        siblings = [turn.id for turn in self.store.siblings(current)]
        return current, siblings.index(current) if current in siblings else 0, max(1, len(siblings))

    def history(self) -> list[Message]:
        """The conversation the next message continues (what the robot will be given)."""
        current = self.thread.current_turn_id
        return self.store.history_messages(self.thread_id, current) if current else []

    # -- the context window ---------------------------------------------------------------------------
    def model_messages(self) -> list[Message]:
        """The conversation as the model is sent it next: the summary of a compaction in place of the
        messages it stands for (they stay in the thread: :meth:`history`, the transcript, search)."""
        robot = self.robot
        conversation = self._conversation_to(self.thread.current_turn_id)
        _restore_compaction(robot, conversation.compactions)
        return robot.context_manager.messages_for_model(list(conversation.messages))

    async def compact(self) -> ev.ContextCompacted | None:
        """Summarise the conversation before its latest turn now (``/compact``): the model is sent the
        summary in their place from the next message on. The ``context_compacted`` event is recorded on
        the current turn (the chat shows its marker); every message stays in the thread. None: nothing
        to compact."""
        self._not_running("compact the conversation")
        if self.is_network:
            raise RuntimeError("A network thread is compacted by its robots as they need it; /compact works in "
                               "a robot's thread")
        current = self.thread.current_turn_id
        if current is None:
            return None
        robot = self.robot
        conversation = self._conversation_to(current)
        robot.history = list(conversation.messages)
        _restore_compaction(robot, conversation.compactions)
        event = await robot.compact()
        for spent in robot.context_manager.take_usage():  # the summary's tokens count in the thread's usage
            self.store.append_event(self.thread_id, current, ev.Usage(
                run_id=event.run_id if event is not None else "compact", robot=robot.name,
                input_tokens=spent.input_tokens, output_tokens=spent.output_tokens, cost=spent.cost,
                total_input_tokens=spent.input_tokens, total_output_tokens=spent.output_tokens,
                total_cost=spent.cost, model=spent.model))
        if event is not None:
            self.store.append_event(self.thread_id, current, event)
            if self._conversation is conversation:  # the kept conversation's branch holds it now
                conversation.compactions.append(event)
        return event

    def context_usage(self) -> ev.ContextUsage | None:
        """The last count of the context window along the current branch (for the meter), or None."""
        current = self.thread.current_turn_id
        if current is None:
            return None
        found: ev.ContextUsage | None = None
        for _turn, events in self.store.path_events(self.thread_id, current, classes=(ev.ContextUsage,)):
            for event in events:
                if isinstance(event, ev.ContextUsage):
                    found = event
        return found

    def _restore_compactions(self, robots: list[Robot], leaf_turn_id: str | None) -> None:
        """Each robot takes up its latest compaction along the branch ending at ``leaf_turn_id``."""
        from workspace.context import Compaction
        from workspace.persistence import latest_compaction

        events: list[ev.Event] = []
        if leaf_turn_id:
            for _turn, found in self.store.path_events(self.thread_id, leaf_turn_id, classes=(ev.ContextCompacted,)):
                events += found
        for robot in robots:
            latest = latest_compaction(events, robot.name)
            robot.context_manager.restore(Compaction(latest.summary, latest.replaced_count) if latest else None)

    def __repr__(self) -> str:
        return f"<ThreadSession {self.thread_id[:8]} {self._thread.kind}={self._thread.robot!r}>"


_READER: ThreadPoolExecutor | None = None


def _reader() -> ThreadPoolExecutor:
    """The worker that reads a finished turn into its session's conversation (one: reads queue in order)."""
    global _READER
    if _READER is None:
        _READER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="conversation")
    return _READER


def _restore_compaction(robot: Robot, compactions: list[ev.Event]) -> None:
    """The robot takes up its latest compaction among ``compactions`` (none: the whole conversation)."""
    from workspace.context import Compaction
    from workspace.persistence import latest_compaction

    latest = latest_compaction(compactions, robot.name)
    robot.context_manager.restore(Compaction(latest.summary, latest.replaced_count) if latest else None)


def _network_robots(network: Network) -> list[Robot]:
    """The network's robots, each once (one robot may serve several tasks)."""
    return list({id(t.robot): t.robot for t in network.tasks.values()}.values())




__all__ = ["ThreadSession"]
