"""Settings, the theme, About, and the banner for a database that did not open."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QApplication

from ui import theme

if TYPE_CHECKING:
    from ui.about import AboutDialog
    from ui.main_window import MainWindow
    from ui.settings.dialog import SettingsDialog


class SettingsFlow:
    """The Settings and About dialogs (made on first use, then kept), the theme, the database retry."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.dialog: SettingsDialog | None = None
        self.about_dialog: AboutDialog | None = None

    # -- settings ---------------------------------------------------------------------------------------
    def open_settings(self) -> None:
        from ui.settings.dialog import SettingsDialog

        if self.dialog is None:
            self.dialog = SettingsDialog(self.window.controller, self.window)
            self.dialog.saved.connect(self._on_saved)
        self.dialog.load()
        self.dialog.open()

    def open_mcp_servers(self) -> None:
        """Settings on its MCP servers page (the MCP dock's "Manage servers…")."""
        self.open_settings()
        assert self.dialog is not None
        self.dialog.show_mcp_page()

    def _on_saved(self, changes: dict[str, Any]) -> None:
        w = self.window
        w.controller.reload_config()
        w.robots.refresh()
        if changes.get("ui.theme") and changes["ui.theme"] != w.theme_name:
            self.set_theme(str(changes["ui.theme"]))
        if w.controller.session is None:
            w.threads.show_empty()
        w.toast.show_message("Settings saved.")

    def open_about(self) -> None:
        from ui.about import AboutDialog

        if self.about_dialog is None:
            self.about_dialog = AboutDialog(self.window)
        self.about_dialog.show()
        self.about_dialog.raise_()

    # -- theme ---------------------------------------------------------------------------------------------
    def set_theme(self, name: str) -> None:
        app = QApplication.instance()
        if not isinstance(app, QApplication):
            return
        w = self.window
        theme.apply_theme(app, name)
        w.theme_name = name
        from ui.settings.dialog import save_user_setting

        save_user_setting("ui.theme", name)
        self.retheme_chrome()
        session = w.controller.session
        if session is not None and not w.controller.running:
            w.threads.render_session(session)
        elif session is None:
            w.threads.show_empty()
        w.toast.show_message(f"{name.capitalize()} theme.")

    def retheme_chrome(self) -> None:
        """Icons drawn in the old theme's colours: draw them again (messages re-render themselves)."""
        w = self.window
        w.commands.retheme()
        w.inspector_button.setIcon(theme.icon("inspector", theme.colors().muted, 18))
        w.sidebar.retheme()
        w.composer.set_running(w.composer.running)
        w.banner.retheme()
        w.robots.retheme()
        w.docks.retheme()
        w.status.update_connection()  # "● Ready" in the new theme's colour

    # -- a database that did not open ---------------------------------------------------------------------
    def offer_store_retry(self) -> None:
        """The banner for a database that could not be opened, with the action that fixes it."""
        c = self.window.controller
        if not c.store_error:
            return
        corrupt = c.store_error_reason == "corrupt"
        action = ("Move aside and start fresh", lambda: self.retry_store(recover=True)) if corrupt else (
            "Try again", lambda: self.retry_store(recover=False))
        self.window.banner.show_message(f"{c.store_error}\n\nThe app is running with a temporary database: "
                                        "conversations in this session will not be kept after you quit.",
                                        action=action)

    def retry_store(self, *, recover: bool) -> None:
        w = self.window
        if not w.controller.retry_store(recover=recover):
            if w.controller.store_error:
                self.offer_store_retry()
            return
        w.banner.dismiss()
        w.threads.refresh()
        w.threads.show_empty()
        w.toast.show_message("Your database is open." if not recover else
                             "The damaged database was kept aside; a fresh one is open.")
