"""Consecutive turns far from the screen as one spacer of the chat's column.

A turn that is not widgets still takes its height in the column, so the scroll bar is a thread's length and a
turn made again lands where it was. One spacer per such turn would make the column's layout as long as the
thread: Qt's box layout walks every item on each change (a message sent, a delta, a run's end), so a
10,000-turn thread paid 10,000 items a step. A :class:`TurnGap` stands for a run of consecutive turns instead:
one item, as tall as its turns and the spacing between them, their heights kept in a plain list (where a turn
of it is, is a prefix sum: :meth:`TurnGap.span`). The column holds one gap between two stretches of widgets, so
its length is the screen's few turns and the gaps between them, whatever the thread's length.
"""

from __future__ import annotations

from itertools import accumulate

from PySide6.QtWidgets import QSizePolicy, QSpacerItem

from ui.chat.model.state import TurnState


class TurnGap(QSpacerItem):
    """Consecutive turns shown as one empty spacer, as tall as they are laid out one under the other
    (``spacing``: the column's spacing, which would have separated them)."""

    def __init__(self, spacing: int) -> None:
        super().__init__(0, 1, QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        self.spacing = spacing
        #: The turns, in the column's order, and each one's height (px).
        self.turns: list[TurnState] = []
        self.heights: list[int] = []
        self._total = 0
        #: The heights of the turns above each one (px) and each one's place in :attr:`turns`, made again when asked after a change.
        self._tops: list[int] | None = None
        self._where: dict[TurnState, int] | None = None

    def insert(self, index: int, turn: TurnState, height: int) -> None:
        self.turns.insert(index, turn)
        self.heights.insert(index, max(1, height))
        self._total += max(1, height)
        self._changed()

    def append(self, turn: TurnState, height: int) -> None:
        """``turn`` after the gap's turns (a turn given back below the gap above the screen: what a step at the
        end of a long thread does, so the gap's place of each turn is kept, not made again)."""
        tops, where = self._tops, self._where
        self.insert(len(self.turns), turn, height)
        if tops is not None and where is not None:
            tops.append(tops[-1] + self.heights[-1])
            where[turn] = len(self.turns) - 1
            self._tops, self._where = tops, where

    def extend(self, other: TurnGap) -> None:
        """Take ``other``'s turns after this one's (the two gaps met: a turn between them was given back)."""
        self.turns += other.turns
        self.heights += other.heights
        self._total += other._total
        self._changed()

    def remove(self, turn: TurnState) -> None:
        index = self.where(turn)
        self._total -= self.heights[index]
        del self.turns[index], self.heights[index]
        self._changed()

    def split(self, turn: TurnState) -> TurnGap | None:
        """Take ``turn`` out (it becomes widgets): this gap keeps the turns above it, the gap returned holds
        the ones below (None when it was the last)."""
        index = self.where(turn)
        below: TurnGap | None = None
        if index + 1 < len(self.turns):
            below = TurnGap(self.spacing)
            below.turns, below.heights = self.turns[index + 1:], self.heights[index + 1:]
            below._total = sum(below.heights)
            below._changed()
        del self.turns[index:], self.heights[index:]
        self._total = sum(self.heights)
        self._changed()
        return below

    def where(self, turn: TurnState) -> int:
        """The turn's place among the gap's turns."""
        if self._where is None:
            self._where = dict(zip(self.turns, range(len(self.turns)), strict=True))
        return self._where[turn]

    def span(self, turn: TurnState) -> tuple[int, int]:
        """The turn's top and bottom in the column (px), where the layout last put the gap."""
        index = self.where(turn)
        if self._tops is None:  # (the heights above each turn: C's loops, no Python call a turn)
            self._tops = list(accumulate(self.heights, initial=0))
        top = self.geometry().top() + self._tops[index] + index * self.spacing
        return top, top + self.heights[index] - 1

    def _changed(self) -> None:
        self._tops = None
        self._where = None
        height = self._total + self.spacing * max(0, len(self.heights) - 1)
        self.changeSize(0, max(1, height), QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)


__all__ = ["TurnGap"]
