"""ChatPresenter: a run's events in, the chat's view state out.

Both ways into the chat go through :meth:`ChatPresenter.feed`: the live run (the bridge's events,
text deltas joined) and a stored thread (:meth:`ChatPresenter.load_thread` feeds each turn's stored
events), so a reopened thread shows what was shown live. The presenter holds a
:class:`~ui.chat.model.state.ChatState` and tells a :class:`ChatListener` (the chat widget) what changed;
it has no widgets and is tested without a window.

Routing: an event belongs to the run of its ``run_id``; a run not seen yet joins the turn being
loaded, or else the last turn. A network run's ``task_started`` / ``task_finished`` make its lanes;
a run that works for a task (its events carry ``task``) shows inside that task's lane. A robot used
as a tool (its events carry ``parent_tool_id``) shows as a lane inside that call's card; its end
ends only that lane (the run that called it goes on), and its usage is in the caller's totals.

The presenter is one state machine over the closed event union: :meth:`ChatPresenter._apply` is one
``match`` per event kind ending in ``assert_never`` (so mypy says a new kind is unhandled), and it is
the only place events are dispatched. Each case hands its event to the reducer of that concern, with the
one shared context, the :class:`~ui.chat.model.column.Column` (the state, the listener, the runs and where
their items go): :class:`~ui.chat.model.text.Texts` (answers and thinking),
:class:`~ui.chat.model.calls.ToolCalls` (tool calls, approvals, progress),
:class:`~ui.chat.model.changes.ChangeCards` (change cards), :class:`~ui.chat.model.lanes.NetworkLanes`
(network lanes) and :class:`~ui.chat.model.runs.RunLifecycle` (a run's start, status, usage, notices and
end). Each reducer is a small class whose methods take the column; none reads another's fields. This
module keeps the column's turns and stored threads, and the presenter's public surface (what the chat
view and the Changes dock call) delegates to the reducers.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Final, assert_never

from ui.chat.model.bus import BusMessages
from ui.chat.model.calls import ToolCalls
from ui.chat.model.changes import ChangeCards
from ui.chat.model.column import APPROVAL, WAITING, Column
from ui.chat.model.lanes import NetworkLanes
from ui.chat.model.listener import ChatListener, StoredTurn, TranscriptSource
from ui.chat.model.runs import BACKGROUND_STOPPED, RunLifecycle, compaction_text
from ui.chat.model.state import (
    INTERRUPTED,
    ChangeItem,
    ChatState,
    Lane,
    LaneItem,
    NetworkItem,
    NoticeAction,
    NoticeItem,
    NoticeLevel,
    ReasoningItem,
    RunState,
    TurnState,
    UserState,
)
from ui.chat.model.text import Texts
from ui.chat.model.tool_calls import ToolCallItem
from workspace import events as ev

#: Turns shown when a thread opens; earlier ones load on demand.
INITIAL_TURNS = 10
LOAD_MORE_TURNS = 40


class _Keep(enum.Enum):
    KEEP = "keep"


#: "Leave it as it is" for :meth:`ChatPresenter.set_user`.
_KEEP: Final = _Keep.KEEP


class ChatPresenter:
    """Turns events into :attr:`state` and tells :attr:`listener` what changed (the one place events
    become the chat's state; it composes the reducers of each concern, see the module docstring)."""

    def __init__(self, listener: ChatListener | None = None) -> None:
        self._column = Column(listener)
        self._texts = Texts()
        self._lanes = NetworkLanes()
        self._bus = BusMessages()
        self._calls = ToolCalls(self._texts)
        self._changes = ChangeCards()
        self._lifecycle = RunLifecycle(self._texts, self._lanes)
        #: Runs still going when the column was cleared: their late events belong elsewhere.
        self._ignored: set[str] = set()
        self._source: TranscriptSource | None = None
        #: The highest ``seq`` stored per run shown from the store (live events up to it are shown).
        self._stored_seq: dict[str, int] = {}

    # -- the shared context ---------------------------------------------------------------------------
    @property
    def state(self) -> ChatState:
        return self._column.state

    @property
    def listener(self) -> ChatListener:
        return self._column.listener

    @listener.setter
    def listener(self, listener: ChatListener) -> None:
        self._column.listener = listener

    # -- the column -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Empty the column (a thread opens, or a new one starts)."""
        column = self._column
        self._ignored |= {run_id for run_id, run in column.runs.items() if not column.ended(run)}
        self._column = Column(column.listener)
        self._changes = ChangeCards()
        self._source = None
        self._stored_seq = {}
        self._column.listener.chat_reset()

    def add_user(self, text: str, *, turn_id: str | None = None, sibling_index: int = 0,
                 sibling_count: int = 1) -> TurnState:
        """A user's message starts a turn (sent now, so not stored yet: :meth:`set_user` follows)."""
        from workspace.changes import split_user_message

        note, shown = split_user_message(text)
        turn = TurnState(user=UserState(text=shown, note=note, turn_id=turn_id, sibling_index=sibling_index,
                                        sibling_count=sibling_count))
        self.state.turns.append(turn)
        self.listener.turn_added(turn)
        return turn

    def set_user(self, turn: TurnState, *, turn_id: str | _Keep | None = _KEEP, sibling_index: int | _Keep = _KEEP,
                 sibling_count: int | _Keep = _KEEP, note: str | _Keep | None = _KEEP) -> None:
        """Update a turn's user message: its stored turn, its place among its siblings, its note."""
        user = turn.user
        if user is None:
            return
        if turn_id is not _KEEP:
            user.turn_id = turn_id
        if sibling_index is not _KEEP:
            user.sibling_index = sibling_index
        if sibling_count is not _KEEP:
            user.sibling_count = sibling_count
        if note is not _KEEP:
            user.note = note or None
        self.listener.user_changed(turn)

    def remove_turn(self, turn: TurnState) -> None:
        """Take a turn out (a message that could not be sent)."""
        if turn not in self.state.turns:
            return
        self.state.turns.remove(turn)
        for run in turn.runs:
            self._column.runs.pop(run.run_id, None)
        self.listener.turn_removed(turn)

    def follow_live(self, turn_id: str, run_id: str, events: Iterable[ev.Event]) -> TurnState | None:
        """The stored turn ``turn_id`` has its run ``run_id`` still going (its thread opened again while the run
        went on in the background): what the store showed of it goes (its text is joined and partly held back
        there), the user's message stays, and the run's own ``events`` so far show the answer again, exactly;
        the live events that follow (the ones after those) are fed as usual. None when the turn is not shown."""
        turn = next((t for t in self.state.turns if t.turn_id == turn_id), None)
        if turn is None or turn.user is None:
            return None
        index = self.state.turns.index(turn)
        gone = {run.run_id for run in turn.runs} | {run_id}
        self.remove_turn(turn)
        live = TurnState(user=turn.user)
        self.state.turns.insert(index, live)
        self.listener.turn_added(live)
        for rid in gone:
            self._stored_seq.pop(rid, None)
            self._ignored.discard(rid)
            self._column.groups.pop(rid, None)  # a network's lanes are made again from its events
        self._changes.forget_runs(gone)
        for event in events:
            self._apply(event)
        return live

    def last_user_turn(self) -> TurnState | None:
        """The last turn whose user message is stored."""
        return next((t for t in reversed(self.state.turns) if t.turn_id is not None), None)

    # -- what the view asks and tells -----------------------------------------------------------------
    def run(self, run_id: str) -> RunState | None:
        return self._column.runs.get(run_id)

    def set_activity(self, run: RunState, text: str | None, *, since: float | None = None) -> None:
        """What ``run`` is doing while nothing else shows it (see :meth:`Column.set_activity`)."""
        self._column.set_activity(run, text, since=since)

    def notice(self, run: RunState, text: str, *, level: NoticeLevel = "info", details: str | None = None,
               action: NoticeAction | None = None) -> NoticeItem:
        """A line about how the run goes, in its turn (or its task's lane)."""
        return self._column.notice(run, text, level=level, details=details, action=action)

    def set_reasoning_collapsed(self, item: ReasoningItem, collapsed: bool) -> None:
        """The person opened or closed a thinking block (automatic folding leaves it alone then)."""
        self._texts.set_reasoning_collapsed(self._column, item, collapsed)

    def call(self, call_id: str, run_id: str | None = None) -> ToolCallItem | None:
        """The call ``call_id`` of run ``run_id`` (without it, the first call with that id)."""
        return self._calls.call(self._column, call_id, run_id)

    def show_asked_call(self, event: ev.ToolUse) -> None:
        """A call whose approval is asked and whose ``tool_use`` never comes here: its card, from the request (it
        is not the model's token). Only for a call whose run does not stream here: a card made before the run's
        own events would come before the text that precedes it (the window waits for the event that asks)."""
        if event.run_id in self._ignored:
            return
        self._calls.asked_call(self._column, event)

    def calls(self) -> list[ToolCallItem]:
        return self._calls.calls(self._column)

    def change_item(self, change_set_id: str) -> ChangeItem | None:
        """The latest change card of a change set (auto mode makes one per write)."""
        return self._changes.change_item(change_set_id)

    def change_items(self, change_set_id: str) -> list[ChangeItem]:
        return self._changes.change_items(change_set_id)

    def all_change_items(self) -> list[ChangeItem]:
        """Every change card shown, in the order they came."""
        return self._changes.all_change_items()

    def change_decided(self, event: ev.ChangeDecided) -> None:
        """What the person decided about a change set (a run's event, or the Changes dock's now)."""
        self._changes.change_decided(self._column, event)

    def set_change_files(self, change_set_id: str, files: list[dict[str, Any]]) -> None:
        """The change set's files as now composed (events of parallel calls race): a pending card's list."""
        self._changes.set_change_files(self._column, change_set_id, files)

    def verify_finished(self, event: ev.VerifyFinished) -> None:
        """A verify that ran outside a run (after it, or from the review): its line in the chat."""
        self._apply(event)

    def set_change_undone(self, item: ChangeItem, undone: bool) -> None:
        """The written changes were undone (or redone) from the card or the Changes dock."""
        self._changes.set_change_undone(self._column, item, undone)

    def delegations_stopped(self, run_ids: Iterable[str], *, reason: str = BACKGROUND_STOPPED) -> int:
        """Stop stopped delegates' runs that went on after the run that started them: their lanes say so (with
        ``reason``, by default "you pressed Stop…")."""
        return self._lifecycle.background_stopped(self._column, run_ids, reason=reason)

    def lane(self, task: str, run_id: str | None = None) -> LaneItem | None:
        """The lane of ``task`` in network run ``run_id`` (default: the latest network run)."""
        return self._lanes.lane(self._column, task, run_id)

    def latest_group(self) -> NetworkItem | None:
        return self._lanes.latest_group(self._column)

    def groups(self) -> dict[str, NetworkItem]:
        return dict(self._column.groups)

    def set_lane_collapsed(self, lane: Lane, collapsed: bool, *, by_user: bool = False) -> None:
        """Fold or open a lane (``by_user``: automatic folding leaves it alone from now on)."""
        self._lanes.set_lane_collapsed(self._column, lane, collapsed, by_user=by_user)

    # -- stored threads ---------------------------------------------------------------------------
    def load_thread(self, source: TranscriptSource, *, initial: int = INITIAL_TURNS) -> None:
        """Show a stored branch: its last ``initial`` turns now, earlier ones on demand."""
        self.reset()
        self._source = source
        turns = source.turns  # a long branch's turns are read as they are shown (slicing reads nothing)
        # Sliced from the end: a long branch is not read up to its root to know where its last turns start.
        self.state.hidden = turns[:-initial] if initial > 0 else turns
        for info in turns[-initial:] if initial > 0 else ():
            self.load_turn(source.view(info))
        self.listener.hidden_changed()

    @property
    def hidden_turns(self) -> int:
        """The earlier turns not shown: of a long branch whose ids are read from its end, those known so far."""
        return len(self.state.hidden)

    def load_earlier(self, count: int = LOAD_MORE_TURNS) -> int:
        """Load up to ``count`` more of the earlier turns (above the first one shown)."""
        if not self.state.hidden or self._source is None or count <= 0:
            return 0
        chunk = self.state.hidden[-count:]
        self.state.hidden = self.state.hidden[:-count]
        for index, info in enumerate(chunk):
            self.load_turn(self._source.view(info), index=index)
        self.listener.hidden_changed()
        return len(chunk)

    def load_turn(self, view: StoredTurn, *, index: int | None = None) -> TurnState:
        """A stored turn: its user message, then its events as they were fed live."""
        from workspace.changes import split_user_message

        note, text = split_user_message(view.user_text)
        turn = TurnState(user=UserState(text=text, note=note, turn_id=view.id, sibling_index=view.sibling_index,
                                        sibling_count=view.sibling_count), status=view.status)
        self.state.turns.insert(len(self.state.turns) if index is None else index, turn)
        self.listener.turn_added(turn)
        column = self._column
        column.loading = turn
        try:
            self._replay(turn, view.events)
        finally:
            column.loading = None
        return turn

    def _replay(self, turn: TurnState, events: Iterable[ev.Event]) -> None:
        last: ev.Event | None = None
        ended = False
        for event in events:
            self._ignored.discard(event.run_id)
            if event.seq > self._stored_seq.get(event.run_id, 0):
                self._stored_seq[event.run_id] = event.seq
            self._apply(event)
            last = event
            ended = ended or (isinstance(event, ev.TERMINAL) and not event.nested)
        if not ended and last is not None and turn.status == "interrupted":
            # The app closed before the run ended: its lanes stop when its last event came.
            column = self._column
            top = next(iter(turn.top_runs), None) or column.run(last.run_id, last.robot)
            self._lifecycle.finish(column, top, "interrupted", message=INTERRUPTED, ts=last.ts, result=None)

    # -- live events --------------------------------------------------------------------------------
    def feed(self, event: ev.Event) -> None:
        """One live event (text deltas may come joined: one ``TextDelta`` for several)."""
        if event.run_id in self._ignored:
            return
        stored = self._stored_seq.get(event.run_id)
        if stored is not None and 0 < event.seq <= stored:
            return  # shown from the store already (the thread was opened while this run went on)
        self._apply(event)

    def feed_all(self, events: Iterable[ev.Event]) -> None:
        for event in events:
            self.feed(event)

    def _apply(self, event: ev.Event) -> None:
        """The one ``match`` over the events: each kind goes to the reducer of its concern."""
        column = self._column
        if event.parent_tool_id is not None and event.run_id not in column.runs:
            column.inner_run(event)
        match event:
            case ev.RunStarted():
                self._lifecycle.run_started(column, event)
            case ev.TextDelta():
                self._texts.text_delta(column, event)
            case ev.Text():
                self._texts.text(column, event)
            case ev.ReasoningDelta():
                self._texts.reasoning_delta(column, event)
            case ev.Reasoning():
                self._texts.reasoning(column, event)
            case ev.RunStatus():
                self._lifecycle.status(column, event)
            case ev.ToolUse():
                self._calls.tool_use(column, event)
            case ev.ApprovalRequested():
                self._calls.approval_requested(column, event)
            case ev.ApprovalDecided():
                self._calls.approval_decided(column, event)
            case ev.ToolResult() | ev.ToolError():
                self._calls.tool_finished(column, event)
            case ev.ToolProgress():
                self._calls.tool_progress(column, event)
            case ev.ToolOutput():
                self._calls.tool_output(self._column, event)
            case ev.MemoryChanged():
                pass  # the Memory dock shows it; the conversation does not
            case ev.ChangeProposed():
                self._changes.change_proposed(column, event)
            case ev.ChangeDecided():
                self._changes.change_decided(column, event)
            case ev.Usage():
                self._lifecycle.usage(column, event)
            case ev.TaskStarted() | ev.TaskFinished():
                self._lanes.task(column, event)
            case ev.ContextUsage():
                pass  # the status bar's context meter shows it (bridge.context_usage)
            case ev.ModelRequest():
                pass  # the request as sent: the Trace dock's model call shows it, the conversation does not
            case ev.ContextCompacted():
                self._lifecycle.compacted(column, event)
            case ev.McpServers():
                self._lifecycle.mcp_servers(column, event)
            case ev.ModelChanged():
                self._lifecycle.model_changed(column, event)
            case ev.BusMessage():
                self._bus.message(column, event)
            case ev.VerifyFinished():
                self._changes.verify_finished(column, event)
            case ev.RunFinished():
                self._lifecycle.end(column, event, "finished", message=None, result=event.result)
            case ev.RunFailed():
                self._lifecycle.end(column, event, "failed", message=event.error, result=event.partial)
            case ev.RunCancelled():
                self._lifecycle.end(column, event, "cancelled", message=event.reason, result=event.partial)
            case _:
                assert_never(event)


__all__ = ["APPROVAL", "INITIAL_TURNS", "LOAD_MORE_TURNS", "WAITING", "ChatPresenter", "TranscriptSource",
           "compaction_text"]
