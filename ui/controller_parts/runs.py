"""The runs the window's session model follows, in every thread: each run started is watched to its end (its
state for the sidebar and the status bar: streaming, waiting for an approval or a review, finished or failed until
seen), the open thread's run is fed to the bridge, and runs are stopped by thread or all at once (quitting).
A link of the chain of classes :class:`ui.controller.Controller` is made of (``ui/controller_parts/``)."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from ui.controller_parts.approvals import ApprovalsAndLearning

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, AsyncIterator

    from workspace import events as ev
    from workspace.session import RecordedRun

log = logging.getLogger("ui.controller")


class RunFollowing(ApprovalsAndLearning):
    """Following runs: watched to their end, shown, stopped."""

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
            self._watch_delegations(run.thread_id, run.turn_id)

    def _watch_delegations(self, thread_id: str, turn_id: str) -> None:
        """What the run's robots delegated in the background and still runs after it (the run of ``turn_id``
        ended): its end is told (:attr:`background_changed`, :attr:`run_states_changed`), so the message box's
        Stop and the sidebar's "working in the background" show while it runs, and no longer."""
        from workspace.delegation import running_delegations

        for future in running_delegations(thread_id):
            if id(future) in self._delegations_watched:
                continue
            self._delegations_watched.add(id(future))
            self._delegating.setdefault(thread_id, {})[id(future)] = turn_id

            def ended(done: object) -> None:
                self._delegations_watched.discard(id(done))
                turns = self._delegating.get(thread_id)
                if turns is not None:
                    turns.pop(id(done), None)
                    if not turns:
                        del self._delegating[thread_id]
                with contextlib.suppress(RuntimeError):  # the window closed before the delegate ended
                    self.background_changed.emit()
                    self.run_states_changed.emit()

            future.add_done_callback(ended)
        self.background_changed.emit()
        self.run_states_changed.emit()

    def delegations_running(self, thread_id: str | None) -> list[str]:
        """The robots still doing what the robots of ``thread_id`` delegated to them in the background."""
        from workspace.delegation import running_delegations

        return [f.robot_name for f in running_delegations(thread_id)] if thread_id else []

    def delegations_going(self) -> list[tuple[str, int]]:
        """The threads whose robots' background delegations still run after the run that started them ended:
        (thread id, how many), in the order their runs ended."""
        from workspace.delegation import running_delegations

        going = []
        for thread_id in self._delegating:
            count = sum(1 for f in running_delegations(thread_id) if id(f) in self._delegations_watched)
            if count:
                going.append((thread_id, count))
        return going

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
        "background" (its run ended, what its robots delegated goes on), and, until the thread is opened,
        "review", "finished" or "failed" (keys of :data:`RUN_STATE_WORDS`)."""
        states = dict(self._unseen)
        for thread_id, _count in self.delegations_going():  # its run ended; what it delegated goes on
            states[thread_id] = "background"
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
        """Stop the open thread's run: the stream, in-flight tools, its pending approvals and what its robots
        delegated in the background (runs of other threads go on)."""
        self.stop_thread(self.thread_id)

    def stop_thread(self, thread_id: str | None, *, reason: str | None = None, delegated: str | None = None) -> None:
        """Stop the runs of ``thread_id`` (their ``run_cancelled`` stored with ``reason``, by default "stopped by the
        user"), the approvals waiting in it and the work its robots delegated in the background (still going after
        the run that started it ended, too: its end is stored with the reason ``delegated``, by default "you pressed
        Stop…", see :meth:`workspace.session.Workspace.stop_delegated`)."""
        from workspace.delegation import STOPPED_IN_BACKGROUND

        why = (reason,) if reason else ()  # none: the runs' own default
        for run in list(self._runs):
            if run.thread_id != thread_id:
                continue
            try:
                run.cancel(*why)
            except Exception as exc:
                log.warning("cancel failed: %s", exc)
        for _thread, _request, fut in self.waiting_approvals(thread_id):
            fut.cancel()
        if thread_id:
            reason = delegated or STOPPED_IN_BACKGROUND
            stopped = self._stop_delegated(thread_id, reason)
            if stopped:
                self.delegations_stopped.emit(thread_id, stopped, reason)
                self.background_changed.emit()
                self.run_states_changed.emit()
        if self.session is not None and self.session.thread_id == thread_id and self.session.running:
            try:
                self.session.stop(*why, delegated=delegated)
            except Exception as exc:
                log.warning("session stop failed: %s", exc)

    def _stop_delegated(self, thread_id: str, reason: str) -> list[str]:
        """Stop what the robots of ``thread_id`` delegated in the background, storing why for the delegates' runs
        that went on after the run that started them ended: the stopped delegates' run ids."""
        from workspace.delegation import stop_delegations

        if self.workspace is not None:
            stopped = self.workspace.stop_delegated(thread_id, reason=reason)
        else:
            stopped = stop_delegations(thread_id)
        return [f.run_id for f in stopped if f.run_id]

    def stop_all(self) -> None:
        """Stop every thread's run (quitting): streams, tools, every approval waiting, and the work their
        robots delegated in the background (stored as stopped because you quit, while the store is still open)."""
        from workspace.delegation import STOPPED_AT_QUIT

        for thread_id in {run.thread_id for run in self._runs} | set(self._delegating):
            self._stop_delegated(thread_id, STOPPED_AT_QUIT)
        for run in list(self._runs):
            try:
                run.cancel("the app was closed")
            except Exception as exc:
                log.warning("cancel failed: %s", exc)
        for fut in list(self._pending):
            fut.cancel()

    def on_usage_event(self, _event: ev.Usage) -> None:
        self._emit_usage()


async def _after(run: AsyncIterable[ev.Event], skip: int) -> AsyncIterator[ev.Event]:
    """The events of ``run`` (which replays from its first) after the first ``skip``."""
    seen = 0
    async for event in run:
        seen += 1
        if seen > skip:
            yield event
