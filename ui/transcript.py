"""Reading a thread for the window: the branch's last turn ids first, rows and events only when shown.

``ThreadSession.transcript()`` reads every event of the branch; for a thread of thousands of
messages that is most of the time to first paint. The window shows the last turns first, so a
:class:`LazyTranscript` reads the ids of the branch's last page only (a walk from the leaf up that
stops after :data:`PAGE` turns), each turn's row a page at a time when the turn is asked for
(:class:`BranchTurns`), and the events of a turn when the turn is rendered (once earlier turns are being
loaded, the page above's ids and events are read ahead in a worker thread, so paging up reads no events on
the window's thread): it is the chat presenter's
:class:`~ui.chat.model.listener.TranscriptSource` (and gives the inspector every event, read off the UI
thread for long threads). The ids above the last page are read when a turn up there is asked for, a page
at a time, or all at once off the window's thread (:meth:`LazyTranscript.add_rest`, given what
:class:`~workspace.persistence.BackgroundBranch` read).

Turns are counted from the branch's end (0: the leaf), which does not move as more of the branch
becomes known: a slice taken from the end (``turns[:-10]``, ``turns[-40:]``) reads only what it reaches;
an index from the root (``turns[5]``) or going through every turn reads the branch to its root first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from workspace import events as ev
    from workspace.persistence import PathPage, Store, TurnInfo
    from workspace.session import TurnView

#: Turns whose ids, rows (and sibling lists) are read at once, counted from the branch's end: opening a
#: thread reads the last page, loading earlier turns the pages before it.
PAGE = 50
#: Turns whose events one read of :meth:`LazyTranscript.events_while` takes.
EVENTS_READ = 200
#: The most events of one turn read for the window (its first half and its last, a notice saying how many are left
#: out between them, a run's text deltas joined as they are read): a turn of 300,000 different events was read whole.
TURN_EVENTS_SHOWN = 20_000

#: The name of the worker thread reading ahead of the turns being loaded.
AHEAD_THREAD = "transcript-ahead"
_ahead_lock = threading.Lock()
_ahead_worker: ThreadPoolExecutor | None = None


def _read_ahead_worker() -> ThreadPoolExecutor:
    """The one worker thread that reads the events of the page above the turns being loaded, made on first use."""
    global _ahead_worker
    with _ahead_lock:
        if _ahead_worker is None:
            _ahead_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=AHEAD_THREAD)
        return _ahead_worker


class LazyTranscript:
    """The current branch of a thread: its last page of ids now, the rest of them on demand or from a worker,
    turn rows a page at a time, events per turn."""

    def __init__(self, store: Store, thread_id: str, leaf_turn_id: str | None = None) -> None:
        self.store = store
        self.thread_id = thread_id
        first = store.path_page(thread_id, leaf_turn_id, limit=PAGE)
        #: The branch's turn ids known so far, the leaf first: its last page, then more of it up to the root.
        self._back: list[str] = first.ids[::-1]
        #: Where the branch goes on above the turns known (the parent of the first one); None: known to the root.
        self.above: str | None = first.above
        self._rows: dict[str, TurnInfo] = {}
        self._branches: dict[str | None, list[str]] = {}
        #: The events of a page read ahead in a worker (by the page's start, counted from the end), and those
        #: read so and not yet shown (by turn id, text coalesced).
        self._ahead: dict[int, Future[tuple[str | None, PathPage | None, dict[str, list[ev.Event]]]]] = {}
        self._events: dict[str, list[ev.Event]] = {}
        self.turns: BranchTurns = BranchTurns(self, 0, None)

    def __len__(self) -> int:
        """The branch's length once :attr:`complete`; until then the number of its last turns known so far."""
        return len(self._back)

    @property
    def complete(self) -> bool:
        """Whether the branch's ids are known up to its root."""
        return self.above is None

    @property
    def leaf_id(self) -> str | None:
        return self._back[0] if self._back else None

    @property
    def ids(self) -> list[str]:
        """The branch's turn ids, root first (the rest of them read now when not yet known)."""
        self.read_to(None)
        return self._back[::-1]

    def read_to(self, count: int | None) -> None:
        """Know at least ``count`` of the branch's last turns (None: all of them), reading the pages above."""
        while self.above is not None and (count is None or len(self._back) < count):
            limit = None if count is None else max(PAGE, count - len(self._back))
            self._extend(self.store.path_page(self.thread_id, self.above, limit=limit))

    def add_rest(self, page: PathPage) -> bool:
        """The ids from an earlier :attr:`above` up to the root, read elsewhere (a worker thread): the ones not
        yet known join. False when ``page`` is not the rest of this branch (nothing changes then)."""
        if self.above is None:
            return True
        ids = page.ids
        try:
            cut = ids.index(self.above)
        except ValueError:
            return False
        self._extend(type(page)(ids[:cut + 1], page.above))
        return True

    def _extend(self, page: PathPage) -> None:
        self._back.extend(reversed(page.ids))
        self.above = page.above

    def index_from_end(self, turn_id: str) -> int | None:
        """Where ``turn_id`` is on the branch, counted from its end (0: the leaf); None: not on it (the branch is
        read to its root for that)."""
        self.read_to(None)
        try:
            return self._back.index(turn_id)
        except ValueError:
            return None

    def turn_from_end(self, back: int) -> TurnInfo:
        """The branch's turn ``back`` turns before its end (0: the leaf), read with the rest of its page if
        not yet read."""
        self.read_to(back + 1)
        turn_id = self._back[back]
        if turn_id not in self._rows:
            self._read_page(back)
        return self._rows[turn_id]

    def _read_page(self, back: int) -> None:
        start = back // PAGE * PAGE  # pages counted from the end: the first one is the last turns
        self._collect()
        self.read_to(start + PAGE)
        missing = [turn_id for turn_id in reversed(self._back[start:start + PAGE]) if turn_id not in self._rows]
        turns = self.store.turns_by_id(missing)
        self._rows.update((t.id, t) for t in turns)
        parents = [t.parent_turn_id for t in turns if t.parent_turn_id not in self._branches]
        if parents:
            self._branches.update(self.store.children_ids(self.thread_id, parents))
        if start:  # earlier turns are being loaded: the next page's events are read meanwhile
            self._read_ahead(start + PAGE)

    def _read_ahead(self, start: int) -> None:
        """Read the events of the page of turns from ``start`` (counted from the end) in a worker thread, and
        the page's ids when not yet known (a walk up from :attr:`above`), so the turns of that page show
        without a read of the store on the caller's (the window's) thread: one read a turn there, its events
        decoded, was about half of what loading an earlier turn cost."""
        if start in self._ahead:
            return
        known = len(self._back)
        if known < start + PAGE and known != start and self.above is not None:
            return  # (part of the page's ids known: it is read when reached)
        store, thread_id = self.store, self.thread_id
        walk_from = self.above if known == start else None
        ids = self._back[start:start + PAGE]

        def read() -> tuple[str | None, PathPage | None, dict[str, list[ev.Event]]]:
            from workspace.persistence import coalesce_text

            with store.reading_apart():
                page = None if walk_from is None else store.path_page(thread_id, walk_from, limit=PAGE)
                read_ids = ids if page is None else page.ids
                by_turn = store.events_of(read_ids, fold=True, shown=TURN_EVENTS_SHOWN)
            return walk_from, page, {turn_id: coalesce_text(events) for turn_id, events in by_turn.items()}

        if ids or walk_from is not None:
            self._ahead[start] = _read_ahead_worker().submit(read)

    def _collect(self) -> None:
        """Take in what the worker read ahead and is done: the page's ids (unless read meanwhile) and events."""
        for start, future in list(self._ahead.items()):
            if not future.done():
                continue
            del self._ahead[start]
            if future.exception() is not None:  # (a failed read: the turns are read one by one instead)
                continue
            walk_from, page, events = future.result()
            if page is not None and walk_from is not None and walk_from == self.above:
                self._extend(page)
            self._events.update(events)

    def view(self, turn: TurnInfo) -> TurnView:
        """The TurnView of ``turn`` (a TurnInfo): its events (text coalesced) and siblings."""
        from workspace.persistence import coalesce_text
        from workspace.session import TurnView

        self._collect()
        events = self._events.pop(turn.id, None)
        if events is None:
            events = coalesce_text(self.store.turn_events(turn.id, fold=True, shown=TURN_EVENTS_SHOWN))
        if turn.parent_turn_id not in self._branches:  # a turn not read through this transcript's pages
            self._branches.update(self.store.children_ids(self.thread_id, [turn.parent_turn_id]))
        siblings = self._branches.get(turn.parent_turn_id) or [turn.id]
        index = siblings.index(turn.id) if turn.id in siblings else 0
        return TurnView(turn, events, index, len(siblings), tuple(siblings))

    def all_events(self) -> list[ev.Event]:
        """Every event of the branch, in order (for the inspector)."""
        events = self.events_while(lambda: True)
        assert events is not None  # (always wanted)
        return events

    def events_while(self, wanted: Callable[[], bool]) -> list[ev.Event] | None:
        """:meth:`all_events`, read a few hundred turns at a time, asking ``wanted`` before each read (from
        whichever thread reads): None as soon as it says no. A worker reading a long thread the person has
        left stops, instead of holding the store's lock, read after read, while the next thread opens.

        The branch is walked from its end up a page at a time (:meth:`Store.path_page`), each page's events
        read with it: reading the whole branch's rows in one query held the store's lock for 250-300 ms at
        10,000 turns, and the window's own reads (a search hit's turns coming in) waited for it."""
        from workspace.persistence import coalesce_text

        pages: list[list[ev.Event]] = []
        page: PathPage | None = None
        while page is None or page.above is not None:
            if not wanted():
                return None
            page = self.store.path_page(self.thread_id, self.leaf_id if page is None else page.above,
                                        limit=EVENTS_READ)
            by_turn = self.store.events_of(page.ids, fold=True, shown=TURN_EVENTS_SHOWN)
            pages.append([event for turn_id in page.ids for event in coalesce_text(by_turn.get(turn_id, []))])
        return [event for events in reversed(pages) for event in events]


class BranchTurns(Sequence["TurnInfo"]):
    """Some of a :class:`LazyTranscript`'s turns (all of them, or a slice) as ``TurnInfo``, held as turns
    counted from the branch's end: from ``stop`` (0: up to the leaf) to ``start`` turns before the end
    (None: from the root). A turn's row is read (with its page) when the turn is asked for; a slice is
    another ``BranchTurns`` over the same transcript, so slicing reads nothing beyond the ids it reaches.

    Its length costs nothing: for a slice reaching the root while the branch's ids are not all known, it is
    the turns known so far (it grows as the rest comes). A negative index or a slice from the end reads
    only the ids it reaches; an index from the root, iterating or reversing reads them to the root."""

    def __init__(self, transcript: LazyTranscript, stop: int, start: int | None) -> None:
        self._transcript = transcript
        self._stop = stop
        self._start = start

    def _top(self) -> int:
        """Where the slice starts, counted from the end, within what is known."""
        known = len(self._transcript)
        return known if self._start is None else min(self._start, known)

    def __len__(self) -> int:
        if self._start is None:
            self._transcript.read_to(self._stop + 1)  # (a turn above the ones left out, when there is one)
        return max(0, self._top() - self._stop)

    @overload
    def __getitem__(self, key: int) -> TurnInfo: ...

    @overload
    def __getitem__(self, key: slice) -> BranchTurns: ...

    def __getitem__(self, key: int | slice) -> TurnInfo | BranchTurns:
        if isinstance(key, slice):
            return self._slice(key)
        if key < 0:
            back = self._stop - key - 1
            self._transcript.read_to(back + 1)
            if back >= self._top():
                raise IndexError(key)
        else:
            self._whole()
            back = self._top() - 1 - key
            if back < self._stop:
                raise IndexError(key)
        return self._transcript.turn_from_end(back)

    def _slice(self, key: slice) -> BranchTurns:
        if key.step not in (None, 1):
            raise ValueError("a branch's turns are sliced without a step")
        if any(bound is not None and bound >= 0 for bound in (key.start, key.stop)):
            self._whole()  # counted from the root: the branch's ids to its root first
        length = len(self)

        def back(bound: int | None, default: int | None) -> int | None:
            if bound is None:
                return default
            if bound < 0:
                return min(self._stop - bound, self._top() if self._start is not None else self._stop - bound)
            return self._top() - min(bound, length)

        stop = back(key.stop, self._stop)
        start = back(key.start, self._start)
        assert stop is not None
        if start is not None:
            self._transcript.read_to(start)
            start = min(start, self._top())
        return BranchTurns(self._transcript, min(stop, start) if start is not None else stop, start)

    def _whole(self) -> None:
        if self._start is None:
            self._transcript.read_to(None)

    def __iter__(self) -> Iterator[TurnInfo]:
        self._whole()
        for back in range(self._top() - 1, self._stop - 1, -1):
            yield self._transcript.turn_from_end(back)
