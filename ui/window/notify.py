"""Desktop notifications: a long run ended, or a robot asks for approval, while the window is in the
background (another window in front, or minimised); and a thread that is not the open one needs you (an
approval, changes to review, a failure) — on the desktop when the window is in the background, else as the
window's own notice.

Where the desktop has a notification area, a tray icon shows the message (``QSystemTrayIcon``);
elsewhere the taskbar entry asks for attention (``QApplication.alert``). Settings > General turns
them off (``ui.notifications``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from ui import theme

if TYPE_CHECKING:
    from ui.services import Services
    from workspace import events as ev
    from workspace.approval import ApprovalRequest

#: A run at least this long is worth a notification when it ends in the background (seconds).
LONG_RUN = 15.0


class Notifier:
    """Tells the desktop what the window would tell someone looking at it."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.tray: QSystemTrayIcon | None = None
        self._started: float | None = None
        self._last_end: ev.TerminalEvent | None = None
        #: What was notified, (title, text), newest last (tests and the log read it).
        self.sent: list[tuple[str, str]] = []

    def connect(self) -> None:
        s = self.services
        s.bridge.running_changed.connect(self._on_running)
        s.bridge.run_ended.connect(self._on_end)
        s.session.approval_needed.connect(self._on_approval)
        s.session.background_run_ended.connect(self._on_background_end)

    # -- what happened -------------------------------------------------------------------------------
    def _on_running(self, running: bool) -> None:
        if running:
            self._started = time.monotonic()
            self._last_end = None
            return
        started, self._started = self._started, None
        if started is None or time.monotonic() - started < LONG_RUN:
            return
        if self._last_end is None:  # the open thread changed: its run goes on in the background, not ended
            return
        self._tell_run_ended(self._last_end)

    def _on_end(self, event: ev.TerminalEvent) -> None:
        if not event.task:
            self._last_end = event

    def _tell_run_ended(self, event: ev.TerminalEvent | None) -> None:
        from workspace import events as ev

        robot = event.robot if event is not None else self.services.session.robot_name
        thread = self._thread_title()
        if isinstance(event, ev.RunFailed):
            title, text = f"{robot} failed", event.error or "The run failed."
        elif isinstance(event, ev.RunCancelled):
            title, text = f"{robot} stopped", event.reason
        else:
            title, text = f"{robot} finished", "The answer is ready."
        self.notify(title, f"{thread}: {text}" if thread else text)

    def _on_approval(self, request: ApprovalRequest, _future: Any) -> None:
        c = self.services.session
        thread_id = c.approval_thread(request)
        elsewhere = thread_id is not None and thread_id != c.thread_id
        thread = self._thread_title(thread_id if elsewhere else None)
        where = f" in “{thread}”" if thread else ""
        if request.annotations.get("askUser"):  # a robot's question, a person's task
            question = str((request.input or {}).get("question") or "")[:120]
            self.notify(f"{request.robot} asks", f"{question}{where}. Answer it in the window (Ctrl+J).",
                        elsewhere=elsewhere)
            return
        text = f"{request.robot} wants to run {request.tool}{where}. Approve or deny it in the window (Ctrl+J)."
        self.notify("Approval needed", text, elsewhere=elsewhere)

    def _on_background_end(self, thread_id: str, state: str) -> None:
        """A run ended in a thread that is not open: say so when it needs you (a failure, changes to review)."""
        thread = self._thread_title(thread_id) or "A thread"
        if state == "failed":
            self.notify("A run failed", f"“{thread}”: the run failed. Open the thread to see why.", elsewhere=True)
        elif state == "review":
            self.notify("Changes to review", f"“{thread}” finished: its changes wait for your review.", elsewhere=True)

    def _thread_title(self, thread_id: str | None = None) -> str:
        """The title of ``thread_id`` (None: the open thread), "" when it has none or cannot be read."""
        c = self.services.session
        if thread_id is not None:
            try:
                return str(c.require_store().get_thread(thread_id).display_title or "")
            except Exception:
                return ""
        session = c.session
        thread = getattr(session, "thread", None) if session is not None else None
        return str(getattr(thread, "display_title", "") or "")

    # -- telling the desktop ---------------------------------------------------------------------------
    def enabled(self) -> bool:
        try:
            return bool(self.services.config.get("ui.notifications", True))
        except Exception:  # a broken configuration: the default
            return True

    def in_background(self) -> bool:
        w = self.services.shell
        return w.isMinimized() or not w.isActiveWindow()

    def notify(self, title: str, text: str, *, elsewhere: bool = False) -> bool:
        """Show ``title``/``text`` on the desktop when enabled and the window is in the background; about a
        thread that is not the open one (``elsewhere``) with the window in front, as the window's own notice."""
        if not self.enabled():
            return False
        if not self.in_background():
            if not elsewhere:
                return False
            self.sent.append((title, text))
            self.services.notices.toast(f"{title}: {text}", seconds=8)
            return True
        self.sent.append((title, text))
        if QSystemTrayIcon.isSystemTrayAvailable():
            if self.tray is None:
                self.tray = QSystemTrayIcon(theme.app_icon(), self.services.shell)
                self.tray.setToolTip("RobotLab Workspace")
                self.tray.messageClicked.connect(self._bring_back)
                self.tray.activated.connect(lambda _reason: self._bring_back())
            self.tray.show()
            self.tray.showMessage(title, text, QSystemTrayIcon.MessageIcon.Information, 10_000)
        else:
            QApplication.alert(self.services.shell, 0)  # the taskbar entry asks for attention until the window is used
        return True

    def _bring_back(self) -> None:
        w = self.services.shell
        if w.isMinimized():
            w.showNormal()
        w.raise_()
        w.activateWindow()


__all__ = ["LONG_RUN", "Notifier"]
