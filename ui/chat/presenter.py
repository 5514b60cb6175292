"""ChatPresenter: a run's events in, the chat's view state out.

Both ways into the chat go through :meth:`ChatPresenter.feed`: the live run (the bridge's events,
text deltas joined) and a stored thread (:meth:`ChatPresenter.load_thread` feeds each turn's stored
events), so a reopened thread shows what was shown live. The presenter holds a
:class:`~ui.chat.state.ChatState` and tells a :class:`ChatListener` (the chat widget) what changed;
it has no widgets and is tested without a window.

Routing: an event belongs to the run of its ``run_id``; a run not seen yet joins the turn being
loaded, or else the last turn. A network run's ``task_started`` / ``task_finished`` make its lanes;
a run that works for a task (its events carry ``task``) shows inside that task's lane. A robot used
as a tool (its events carry ``parent_tool_id``) shows as a lane inside that call's card; its end
ends only that lane (the run that called it goes on), and its usage is in the caller's totals.

Why one module of this size: the presenter is one state machine over the closed event union (a
``match`` per event kind, ending in ``assert_never``); keeping every case in one class is what lets
mypy say a new event kind is unhandled, and what makes the live run and the replay the same code.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Final, assert_never

from ui.chat.listener import ChatListener, Silent, StoredTurn, TranscriptSource
from ui.chat.state import (
    INTERRUPTED,
    LANE_STATUS_TEXT,
    ApprovalState,
    AttachmentChip,
    CallLaneItem,
    ChangeItem,
    ChatState,
    ErrorItem,
    HeaderItem,
    Item,
    Lane,
    LaneItem,
    NetworkItem,
    NoticeAction,
    NoticeItem,
    NoticeLevel,
    ProgressState,
    ReasoningItem,
    RunEnd,
    RunOutcome,
    RunState,
    TextItem,
    ToolCallItem,
    TurnState,
    UserState,
    call_item_class,
    result_error,
    split_fix,
)
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


class ChatPresenter:
    """Turns events into :attr:`state` and tells :attr:`listener` what changed.

    One class handles every event kind (the one place events become the chat's state), which is
    why this module is longer than the others.
    """

    def __init__(self, listener: ChatListener | None = None) -> None:
        self.listener: ChatListener = listener if listener is not None else Silent()
        self.state = ChatState()
        self._runs: dict[str, RunState] = {}
        self._groups: dict[str, NetworkItem] = {}
        self._changes: dict[str, list[ChangeItem]] = {}
        #: Decisions about change sets not shown yet (their turn loads later, or never).
        self._decisions: dict[str, list[ev.ChangeDecided]] = {}
        #: The turn stored events go to while one loads.
        self._loading: TurnState | None = None
        self._source: TranscriptSource | None = None
        #: Runs still going when the column was cleared: their late events belong elsewhere.
        self._ignored: set[str] = set()
        #: The highest ``seq`` stored per run shown from the store (live events up to it are shown).
        self._stored_seq: dict[str, int] = {}

    # -- the column -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Empty the column (a thread opens, or a new one starts)."""
        self._ignored |= {run_id for run_id, run in self._runs.items() if not self._ended(run)}
        self.state = ChatState()
        self._runs.clear()
        self._groups.clear()
        self._changes.clear()
        self._decisions.clear()
        self._stored_seq.clear()
        self._source = None
        self._loading = None
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
                self.set_activity(run, None)
                self._append_text(run, event.robot, event.text)
            case ev.Text():
                self.set_activity(self._run(event.run_id, event.robot, event.task), None)
                self._complete_text(event)
            case ev.ReasoningDelta():
                self._append_reasoning(self._run(event.run_id, event.robot, event.task), event.robot, event.text)
            case ev.Reasoning():
                self._complete_reasoning(event)
            case ev.RunStatus():
                self._status(event)
            case ev.ToolUse():
                self._tool_use(event.run_id, event.robot, event.task, call_id=event.id, tool=event.name,
                               server=event.server, arguments=event.input, started=event.ts)
                self.set_activity(self._run(event.run_id, event.robot, event.task), None)
            case ev.ApprovalRequested():
                self._approval_requested(event)
                self.set_activity(self._run(event.run_id, event.robot, event.task), APPROVAL, since=event.ts)
            case ev.ApprovalDecided():
                self._approval_decided(event)
                self.set_activity(self._run(event.run_id, event.robot, event.task), None)
            case ev.ToolResult() | ev.ToolError():
                self._tool_finished(event)
                run = self._run(event.run_id, event.robot, event.task)
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
                self.notice(self._run(event.run_id, event.robot, event.task), event.describe(),
                            details=f"Before: {event.previous or 'the offline demo'}. The thread's next messages "
                            "go to the new model; the conversation so far is sent to it as it is.")
            case ev.RunFinished():
                self._end(event, "finished", message=None, result=event.result)
            case ev.RunFailed():
                self._end(event, "failed", message=event.error, result=event.partial)
            case ev.RunCancelled():
                self._end(event, "cancelled", message=event.reason, result=event.partial)
            case _:
                assert_never(event)

    # -- runs ------------------------------------------------------------------------------------------
    def _attached(self, turn: TurnState, refs: list[dict[str, Any]]) -> None:
        """The chips of the files, images and resources sent with the turn's message (from its run's
        ``run_started``, live and stored alike)."""
        if turn.user is None:
            return
        turn.user.attachments = [AttachmentChip.from_ref(ref) for ref in refs]
        self.listener.user_changed(turn)

    def set_activity(self, run: RunState, text: str | None, *, since: float | None = None) -> None:
        """What ``run`` is doing while nothing else shows it (None: nothing to say). The run-status
        events of a provider (connecting, retrying) come here; a run that ended says nothing."""
        if run.end is not None or self._loading is not None:
            text = None  # a stored thread replays what happened, not what was awaited
        if text == run.activity:
            return
        import time

        run.activity = text
        run.activity_since = (since if since is not None else time.time()) if text else None
        self.listener.run_changed(run)

    def run(self, run_id: str) -> RunState | None:
        return self._runs.get(run_id)

    def _run(self, run_id: str, robot: str, task: str | None = None) -> RunState:
        run = self._runs.get(run_id)
        if run is not None:
            return run
        turn = self._loading or (self.state.turns[-1] if self.state.turns else None)
        if turn is None:  # a run with no message of its own (an approval asked outside a turn)
            turn = TurnState()
            self.state.turns.append(turn)
            self.listener.turn_added(turn)
        run = RunState(run_id=run_id, robot=robot, turn=turn)
        self._runs[run_id] = run
        turn.runs.append(run)
        group = self._open_group(turn)
        if group is not None and run_id not in self._groups:
            lane = (group.lanes.get(task) if task else None) or group.lane_for_robot(robot)
            if lane is not None:  # a network task's robot: its work goes into the task's lane
                run.lane = lane
                parent = self._runs.get(group.run_id)
                if parent is not None:
                    parent.children.append(run)
        return run

    def _inner_run(self, event: ev.Event) -> RunState | None:
        """The run of a robot used as a tool: a lane inside its call's card (None when the call is not
        shown: the run then shows like any other)."""
        parent = self._runs.get(event.parent_run_id or "")
        call = parent.calls.get(event.parent_tool_id or "") if parent is not None else None
        if parent is None or call is None:
            return None
        run = RunState(run_id=event.run_id, robot=event.robot, turn=parent.turn)
        lane = CallLaneItem(parent=call.parent, run=run, call=call, robot=event.robot, run_id=event.run_id,
                            status="running", started=event.ts)
        run.inner = lane
        call.inner = lane
        self._runs[event.run_id] = run
        parent.turn.runs.append(run)
        self._add_lane(lane)
        return run

    def _add_lane(self, lane: CallLaneItem) -> None:
        self.listener.item_added(lane)

    @staticmethod
    def _open_group(turn: TurnState) -> NetworkItem | None:
        """The network run of ``turn`` still going (its task runs go into its lanes)."""
        for item in reversed(turn.items):
            if isinstance(item, NetworkItem) and not item.ended:
                return item
        return None

    @staticmethod
    def _ended(run: RunState) -> bool:
        return run.lane.group.ended if run.lane is not None else run.end is not None

    def _add(self, item: Item) -> None:
        item.parent.items.append(item)
        self.listener.item_added(item)

    def _container(self, run: RunState) -> TurnState | Lane:
        if run.inner is not None:
            return run.inner
        return run.lane if run.lane is not None else run.turn

    def notice(self, run: RunState, text: str, *, level: NoticeLevel = "info", details: str | None = None,
               action: NoticeAction | None = None) -> NoticeItem:
        """A line about how the run goes, in its turn (or its task's lane)."""
        run.text = None  # text after the notice starts a new block below it
        item = NoticeItem(parent=self._container(run), run=run, text=text, level=level, details=details,
                          action=action)
        self._add(item)
        return item

    def _header(self, run: RunState, robot: str) -> None:
        """The robot's name above its work (again when another robot speaks in the run)."""
        if run.lane is not None or run.inner is not None or run.last_robot == robot:
            return
        run.last_robot = robot
        self._add(HeaderItem(parent=run.turn, run=run, robot=robot))

    # -- text ------------------------------------------------------------------------------------------
    def _append_text(self, run: RunState, robot: str, delta: str) -> TextItem:
        self._fold_reasoning(run)  # the answer began: the thinking folds away
        self._set_status(run, None)
        item = run.text
        if item is None:
            self._header(run, robot)
            item = TextItem(parent=self._container(run), run=run)
            run.text = item
            run.texts.append(item)
            self._add(item)
        item.text += delta
        self.listener.text_appended(item, delta)
        return item

    def _complete_text(self, event: ev.Text) -> None:
        """A model turn's text is complete: the item shows exactly it; later text starts a new one."""
        run = self._run(event.run_id, event.robot, event.task)
        self._end_reasoning(run)
        item = run.text
        if item is None:
            item = self._append_text(run, event.robot, event.text)
        elif item.text != event.text:
            item.text = event.text
            self.listener.item_changed(item)
        run.text = None

    # -- thinking ----------------------------------------------------------------------------------------
    # A model turn's thinking streams (``reasoning_delta``), folds when its answer begins, and is made
    # whole by its ``reasoning`` event (which comes before the turn's ``text``): the item stays the run's
    # ``reasoning`` until the model turn ends (its text, a tool call, the run's end).
    def _append_reasoning(self, run: RunState, robot: str, delta: str) -> ReasoningItem:
        self._set_status(run, None)
        item = run.reasoning
        if item is None or item.done:
            self._header(run, robot)
            run.text = None  # the answer that follows starts below the thinking
            item = ReasoningItem(parent=self._container(run), run=run)
            run.reasoning = item
            self._add(item)
        item.text += delta
        self.listener.item_changed(item)
        return item

    def _complete_reasoning(self, event: ev.Reasoning) -> None:
        """A model turn's whole thinking: the block shows exactly it, folded."""
        run = self._run(event.run_id, event.robot, event.task)
        item = run.reasoning
        if item is None:
            item = self._append_reasoning(run, event.robot, event.text)
        changed = item.text != event.text
        item.text = event.text
        self._fold_reasoning(run, changed=changed)

    def _fold_reasoning(self, run: RunState, *, changed: bool = False) -> None:
        """The answer began: the thinking is complete and folds away (unless the person chose)."""
        item = run.reasoning
        if item is None:
            return
        if not item.done:
            item.done = True
            if not item.user_toggled:
                item.collapsed = True
            changed = True
        if changed:
            self.listener.item_changed(item)

    def _end_reasoning(self, run: RunState) -> None:
        """The model turn ended (its text, a tool call, the run's end)."""
        self._fold_reasoning(run)
        run.reasoning = None

    def set_reasoning_collapsed(self, item: ReasoningItem, collapsed: bool) -> None:
        """The person opened or closed a thinking block (automatic folding leaves it alone then)."""
        item.collapsed = collapsed
        item.user_toggled = True
        self.listener.item_changed(item)

    # -- what the run waits for ------------------------------------------------------------------------
    def _status(self, event: ev.RunStatus) -> None:
        run = self._run(event.run_id, event.robot, event.task)
        match event.state:
            case "fallback":
                self._set_status(run, None)
                self.notice(run, f"⇄ {event.detail}" if event.detail else f"⇄ Continuing with {event.model}",
                            level="warning")
            case "notice":
                self.notice(run, event.detail, level="info")
            case _:
                self._set_status(run, status_text(event), since=event.ts)

    def _set_status(self, run: RunState, text: str | None, *, since: float | None = None) -> None:
        """What the run waits for (connecting, queued, retrying), as the activity of the run that shows it
        (itself, or the run a task's lane or a tool robot belongs to); None: the wait is over."""
        top = self._top(run)
        self.set_activity(top, text, since=since)

    def _top(self, run: RunState) -> RunState:
        """The run whose footer shows ``run``'s state (itself, or the run a lane belongs to)."""
        seen: set[str] = set()
        while run.run_id not in seen:
            seen.add(run.run_id)
            if run.lane is not None:
                parent = self._runs.get(run.lane.group.run_id)
            elif run.inner is not None:
                parent = run.inner.call.run
            else:
                return run
            if parent is None:
                return run
            run = parent
        return run

    # -- tool calls ---------------------------------------------------------------------------------
    def call(self, call_id: str, run_id: str | None = None) -> ToolCallItem | None:
        """The call ``call_id`` of run ``run_id`` (call ids repeat across runs: a network's tasks, the
        turns of a scripted model); without ``run_id``, the first call with that id."""
        if run_id:
            run = self._runs.get(run_id)
            return run.calls.get(call_id) if run is not None else None
        for other in self._runs.values():
            if call_id in other.calls:
                return other.calls[call_id]
        return None

    def calls(self) -> list[ToolCallItem]:
        return [call for run in self._runs.values() for call in run.calls.values()]

    def _tool_use(self, run_id: str, robot: str, task: str | None, *, call_id: str, tool: str,
                  server: str | None, arguments: Any, started: float | None = None) -> ToolCallItem:
        run = self._run(run_id, robot, task)
        self._end_reasoning(run)
        self._set_status(run, None)
        self._header(run, robot)
        run.text = None
        existing = run.calls.get(call_id)
        if existing is not None:
            return existing
        call = call_item_class(tool)(parent=self._container(run), run=run, call_id=call_id, tool=tool, robot=robot,
                                     server=server, arguments=arguments if arguments is not None else {}, task=task,
                                     started=started)
        run.calls[call_id] = call
        self._add(call)
        return call

    def _approval_requested(self, event: ev.ApprovalRequested) -> None:
        call = self.call(event.id, event.run_id) or self._tool_use(
            event.run_id, event.robot, event.task, call_id=event.id, tool=event.name, server=event.server,
            arguments=event.input)
        call.approval = ApprovalState(state="asking")
        if call.status == "running":
            call.status = "approval"
        self.listener.item_changed(call)

    def _approval_decided(self, event: ev.ApprovalDecided) -> None:
        call = self.call(event.id, event.run_id)
        if call is None:
            return
        approved = event.decision == "approve"
        edited = approved and event.input is not None and event.input != call.arguments
        call.approval = ApprovalState(state="approved" if approved else "denied", scope=event.scope,
                                      reason=event.reason, edited=edited)
        if approved:
            if edited:
                call.arguments = event.input
            if call.status == "approval":
                call.status = "running"
        elif call.status in ("running", "approval"):
            call.status = "denied"
        self.listener.item_changed(call)

    def _tool_progress(self, event: ev.ToolProgress) -> None:
        call = self.call(event.id, event.run_id)
        if call is None or call.status not in ("running", "approval"):
            return
        call.progress = ProgressState(value=event.progress, total=event.total, message=event.message)
        self.listener.item_changed(call)

    def _tool_finished(self, event: ev.ToolResult | ev.ToolError) -> None:
        call = self.call(event.id, event.run_id) or self._tool_use(
            event.run_id, event.robot, event.task, call_id=event.id, tool=event.name, server=event.server,
            arguments=None)
        if isinstance(event, ev.ToolResult):
            call.result = event.payload
            call.duration = event.duration
            error = result_error(event.payload)
            if error is None:
                call.status = "ok"
            else:  # an error carried as a result: shown (and counted) as one
                call.error = error
                call.status = "stopped" if "stopped the run" in str(error) else "error"
        else:
            text = str(event.error)
            denied = (call.approval is not None and call.approval.state == "denied") or \
                text.startswith("Denied by the user") or "approval policy denies" in text
            call.error = event.error
            call.duration = event.duration or call.duration
            call.status = "denied" if denied else ("stopped" if "stopped the run" in text else "error")
        self.listener.item_changed(call)

    # -- changes ---------------------------------------------------------------------------------------
    def change_item(self, change_set_id: str) -> ChangeItem | None:
        """The latest change card of a change set (auto mode makes one per write)."""
        items = self._changes.get(change_set_id)
        return items[-1] if items else None

    def change_items(self, change_set_id: str) -> list[ChangeItem]:
        return list(self._changes.get(change_set_id, []))

    def all_change_items(self) -> list[ChangeItem]:
        """Every change card shown, in the order they came."""
        return [item for items in self._changes.values() for item in items]

    def _change_proposed(self, event: ev.ChangeProposed) -> None:
        existing = self.change_item(event.change_set_id)
        if existing is not None and existing.status == "pending":
            existing.merge_files(list(event.files))
            self.listener.item_changed(existing)
            return
        run = self._run(event.run_id, event.robot, event.task)
        self._header(run, event.robot)
        run.text = None
        item = ChangeItem(parent=self._container(run), run=run, change_set_id=event.change_set_id,
                          robot=event.robot, files=list(event.files))
        self._changes.setdefault(event.change_set_id, []).append(item)
        self._add(item)
        for decision in self._decisions.pop(event.change_set_id, []):
            self.change_decided(decision)

    def change_decided(self, event: ev.ChangeDecided) -> None:
        """What the person decided about a change set (a run's event, or the Changes dock's now)."""
        item = self.change_item(event.change_set_id)
        if item is None:
            self._decisions.setdefault(event.change_set_id, []).append(event)
            return
        for f in event.outcome:
            item.outcome[str(f.get("path"))] = f
        item.status = "decided"
        item.undone = False
        if event.checkpoint_id:
            item.checkpoint_id = event.checkpoint_id
        self.listener.item_changed(item)

    def set_change_files(self, change_set_id: str, files: list[dict[str, Any]]) -> None:
        """The change set's files as now composed (events of parallel calls race): a pending card's list."""
        item = self.change_item(change_set_id)
        if item is not None and item.status == "pending":
            item.merge_files(files)
            self.listener.item_changed(item)

    def set_change_undone(self, item: ChangeItem, undone: bool) -> None:
        """The written changes were undone (or redone) from the card or the Changes dock."""
        item.undone = undone
        self.listener.item_changed(item)

    # -- usage ----------------------------------------------------------------------------------------
    def _usage(self, event: ev.Usage) -> None:
        run = self._run(event.run_id, event.robot, event.task)
        run.usage = Usage(event.total_input_tokens, event.total_output_tokens, event.total_cost,
                          run.usage.reasoning_tokens + event.reasoning_tokens, run.usage.estimated or event.estimated)
        run.model_calls.append(event)
        lane = run.lane or run.inner
        if lane is not None:  # a task's (a robot used as a tool's) usage shows in its lane's header
            lane.usage = run.usage
            self.listener.item_changed(lane)
            return
        run.footer = True
        self.listener.run_changed(run)

    # -- network runs: one lane per task -------------------------------------------------------------
    def lane(self, task: str, run_id: str | None = None) -> LaneItem | None:
        """The lane of ``task`` in network run ``run_id`` (default: the latest network run)."""
        group = self._groups.get(run_id) if run_id else self.latest_group()
        return group.lanes.get(task) if group is not None else None

    def latest_group(self) -> NetworkItem | None:
        for turn in reversed(self.state.turns):
            for item in reversed(turn.items):
                if isinstance(item, NetworkItem):
                    return item
        return None

    def groups(self) -> dict[str, NetworkItem]:
        return dict(self._groups)

    def _task(self, event: ev.TaskStarted | ev.TaskFinished) -> None:
        task = event.task
        if not task:
            return
        group = self._groups.get(event.run_id)
        if group is None:
            network = self._run(event.run_id, event.robot)
            group = NetworkItem(parent=self._container(network), run=network, network=network.robot,
                                run_id=event.run_id)
            network.network = group
            self._groups[event.run_id] = group
            self._add(group)
        lane = group.lanes.get(task)
        if lane is None:
            network_run = group.run
            assert network_run is not None
            lane = LaneItem(parent=group.parent, run=network_run, group=group, task=task, robot=event.robot)
            group.lanes[task] = lane
            group.order.append(task)
            self._add(lane)
        if isinstance(event, ev.TaskStarted):
            # Another task runs now: the earlier answers fold away (unless the person chose).
            for other in group.lanes.values():
                if other is not lane and other.status == "done" and not other.user_toggled and not other.collapsed:
                    other.collapsed = True
                    self.listener.item_changed(other)
            lane.started = event.ts
            lane.message = event.message
            lane.status = "running"
            lane.collapsed = False
        else:
            lane.finished = event.ts
            lane.reason = event.error
            lane.status = event.status
            if event.status == "skipped":
                lane.collapsed = True
            elif event.status == "done":
                group.done.append(task)
                if group.running() and not lane.user_toggled:
                    lane.collapsed = True
        self.listener.item_changed(lane)

    def set_lane_collapsed(self, lane: Lane, collapsed: bool, *, by_user: bool = False) -> None:
        """Fold or open a lane (``by_user``: automatic folding leaves it alone from now on)."""
        if lane.status == "skipped":
            return
        lane.collapsed = collapsed
        lane.user_toggled = lane.user_toggled or by_user
        self.listener.item_changed(lane)

    def _finish_group(self, group: NetworkItem, reason: str, ts: float | None) -> None:
        """The network run ended: stop what still runs, fold every answer but the network's."""
        group.ended = True
        for lane in group.lanes.values():
            if lane.status in ("running", "waiting"):
                lane.status = "cancelled"
                lane.reason = reason
                lane.finished = ts
        answer = group.answer_lane
        for lane in group.lanes.values():
            if not lane.user_toggled and lane.status == "done":
                lane.collapsed = lane is not answer
        counts: dict[str, int] = {}
        for lane in group.lanes.values():
            counts[lane.status] = counts.get(lane.status, 0) + 1
        parts = [f"{len(group.lanes)} task{'s' if len(group.lanes) != 1 else ''}"]
        parts += [f"{n} {LANE_STATUS_TEXT.get(s, s)}" for s, n in counts.items()]
        group.summary = " · ".join(parts)
        for lane in group.lanes.values():
            self.listener.item_changed(lane)
        self.listener.item_changed(group)

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


__all__ = ["INITIAL_TURNS", "LOAD_MORE_TURNS", "ChatPresenter", "compaction_text", "status_text"]


def status_text(event: ev.RunStatus) -> str | None:
    """The activity line for what a run waits for (None: nothing to wait for, the tokens stream)."""
    detail = event.detail
    match event.state:
        case "loading":
            return f"Loading — {detail}" if detail else "Loading…"
        case "connecting":
            return f"Connecting to {event.endpoint}…" if event.endpoint else "Connecting…"
        case "queued":
            return f"Queued — {detail}" if detail else "Queued…"
        case "waiting":
            return f"Waiting — {detail}" if detail else "Waiting for the first token…"
        case "retrying":
            return f"Retrying — {detail}" if detail else "Retrying…"
        case "streaming" | "fallback" | "notice":
            return None
        case _:
            assert_never(event.state)


def compaction_text(event: ev.ContextCompacted) -> str:
    """The marker's line: how many messages were summarised, and the tokens before and after."""
    why = {"manual": " on request", "overflow": " after the server refused the request as too long"}.get(
        event.trigger, "")
    window = f" of {event.window:,}" if event.window else ""
    return (f"⟲ Conversation compacted{why} — {event.newly_replaced} earlier messages summarised "
            f"({event.tokens_before:,} → {event.tokens_after:,} tokens{window})")
