"""The chat's column as the presenter's reducers share it: one explicit, typed context.

:class:`Column` holds the view state, the listener, the runs shown (:attr:`Column.runs`), the network
runs' items (:attr:`Column.groups`), the turn a stored thread loads into (:attr:`Column.loading`), and
what every reducer does with them: where a run's items go (its turn, a network task's lane, the card of
the call that used a robot as a tool), adding an item, a robot's header, a notice, and what a run waits
for (its activity).

The presenter (:class:`~ui.chat.model.presenter.ChatPresenter`) owns one ``Column`` and passes it to its
reducers — :mod:`ui.chat.model.text`, :mod:`ui.chat.model.calls`, :mod:`ui.chat.model.changes`,
:mod:`ui.chat.model.lanes`, :mod:`ui.chat.model.runs` — as the first argument of their methods; a new
column (a thread opens) is a new ``Column``. Everything here is public: what the reducers share is this
object, not private fields of one another.
"""

from __future__ import annotations

import time

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

#: What a run is doing between its start (or a tool's result) and the model's first words.
WAITING = "Waiting for the model…"
#: What a run is doing while a person is asked to approve a call.
APPROVAL = "Waiting for your approval (Ctrl+J)"


class Column:
    """The state, the listener and the runs (see the module docstring)."""

    def __init__(self, listener: ChatListener | None = None) -> None:
        self.listener: ChatListener = listener if listener is not None else Silent()
        self.state = ChatState()
        #: The runs shown, by run id (a robot used as a tool's included).
        self.runs: dict[str, RunState] = {}
        #: The item of each network run shown, by its run id.
        self.groups: dict[str, NetworkItem] = {}
        #: The turn stored events go to while one loads.
        self.loading: TurnState | None = None

    # -- runs ------------------------------------------------------------------------------------------
    def run(self, run_id: str, robot: str, task: str | None = None) -> RunState:
        """The run ``run_id``, made when first seen: it joins the turn being loaded (or else the last
        turn), and a network task's lane when its robot works for one."""
        run = self.runs.get(run_id)
        if run is not None:
            return run
        turn = self.loading or (self.state.turns[-1] if self.state.turns else None)
        if turn is None:  # a run with no message of its own (an approval asked outside a turn)
            turn = TurnState()
            self.state.turns.append(turn)
            self.listener.turn_added(turn)
        run = RunState(run_id=run_id, robot=robot, turn=turn)
        self.runs[run_id] = run
        turn.runs.append(run)
        group = open_group(turn)
        if group is not None and run_id not in self.groups:
            lane = (group.lanes.get(task) if task else None) or group.lane_for_robot(robot)
            if lane is not None:  # a network task's robot: its work goes into the task's lane
                run.lane = lane
                parent = self.runs.get(group.run_id)
                if parent is not None:
                    parent.children.append(run)
        return run

    def inner_run(self, event: ev.Event) -> RunState | None:
        """The run of a robot used as a tool: a lane inside its call's card (None when the call is not
        shown: the run then shows like any other)."""
        parent = self.runs.get(event.parent_run_id or "")
        call = parent.calls.get(event.parent_tool_id or "") if parent is not None else None
        if parent is None or call is None:
            return None
        run = RunState(run_id=event.run_id, robot=event.robot, turn=parent.turn)
        lane = CallLaneItem(parent=call.parent, run=run, call=call, robot=event.robot, run_id=event.run_id,
                            status="running", started=event.ts)
        run.inner = lane
        call.inner = lane
        self.runs[event.run_id] = run
        parent.turn.runs.append(run)
        self.listener.item_added(lane)
        return run

    def ended(self, run: RunState) -> bool:
        """Whether ``run`` ended (a task's run: when its network run did)."""
        return run.lane.group.ended if run.lane is not None else run.end is not None

    def top(self, run: RunState) -> RunState:
        """The run whose footer shows ``run``'s state (itself, or the run a lane belongs to)."""
        if run.lane is None and run.inner is None:  # most runs: their own (every token asks)
            return run
        seen: set[str] = set()
        while run.run_id not in seen:
            seen.add(run.run_id)
            if run.lane is not None:
                parent = self.runs.get(run.lane.group.run_id)
            elif run.inner is not None:
                parent = run.inner.call.run
            else:
                return run
            if parent is None:
                return run
            run = parent
        return run

    # -- items -----------------------------------------------------------------------------------------
    def add(self, item: Item) -> None:
        """A new item at the end of its parent (its turn, or its lane)."""
        item.parent.items.append(item)
        self.listener.item_added(item)

    @staticmethod
    def container(run: RunState) -> TurnState | Lane:
        """Where ``run``'s next item goes: its call's lane, its task's lane, or its turn."""
        if run.inner is not None:
            return run.inner
        return run.lane if run.lane is not None else run.turn

    def header(self, run: RunState, robot: str) -> None:
        """The robot's name above its work (again when another robot speaks in the run)."""
        if run.lane is not None or run.inner is not None or run.last_robot == robot:
            return
        run.last_robot = robot
        self.add(HeaderItem(parent=run.turn, run=run, robot=robot))

    def notice(self, run: RunState, text: str, *, level: NoticeLevel = "info", details: str | None = None,
               action: NoticeAction | None = None) -> NoticeItem:
        """A line about how the run goes, in its turn (or its task's lane)."""
        run.text = None  # text after the notice starts a new block below it
        item = NoticeItem(parent=self.container(run), run=run, text=text, level=level, details=details,
                          action=action)
        self.add(item)
        return item

    # -- what a run is doing ---------------------------------------------------------------------------
    def set_activity(self, run: RunState, text: str | None, *, since: float | None = None) -> None:
        """What ``run`` is doing while nothing else shows it (None: nothing to say). The run-status
        events of a provider (connecting, retrying) come here; a run that ended says nothing."""
        if run.end is not None or self.loading is not None:
            text = None  # a stored thread replays what happened, not what was awaited
        if text == run.activity:
            return
        run.activity = text
        run.activity_since = (since if since is not None else time.time()) if text else None
        self.listener.run_changed(run)

    def set_status(self, run: RunState, text: str | None, *, since: float | None = None) -> None:
        """What the run waits for (connecting, queued, retrying), as the activity of the run that shows it
        (itself, or the run a task's lane or a tool robot belongs to); None: the wait is over."""
        self.set_activity(self.top(run), text, since=since)


def open_group(turn: TurnState) -> NetworkItem | None:
    """The network run of ``turn`` still going (its task runs go into its lanes)."""
    for item in reversed(turn.items):
        if isinstance(item, NetworkItem) and not item.ended:
            return item
    return None


__all__ = ["APPROVAL", "WAITING", "Column", "open_group"]
