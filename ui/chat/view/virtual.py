"""The chat's turns as widgets only near the screen: the cost of a thread does not grow with its length.

Every turn of the presenter's state is in the column, but only the turns on screen (and a margin of a
screen above and two below) are widgets; the others are placeholders, as tall as the turn was (or as a turn is
on average, for one never shown), while their data stays in the presenter's state. Consecutive placeholders
are one spacer, a :class:`~ui.chat.view.turn_gap.TurnGap`, so the column's layout holds the screen's few
turns and the gaps between them, not an item per turn. :class:`TurnWindow` keeps it so after every scroll,
resize and change of range:

- a placeholder that comes near the screen is made into the turn's widgets again, from the state (the
  same widgets the listener's calls make, so a turn scrolled back into view shows what it showed);
  a widget at a time, under a frame's budget that the steps of a frame share (the loading of earlier turns
  too, and Qt's work between them counts: a step due once it is spent waits for the next frame), a widget
  made only if what one of its kind cost (:meth:`TurnWindow.note_cost`) fits in what is left and shown by the
  step that made it, so scrolling never freezes (a turn's footers come in the step after its user message, a tool
  card's texts, its arguments and its result, each in a step of its own after the card's:
  :attr:`~ui.chat.view.cards.ToolCard.later`); a turn made above what is on
  screen keeps what is on screen in place; a search result's turn (:meth:`TurnWindow.make`) is made so too,
  before the others, and the screen goes to it after;
- a thread shown comes in so too: its last turns' data as placeholders in the step that shows it, their
  widgets in the steps after it, the newest first while the screen keeps to the column's end;
- a turn gives its widgets back (released) once a quarter of a screen beyond that margin (:data:`BEYOND`), unless
  it is still running, asks something, holds the keyboard or is the last turn: a thread grown live holds the
  widgets the same thread reopened holds, the turns given back above the screen keeping their heights in the gap.

Earlier turns loaded on demand ("Show earlier turns", scrolling to the top) come in as placeholders
(:meth:`TurnWindow.deferring`): a page costs data, not widgets. Their data (a turn's stored events, read and
replayed) comes a few turns an event loop's turn (:meth:`TurnWindow.load_earlier`), and while more is coming
the screen at the column's top makes no widgets: dragged to the top again and again, the chat reads the pages
on the way and makes only the turns where it stops, not every page's in between.

The turns loaded so live as long as the thread is shown, and a thread paged to its top holds the state of
thousands of turns: the garbage collector walked all of it each time its oldest generation filled, one step
of 150 ms of CPU at a few thousand turns, growing with the thread. A slice is loaded with the collector paused
and then frozen (:func:`workspace.shared_imports.gc_paused`, as start-up does with the libraries), so later
collections cost what the screen makes, not what was loaded; the column's reset (another thread shown) has the
window refreeze at its next idle moment (:func:`ui.idle.refreeze_when_idle`: everything given back to the
collector, collected, what lives frozen again), so a closed thread's state is freed, and full passes meanwhile still
walk only what is not frozen (unfrozen at once, every pass walked all of it, 40 ms and more, until the next freeze).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QWidget
from shiboken6 import isValid

from ui.chat.model.state import Item, Lane, RunState, TurnState
from ui.chat.view.cards import ToolCard
from ui.chat.view.turn_gap import TurnGap
from ui.idle import refreeze_when_idle
from workspace.shared_imports import gc_paused

if TYPE_CHECKING:
    from ui.chat.view.chat import ChatView

#: How long (s) the steps of a frame (making turns, slices of earlier turns loaded) may take, counted from the
#: frame's start with Qt's work between them: half a frame, the rest left to Qt and to painting.
STEP_BUDGET = 0.008
#: A frame (s): the steps in it share one budget; a step due once it is spent waits for the next frame (a
#: timer), not for the next pass of the event loop. Each step had a budget of its own when it began more than a
#: millisecond after the last one: Qt laid out and styled what a step made between them, and a pass running a
#: step making turns, then a slice of earlier turns (scrolling up to the top does that) held the window for
#: two budgets and Qt's work.
FRAME = 0.016
#: The turns made as widgets: those reaching into the screen, this many screens above it and this many below.
NEAR_ABOVE = 1
NEAR_BELOW = 2
#: A turn made gives its widgets back once it is this much of a screen beyond that band (so one at the band's
#: edge is not made and given back again at each small scroll). What a thread grown live holds is then what the
#: same thread reopened holds, give or take this: the band was three screens above the one shown, and a hundred
#: turns grown live held 3.6 x the memory of the same turns reopened.
BEYOND = 0.25
#: The height (px) of a placeholder of a turn never shown, until turns have been measured.
FIRST_ESTIMATE = 240
#: The kind (:func:`_kind`) of a turn's run footers, made in the step after its user message.
FOOTER = "RunFooter"


class TurnWindow:
    """Keeps only the turns near the screen as widgets (see the module's docstring)."""

    def __init__(self, chat: ChatView) -> None:
        self.chat = chat
        #: The turns shown as a placeholder, and the gap (the column's spacer) each one is in.
        self.placeholders: dict[TurnState, TurnGap] = {}
        self._deferring = False
        self._scheduled = False
        #: Earlier turns still to load (:meth:`load_earlier`), and whether their next slice is due.
        self._to_load = 0
        self._loading = False
        #: How far the screen is from the column's end, kept once turns came above it (the next step).
        self._held: int | None = None
        #: The turn being made, a widget a step: what makes its next widget, and the kind of that widget.
        self._making: tuple[TurnState, Iterator[str], str] | None = None
        #: What a widget of each kind (:func:`_kind`) cost to make and show (s), lately: a step makes the next
        #: widget only if that fits in what is left of its budget (a long answer with code costs ten times a
        #: header, and started at the budget's end it ran a frame over).
        self._costs: dict[str, float] = {}
        self._measured = 0
        self._measured_total = 0
        #: The turn a search result opened: kept as widgets, made first (the screen goes to it once it is made).
        self.pinned: TurnState | None = None
        #: What to do once the pinned turn's widgets are all made (:meth:`make`).
        self._then: Callable[[], None] | None = None
        #: A step is making a turn's widget: a tool card then leaves its long arguments' text to a step of its own.
        self.making = False
        #: Turns made and released since the chat was reset (for tests and benches).
        self.made = 0
        self.released = 0
        #: Whether loaded turns were frozen out of the garbage collector's walks (given back on reset).
        self.froze = False
        #: When the frame under way began (its steps share one budget).
        self._pass_began = -1.0
        #: No widget is made before this time (:meth:`opened`; inf: until the step showing a thread is over).
        self._not_before = 0.0
        #: While a step runs: the latest delay (ms) asked of :meth:`schedule` meanwhile (None: none asked), the next
        #: step's, scheduled when the step ends.
        self._asked: int | None = None
        self._stepping = False

    # -- what the chat asks ------------------------------------------------------------------------
    def reset(self) -> None:
        """The column is emptied: its gaps go."""
        layout = self.chat._layout
        for gap in dict.fromkeys(self.placeholders.values()):
            layout.removeItem(gap)
        self.placeholders.clear()
        self._making = None
        self._held = None
        self.pinned = None
        self._then = None
        self._to_load = 0
        self._not_before = 0.0
        if self.froze:  # what is gone of the thread's loaded state is freed at the window's next idle moment
            self.froze = False
            refreeze_when_idle()

    @contextmanager
    def deferring(self, *, hold: bool = False) -> Iterator[None]:
        """Turns added meanwhile come in as placeholders (earlier turns loaded on demand); with ``hold``,
        what is on screen stays there once they are laid out above it."""
        if hold:
            bar = self.chat.verticalScrollBar()
            self._held = bar.maximum() - bar.value()
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
            self.schedule()

    @property
    def is_deferring(self) -> bool:
        return self._deferring

    @property
    def busy(self) -> bool:
        """Whether turns are still being made (or a step is due)."""
        return self._making is not None or self._scheduled or self._to_load > 0

    def is_placeholder(self, turn: TurnState) -> bool:
        return turn in self.placeholders

    def holds(self, item: Item | RunState) -> bool:
        """Whether ``item`` belongs to a turn shown as a placeholder (its widget is made with the turn)."""
        return bool(self.placeholders) and item.turn in self.placeholders

    def add_placeholder(self, turn: TurnState) -> None:
        """``turn`` (new in the presenter's state, never shown yet) comes in as a placeholder as tall as an
        average turn: in the gap of the turn below or above it, else a gap of its own."""
        chat = self.chat
        estimate = self._measured_total // self._measured if self._measured else FIRST_ESTIMATE
        turns = chat.presenter.state.turns
        index = turns.index(turn)
        below = self.placeholders.get(turns[index + 1]) if index + 1 < len(turns) else None
        above = self.placeholders.get(turns[index - 1]) if index > 0 else None
        if below is not None:
            below.insert(below.turns.index(turns[index + 1]), turn, estimate)
            gap = below
        elif above is not None:
            above.insert(above.turns.index(turns[index - 1]) + 1, turn, estimate)
            gap = above
        else:
            gap = TurnGap(chat._layout.spacing())
            gap.append(turn, estimate)
            chat._layout.insertItem(chat._index_after(turn), gap)
        self.placeholders[turn] = gap
        chat._layout.invalidate()  # (a gap's new height)

    def forget(self, turn: TurnState) -> None:
        """The turn is gone: out of its gap, if it was a placeholder (the gap out of the column once empty)."""
        gap = self.placeholders.pop(turn, None)
        if gap is not None:
            gap.remove(turn)
            if not gap.turns:
                self.chat._layout.removeItem(gap)
            self.chat._layout.invalidate()
        if self.pinned is turn:
            self.pinned = None
            self._then = None
        if self._making is not None and self._making[0] is turn:
            self._making = None

    def load_earlier(self, count: int) -> None:
        """Load ``count`` more of the earlier turns above the first one, as placeholders, what is on screen
        kept in place: as many as a step's budget allows now, the others on the next turns of the event loop
        (a turn's stored events are read and replayed: a page at once was a stall)."""
        self._to_load += count
        if not self._loading:  # (else the next slice is due)
            self._load()

    def _load(self) -> None:
        self._loading = False
        if not isValid(self.chat) or self._to_load <= 0 or not self.chat.presenter.hidden_turns:
            self._to_load = 0  # (a thread opened meanwhile: the column was reset)
            return
        presenter = self.chat.presenter
        now = time.perf_counter()
        started = self._budget_began(now)
        if now - started > STEP_BUDGET:  # the frame's budget is spent: the next frame loads
            self._loading = True
            QTimer.singleShot(self._frame_left(now), self._load)
            return
        # (the collector paused, then what was loaded frozen: see the module's docstring)
        with self.deferring(hold=True), gc_paused():
            while self._to_load > 0 and presenter.load_earlier(1):
                self._to_load -= 1
                if time.perf_counter() - started > STEP_BUDGET:
                    break
        self.froze = True
        if self._to_load > 0 and presenter.hidden_turns:
            self._loading = True
            QTimer.singleShot(self._frame_left(time.perf_counter()), self._load)
        else:
            self._to_load = 0

    def schedule(self, delay: int = 0) -> None:
        """Bring the column in line with the screen on the next turn of the event loop (or in ``delay`` ms:
        the next frame, when this one's budget is spent). Asked while a step runs (its own layout changed the
        scroll range: the chat asks for a step then), the step ends with the latest delay asked: the step's own
        "the next frame" is not lost to the range's "at once" (the next step came on the next turn of the event
        loop, and on a busy machine, a frame of wall time later, made widgets again at once: step after step, with
        no frame between them)."""
        if self._stepping:
            self._asked = delay if self._asked is None else max(self._asked, delay)
            return
        if not self._scheduled:
            self._scheduled = True
            QTimer.singleShot(delay, self._step)

    def opened(self) -> None:
        """A thread was shown in this step: its turns' first widgets come a frame after the step is over, once the
        window has painted what it changed (the thread list, the title, the column emptied): made on the next turn
        of the event loop, they and that paint were one stall of a frame and more. (A frame from the end of the
        step, not from now: on a busy machine the step's rest can take a frame of wall time.)"""
        self._not_before = math.inf
        QTimer.singleShot(0, self._rest_a_frame)

    def _rest_a_frame(self) -> None:
        if self._not_before == math.inf:  # (unless the chat was reset meanwhile)
            self._not_before = time.perf_counter() + FRAME
            self.schedule(round(FRAME * 1000))

    def make(self, turn: TurnState, *, then: Callable[[], None]) -> None:
        """Make ``turn``'s widgets (a search result's turn), whatever the screen shows, and keep them: before the
        screen's turns, a widget at a time under the frame's budget like theirs (made at once, a turn with a tool
        card and a long answer held the window for 15-20 ms of CPU), then ``then`` on a step of its own."""
        self.pinned, self._then = turn, then
        self.schedule()

    def make_now(self, turn: TurnState) -> None:
        """Make ``turn``'s widgets in this step (a turn still to come that must show something now: an approval
        asked in a thread just opened)."""
        if self._making is not None and self._making[0] is turn:
            for _ in self._making[1]:
                pass
            self._making = None
        if turn in self.placeholders:
            for _ in self._make(turn):
                pass

    def note_cost(self, item: Item | str | None, seconds: float) -> None:
        """What a widget like ``item``'s (None: a turn's user message; a string: a kind, :data:`FOOTER`) cost to
        make and show, measured outside this window (the chat's warm-up samples): a step then does not take a kind
        it has not made yet as free (it made every widget of a turn of kinds new to it in one step, over its
        budget)."""
        kind = "user" if item is None else item if isinstance(item, str) else _kind(item)
        self._costs.setdefault(kind, seconds)

    def _estimate(self, kind: str) -> float:
        """What a widget of ``kind`` costs, lately; a kind not made yet: the most one of its class cost (a text of
        another length), else nothing known (0)."""
        known = self._costs.get(kind)
        if known is not None:
            return known
        family = kind.partition("/")[0]
        return max((cost for k, cost in self._costs.items() if k.partition("/")[0] == family), default=0.0)

    def live_turns(self) -> list[TurnState]:
        """The turns shown as widgets."""
        return [t for t in self.chat._turn_widgets if t not in self.placeholders]

    # -- the step ------------------------------------------------------------------------------------
    def _step(self) -> None:
        self._scheduled = False
        self._stepping, self._asked = True, None
        try:
            self._step_now()
        finally:
            self._stepping = False
            asked, self._asked = self._asked, None
            if asked is not None:
                self.schedule(asked)

    def _step_now(self) -> None:
        chat = self.chat
        if not isValid(chat):
            return
        turns = chat.presenter.state.turns
        if not turns:
            return
        wait = self._not_before - time.perf_counter()
        if wait > 0:  # a thread just shown: the window paints first (:meth:`opened`)
            self.schedule(round(FRAME * 1000) if wait == math.inf else max(1, math.ceil(wait * 1000)))
            return
        self._lay_out()
        bar = chat.verticalScrollBar()
        if self._held is not None:
            from_bottom, self._held = self._held, None
            bar.setValue(bar.maximum() - from_bottom)
        value = bar.value()
        height = max(chat.viewport().height(), 200)
        near_top, near_bottom = value - NEAR_ABOVE * height, value + NEAR_BELOW * height
        now = time.perf_counter()
        fresh = now - self._pass_began >= FRAME  # (it begins a frame: it makes one widget at least)
        started = self._budget_began(now)
        anchor = self._anchor(value)
        made = False
        pending = False
        near: Iterator[TurnState] = (t for t in self._turns_between(turns, near_top, near_bottom)
                                     if t in self.placeholders)
        if value == 0 and not chat._stick and (self._to_load or chat.presenter.hidden_turns):
            near = iter(())  # at the top with earlier turns to come: none made on the way up, only where it stops
        pinned = self.pinned
        if pinned is not None and self._then is not None:  # a search result's turn first, wherever it is
            near = itertools.chain((t for t in (pinned,) if t in self.placeholders), near)
        while True:  # a widget at a time, while the frame's budget lasts
            if self._making is None:
                turn = next(near, None)
                if turn is None:
                    break
                self._making = (turn, self._make(turn), "user")
            turn, widgets, kind = self._making
            now = time.perf_counter()
            # the next widget only if what one of its kind cost fits in what is left of the budget
            if (made or not fresh) and now - started + self._estimate(kind) > STEP_BUDGET:
                pending = True
                break
            following = next(widgets, None)
            cost = time.perf_counter() - now
            known = self._costs.get(kind)
            self._costs[kind] = cost if known is None else (known + cost) / 2
            self._making = None if following is None else (turn, widgets, following)
            made = True
        if made:
            self._lay_out()
            self._keep(anchor)
            value = bar.value()
        beyond = int(BEYOND * height)
        far_top, far_bottom = value - NEAR_ABOVE * height - beyond, value + NEAR_BELOW * height + beyond
        making = self._making[0] if self._making is not None else None
        released = False
        anchor = self._anchor(value)
        # the turns shown as widgets (the column's few, not every turn of the thread)
        for turn in [t for t in chat._turn_widgets if t not in self.placeholders and t is not making]:
            top, bottom = self._span(turn)
            if (bottom < far_top or top > far_bottom) and self._releasable(turn):
                self._release(turn)
                released = True
        if released:  # a spacer's height need not be its widgets' to the pixel (the layout's spacing)
            self._lay_out()
            self._keep(anchor)
        if self._then is not None and pinned is not None and pinned not in self.placeholders and (
                self._making is None or self._making[0] is not pinned):
            then, self._then = self._then, None  # the search result's turn is made: the screen goes to it next
            QTimer.singleShot(self._frame_left(time.perf_counter()), then)
        if pending:
            self.schedule(self._frame_left(time.perf_counter()))
        elif bar.value() == 0 and chat.presenter.hidden_turns and not chat._stick and not self._to_load:
            QTimer.singleShot(0, chat.load_earlier)  # still at the top: the next page (as scrolling up to it does)

    def _budget_began(self, now: float) -> float:
        """When the budget of the step starting now began: when the frame it is in began. A frame begins with
        the first step after the last frame's end and lasts :data:`FRAME`; its steps share one budget, whatever
        ran between them (Qt laying out and styling what the last one made), so a frame's steps and Qt's work
        for them stay within the frame."""
        if now - self._pass_began >= FRAME:
            self._pass_began = now
        return self._pass_began

    def _frame_left(self, now: float) -> int:
        """How long (ms) from ``now`` until what is due next may begin: the rest of the frame under way once its
        budget is spent (the next frame), else at once (0)."""
        if now - self._pass_began <= STEP_BUDGET:
            return 0
        return max(1, math.ceil((self._pass_began + FRAME - now) * 1000))

    def _lay_out(self) -> None:
        """Lay the column out now, and give the canvas its new height (so the scroll bar's range is the new one
        at once, not on a later turn of the event loop)."""
        chat = self.chat
        canvas = chat.widget()
        if canvas is None:
            return
        chat.column.updateGeometry()  # the canvas's layout asks the column its height again
        outer = canvas.layout()
        if outer is not None:
            outer.invalidate()
        for layout in (chat.column.layout(), outer):
            if layout is not None:
                layout.activate()
        width = chat.viewport().width()
        height = canvas.heightForWidth(width) if canvas.hasHeightForWidth() else canvas.sizeHint().height()
        height = max(height, canvas.minimumSizeHint().height(), chat.viewport().height())
        if (canvas.width(), canvas.height()) != (width, height):
            canvas.resize(width, height)  # the scroll area updates its range (its filter sees the resize)

    def _anchor(self, value: int) -> tuple[QWidget, int] | None:
        """The first widget on screen and how far below the screen's top it is."""
        for widget in self._widgets_from(value):
            geometry = widget.geometry()
            if geometry.bottom() >= value:
                return widget, geometry.top() - value
        return None

    def anchor_at(self, value: int) -> tuple[QWidget, int] | None:
        """What the screen is anchored to at scroll position ``value``: the first widget whose top is on
        screen (else the first one reaching it), and how far below the screen's top it is."""
        reaching: tuple[QWidget, int] | None = None
        for widget in self._widgets_from(value):
            if widget.isHidden():
                continue
            geometry = widget.geometry()
            if geometry.top() >= value:
                return widget, geometry.top() - value
            if reaching is None and geometry.bottom() >= value:
                reaching = widget, geometry.top() - value
        return reaching

    def _widgets_from(self, value: int) -> Iterator[QWidget]:
        """The column's widgets in order (not "Show earlier turns"), from the turn that reaches scroll position
        ``value`` on (a binary search over the turns: what is above it is not looked at, so a scroll or a step
        costs the same in a thread of any length)."""
        chat = self.chat
        turns = chat.presenter.state.turns
        if not turns:  # a new thread's column: its few widgets
            layout = chat._layout
            for i in range(layout.count()):
                entry = layout.itemAt(i)
                widget = entry.widget() if entry is not None else None
                if widget is not None and widget is not chat._more_button:
                    yield widget
            return
        shown = chat._turn_widgets
        i = self._first_reaching(turns, value)
        while i < len(turns):
            gap = self.placeholders.get(turns[i])
            if gap is not None:  # no widget: on past the gap's turns at once
                i += len(gap.turns) - gap.where(turns[i])
                continue
            yield from shown.get(turns[i]) or ()
            i += 1
        yield chat.activity

    def _first_reaching(self, turns: list[TurnState], top: int) -> int:
        """The index of the first turn whose bottom is at or below ``top``: a binary search, so a thread of any
        length costs the same. A turn whose widgets are not laid out yet (being made: hidden, no place in the
        column) says nothing of where it is; the search looks at the next turn that does."""
        lo, hi = 0, len(turns)
        while lo < hi:
            mid = (lo + hi) // 2
            probe = mid
            bottom = self._laid_out_bottom(turns[probe])
            while bottom is None and probe + 1 < hi:
                probe += 1
                bottom = self._laid_out_bottom(turns[probe])
            if bottom is None:  # nothing laid out from mid to hi: look left of mid
                hi = mid
            elif bottom < top:
                lo = probe + 1
            else:
                hi = mid if probe == mid else probe
        return lo

    def _laid_out_bottom(self, turn: TurnState) -> int | None:
        """The bottom of the turn in the column, or None when none of its widgets is laid out."""
        gap = self.placeholders.get(turn)
        if gap is not None:
            return gap.span(turn)[1]
        for widget in reversed(self.chat._turn_widgets.get(turn) or ()):
            if not widget.isHidden():
                return widget.geometry().bottom()
        return None

    def _keep(self, anchor: tuple[QWidget, int] | None) -> None:
        """Scroll so that the anchor is where it was on screen (turns made above it grew or shrank)."""
        chat = self.chat
        if anchor is None or chat._stick:
            return
        widget, offset = anchor
        chat.verticalScrollBar().setValue(max(0, widget.geometry().top() - offset))

    def _span(self, turn: TurnState) -> tuple[int, int]:
        """The turn's top and bottom in the column (px)."""
        gap = self.placeholders.get(turn)
        if gap is not None:
            return gap.span(turn)
        widgets = self.chat._turn_widgets.get(turn) or []
        if not widgets:
            return -1, -1
        return widgets[0].geometry().top(), widgets[-1].geometry().bottom()

    def _turns_between(self, turns: list[TurnState], top: int, bottom: int) -> Iterator[TurnState]:
        """The turns that reach into [top, bottom], nearest the screen's middle first, or the newest first while
        the screen keeps to the column's end (a thread opening: what is read first is at the bottom) (a binary
        search: a thread of any length costs the same)."""
        inside: list[TurnState] = []
        for i in range(self._first_reaching(turns, top), len(turns)):
            turn = turns[i]
            start, _end = self._span(turn)
            if start > bottom:
                break
            inside.append(turn)
        if self.chat._stick:
            yield from reversed(inside)
            return
        middle = (top + bottom) // 2
        inside.sort(key=lambda t: abs(self._span(t)[0] - middle))
        yield from inside

    # -- making and releasing --------------------------------------------------------------------------
    def _make(self, turn: TurnState) -> Iterator[str]:
        """Make the turn's widgets from its state, yielding after each the kind of the next one (:func:`_kind`)
        (the user's message, then the footers: a run's items go above its footer, as they did live)."""
        chat = self.chat
        gap = self.placeholders.pop(turn)
        layout = chat._layout
        # The gap keeps the larger part of its turns; the others go in a gap of their own.
        if gap.where(turn) < len(gap.turns) // 2:
            above = gap.split_above(turn)
            if above is not None:
                self.placeholders.update(dict.fromkeys(above.turns, above))
                layout.insertItem(layout.indexOf(gap), above)
        else:
            below = gap.split(turn)
            if below is not None:
                self.placeholders.update(dict.fromkeys(below.turns, below))
                layout.insertItem(layout.indexOf(gap) + 1, below)
        if not gap.turns:
            layout.removeItem(gap)
        layout.invalidate()
        chat._turn_widgets[turn] = []
        chat.build_turn(turn)  # placed before the next turn (the gap below, if any)
        _show(chat._turn_widgets[turn])
        footers = [run for run in turn.runs if run.lane is None and run.footer]
        if footers:  # a step of their own (with the message, the turn's first step was a frame's budget)
            yield FOOTER
            for run in footers:
                chat.run_changed(run)
            _show(chat._turn_widgets.get(turn) or ())
        for item in _items(turn.items):
            if item not in chat._widgets:  # (one added while the turn was being made has its widget)
                yield _kind(item)
                if item not in chat._widgets:
                    self.making = True
                    try:
                        chat.item_added(item)
                    finally:
                        self.making = False
                    _show(chat._turn_widgets.get(turn) or ())
                    card = chat._widgets.get(item)
                    # its texts (arguments, result) each a step of its own: with the card, a frame and more
                    while isinstance(card, ToolCard) and isValid(card) and (part := card.later) is not None:
                        yield part
                        if isValid(card):
                            card.finish()
        self.made += 1

    def _releasable(self, turn: TurnState) -> bool:
        chat = self.chat
        turns = chat.presenter.state.turns
        if turn is self.pinned or (turns and turns[-1] is turn):
            return False
        if any(run.end is None for run in turn.runs):
            return False
        widgets = chat._turn_widgets.get(turn) or []
        if not widgets:
            return False
        # what holds the keyboard, and the questions asked live, stay
        kept: list[QWidget] = [*chat.approvals]
        focus = QApplication.focusWidget()
        if focus is not None:
            kept.append(focus)
        return not any(k is w or w.isAncestorOf(k) for k in kept for w in widgets)

    def _release(self, turn: TurnState) -> None:
        chat = self.chat
        widgets = chat._turn_widgets.get(turn) or []
        top = widgets[0].geometry().top()
        bottom = widgets[-1].geometry().bottom()
        height = bottom - top + 1  # (the gap adds the spacing after each of its turns)
        if height > 1:
            self._measured += 1
            self._measured_total += height
        layout = chat._layout
        index = layout.indexOf(widgets[0])
        for widget in widgets:
            layout.removeWidget(widget)
            widget.hide()
            widget.deleteLater()
        for key in [k for k in chat._widgets if _owner(k) is turn]:
            del chat._widgets[key]
        chat._action_notices = [(t, line) for t, line in chat._action_notices if t is not turn]
        del chat._turn_widgets[turn]  # (it holds the turns shown as widgets only)
        # into the gap just above or below it (the gaps join when both are there), else a gap of its own
        above, below = layout.itemAt(index - 1) if index > 0 else None, layout.itemAt(index)
        if isinstance(above, TurnGap) and isinstance(below, TurnGap):  # the larger gap takes in the other
            if len(below.turns) > len(above.turns):
                below.insert(0, turn, height)
                below.extend_above(above)
                gap, gone = below, above
            else:
                above.append(turn, height)
                above.extend(below)
                gap, gone = above, below
            self.placeholders.update(dict.fromkeys(gone.turns, gap))
            layout.removeItem(gone)
        elif isinstance(above, TurnGap):
            above.append(turn, height)
            gap = above
        elif isinstance(below, TurnGap):
            below.insert(0, turn, height)
            gap = below
        else:
            gap = TurnGap(layout.spacing())
            gap.append(turn, height)
            layout.insertItem(index, gap)
        self.placeholders[turn] = gap
        layout.invalidate()
        self.released += 1


def _owner(key: object) -> TurnState | None:
    if isinstance(key, TurnState):
        return key
    if isinstance(key, Item | RunState):
        return key.turn
    return None


def _kind(item: Item) -> str:
    """What kind of widget ``item`` makes, as far as its cost goes: its class, and for text its length's order
    of magnitude and whether it holds code (Markdown with highlighted code costs the most)."""
    text = getattr(item, "text", None)
    if not isinstance(text, str):
        return type(item).__name__
    return f"{type(item).__name__}/{len(text).bit_length()}{'/code' if '```' in text else ''}"


def _show(widgets: Iterable[QWidget]) -> None:
    """Show the turn's new widgets now, as the column's layout would on a later turn of the event loop: their
    style is applied and their size asked now, in the step that made them and counted in its budget, not in
    Qt's work after it."""
    for widget in widgets:
        if widget.isHidden() and not widget.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):
            widget.show()


def _items(items: list[Item]) -> Iterator[Item]:
    """Items in the order they came, each lane's items after the lane."""
    for item in items:
        yield item
        if isinstance(item, Lane):
            yield from _items(item.items)


__all__ = ["FOOTER", "TurnWindow"]
