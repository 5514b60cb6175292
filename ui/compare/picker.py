""""Compare with…": choose 1-3 other candidates (models, robots, or the same robot again) for the next message."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ui.compare.session import CandidateSpec
from workspace.session.compare import MAX_CANDIDATES


def choices(robot: str, *, robots: Sequence[str], models: Sequence[tuple[str, str | None]]) -> list[
        tuple[str, CandidateSpec]]:
    """What the dialog offers beside ``robot`` (the first candidate): the same robot again, each other robot with
    its own model (a handful), then ``robot`` with each of ``models`` (id, server: a hosted provider lists dozens)."""
    out = [(f"{robot} again (its own model)", CandidateSpec(robot))]
    out += [(f"{name} (robot)", CandidateSpec(name)) for name in robots if name != robot]
    out += [(f"{robot} with {model}", CandidateSpec(robot, model=model, api_base=api_base))
            for model, api_base in models]
    return out


class CompareDialog(QDialog):
    """A checkable list of candidates; OK once 1 to 3 are checked."""

    def __init__(self, robot: str, options: Sequence[tuple[str, CandidateSpec]],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare with…")
        self.setAccessibleName("Compare with")
        self._options = list(options)
        layout = QVBoxLayout(self)
        most = MAX_CANDIDATES - 1
        layout.addWidget(QLabel(f"The next message goes to <b>{robot}</b> and to the candidates you check "
                                f"(1 to {most}); their answers stream side by side."))
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter the candidates (a model or robot name)")
        self.filter.setAccessibleName("Filter the candidates")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filter)
        layout.addWidget(self.filter)
        self.list = QListWidget(self)
        self.list.setAccessibleName("Candidates")
        for text, _spec in self._options:
            item = QListWidgetItem(text)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.list.addItem(item)
        layout.addWidget(self.list, 1)
        self.note = QLabel("")
        layout.addWidget(self.note)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText("Compare")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.list.itemChanged.connect(lambda _item: self._check())
        self._check()

    def _filter(self, text: str) -> None:
        """Rows whose text holds every word typed (any case) show; a checked row always does."""
        words = text.lower().split()
        for row in range(self.list.count()):
            item = self.list.item(row)
            shown = item.checkState() == Qt.CheckState.Checked or all(w in item.text().lower() for w in words)
            item.setHidden(not shown)

    def checked(self) -> list[CandidateSpec]:
        return [spec for row, (_text, spec) in enumerate(self._options)
                if self.list.item(row).checkState() == Qt.CheckState.Checked]

    def _check(self) -> None:
        count, most = len(self.checked()), MAX_CANDIDATES - 1
        ok = 1 <= count <= most
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)
        self.note.setText("" if ok or count == 0 else f"Check at most {most}: {count} are checked")
