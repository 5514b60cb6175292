""""Edit a merge…": the box where a person writes the lines of two overlapping hunks themselves.

It starts from both hunks' text (each candidate's version of the lines, one after the other) or from the file
as it is there; what is written becomes the hunk applied in their place (:class:`~ui.review.combined_model.
CombinedSelection.merge`, ``comparison.take(merges=...)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ui.theme import mono_font

if TYPE_CHECKING:
    from ui.review.combined_model import MergeStart


class MergeDialog(QDialog):
    """The merged lines of :attr:`start` (``ids``), edited; :meth:`text` once accepted."""

    def __init__(self, start: MergeStart, *, where: str, text: str | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.start = start
        self.setWindowTitle("Edit a merge")
        self.setAccessibleName("Edit a merge")
        self.resize(640, 420)
        layout = QVBoxLayout(self)
        intro = QLabel(f"Your lines in place of {' and '.join(start.ids)} ({where}). They are applied as they are "
                       "here, with the other accepted hunks; the verify runs on the result.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.editor = QPlainTextEdit(start.both if text is None else text)
        self.editor.setFont(mono_font())
        self.editor.setAccessibleName("The merged lines")
        row = QHBoxLayout()
        self.from_both = QPushButton("Start from both hunks")
        self.from_both.setToolTip("Each candidate's version of these lines, one after the other")
        self.from_both.clicked.connect(lambda: self.editor.setPlainText(start.both))
        self.from_file = QPushButton("Start from the file as it is")
        self.from_file.clicked.connect(lambda: self.editor.setPlainText(start.current))
        row.addWidget(self.from_both)
        row.addWidget(self.from_file)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.editor, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        if ok is not None:
            ok.setText("Use this merge")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.editor.setFocus()

    def text(self) -> str:
        return self.editor.toPlainText()
