"""Recording a run as it happens (:class:`RecordedRun`), the turns as the transcript shows them (:class:`TurnView`), thread titles."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.persistence import Store, StoreError, TurnInfo, status_for
from workspace.result import Usage

if TYPE_CHECKING:
    from workspace.agent import EventRun
    from workspace.result import RobotResult

log = logging.getLogger("workspace.session")


TITLE_LENGTH = 60
#: How the thread (the window's live view, the command line) says the run's end is not in the database.
NOT_SAVED = "The end of the run could not be saved"


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
        #: Why the run's end (its terminal event, the turn's status, text held before it) could not be
        #: written to the database (a full disk, a database locked too long); None when it was. The
        #: thread says so in a ``run_status`` notice just before the terminal event; ``robotlab run``
        #: exits with ``EXIT_NOT_SAVED``. The rows stay queued in memory and are written with the next
        #: write, or on closing, if the database is writable by then.
        self.save_error: str | None = None
        self._first_error: str | None = None
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
                saved = self._record(event)
                if ev.ends(event, self.run_id):
                    self._check_end_saved(event, saved)
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

    def _record(self, event: ev.Event) -> bool:
        """Store ``event``; False when it could not be (kept in memory by the store, or lost)."""
        store = self.store
        saved = True
        try:
            store.append_event(self.thread_id, self.turn_id, event)
            if ev.ends(event, self.run_id):  # a run inside this one (a task, a robot as a tool) ends too
                store.finish_turn(self.turn_id, status_for(event))
        except (StoreError, OSError) as exc:
            saved = False
            self._warn(exc)
        if (isinstance(event, ev.TextDelta | ev.ReasoningDelta) and self._timer is None and store.flush_interval > 0
                and not store.closed):
            self._timer = asyncio.get_running_loop().call_later(store.flush_interval, self._flush_timer)
        return saved

    def _check_end_saved(self, terminal: ev.Event, saved: bool) -> None:
        """After the run's terminal event was recorded: if it (or what came before it) is not in the
        database, say so in the thread, before the terminal event, with the first error's reason."""
        if saved and not self.store.queued_writes:
            return
        reason = self._first_error or "the database could not be written"
        self.save_error = reason
        log.error("%s (run %s, thread %s): %s", NOT_SAVED, self.run_id[:8], self.thread_id[:8], reason)
        self._publish(ev.RunStatus(run_id=terminal.run_id, robot=terminal.robot, seq=terminal.seq, task=terminal.task,
                                   state="notice", detail=f"{NOT_SAVED}: {reason}"))

    def _flush_timer(self) -> None:
        self._timer = None
        try:
            self.store.flush(self.turn_id, whole=False)  # (a word being written, maybe a key's start, is held on)
        except (StoreError, OSError) as exc:
            self._warn(exc)

    def _warn(self, exc: Exception) -> None:
        message = f"could not record an event of run {self.run_id[:8]} in thread {self.thread_id[:8]}: {exc}"
        if self._first_error is None:
            self._first_error = str(exc)  # the cause (a full disk); later writes only say "unavailable"
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



__all__ = ["NOT_SAVED", "TITLE_LENGTH", "RecordedRun", "TurnView", "title_from"]
