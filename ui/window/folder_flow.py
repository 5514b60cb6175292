"""The folder robots work in (File > Open Folder) and its trust (workspace.trust)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QAbstractButton, QFileDialog, QMessageBox

from workspace.sandbox import display_path

if TYPE_CHECKING:
    from ui.main_window import MainWindow


class FolderFlow:
    """Switching the open folder, and the banner and question for a folder's withheld settings."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self._dialog: QFileDialog | None = None
        self._recovery_box: QMessageBox | None = None

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
        w.toast.show_message(f"Robots now work in {display_path(w.controller.folder or '')}." if folder is not None
                             else "No folder open: robots can't see your files.")
        self.offer_trust()
        self.offer_recovery()
        return True

    # -- an apply a crash cut short (workspace.changes.recovery) ------------------------------------
    def offer_recovery(self) -> None:
        """At start and after a folder opens: look (off the event loop) for an apply, undo or redo
        that a crash cut short in this folder; if there is one, the banner says so and offers to
        roll it back or forward."""
        w = self.window
        workspace = w.controller.workspace
        if workspace is None:
            return

        async def look() -> None:
            try:
                items = await asyncio.to_thread(workspace.interrupted_applies)
            except Exception as exc:  # a damaged journal must not keep the window from starting
                w.banner.show_message(f"Could not check for interrupted applies: {exc}")
                return
            notice = workspace.recovery_notice(items)
            if notice:
                w.banner.show_message(notice, action=("Recover…", lambda: self.ask_recovery(items)))

        w.controller.tasks.spawn(look(), name="interrupted-applies")

    def ask_recovery(self, items: list[Any]) -> QMessageBox:
        """Ask (non-modally) which way to settle the interrupted applies: every file as before, or as
        the change makes it. Nothing is written until a button is pressed."""
        w = self.window
        workspace = w.controller.require_workspace()
        box = QMessageBox(QMessageBox.Icon.Warning, "Recover an interrupted apply",
                          workspace.recovery_notice(items) or "", QMessageBox.StandardButton.Cancel, w)
        box.setInformativeText("Each file is whole; the set may be part old, part new. A file you changed "
                               "since is left alone (robotlab changes recover --force overwrites it).")
        back = box.addButton("Roll back", QMessageBox.ButtonRole.AcceptRole)
        back.setToolTip("Every file as it was before the apply")
        forward = box.addButton("Roll forward", QMessageBox.ButtonRole.AcceptRole)
        forward.setToolTip("Every file as the change makes it")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)

        def done(button: QAbstractButton) -> None:
            direction = "back" if button is back else "forward" if button is forward else None
            if direction is not None:
                w.controller.tasks.spawn(self._recover(items, direction), name="recover-apply")

        box.buttonClicked.connect(done)
        box.open()
        self._recovery_box = box
        return box

    async def _recover(self, items: list[Any], direction: str) -> None:
        w = self.window
        workspace = w.controller.require_workspace()
        messages: list[str] = []
        ok = True
        for item in items:
            try:
                result = await asyncio.to_thread(workspace.recover_apply, item, direction)
            except Exception as exc:
                ok, text = False, str(exc)
            else:
                ok, text = ok and result.ok, result.message
            messages.append(text)
        if ok:
            w.banner.dismiss()
            w.toast.show_message(" ".join(messages), seconds=12)
        else:
            w.banner.show_message(" ".join(messages), action=("Recover…", lambda: self.offer_recovery()))
        changes_pane = w.docks.changes_pane
        if changes_pane is not None:
            changes_pane.sync()

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
