"""What the window's parts share: the session, the bridge, the task owner, the commands, the notices.

A part of the window (``ui/window/``, the docks) receives a :class:`Services` and, explicitly, the few
widgets it works on — never the main window. The window makes one :class:`Services` before its parts
and wires the parts to each other (their signals, or callables passed in) in one place
(:meth:`ui.main_window.MainWindow.build`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow, QWidget

    from ui.bridge import RunBridge
    from ui.controller import Controller
    from ui.inspector.memory import MemoryModel
    from ui.inspector.tool_calls import ToolCallsModel
    from ui.inspector.trace import TraceModel
    from ui.network.model import NetworkModel
    from ui.tasks import TaskOwner
    from ui.widgets.notices import Banner, Toast
    from ui.window.commands import Commands


class Notices:
    """The window's two ways to tell the person: the toast (a passing note) and the banner (a problem
    that stays until dismissed). Both are made with the window's widgets (:meth:`attach`); before that,
    what is said goes to neither."""

    def __init__(self) -> None:
        self.toast_widget: Toast | None = None
        self.banner_widget: Banner | None = None

    def attach(self, toast: Toast, banner: Banner) -> None:
        self.toast_widget = toast
        self.banner_widget = banner

    def toast(self, text: str, *, action: str | None = None, callback: Callable[[], None] | None = None,
              seconds: float = 8.0) -> None:
        """A passing note (with an optional action button)."""
        if self.toast_widget is not None:
            self.toast_widget.show_message(text, action=action, callback=callback, seconds=seconds)

    def banner(self, text: str, *, kind: str = "error",
               action: tuple[str, Callable[[], object]] | None = None) -> None:
        """A problem that stays in the banner above the conversation (``action``: a button, label and callback)."""
        if self.banner_widget is not None:
            self.banner_widget.show_message(text, kind=kind, action=action)

    def dismiss_banner(self) -> None:
        if self.banner_widget is not None:
            self.banner_widget.dismiss()


@dataclass(frozen=True)
class Services:
    """The window's shared services, typed: what a part may use besides the widgets it is given."""

    #: The session model: threads, runs, robots, the configuration (the window's one way to the core).
    session: Controller
    #: The Qt window as a Qt window (parent of dialogs, where docks and actions go): no part reaches the
    #: main window's own attributes through it.
    shell: QMainWindow
    #: Every action of the window by name, its menus and the palette.
    commands: Commands
    notices: Notices = field(default_factory=Notices)

    @property
    def bridge(self) -> RunBridge:
        """The run's events as Qt signals."""
        return self.session.bridge

    @property
    def tasks(self) -> TaskOwner:
        """Owns the window's asyncio tasks (cancelled when the window closes)."""
        return self.session.tasks

    @property
    def config(self) -> Any:
        """The settings in use (``workspace.config``): read with ``.get("ui.notifications", True)``."""
        return self.session.config


@dataclass(frozen=True)
class DockContext:
    """What a dock's pane is made with: the services, the models it shows, and what it may ask of the window."""

    services: Services
    #: The pane's parent: its dock (the pane is made inside it; a test may give another widget).
    parent: QWidget
    tool_model: ToolCallsModel
    memory_model: MemoryModel
    trace_model: TraceModel
    network_model: NetworkModel
    #: Settings > MCP servers.
    open_mcp_servers: Callable[[], None]
    #: Opens two texts side by side in a window of their own (the review's compare window; None: no such
    #: window, the pane's "Side by side…" hides).
    compare: Callable[..., QWidget] | None = None


#: A dock's pane factory (named by a :class:`ui.window.docks.DockSpec`): the pane, or None when the window
#: has no such dock (MCP without the SDK).
PaneFactory = Callable[[DockContext], "QWidget | None"]


__all__ = ["DockContext", "Notices", "PaneFactory", "Services"]
