"""Settings, the theme, About, and the banner for a database that did not open."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication

from ui import theme

if TYPE_CHECKING:
    from ui.about import AboutDialog
    from ui.services import Services
    from ui.settings.dialog import SettingsDialog


class SettingsFlow(QObject):
    """The Settings and About dialogs (made on first use, then kept), the theme, the database retry."""

    #: Settings were saved and the configuration read again: the robots (and an empty thread) follow.
    reloaded = Signal()
    #: The theme changed (its name): the window draws its chrome again, and the open thread.
    theme_changed = Signal(str)
    #: The database opened at a retry: the thread list reads it.
    store_reopened = Signal()

    def __init__(self, services: Services, *, theme_name: str = "light") -> None:
        super().__init__(services.shell)
        self.services = services
        #: The theme in use ("light", "dark").
        self.theme_name = theme_name
        self.dialog: SettingsDialog | None = None
        self.about_dialog: AboutDialog | None = None

    # -- settings ---------------------------------------------------------------------------------------
    def open_settings(self) -> None:
        from ui.settings.dialog import SettingsDialog

        if self.dialog is None:
            self.dialog = SettingsDialog(self.services.session, self.services.shell)
            self.dialog.saved.connect(self._on_saved)
        self.dialog.load()
        self.dialog.open()

    def open_mcp_servers(self) -> None:
        """Settings on its MCP servers page (the MCP dock's "Manage servers…")."""
        self.open_settings()
        assert self.dialog is not None
        self.dialog.show_mcp_page()

    def _on_saved(self, changes: dict[str, Any]) -> None:
        self.services.session.reload_config()
        self.reloaded.emit()
        if changes.get("ui.theme") and changes["ui.theme"] != self.theme_name:
            self.set_theme(str(changes["ui.theme"]))
        self.services.notices.toast("Settings saved.")

    def open_about(self) -> None:
        from ui.about import AboutDialog

        if self.about_dialog is None:
            self.about_dialog = AboutDialog(self.services.shell)
        self.about_dialog.show()
        self.about_dialog.raise_()

    # -- theme ---------------------------------------------------------------------------------------------
    def set_theme(self, name: str) -> None:
        app = QApplication.instance()
        if not isinstance(app, QApplication):
            return
        theme.apply_theme(app, name)
        self.theme_name = name
        from ui.settings.dialog import save_user_setting

        save_user_setting("ui.theme", name)
        self.theme_changed.emit(name)
        self.services.notices.toast(f"{name.capitalize()} theme.")

    # -- a database that did not open ---------------------------------------------------------------------
    def offer_store_retry(self) -> None:
        """The banner for a database that could not be opened, with the action that fixes it."""
        c = self.services.session
        if not c.store_error:
            return
        corrupt = c.store_error_reason == "corrupt"
        action = ("Move aside and start fresh", lambda: self.retry_store(recover=True)) if corrupt else (
            "Try again", lambda: self.retry_store(recover=False))
        self.services.notices.banner(f"{c.store_error}\n\nThe app is running with a temporary database: "
                                     "conversations in this session will not be kept after you quit.",
                                     action=action)

    def retry_store(self, *, recover: bool) -> None:
        s = self.services
        if not s.session.retry_store(recover=recover):
            if s.session.store_error:
                self.offer_store_retry()
            return
        s.notices.dismiss_banner()
        self.store_reopened.emit()
        s.notices.toast("Your database is open." if not recover else
                        "The damaged database was kept aside; a fresh one is open.")
