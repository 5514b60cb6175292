"""The robot editor's form: the robot (name, description, model, approval, system prompt), its tools and
MCP servers (checkboxes), and every other front-matter setting (from the schema, Advanced ones apart).

:meth:`RobotForm.fill` shows a :class:`~workspace.robot_files.RobotDraft`; :meth:`RobotForm.front` gives
the front matter back (keys the form does not know, such as ``x-`` keys, kept as they were).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ui.robot_editor.fields import ProblemLabel, SettingEditor
from workspace.robot_files import APPROVAL_CHOICES, FieldSpec

#: The choices of the tools and mcp settings: (value in the file, what the box says).
LEVELS = (("list", "Only the ones checked"), (None, "Default (inherit)"), ("all", "All of them"),
          ("none", "None"))


class Selection(QGroupBox):
    """A tools or MCP servers setting: a level (default, all, none, a list), checkboxes, and other names."""

    changed = Signal()

    def __init__(self, title: str, what: str, parent: QWidget | None = None) -> None:
        super().__init__(title, parent)
        self.what = what
        layout = QVBoxLayout(self)
        self.level = QComboBox(self)
        self.level.setAccessibleName(f"{title}: which")
        for value, text in LEVELS:
            self.level.addItem(text, value)
        self.level.currentIndexChanged.connect(self._level_changed)
        layout.addWidget(self.level)
        self.grid = QGridLayout()
        layout.addLayout(self.grid)
        self.boxes: dict[str, QCheckBox] = {}
        self.empty = QLabel("", self)
        self.empty.setObjectName("Muted")
        self.empty.setWordWrap(True)
        self.empty.setVisible(False)
        layout.addWidget(self.empty)
        self.other = QLineEdit(self)
        self.other.setPlaceholderText(f"Other {what} or patterns, comma-separated (e.g. github__*)")
        self.other.setAccessibleName(f"Other {what}")
        self.other.textChanged.connect(lambda _t: self.changed.emit())
        layout.addWidget(self.other)
        self.problems = ProblemLabel(self)
        layout.addWidget(self.problems)
        #: Entries shown nowhere (an inline MCP server definition): kept as they were.
        self.kept: list[Any] = []
        #: The file's value ("inherit" written out stays written out).
        self.original: Any = None

    def set_names(self, names: list[tuple[str, str]], *, empty_note: str = "") -> None:
        for box in self.boxes.values():
            self.grid.removeWidget(box)
            box.deleteLater()
        self.boxes = {}
        for i, (name, tip) in enumerate(names):
            box = QCheckBox(name, self)
            box.setToolTip(tip)
            box.setAccessibleName(f"{self.what.rstrip('s')} {name}")
            box.setAccessibleDescription(tip)
            box.toggled.connect(lambda _c: self.changed.emit())
            self.grid.addWidget(box, i // 2, i % 2)
            self.boxes[name] = box
        self.empty.setText(empty_note)
        self.empty.setVisible(not names and bool(empty_note))

    def _level_changed(self, _index: int) -> None:
        listed = self.level.currentData() == "list"
        for box in self.boxes.values():
            box.setEnabled(listed)
        self.other.setEnabled(listed)
        self.changed.emit()

    def set_value(self, value: Any) -> None:
        self.kept = []
        self.original = value
        if isinstance(value, list):
            names = [v for v in value if isinstance(v, str)]
            self.kept = [v for v in value if not isinstance(v, str)]
            for name, box in self.boxes.items():
                box.setChecked(name in names)
            self.other.setText(", ".join(n for n in names if n not in self.boxes))
            level: Any = "list"
        else:
            for box in self.boxes.values():
                box.setChecked(False)
            self.other.setText("")
            level = value if value in ("all", "none") else None
        self.level.setCurrentIndex(max(0, self.level.findData(level)))
        self._level_changed(0)

    def value(self) -> Any:
        level = self.level.currentData()
        if level is None and self.original == "inherit":
            return "inherit"
        if level != "list":
            return level
        names = [name for name, box in self.boxes.items() if box.isChecked()]
        names += [n.strip() for n in self.other.text().split(",") if n.strip() and n.strip() not in names]
        return [*names, *self.kept]


class RobotForm(QTabWidget):
    """The tabs of the editor: Robot, Tools, Settings. ``changed`` on every edit."""

    changed = Signal()

    def __init__(self, specs: list[FieldSpec], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("RobotForm")
        self.setAccessibleName("Robot settings")
        self._front: dict[str, Any] = {}
        self.problem_labels: dict[str, ProblemLabel] = {}
        self._build_robot_tab()
        self._build_tools_tab()
        self.settings: dict[str, SettingEditor] = {}
        self._build_settings_tab(specs)

    # -- tabs -----------------------------------------------------------------------------------------------
    def _scroll(self, inner: QWidget, title: str) -> None:
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the page follows the width
        inner.setMinimumWidth(0)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(inner)
        self.addTab(scroll, title)

    def _line(self, form: QFormLayout, key: str, label: str, widget: QWidget, tip: str) -> None:
        holder = QWidget(form.parentWidget())
        column = QVBoxLayout(holder)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(widget)
        widget.setAccessibleName(label.rstrip(":").replace("&", ""))
        widget.setToolTip(tip)
        problems = ProblemLabel(holder)
        column.addWidget(problems)
        self.problem_labels[key] = problems
        form.addRow(label, holder)

    def _build_robot_tab(self) -> None:
        page = QWidget(self)
        form = QFormLayout(page)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.name = QLineEdit(page)
        self.name.setObjectName("RobotName")
        self.name.setPlaceholderText("my-robot")
        self._line(form, "name", "&Name:", self.name, "The robot's name; also its file name (letters, digits, -, _)")
        self.description = QLineEdit(page)
        self.description.setObjectName("RobotDescription")
        self.description.setPlaceholderText("What this robot does, in one line")
        self._line(form, "description", "&Description:", self.description, "One line saying what the robot does")
        self.model = QComboBox(page)
        self.model.setObjectName("RobotModel")
        self.model.setEditable(True)
        self.model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        line = self.model.lineEdit()
        if line is not None:
            line.setPlaceholderText("(the configuration's model)")
            line.setAccessibleName("Model")
        self._line(form, "model", "&Model:", self.model,
                   "A model id such as openai/gpt-4o-mini or ollama_chat/llama3.1; empty: the configuration's")
        self.approval = QComboBox(page)
        self.approval.setObjectName("RobotApproval")
        for value, text in APPROVAL_CHOICES.items():
            self.approval.addItem(text, value)
        self._line(form, "approval", "&Approval:", self.approval,
                   "The robot's rule in the approval policy (Settings › Approval lists every rule)")
        self.body = QPlainTextEdit(page)
        self.body.setObjectName("RobotBody")
        self.body.setTabChangesFocus(True)
        self.body.setMinimumHeight(160)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.body.setFont(mono)
        self._line(form, "body", "System &prompt:", self.body,
                   "The system prompt, a Jinja2 template: {{ name }} is a run's parameter, "
                   "{% if x %}…{% endif %} a condition")
        note = QLabel("A template: {{ name }} stands for a run's parameter (robotlab run --param name=…), "
                      "{{ name | default('…') }} gives it a default.", page)
        note.setObjectName("Muted")
        note.setWordWrap(True)
        form.addRow("", note)
        for signal in (self.name.textChanged, self.description.textChanged, self.model.currentTextChanged):
            signal.connect(lambda _t: self.changed.emit())
        self.approval.currentIndexChanged.connect(lambda _i: self.changed.emit())
        self.body.textChanged.connect(self.changed.emit)
        self._scroll(page, "&Robot")

    def _build_tools_tab(self) -> None:
        page = QWidget(self)
        column = QVBoxLayout(page)
        self.tools = Selection("Tools", "tools", page)
        self.mcp = Selection("MCP servers", "servers", page)
        for part in (self.tools, self.mcp):
            part.changed.connect(self.changed.emit)
            column.addWidget(part)
        self.problem_labels["tools"] = self.tools.problems
        self.problem_labels["mcp"] = self.mcp.problems
        skills = QGroupBox("Skills and hooks", page)
        skills.setObjectName("RobotSkills")
        box = QVBoxLayout(skills)
        self.skills_view = QLabel("", skills)
        self.skills_view.setObjectName("SkillsList")
        self.skills_view.setWordWrap(True)
        self.skills_view.setTextFormat(Qt.TextFormat.RichText)
        self.skills_view.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.skills_view.setAccessibleName("The robot's skills and hooks")
        box.addWidget(self.skills_view)
        column.addWidget(skills)
        column.addStretch(1)
        self._scroll(page, "&Tools")

    def show_skills(self, template: list[tuple[str, str]], agent: list[tuple[str, str]]) -> None:
        """The robot's template skills (name, file or problem), the agent skills a run may be given (name,
        description), and where its hooks come from (read-only: ``skills:`` is edited in Settings)."""
        from ui.markdown import _esc

        parts = ["<b>Template skills</b> (their text goes before the robot's, in this order; "
                 "<i>skills</i> in Settings lists them):"]
        if template:
            parts.append("<br>".join(f"&nbsp;&nbsp;• {_esc(name)} <span style='color:gray'>{_esc(where)}</span>"
                                     for name, where in template))
        else:
            parts.append("&nbsp;&nbsp;none")
        parts.append("<b>Agent skills</b> (SKILL.md beside the templates; given to a run whose message asks "
                     "for one; <tt>robotlab skills list</tt>):")
        if agent:
            parts.append("<br>".join(f"&nbsp;&nbsp;• {_esc(name)} <span style='color:gray'>{_esc(text)}</span>"
                                     for name, text in agent))
        else:
            parts.append("&nbsp;&nbsp;none found")
        parts.append("<b>Hooks</b>: none in a robot file; a program gives them (<tt>Robot(hooks=...)</tt>, "
                     "a network's <tt>hooks</tt>).")
        self.skills_view.setText("<br>".join(parts))

    def skills_text(self) -> str:
        """What the Skills and hooks box says, as plain text."""
        from PySide6.QtGui import QTextDocument

        document = QTextDocument()
        document.setHtml(self.skills_view.text())
        return document.toPlainText()

    def _build_settings_tab(self, specs: list[FieldSpec]) -> None:
        page = QWidget(self)
        column = QVBoxLayout(page)
        main = QFormLayout()
        main.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        column.addLayout(main)
        advanced = QGroupBox("Advanced", page)
        advanced.setObjectName("AdvancedSettings")
        more = QFormLayout(advanced)
        more.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for spec in specs:
            editor = SettingEditor(spec, page)
            editor.changed.connect(self.changed.emit)
            self.settings[spec.key] = editor
            self.problem_labels[spec.key] = editor.problems
            label = QLabel(spec.key.replace("_", " ").capitalize() + ":", page)
            label.setBuddy(editor.control)
            (more if spec.advanced else main).addRow(label, editor)
        column.addWidget(advanced)
        column.addStretch(1)
        self._scroll(page, "&Settings")

    # -- values ---------------------------------------------------------------------------------------------
    def set_choices(self, *, tools: list[tuple[str, str]], servers: list[str], models: list[str]) -> None:
        self.tools.set_names(tools)
        self.mcp.set_names([(s, "An MCP server of your configuration's mcpServers") for s in servers],
                           empty_note="No MCP servers are configured: add them in Settings › MCP servers.")
        self.model.blockSignals(True)
        self.model.clear()
        self.model.addItem("")
        for model in models:
            if model:
                self.model.addItem(model)
        self.model.blockSignals(False)

    def fill(self, front: dict[str, Any], body: str, *, approval: str | None, read_only: bool) -> None:
        """Show a robot's front matter and body (nothing emits ``changed`` meanwhile)."""
        self.blockSignals(True)
        try:
            self._front = dict(front)
            self.name.setText(str(front.get("name") or ""))
            self.description.setText(str(front.get("description") or ""))
            self.description.setCursorPosition(0)  # the start of a long description, not its end
            self.model.setCurrentText(str(front.get("model") or ""))
            self.approval.setCurrentIndex(max(0, self.approval.findData(approval)))
            self.body.setPlainText(body)
            self.tools.set_value(front.get("tools"))
            self.mcp.set_value(front.get("mcp"))
            for key, editor in self.settings.items():
                editor.set_value(front.get(key))
            self.set_read_only(read_only)
        finally:
            self.blockSignals(False)

    def set_read_only(self, read_only: bool) -> None:
        for edit in (self.name, self.description, self.tools.other):
            edit.setReadOnly(read_only)
        self.body.setReadOnly(read_only)
        for widget in (self.model, self.approval, self.tools.level, self.mcp.level, *self.tools.boxes.values(),
                       *self.mcp.boxes.values()):
            widget.setEnabled(not read_only)
        if not read_only:
            self.tools._level_changed(0)
            self.mcp._level_changed(0)
        for editor in self.settings.values():
            editor.control.setEnabled(not read_only)

    def front(self) -> dict[str, Any]:
        """The front matter as the form says it (None: the key is left out of the file)."""
        out = dict(self._front)
        out["name"] = self.name.text().strip() or None
        out["description"] = self.description.text().strip() or None
        out["model"] = self.model.currentText().strip() or None
        out["tools"] = self.tools.value()
        out["mcp"] = self.mcp.value()
        for key, editor in self.settings.items():
            out[key] = editor.value()
        return out

    def approval_choice(self) -> str | None:
        value = self.approval.currentData()
        return str(value) if value else None

    def show_problems(self, by_key: dict[str | None, list[str]]) -> list[str]:
        """Each field's problems under it; returns the messages no field shows (for the banner)."""
        for key, label in self.problem_labels.items():
            label.show_problems(by_key.get(key, []))
        return [m for key, messages in by_key.items() if key not in self.problem_labels for m in messages]

    def first_problem_tab(self, by_key: dict[str | None, list[str]]) -> int | None:
        for key in by_key:
            label = self.problem_labels.get(key) if key else None
            if label is None:
                continue
            for index in range(self.count()):
                page = self.widget(index)
                if page is not None and page.isAncestorOf(label):
                    return index
        return None

    def focus_name(self) -> None:
        self.setCurrentIndex(0)
        self.name.setFocus(Qt.FocusReason.OtherFocusReason)
        self.name.selectAll()
