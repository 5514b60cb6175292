"""The window's docks, declared as data: the inspector (tool calls, memory, trace), MCP servers, Network
and Changes.

A dock is one :class:`DockSpec` in :data:`DOCKS` (key, title, icon, shortcut, area, whether its dock
shows empty from the start) naming the factory in its pane's module (``"ui.network.pane:make_pane"``,
called with a :class:`DockContext`). :class:`Docks` builds them all from the list: the docks marked
``early`` are made empty at startup (their tabs keep their places), and every pane is made after the
first paint, one step per turn of the event loop (:meth:`Docks.inspector_steps`), except the ``lazy``
ones: their dock holds a placeholder until it first shows (its tab chosen, its shortcut, a restored
layout) or its pane is asked for (:meth:`Docks.pane`, the typed properties), so a pane nobody looks at
costs start-up nothing. :class:`Docks` is
also the registry of the window's docks by key (a read-only mapping: ``window.docks["changes"]``) and
owns their panes. The inspector's models are fed the bridge's batched events, or a stored thread's
events when it opens.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QDockWidget, QTabBar, QTabWidget, QWidget

from ui import theme
from ui.services import DockContext, PaneFactory

if TYPE_CHECKING:
    from ui.chat.composer.composer import Composer
    from ui.inspector.contents import InspectorContents
    from ui.inspector.memory import MemoryModel
    from ui.inspector.panes import MemoryPane, ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel
    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane
    from ui.mcp.pane import McpPane
    from ui.network.model import NetworkModel
    from ui.network.pane import NetworkPane
    from ui.review.pane import ChangesPane
    from ui.services import Services
    from ui.transcript import LazyTranscript
    from workspace import events as ev

log = logging.getLogger("ui.window.docks")

#: The narrowest a dock's pane gets (its content elides, wraps or scrolls below its wish).
DOCK_MIN_WIDTH = 260
#: The docks' width at start (the chat keeps the rest).
DOCK_WIDTH = 410
#: The most of the window's width :meth:`Docks.fit_tabs` gives the docks so that their tabs show whole.
DOCK_MAX_SHARE = 0.39
#: A tab's room beside its name until the tabs across tell it: the style sheet's padding (6 px a side).
TAB_ROOM = 12
#: A stored thread with more events than this fills the inspector from a worker thread.
INSPECTOR_SYNC_EVENTS = 200

RIGHT = Qt.DockWidgetArea.RightDockWidgetArea


@dataclass(frozen=True)
class DockSpec:
    """One dock, declared once."""

    key: str
    title: str
    #: ``"module:function"``: the pane's factory (:data:`PaneFactory`), imported after the first paint.
    factory: str
    #: A theme icon's name, or a function of (colour, size) for a drawn one; None: no icon.
    icon: str | Callable[[str, int], QIcon] | None = None
    #: The shortcut that puts the keyboard in the dock (View > Go to).
    shortcut: str | None = None
    area: Qt.DockWidgetArea = RIGHT
    #: The dock is made (empty) with the window, so its tab keeps its place; else it comes with its pane.
    early: bool = False
    #: The pane is made when its dock first shows or the pane is asked for, not at start-up (a tab behind
    #: another at start: what the window wires to it waits for it, :meth:`Docks.when_made`).
    lazy: bool = False


def _compare_window(old: str, new: str, *, name: str, title: str, parent: QWidget | None = None) -> QWidget:
    """Two texts side by side in the review's compare window (imported when first asked for)."""
    from ui.review.window import compare_window

    return compare_window(old, new, name=name, title=title, parent=parent)


def _network_icon(color: str, size: int) -> QIcon:
    from ui.widgets.status import network_icon

    return network_icon(color, size)


#: The window's docks, in the order of their tabs and of their panes' build (Changes second, so its tab
#: and the count of changes waiting in its title show at the default width without scrolling the tabs).
DOCKS: tuple[DockSpec, ...] = (
    DockSpec("tools", "Tool calls", "ui.inspector.panes:make_tool_calls", "tool", "Ctrl+Shift+T", early=True),
    DockSpec("changes", "Changes", "ui.review.pane:make_pane", "diff", "Ctrl+Shift+D", early=True),
    DockSpec("memory", "Memory", "ui.inspector.panes:make_memory", "memory", "Ctrl+Shift+M", early=True, lazy=True),
    DockSpec("trace", "Trace", "ui.inspector.trace_pane:make_trace", "trace", "Ctrl+Shift+R", early=True,
             lazy=True),
    # (MCP servers: its pane owns the MCP manager, which starts the servers: made at start-up, in its dock made
    # early, behind the others: the pane does not show then, and makes its Output and Log tabs when it first does.)
    DockSpec("mcp", "MCP servers", "ui.mcp.pane:make_pane", "server", "Ctrl+Shift+S", early=True),
    DockSpec("network", "Network", "ui.network.pane:make_pane", _network_icon, "Ctrl+Shift+N", early=True, lazy=True),
)


class Docks(Mapping[str, QDockWidget]):
    """The window's docks by key, and their panes (None until :meth:`build_inspector`)."""

    def __init__(self, services: Services, specs: tuple[DockSpec, ...] | None = None) -> None:
        self.services = services
        #: Where the docks go (the Qt window).
        self.window = services.shell
        self.specs = DOCKS if specs is None else specs
        #: What to call once every pane is in its dock (:meth:`when_built`).
        self._after_build: list[Callable[[], object]] = []
        self._docks: dict[str, QDockWidget] = {}
        #: Each dock's pane once its dock has it, by key.
        self.panes: dict[str, QWidget] = {}
        #: What the window wires to a pane when it is made (:meth:`when_made`), by key.
        self._on_made: dict[str, list[Callable[[Any], object]]] = {}
        #: Events that arrive while a long thread's events are read for the inspector.
        self._inspector_buffer: list[ev.Event] | None = None
        #: The read of a long thread's events for the inspector that is wanted (None: none): an earlier one stops.
        self._loading: object | None = None
        #: The open thread's events (stored, then live), for a Network graph drawn after they came.
        self._thread_events: list[ev.Event] = []
        self._steps: Iterator[None] | None = None
        #: The open thread's events while the inspector shows a comparison's candidate (None: it shows the thread).
        self._aside: list[ev.Event] | None = None
        #: The lazy docks whose pane is not made yet (a placeholder in their dock), by key.
        self._waiting: dict[str, DockSpec] = {}
        self._context: DockContext | None = None
        #: A tab's room beside its name (:meth:`refit_tabs`).
        self._tab_room: float = TAB_ROOM

    # -- the panes by their types (None until made; a lazy pane waiting in its dock is made when asked for) --
    def pane(self, key: str) -> QWidget | None:
        """Dock ``key``'s pane: made now if it is a lazy one still waiting for its dock to show; None before its
        start-up step (or for a dock the window does not have)."""
        if key in self._waiting:
            self._make_waiting(key)
        return self.panes.get(key)

    @property
    def tool_pane(self) -> ToolCallsPane | None:
        return cast("ToolCallsPane | None", self.pane("tools"))

    @property
    def memory_pane(self) -> MemoryPane | None:
        return cast("MemoryPane | None", self.pane("memory"))

    @property
    def trace_pane(self) -> TracePane | None:
        return cast("TracePane | None", self.pane("trace"))

    @property
    def mcp_pane(self) -> McpPane | None:
        return cast("McpPane | None", self.pane("mcp"))

    @property
    def network_pane(self) -> NetworkPane | None:
        return cast("NetworkPane | None", self.pane("network"))

    @property
    def changes_pane(self) -> ChangesPane | None:
        return cast("ChangesPane | None", self.pane("changes"))

    def attach(self, *, tool_model: ToolCallsModel, memory_model: MemoryModel, trace_model: TraceModel,
               network_model: NetworkModel, composer: Composer, open_mcp_servers: Callable[[], None]) -> None:
        """What the docks work on: the inspector's models (fed the events), the message box (a dock's shortcut
        pressed again goes back to it), and Settings' MCP page (the MCP dock's "Manage servers…")."""
        self.tool_model, self.memory_model, self.trace_model = tool_model, memory_model, trace_model
        self.network_model, self.composer, self.open_mcp_servers = network_model, composer, open_mcp_servers

    def when_built(self, then: Callable[[], object]) -> None:
        """Call ``then()`` once every pane is in its dock (the window restores the docks' layout)."""
        self._after_build.append(then)

    def when_made(self, key: str, wire: Callable[[Any], object]) -> None:
        """Call ``wire(pane)`` when the pane of dock ``key`` is in its dock (how the window connects it to the
        other parts)."""
        self._on_made.setdefault(key, []).append(wire)

    # -- the mapping --------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> QDockWidget:
        return self._docks[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._docks)

    def __len__(self) -> int:
        return len(self._docks)

    # -- construction ----------------------------------------------------------------------------------
    def _new_dock(self, spec: DockSpec) -> QDockWidget:
        """The dock of ``spec``, not in the window yet (:meth:`register` puts it there)."""
        dock = QDockWidget(spec.title, self.window)
        dock.setObjectName(f"dock-{spec.key}")
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetClosable
                         | QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
        dock.setTitleBarWidget(QWidget(dock))  # tabbed docks: the tab is the title
        return dock

    def register(self, spec: DockSpec, widget: QWidget, *, dock: QDockWidget | None = None) -> QDockWidget:
        """Add the dock of ``spec`` (tabbed with the others in its area; ``dock``: the one the widget was made in,
        else a new one) and a View action for it."""
        key, area = spec.key, spec.area
        w = self.window
        dock = self._new_dock(spec) if dock is None else dock
        # The dock area is as wide as its widest pane's minimum (tabbed docks too): a set minimum keeps
        # one pane's long text or hidden page from making the window wider; panes elide or wrap below it.
        widget.setMinimumWidth(DOCK_MIN_WIDTH)
        dock.setWidget(widget)
        existing = [d for d in self._docks.values() if w.dockWidgetArea(d) == area]
        w.addDockWidget(area, dock)
        if existing:
            w.tabifyDockWidget(existing[0], dock)
            self.keep_tab_names()
        # Docks tabbed anew (a restored layout, a dock dragged onto another) get a new tab bar.
        dock.dockLocationChanged.connect(self.keep_tab_names)
        dock.topLevelChanged.connect(self.keep_tab_names)
        # The dock area resized (its separator dragged), a name changed ("Changes · 9"): the tabs across or down its side.
        if key == "tools":
            dock.installEventFilter(_OnResize(dock, self.refit_tabs))
        dock.windowTitleChanged.connect(lambda _title: self.refit_tabs())
        self._docks[key] = dock
        self._add_actions(spec, dock)
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

    def _tab_bar(self) -> QTabBar | None:
        """The tab bar of the docks tabbed together (None: not tabbed, or not yet)."""
        w = self.window
        return next((b for b in w.findChildren(QTabBar) if b.parentWidget() is w and b.count() == len(self._docks)
                     and b.count() > 1), None)

    def refit_tabs(self, *, widen: bool = False) -> None:
        """The tabs across the top of the dock area while their whole names fit its width; else down its right-hand
        side, each name whole, read top to bottom: the tabs never scroll behind arrows and no pane is out of reach (at
        1024 wide six names need about 420 px, the docks have about 310). ``widen`` (the window resized): the docks
        are widened for the names across first when that keeps them within :data:`DOCK_MAX_SHARE` of the window (as
        :meth:`fit_tabs`); a dock area resized by hand is not widened back."""
        w, bar = self.window, self._tab_bar()
        dock = self._docks.get("tools")
        if bar is None or dock is None or dock.isFloating():
            return
        metrics = bar.fontMetrics()
        names = sum(metrics.horizontalAdvance(bar.tabText(i)) for i in range(bar.count()))
        if w.tabPosition(RIGHT) == QTabWidget.TabPosition.North:  # the tabs' own width across
            needed = bar.sizeHint().width()
            self._tab_room = (needed - names) / bar.count()  # (a tab's room beside its name, as the style has it)
        else:
            needed = math.ceil(names + bar.count() * self._tab_room)
        room = w.width() - dock.geometry().left()  # the area's width: the docks' and the side tabs' (right of them)
        if widen and room < needed <= int(w.width() * DOCK_MAX_SHARE):
            w.resizeDocks([dock], [needed + metrics.horizontalAdvance(" · 9")], Qt.Orientation.Horizontal)
            room = needed
        position = QTabWidget.TabPosition.North if needed <= room else QTabWidget.TabPosition.East
        if w.tabPosition(RIGHT) != position:
            w.setTabPosition(RIGHT, position)

    def keep_tab_names(self, *_args: object) -> None:
        """In a narrow dock area the tabs keep their names and scroll ("T…" for Trace says nothing)."""
        for bar in self.window.findChildren(QTabBar):
            if bar.elideMode() != Qt.TextElideMode.ElideNone or not bar.usesScrollButtons():
                bar.setElideMode(Qt.TextElideMode.ElideNone)
                bar.setUsesScrollButtons(True)

    def _add_actions(self, spec: DockSpec, dock: QDockWidget) -> None:
        """The View menu's show/hide toggle, and the shortcut that goes to the dock (never hides it)."""
        key, title, shortcut = spec.key, spec.title, spec.shortcut
        action = dock.toggleViewAction()
        action.setText(f"Show {title}")
        if isinstance(spec.icon, str):
            action.setIcon(theme.icon(spec.icon, theme.colors().muted, 16))
            action.setProperty("iconName", spec.icon)
        elif spec.icon is not None:
            action.setIcon(spec.icon(theme.colors().muted, 16))  # drawn: retheme() draws it anew
        commands = self.services.commands
        commands.add_view_action(f"dock.{key}", action)
        if shortcut:
            go = commands.add(f"go.{key}", f"Go to {title}", lambda: self.focus_dock(key), shortcut,
                              commands.docks_menu)
            go.setToolTip(f"Show {title} and put the keyboard there (again: back to the message box)")

    def _remove_dock(self, key: str) -> None:
        """Take an early dock out of the window (its pane could not be made): its tab and its View action go."""
        dock = self._docks.pop(key)
        dock.toggleViewAction().setVisible(False)
        self.window.removeDockWidget(dock)
        dock.deleteLater()

    def replace_widget(self, key: str, widget: QWidget) -> None:
        """Put a dock's real pane in place of the placeholder it was registered with."""
        dock = self._docks[key]
        widget.setMinimumWidth(DOCK_MIN_WIDTH)
        old = dock.widget()
        dock.setWidget(widget)
        if old is not None and old is not widget:
            old.deleteLater()

    def build_steps(self) -> Iterator[None]:
        """The early docks, empty, a dock per step (a dock, its tab and its View actions: a few ms each):
        :meth:`build_inspector` fills them (after the first paint)."""
        for spec in self.specs:
            if spec.early:
                placeholder = QWidget(self.window)
                placeholder.setObjectName("InspectorPane")
                self.register(spec, placeholder)
                yield
        self._docks["tools"].raise_()
        self.window.resizeDocks([self._docks["tools"]], [DOCK_WIDTH], Qt.Orientation.Horizontal)
        # Every tab is there: the docks' width for them now, so that the panes put in the docks later do not lay
        # the main window out again (the chat, the sidebar and every dock: 10-30 ms of a busy machine's CPU).
        self.fit_tabs()

    def connect(self) -> None:
        self.services.bridge.events_batched.connect(self.add_events)

    def build_inspector(self) -> None:
        """Put every pane in its dock (adding the docks that come with their panes), all at once (what
        :meth:`inspector_steps` has not done yet)."""
        for _ in self.inspector_steps():
            pass

    def inspector_steps(self) -> Iterator[None]:
        """:meth:`build_inspector` one step at a time: a staged start-up runs one step per turn of the
        event loop, so the window keeps painting (a pane takes 5-30 ms to build; all of them at once
        froze the window 130 ms). The same iterator each time: steps already done are not done again."""
        if self._steps is None:
            self._steps = self._inspector_steps()
        return self._steps

    def pane_modules(self) -> list[str]:
        """The modules of the panes' factories (a staged start-up imports them in a worker thread first)."""
        return [spec.factory.partition(":")[0] for spec in self.specs]

    def context(self) -> DockContext:
        """What the panes are made with."""
        return DockContext(services=self.services, parent=self.window, tool_model=self.tool_model,
                           memory_model=self.memory_model, trace_model=self.trace_model,
                           network_model=self.network_model, open_mcp_servers=self.open_mcp_servers,
                           compare=_compare_window)

    def _inspector_steps(self) -> Iterator[None]:
        context = self._context = self.context()
        for spec in self.specs:
            if spec.lazy:
                self._wait(spec)
            else:
                yield from self._add(spec, context)
            yield
        self._docks["tools"].raise_()
        # From here a lazy dock that shows makes its pane (not while the steps tabbed the docks: the tab added
        # last is the current one for a moment).
        for key in list(self._waiting):
            self._docks[key].visibilityChanged.connect(lambda visible, key=key: self._shown(key, visible))
            self._shown(key, self.in_front(self._docks[key]))
        self.sync_network()
        yield
        for then in self._after_build:
            then()

    def _wait(self, spec: DockSpec) -> None:
        """A lazy dock: its tab now, with a placeholder (an early dock has it already); its pane when it shows."""
        if spec.key not in self._docks:
            placeholder = QWidget(self.window)
            placeholder.setObjectName("InspectorPane")
            self.register(spec, placeholder)
        self._waiting[spec.key] = spec

    def _shown(self, key: str, visible: bool) -> None:
        if visible and key in self._waiting:
            self._make_waiting(key)

    def _make_waiting(self, key: str) -> None:
        spec = self._waiting.pop(key)  # (tried once: a pane that cannot be built is not tried at every show)
        try:
            for _ in self._add(spec, self._context or self.context()):
                pass
        except Exception as exc:  # the dock keeps its placeholder; the rest of the window works
            log.exception("building the %s dock's pane", key)
            self.services.notices.banner(f"The {spec.title} pane could not be built: {type(exc).__name__}: {exc}. "
                                         "The conversation still works; the log has the details.")
            return
        if key == "network":
            self.sync_network()

    def _add(self, spec: DockSpec, context: DockContext) -> Iterator[None]:
        """A dock's pane: its module imported in a step of its own (unless it already is), the pane made, then
        put in its dock in the next step (a pane is in :attr:`panes` once its dock has it)."""
        import sys

        module_name, _, function = spec.factory.partition(":")
        if module_name not in sys.modules:
            importlib.import_module(module_name)
            yield
        factory = cast(PaneFactory, getattr(sys.modules[module_name], function))
        # The pane is made inside its dock (one made now, put in the window with the pane, for a dock that comes
        # with its pane): a pane moved from another parent into its dock had the style sheet worked out anew for
        # each of its widgets, 8-20 ms a pane.
        new_dock = None if spec.key in self._docks else self._new_dock(spec)
        dock = self._docks[spec.key] if new_dock is None else new_dock
        pane = factory(dataclasses.replace(context, parent=dock))
        if pane is None:  # no such pane in this window (MCP without its SDK): no dock either
            if new_dock is None:
                self._remove_dock(spec.key)
            else:
                new_dock.deleteLater()
            return
        yield
        # A pane made in parts (``build_steps()``: the Tool calls, Changes and MCP servers panes) has the rest made a
        # part per step.
        more = getattr(pane, "build_steps", None)
        for _ in more() if callable(more) else ():
            yield
        if new_dock is None:
            self.replace_widget(spec.key, pane)
        else:
            self.register(spec, pane, dock=new_dock)
        self.panes[spec.key] = pane
        for wire in self._on_made.get(spec.key, []):
            wire(pane)

    # -- showing ------------------------------------------------------------------------------------------
    def sync_network(self, *, reveal: bool = False) -> None:
        """Draw the network of the open thread (or the picked network) in the Network dock (a Network dock
        still waiting for its pane: only shown when ``reveal`` asks, which makes its pane and draws it)."""
        pane = None if "network" in self._waiting else self.network_pane
        if pane is None:
            if reveal and "network" in self._waiting:
                network, _note = self.services.session.network_for_dock()
                if network is not None:
                    self._reveal_network()
            return
        network, note = self.services.session.network_for_dock()
        pane.set_network(network, note=note)
        if self.network_model.has_graph and self._thread_events:
            # The graph is drawn anew (every task waiting): the open thread's runs give it its state back (a
            # thread opened before the Network pane was made, at start-up or after a relaunch, too).
            self.network_model.set_events(self._thread_events)
        if reveal and network is not None:
            self._reveal_network()

    def _reveal_network(self) -> None:
        """Bring the Network dock to the front, unless the person closed every dock."""
        dock = self._docks.get("network")
        if dock is not None and any(d.toggleViewAction().isChecked() for d in self._docks.values()):
            dock.show()
            dock.raise_()
            self.pane("network")  # (made now, should its dock not have shown: a hidden window)

    def focus_dock(self, key: str) -> None:
        """A dock's shortcut: show it, bring its tab to the front and put the keyboard in it; pressed
        again while the keyboard is there, back to the message box."""
        from PySide6.QtWidgets import QApplication

        dock = self._docks.get(key)
        if dock is None:
            return
        focus = QApplication.focusWidget()
        if focus is not None and dock.isAncestorOf(focus) and self.in_front(dock):
            self.composer.focus()
            return
        dock.show()
        dock.raise_()
        self.pane(key)  # a lazy dock's pane, made now (its dock showing made it already, unless the window is hidden)
        target = focus_target(dock.widget())
        if target is not None:
            target.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def in_front(self, dock: QDockWidget) -> bool:
        """Whether ``dock`` shows: open, and its tab is the current one when it is tabbed with others."""
        if not dock.isVisible():
            return False
        from shiboken6 import getCppPointer

        address = getCppPointer(dock)[0]  # (a dock's tab holds its address: QMainWindow's own key for it)
        for bar in self.window.findChildren(QTabBar):
            if not bar.isVisible() or bar.parentWidget() is not self.window:
                continue
            for i in range(bar.count()):
                if bar.tabData(i) == address:
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
            self.services.notices.toast("Change review is not available in this window yet: the proposed "
                                        "changes are kept; `robotlab run --folder` reviews them in the terminal.")
            return
        dock.show()
        dock.raise_()
        if change_set_id:
            self.changes_pane.show_change_set(change_set_id)

    def retheme(self) -> None:
        for spec in self.specs:
            if spec.key in self._docks and spec.icon is not None and not isinstance(spec.icon, str):
                self._docks[spec.key].toggleViewAction().setIcon(spec.icon(theme.colors().muted, 16))
        # The panes made so far (a lazy one made later is made in the theme of its time).
        network = None if "network" in self._waiting else self.network_pane
        for pane in (self.tool_pane, self.mcp_pane, network, self.changes_pane):
            if pane is not None:
                pane.retheme()

    # -- the inspector's events ---------------------------------------------------------------------------
    def clear_inspector(self) -> None:
        self.leave_candidate(restore=False)
        self._loading = self._inspector_buffer = None  # a read for the thread left is not wanted
        self._thread_events = []
        for model in (self.tool_model, self.trace_model, self.memory_model):
            model.clear()

    def add_events(self, events: list[ev.Event]) -> None:
        """A batch of live events (the bridge's)."""
        from ui.inspector.trace import join_text_deltas

        # The thread's events and the trace keep a stream's deltas joined, as the store does (not one per flush)
        last = self._thread_events[-1] if self._thread_events else None
        joined, kept = join_text_deltas(last, events)
        if joined is not None:
            self._thread_events[-1] = joined
            trace = self.trace_model
            if trace.rowCount() and trace.event_at(trace.rowCount() - 1) is last:
                trace.replace_last(joined)
            if self._inspector_buffer and self._inspector_buffer[-1] is last:
                self._inspector_buffer[-1] = joined
        if self._inspector_buffer is not None:
            self._inspector_buffer.extend(kept)
        self._thread_events.extend(kept)
        if kept:
            self.trace_model.append_events(kept)
        self.tool_model.add_events(events)
        self.memory_model.add_events(events)
        if self.network_model.has_graph:
            self.network_model.add_events(events)

    # -- a comparison's candidate in the inspector ------------------------------------------------------------
    def show_candidate(self, label: str, events: list[ev.Event]) -> None:
        """The inspector shows a comparison's candidate (its tool calls with their results and errors, its trace,
        its memory), the Tool calls pane saying whose (``label``); the open thread's events wait aside until
        :meth:`leave_candidate`. Live events of the candidate come through :meth:`add_events` as a thread's do."""
        if self._aside is None:
            self._aside = self._thread_events
        self._fill(events)
        pane = self.tool_pane
        if pane is not None:
            pane.set_source(label)

    def leave_candidate(self, *, restore: bool) -> None:
        """The inspector is the open thread's again (``restore``: its events put back; else another thread's
        were loaded already)."""
        aside, self._aside = self._aside, None
        if aside is None:
            return
        if restore:
            self._fill(aside)
        pane = self.tool_pane
        if pane is not None:
            pane.set_source(None)

    def load_inspector(self, lazy: LazyTranscript) -> None:
        """Fill the inspector with a stored thread's events: at once for short threads, else read in a worker
        thread, which also works out what the models show of them (:class:`~ui.inspector.contents.InspectorContents`:
        a long thread's calls matched with their results there, not on the window's thread); events that arrive
        meanwhile are kept. The worker reads apart (:meth:`~workspace.persistence.Store.reading_apart`: its own
        connection, waiting while the window holds such reads back). A read still going for the thread opened before stops: only the latest one is wanted."""
        c = self.services.session
        self._loading = None
        if (lazy.complete and len(lazy) <= INSPECTOR_SYNC_EVENTS) or c.running:  # (a long branch, known by its last page yet, is read in the worker)
            self._inspector_buffer = None
            self.set_events(lazy.all_events())
            return
        self._inspector_buffer = []
        thread_id = lazy.thread_id
        token = self._loading = object()
        limit = self.trace_model.limit

        def wanted() -> bool:  # asked in the worker between its reads: the session read once, as it may change
            session = c.session
            return self._loading is token and session is not None and session.thread_id == thread_id

        def read() -> InspectorContents | None:
            from ui.inspector.contents import InspectorContents

            store = lazy.store
            with store.reading_apart():  # (its own connection; it waits while the window holds such reads back)
                events = lazy.events_while(wanted)
                return None if events is None else InspectorContents.of(events, trace_limit=limit,
                                                                         between=store.wait_background)

        async def load() -> None:
            import asyncio

            try:
                # (the worker stops reading when the person leaves the thread: see events_while)
                contents = await asyncio.to_thread(read)
            except Exception as exc:
                if self._loading is token:
                    self.services.notices.banner(f"Could not read the thread's events for the inspector: {exc}")
                return
            if contents is None or self._loading is not token or c.thread_id != thread_id:
                return
            self._loading = None
            buffered, self._inspector_buffer = self._inspector_buffer or [], None
            if buffered:  # the live events that came while the worker read (few): after the stored ones
                seen = {(e.run_id, e.seq) for e in contents.events}
                buffered = [e for e in buffered if (e.run_id, e.seq) not in seen]
            self._thread_again()
            self._show_contents(contents, then=buffered)

        self.services.tasks.spawn(load(), name="inspector-load")

    def set_events(self, events: list[ev.Event]) -> None:
        """The open thread's events (its stored ones): the inspector is the thread's again."""
        self._thread_again()
        self._fill(events)

    def _thread_again(self) -> None:
        """The inspector shows the open thread's events, not a comparison's candidate's."""
        if self._aside is not None:
            self._aside = None
            pane = self.tool_pane
            if pane is not None:
                pane.set_source(None)

    def _fill(self, events: list[ev.Event]) -> None:
        from ui.inspector.contents import InspectorContents

        self._show_contents(InspectorContents.of(list(events), trace_limit=self.trace_model.limit))

    def _show_contents(self, contents: InspectorContents, *, then: list[ev.Event] | None = None) -> None:
        """Put ``contents`` in the models (worked out already: a reset each), then the events ``then`` (live ones,
        after them)."""
        contents.show(trace=self.trace_model, tools=self.tool_model, memory=self.memory_model)
        self._thread_events = list(contents.events)
        if then:
            self._thread_events.extend(then)
            self.trace_model.append_events(then)
            self.tool_model.add_events(then)
            self.memory_model.add_events(then)
        if self.network_model.has_graph:
            self.network_model.set_events(self._thread_events)


class _OnResize(QObject):
    """Calls ``then()`` when the widget it filters is resized."""

    def __init__(self, parent: QObject, then: Callable[[], object]) -> None:
        super().__init__(parent)
        self._then = then

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize:
            self._then()
        return False


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
