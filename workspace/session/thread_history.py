"""A thread's conversation: the one the next message continues, kept in memory and read from the store
(a branch, a reopened thread, a network's robots), the transcript, and the context window (compaction)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.persistence import StoreError, coalesce_text
from workspace.session.recording import RecordedRun, TurnView
from workspace.session.thread_state import ThreadState, _Conversation

if TYPE_CHECKING:
    from workspace.messages import Message
    from workspace.network import Network
    from workspace.robot import Robot

log = logging.getLogger("workspace.session")

#: Turns of the branch one read of the conversation takes (:meth:`ThreadHistory.load_conversation` asks
#: whether it is still wanted between them).
CONVERSATION_READ = 200
#: Turns the context meter's count is looked for in first, from the branch's end up (then four times as many
#: above them, and so on).
USAGE_READ = 50


def _always() -> bool:
    return True


class ThreadHistory(ThreadState):
    """The conversation half of :class:`~workspace.session.thread.ThreadSession`."""

    # -- the conversation kept in memory -------------------------------------------------------------
    def _conversation_to(self, leaf: str | None) -> _Conversation:
        """The conversation along the branch ending at ``leaf``: the one kept, or (another branch, a
        reopened thread) read from the store once."""
        conversation = self._conversation_while(leaf, _always)
        assert conversation is not None  # (always wanted)
        return conversation

    def _conversation_while(self, leaf: str | None, wanted: Callable[[], bool]) -> _Conversation | None:
        """:meth:`_conversation_to`, read :data:`CONVERSATION_READ` turns at a time, asking ``wanted`` before
        each read: None (nothing kept) as soon as it says no."""
        extending, self._extending = self._extending, None
        if extending is not None:
            extending.result()  # the turn that just ended (a read of that turn alone, off the event loop)
        conversation = self._conversation
        if conversation is not None and conversation.leaf == leaf and conversation.intact():
            return conversation
        conversation = _Conversation(leaf)
        if leaf is not None:
            ids = self.store.path_ids(self.thread_id, leaf)  # (ids only: the turns' rows a read at a time)
            for start in range(0, len(ids), CONVERSATION_READ):
                if not wanted():
                    return None
                chunk = self.store.turns_by_id(ids[start:start + CONVERSATION_READ])
                conversation.messages += self.store.turn_messages(chunk)  # (each turn's messages are its own)
                for found in self.store.events_of([t.id for t in chunk], (ev.ContextCompacted,)).values():
                    conversation.compactions += found
        self._conversation = conversation.seal()
        return conversation

    async def load_conversation(self, *, wanted: Callable[[], bool] | None = None) -> None:
        """Read the conversation the next message continues now, off the event loop (a thread just
        opened), so that the first send does not read the thread on the caller's thread. ``wanted``
        (asked in the worker between its reads): while it says yes; a window passes whether the thread is
        still open, so a long thread left before its read ends stops being read (the send reads it then)
        instead of holding the interpreter and the store from the thread opened next. A read still under way
        (the thread left and opened again) is waited for, not started twice."""
        if self.is_network or self._conversation is not None:
            return
        reading = self._reading_ahead
        if reading is not None and not reading.done():
            await asyncio.wait([reading])
            if self._conversation is not None:
                return
        try:
            current = self.thread.current_turn_id
            read = asyncio.ensure_future(asyncio.to_thread(self._read_conversation_kept, current, wanted or _always))
            self._reading_ahead = read
            await read
        except (StoreError, OSError) as exc:  # the send reads it then, and says what is wrong
            log.info("the conversation of thread %s was not read ahead: %s", self.thread_id, exc)

    def _read_conversation_kept(self, leaf: str | None, wanted: Callable[[], bool]) -> None:
        """Read the conversation to ``leaf`` (while ``wanted``) with the cyclic garbage collector paused, then
        frozen with it (:func:`workspace.shared_imports.gc_paused`): it lives as long as the thread is open, and
        a collection of the oldest generation walked every message of it (200-400 ms at 10,000 turns, holding
        the interpreter lock) whenever one fell during a send, so a send's cost grew with the thread. Read apart
        (:meth:`~workspace.persistence.Store.reading_apart`): through a connection of its own, never holding the
        store's lock the window's reads need, and waiting while the window holds such reads back."""
        from workspace.shared_imports import gc_paused

        with gc_paused(), self.store.reading_apart():
            self._conversation_while(leaf, wanted)

    def _extend_conversation(self, parent_turn_id: str | None, finished: RecordedRun) -> None:
        """After a run of this session ended: the kept conversation grows by its turn (read alone, in a
        worker thread), in place: the run's messages it was lent (:meth:`_Conversation.lend`) give way to the turn
        as the store keeps it. When the turn is not all in the database yet, the next send reads the thread."""
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
            if self._conversation is not kept:
                return
            if not kept.begins_as_sealed():
                self._conversation = None  # changed in place by someone holding it: the next send reads the thread
                return
            history = kept.messages
            history[kept.size or 0:] = messages  # (one step: a reader of the robot's history never sees it cut)
            self._conversation = _Conversation(turn_id, history, kept.compactions + compactions).seal()

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop to keep free (a script): now
            extend()
            return
        self._extending = _reader().submit(extend)


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
        """The last count of the context window along the current branch (for the meter), or None. Looked
        for from the branch's end up, in the last :data:`USAGE_READ` turns first: a thread's last turns have
        one, so a long thread is not read to its root (which held the window's next open while it read)."""
        above, limit = self.thread.current_turn_id, USAGE_READ
        while above is not None:
            page = self.store.path_page(self.thread_id, above, limit=limit)
            found = self.store.events_of(page.ids, (ev.ContextUsage,))
            for turn_id in reversed(page.ids):
                usages = [event for event in found.get(turn_id, ()) if isinstance(event, ev.ContextUsage)]
                if usages:
                    return usages[-1]
            above, limit = page.above, limit * 4  # (a branch without one: a few reads to its root, not hundreds)
        return None

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

