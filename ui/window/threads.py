"""Threads in the window: the list (and its search), opening, new, delete and undo, cycling, and
showing a stored thread in the chat (its last turns first, earlier ones on demand: the chat's
presenter feeds each turn's stored events the way the bridge feeds a live run's)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

if TYPE_CHECKING:
    from ui.chat.composer.composer import Composer
    from ui.chat.view.chat import ChatView
    from ui.services import Services
    from ui.threads.model import ThreadItem, ThreadListModel
    from ui.threads.sidebar import Sidebar
    from ui.transcript import LazyTranscript
    from ui.widgets.common import ElidedLabel

log = logging.getLogger("ui.window.threads")

#: How much of the window's thread's CPU time (s) a turn of the event loop spends loading earlier turns while a
#: search hit far up a long thread is brought in (each turn's events are replayed: about a ms a turn). Counted in
#: CPU time, not on the clock: on a busy machine the clock runs on while the thread waits for a core, and a step
#: that stopped after 12 ms on the clock brought 3 or 4 turns, each step's layout of the chat costing as much again.
#: The rest of the step (the chat's layout, the loop) takes 3-6 ms more: 8 ms keeps a step's CPU under a frame.
REVEAL_STEP_S = 0.008
#: The longest (s, on the clock) such a step goes on, waiting included (for a core).
REVEAL_STEP_WALL_S = 0.04
#: The most waits of a ms the workers reading the thread are held back for after the earlier turns loaded, while
#: the message's turn is made (a few widgets a frame), scrolled to and outlined (it takes a few frames).
REVEAL_SHOW_WAITS = 500
#: The most turns loaded in one go within a step (each load tells the chat once; the step's budget is checked
#: between loads).
REVEAL_BATCH = 8
#: The longest (s) the workers reading a thread apart (the inspector's events, the conversation, the branch's ids)
#: wait after it opens, while the chat makes the widgets of its last turns a frame's budget at a time: running
#: meanwhile, they held the interpreter in those steps (a step of 14 ms of CPU took 20) and the turns of a
#: 10,000-turn thread showed after 400-900 ms instead of 200-370 (load 5-7, alternated runs).
OPEN_HOLD_S = 1.0
#: How often (ms) the window looks whether the chat is done making them.
OPEN_HOLD_POLL_MS = 4
#: The empty state's example messages for a robot whose file has no ``examples:`` and whose tools say
#: nothing either (networks have their own: network_examples).
EXAMPLES = ["What can you do?", "Explain recursion with a short example", "Write a haiku about robots"]


def robot_examples(info: Any) -> list[str]:
    """A new thread's suggestions for a robot: its file's ``examples:``, else ones its tools can do."""
    if info is None:
        return list(EXAMPLES)
    examples = [str(e) for e in getattr(info, "examples", ()) or () if str(e).strip()]
    if examples:
        return examples[:6]
    tools = getattr(info, "tools", None)
    names = {str(t) for t in tools} if isinstance(tools, list | tuple) else set()
    every = tools == "all"
    out = []
    for tool, example in (("list_files", "list the files"), ("search_files", "search for TODO"),
                          ("edit_file", "add a line to README.md"), ("remember", "remember that color is teal")):
        if every or tool in names:
            out.append(example)
    return out or list(EXAMPLES)


class Threads(QObject):
    """Switching threads; the chat, the title and the inspector follow the open one."""

    #: A thread opened (its session, None: no thread): the model line and the inspector follow.
    opening = Signal(object)
    #: A stored thread is shown (its LazyTranscript): the inspector reads its events.
    transcript_shown = Signal(object)
    #: The open thread's title (None: no thread), for the window's title.
    title_shown = Signal(object)

    def __init__(self, services: Services) -> None:
        super().__init__(services.shell)
        self.services = services
        #: The query (and the database's state) whose hits are shown or coming (None: the thread list).
        self._searched: tuple[str, int, int] | None = None
        #: The stored branch the chat shows, and the task reading the rest of its ids off the window's thread.
        self._shown: LazyTranscript | None = None
        self._rest: asyncio.Task[None] | None = None
        #: The timer looking whether the chat made its last turns' widgets, and the hold of the workers meanwhile.
        self._held: tuple[QTimer, contextlib.ExitStack] | None = None
        #: The thread list start-up's worker read and the list's rows it made of it, for the first :meth:`refresh`.
        self._rows_ahead: tuple[list[Any], list[ThreadItem]] | None = None

    def attach(self, *, sidebar: Sidebar, model: ThreadListModel, title_label: ElidedLabel, chat: ChatView,
               composer: Composer) -> None:
        """The widgets it works on: the thread list and its model, the conversation's title, the chat, the
        message box."""
        self.sidebar, self.thread_model, self.title_label = sidebar, model, title_label
        self.chat, self.composer = chat, composer

    def follow(self) -> None:
        """Follow the session's threads and the thread list's requests."""
        c, sidebar = self.services.session, self.sidebar
        c.thread_opened.connect(self.on_thread_opened)
        c.threads_changed.connect(self.refresh)
        sidebar.new_thread_requested.connect(self.new)
        sidebar.thread_selected.connect(self.open)
        sidebar.result_opened.connect(self.open_result)
        sidebar.search_changed.connect(self.on_search)
        sidebar.rename_requested.connect(c.rename_thread)
        sidebar.delete_requested.connect(self.delete)

    # -- the list ------------------------------------------------------------------------------------
    def read_ahead(self) -> None:
        """Read the thread list and make the list's rows of it now, in start-up's worker thread (no widget is
        touched): the window's thread only puts them in the list. Made there, a user's 3,000 threads' rows cost the
        window's thread about 5 ms of the step that showed them."""
        from ui.threads.model import thread_item

        threads = self.services.session.read_thread_list_ahead()
        if threads is not None:
            self._rows_ahead = threads, [thread_item(t) for t in threads]

    def refresh(self) -> None:
        c = self.services.session
        query = self.sidebar.search.text().strip()
        ahead, self._rows_ahead = self._rows_ahead, None
        if query:
            self._search(query)
        else:
            self._searched = None
            threads = c.list_threads()
            # The rows made ahead, when these are the threads they were made of (not a list read again since).
            self.thread_model.set_threads(ahead[1] if ahead is not None and ahead[0] is threads else threads)
        self.show_current()

    def _search(self, query: str) -> None:
        """The hits for ``query``, searched off the window's thread; shown when they come, unless a newer
        query was typed meanwhile. Not searched again while the database has not changed (the thread list
        changes for other reasons too: a run starting, a selection)."""
        c = self.services.session
        store = c.store
        key = (query, id(store), store.write_count if store is not None else 0)
        if key == self._searched:
            return
        self._searched = key

        async def search() -> None:
            hits = await c.search_in_background(query)
            if hits is None or self._searched != key:  # a newer query's hits are (or will be) the ones shown
                return
            try:
                self.thread_model.set_hits(hits)
                self.show_current()
            except RuntimeError:  # the window closed meanwhile
                pass

        c.tasks.spawn(search(), name="thread-search")

    def show_current(self) -> None:
        """Select the open thread in the list (search results stay as they are) and show its title."""
        c = self.services.session
        self.sidebar.select_thread(c.thread_id)
        thread = getattr(c.session, "thread", None) if c.session else None
        if thread is not None:
            self.title_label.setText(getattr(thread, "display_title", None) or "Untitled thread")
            self.title_shown.emit(self.title_label.text())

    def on_search(self, _query: str) -> None:
        self.refresh()

    # -- switching -----------------------------------------------------------------------------------
    def new(self) -> None:
        self.services.session.new_thread()
        self.composer.focus()

    def open(self, thread_id: str) -> None:
        self.services.session.open_thread(thread_id)  # a run going in the thread left goes on in the background
        self.composer.focus()

    def open_result(self, thread_id: str, turn_id: str) -> None:
        """Open a search result: its thread, scrolled to the matching message (on its branch). Far up a long
        thread, the turns above the last ones come in a few per turn of the event loop until the message is
        among them, so the window does not freeze meanwhile."""
        c = self.services.session
        self.open(thread_id)
        self._end_hold()  # the hit, not the last turns, is what is shown: its reveal holds them
        if c.thread_id != thread_id:
            return
        words = self.sidebar.search.text().split()
        c.tasks.spawn(self._reveal(thread_id, turn_id, words), name="reveal-result")

    async def _reveal(self, thread_id: str, turn_id: str, words: list[str]) -> None:
        c = self.services.session
        lazy = await self._whole_branch()
        if lazy is None or c.thread_id != thread_id:
            return
        back = lazy.index_from_end(turn_id)
        if back is None:  # on another branch of the thread: show that branch, then the message
            if not c.show_turn(turn_id):
                return
            lazy = await self._whole_branch()
            if lazy is None or c.thread_id != thread_id:
                return
            back = lazy.index_from_end(turn_id)
            if back is None:
                return
        above = len(lazy) - 1 - back  # the turns above the message
        # The workers reading the thread apart (the inspector's events, the conversation, the meter's count) wait
        # meanwhile: each step's reads and the interpreter are the window's alone (they go on once it shows).
        with lazy.store.background_held():
            await self._load_above(lazy, above)
            if self._shown is not lazy or not self.chat.reveal_turn(turn_id, words=words):
                return
            for _ in range(REVEAL_SHOW_WAITS):  # made, scrolled to and outlined in the next frames
                if not self.chat.finder.revealing:
                    break
                await asyncio.sleep(0.001)
            await asyncio.sleep(0)  # (and painted)

    async def _load_above(self, lazy: LazyTranscript, above: int) -> None:
        """Load earlier turns of ``lazy`` (shown) until only ``above`` are left hidden, in steps of the event loop
        (stops when another thread or branch opens meanwhile)."""
        presenter = self.chat.presenter
        per_turn = REVEAL_STEP_S  # the CPU time a turn takes to load, as measured so far (the first load: one)
        while presenter.hidden_turns > above:
            until, wall_until = time.thread_time() + REVEAL_STEP_S, time.perf_counter() + REVEAL_STEP_WALL_S
            with self.chat.turn_window.deferring(hold=True):  # data only: the message's turn becomes widgets
                while (left := until - time.thread_time()) > 0 and time.perf_counter() < wall_until:
                    count = min(presenter.hidden_turns - above, REVEAL_BATCH, max(1, int(left / per_turn)))
                    if count <= 0:
                        break
                    started = time.thread_time()
                    loaded = presenter.load_earlier(count)
                    if not loaded:
                        break
                    per_turn = max((time.thread_time() - started) / loaded, 1e-4)
            await asyncio.sleep(0)
            if self._shown is not lazy:  # another thread or branch opened meanwhile
                return

    async def _whole_branch(self) -> LazyTranscript | None:
        """The branch shown, its ids known to the root (read in the worker, else here); None: none shown."""
        lazy, rest = self._shown, self._rest
        if lazy is None:
            return None
        if not lazy.complete and rest is not None:
            await asyncio.wait([rest])
        if self._shown is not lazy:
            return None
        lazy.read_to(None)  # (when the worker could not read it)
        return lazy

    def cycle(self, step: int) -> None:
        items = self.thread_model.items
        if not items:
            return
        current = self.services.session.thread_id
        ids = [i.thread_id for i in items]
        index = ids.index(current) + step if current in ids else (0 if step > 0 else len(ids) - 1)
        self.open(ids[index % len(ids)])

    def delete_current(self) -> None:
        thread_id = self.services.session.thread_id
        if thread_id:
            self.delete(thread_id)

    def delete(self, thread_id: str) -> None:
        title = next((i.title for i in self.thread_model.items if i.thread_id == thread_id), "Thread")
        delegates = self.services.session.delegations_running(thread_id)
        if self.services.session.delete_thread(thread_id):
            said = f"Deleted “{title}”"
            if delegates:
                said += f"; stopped the work it had delegated to {', '.join(sorted(set(delegates)))}"
            self.services.notices.toast(said, action="Undo", callback=lambda: self.undo_delete(thread_id))

    def undo_delete(self, thread_id: str) -> None:
        self.services.session.restore_thread(thread_id)
        self.open(thread_id)

    # -- showing ---------------------------------------------------------------------------------------
    def show_empty(self) -> None:
        """No thread open: the chat's empty state for the picked robot or network."""
        c = self.services.session
        label, is_lm = c.model_label()
        self.title_label.setText("New thread")
        self.title_shown.emit(None)
        info = next((r for r in c.robots() if getattr(r, "name", None) == c.robot_name), None)
        examples = robot_examples(info)
        if c.target_kind == "network":
            from ui.network.model import network_examples

            examples = network_examples(c.robot_name)
            label = f"A network of robots · {label}"
        self.chat.show_empty(robot=c.robot_name, model_label=label, is_language_model=is_lm, examples=examples)

    def on_thread_opened(self, session: Any) -> None:
        self.opening.emit(session)  # the model line (the message box names the robot), the inspector
        if session is None:
            self._shown = self._rest = None
            self.show_empty()
            self.sidebar.select_thread(None)
            return
        self.render_session(session)
        self.show_current()  # not a new search: the results stay put while their threads open

    def render_session(self, session: Any) -> None:
        """Show a stored thread: its last turns now, earlier ones on demand; the inspector too."""
        from ui.transcript import LazyTranscript

        c = self.services.session
        thread_id = c.thread_id or ""
        try:
            lazy = LazyTranscript(c.require_store(), thread_id)
        except Exception as exc:
            self.services.notices.banner(f"Could not read the thread: {exc}")
            self._shown = self._rest = None
            self.chat.clear()
            return
        self._shown, self._rest = lazy, None
        self.chat.show_thread(lazy)  # through the chat's presenter, like a live run
        self._hold_while_made(lazy)
        self.transcript_shown.emit(lazy)
        if not lazy.complete:  # a long branch: its last page read, the rest now off the window's thread
            self._rest = c.tasks.spawn(self._read_rest(lazy), name="thread-branch")
        thread = session.thread
        self.title_label.setText(thread.display_title)
        self.title_shown.emit(thread.display_title)

    def _hold_while_made(self, lazy: LazyTranscript) -> None:
        """Hold the workers reading the thread apart back while the chat makes the widgets of the turns of ``lazy``
        near its screen (at most :data:`OPEN_HOLD_S`; another thread shown ends it). Looked at on a timer, not in a
        task: the steps making them are the turn window's timers, and the event loop's tasks may not be running."""
        self._end_hold()
        held = contextlib.ExitStack()
        held.enter_context(lazy.store.background_held())
        until = time.perf_counter() + OPEN_HOLD_S
        timer = QTimer(self)

        def look() -> None:
            if self._shown is not lazy or not self.chat.turn_window.busy or time.perf_counter() > until:
                self._end_hold()

        timer.timeout.connect(look)
        timer.start(OPEN_HOLD_POLL_MS)
        self._held = timer, held

    def _end_hold(self) -> None:
        """The workers held back by :meth:`_hold_while_made` go on."""
        if self._held is not None:
            timer, held = self._held
            self._held = None
            timer.stop()
            timer.deleteLater()
            held.close()

    async def _read_rest(self, lazy: LazyTranscript) -> None:
        """The ids of ``lazy``'s branch above its last page, read in a worker: the count of earlier turns is
        then the branch's (until then, the turns known)."""
        above = lazy.above
        if above is None:
            return
        try:
            page = await self.services.session.branch_in_background(lazy.thread_id, above)
        except Exception as exc:  # the pages above are read when they are asked for instead
            log.debug("the branch of %s was not read in the background: %s", lazy.thread_id, exc)
            return
        if lazy.add_rest(page) and self._shown is lazy:
            try:
                self.chat.hidden_changed()
            except RuntimeError:  # the window closed meanwhile
                pass
