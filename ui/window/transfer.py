"""Export a thread (Markdown, RobotLab JSON, events as JSONL) and import RobotLab JSON results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from PySide6.QtWidgets import QFileDialog

if TYPE_CHECKING:
    from ui.main_window import MainWindow

ExportFormat = Literal["markdown", "json", "jsonl"]
SUFFIXES: dict[ExportFormat, str] = {"markdown": "md", "json": "json", "jsonl": "jsonl"}


class Transfer:
    """File > Export / Import: a save or open dialog, then the file written or read (workspace.exports)."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window

    def export_thread(self, fmt: ExportFormat, thread_id: str | None = None) -> None:
        w = self.window
        thread_id = thread_id or w.controller.thread_id
        if not thread_id:
            w.toast.show_message("Open a thread to export it.")
            return
        suffix = SUFFIXES[fmt]
        dialog = QFileDialog(w, "Export thread")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix(suffix)
        dialog.selectFile(f"thread.{suffix}")
        dialog.fileSelected.connect(lambda path: self.write_export(fmt, thread_id, Path(path)))
        dialog.open()

    def write_export(self, fmt: ExportFormat, thread_id: str, path: Path) -> None:
        w = self.window
        try:
            from workspace import exports

            store = w.controller.require_store()
            if fmt == "markdown":
                text = exports.export_markdown(store, thread_id)
            elif fmt == "json":
                text = exports.export_results_json(store, thread_id)
            else:
                text = exports.export_events_jsonl(store, thread_id)
            path.write_text(text, encoding="utf-8")
        except Exception as exc:
            w.banner.show_message(f"Export failed: {exc}")
            return
        w.toast.show_message(f"Exported to {path}")

    def import_thread(self) -> None:
        dialog = QFileDialog(self.window, "Import RobotLab JSON results")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter("JSON (*.json)")
        dialog.fileSelected.connect(lambda path: self.read_import(Path(path)))
        dialog.open()

    def read_import(self, path: Path) -> None:
        w = self.window
        try:
            from workspace import exports

            thread = exports.import_results_json(w.controller.require_store(), path.read_text(encoding="utf-8"))
        except Exception as exc:
            w.banner.show_message(f"Import failed: {exc}")
            return
        w.threads.refresh()
        w.threads.open(thread.id)
        w.toast.show_message(f"Imported {path.name}")
