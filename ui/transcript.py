"""Reading a thread for the window: the branch's turn ids first, rows and events only when shown.

``ThreadSession.transcript()`` reads every event of the branch; for a thread of thousands of
messages that is most of the time to first paint. The window shows the last turns first, so
it reads the branch's turn ids (one query of ids only), each turn's row a page at a time when
the turn is asked for (:class:`BranchTurns`), and the events of a turn when the turn is rendered:
a :class:`LazyTranscript` is the chat presenter's :class:`~ui.chat.model.listener.TranscriptSource` (and
gives the inspector every event, read off the UI thread for long threads).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from workspace import events as ev
    from workspace.persistence import Store, TurnInfo
    from workspace.session import TurnView

#: Turns whose rows (and sibling lists) are read at once, counted from the branch's end: opening a
#: thread reads the last page, loading earlier turns the pages before it.
PAGE = 50


class LazyTranscript:
    """The current branch of a thread: its ids now, turn rows a page at a time, events per turn."""

    def __init__(self, store: Store, thread_id: str, leaf_turn_id: str | None = None) -> None:
        self.store = store
        self.thread_id = thread_id
        #: The branch's turn ids, root first.
        self.ids: list[str] = store.path_ids(thread_id, leaf_turn_id)
        self._rows: dict[str, TurnInfo] = {}
        self._branches: dict[str | None, list[str]] = {}
        self.turns: BranchTurns = BranchTurns(self, range(len(self.ids)))

    def __len__(self) -> int:
        return len(self.ids)

    def turn(self, index: int) -> TurnInfo:
        """The branch's ``index``-th turn (0: the root), read with the rest of its page if not yet read."""
        turn_id = self.ids[index]
        if turn_id not in self._rows:
            self._read_page(index)
        return self._rows[turn_id]

    def _read_page(self, index: int) -> None:
        count = len(self.ids)
        page = (count - 1 - index) // PAGE  # pages counted from the end: the first one is the last turns
        stop = count - page * PAGE
        missing = [turn_id for turn_id in self.ids[max(0, stop - PAGE):stop] if turn_id not in self._rows]
        turns = self.store.turns_by_id(missing)
        self._rows.update((t.id, t) for t in turns)
        parents = [t.parent_turn_id for t in turns if t.parent_turn_id not in self._branches]
        if parents:
            self._branches.update(self.store.children_ids(self.thread_id, parents))

    def view(self, turn: TurnInfo) -> TurnView:
        """The TurnView of ``turn`` (a TurnInfo): its events (text coalesced) and siblings."""
        from workspace.persistence import coalesce_text
        from workspace.session import TurnView

        events = coalesce_text(self.store.turn_events(turn.id))
        if turn.parent_turn_id not in self._branches:  # a turn not read through this transcript's pages
            self._branches.update(self.store.children_ids(self.thread_id, [turn.parent_turn_id]))
        siblings = self._branches.get(turn.parent_turn_id) or [turn.id]
        index = siblings.index(turn.id) if turn.id in siblings else 0
        return TurnView(turn, events, index, len(siblings), tuple(siblings))

    def all_events(self) -> list[ev.Event]:
        """Every event of the branch, in order (for the inspector)."""
        from workspace.persistence import coalesce_text

        out: list[ev.Event] = []
        for _turn, events in self.store.path_events(self.thread_id, self.ids[-1] if self.ids else None):
            out.extend(coalesce_text(events))
        return out


class BranchTurns(Sequence["TurnInfo"]):
    """Some of a :class:`LazyTranscript`'s turns (all of them, or a slice) as ``TurnInfo``: its length
    costs nothing, and a turn's row is read (with its page) when the turn is asked for. A slice is
    another ``BranchTurns`` over the same transcript, so slicing reads nothing."""

    def __init__(self, transcript: LazyTranscript, indices: range) -> None:
        self._transcript = transcript
        self._indices = indices

    def __len__(self) -> int:
        return len(self._indices)

    @overload
    def __getitem__(self, key: int) -> TurnInfo: ...

    @overload
    def __getitem__(self, key: slice) -> BranchTurns: ...

    def __getitem__(self, key: int | slice) -> TurnInfo | BranchTurns:
        if isinstance(key, slice):
            return BranchTurns(self._transcript, self._indices[key])
        return self._transcript.turn(self._indices[key])

    def __iter__(self) -> Iterator[TurnInfo]:
        for index in self._indices:
            yield self._transcript.turn(index)
