"""One editor per front-matter setting, chosen from the schema's description of it (workspace.robot_files).

Each :class:`SettingEditor` shows a value, gives it back as the front matter's value (None: not set,
the key is left out) and has a label under it for that key's problems. Values that do not parse are
given back as they were typed, so the schema names the problem in the same words as for a file.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QPlainTextEdit, QVBoxLayout, QWidget

from ui import theme
from workspace.robot_files import FieldSpec


class ProblemLabel(QLabel):
    """The red line under a field saying what is wrong with it (hidden when nothing is)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.setObjectName("FieldProblem")
        self.setWordWrap(True)
        self.setVisible(False)
        self.retheme()

    def retheme(self) -> None:
        self.setStyleSheet(f"color: {theme.colors().error}; font-size: 12px;")

    def show_problems(self, messages: list[str]) -> None:
        self.setText("\n".join(messages))
        self.setAccessibleName("Problem: " + " ".join(messages) if messages else "")
        self.setVisible(bool(messages))


class SettingEditor(QWidget):
    """A setting's control (line, list, choice or YAML text), its description and its problems."""

    changed = Signal()

    def __init__(self, spec: FieldSpec, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.control: QWidget
        label = spec.key.replace("_", " ")
        if spec.kind == "choice" or spec.kind == "bool":
            box = QComboBox(self)
            box.addItem("(not set)", None)
            for choice in (("true", "false") if spec.kind == "bool" else spec.choices):
                box.addItem(choice, choice)
            box.currentIndexChanged.connect(lambda _i: self.changed.emit())
            self.control = box
        elif spec.kind in ("list", "yaml"):
            edit = QPlainTextEdit(self)
            edit.setTabChangesFocus(True)
            edit.setFixedHeight(64 if spec.kind == "list" else 96)
            edit.setPlaceholderText("One per line" if spec.kind == "list" else "YAML, e.g. key: value")
            edit.textChanged.connect(self.changed.emit)
            self.control = edit
        else:
            line = QLineEdit(self)
            line.setPlaceholderText(self._placeholder())
            line.textChanged.connect(lambda _t: self.changed.emit())
            self.control = line
        self.control.setObjectName(f"setting-{spec.key}")
        self.control.setAccessibleName(label.capitalize())
        self.control.setAccessibleDescription(spec.description)
        self.control.setToolTip(spec.description)
        layout.addWidget(self.control)
        if spec.description:
            note = QLabel(spec.description, self)
            note.setObjectName("Muted")
            note.setWordWrap(True)
            layout.addWidget(note)
        self.problems = ProblemLabel(self)
        layout.addWidget(self.problems)

    def _placeholder(self) -> str:
        spec = self.spec
        if spec.kind in ("number", "integer"):
            low = "" if spec.minimum is None else f"{spec.minimum:g}"
            high = "" if spec.maximum is None else f"{spec.maximum:g}"
            if low and high:
                return f"(not set) {low} to {high}"
            if low:
                return f"(not set) at least {low}"
            return "(not set)"
        return "(not set)"

    # -- the value ------------------------------------------------------------------------------------------
    def set_value(self, value: Any) -> None:
        control = self.control
        if isinstance(control, QComboBox):
            text = None if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
            index = control.findData(text)
            if index < 0 and text is not None:  # a value the schema does not offer: shown, and reported
                control.addItem(text, text)
                index = control.count() - 1
            control.setCurrentIndex(max(0, index))
        elif isinstance(control, QPlainTextEdit):
            if value is None:
                control.setPlainText("")
            elif self.spec.kind == "list" and isinstance(value, list):
                control.setPlainText("\n".join(str(v) for v in value))
            else:
                import yaml

                control.setPlainText(yaml.safe_dump(value, sort_keys=False, allow_unicode=True).strip()
                                     if not isinstance(value, str) else value)
        elif isinstance(control, QLineEdit):
            control.setText("" if value is None else str(value))

    def value(self) -> Any:
        control = self.control
        if isinstance(control, QComboBox):
            data = control.currentData()
            if self.spec.kind == "bool" and data in ("true", "false"):
                return data == "true"
            return data
        if isinstance(control, QPlainTextEdit):
            text = control.toPlainText()
            if not text.strip():
                return None
            if self.spec.kind == "list":
                return [line.strip() for line in text.splitlines() if line.strip()]
            import yaml

            from workspace.yaml_limits import safe_load

            try:
                return safe_load(text)
            except yaml.YAMLError:
                return text  # reported by the schema as not the right kind of value
        assert isinstance(control, QLineEdit)
        text = control.text().strip()
        if not text:
            return None
        return parse_scalar(text, self.spec.kind)


def parse_scalar(text: str, kind: str) -> Any:
    """``text`` as the kind of value the schema wants; left as text when it is not one (the schema says so)."""
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            return text
    if kind == "number":
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return text
    return text
