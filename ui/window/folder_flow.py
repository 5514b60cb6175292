"""The folder robots work in (File > Open Folder) and its trust (workspace.trust)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QAbstractButton, QFileDialog, QMessageBox

if TYPE_CHECKING:
    from ui.main_window import MainWindow


class FolderFlow:
    """Switching the open folder, and the banner and question for a folder's withheld settings."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self._dialog: QFileDialog | None = None

    # -- the folder ----------------------------------------------------------------------------------
    def open_folder(self) -> QFileDialog:
        """File > Open Folder: robots read and propose changes there from the next message on."""
        w = self.window
        dialog = QFileDialog(w, "Open a folder for the robots to work in")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        if w.controller.folder is not None:
            dialog.setDirectory(str(w.controller.folder))
        dialog.fileSelected.connect(lambda path: self.switch_folder(Path(path)))
        dialog.open()
        self._dialog = dialog
        return dialog

    def switch_folder(self, folder: Path | None) -> bool:
        """Work in ``folder`` now; on a problem, say what to do and keep the current folder."""
        w = self.window
        try:
            w.controller.set_folder(folder)
        except Exception as exc:
            w.banner.show_message(f"Could not open {folder}: {exc}")
            return False
        w.banner.dismiss()
        mcp_pane = w.docks.mcp_pane
        if mcp_pane is not None:
            mcp_pane.manager.folder = w.controller.folder
            mcp_pane.reload()
        w.status.update_folder()
        w.robots.refresh()
        changes_pane = w.docks.changes_pane
        if changes_pane is not None:
            changes_pane.sync()  # the open thread's changes waiting in this folder, if any
        if w.controller.session is None:
            w.threads.show_empty()
        w.toast.show_message(f"Robots now work in {w.controller.folder}." if folder is not None
                             else "No folder open: robots can't see your files.")
        self.offer_trust()
        return True

    # -- trust -----------------------------------------------------------------------------------------
    def offer_trust(self) -> None:
        """A banner when the folder's .robotlab/ settings are withheld until the user trusts it."""
        withheld = self.window.controller.config.withheld
        if not withheld:
            return
        from workspace.trust import describe

        items = describe(withheld)
        more = f" and {len(items) - 2} more" if len(items) > 2 else ""
        self.window.banner.show_message(
            "This folder's .robotlab/ settings are not used until you trust the folder: "
            + "; ".join(items[:2]) + more + ".",
            kind="info", action=("Review and trust…", self.trust_folder))

    def trust_folder(self) -> QMessageBox | None:
        """Ask (non-modally) whether to trust the folder; on yes, its settings take effect at once."""
        w = self.window
        withheld = w.controller.config.withheld
        folder = w.controller.folder
        if not withheld or folder is None:
            return None
        from workspace.trust import describe

        box = QMessageBox(QMessageBox.Icon.Warning, "Trust this folder?",
                          f"{folder} asks for these settings:", QMessageBox.StandardButton.Cancel, w)
        box.setInformativeText("\n".join(f"• {line}" for line in describe(withheld))
                               + "\n\nTrust the folder only if you know who wrote them. They apply until they "
                               "change; “robotlab trust --revoke” forgets.")
        trust_button = box.addButton("Trust folder", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)

        def done(button: QAbstractButton) -> None:
            if button is trust_button:
                self.apply_trust()

        box.buttonClicked.connect(done)
        box.open()
        return box

    def apply_trust(self) -> None:
        from workspace import trust

        w = self.window
        folder = w.controller.folder
        if folder is None:
            return
        shown = w.controller.config.withheld or {}
        try:
            trust.trust(folder, expected=shown)
        except trust.TrustChanged as exc:
            w.controller.reload_config()
            w.banner.show_message(str(exc), action=("Review and trust…", self.trust_folder))
            return
        except OSError as exc:
            w.banner.show_message(f"Could not record the folder's trust: {exc}")
            return
        w.banner.dismiss()
        w.controller.reload_config()
        if w.docks.mcp_pane is not None:
            w.docks.mcp_pane.reload()
        w.robots.refresh()
        w.toast.show_message("Folder trusted: its settings apply now.")
