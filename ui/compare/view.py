"""The comparison's columns side by side: each candidate's chat under a header (its name, model, tokens, time
to first token, tokens/s, cost, tool calls, verify ✓/✗, "Keep this one"), scrolling synced (unless unlinked),
and the verdict row under them.

The columns' bodies are given by the shell (each a chat view with its own presenter, fed its candidate's
events): this feature does not know the chat's widgets, only that each body scrolls.

The columns fit any window: a column is never narrower than :data:`COLUMN_MIN_WIDTH` (what the chat's narrowest
cards need), and when the columns cannot all have that much, they scroll sideways. The candidates' names (in the headers and the verdict row) end in "…" with
the whole name as their tooltip, and the figures wrap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QApplication,
    QButtonGroup,
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ui.formatting import figures_text
from ui.theme import candidate_color
from ui.widgets.common import ElidedLabel
from ui.widgets.eliding import ElidesOnResize, elide_text, text_overhead

if TYPE_CHECKING:
    from ui.compare.stats import ColumnStats

#: The narrowest a column gets (px): the chat's cards at their narrowest (a change card's buttons beside its note)
#: and the scroll bar. Below it the columns scroll sideways. A fixed width, not the content's own minimum: that
#: grows with the room it is given (a message's bubble keeps what it had), and the columns would widen each other.
COLUMN_MIN_WIDTH = 248
#: The header's button, and its text beside the name in a low window (its tooltip says what it does).
KEEP = "Keep this one"
KEEP_SHORT = "Keep"
#: The fewest characters a candidate's name keeps before its "…" (the verdict row's choices).
NAME_MIN_CHARS = 6


class ColumnHeader(QFrame):
    """One column's name and figures, and its "Keep this one" button."""

    keep_requested = Signal(int)

    def __init__(self, index: int, label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.index = index
        self.setObjectName("CompareColumnHeader")
        color = candidate_color(index)
        self._color = color
        self.mark_selected(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(2)
        top = QHBoxLayout()
        #: The candidate's name, bold in its colour; "…" and the whole name as a tooltip in a narrow column.
        self.name = ElidedLabel(label, min_chars=NAME_MIN_CHARS, tooltip=True)
        self.name.setObjectName("CompareName")
        self.name.setStyleSheet(f"#CompareName {{ color: {color}; font-weight: bold; }}")
        self.name.setAccessibleName(f"Candidate {index + 1}: {label}")
        self.name.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.state = ElidedLabel("waiting", tooltip=True)
        self.state.setObjectName("CompareState")
        self.state.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.keep = QPushButton(KEEP)
        self.keep.setToolTip("End the comparison with this candidate: the thread goes on with it")
        self.keep.clicked.connect(lambda: self.keep_requested.emit(self.index))
        #: The name's row (the name alone: a narrow column still shows it whole), then the state's row with "Keep this
        #: one"; compact (:meth:`set_compact`), the name beside the button and the state before the figures.
        self._name_row = QHBoxLayout()
        self._name_row.addWidget(self.name, 1)
        self._top = top
        layout.addLayout(self._name_row)
        top.addWidget(self.state, 1)
        top.addWidget(self.keep)
        layout.addLayout(top)
        self.compact = False
        self._stats: ColumnStats | None = None
        #: The figures, wrapped, in a box of their own that the header's layout sizes: the label inside is given
        #: a fixed size (the box's width, the height its text needs), so new figures that need no other height
        #: repaint the label and lay nothing out (a label that may change size asks its layout, and through it
        #: the column's, to lay out again at every change of its text: four times a second in each column).
        self._figures_box = QWidget(self)
        self._figures_box.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self._figures_box.setFixedHeight(0)
        self._figures_box.installEventFilter(self)
        self.figures = QLabel("", self._figures_box)
        self.figures.setWordWrap(True)
        self.figures.setObjectName("CompareFigures")
        self.figures.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self._figures_box)

    def mark_selected(self, selected: bool) -> None:
        """The column whose candidate the inspector shows: its header tinted, and said to a screen reader."""
        tint = ""
        if selected:
            c = QColor(self._color)
            tint = f" background: rgba({c.red()}, {c.green()}, {c.blue()}, 36);"
        self.setStyleSheet(f"#CompareColumnHeader {{ border-top: 3px solid {self._color};{tint} }}")
        self.setAccessibleDescription("Shown in the inspector" if selected else "")

    def set_compact(self, compact: bool) -> None:
        """A low window: two rows, not three (the name beside "Keep this one", the state before the figures, which
        wrap): about 20 px more for the answer, which at 1024×640 had under 100."""
        if compact == self.compact:
            return
        self.compact = compact
        if compact:
            self._top.removeWidget(self.keep)
            self._name_row.addWidget(self.keep)
        else:
            self._name_row.removeWidget(self.keep)
            self._top.addWidget(self.keep)
        if self.keep.isEnabled():  # ("Kept" / "Left" once the comparison ended: short already)
            self.keep.setText(KEEP_SHORT if compact else KEEP)
        self.state.setVisible(not compact)
        if self._stats is not None:
            self.show_stats(self._stats)

    def show_stats(self, stats: ColumnStats) -> None:
        """The figures now (a label whose text is the same is not set again; new figures the same height lay
        nothing out)."""
        self._stats = stats
        model = f" · {stats.model}" if stats.model and stats.model != stats.label else ""
        state = stats.status + model
        if self.state.text() != state:
            self.state.setText(state)
        figures = stats.line()
        if self.compact:
            figures = f"{state} · {figures}" if figures else state
        figures = figures_text(figures.split(" · "))  # wrapped between the figures, never inside one
        if self.figures.text() != figures:
            self.figures.setText(figures)
            self._fit_figures()

    def _fit_figures(self) -> None:
        """The figures' label as wide as its box and as high as its text then needs; the box (and the header's
        layout) told only when that height changes."""
        width = self._figures_box.width()
        height = self.figures.heightForWidth(width) if self.figures.text() else 0
        self.figures.setFixedSize(width, max(0, height))
        if self._figures_box.height() != height:
            self._figures_box.setFixedHeight(max(0, height))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The figures' box resized (the column's width changed): the figures wrapped to it."""
        if watched is self._figures_box and event.type() == QEvent.Type.Resize:
            self._fit_figures()
        return False


class CompareView(QWidget):
    """The columns, the "Unlink scrolling" toggle and the verdict row."""

    keep_requested = Signal(int)
    #: A column was clicked in, or took the keyboard: its candidate (the inspector shows its tool calls).
    column_selected = Signal(int)
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
        bar = self._bar = QHBoxLayout()
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
        #: The columns scroll sideways when the window cannot give each its minimum.
        self.columns_area = QScrollArea(self)
        self.columns_area.setObjectName("CompareColumns")
        self.columns_area.setFrameShape(QFrame.Shape.NoFrame)
        self.columns_area.setWidgetResizable(True)
        self.columns_area.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.columns_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.headers: list[ColumnHeader] = []
        self.columns: list[QWidget] = []
        for index, (label, body) in enumerate(zip(labels, bodies, strict=True)):
            column = QWidget()
            column.setObjectName("CompareColumn")
            column.setMinimumWidth(COLUMN_MIN_WIDTH)
            box = QVBoxLayout(column)
            box.setContentsMargins(0, 0, 0, 0)
            box.setSpacing(0)
            header = ColumnHeader(index, label, column)
            header.keep_requested.connect(self.keep_requested)
            box.addWidget(header)
            box.addWidget(body, 1)
            self.headers.append(header)
            self.columns.append(column)
            column.installEventFilter(self)
            self.splitter.addWidget(column)
            body.verticalScrollBar().valueChanged.connect(lambda value, i=index: self._scrolled(i, value))
        self.columns_area.setWidget(self.splitter)
        outer.addWidget(self.columns_area, 1)
        #: The row under the columns: which answer is better, and why.
        self.verdict_row = self._verdict_row()
        outer.addWidget(self.verdict_row)
        self._syncing = False
        #: The column whose candidate the inspector shows (-1: none yet).
        self.selected = -1
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._focus_changed)

    def set_compact(self, compact: bool) -> None:
        """A low window: each header in two rows (:meth:`ColumnHeader.set_compact`), the bar above the columns
        tighter."""
        self._bar.setContentsMargins(8, 0 if compact else 4, 8, 0 if compact else 4)
        for header in self.headers:
            header.set_compact(compact)

    # -- the selected column ----------------------------------------------------------------------------------
    def select(self, index: int) -> None:
        """Mark column ``index`` as the one the inspector shows (no signal: the caller shows it)."""
        self.selected = index
        for header in self.headers:
            header.mark_selected(header.index == index)

    def column_at(self, widget: QObject | None) -> int | None:
        """The column ``widget`` is in (None: in none)."""
        if not isinstance(widget, QWidget):
            return None
        for index, column in enumerate(self.columns):
            if widget is column or column.isAncestorOf(widget):
                return index
        return None

    def _focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        """A click in a column's text, a card or a button gives it the keyboard: that column is selected."""
        from shiboken6 import isValid

        if isValid(self) and self.isVisible():
            self._picked(new)

    def _picked(self, widget: QObject | None) -> None:
        index = self.column_at(widget)
        if index is not None and index != self.selected:
            self.column_selected.emit(index)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """A click on what takes no keyboard (a header's name, the space between messages) reaches its column."""
        if event.type() == QEvent.Type.MouseButtonPress:
            self._picked(watched)
        return False

    # -- the verdict ------------------------------------------------------------------------------------------
    def _verdict_row(self) -> QWidget:
        """Two lines: the candidates to choose from (each name elided to its share, whole in its tooltip), then
        why, "Save verdict" and what was kept."""
        row = QFrame(self)
        row.setObjectName("CompareVerdict")
        lines = QVBoxLayout(row)
        lines.setContentsMargins(8, 6, 8, 6)
        lines.setSpacing(4)
        names = QHBoxLayout()
        names.addWidget(QLabel("Better answer:"))
        self.choices = QButtonGroup(row)
        for index, label in enumerate(self.labels):
            button = ElidedRadioButton(label)
            button.setStyleSheet(f"color: {candidate_color(index)}")
            self.choices.addButton(button, index)
            names.addWidget(button, 1)
        lines.addLayout(names)
        why = QHBoxLayout()
        self.reason = QLineEdit(row)
        self.reason.setPlaceholderText("Why (optional)")
        why.addWidget(self.reason, 1)
        self.save = QPushButton("Save verdict")
        self.save.setEnabled(False)
        self.choices.idClicked.connect(lambda _id: self.save.setEnabled(True))
        self.save.clicked.connect(self._give_verdict)
        why.addWidget(self.save)
        self.verdict_note = ElidedLabel("", tooltip=True)
        self.verdict_note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        why.addWidget(self.verdict_note, 1)
        lines.addLayout(why)
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


class ElidedRadioButton(ElidesOnResize, QRadioButton):
    """A radio button whose text ends in "…" when its share of the row is too narrow, with the whole text as
    its tooltip (a candidate's name in the verdict row)."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.full_text = text
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def _overhead(self) -> int:
        return text_overhead(QRadioButton.sizeHint(self).width(), self.fontMetrics(), self.text())

    def sizeHint(self) -> QSize:
        hint = QRadioButton.sizeHint(self)
        return QSize(self._overhead() + self.fontMetrics().horizontalAdvance(self.full_text), hint.height())

    def minimumSizeHint(self) -> QSize:
        part = self.full_text[:NAME_MIN_CHARS] + "…" if len(self.full_text) > NAME_MIN_CHARS else self.full_text
        return QSize(self._overhead() + self.fontMetrics().horizontalAdvance(part), self.sizeHint().height())

    def _elide(self) -> None:
        shown = elide_text(self.fontMetrics(), self.full_text, self.width() - self._overhead())
        if shown != self.text():
            self.setText(shown)
        self.setToolTip(self.full_text if shown != self.full_text else "")
