"""Network runs in the chat: one lane per task (made by ``task_started`` / ``task_finished``, the task's robot
working inside it), earlier answers folding as the next task starts, and the summary when the run ends."""

from __future__ import annotations

from ui.chat.model.column import Column
from ui.chat.model.state import Lane, LaneItem, NetworkItem
from ui.formatting import LANE_STATUS_TEXT
from workspace import events as ev


class NetworkLanes(Column):
    """The lanes of network runs (a part of :class:`~ui.chat.model.presenter.ChatPresenter`)."""

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
