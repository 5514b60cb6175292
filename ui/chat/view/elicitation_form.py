"""The elicitation form: an MCP server asks the person for a few values, from its JSON schema.

Each property of the request's schema becomes a field (:mod:`workspace.mcp.forms`): text (with
email / web address / date formats), a number or whole number (with its range), yes/no, one
choice of a list, several choices. Titles label the fields (a required one is marked ``*``),
descriptions show under them, defaults fill them, and Accept checks every field first: a field
that does not fit says why under it and takes the focus. Accept sends the values, Decline and
Cancel send none. Answered, the form shows what was sent (or that nothing was), live and when the
thread is reopened alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.chat.view.request_card import RequestCard, note_label
from ui.widgets.common import ElidedLabel
from ui.widgets.flow import FlowRow, shrinkable
from workspace.approval import ApprovalDecision
from workspace.mcp.forms import FormField, check, content_of, form_fields, start_value

if TYPE_CHECKING:
    from ui.chat.model.tool_calls import ElicitationItem

#: Whole numbers a field takes when its schema gives no range.
INT_LIMIT = 2_000_000_000


class NumberBox(QDoubleSpinBox):
    """A number field that shows 3.14, not 3.140000."""

    def textFromValue(self, value: float) -> str:
        text = f"{value:.6f}".rstrip("0").rstrip(".")
        return self.locale().toString(float(text), "g", 15) if text else "0"


class FieldEditor(QWidget):
    """One field of the form: its input, its description, and its problem (hidden until there is one)."""

    def __init__(self, field: FormField, value: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.field = field
        #: A multiple choice's boxes: (value, check box).
        self.choices: list[tuple[Any, QCheckBox]] = []
        self._empty_number: float | None = None
        c = theme.colors()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.input: QWidget = self._make_input(field, value)
        name = field.label + (" (required)" if field.required else "")
        self.input.setAccessibleName(name)
        if field.description:
            self.input.setAccessibleDescription(field.description)
        layout.addWidget(self.input)
        hint = "" if field.format and field.kind == "string" else field.hint  # the placeholder shows formats
        if (field.description and field.kind != "boolean") or hint:
            text = field.description + (f" ({hint})" if hint and field.description else hint)
            description = shrinkable(QLabel(text, self))
            description.setObjectName("Muted")
            description.setTextFormat(Qt.TextFormat.PlainText)
            layout.addWidget(description)
        self.problem = shrinkable(QLabel("", self))
        self.problem.setObjectName("FieldProblem")
        self.problem.setStyleSheet(f"color: {c.error};")
        self.problem.setVisible(False)
        layout.addWidget(self.problem)

    def _make_input(self, field: FormField, value: Any) -> QWidget:
        if field.kind == "boolean":  # its description (or "Yes") beside the box; the form's label names it
            box = QCheckBox(field.description or "Yes", self)
            box.setChecked(bool(value))
            return box
        if field.kind == "integer":
            spin = QSpinBox(self)
            spin.setRange(int(field.minimum) if field.minimum is not None else -INT_LIMIT,
                          int(field.maximum) if field.maximum is not None else INT_LIMIT)
            self._optional_number(spin, field, value)
            return spin
        if field.kind == "number":
            dspin = NumberBox(self)
            dspin.setDecimals(6)
            dspin.setRange(field.minimum if field.minimum is not None else -1e12,
                           field.maximum if field.maximum is not None else 1e12)
            self._optional_number(dspin, field, value)
            return dspin
        if field.kind == "choice":
            combo = QComboBox(self)
            if not field.required or value is None:
                combo.addItem("—", None)  # nothing chosen
            for option, label in field.options:
                combo.addItem(label, option)
            index = combo.findData(value) if value is not None else 0
            combo.setCurrentIndex(max(0, index))
            return combo
        if field.kind == "choices":
            group = QWidget(self)
            row = FlowRow(group, spacing=10)
            chosen = value if isinstance(value, list) else []
            for option, label in field.options:
                choice = QCheckBox(label, group)
                choice.setChecked(option in chosen)
                choice.setAccessibleName(f"{field.label}: {label}")
                row.addWidget(choice)
                self.choices.append((option, choice))
            if self.choices:
                group.setFocusProxy(self.choices[0][1])
            return group
        line = QLineEdit(self)
        line.setText("" if value is None else str(value))
        placeholder = {"email": "name@example.com", "uri": "https://…", "date": "YYYY-MM-DD",
                       "date-time": "YYYY-MM-DDTHH:MM"}.get(field.format or "")
        if placeholder:
            line.setPlaceholderText(placeholder)
        if field.max_length:
            line.setMaxLength(field.max_length)
        return line

    def _optional_number(self, spin: QSpinBox | QDoubleSpinBox, field: FormField, value: Any) -> None:
        """A number field: an optional one without a default starts empty (its special value text)."""
        empty = value is None and not field.required
        if isinstance(spin, QSpinBox):
            if empty:  # one below the range stands for "nothing entered"
                spin.setMinimum(spin.minimum() - 1)
                spin.setSpecialValueText("—")
                spin.setValue(spin.minimum())
                self._empty_number = spin.minimum()
            elif isinstance(value, int | float):
                spin.setValue(int(value))
        else:
            if empty:
                spin.setMinimum(spin.minimum() - 1.0)
                spin.setSpecialValueText("—")
                spin.setValue(spin.minimum())
                self._empty_number = spin.minimum()
            elif isinstance(value, int | float):
                spin.setValue(float(value))

    def value(self) -> Any:
        """The field's value now (None / [] when nothing was entered or chosen)."""
        widget = self.input
        if isinstance(widget, QCheckBox):
            return widget.isChecked()
        if isinstance(widget, QSpinBox | QDoubleSpinBox):
            if self._empty_number is not None and widget.value() == self._empty_number:
                return None
            return widget.value()
        if isinstance(widget, QComboBox):
            return widget.currentData()
        if isinstance(widget, QLineEdit):
            return widget.text().strip()
        return [option for option, box in self.choices if box.isChecked()]

    def set_problem(self, text: str | None) -> None:
        self.problem.setText(text or "")
        self.problem.setVisible(bool(text))
        self.input.setAccessibleDescription((f"{text} " if text else "") + self.field.description)


class ElicitationForm(RequestCard):
    """See the module. ``item`` is a :class:`~ui.chat.model.tool_calls.ElicitationItem`."""

    icon_name = "edit"
    kind_name = "Request for input"

    def __init__(self, item: ElicitationItem, parent: QWidget | None = None) -> None:
        self.editors: dict[str, FieldEditor] = {}
        self.fields: list[FormField] = []
        self.accept_button: QPushButton | None = None
        self.decline_button: QPushButton | None = None
        self.cancel_button: QPushButton | None = None
        self.outcome: QLabel | None = None
        self.values_view: QLabel | None = None
        super().__init__(item, parent)
        self.apply(item)

    @property
    def elicitation(self) -> ElicitationItem:
        from ui.chat.model.tool_calls import ElicitationItem

        assert isinstance(self.item, ElicitationItem)
        return self.item

    def title_text(self) -> str:
        return f"{self.item.server or 'A server'} asks for input"

    def status_text(self) -> tuple[str, str]:
        if not self.done:
            return "needs you", "asking"
        action = self.elicitation.action
        return {"asking": ("waiting", "muted"), "accept": ("accepted", "ok"), "decline": ("declined", "muted"),
                "cancel": ("cancelled", "muted"), "stopped": ("stopped", "muted"), "error": ("error", "error")}[action]

    def signature(self) -> tuple[Any, ...]:
        item = self.elicitation
        return (item.action, item.status, repr(item.arguments), repr(item.error))

    def _message(self) -> None:
        message = self.elicitation.message
        if message:
            label = shrinkable(QLabel(message, self))
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setObjectName("ElicitationMessage")
            self.body.addWidget(label)

    # -- decided (or waiting, not asked here) ---------------------------------------------------------
    def show_decided(self) -> None:
        item = self.elicitation
        c = theme.colors()
        self._message()
        self.values_view = None
        self.outcome = None
        if item.outcome:
            color = c.success if item.action == "accept" else c.muted
            self.outcome = note_label(item.outcome, color, self)
            self.body.addWidget(self.outcome)
        if item.action == "accept" and item.schema:
            fields = form_fields(item.schema)
            lines = [f"<b>{_esc(f.label)}</b>: {_esc(f.shown(item.content.get(f.name)))}" for f in fields
                     if f.name in item.content]
            if lines:
                self.values_view = shrinkable(QLabel("<br>".join(lines), self))
                self.values_view.setTextFormat(Qt.TextFormat.RichText)
                self.values_view.setObjectName("ElicitationValues")
                self.values_view.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                self.body.addWidget(self.values_view)
        elif item.action == "asking":
            names = [f.label for f in form_fields(item.schema)] if item.schema else []
            if names:
                waiting = shrinkable(QLabel("Fields: " + ", ".join(names), self))
                waiting.setObjectName("Muted")
                self.body.addWidget(waiting)
        if item.error is not None:
            error = item.error.get("message", item.error) if isinstance(item.error, dict) else item.error
            label = note_label(f"Error — {error}", c.error, self)
            label.setObjectName("RequestError")
            self.body.addWidget(label)

    # -- asked live -----------------------------------------------------------------------------------
    def show_question(self) -> None:
        request_input = dict(getattr(self.request, "input", None) or self.elicitation.request)
        schema = request_input.get("requestedSchema") if isinstance(request_input.get("requestedSchema"), dict) else {}
        self._message()
        self.fields = form_fields(schema or {})
        self.editors = {}
        for field in self.fields:  # stacked: label, field, description, problem (narrow columns too)
            editor = FieldEditor(field, start_value(field), self)
            editor.setObjectName(f"Field_{field.name}")
            self.editors[field.name] = editor
            label = shrinkable(QLabel(field.label + (" *" if field.required else ""), self))
            label.setObjectName("FieldLabel")
            font = label.font()
            font.setWeight(QFont.Weight.DemiBold)
            label.setFont(font)
            label.setToolTip("Required" if field.required else "Optional")
            label.setBuddy(editor.input)
            self.body.addSpacing(2)
            self.body.addWidget(label)
            self.body.addWidget(editor)
        if any(f.required for f in self.fields):
            note = QLabel("* required", self)
            note.setObjectName("Muted")
            self.body.addWidget(note)
        buttons = FlowRow(spacing=8, align_right=True)
        hint = ElidedLabel("Enter accepts · Esc stops the run", self, whole=True)
        hint.setObjectName("Muted")
        hint.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        buttons.addWidget(hint)
        self.cancel_button = QPushButton("&Cancel", self)
        self.cancel_button.setToolTip("Dismiss the request without answering it")
        self.cancel_button.clicked.connect(self.cancel)
        self.decline_button = QPushButton("&Decline", self)
        self.decline_button.setObjectName("DangerButton")
        self.decline_button.setToolTip("Refuse to give these values")
        self.decline_button.clicked.connect(self.decline)
        self.accept_button = QPushButton("&Accept", self)
        self.accept_button.setObjectName("PrimaryButton")
        self.accept_button.setToolTip("Send these values to the server")
        self.accept_button.setDefault(True)
        self.accept_button.clicked.connect(self.accept)
        for b in (self.cancel_button, self.decline_button, self.accept_button):
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            buttons.addWidget(b)
        self.body.addLayout(buttons)
        for editor in self.editors.values():
            if isinstance(editor.input, QLineEdit):
                editor.input.returnPressed.connect(self.accept)

    def values(self) -> dict[str, Any]:
        return {name: editor.value() for name, editor in self.editors.items()}

    def accept(self) -> bool:
        """Send the values, once every field fits; otherwise say why under each field (False)."""
        if self.done:
            return False
        values = self.values()
        first: FieldEditor | None = None
        for field in self.fields:
            editor = self.editors[field.name]
            problem = check(field, values.get(field.name))
            editor.set_problem(problem)
            if problem and first is None:
                first = editor
        if first is not None:
            first.input.setFocus()
            return False
        request_input = dict(getattr(self.request, "input", None) or {})
        content = content_of(self.fields, values)
        self.resolve(ApprovalDecision(approved=True, input={**request_input, "content": content}))
        return True

    def decline(self) -> None:
        if not self.done:
            self.resolve(ApprovalDecision(approved=False, reason="decline"))

    def cancel(self) -> None:
        if not self.done:
            self.resolve(ApprovalDecision(approved=False, reason="cancel"))


def _esc(text: str) -> str:
    from ui import markdown

    return markdown._esc(text)


__all__ = ["ElicitationForm", "FieldEditor"]
