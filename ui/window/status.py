"""The status bar (folder, robot, model, connection, the thread's usage) and the window title."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton

from ui import theme
from ui.widgets.common import ElidedLabel
from workspace.sandbox import display_path

if TYPE_CHECKING:
    from ui.services import Services
    from workspace.result import Usage

#: What the connection label says: a run going, the last run failed, or nothing going on.
Connection = Literal["idle", "running", "error"]


class StatusLine:
    """The status bar's labels and what they say; the window title (thread — folder — app)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.connection_state: Connection = "idle"
        self._thread_title: str | None = None
        #: The (model label, api base) last probed for a listening local server (None: not a local model).
        self._probed: tuple[str, str | None] | None = None
        self._server_problem: str | None = None
        #: What the running robot waits for (the chat's activity line), "" when nothing.
        self.activity = ""

    def build(self) -> None:
        """The labels in the shell's status bar (the window wires what a click on the folder or the badge does)."""
        w = self.services.shell
        bar = w.statusBar()
        bar.setSizeGripEnabled(False)
        # Each gives way ("…", the whole text in its tooltip) before the badge and the usage are cut.
        self.robot = QLabel("", w)
        self.model = ElidedLabel("", w, min_chars=8, tooltip=True)
        self.connection = ElidedLabel("", w, min_chars=8)
        self.usage = QLabel("", w)
        self.folder = QPushButton("", w)
        self.folder.setObjectName("ConnectLink")
        self.folder.setCursor(Qt.CursorShape.PointingHandCursor)
        bar.addWidget(self.folder)
        for label in (self.robot, self.model, self.connection):
            bar.addWidget(label)
        from ui.chat.composer.context_meter import ContextMeter

        self.context = ContextMeter(w)
        bar.addPermanentWidget(self.context)
        # Changes waiting for review: always in sight, whatever the docks show (a click opens them).
        self.review = QPushButton("", w)
        self.review.setObjectName("ReviewBadge")
        self.review.setCursor(Qt.CursorShape.PointingHandCursor)
        self.review.setToolTip("Changes wait for your review: open the Changes dock (Ctrl+Shift+D)")
        self.review.setVisible(False)
        bar.addPermanentWidget(self.review)
        # Approvals and reviews waiting in any thread (a click goes to the oldest approval: Ctrl+J).
        self.waiting = QPushButton("", w)
        self.waiting.setObjectName("ReviewBadge")
        self.waiting.setCursor(Qt.CursorShape.PointingHandCursor)
        self.waiting.setToolTip("Approvals and reviews wait for you in your threads: go to the oldest approval (Ctrl+J)")
        self.waiting.setVisible(False)
        bar.addPermanentWidget(self.waiting)
        bar.addPermanentWidget(self.usage)
        self.update_folder()

    def connect(self) -> None:
        s = self.services
        s.session.usage_changed.connect(self.set_usage)
        s.bridge.context_usage.connect(self.context.show_usage)
        s.bridge.context_compacted.connect(self.context.show_compacted)
        s.bridge.text_appended.connect(lambda _run, _robot, text: self.context.add_streamed(text))
        s.session.thread_opened.connect(self.show_thread_context)

    def show_thread_context(self, session: object) -> None:
        """The meter of the thread just opened: its last count (hidden for a new thread). The count is looked
        for along the whole branch, so it is read in a worker: a thread of 10,000 turns took seconds of the
        window's thread to open."""
        reader = getattr(session, "context_usage", None)
        self.context.show_usage(None)
        if not callable(reader):
            return
        c = self.services.session
        store = getattr(session, "store", None)

        def apart() -> Any:
            """The count, read apart (a connection of its own, waiting while the window holds such reads back)."""
            if store is None:
                return reader()
            with store.reading_apart():
                return reader()

        async def read() -> None:
            import asyncio

            try:
                usage = await asyncio.to_thread(apart)
            except Exception:  # an unreadable store leaves the meter empty; the banner says why elsewhere
                return
            if c.session is session and not self.context.window_size:  # still the thread open, nothing newer shown
                self.context.show_usage(usage)

        c.tasks.spawn(read(), name="thread-context")

    def set_activity(self, text: str) -> None:
        self.activity = text
        self.update_connection()

    # -- folder and title --------------------------------------------------------------------------
    def update_folder(self) -> None:
        folder = self.services.session.folder
        if folder is None:
            self.folder.setText("No folder open")
            self.folder.setToolTip("Robots can't see your files. Open a folder for them to work in (Ctrl+O)")
        else:
            self.folder.setText(f"Folder: {display_path(Path(folder).name or folder)}")
            self.folder.setToolTip(f"Robots read and propose changes in {folder}. Open another (Ctrl+O)")
        self.retitle(self._thread_title)

    def retitle(self, thread_title: str | None) -> None:
        """The window title: the thread, the folder, the app."""
        self._thread_title = thread_title
        folder = self.services.session.folder
        parts = [p for p in (thread_title, display_path(Path(folder).name or str(folder)) if folder else None) if p]
        self.services.shell.setWindowTitle(" — ".join([*parts, "RobotLab Workspace"]))

    # -- robot, model, connection ------------------------------------------------------------------------
    def show_target(self, *, what: str, name: str, model_label: str) -> None:
        """The robot (or network) new messages go to, and its model."""
        self.robot.setText(f"{what}: {name}")
        self.model.setText(f"Model: {model_label}")
        self.update_connection()
        self.probe_server()

    def set_connection(self, state: Connection) -> None:
        self.connection_state = state
        self.update_connection()

    def probe_server(self, *, again: bool = False) -> None:
        """Check (off the event loop's critical path) that a local model server is listening, so the
        status bar does not say "Ready" while Ollama is not running."""
        c = self.services.session
        label, is_lm = c.model_label()
        api_base = c.config.get("llm.api_base") if c.provider is None else None
        key = (label, api_base) if c.provider is None and is_lm else None
        if key == self._probed and not again:
            return
        self._probed = key
        self._server_problem = None
        if key is None:
            return
        from workspace.providers import probe_local_server

        async def probe() -> None:
            problem = await probe_local_server(label, api_base)
            if self._probed == key:
                self._server_problem = problem
                self.update_connection()

        c.tasks.spawn(probe(), name="probe-model-server")

    def update_connection(self) -> None:
        c = theme.colors()
        _label, is_lm = self.services.session.model_label()
        tip = ""
        if self.connection_state == "running":
            text, color = f"● {self.activity}" if self.activity else "● Running", c.accent
        elif self.connection_state == "error":
            text, color = "● Last run failed", c.error
        elif not is_lm:
            text, color = "● Offline (no model connected)", c.warning
        elif self._server_problem:
            text, color, tip = "● Model server not reachable", c.warning, self._server_problem
        else:
            text, color = "● Ready", c.success
        self.connection.setText(text)
        self.connection.setToolTip(tip)
        self.connection.setStyleSheet(f"color: {color};")

    def set_pending(self, pending: int) -> None:
        """The number of changes (hunks) waiting for review; the badge hides at 0."""
        self.review.setText(f"{pending} change{'s' if pending != 1 else ''} to review")
        self.review.setAccessibleName(self.review.text())
        self.review.setVisible(pending > 0)

    def set_waiting(self, count: int) -> None:
        """How many approvals and reviews wait for you across the threads; hidden at 0."""
        self.waiting.setText(f"{count} waiting for you")
        self.waiting.setAccessibleName(f"{count} approval{'s' if count != 1 else ''} or review{'s' if count != 1 else ''} "
                                       "waiting for you")
        self.waiting.setVisible(count > 0)

    # -- usage ---------------------------------------------------------------------------------------------
    def set_usage(self, usage: Usage | None) -> None:
        """The open thread's tokens and cost (None: no thread open)."""
        if usage is None:
            self.usage.setText("")
            return
        mark = "~" if usage.estimated else ""
        text = f"Thread: {mark}{usage.total_tokens:,} tokens"
        if not self.services.session.model_label()[1]:
            pass  # the offline demo or a scripted example: no model, nothing to price
        elif usage.cost is not None:
            text += f" · ${usage.cost:.4f}"
        elif usage.total_tokens:
            text += " · cost unknown"  # a local or unpriced model: never "$0.00"
        self.usage.setText(text)
        tip = f"{mark}{usage.input_tokens:,} input + {mark}{usage.output_tokens:,} output tokens"
        self.usage.setToolTip(tip + (" (some counted here: the server reported none)" if usage.estimated else ""))
