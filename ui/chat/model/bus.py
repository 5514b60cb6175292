"""Messages between robots on a network's bus in the chat: ``bus_message`` events as compact cards.

A message shows in the sender's lane when the sender is running a task of the network, else in the lane of
the robot it was sent to (a robot that answers messages without a task of its own: its reply sits under the
question that asked for it), else in the turn below the network's lanes. The card says "sender → to", in
the sender's lane colour, then the content.
"""

from __future__ import annotations

from dataclasses import dataclass

from ui.chat.model.column import Column, open_group
from ui.chat.model.state import Item, Lane, LaneItem, NetworkItem, RunState, TurnState
from workspace import events as ev


@dataclass(eq=False, kw_only=True)
class BusMessageItem(Item):
    """One message between robots: who sent it to whom, what it says, which message it answers."""

    sender: str
    to: str
    text: str
    message_id: str = ""
    in_reply_to: str | None = None
    #: The network whose lanes it is shown among (its robots' colours), None outside one.
    network: str | None = None


def content_text(content: str | dict[str, object]) -> str:
    """The content as text: a mapping as ``key: value`` lines."""
    if isinstance(content, dict):
        return "\n".join(f"{key}: {value}" for key, value in content.items())
    return str(content)


class BusMessages:
    """The presenter's reducer of ``bus_message`` (it keeps nothing of its own)."""

    @staticmethod
    def message(column: Column, event: ev.BusMessage) -> None:
        run = column.run(event.run_id, event.robot, event.task)
        group = _group(column, run)
        lane = _lane(group, event) if group is not None else None
        parent: TurnState | Lane = lane if lane is not None else column.container(run)
        run.text = None  # text after the message starts a new block below it
        item = BusMessageItem(parent=parent, run=run, sender=event.sender, to=event.to,
                              text=content_text(event.content), message_id=event.message_id,
                              in_reply_to=event.in_reply_to,
                              network=group.network if group is not None else None)
        column.add(item)


def _group(column: Column, run: RunState) -> NetworkItem | None:
    if run.lane is not None:
        return run.lane.group
    return column.groups.get(run.run_id) or open_group(run.turn)


def _lane(group: NetworkItem, event: ev.BusMessage) -> LaneItem | None:
    """The sender's running lane, else the recipient's."""
    return group.lane_for_robot(event.sender) or group.lane_for_robot(event.to)


__all__ = ["BusMessageItem", "BusMessages", "content_text"]
