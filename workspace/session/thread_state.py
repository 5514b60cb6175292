"""What every part of a :class:`~workspace.session.thread.ThreadSession` shares: the thread as stored, its
robot or network and the model it talks to, whether a run goes; the thread's approval gate."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from workspace import events as ev
from workspace.approval import Action, ApprovalDecision, ApprovalGate, ApprovalRequest, AskFn
from workspace.persistence import ThreadInfo, TurnInfo
from workspace.result import Usage
from workspace.session.recording import RecordedRun

if TYPE_CHECKING:
    from workspace.changes import ChangeSet
    from workspace.messages import Message
    from workspace.network import Network, NetworkRun
    from workspace.providers.base import ConfigLookup
    from workspace.robot import Robot
    from workspace.session.verify import VerifyProgress
    from workspace.session.workspace import Workspace


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
    :meth:`Store.history_messages` gives it, and the ``context_compacted`` events along that branch.

    A send lends :attr:`messages` to its run as the robot's history (a copy of 20,000 messages at every send
    cost the window's thread more at turn 10,000 than at turn 100): the run appends its messages to the same
    list, and when it ends its turn as the store keeps it takes their place (:meth:`lend`,
    :meth:`ThreadHistory._extend_conversation`).
    :meth:`intact` tells whether the list still holds the conversation and nothing else."""

    leaf: str | None
    messages: list[Message] = field(default_factory=list)
    compactions: list[ev.Event] = field(default_factory=list)
    #: How many of :attr:`messages` are the conversation's, and the last of them (None: not sealed yet).
    size: int | None = None
    last: Message | None = None
    #: Whether a run holds :attr:`messages` as its history now (it appends to them).
    lent: bool = False

    def seal(self) -> _Conversation:
        """The conversation is :attr:`messages` as they are now."""
        self.size, self.last = len(self.messages), self.messages[-1] if self.messages else None
        return self

    def intact(self) -> bool:
        """Whether :attr:`messages` holds the sealed conversation alone: not lent to a run, and not changed since
        by anyone holding the list (a robot's history cleared or compressed in place)."""
        return not self.lent and self.size == len(self.messages) and self.begins_as_sealed()

    def begins_as_sealed(self) -> bool:
        """Whether :attr:`messages` still begins with the sealed conversation (its length reached, its last message
        where it was): a run lent them appended its own after it, nobody cleared or compressed them in place."""
        messages, size = self.messages, self.size
        return size is not None and len(messages) >= size and (messages[size - 1] if size else None) is self.last

    def lend(self) -> list[Message]:
        """:attr:`messages`, for a run to append its own to (see :meth:`ThreadHistory._extend_conversation`)."""
        self.lent = True
        return self.messages


class ThreadState:
    """One conversation thread's state: the thread, its robot or network, its model and server, its run.
    :class:`~workspace.session.thread.ThreadSession` is this with its history, its changes and its sends."""

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
        #: The files of the proposal the last ↻ or edit & resend discarded (the new branch starts from the folder).
        self.superseded: list[str] = []
        #: Of a change set that mixed an earlier turn's proposals with the replaced answer's: the files it keeps for
        #: review (only earlier turns proposed them), and those of :attr:`superseded` an earlier turn had proposed to
        #: as well (one composed change per file: discarded whole, and the model told).
        self.superseded_kept: list[str] = []
        self.superseded_mixed: list[str] = []
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
        #: The read of :meth:`load_conversation` under way (a thread opened again while it goes on waits for it).
        self._reading_ahead: asyncio.Future[None] | None = None
        #: The thread's verify going now or last finished (:meth:`start_verify`), and its task while it runs.
        self.verifying: VerifyProgress | None = None
        self._verify_task: asyncio.Task[ev.VerifyFinished | None] | None = None
        #: The task of the last verify :meth:`start_verify` started (kept once it ended): a comparison takes its
        #: result for the candidate's mark instead of running the command again.
        self.last_verify: asyncio.Task[ev.VerifyFinished | None] | None = None

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
