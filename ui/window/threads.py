"""Threads in the window: the list (and its search), opening, new, delete and undo, cycling, and
showing a stored thread in the chat (its last turns first, earlier ones on demand: the chat's
presenter feeds each turn's stored events the way the bridge feeds a live run's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ui.main_window import MainWindow

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


class Threads:
    """Switching threads; the chat, the title and the inspector follow the open one."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window

    def connect(self) -> None:
        w, c = self.window, self.window.controller
        c.thread_opened.connect(self.on_thread_opened)
        c.threads_changed.connect(self.refresh)
        w.sidebar.new_thread_requested.connect(self.new)
        w.sidebar.thread_selected.connect(self.open)
        w.sidebar.result_opened.connect(self.open_result)
        w.sidebar.search_changed.connect(self.on_search)
        w.sidebar.rename_requested.connect(c.rename_thread)
        w.sidebar.delete_requested.connect(self.delete)
        w.sidebar.export_requested.connect(lambda tid: w.transfer.export_thread("markdown", tid))

    # -- the list ------------------------------------------------------------------------------------
    def refresh(self) -> None:
        w, c = self.window, self.window.controller
        query = w.sidebar.search.text().strip()
        if query:
            w.thread_model.set_hits(c.search(query))
        else:
            w.thread_model.set_threads(c.list_threads())
        self.show_current()

    def show_current(self) -> None:
        """Select the open thread in the list (search results stay as they are) and show its title."""
        w, c = self.window, self.window.controller
        w.sidebar.select_thread(c.thread_id)
        thread = getattr(c.session, "thread", None) if c.session else None
        if thread is not None:
            w.title_label.setText(getattr(thread, "display_title", None) or "Untitled thread")
            w.status.retitle(w.title_label.text())

    def on_search(self, _query: str) -> None:
        self.refresh()

    # -- switching -----------------------------------------------------------------------------------
    def new(self) -> None:
        self.window.controller.new_thread()
        self.window.composer.focus()

    def open(self, thread_id: str) -> None:
        w, c = self.window, self.window.controller
        if c.running and thread_id != c.thread_id:
            w.toast.show_message("The running answer was stopped to open another thread.")
        c.open_thread(thread_id)
        w.composer.focus()

    def open_result(self, thread_id: str, turn_id: str) -> None:
        """Open a search result: its thread, scrolled to the matching message (on its branch)."""
        w, c = self.window, self.window.controller
        self.open(thread_id)
        if c.thread_id != thread_id:
            return
        words = w.sidebar.search.text().split()
        # On another branch of the thread: show that branch, then the message.
        if not w.chat.reveal_turn(turn_id, words=words) and c.show_turn(turn_id):
            w.chat.reveal_turn(turn_id, words=words)

    def cycle(self, step: int) -> None:
        items = self.window.thread_model.items
        if not items:
            return
        current = self.window.controller.thread_id
        ids = [i.thread_id for i in items]
        index = ids.index(current) + step if current in ids else (0 if step > 0 else len(ids) - 1)
        self.open(ids[index % len(ids)])

    def delete_current(self) -> None:
        thread_id = self.window.controller.thread_id
        if thread_id:
            self.delete(thread_id)

    def delete(self, thread_id: str) -> None:
        w = self.window
        title = next((i.title for i in w.thread_model.items if i.thread_id == thread_id), "Thread")
        if w.controller.delete_thread(thread_id):
            w.toast.show_message(f"Deleted “{title}”", action="Undo", callback=lambda: self.undo_delete(thread_id))

    def undo_delete(self, thread_id: str) -> None:
        self.window.controller.restore_thread(thread_id)
        self.open(thread_id)

    # -- showing ---------------------------------------------------------------------------------------
    def show_empty(self) -> None:
        """No thread open: the chat's empty state for the picked robot or network."""
        w, c = self.window, self.window.controller
        label, is_lm = c.model_label()
        w.title_label.setText("New thread")
        w.status.retitle(None)
        info = next((r for r in c.robots() if getattr(r, "name", None) == c.robot_name), None)
        examples = robot_examples(info)
        if c.target_kind == "network":
            from ui.network.model import network_examples

            examples = network_examples(c.robot_name)
            label = f"A network of robots · {label}"
        w.chat.show_empty(robot=c.robot_name, model_label=label, is_language_model=is_lm, examples=examples)

    def on_thread_opened(self, session: Any) -> None:
        w = self.window
        w.robots.update_model_label()  # the message box names the robot its messages go to
        w.docks.clear_inspector()
        w.docks.sync_network(reveal=bool(getattr(session, "is_network", False)))
        if session is None:
            self.show_empty()
            w.sidebar.select_thread(None)
            return
        self.render_session(session)
        self.show_current()  # not a new search: the results stay put while their threads open

    def render_session(self, session: Any) -> None:
        """Show a stored thread: its last turns now, earlier ones on demand; the inspector too."""
        from ui.transcript import LazyTranscript

        w = self.window
        thread_id = w.controller.thread_id or ""
        try:
            lazy = LazyTranscript(w.controller.require_store(), thread_id)
        except Exception as exc:
            w.banner.show_message(f"Could not read the thread: {exc}")
            w.chat.clear()
            return
        w.chat.show_thread(lazy)  # through the chat's presenter, like a live run
        w.docks.load_inspector(lazy)
        thread = session.thread
        w.title_label.setText(thread.display_title)
        w.status.retitle(thread.display_title)
