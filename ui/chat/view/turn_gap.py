"""Consecutive turns far from the screen as one spacer of the chat's column.

A turn that is not widgets still takes its height in the column, so the scroll bar is a thread's length and a
turn made again lands where it was. One spacer per such turn would make the column's layout as long as the
thread: Qt's box layout walks every item on each change (a message sent, a delta, a run's end), so a
10,000-turn thread paid 10,000 items a step. A :class:`TurnGap` stands for a run of consecutive turns instead:
one item, as tall as its turns and the spacing after each (the column's layout puts no spacing next to an empty
item such as a spacer: the widgets above a gap have their spacing after them, the ones below none before them), their heights kept in a plain list (where a turn
of it is, is a prefix sum: :meth:`TurnGap.span`). The column holds one gap between two stretches of widgets, so
its length is the screen's few turns and the gaps between them, whatever the thread's length.
"""

from __future__ import annotations

from itertools import accumulate

from PySide6.QtWidgets import QSizePolicy, QSpacerItem

from ui.chat.model.state import TurnState


class TurnGap(QSpacerItem):
    """Consecutive turns shown as one empty spacer, as tall as they are laid out one under the other
    (``spacing``: the column's spacing, which would have followed each of them)."""

    def __init__(self, spacing: int) -> None:
        super().__init__(0, 1, QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        self.spacing = spacing
        #: The turns, in the column's order, and each one's height (px).
        self.turns: list[TurnState] = []
        self.heights: list[int] = []
        self._total = 0
        #: Each turn's place, made again when asked after a change in the middle: a key (its index plus
        #: :attr:`_first`'s key) and the heights above it (plus :attr:`_first`'s). Keys and heights counted
        #: from the first turn's, so a turn added above the first or below the last (earlier turns loaded, a
        #: turn given back below the screen) keeps every other turn's place: with an index and a prefix sum
        #: from the top, each earlier turn loaded while paging to a thread's top walked all the gap's turns again.
        self._places: dict[TurnState, tuple[int, int]] | None = None
        self._first = (0, 0)
        #: How many times the places of all the gap's turns were worked out (a walk over them; for tests).
        self.walks = 0

    def insert(self, index: int, turn: TurnState, height: int) -> None:
        """``turn`` at ``index`` among the gap's turns; at 0 (an earlier turn loaded above the gap's first),
        the other turns' places are kept."""
        places = self._places
        self.turns.insert(index, turn)
        self.heights.insert(index, max(1, height))
        self._total += max(1, height)
        self._changed(keep=index == 0)
        if places is not None and index == 0:
            key, above = self._first
            self._first = key - 1, above - self.heights[0]
            places[turn] = self._first

    def append(self, turn: TurnState, height: int) -> None:
        """``turn`` after the gap's turns (a turn given back below the gap above the screen: what a step at the
        end of a long thread does): the other turns' places are kept."""
        places = self._places
        self.turns.append(turn)
        self.heights.append(max(1, height))
        self._total += max(1, height)
        self._changed(keep=True)
        if places is not None:
            if len(self.turns) == 1:
                self._first = (0, 0)
                places[turn] = self._first
            else:
                key, above = places[self.turns[-2]]
                places[turn] = (key + 1, above + self.heights[-2])

    def extend(self, other: TurnGap) -> None:
        """Take ``other``'s turns after this one's (the two gaps met: a turn between them was given back): this
        gap's turns keep their places, ``other``'s are placed after them (a step a turn of ``other``: the
        caller gives the larger gap the smaller's turns)."""
        places = self._places
        count = len(self.turns)
        self.turns += other.turns
        self.heights += other.heights
        self._total += other._total
        self._changed(keep=True)
        if places is not None and count:
            key, above = places[self.turns[count - 1]]
            for i in range(count, len(self.turns)):
                above += self.heights[i - 1]
                key += 1
                places[self.turns[i]] = (key, above)
        elif places is not None:
            self._places = None

    def extend_above(self, other: TurnGap) -> None:
        """Take ``other``'s turns before this one's: :meth:`extend` the other way round."""
        places = self._places
        count = len(other.turns)
        self.turns[:0] = other.turns
        self.heights[:0] = other.heights
        self._total += other._total
        self._changed(keep=True)
        if places is not None and len(self.turns) > count:
            key, above = self._first
            for i in range(count - 1, -1, -1):
                above -= self.heights[i]
                key -= 1
                places[self.turns[i]] = (key, above)
            self._first = key, above
        elif places is not None:
            self._places = None

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
        self._changed(keep=True)  # (the turns above keep their places: the first turn's is the same)
        return below

    def split_above(self, turn: TurnState) -> TurnGap | None:
        """:meth:`split` the other way round, for a turn near the gap's top: this gap keeps the turns below it,
        their places kept, and the gap returned holds the ones above (None when it was the first). Making the
        top turn of a long thread paged to its top moved the thousands of turns below into a new gap, each
        looked up there again."""
        index = self.where(turn)
        above: TurnGap | None = None
        if index > 0:
            above = TurnGap(self.spacing)
            above.turns, above.heights = self.turns[:index], self.heights[:index]
            above._total = sum(above.heights)
            above._changed()
        del self.turns[:index + 1], self.heights[:index + 1]
        self._total = sum(self.heights)
        places = self._places
        self._changed(keep=True)
        if places is not None and self.turns:
            self._first = places[self.turns[0]]
        return above

    def where(self, turn: TurnState) -> int:
        """The turn's place among the gap's turns."""
        return self._place(turn)[0] - self._first[0]

    def span(self, turn: TurnState) -> tuple[int, int]:
        """The turn's top and bottom in the column (px), where the layout last put the gap."""
        key, above = self._place(turn)
        index = key - self._first[0]
        top = self.geometry().top() + above - self._first[1] + index * self.spacing
        return top, top + self.heights[index] - 1

    def _place(self, turn: TurnState) -> tuple[int, int]:
        places = self._places
        if places is None:  # (the heights above each turn: C's loops, no Python call a turn)
            self.walks += 1
            above = accumulate(self.heights, initial=0)  # (one more than the turns: the gap's height at the end)
            places = self._places = dict(zip(self.turns, zip(range(len(self.turns)), above, strict=False), strict=True))
            self._first = (0, 0)
        return places[turn]

    def _changed(self, *, keep: bool = False) -> None:
        """The gap's height anew; its turns' places forgotten unless ``keep`` (the caller keeps them)."""
        if not keep:
            self._places = None
        height = self._total + self.spacing * len(self.heights)
        self.changeSize(0, max(1, height), QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)


__all__ = ["TurnGap"]
