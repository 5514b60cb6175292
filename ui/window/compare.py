"""Many robots at once, the shell's part: "Compare with…" (the model picker's menu and the palette), the
comparison's columns in place of the chat, the message box's messages to every candidate, and the combined
review in the Changes dock.

Each column is a chat view with its own presenter and its own :class:`~ui.bridge.RunBridge` (text coalesced
per column), fed the events of its candidate (their ``candidate``) on the comparison's frame clock: one column a
tick, in turn (see :meth:`Comparisons._flush_columns`); the figures in the headers come from
:class:`~ui.compare.stats.ComparisonStats`, refreshed on a timer. The runs go through
:class:`~ui.compare.session.CompareSession` in a task of the window's :class:`~ui.tasks.TaskOwner`, on the qasync
loop as every run. "Keep this one" ends the comparison: the chat opens that candidate's thread and goes on with it.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias

from PySide6.QtCore import QEvent, QObject, QTimer, Signal

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Coroutine, Mapping

    from PySide6.QtWidgets import QDockWidget, QWidget

    from ui.bridge import RunBridge
    from ui.chat.composer.composer import Composer
    from ui.chat.view.chat import ChatView
    from ui.compare.picker import CompareDialog
    from ui.compare.session import CandidateSpec, CompareSession
    from ui.compare.stats import ComparisonStats
    from ui.compare.view import CompareView
    from ui.review.combined import CombinedReview
    from ui.services import Services
    from workspace import events as ev
    from workspace.approval import ApprovalDecision, ApprovalRequest
    from workspace.providers.listing import ModelListing
    from workspace.session.compare import CandidateResult, CombinedApply

log = logging.getLogger("ui.compare")

#: How long "Compare with…" waits for the list of models before it opens without them (seconds).
LIST_WAIT_S = 6.0
#: How often each header's figures are redrawn while the candidates stream (ms).
STATS_MS = 250
#: How often a column's streamed events are shown (ms): one frame.
FRAME_MS = 16
#: The longest the frame clock waits for the window's repaint of the column it showed (ms): a column that did
#: not change on screen (set aside, scrolled away) is not waited for longer.
PAINT_WAIT_MS = 4 * FRAME_MS
#: The longest the columns' last events wait for their ticks once the runs ended (s).
DRAIN_S = 2.0
#: At most about this much streamed text (answer and thinking) goes into a column on a tick; the rest waits for
#: the column's next tick. Up to a couple of thousand characters a tick costs about the same (3-4 ms on a busy
#: machine: the open paragraph rendered again, the column laid out), so four fast streams are not slowed; a
#: larger burst (a column that waited, a fast model) would render and freeze several segments in one pass. Below
#: the stream's own bound on one render (:data:`ui.chat.view.stream.MAX_RENDER_CHARS`).
TICK_CHARS = 2000


class UserText(NamedTuple):
    """The person's message to a column, waiting for the column's tick with its candidate's events; the turn it
    started (its answer's ↻ asks that turn again)."""

    text: str
    turn_id: str | None = None


class Deferred(NamedTuple):
    """A render a column's streamed Markdown left for later (a freeze of its finished blocks, a backlog's next
    part), waiting for the column's tick: a tick of its own, not in the pass of another column's tick."""

    render: Callable[[], None]


#: What waits for a column's tick.
Waiting: TypeAlias = "ev.Event | UserText | Deferred"


class CandidateInspector(Protocol):
    """The inspector as a comparison uses it (the window's docks): a candidate's events in place of the thread's."""

    def show_candidate(self, label: str, events: list[ev.Event]) -> None: ...

    def leave_candidate(self, *, restore: bool) -> None: ...

    def add_events(self, events: list[ev.Event]) -> None: ...


class Comparisons(QObject):
    """The comparison the message box talks to, while there is one."""

    #: A comparison started (its CompareSession) or ended (None).
    changed = Signal(object)
    #: Every candidate's run of a message ended: their results (list[CandidateResult]).
    answered = Signal(object)

    def __init__(self, services: Services) -> None:
        super().__init__(services.shell)
        self.services = services
        self.session: CompareSession | None = None
        self.view: CompareView | None = None
        self.stats: ComparisonStats | None = None
        self.chats: list[ChatView] = []
        self.bridges: list[RunBridge] = []
        #: The window is low: the columns' chrome is compact (:meth:`set_compact`).
        self.compact = False
        #: Each candidate's events so far (text deltas of a stream joined), for the inspector.
        self.events: list[list[ev.Event]] = []
        #: The candidate whose events the inspector shows (its column selected; -1: none).
        self.selected = -1
        self.inspector: CandidateInspector | None = None
        self.review: CombinedReview | None = None
        self.dialog: CompareDialog | None = None
        self._dock_pane: QWidget | None = None
        self._task: Any = None
        #: The columns are set aside (another thread is open) while their candidates answer.
        self.parked = False
        #: The headers' figures while the candidates stream: one header a tick, in turn, so each is redrawn every
        #: STATS_MS and no pass repaints every header (figures that need another height lay out its column too).
        self._timer = QTimer(self)
        self._timer.setInterval(STATS_MS // 4)
        self._timer.timeout.connect(self._show_next_stats)
        self._next_stats = 0
        #: One frame clock for every column: each tick shows one column's events (the next one in turn with
        #: any), so a pass of the event loop renders, lays out and repaints one column, not four.
        #: Started again a frame after the window repainted the column the last tick showed (not a fixed rate):
        #: on a busy machine, where a pass of the event loop takes longer than a frame, a fixed-rate tick comes in
        #: every pass, beside the repaint of the column the tick before showed; this way a column's text and
        #: the last column's repaint go in different passes (see :meth:`eventFilter`).
        self._frame = QTimer(self)
        self._frame.setSingleShot(True)
        self._frame.setInterval(FRAME_MS)
        self._frame.timeout.connect(self._flush_columns)
        #: The last tick showed a column, whose repaint the next tick waits for (at most PAINT_WAIT_MS).
        self._painting = False
        #: The window whose repaints the frame clock follows while the candidates answer.
        self._painted: QWidget | None = None
        #: Set when no column has events waiting (the runs ended: :meth:`_drain` waits for it).
        self._drained: asyncio.Event | None = None
        #: Each column's events not shown yet (its candidate's, as they came): its bridge gets them on its tick.
        self._pending: list[list[Waiting]] = []
        #: The frame clock runs (from a send to the runs' end): the columns' deferred renders go on its ticks.
        self._ticking = False
        #: The column the next tick looks at first.
        self._next_column = 0

    def attach(self, *, chat: ChatView, composer: Composer, send_one: Callable[[str], None],
               ask_one: Callable[[ApprovalRequest, asyncio.Future[ApprovalDecision]], None],
               docks: Mapping[str, QDockWidget], listing: Callable[[], ModelListing | None],
               load_listing: Callable[[], None], inspector: CandidateInspector | None = None) -> None:
        """The chat (the columns take its place), the message box, where a message goes outside a comparison
        (``send_one``: the runs' send), the docks (the combined review goes in the Changes dock) and the inspector
        (it shows the selected column's candidate)."""
        self.chat, self.composer, self.send_one, self.docks = chat, composer, send_one, docks
        self.inspector = inspector
        #: Where an approval outside a comparison goes (the runs': the chat's inline card).
        self.ask_one = ask_one
        #: The models the picker listed (None: not listed yet): what "Compare with…" offers.
        self.listing, self.load_listing = listing, load_listing

    @property
    def changes_dock(self) -> QDockWidget | None:
        return self.docks.get("changes")

    def follow(self) -> None:
        """The message box's messages: to the comparison's candidates while there is one, else to the thread."""
        self.composer.send_requested.disconnect(self.send_one)
        self.composer.send_requested.connect(self.route)
        c = self.services.session
        c.approval_needed.disconnect(self.ask_one)
        c.approval_needed.connect(self.route_approval)
        c.thread_opened.connect(self.on_thread_opened)

    def on_thread_opened(self, session: Any) -> None:
        """A comparison's candidate thread opened in the chat: its columns again (answers, figures, verify marks,
        the verdict) while no candidate was kept, and the Changes dock shows the combined review of all its
        candidates' pending hunks; any other thread: one chat, and the dock's own review again. Columns whose
        candidates still answer are set aside, not closed: their runs go on, and they come back with any of
        their threads."""
        thread_id = getattr(session, "thread_id", None)
        current = self.session
        if current is not None:
            if thread_id in current.thread_ids:
                self._unpark()
                self.select(current.thread_ids.index(thread_id))  # the inspector: the candidate opened
                return
            if self.running:
                self._park()
            else:
                self.close(restore_inspector=False)  # the inspector has the thread opened already
        review = self.review
        if review is not None and thread_id in review.thread_ids:
            return
        self._hide_review()
        if thread_id is None or getattr(session, "is_network", False):
            return
        from ui.compare.session import CompareSession

        try:
            compare = CompareSession.reopen(self.services.session.require_workspace(), thread_id)
        except Exception as exc:  # a damaged record: the thread opens as any other
            log.warning("the comparison of thread %s could not be read: %s", thread_id, exc)
            return
        if compare is None:
            return
        if compare.kept is None and not self.running:
            self._reopen(compare)
            self.select(compare.thread_ids.index(thread_id))
        self._show_review(compare)

    def _reopen(self, compare: CompareSession) -> None:
        """The columns of a stored comparison: each candidate's thread as stored, its figures as kept."""
        from ui.transcript import LazyTranscript

        if self.session is not None:
            self.close()
        self.session = compare
        self._build(compare.labels)
        stats, view = self.stats, self.view
        assert stats is not None and view is not None
        store = compare.workspace.store
        for index, (chat, thread_id) in enumerate(zip(self.chats, compare.thread_ids, strict=True)):
            lazy = LazyTranscript(store, thread_id)
            chat.show_thread(lazy)
            self.events[index] = lazy.all_events()
            saved = compare.saved[index] if index < len(compare.saved) else {}
            figures = saved.get("compare_stats")
            if isinstance(figures, dict):
                stats.restore(index, figures)
            elif lazy.turns:  # none kept (a comparison of the command line, or cut short): from its last turn
                for event in lazy.view(lazy.turns[-1]).events:
                    stats.feed(event)
        verdict = next((m["verdict"] for m in compare.saved if isinstance(m.get("verdict"), dict)), None)
        if verdict is not None:
            view.show_verdict(verdict)
        self._show_stats()
        self.changed.emit(compare)

    def _park(self) -> None:
        """Another thread opened while the candidates answer: the chat again; the columns wait, their runs go on."""
        view = self.view
        if view is None or self.parked:
            return
        area = view.parentWidget()
        layout = area.layout() if area is not None else None
        if layout is not None:
            layout.replaceWidget(view, self.chat)
        view.hide()
        self.chat.show()
        self.parked = True
        self._hide_review()
        if self.inspector is not None:  # it shows the thread opened (loaded already)
            self.inspector.leave_candidate(restore=False)

    def _unpark(self) -> None:
        view = self.view
        if view is None or not self.parked:
            return
        area = self.chat.parentWidget()
        layout = area.layout() if area is not None else None
        if layout is not None:
            layout.replaceWidget(self.chat, view)
        self.chat.hide()
        view.show()
        self.parked = False
        if self.session is not None and not self.running:
            self._show_review(self.session)

    def route_approval(self, request: ApprovalRequest, future: asyncio.Future[ApprovalDecision]) -> None:
        """An approval a candidate's run asks for goes in its column (the card in its tool call), any other to
        the chat."""
        from ui.window.asked import waits_for_its_call

        compare = self.session
        if compare is not None and request.thread_id in compare.thread_ids:
            index = compare.thread_ids.index(request.thread_id)
            if index < len(self.chats):
                if not waits_for_its_call(self.chats[index], request, streaming=self.running):
                    self.chats[index].ask_approval(request, future)  # else its column's events bring it
                return
        self.ask_one(request, future)

    @property
    def active(self) -> bool:
        return self.session is not None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def route(self, text: str) -> None:
        if self.session is None or self.parked:
            self.send_one(text)
        else:
            self.send(text)

    # -- choosing ---------------------------------------------------------------------------------------------
    def choose(self) -> None:
        """"Compare with…": the dialog (once the models are listed, for up to :data:`LIST_WAIT_S`); the next
        message goes to the robot and the candidates checked."""
        c = self.services.session
        if c.target_kind == "network":
            self.services.notices.toast("A comparison is of robots and models: choose a robot first.")
            return
        self.services.tasks.spawn(self._choose(), name="compare-choose")

    async def _choose(self) -> None:
        import asyncio

        from ui.compare.picker import CompareDialog, choices

        if self.listing() is None:
            self.load_listing()
            for _ in range(round(LIST_WAIT_S / 0.05)):  # the list arrives from a task of the model picker's
                if self.listing() is not None:
                    break
                await asyncio.sleep(0.05)
        listing = self.listing()
        models = [(m.id, m.api_base) for source in listing.sources for m in source.models] if listing else []
        c = self.services.session
        dialog = self.dialog = CompareDialog(c.robot_name, choices(c.robot_name, robots=c.robot_names(),
                                                                   models=models), self.services.shell)
        dialog.accepted.connect(lambda: self.start(dialog.checked()))
        dialog.open()

    def start(self, others: list[CandidateSpec]) -> bool:
        """A comparison of the open thread's robot (with its model) and ``others``: the columns replace the chat."""
        from ui.compare.session import CandidateSpec, CompareSession

        c = self.services.session
        if self.running or c.running:
            self.services.notices.toast("A run is in progress: press Esc to stop it first.")
            return False
        model = None
        session = c.session
        if session is not None and not getattr(session, "is_network", False) and getattr(session, "chosen_model", None):
            model = session.robot.model
        elif c.pending_model is not None:
            model = c.pending_model[0]
        first = CandidateSpec(c.robot_name if session is None else session.thread.robot, model=model)
        try:
            compare = CompareSession(c.require_workspace(), [first, *others])
            labels = compare.start()
        except Exception as exc:
            self.services.notices.banner(f"Could not start the comparison: {exc}")
            return False
        self.close()
        self.session = compare
        self._build(labels)
        c.threads_changed.emit()
        self.changed.emit(compare)
        self.select(0)  # the inspector: the first candidate's calls until another column is clicked
        self.composer.focus()  # the one message box goes on: typing goes to every candidate
        return True

    def _build(self, labels: list[str]) -> None:
        from ui.bridge import RunBridge
        from ui.chat.view.chat import ChatView
        from ui.compare.stats import ComparisonStats
        from ui.compare.view import CompareView
        from ui.window.asked import show_asked

        area = self.chat.parentWidget()
        self.chats, self.bridges, self.events, self.selected = [], [], [[] for _ in labels], -1
        self._pending, self._next_column = [[] for _ in labels], 0
        waiting = self.services.session.waiting_approvals
        for index, _label in enumerate(labels):
            chat = ChatView()
            bridge = RunBridge(self, own_clock=False)  # flushed together on the comparison's frame clock
            # The column's events to its chat, and an approval with the event that asks it (ui.window.asked).
            bridge.view_event.connect(lambda event, chat=chat: show_asked(chat, event, waiting))
            bridge.events_batched.connect(lambda batch, i=index: self._keep_events(i, batch))
            chat.defer_render = lambda render, i=index: self._defer(i, render)
            # Its card's "Review changes" and its answer's ↻: for that candidate.
            chat.review_requested.connect(lambda _set_id, i=index: self.review_column(i))
            chat.regenerate_requested.connect(lambda turn_id, i=index: self.regenerate(i, turn_id))
            self.chats.append(chat)
            self.bridges.append(bridge)
        self.stats = ComparisonStats(labels)
        view = self.view = CompareView(labels, self.chats, area)
        view.set_compact(self.compact)
        view.keep_requested.connect(self.keep)
        view.verdict_given.connect(self.give_verdict)
        view.close_requested.connect(self.close)
        view.column_selected.connect(self.select)
        layout = area.layout() if area is not None else None
        if layout is not None:
            layout.replaceWidget(self.chat, view)
        self.chat.hide()
        view.show()

    def set_compact(self, compact: bool) -> None:
        """A low window: the columns' headers and bar compact (:meth:`~ui.compare.view.CompareView.set_compact`)."""
        self.compact = compact
        if self.view is not None:
            self.view.set_compact(compact)

    # -- sending ----------------------------------------------------------------------------------------------
    def send(self, text: str) -> None:
        """``text`` to every candidate still in the comparison, at once."""
        compare, stats = self.session, self.stats
        if compare is None or stats is None:
            return
        if self.running:
            self.services.notices.toast("The candidates are still answering: press Esc to stop them first.")
            self.composer.set_text(text)
            return
        try:
            started = compare.begin(text)
        except Exception as exc:
            self.services.notices.banner(f"The comparison could not run: {exc}")
            self.composer.set_text(text)
            return
        for result, run in started:  # on its column's tick, as its answer will be: not four columns in this pass
            self._pending[result.index].append(UserText(text, run.turn_id))
        stats.message_sent([result.index for result, _run in started])
        self._follow(compare, compare.follow(started, on_event=self._event))

    def regenerate(self, index: int, turn_id: str) -> None:
        """↻ under column ``index``'s answer: that candidate answers turn ``turn_id``'s message again (a new
        branch of its thread, shown in its column as it streams); the other columns keep their answers."""
        from ui.transcript import LazyTranscript

        compare, stats = self.session, self.stats
        if compare is None or stats is None or not 0 <= index < len(self.chats):
            return
        if self.running:
            self.services.notices.toast("The candidates are still answering: press Esc to stop them first.")
            return
        try:
            started = compare.regenerate(index, turn_id)
        except Exception as exc:
            self.services.notices.banner(f"Could not ask {compare.labels[index]} again: {exc}")
            return
        if compare.superseded:
            from workspace.session.thread import superseded_note

            self.services.notices.toast(superseded_note(compare.labels[index], compare.superseded))
        self.select(index)
        self.chats[index].show_thread(LazyTranscript(compare.workspace.store, compare.thread_ids[index]))
        stats.message_sent([index])
        self._follow(compare, compare.follow(started, on_event=self._event))

    def review_column(self, index: int) -> None:
        """"Review changes" on column ``index``'s card: the combined review in the Changes dock, at that
        candidate's hunks (every candidate's changes are reviewed there, taken from any)."""
        compare = self.session
        if compare is None or not 0 <= index < len(self.chats):
            return
        self.select(index)
        if self.running:
            self.services.notices.toast("The candidates are still answering: their changes are reviewed together "
                                        "when they end.")
            return
        if self.review is None and not self.parked:
            self._show_review(compare)
        review, dock = self.review, self.changes_dock
        if review is None or dock is None:
            self.services.notices.toast(f"{compare.labels[index]} has no change waiting for review.")
            return
        dock.show()
        dock.raise_()
        if not review.show_candidate(index):
            self.services.notices.toast(f"{compare.labels[index]} has no change waiting for review.")

    def _follow(self, compare: CompareSession, runs: Coroutine[Any, Any, list[CandidateResult]]) -> None:
        """The candidates' runs started (``runs`` follows them): the columns stream on the frame clock."""
        self.composer.set_running(True)
        self._timer.start()
        self._ticking = True
        self._frame.start(FRAME_MS)
        if self.view is not None:
            self._painted = self.view.window()
            self._painted.installEventFilter(self)
        self._task = self.services.tasks.spawn(self._run(compare, runs), name="compare")

    async def _run(self, compare: CompareSession,
                   runs: Coroutine[Any, Any, list[CandidateResult]]) -> list[CandidateResult]:
        try:
            results = await runs
            await self._drain()
        except Exception as exc:
            log.warning("the comparison failed: %s", exc)
            self.services.notices.banner(f"The comparison could not run: {exc}")
            results = []
        finally:
            self._ticking = False
            self._frame.stop()
            self._painting = False
            if self._painted is not None:
                self._painted.removeEventFilter(self)
                self._painted = None
            self._flush_columns(every=True)
            self._timer.stop()
            self._show_stats()
            self.composer.set_running(False)
        if compare is self.session and self.stats is not None and compare.workspace.folder is not None:
            stats = self.stats
            try:
                checked = await compare.verify_proposals()
            except Exception as exc:  # a verify that cannot run leaves the marks off, with the reason in the log
                log.warning("verifying the candidates' proposals failed: %s", exc)
                checked = {}
            for index, event in checked.items():
                stats.columns[index].verify = event.passed
            self._show_stats()
        if compare is self.session and self.stats is not None:
            try:
                compare.keep_stats([column.to_dict() for column in self.stats.columns])
            except Exception as exc:  # the columns show them all the same; a reopen counts from the events
                log.warning("the comparison's figures were not kept: %s", exc)
        self.services.session.threads_changed.emit()
        if compare is self.session and not self.parked:
            self._show_review(compare)
        self.answered.emit(results)
        return results

    def _event(self, event: ev.Event) -> None:
        stats = self.stats
        if stats is None:
            return
        index = stats.feed(event)
        if index is not None and index < len(self._pending):
            self._pending[index].append(event)  # shown on its column's tick (_flush_columns)

    # -- the inspector: the selected column's candidate ---------------------------------------------------------
    def select(self, index: int) -> None:
        """Column ``index`` selected: the inspector shows its candidate's tool calls (their results and errors),
        trace and memory, saying which candidate."""
        view, compare = self.view, self.session
        if view is None or compare is None or not 0 <= index < len(self.events):
            return
        self.selected = index
        view.select(index)
        if self.inspector is not None and not self.parked:
            self.inspector.show_candidate(f"Candidate {index + 1} of {len(self.events)}: {compare.labels[index]}",
                                          self.events[index])

    def _keep_events(self, index: int, batch: list[ev.Event]) -> None:
        """A column's batch of events (on the frame clock): kept for the inspector, and shown in it when its
        column is the one selected."""
        from ui.inspector.trace import join_text_deltas

        if not 0 <= index < len(self.events):
            return
        kept = self.events[index]
        joined, rest = join_text_deltas(kept[-1] if kept else None, batch)
        if joined is not None:
            kept[-1] = joined
        kept.extend(rest)
        if index == self.selected and self.inspector is not None and self.view is not None and not self.parked:
            self.inspector.add_events(batch)

    def _flush_columns(self, *, every: bool = False) -> None:
        """One tick of the frame clock: the next column in turn with events not shown yet gets them (its bridge
        fed and flushed: its text rendered, its cards, its run's end), the others wait for their ticks
        (``every``: all of them, as at the runs' end).

        Four streams' events arrive in the same turns of the event loop; shown as they came (or all four columns
        on one tick), every pass rendered, laid out and repainted four columns, a run's first words and its end
        included, and held the window for 100-400 ms on a busy machine. One column a tick keeps a pass to one
        column's work; with four streaming, each column moves every fourth frame (15 times a second), and a
        column streaming alone moves every frame. A tick gives a column at most about :data:`TICK_CHARS` of its
        streamed text (:func:`cut_text`), the rest on its next tick, so a burst does not make one long pass; a
        render its Markdown left for later (a freeze) is a tick of its own (:func:`one_tick`)."""
        count = len(self._pending)
        for step in range(count):
            index = (self._next_column + step) % count
            events = self._pending[index]
            if not events:
                continue
            self._pending[index] = [] if every else one_tick(events, TICK_CHARS)
            bridge = self.bridges[index]
            for event in events:
                if isinstance(event, Deferred):
                    event.render()
                elif isinstance(event, UserText):
                    self.chats[index].presenter.add_user(event.text, turn_id=event.turn_id)
                else:
                    bridge.feed(event)
            bridge.flush()
            if not every:
                self._next_column = (index + 1) % count
                self._painting = True
                break
        if self._drained is not None and not any(self._pending):
            self._drained.set()
        if not every and self.running:
            self._frame.start(PAINT_WAIT_MS if self._painting else FRAME_MS)

    def _defer(self, index: int, render: Callable[[], None]) -> bool:
        """Column ``index``'s render left for later goes on its next tick while the frame clock runs (False:
        not taken, the stream uses a timer)."""
        if not self._ticking or not 0 <= index < len(self._pending):
            return False
        self._pending[index].append(Deferred(render))
        return True

    async def _drain(self) -> None:
        """The runs ended: the columns' events still waiting shown on the frame clock's ticks, one column a tick as
        while they streamed (four runs ending together would otherwise lay out and paint four columns' last text
        and footers in one pass), for at most DRAIN_S; what is left then goes at once."""
        import asyncio

        if not any(self._pending):
            return
        drained = self._drained = asyncio.Event()
        try:
            await asyncio.wait_for(drained.wait(), DRAIN_S)
        except TimeoutError:
            log.debug("the columns' last events did not all show in %s s: shown at once", DRAIN_S)
        finally:
            self._drained = None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The window's repaint (its UpdateRequest) after a tick showed a column: the next tick a frame from now,
        in a later pass of the event loop than this repaint."""
        if self._painting and event.type() == QEvent.Type.UpdateRequest:
            self._painting = False
            if self.running:
                self._frame.start(FRAME_MS)
        return False

    def _show_next_stats(self) -> None:
        """The next header's figures (the stats clock's tick)."""
        view, stats = self.view, self.stats
        if view is None or stats is None or not view.headers:
            return
        index = self._next_stats % len(view.headers)
        self._next_stats = index + 1
        if index < len(stats.columns):
            view.headers[index].show_stats(stats.columns[index])

    def _show_stats(self) -> None:
        if self.view is not None and self.stats is not None:
            self.view.show_stats(self.stats.columns)

    def stop(self) -> bool:
        """Esc: stop every candidate (False: no comparison is running on screen: set aside, it goes on)."""
        if self.session is None or not self.running or self.parked:
            return False
        self.session.stop()
        return True

    # -- the verdict, keeping one -------------------------------------------------------------------------------
    def give_verdict(self, winner: int, reason: str) -> None:
        if self.session is None or self.view is None:
            return
        try:
            verdict = self.session.verdict(winner, reason)
        except Exception as exc:
            self.services.notices.banner(f"Could not keep the verdict: {exc}")
            return
        self.view.show_verdict(verdict)
        self.services.notices.toast(f"Verdict kept with the threads: {verdict['label']} is the better answer.")

    def keep(self, index: int) -> None:
        """End the comparison with candidate ``index``: its thread opens in the chat and goes on."""
        compare = self.session
        if compare is None or self.running:
            if self.running:
                self.services.notices.toast("The candidates are still answering: wait, or press Esc first.")
            return
        kept = compare.keep(index)
        self.close(keep_review=True)
        self.services.session.open_thread(kept.thread_id)

    def close(self, *, keep_review: bool = False, restore_inspector: bool = True) -> None:
        """Back to one chat (the candidates' threads stay in the sidebar); the inspector shows the open thread
        again (``restore_inspector=False``: another thread's events are in it already)."""
        if self.running and self.session is not None:
            self.session.stop()
        view, self.view = self.view, None
        if view is not None:
            area = view.parentWidget()
            layout = area.layout() if area is not None else None
            if layout is not None:
                layout.replaceWidget(view, self.chat)
            view.hide()
            view.deleteLater()
        self.chat.show()
        self.parked = False
        for bridge in self.bridges:
            bridge.deleteLater()
        self.chats, self.bridges, self.stats, self.events, self.selected = [], [], None, [], -1
        self._pending = []
        if self.inspector is not None:
            self.inspector.leave_candidate(restore=restore_inspector)
        if not keep_review:
            self._hide_review()
        if self.session is not None:
            compare, self.session = self.session, None
            if not compare.message and compare.discard_unsent():  # closed before its first message: no empty rows
                self.services.session.threads_changed.emit()
            self.changed.emit(None)

    # -- the combined review ------------------------------------------------------------------------------------
    def _show_review(self, compare: CompareSession) -> None:
        """The candidates' changes in the Changes dock, when any candidate proposed some."""
        from ui.review.combined import CombinedReview

        comparison = compare.comparison()
        if comparison.folder is None or not comparison.hunks():
            return
        self._hide_review()
        kept = compare.sessions[compare.active[0]]
        try:
            verify = kept.verify_setting().command
        except Exception as exc:  # a robot file gone: apply without verify, and say so
            log.debug("no verify command: %s", exc)
            verify = None
        review = self.review = CombinedReview(comparison, tasks=self.services.tasks, verify=verify or None,
                                              thread_id=kept.thread_id)
        review.thread_ids = compare.thread_ids
        review.ask_apply_anyway = self._ask_apply_anyway
        review.undo = kept.undo_changes
        review.message.connect(self.services.notices.banner)
        review.applied.connect(lambda done: self._applied(compare, kept.thread_id, done))
        dock = self.changes_dock
        if dock is not None:
            self._dock_pane = dock.widget()
            if self._dock_pane is not None:  # kept aside (not deleted) until the comparison's review ends
                self._dock_pane.hide()
                self._dock_pane.setParent(self.services.shell)
            dock.setWidget(review)
            dock.show()
            dock.raise_()

    def _applied(self, compare: CompareSession, kept: str, done: CombinedApply) -> None:
        """A combined apply wrote the hunks taken: each candidate's set is settled (kept with its thread, with a
        ``change_decided`` event); its change card, in its column and in the chat, says what was decided."""
        from workspace.session.compare import record_settled

        sessions = {session.thread_id: session for session in compare.sessions}
        try:
            events = record_settled(sessions, compare.comparison().sources(), kept, done)
        except Exception as exc:  # the folder is written: the cards may lag, the log says why
            log.warning("the candidates' settled changes were not kept: %s", exc)
            return
        chats = self.chats if compare is self.session else []
        for event in events.values():
            for chat in (*chats, self.chat):
                if chat.change_card(event.change_set_id) is not None:
                    chat.presenter.change_decided(event)

    def _hide_review(self) -> None:
        review, self.review = self.review, None
        dock = self.changes_dock
        if review is None or dock is None:
            return
        review.hide()
        review.setParent(None)
        review.deleteLater()
        if self._dock_pane is not None:
            dock.setWidget(self._dock_pane)
            self._dock_pane.show()
            self._dock_pane = None

    async def _ask_apply_anyway(self, output: str) -> bool:
        from PySide6.QtWidgets import QMessageBox

        tail = output.strip()[-1500:]
        answer = QMessageBox.question(self.services.shell, "The verify failed",
                                      f"The verify command failed on the accepted hunks:\n\n{tail}\n\nApply anyway?")
        return answer == QMessageBox.StandardButton.Yes


def one_tick(events: list[Waiting], limit: int) -> list[Waiting]:
    """Keep in ``events`` (a column's, waiting) what its tick shows and return what waits for its next ones: a
    render left for later alone, or what comes before the next one, up to about ``limit`` characters of text."""
    later: list[Waiting] = []
    for position, event in enumerate(events):
        if isinstance(event, Deferred):
            cut = position or 1
            later = events[cut:]
            del events[cut:]
            break
    return cut_text(events, limit) + later


def cut_text(events: list[Waiting], limit: int) -> list[Waiting]:
    """Keep in ``events`` what goes up to about ``limit`` characters of streamed text (text and thinking deltas)
    and return the rest, in order: a delta that goes past the limit is cut after its last space or line end
    before it (in a word only when it has none), its second part first in the rest. Other events cost no
    text: they go with the text before them."""
    from workspace import events as ev

    left = limit
    for position, event in enumerate(events):
        if not isinstance(event, ev.TextDelta | ev.ReasoningDelta):
            continue
        if left <= 0:
            rest = events[position:]
            del events[position:]
            return rest
        text = event.text
        if len(text) > left:
            cut = max(text.rfind(" ", 0, left), text.rfind("\n", 0, left)) + 1 or left
            rest = [replace(event, text=text[cut:]), *events[position + 1:]]
            del events[position + 1:]
            events[position] = replace(event, text=text[:cut])
            return rest
        left -= len(text)
    return []
