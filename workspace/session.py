"""The Qt-free composition root: a :class:`Workspace` of threads, each a :class:`ThreadSession`.

The desktop (and tests, and scripts) drive everything through these three classes:

* :class:`Workspace` owns the configuration, the :class:`~workspace.persistence.Store`, the approval
  gate and, optionally, a provider every robot uses (tests pass a ``ScriptedProvider``).
* :class:`ThreadSession` is one conversation: ``send``, ``edit_and_resend``, ``regenerate``,
  ``switch_branch``, ``transcript``, ``stop``. Before each run the robot's ``history`` is rebuilt
  from the store along the branch being continued, so a resumed thread (after a restart, or on
  another branch) gives the model a valid conversation.
* :class:`RecordedRun` wraps an :class:`~workspace.agent.AgentRun` (a robot thread) or a
  :class:`~workspace.network.NetworkRun` (a network thread: any ``EventRun``). A recording task
  consumes the run and appends every event to the store *as it happens*, before anyone sees it; async
  iterating the RecordedRun yields the same events (from the start, however late you begin, and
  any number of times). Stopping iteration does not stop the run or its recording: call
  :meth:`RecordedRun.cancel` (or :meth:`ThreadSession.stop`) for that; the ``run_cancelled``
  event is recorded too. If the database cannot be written (disk full, locked), the run goes
  on: the failure is logged once per run and kept in :attr:`RecordedRun.recording_errors`.

Network threads (``Workspace.new_network_thread(name)``, kind ``"network"``; the thread's
``robot`` column holds the network's name) run a network for each message. Every run gets a
freshly loaded network, so its shared memory starts from the network file's initial values and
a ``wait_for`` never sees a value of an earlier run. Each robot of the network keeps its own
conversation across the thread's turns: before a run, every robot's ``history`` is rebuilt from
the store along the branch being continued (the messages its tasks received and what it
answered, tool calls included), exactly as for a robot thread. Edit-and-resend and regenerate
start a new network run after the turn's parent.

All store calls are short synchronous SQLite transactions on the event-loop thread (see
:mod:`workspace.persistence`); text deltas are held in memory and written every 250 ms at most, by a
timer armed here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.approval import Action, ApprovalDecision, ApprovalGate, ApprovalRequest
from workspace.persistence import Store, StoreError, ThreadInfo, TurnInfo, coalesce_text, status_for
from workspace.result import Usage

if TYPE_CHECKING:
    from workspace.agent import EventRun
    from workspace.attachments import Attachment
    from workspace.catalog import RobotInfo
    from workspace.changes import InterruptedApply, RecoveryResult
    from workspace.config import Config
    from workspace.messages import Message
    from workspace.network import Network, NetworkInfo
    from workspace.providers.base import Provider
    from workspace.result import RobotResult
    from workspace.robot import Robot

log = logging.getLogger("workspace.session")

__all__ = ["RecordedRun", "ThreadSession", "TurnView", "Workspace", "title_from"]

TITLE_LENGTH = 60


def title_from(text: str, limit: int = TITLE_LENGTH) -> str | None:
    """A thread title from the first user message: its first line, cut at a word near ``limit``."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    if not line:
        return None
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0]
    if len(cut) < limit // 2:
        cut = line[:limit]
    return cut.rstrip(" ,.;:-") + "…"


@dataclass(frozen=True, slots=True)
class TurnView:
    """One turn of the transcript: the turn, its events (text deltas coalesced into ``text``) and
    where it sits among its siblings (``sibling_index`` is 0-based: show ``index + 1 / count``)."""

    turn: TurnInfo
    events: list[ev.Event]
    sibling_index: int
    sibling_count: int
    #: The siblings' turn ids, oldest first (for "< 2/3 >": switch_branch(sibling_ids[i]).
    sibling_ids: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.turn.id

    @property
    def user_text(self) -> str:
        return self.turn.user_text

    @property
    def status(self) -> str:
        return self.turn.status

    @property
    def text(self) -> str:
        """All the robot's text of the turn, joined by blank lines."""
        return "\n\n".join(e.text for e in self.events if isinstance(e, ev.Text) and e.text)

    @property
    def usage(self) -> Usage:
        return self.turn.usage

    @property
    def previous_sibling(self) -> str | None:
        return self.sibling_ids[self.sibling_index - 1] if self.sibling_index > 0 else None

    @property
    def next_sibling(self) -> str | None:
        i = self.sibling_index + 1
        return self.sibling_ids[i] if i < len(self.sibling_ids) else None


class RecordedRun:
    """A run (AgentRun or NetworkRun) whose events are stored as they happen; iterate it for the
    same events. ``agent_run`` is the wrapped run, whatever its kind."""

    def __init__(
        self,
        run: EventRun,
        *,
        store: Store,
        thread_id: str,
        turn_id: str,
        on_done: Callable[[RecordedRun], None] | None = None,
    ) -> None:
        self.agent_run = run
        self.store = store
        self.thread_id = thread_id
        self.turn_id = turn_id
        self.run_id: str = str(getattr(run, "run_id", ""))  # AgentRun and NetworkRun both have one
        #: Every event so far, in order.
        self.events: list[ev.Event] = []
        #: Messages about events that could not be stored (the run went on regardless).
        self.recording_errors: list[str] = []
        self._on_done = on_done
        self._task: asyncio.Task[None] | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._finished = False
        self._timer: asyncio.TimerHandle | None = None
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop()
            self.start()

    # -- public ---------------------------------------------------------------------------------
    def start(self) -> RecordedRun:
        """Start the run and its recording (done on creation when an event loop is running)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._record_all(),
                                                                name=f"record-{self.run_id[:8]}")
        return self

    def cancel(self, reason: str = "stopped by the user") -> None:
        """Stop the run (stream and tool calls); its ``run_cancelled`` event is still recorded."""
        self.agent_run.cancel(reason)

    @property
    def done(self) -> bool:
        """True once the terminal event has been recorded (or recording ended)."""
        return self._finished

    @property
    def terminal(self) -> ev.Event | None:
        """The run's own terminal event once recorded (not the end of a run inside it)."""
        last = self.events[-1] if self.events else None
        return last if last is not None and ev.ends(last, self.run_id) else None

    @property
    def status(self) -> str:
        terminal = self.terminal
        if terminal is not None:
            return status_for(terminal)
        return "interrupted" if self._finished else "running"

    @property
    def result(self) -> RobotResult | None:
        """The run's RobotResult once it ended (the partial one after a stop or failure); for a
        network run its :class:`~workspace.network.NetworkResult`."""
        result: RobotResult | None = getattr(self.agent_run, "result", None)
        return result

    @property
    def is_network(self) -> bool:
        return hasattr(self.agent_run, "tasks")

    @property
    def tasks(self) -> dict[str, Any]:
        """A network run's live task states (``TaskState`` by task name); empty for a robot run."""
        return dict(getattr(self.agent_run, "tasks", None) or {})

    async def wait(self) -> ev.Event | None:
        """Wait for the end of the run and its recording; the terminal event."""
        task = self.start()._task
        assert task is not None
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not task.done() or (current is not None and current.cancelling()):
                raise  # we were cancelled (also when the recording ended at the same moment), not the recording
        return self.terminal

    def __aiter__(self) -> AsyncIterator[ev.Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ev.Event]:
        self.start()
        index = 0
        while True:
            while index < len(self.events):
                event = self.events[index]
                index += 1
                yield event
                if ev.ends(event, self.run_id):
                    return
            if self._finished:
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    # -- recording --------------------------------------------------------------------------------
    async def _record_all(self) -> None:
        try:
            async for event in self.agent_run:
                self._record(event)
                self._publish(event)
        except asyncio.CancelledError:
            # The workspace is shutting down: the AgentRun was cancelled by our iteration ending.
            terminal = self.agent_run.terminal
            if terminal is not None and self.terminal is None:
                self._record(terminal)
                self._publish(terminal)
            raise
        finally:
            self._finish()

    def _record(self, event: ev.Event) -> None:
        store = self.store
        try:
            store.append_event(self.thread_id, self.turn_id, event)
            if ev.ends(event, self.run_id):  # a run inside this one (a task, a robot as a tool) ends too
                store.finish_turn(self.turn_id, status_for(event))
        except (StoreError, OSError) as exc:
            self._warn(exc)
        if (isinstance(event, ev.TextDelta | ev.ReasoningDelta) and self._timer is None and store.flush_interval > 0
                and not store.closed):
            self._timer = asyncio.get_running_loop().call_later(store.flush_interval, self._flush_timer)

    def _flush_timer(self) -> None:
        self._timer = None
        try:
            self.store.flush(self.turn_id)
        except (StoreError, OSError) as exc:
            self._warn(exc)

    def _warn(self, exc: Exception) -> None:
        message = f"could not record an event of run {self.run_id[:8]} in thread {self.thread_id[:8]}: {exc}"
        closed = isinstance(exc, StoreError) and exc.reason == "closed"
        if not self.recording_errors and not closed:
            log.warning("%s (the run goes on; later failures of this run are not logged again)", message)
        self.recording_errors.append(message)

    def _publish(self, event: ev.Event) -> None:
        self.events.append(event)
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _finish(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.store.closed:
            try:
                self.store.flush(self.turn_id)
            except (StoreError, OSError) as exc:
                self._warn(exc)
        self._finished = True
        self._wake()
        if self._on_done is not None:
            try:
                self._on_done(self)
            except Exception:  # a callback must never break recording
                log.exception("RecordedRun on_done callback failed")

    def __repr__(self) -> str:
        return f"<RecordedRun {self.run_id[:8]} thread={self.thread_id[:8]} {self.status}>"


class _ThreadGate(ApprovalGate):
    """The workspace's policy and way of asking, with "this thread" grants kept per thread."""

    def __init__(self, shared: ApprovalGate) -> None:
        super().__init__(shared.policy, shared.ask_fn)
        self._shared = shared

    def decide(self, request: ApprovalRequest) -> Action:
        self.policy = self._shared.policy
        return super().decide(request)

    async def adecide(self, request: ApprovalRequest) -> Action | ApprovalDecision:
        if self._key(request) not in self._thread_grants and type(self._shared).adecide is not ApprovalGate.adecide:
            return await self._shared.adecide(request)  # a gate that decides in its own way (a function)
        return self.decide(request)

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.policy = self._shared.policy
        self.ask_fn = self._shared.ask_fn
        return await super().ask(request)


def _hosted_past_local(model: str, config: Any) -> bool:
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


class _WithoutApiBase:
    """A configuration lookup without ``llm.api_base`` (for a hosted model chosen beside a local server)."""

    def __init__(self, config: Any) -> None:
        self._config = config

    def get(self, key: str, default: Any = None) -> Any:
        return default if key == "llm.api_base" else self._config.get(key, default)


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
        self.changes: Any = None
        #: How a network thread gets a fresh network for each run (default: the workspace's
        #: ``load_network`` of the thread's network name). The command line sets it for a network
        #: given as a file, with its --model and --api-base.
        self.network_loader: Callable[[], Network] | None = None
        #: The workspace's configuration changed since the robot was built (Workspace.set_config).
        self._stale_config = False
        self._robot_from_catalog = False

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
            self._robot = self._robot_with_model(self.chosen_model, self._thread.metadata.get("api_base"))
            self._robot_from_catalog = True
        return self._robot

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

    def _robot_with_model(self, model: str | None, api_base: Any = None) -> Robot:
        """The catalog's robot, with ``model`` (and the server ``api_base``) when given."""
        if not model:
            return self.workspace.load_robot(self._thread.robot)
        base = str(api_base) if isinstance(api_base, str) and api_base else None
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
        return self.record_model(robot.model, previous=previous, api_base=api_base, default=default,
                                 chosen=model)

    def record_model(self, model: str | None, *, previous: str | None, api_base: str | None = None,
                     default: str | None = None, chosen: str | bool | None = True) -> ev.ModelChanged | None:
        """Record a switch of the thread's model (the command line builds its robot itself): the metadata says ``chosen`` (True: ``model``; None: the robot's default), and a ``model_changed``
        event goes after the current turn. Returns that event (None: the model did not change, or the
        thread has no turn yet: the metadata alone says it)."""
        keep = model if chosen is True else chosen
        self._thread = self.store.update_thread_metadata(self.thread_id, model=keep or None,
                                                         api_base=api_base if keep else None)
        if (model or "") == (previous or ""):
            return None
        turn_id = self._thread.current_turn_id
        if turn_id is None:
            return None
        turn = self.store.get_turn(turn_id)
        event = ev.ModelChanged(run_id=turn.run_id or f"model-{uuid.uuid4().hex[:12]}", robot=self._thread.robot,
                                model=model or "", previous=previous or "",
                                robot_default=default is not None and model == default)
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
    def network_run(self) -> Any:
        """The latest :class:`~workspace.network.NetworkRun` of a network thread (live task states), or None."""
        run = self.run
        return run.agent_run if run is not None and run.is_network else None

    @property
    def running(self) -> bool:
        return self.run is not None and not self.run.done

    def usage(self) -> Usage:
        """Tokens and cost of every run of the thread."""
        return self.store.usage(self.thread_id)

    # -- running ------------------------------------------------------------------------------------
    def send(self, text: str, **options: Any) -> RecordedRun:
        """Send a message after the current turn; iterate the returned run for its events.

        ``options`` are more run options for ``Robot.stream`` / ``Network.stream`` (template
        parameters, ``max_turns``); the thread's own (approval, folder, changes) are set here.
        ``attachments``: files, images and MCP resources sent with the message
        (:class:`~workspace.attachments.Attachment` objects, or paths inside the opened folder); their
        content is stored once in the thread's database, and sent again with the conversation.
        """
        return self._start(text, self.thread.current_turn_id, options)

    def continue_(self) -> RecordedRun:
        """Ask the model to go on with its last answer, cut off at the token limit (the turn's result has
        ``stop_reason == "length"``): a message of :data:`workspace.agent.CONTINUE_PROMPT` after the
        current turn; the model sees its cut answer in the conversation and continues it."""
        from workspace.agent import CONTINUE_PROMPT

        return self.send(CONTINUE_PROMPT)

    def edit_and_resend(self, turn_id: str, text: str) -> RecordedRun:
        """Send ``text`` in place of turn ``turn_id``'s message (with its attachments): a new sibling branch."""
        turn = self._own_turn(turn_id)
        return self._start(text, turn.parent_turn_id, self._attachments_of(turn_id))

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

    def _start(self, text: str, parent_turn_id: str | None, extra: dict[str, Any] | None = None) -> RecordedRun:
        self._not_running("send another message")
        if not text or not text.strip():
            raise ValueError("The message is empty; type something to send")
        extra = dict(extra or {})
        attachments = self._take_attachments(extra)
        network: Network | None = None
        robot: Robot | None = None
        if self.is_network:
            # A fresh network for every run: its memory starts from the file's values.
            network = self._load_network()
        else:
            robot = self.robot
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
            history = self.store.history_messages(self.thread_id, parent_turn_id) if parent_turn_id else []
            assert robot is not None
            self._restore_compactions([robot], parent_turn_id)
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
        if attachments:
            options["attachments"] = attachments
        if self.workspace.folder is not None:
            options["folder"] = self.workspace.folder
            options["changes"] = self._changes_for_run()
        name = network.name if network is not None else robot.name if robot is not None else self._thread.robot
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
            if self.changes is None:
                return
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

    def _take_attachments(self, extra: dict[str, Any]) -> list[Attachment]:
        """The ``attachments`` option, read (paths inside the opened folder) and checked before anything is
        recorded: a file that cannot be attached raises, and the message is not sent."""
        given = extra.pop("attachments", None)
        if not given:
            return []
        from workspace.attachments import AttachmentError, coerce_attachments

        if self.is_network:
            raise AttachmentError("Attachments go to a robot's thread; a network's tasks get their messages from "
                                  "the network. Send the message without attachments, or open a robot's thread")
        return coerce_attachments(given, folder=self.workspace.folder)

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
    def _changes_for_run(self) -> Any:
        """The thread's change set; a fresh one once everything proposed so far is settled."""
        from workspace.changes import ChangeSet

        current = self.changes
        if current is not None and Path(current.folder) != self.workspace.folder:
            self.save_changes()  # kept for its own folder
            current = None
        if current is None or (not current.pending_files and not current.has_undelivered_outcome):
            mode = str(self.workspace.config.get("review.mode", "review"))
            assert self.workspace.folder is not None
            self.changes = ChangeSet(self.workspace.folder, mode=mode, thread_id=self.thread_id)
        return self.changes

    async def apply_changes(self, **options: Any) -> Any:
        """Apply the decided hunks (off the event loop) and record the ``change_decided`` event.

        Options are those of :meth:`workspace.changes.ChangeSet.apply`. The model hears the
        outcome in front of the next message sent in this thread.
        """
        import asyncio

        if self.changes is None:
            raise RuntimeError("Nothing to apply: no change was proposed in this thread")
        result = await asyncio.to_thread(self.changes.apply, **options)
        # The thread's current turn as stored now: another window or a branch switch may have moved it.
        turn_id = self.thread.current_turn_id
        if turn_id is not None and result.settled:
            with contextlib.suppress(StoreError):
                self.store.append_event(self.thread_id, turn_id, self.changes.decided_event())
        await asyncio.to_thread(self.save_changes)
        return result

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

    def change_history(self) -> Any:
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

    def history(self) -> list[Any]:
        """The conversation the next message continues (what the robot will be given)."""
        current = self.thread.current_turn_id
        return self.store.history_messages(self.thread_id, current) if current else []

    # -- the context window ---------------------------------------------------------------------------
    def model_messages(self) -> list[Message]:
        """The conversation as the model is sent it next: the summary of a compaction in place of the
        messages it stands for (they stay in the thread: :meth:`history`, the transcript, search)."""
        robot = self.robot
        current = self.thread.current_turn_id
        history = self.history()
        self._restore_compactions([robot], current)
        return robot.context_manager.messages_for_model(history)

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
        robot.history = self.store.history_messages(self.thread_id, current)
        self._restore_compactions([robot], current)
        event = await robot.compact()
        for spent in robot.context_manager.take_usage():  # the summary's tokens count in the thread's usage
            self.store.append_event(self.thread_id, current, ev.Usage(
                run_id=event.run_id if event is not None else "compact", robot=robot.name,
                input_tokens=spent.input_tokens, output_tokens=spent.output_tokens, cost=spent.cost,
                total_input_tokens=spent.input_tokens, total_output_tokens=spent.output_tokens,
                total_cost=spent.cost, model=spent.model))
        if event is not None:
            self.store.append_event(self.thread_id, current, event)
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


def _network_robots(network: Network) -> list[Robot]:
    """The network's robots, each once (one robot may serve several tasks)."""
    return list({id(t.robot): t.robot for t in network.tasks.values()}.values())


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
        self._sessions: dict[str, ThreadSession] = {}
        self._runs: set[RecordedRun] = set()

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
        thread or store: run it in a worker thread. Returns the library loaded (None: none)."""
        from workspace.providers import preload
        from workspace.providers.registry import factories
        from workspace.tools import registry

        factories()  # reads the entry points of installed provider plugins once
        robot = self.load_robot(robot_name)
        robot.render_system({"message": ""})
        for item in registry.builtin_tools():
            item.spec()
        if self.provider is not None:
            return None
        return preload(robot.model, robot.api_base, self.config)

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

    # -- closing ------------------------------------------------------------------------------------
    def close(self) -> None:
        """Cancel running runs and close the store, also one passed in (their turns are marked
        ``interrupted`` unless they recorded their end already).

        Prefer ``await aclose()`` inside an event loop: it lets the runs record their
        ``run_cancelled`` event first.
        """
        for run in list(self._runs):
            run.cancel("the workspace was closed")
        for session in self._sessions.values():
            session.save_changes()  # review decisions made since the last run or apply
        self.store.close()

    async def aclose(self, timeout: float = 5.0) -> None:
        """Cancel running runs, wait (up to ``timeout`` s) for them to record their end, close."""
        runs = list(self._runs)
        for run in runs:
            run.cancel("the workspace was closed")
        tasks = [r._task for r in runs if r._task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        self.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
