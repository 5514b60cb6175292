"""The comparison's columns side by side: each candidate's chat under a header (its name, model, tokens, time
to first token, tokens/s, cost, tool calls, verify ✓/✗, "Keep this one"), scrolling synced (unless unlinked),
and the verdict row under them.

The columns' bodies are given by the shell (each a chat view with its own presenter, fed its candidate's
events): this feature does not know the chat's widgets, only that each body scrolls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QButtonGroup,
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ui.theme import candidate_color

if TYPE_CHECKING:
    from ui.compare.stats import ColumnStats


class ColumnHeader(QFrame):
    """One column's name and figures, and its "Keep this one" button."""

    keep_requested = Signal(int)

    def __init__(self, index: int, label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.index = index
        self.setObjectName("CompareColumnHeader")
        color = candidate_color(index)
        self.setStyleSheet(f"#CompareColumnHeader {{ border-top: 3px solid {color}; }}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(2)
        top = QHBoxLayout()
        self.name = QLabel(f"<b style='color:{color}'>{_escape(label)}</b>")
        self.name.setAccessibleName(f"Candidate {index + 1}: {label}")
        self.name.setMinimumWidth(40)
        self.state = QLabel("waiting")
        self.state.setObjectName("CompareState")
        self.keep = QPushButton("Keep this one")
        self.keep.setToolTip("End the comparison with this candidate: the thread goes on with it")
        self.keep.clicked.connect(lambda: self.keep_requested.emit(self.index))
        layout.addWidget(self.name)  # the name on a row of its own: a narrow column still shows it whole
        top.addWidget(self.state, 1)
        top.addWidget(self.keep)
        layout.addLayout(top)
        self.figures = QLabel("")
        self.figures.setWordWrap(True)
        self.figures.setObjectName("CompareFigures")
        self.figures.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.figures)

    def show_stats(self, stats: ColumnStats) -> None:
        """The figures now (a label whose text is the same is not set again: no relayout of the header)."""
        model = f" · {stats.model}" if stats.model and stats.model != stats.label else ""
        for label, text in ((self.state, stats.status + model), (self.figures, stats.line())):
            if label.text() != text:
                label.setText(text)


class CompareView(QWidget):
    """The columns, the "Unlink scrolling" toggle and the verdict row."""

    keep_requested = Signal(int)
    #: The better answer (its candidate) and why (may be empty).
    verdict_given = Signal(int, str)
    #: "Back to one chat" (the comparison's columns closed; the threads stay in the sidebar).
    close_requested = Signal()

    def __init__(self, labels: Sequence[str], bodies: Sequence[QAbstractScrollArea],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("CompareView")
        self.labels = list(labels)
        self.bodies = list(bodies)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        bar = QHBoxLayout()
        bar.setContentsMargins(8, 4, 8, 4)
        self.title = QLabel(f"Comparing {len(labels)} candidates")
        self.unlink = QCheckBox("Unlink scrolling")
        self.unlink.setToolTip("Scroll each column on its own")
        self.back = QPushButton("Back to one chat")
        self.back.clicked.connect(self.close_requested)
        bar.addWidget(self.title)
        bar.addStretch(1)
        bar.addWidget(self.unlink)
        bar.addWidget(self.back)
        outer.addLayout(bar)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.setChildrenCollapsible(False)
        self.headers: list[ColumnHeader] = []
        self.columns: list[QWidget] = []
        for index, (label, body) in enumerate(zip(labels, bodies, strict=True)):
            column = QWidget()
            column.setObjectName("CompareColumn")
            column.setMinimumWidth(160)
            box = QVBoxLayout(column)
            box.setContentsMargins(0, 0, 0, 0)
            box.setSpacing(0)
            header = ColumnHeader(index, label, column)
            header.keep_requested.connect(self.keep_requested)
            box.addWidget(header)
            box.addWidget(body, 1)
            self.headers.append(header)
            self.columns.append(column)
            self.splitter.addWidget(column)
            body.verticalScrollBar().valueChanged.connect(lambda value, i=index: self._scrolled(i, value))
        outer.addWidget(self.splitter, 1)
        outer.addWidget(self._verdict_row())
        self._syncing = False

    # -- the verdict ------------------------------------------------------------------------------------------
    def _verdict_row(self) -> QWidget:
        row = QFrame(self)
        row.setObjectName("CompareVerdict")
        layout = QHBoxLayout(row)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addWidget(QLabel("Better answer:"))
        self.choices = QButtonGroup(row)
        for index, label in enumerate(self.labels):
            button = QRadioButton(label)
            button.setStyleSheet(f"color: {candidate_color(index)}")
            self.choices.addButton(button, index)
            layout.addWidget(button)
        self.reason = QLineEdit(row)
        self.reason.setPlaceholderText("Why (optional)")
        layout.addWidget(self.reason, 1)
        self.save = QPushButton("Save verdict")
        self.save.setEnabled(False)
        self.choices.idClicked.connect(lambda _id: self.save.setEnabled(True))
        self.save.clicked.connect(self._give_verdict)
        layout.addWidget(self.save)
        self.verdict_note = QLabel("")
        layout.addWidget(self.verdict_note)
        return row

    def _give_verdict(self) -> None:
        winner = self.choices.checkedId()
        if winner >= 0:
            self.verdict_given.emit(winner, self.reason.text())

    def show_verdict(self, verdict: dict[str, object]) -> None:
        """The verdict kept (after :attr:`verdict_given` was stored, or read back with a reopened comparison)."""
        self.verdict_note.setText(f"Kept: {verdict.get('label')}")
        winner = verdict.get("winner")
        button = self.choices.button(winner) if isinstance(winner, int) else None
        if button is not None and not button.isChecked():
            button.setChecked(True)
            self.save.setEnabled(True)
        reason = verdict.get("reason")
        if isinstance(reason, str) and not self.reason.text():
            self.reason.setText(reason)

    # -- columns ----------------------------------------------------------------------------------------------
    def show_stats(self, stats: Sequence[ColumnStats]) -> None:
        for header, column_stats in zip(self.headers, stats, strict=False):
            header.show_stats(column_stats)

    def set_kept(self, index: int) -> None:
        """Only candidate ``index`` goes on: the other columns stay visible, marked as left."""
        for header in self.headers:
            kept = header.index == index
            header.keep.setEnabled(False)
            header.keep.setText("Kept" if kept else "Left")
        self.title.setText(f"Going on with {self.labels[index]}")

    def _scrolled(self, index: int, value: int) -> None:
        if self._syncing or self.unlink.isChecked():
            return
        source = self.bodies[index].verticalScrollBar()
        fraction = value / source.maximum() if source.maximum() > 0 else 0.0
        self._syncing = True
        try:
            for other, body in enumerate(self.bodies):
                if other != index:
                    bar = body.verticalScrollBar()
                    bar.setValue(round(fraction * bar.maximum()))
        finally:
            self._syncing = False


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
