"""Network runs in the chat: one lane per task (made by ``task_started`` / ``task_finished``, the task's robot
working inside it), earlier answers folding as the next task starts, and the summary when the run ends.

:class:`NetworkLanes` is the presenter's reducer of ``task_started`` and ``task_finished``; the network
runs' items are the :class:`~ui.chat.model.column.Column`'s ``groups`` (where a task's run goes is found
there), and the end of a network run folds them through :meth:`NetworkLanes.finish_group`."""

from __future__ import annotations

from ui.chat.model.column import Column
from ui.chat.model.state import Lane, LaneItem, NetworkItem
from ui.formatting import LANE_STATUS_TEXT
from workspace import events as ev


class NetworkLanes:
    """The lanes of network runs (a reducer of :class:`~ui.chat.model.presenter.ChatPresenter`; it keeps
    nothing of its own)."""

    def lane(self, column: Column, task: str, run_id: str | None = None) -> LaneItem | None:
        """The lane of ``task`` in network run ``run_id`` (default: the latest network run)."""
        group = column.groups.get(run_id) if run_id else self.latest_group(column)
        return group.lanes.get(task) if group is not None else None

    @staticmethod
    def latest_group(column: Column) -> NetworkItem | None:
        for turn in reversed(column.state.turns):
            for item in reversed(turn.items):
                if isinstance(item, NetworkItem):
                    return item
        return None

    @staticmethod
    def task(column: Column, event: ev.TaskStarted | ev.TaskFinished) -> None:
        task = event.task
        if not task:
            return
        group = column.groups.get(event.run_id)
        if group is None:
            network = column.run(event.run_id, event.robot)
            group = NetworkItem(parent=column.container(network), run=network, network=network.robot,
                                run_id=event.run_id)
            network.network = group
            column.groups[event.run_id] = group
            column.add(group)
        lane = group.lanes.get(task)
        if lane is None:
            network_run = group.run
            assert network_run is not None
            lane = LaneItem(parent=group.parent, run=network_run, group=group, task=task, robot=event.robot)
            group.lanes[task] = lane
            group.order.append(task)
            column.add(lane)
        if isinstance(event, ev.TaskStarted):
            # Another task runs now: the earlier answers fold away (unless the person chose).
            for other in group.lanes.values():
                if other is not lane and other.status == "done" and not other.user_toggled and not other.collapsed:
                    other.collapsed = True
                    column.listener.item_changed(other)
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
        column.listener.item_changed(lane)

    @staticmethod
    def set_lane_collapsed(column: Column, lane: Lane, collapsed: bool, *, by_user: bool = False) -> None:
        """Fold or open a lane (``by_user``: automatic folding leaves it alone from now on)."""
        if lane.status == "skipped":
            return
        lane.collapsed = collapsed
        lane.user_toggled = lane.user_toggled or by_user
        column.listener.item_changed(lane)

    @staticmethod
    def finish_group(column: Column, group: NetworkItem, reason: str, ts: float | None) -> None:
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
            column.listener.item_changed(lane)
        column.listener.item_changed(group)


__all__ = ["NetworkLanes"]
