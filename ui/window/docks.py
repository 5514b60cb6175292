"""The window's docks: the inspector (tool calls, memory, trace), MCP servers, Network and Changes.

:class:`Docks` is the registry of the window's docks by key (a read-only mapping:
``window.docks["changes"]``) and owns their panes. The docks are made empty at startup and
filled after the first paint (:meth:`Docks.build_inspector`, or :meth:`Docks.inspector_steps` a pane
per turn of the event loop). The inspector's models are fed the
bridge's batched events, or a stored thread's events when it opens.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QTabBar, QWidget

from ui import theme

if TYPE_CHECKING:
    from ui.inspector.panes import MemoryPane, ToolCallsPane, TracePane
    from ui.main_window import MainWindow
    from ui.mcp.pane import McpPane
    from ui.network.pane import NetworkPane
    from ui.review.pane import ChangesPane
    from ui.transcript import LazyTranscript
    from workspace import events as ev

#: The narrowest a dock's pane gets (its content elides, wraps or scrolls below its wish).
DOCK_MIN_WIDTH = 260
#: The docks' width at start (the chat keeps the rest).
DOCK_WIDTH = 410
#: The most of the window's width :meth:`Docks.fit_tabs` gives the docks so that their tabs show whole.
DOCK_MAX_SHARE = 0.39
#: A stored thread with more events than this fills the inspector from a worker thread.
INSPECTOR_SYNC_EVENTS = 200


class Docks(Mapping[str, QDockWidget]):
    """The window's docks by key, and their panes (None until :meth:`build_inspector`)."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self._docks: dict[str, QDockWidget] = {}
        self.tool_pane: ToolCallsPane | None = None
        self.memory_pane: MemoryPane | None = None
        self.trace_pane: TracePane | None = None
        self.mcp_pane: McpPane | None = None
        self.network_pane: NetworkPane | None = None
        self.changes_pane: ChangesPane | None = None
        #: Events that arrive while a long thread's events are read for the inspector.
        self._inspector_buffer: list[ev.Event] | None = None
        self._steps: Iterator[None] | None = None

    # -- the mapping --------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> QDockWidget:
        return self._docks[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._docks)

    def __len__(self) -> int:
        return len(self._docks)

    # -- construction ----------------------------------------------------------------------------------
    def register(self, key: str, title: str, widget: QWidget, *, icon: str | None = None,
                 area: Qt.DockWidgetArea = Qt.DockWidgetArea.RightDockWidgetArea,
                 shortcut: str | None = None) -> QDockWidget:
        """Add a dock (tabbed with the others on the right) and a View action for it.

        Every part with a dock (Changes, Network, MCP servers) registers it this way.
        """
        w = self.window
        dock = QDockWidget(title, w)
        dock.setObjectName(f"dock-{key}")
        # The dock area is as wide as its widest pane's minimum (tabbed docks too): a set minimum keeps
        # one pane's long text or hidden page from making the window wider; panes elide or wrap below it.
        widget.setMinimumWidth(DOCK_MIN_WIDTH)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetClosable
                         | QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
        dock.setTitleBarWidget(QWidget(dock))  # tabbed docks: the tab is the title
        existing = [d for d in self._docks.values() if w.dockWidgetArea(d) == area]
        w.addDockWidget(area, dock)
        if existing:
            w.tabifyDockWidget(existing[0], dock)
            self.keep_tab_names()
        # Docks tabbed anew (a restored layout, a dock dragged onto another) get a new tab bar.
        dock.dockLocationChanged.connect(self.keep_tab_names)
        dock.topLevelChanged.connect(self.keep_tab_names)
        self._docks[key] = dock
        self._add_actions(key, title, dock, icon=icon, shortcut=shortcut)
        return dock

    def fit_tabs(self) -> None:
        """Widen the docks (from :data:`DOCK_WIDTH`) so that every tab shows whole without scroll arrows,
        with room for a count in a title ("Changes · 9"); at most :data:`DOCK_MAX_SHARE` of the window
        (narrower windows scroll the tabs)."""
        w = self.window
        bars = [b for b in w.findChildren(QTabBar) if b.parentWidget() is w and b.count() == len(self._docks)]
        if not bars or "tools" not in self._docks:
            return
        needed = bars[0].sizeHint().width() + bars[0].fontMetrics().horizontalAdvance(" · 9")
        width = min(max(DOCK_WIDTH, needed), int(w.width() * DOCK_MAX_SHARE))
        if width > self._docks["tools"].width():
            w.resizeDocks([self._docks["tools"]], [width], Qt.Orientation.Horizontal)

    def keep_tab_names(self, *_args: object) -> None:
        """In a narrow dock area the tabs keep their names and scroll ("T…" for Trace says nothing)."""
        for bar in self.window.findChildren(QTabBar):
            if bar.elideMode() != Qt.TextElideMode.ElideNone or not bar.usesScrollButtons():
                bar.setElideMode(Qt.TextElideMode.ElideNone)
                bar.setUsesScrollButtons(True)

    def _add_actions(self, key: str, title: str, dock: QDockWidget, *, icon: str | None,
                     shortcut: str | None) -> None:
        """The View menu's show/hide toggle, and the shortcut that goes to the dock (never hides it)."""
        w = self.window
        action = dock.toggleViewAction()
        action.setText(f"Show {title}")
        if icon:
            action.setIcon(theme.icon(icon, theme.colors().muted, 16))
            action.setProperty("iconName", icon)
        w.commands.add_view_action(f"dock.{key}", action)
        if shortcut:
            go = w.commands.add(f"go.{key}", f"Go to {title}", lambda: self.focus_dock(key), shortcut,
                                w.commands.docks_menu)
            go.setToolTip(f"Show {title} and put the keyboard there (again: back to the message box)")

    def replace_widget(self, key: str, widget: QWidget) -> None:
        """Put a dock's real pane in place of the placeholder it was registered with."""
        dock = self._docks[key]
        widget.setMinimumWidth(DOCK_MIN_WIDTH)
        old = dock.widget()
        dock.setWidget(widget)
        if old is not None and old is not widget:
            old.deleteLater()

    def build(self) -> None:
        """The inspector docks, empty: :meth:`build_inspector` fills them (after the first paint).

        Changes comes second, so its tab (and the count of changes waiting in its title) shows at the
        default width without scrolling the tab bar."""
        for key, title, icon, shortcut in (("tools", "Tool calls", "tool", "Ctrl+Shift+T"),
                                           ("changes", "Changes", "diff", "Ctrl+Shift+D"),
                                           ("memory", "Memory", "memory", "Ctrl+Shift+M"),
                                           ("trace", "Trace", "trace", "Ctrl+Shift+R")):
            placeholder = QWidget(self.window)
            placeholder.setObjectName("InspectorPane")
            self.register(key, title, placeholder, icon=icon, shortcut=shortcut)
        self._docks["tools"].raise_()
        self.window.resizeDocks([self._docks["tools"]], [DOCK_WIDTH], Qt.Orientation.Horizontal)

    def connect(self) -> None:
        self.window.bridge.events_batched.connect(self.add_events)

    def build_inspector(self) -> None:
        """Put the inspector panes in their docks (and add the MCP servers dock when MCP is there), all at
        once (what :meth:`inspector_steps` has not done yet)."""
        for _ in self.inspector_steps():
            pass

    def inspector_steps(self) -> Iterator[None]:
        """:meth:`build_inspector` one pane at a time: a staged start-up runs one step per turn of the
        event loop, so the window keeps painting (a pane takes 5-30 ms to build; all of them at once
        froze the window 130 ms). The same iterator each time: steps already done are not done again."""
        if self._steps is None:
            self._steps = self._inspector_steps()
        return self._steps

    def _inspector_steps(self) -> Iterator[None]:
        from ui.inspector.panes import MemoryPane, ToolCallsPane, TracePane
        from ui.review.window import compare_window

        w = self.window
        self.tool_pane = ToolCallsPane(w.tool_model, w, compare=compare_window)
        self.replace_widget("tools", self.tool_pane)
        yield
        self.memory_pane = MemoryPane(w.memory_model, w)
        self.replace_widget("memory", self.memory_pane)
        yield
        self.trace_pane = TracePane(w.trace_model, w)
        self.replace_widget("trace", self.trace_pane)
        yield
        yield from self._add_mcp()
        yield
        yield from self._add_network()
        yield
        yield from self._add_changes()
        yield
        self._docks["tools"].raise_()
        self.sync_network()
        self.fit_tabs()
        yield
        w.memory.restore_docks()
        w.memory.fit_when_shown()  # the inspector may not fit a narrow screen beside the conversation

    # Each part is built in one step and put in its dock in the next (a pane is set as an attribute once
    # its dock has it).
    def _add_network(self) -> Iterator[None]:
        from ui.network.pane import NetworkPane
        from ui.widgets.status import network_icon

        yield  # the imports in a step of their own
        pane = NetworkPane(self.window.network_model, self.window)
        pane.reveal_requested.connect(self.window.chat.reveal_task)
        yield
        dock = self.register("network", "Network", pane, shortcut="Ctrl+Shift+N")
        dock.toggleViewAction().setIcon(network_icon(theme.colors().muted, 16))
        self.network_pane = pane

    def _add_changes(self) -> Iterator[None]:
        """The Changes dock (review of proposed file changes) and its actions (full-size review, compare)."""
        from ui.review.pane import ChangesPane

        yield  # the imports in a step of their own
        w = self.window
        pane = ChangesPane(w.controller, w, window=w)
        yield
        self.replace_widget("changes", pane)
        self.changes_pane = pane
        pane.pending_changed.connect(w.status.set_pending)
        pane.refresh_title()
        commands = w.commands
        commands.add("review_full", "Review changes (full size)…", lambda: pane.open_review(),
                     menu=commands.view_menu, icon="diff")
        commands.add("compare_answers", "Compare the last two answers…", pane.compare_answers,
                     menu=commands.view_menu, icon="diff")

    def _add_mcp(self) -> Iterator[None]:
        from ui.mcp.pane import McpPane, manager_for

        manager = manager_for(self.window.controller)
        if manager is None:
            return
        yield  # the imports (and the manager) in a step of their own
        w = self.window
        pane = McpPane(manager, w.controller.tasks, w, on_manage=lambda: w.settings_flow.open_mcp_servers(),
                       on_config=w.controller.apply_config)
        # "Attach to message" on a resource: a chip in the message box, like a file's.
        pane.attach_requested.connect(w.composer.add_resource_attachment)
        yield
        self.register("mcp", "MCP servers", pane, icon="server", shortcut="Ctrl+Shift+S")
        self.mcp_pane = pane

    # -- showing ------------------------------------------------------------------------------------------
    def sync_network(self, *, reveal: bool = False) -> None:
        """Draw the network of the open thread (or the picked network) in the Network dock."""
        pane = self.network_pane
        if pane is None:
            return
        network, note = self.window.controller.network_for_dock()
        pane.set_network(network, note=note)
        dock = self._docks.get("network")
        if reveal and network is not None and dock is not None and any(
                d.toggleViewAction().isChecked() for d in self._docks.values()):
            dock.show()
            dock.raise_()

    def focus_dock(self, key: str) -> None:
        """A dock's shortcut: show it, bring its tab to the front and put the keyboard in it; pressed
        again while the keyboard is there, back to the message box."""
        from PySide6.QtWidgets import QApplication

        dock = self._docks.get(key)
        if dock is None:
            return
        w = self.window
        focus = QApplication.focusWidget()
        if focus is not None and dock.isAncestorOf(focus) and self.in_front(dock):
            w.composer.focus()
            return
        dock.show()
        dock.raise_()
        target = focus_target(dock.widget())
        if target is not None:
            target.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def in_front(self, dock: QDockWidget) -> bool:
        """Whether ``dock`` shows: open, and its tab is the current one when it is tabbed with others."""
        if not dock.isVisible():
            return False
        for bar in self.window.findChildren(QTabBar):
            if not bar.isVisible() or bar.parentWidget() is not self.window:
                continue
            for i in range(bar.count()):
                if bar.tabText(i) == dock.windowTitle():
                    return bar.currentIndex() == i
        return True

    def raised(self) -> str | None:
        """The key of the dock in front in the right-hand area (None: none shows)."""
        w = self.window
        for key, dock in self._docks.items():
            if not dock.isFloating() and w.dockWidgetArea(dock) == Qt.DockWidgetArea.RightDockWidgetArea \
                    and self.in_front(dock):
                return key
        return None

    def toggle_inspector(self) -> None:
        visible = any(d.isVisible() for d in self._docks.values())
        for dock in self._docks.values():
            dock.setVisible(not visible)
        if not visible and "tools" in self._docks:
            self._docks["tools"].raise_()

    def review_changes(self, change_set_id: str = "") -> None:
        """Show the Changes dock for a proposed change set."""
        dock = self._docks.get("changes")
        if dock is None or self.changes_pane is None:
            self.window.toast.show_message("Change review is not available in this window yet: the proposed "
                                           "changes are kept; `robotlab run --folder` reviews them in the terminal.")
            return
        dock.show()
        dock.raise_()
        if change_set_id:
            self.changes_pane.show_change_set(change_set_id)

    def retheme(self) -> None:
        from ui.widgets.status import network_icon

        if "network" in self._docks:
            self._docks["network"].toggleViewAction().setIcon(network_icon(theme.colors().muted, 16))
        for pane in (self.tool_pane, self.mcp_pane, self.network_pane, self.changes_pane):
            if pane is not None:
                pane.retheme()

    # -- the inspector's events ---------------------------------------------------------------------------
    def clear_inspector(self) -> None:
        w = self.window
        for model in (w.tool_model, w.trace_model, w.memory_model):
            model.clear()

    def add_events(self, events: list[ev.Event]) -> None:
        """A batch of live events (the bridge's)."""
        if self._inspector_buffer is not None:
            self._inspector_buffer.extend(events)
        w = self.window
        w.trace_model.append_events(events)
        w.tool_model.add_events(events)
        w.memory_model.add_events(events)
        if w.network_model.has_graph:
            w.network_model.add_events(events)

    def load_inspector(self, lazy: LazyTranscript) -> None:
        """Fill the inspector with a stored thread's events: at once for short threads, else read
        in a worker thread (events that arrive meanwhile are kept)."""
        w = self.window
        if len(lazy) <= INSPECTOR_SYNC_EVENTS or w.controller.running:
            self.set_events(lazy.all_events())
            return
        self._inspector_buffer = []
        thread_id = lazy.thread_id

        async def load() -> None:
            import asyncio

            try:
                events = await asyncio.to_thread(lazy.all_events)
            except Exception as exc:
                w.banner.show_message(f"Could not read the thread's events for the inspector: {exc}")
                return
            if w.controller.thread_id != thread_id:
                return
            buffered, self._inspector_buffer = self._inspector_buffer or [], None
            seen = {(e.run_id, e.seq) for e in events}
            self.set_events(events + [e for e in buffered if (e.run_id, e.seq) not in seen])

        w.controller.tasks.spawn(load(), name="inspector-load")

    def set_events(self, events: list[ev.Event]) -> None:
        w = self.window
        w.trace_model.set_events(events)
        w.tool_model.set_events(events)
        w.memory_model.set_events(events)
        if w.network_model.has_graph:
            w.network_model.set_events(events)


def focus_target(widget: QWidget | None) -> QWidget | None:
    """Where the keyboard goes in a dock's pane: its focus proxy, else its first control that takes focus."""
    if widget is None:
        return None
    if widget.focusProxy() is not None:
        return widget.focusProxy()
    for child in widget.findChildren(QWidget):
        if child.isVisibleTo(widget) and child.isEnabled() and child.focusPolicy() & Qt.FocusPolicy.TabFocus:
            return child
    return widget
