"""Export a thread (Markdown, RobotLab JSON, events as JSONL) and import RobotLab JSON results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog

if TYPE_CHECKING:
    from ui.services import Services

ExportFormat = Literal["markdown", "json", "jsonl"]
SUFFIXES: dict[ExportFormat, str] = {"markdown": "md", "json": "json", "jsonl": "jsonl"}


class Transfer(QObject):
    """File > Export / Import: a save or open dialog, then the file written or read (workspace.exports)."""

    #: A thread was imported (its id): the thread list shows and opens it.
    imported = Signal(str)

    def __init__(self, services: Services) -> None:
        super().__init__(services.shell)
        self.services = services

    def export_thread(self, fmt: ExportFormat, thread_id: str | None = None) -> None:
        s = self.services
        thread_id = thread_id or s.session.thread_id
        if not thread_id:
            s.notices.toast("Open a thread to export it.")
            return
        suffix = SUFFIXES[fmt]
        dialog = QFileDialog(s.shell, "Export thread")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix(suffix)
        dialog.selectFile(f"thread.{suffix}")
        dialog.fileSelected.connect(lambda path: self.write_export(fmt, thread_id, Path(path)))
        dialog.open()

    def write_export(self, fmt: ExportFormat, thread_id: str, path: Path) -> None:
        s = self.services
        try:
            from workspace import exports

            store = s.session.require_store()
            if fmt == "markdown":
                text = exports.export_markdown(store, thread_id)
            elif fmt == "json":
                text = exports.export_results_json(store, thread_id)
            else:
                text = exports.export_events_jsonl(store, thread_id)
            path.write_text(text, encoding="utf-8")
        except Exception as exc:
            s.notices.banner(f"Export failed: {exc}")
            return
        s.notices.toast(f"Exported to {path}")

    def import_thread(self) -> None:
        dialog = QFileDialog(self.services.shell, "Import RobotLab JSON results")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter("JSON (*.json)")
        dialog.fileSelected.connect(lambda path: self.read_import(Path(path)))
        dialog.open()

    def read_import(self, path: Path) -> None:
        s = self.services
        try:
            from workspace import exports

            thread = exports.import_results_json(s.session.require_store(), exports.read_results_file(path))
        except Exception as exc:
            s.notices.banner(f"Import failed: {exc}")
            return
        self.imported.emit(thread.id)
        s.notices.toast(f"Imported {path.name}")
