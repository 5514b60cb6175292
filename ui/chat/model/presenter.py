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
the only place events are read. What each case does to the state lives in the presenter's parts, each
a base class over :class:`ui.chat.model.column.Column` (the state, the runs and where their items go):
:mod:`ui.chat.model.text` (answers and thinking), :mod:`ui.chat.model.calls` (tool calls and approvals),
:mod:`ui.chat.model.changes` (change cards) and :mod:`ui.chat.model.lanes` (network lanes). This module keeps the
column's turns, stored threads, usage and how a run ends.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Final, assert_never

from ui.chat.model.calls import ToolCalls
from ui.chat.model.changes import ChangeCards
from ui.chat.model.lanes import NetworkLanes
from ui.chat.model.listener import ChatListener, StoredTurn, TranscriptSource
from ui.chat.model.state import (
    INTERRUPTED,
    AttachmentChip,
    CallLaneItem,
    ChatState,
    ErrorItem,
    NoticeItem,
    RunEnd,
    RunOutcome,
    RunState,
    TurnState,
    UserState,
    split_fix,
)
from ui.chat.model.tool_calls import ProgressState
from workspace import events as ev
from workspace.result import STOP_NOTES, NetworkResult, RobotResult, Usage

#: What a run is doing between its start (or a tool's result) and the model's first words.
WAITING = "Waiting for the model…"
#: What a run is doing while a person is asked to approve a call.
APPROVAL = "Waiting for your approval (Ctrl+J)"
#: Turns shown when a thread opens; earlier ones load on demand.
INITIAL_TURNS = 10
LOAD_MORE_TURNS = 40


class _Keep(enum.Enum):
    KEEP = "keep"


#: "Leave it as it is" for :meth:`ChatPresenter.set_user`.
_KEEP: Final = _Keep.KEEP


class ChatPresenter(ToolCalls, ChangeCards, NetworkLanes):
    """Turns events into :attr:`state` and tells :attr:`listener` what changed (the one place events
    become the chat's state; its parts are its base classes, see the module docstring)."""

    def __init__(self, listener: ChatListener | None = None) -> None:
        #: Runs still going when the column was cleared: their late events belong elsewhere.
        self._ignored: set[str] = set()
        super().__init__(listener)

    def _forget(self) -> None:
        super()._forget()
        self._source: TranscriptSource | None = None
        #: The highest ``seq`` stored per run shown from the store (live events up to it are shown).
        self._stored_seq: dict[str, int] = {}

    # -- the column -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Empty the column (a thread opens, or a new one starts)."""
        self._ignored |= {run_id for run_id, run in self._runs.items() if not self._ended(run)}
        self.state = ChatState()
        self._forget()
        self.listener.chat_reset()

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
            self._runs.pop(run.run_id, None)
        self.listener.turn_removed(turn)

    def last_user_turn(self) -> TurnState | None:
        """The last turn whose user message is stored."""
        return next((t for t in reversed(self.state.turns) if t.turn_id is not None), None)

    # -- stored threads ---------------------------------------------------------------------------
    def load_thread(self, source: TranscriptSource, *, initial: int = INITIAL_TURNS) -> None:
        """Show a stored branch: its last ``initial`` turns now, earlier ones on demand."""
        self.reset()
        self._source = source
        turns = list(source.turns)
        cut = max(0, len(turns) - initial)
        self.state.hidden = turns[:cut]
        for info in turns[cut:]:
            self.load_turn(source.view(info))
        self.listener.hidden_changed()

    @property
    def hidden_turns(self) -> int:
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
        self._loading = turn
        try:
            self._replay(turn, view.events)
        finally:
            self._loading = None
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
            top = next(iter(turn.top_runs), None) or self._run(last.run_id, last.robot)
            self._finish(top, "interrupted", message=INTERRUPTED, ts=last.ts, result=None)

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
        if event.parent_tool_id is not None and event.run_id not in self._runs:
            self._inner_run(event)
        match event:
            case ev.RunStarted():
                run = self._run(event.run_id, event.robot, event.task)
                run.started = event.ts
                if event.attachments and not event.nested and event.task is None:
                    self._attached(run.turn, event.attachments)
                run.language_model = event.is_language_model
                self.set_activity(run, WAITING, since=event.ts)
                if run.inner is not None:
                    run.inner.started = event.ts
                    run.inner.message = event.message
                    self.listener.item_changed(run.inner)
            case ev.TextDelta():
                run = self._run(event.run_id, event.robot, event.task)
                _token_came(run, event.ts)
                self.set_activity(run, None)
                self._append_text(run, event.robot, event.text)
            case ev.Text():
                run = self._run(event.run_id, event.robot, event.task)
                if run.text is None:  # a stored model turn's text (its deltas joined, at the first one's time)
                    _token_came(run, event.ts)
                self.set_activity(run, None)
                self._complete_text(event)
            case ev.ReasoningDelta():
                run = self._run(event.run_id, event.robot, event.task)
                _token_came(run, event.ts)
                self._append_reasoning(run, event.robot, event.text)
            case ev.Reasoning():
                run = self._run(event.run_id, event.robot, event.task)
                if run.reasoning is None:  # stored thinking (its deltas joined, at the first one's time)
                    _token_came(run, event.ts)
                self._complete_reasoning(event)
            case ev.RunStatus():
                self._status(event)
            case ev.ToolUse():
                self._tool_use(event.run_id, event.robot, event.task, call_id=event.id, tool=event.name,
                               server=event.server, arguments=event.input, started=event.ts,
                               from_text=event.from_text)
                run = self._run(event.run_id, event.robot, event.task)
                if run.first_token is None:  # a first model call that only called a tool: its call came
                    run.first_token = event.ts
                self.set_activity(run, None)
            case ev.ApprovalRequested():
                self._approval_requested(event)
                self.set_activity(self._run(event.run_id, event.robot, event.task), APPROVAL, since=event.ts)
            case ev.ApprovalDecided():
                self._approval_decided(event)
                self.set_activity(self._run(event.run_id, event.robot, event.task), None)
            case ev.ToolResult() | ev.ToolError():
                self._tool_finished(event)
                run = self._run(event.run_id, event.robot, event.task)
                run.call_first_token = None  # the next model call streams after the tools
                if not any(c.status in ("running", "approval") for c in run.calls.values()):
                    self.set_activity(run, WAITING, since=event.ts)  # the model's next turn
            case ev.ToolProgress():
                self._tool_progress(event)
            case ev.MemoryChanged():
                pass  # the Memory dock shows it; the conversation does not
            case ev.ChangeProposed():
                self._change_proposed(event)
            case ev.ChangeDecided():
                self.change_decided(event)
            case ev.Usage():
                self._usage(event)
            case ev.TaskStarted() | ev.TaskFinished():
                self._task(event)
            case ev.ContextUsage():
                pass  # the status bar's context meter shows it (bridge.context_usage)
            case ev.ContextCompacted():
                self.notice(self._run(event.run_id, event.robot, event.task), compaction_text(event),
                            details=event.summary.strip() + "\n\n*The model now sees this summary instead of the "
                            "messages above; they are still in the thread, searchable and exported.*")
            case ev.McpServers():
                self.notice(self._run(event.run_id, event.robot, event.task), event.message,
                            level="warning" if event.failed or event.starting else "info")
            case ev.ModelChanged():
                # Between the answers: under the turn it follows, below its footer (a notice of no run).
                run = self._run(event.run_id, event.robot, event.task)
                self._add(NoticeItem(parent=run.turn, text=event.describe(),
                                     details=f"Before: {event.previous or 'the offline demo'}. The thread's next "
                                     "messages go to the new model; the conversation so far is sent to it as it is."))
            case ev.RunFinished():
                self._end(event, "finished", message=None, result=event.result)
            case ev.RunFailed():
                self._end(event, "failed", message=event.error, result=event.partial)
            case ev.RunCancelled():
                self._end(event, "cancelled", message=event.reason, result=event.partial)
            case _:
                assert_never(event)

    # -- the user's message ----------------------------------------------------------------------------
    def _attached(self, turn: TurnState, refs: list[dict[str, Any]]) -> None:
        """The chips of the files, images and resources sent with the turn's message (from its run's
        ``run_started``, live and stored alike)."""
        if turn.user is None:
            return
        turn.user.attachments = [AttachmentChip.from_ref(ref) for ref in refs]
        self.listener.user_changed(turn)

    # -- usage ----------------------------------------------------------------------------------------
    def _usage(self, event: ev.Usage) -> None:
        run = self._run(event.run_id, event.robot, event.task)
        run.usage = Usage(event.total_input_tokens, event.total_output_tokens, event.total_cost,
                          run.usage.reasoning_tokens + event.reasoning_tokens, run.usage.estimated or event.estimated)
        run.model_calls.append(event)
        if run.call_first_token is not None and event.ts > run.call_first_token:
            # The call streamed from its first token to its usage (sent as the stream ends).
            run.streamed_tokens += event.output_tokens
            run.streamed_seconds += event.ts - run.call_first_token
        run.call_first_token = None
        lane = run.lane or run.inner
        if lane is not None:  # a task's (a robot used as a tool's) usage shows in its lane's header
            lane.usage = run.usage
            self.listener.item_changed(lane)
            return
        run.footer = True
        self.listener.run_changed(run)

    # -- the end of a run ---------------------------------------------------------------------------
    def _end(self, event: ev.TerminalEvent, outcome: RunOutcome, *, message: str | None, result: Any) -> None:
        run = self._run(event.run_id, event.robot)
        if run.inner is not None:  # a robot used as a tool ended: its lane, not the run that called it
            self._end_inner(run, run.inner, outcome, message=message, ts=event.ts)
            return
        if event.nested:  # a network task's own run ended: its task_finished says how the lane ends
            run.text = None
            return
        if run.lane is not None:  # a task run's end: the end belongs to its network run
            run.text = None
            parent = self._runs.get(run.lane.group.run_id)
            if parent is None:
                return
            run = parent
        elif isinstance(event, ev.RunFailed):
            self._finish(run, outcome, message=message, ts=event.ts, result=result)
            # The error across the column: what went wrong, the fix it names, Retry.
            text, fix = split_fix(event.error or "The run failed without saying why.")
            self._add(ErrorItem(parent=run.turn, run=run, message=text, fix=fix, error_type=event.error_type))
            return
        self._finish(run, outcome, message=message, ts=event.ts, result=result)

    def _end_inner(self, run: RunState, lane: CallLaneItem, outcome: RunOutcome, *, message: str | None,
                   ts: float | None) -> None:
        run.text = None
        self._end_reasoning(run)
        run.end = RunEnd(outcome=outcome, message=message)
        lane.status = "done" if outcome == "finished" else "failed" if outcome == "failed" else "cancelled"
        lane.reason = message if outcome != "finished" else None
        lane.finished = ts
        if outcome == "finished" and not lane.user_toggled:
            lane.collapsed = True  # the answer is in the card's result
        self.listener.item_changed(lane)

    def _finish(self, run: RunState, outcome: RunOutcome, *, message: str | None, ts: float | None,
                result: Any) -> None:
        run.activity = run.activity_since = None
        for child in run.children:
            child.activity = child.activity_since = None
        if run.network is not None:
            self._finish_group(run.network, message or "interrupted", ts)
        for call in run.calls.values():  # robots used as tools that never said how they ended
            inner = call.inner
            if inner is not None and inner.status == "running" and inner.run is not None:
                self._end_inner(inner.run, inner, "interrupted" if outcome == "interrupted" else "cancelled",
                                message=message or "the run that called it ended", ts=ts)
        run.text = None
        for each in (run, *run.children):
            self._end_reasoning(each)
        own = _own_result(run, result)
        usage = own.usage if own is not None else None
        if usage is not None and (usage.input_tokens or usage.output_tokens):
            run.result_usage = usage
        duration = own.duration if own is not None else None
        if not duration and run.started is not None and ts is not None:
            duration = max(0.0, ts - run.started)
        stop = own.stop_reason if outcome == "finished" and isinstance(own, RobotResult) else None
        if stop == "length":  # the answer was cut off at the token limit: the model may go on
            self.notice(run, "The answer was cut off at the token limit.", level="warning", action="continue",
                        details=STOP_NOTES["length"])
        elif stop == "context_full":  # the window is full: going on or a larger max_tokens cannot help
            self.notice(run, "The answer stopped: the model's context window is full.", level="warning",
                        details=STOP_NOTES["context_full"])
        run.end = RunEnd(outcome=outcome, message=message, max_turns=stop == "max_turns", duration=duration or None,
                         stop_reason=stop)
        run.footer = True
        for each in (run, *run.children):
            for call in each.calls.values():
                if call.approval is not None and call.approval.state == "asking":
                    call.approval.state = "stopped"
                    self.listener.item_changed(call)
                if outcome == "cancelled" and call.server and call.status == "running":
                    # An MCP call in flight when the run stopped: the SDK sent notifications/cancelled.
                    call.progress = ProgressState(value=call.progress.value if call.progress else 0.0,
                                                  total=call.progress.total if call.progress else None,
                                                  cancelled=True)
                    self.listener.item_changed(call)
        self.listener.run_changed(run)


def _own_result(run: RunState, result: Any) -> RobotResult | NetworkResult | None:
    """The terminal event's result when it is this run's own (a network's NetworkResult, a robot's
    RobotResult), with its usage; None otherwise (a stored network result read back as its last
    task's RobotResult would give that task's figures for the whole turn)."""
    if isinstance(result, NetworkResult) and result.network == run.robot:
        return result
    if isinstance(result, RobotResult) and result.robot_name == run.robot and run.network is None:
        return result
    return None


__all__ = ["APPROVAL", "INITIAL_TURNS", "LOAD_MORE_TURNS", "WAITING", "ChatPresenter", "compaction_text"]


def compaction_text(event: ev.ContextCompacted) -> str:
    """The marker's line: how many messages were summarised, and the tokens before and after."""
    why = {"manual": " on request", "overflow": " after the server refused the request as too long"}.get(
        event.trigger, "")
    window = f" of {event.window:,}" if event.window else ""
    return (f"⟲ Conversation compacted{why} — {event.newly_replaced} earlier messages summarised "
            f"({event.tokens_before:,} → {event.tokens_after:,} tokens{window})")


def _token_came(run: RunState, ts: float) -> None:
    """A model call's token (text or thinking) came at ``ts``: the first of the run, of the call."""
    if run.first_token is None:
        run.first_token = ts
    if run.call_first_token is None:
        run.call_first_token = ts
