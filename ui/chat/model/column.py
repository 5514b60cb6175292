"""The chat's column as the presenter's mixins share it: the view state, the listener, the runs shown and
where each run's items go (its turn, a network task's lane, the card of the call that used a robot as a
tool), the notices in it, and what a run waits for.

:class:`Column` is the base of every part of :class:`~ui.chat.model.presenter.ChatPresenter`: the text and thinking
(:mod:`ui.chat.model.text`), tool calls (:mod:`ui.chat.model.calls`), change cards (:mod:`ui.chat.model.changes`) and network
lanes (:mod:`ui.chat.model.lanes`) add items through it; the presenter's ``match`` over the events calls them.
"""

from __future__ import annotations

from typing import assert_never

from ui.chat.model.listener import ChatListener, Silent
from ui.chat.model.state import (
    CallLaneItem,
    ChatState,
    HeaderItem,
    Item,
    Lane,
    NetworkItem,
    NoticeAction,
    NoticeItem,
    NoticeLevel,
    RunState,
    TurnState,
)
from workspace import events as ev
from workspace.session.recording import NOT_SAVED


class Column:
    """The state, the listener and the runs (see the module docstring)."""

    def __init__(self, listener: ChatListener | None = None) -> None:
        self.listener: ChatListener = listener if listener is not None else Silent()
        self.state = ChatState()
        self._forget()

    def _forget(self) -> None:
        """Drop what is known of the runs shown (a new column); each part drops its own, then calls this."""
        self._runs: dict[str, RunState] = {}
        self._groups: dict[str, NetworkItem] = {}
        #: The turn stored events go to while one loads.
        self._loading: TurnState | None = None

    # -- runs ------------------------------------------------------------------------------------------
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

    # -- what the run waits for ------------------------------------------------------------------------
    def _status(self, event: ev.RunStatus) -> None:
        run = self._run(event.run_id, event.robot, event.task)
        match event.state:
            case "fallback":
                self._set_status(run, None)
                self.notice(run, f"⇄ {event.detail}" if event.detail else f"⇄ Continuing with {event.model}",
                            level="warning")
            case "notice":  # the run's end not saved (a full disk) is a warning; the rest are news
                self.notice(run, event.detail, level="warning" if event.detail.startswith(NOT_SAVED) else "info")
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
