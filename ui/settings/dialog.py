"""Settings: provider and model, API key (OS keyring), approval policy, review mode, theme.

The dialog is opened with ``open()`` (never ``exec()``). Model, API base, review mode and
theme go to the user config file; approval rules to the approval policy YAML; an API key
only to the OS keyring (or nowhere: then the dialog says which environment variable to set).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ui.screen import size_to_screen
from workspace.urls import LOCAL_DEFAULT_BASES

if TYPE_CHECKING:
    from ui.controller import Controller
    from workspace.approval import ApprovalPolicy
    from workspace.providers.listing import ModelListing

log = logging.getLogger("ui.settings.dialog")

MODEL_PRESETS = [
    ("", "Offline demo (no language model)"),
    ("openai/gpt-4o-mini", "OpenAI · gpt-4o-mini"),
    ("openai/gpt-4.1", "OpenAI · gpt-4.1"),
    ("anthropic/claude-sonnet-4-5", "Anthropic · Claude Sonnet 4.5"),
    ("gemini/gemini-2.5-flash", "Google · Gemini 2.5 Flash"),
    ("ollama_chat/llama3.1", "Ollama (local) · llama3.1"),
    ("openai/local-model", "LM Studio / any OpenAI-compatible server"),
]
LOCAL_BASES = {**LOCAL_DEFAULT_BASES, "openai/local-model": "http://localhost:1234/v1"}
#: What a rule's Command cell means.
COMMAND_TIP = ("For run_command: a glob (pytest*) or the command's first words (git status); ticked: exactly this "
               "command and no other (what an \"Always\" answer writes). Empty: any call of the tool.")


def _command_box(item: QTableWidgetItem, *, checked: bool | None = None) -> None:
    """Give a rule's Command cell its "exact" box when it holds a command, and none when it is empty (the box would
    do nothing: a rule without a command is any call of the tool). ``checked``: tick it (None: as it is)."""
    has_command = bool(item.text().strip())
    checkable = bool(item.flags() & Qt.ItemFlag.ItemIsUserCheckable)
    if has_command:
        state = item.checkState() if checked is None and checkable else (
            Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        if not checkable:
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        if not checkable or item.checkState() != state:
            item.setCheckState(state)
    elif checkable or item.data(Qt.ItemDataRole.CheckStateRole) is not None:
        item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsUserCheckable)
        item.setData(Qt.ItemDataRole.CheckStateRole, None)  # no box drawn (and unticked, should a command come)


def _user_file() -> dict[str, Any]:
    """The user's configuration file as written (``ConfigurationError`` for one that cannot be read)."""
    from workspace import paths
    from workspace.schemas import read_yaml_file

    path = paths.user_config_file()
    return read_yaml_file(path)[0] if path.is_file() else {}


def _own_setting(dotted: str) -> Any:
    """``dotted`` as the user's configuration file says it (None: not there, or the file cannot be read)."""
    from workspace.errors import ConfigurationError

    try:
        node: Any = _user_file()
    except (ConfigurationError, OSError):
        return None
    for part in dotted.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def save_user_setting(dotted: str, value: Any) -> None:
    """Set one key in the user config file (keeps the other keys); ``value``: any YAML value."""
    save_user_settings({dotted: value})


def save_user_settings(values: dict[str, Any]) -> None:
    import yaml

    from workspace import paths

    path = paths.user_config_file()
    data = _user_file()
    for dotted, value in values.items():
        if "key" in dotted.split(".")[-1].lower() and "api" in dotted.lower():
            raise ValueError("API keys are never written to the configuration file")
        node = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    # Readable only by the user from the first byte: it names servers, commands and keyring entries.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("# RobotLab Workspace configuration (written by Settings).\n" + yaml.safe_dump(data, sort_keys=False))
    os.chmod(tmp, 0o600)
    tmp.replace(path)


#: The settings dialog's size on a big screen (a smaller one gets most of its screen; the pages scroll).
PREFERRED_SIZE = QSize(880, 700)


class SettingsDialog(QDialog):
    """Non-modal settings; ``saved`` carries the changed dotted keys and values."""

    saved = Signal(dict)

    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setWindowTitle("Settings")
        self.setMinimumSize(640, 480)
        #: Each tab's page in the scroll area that holds it (a small screen scrolls a page, never squeezes it).
        self._pages: dict[QWidget, QWidget] = {}
        layout = QVBoxLayout(self)
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        layout.addWidget(self.tabs)

        # -- model ---------------------------------------------------------------------------
        model_tab = QWidget(self)
        form = QFormLayout(model_tab)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        intro = QLabel("Connect a language model: pick a hosted model and give its API key, or run one on this "
                       "computer with Ollama (<code>ollama pull llama3.1</code>, then choose <i>Ollama (local)</i>). "
                       "Any model id litellm knows works; type it in.", model_tab)
        intro.setWordWrap(True)
        form.addRow(intro)
        self.model = QComboBox(model_tab)
        self.model.setEditable(True)
        for model_id, label in MODEL_PRESETS:
            self.model.addItem(model_id or label, model_id)
        self.model.setToolTip("Any model id litellm supports: provider/model, e.g. openai/gpt-4o-mini, "
                              "anthropic/claude-sonnet-4-5, ollama_chat/llama3.1. Empty: the offline demo.")
        self.model.currentTextChanged.connect(self._on_model_changed)
        self.model.setAccessibleName("Model")
        line = self.model.lineEdit()
        if line is not None:
            line.setAccessibleName("Model id")
        form.addRow("Model", self.model)
        self._add_model_list_row(form, model_tab)
        self.api_base = QLineEdit(model_tab)
        self.api_base.setPlaceholderText("Only for local or self-hosted servers, e.g. http://localhost:11434")
        self.api_base.setAccessibleName("API base")
        self.api_base.editingFinished.connect(lambda: self._show_key(self._model_id()))
        form.addRow("API base", self.api_base)
        self.api_key = QLineEdit(model_tab)
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setAccessibleName("API key")
        # Never disabled: a click on a disabled field leaves the focus where it was (the model's name), and a key
        # typed next landed there, saved in config.yaml. When no key is wanted it is read-only and looks it.
        self.api_key.setObjectName("KeyField")
        form.addRow("API key", self.api_key)
        self.key_note = QLabel("", model_tab)
        self.key_note.setWordWrap(True)
        self.key_note.setObjectName("Muted")
        form.addRow("", self.key_note)
        hint = QLabel("Keys are kept in your system keyring, or without one in a file only you can read (or read from "
                      "the environment) — never in the configuration file, the database, exports or logs.", model_tab)
        hint.setWordWrap(True)
        hint.setObjectName("Muted")
        form.addRow("", hint)
        self.context_window = QSpinBox(model_tab)
        self.context_window.setRange(0, 10_000_000)
        self.context_window.setSingleStep(1024)
        self.context_window.setSpecialValueText("Ask the server or litellm")
        self.context_window.setSuffix(" tokens")
        self.context_window.setToolTip("The model's context window, when neither its server nor litellm says it "
                                       "(llm.context_window). Long conversations are compacted before it is full.")
        form.addRow("Context window", self.context_window)
        self.local_share = QSpinBox(model_tab)
        self.local_share.setRange(0, 90)
        self.local_share.setSingleStep(5)
        self.local_share.setSpecialValueText("No limit")
        self.local_share.setSuffix(" % of the window")
        self.local_share.setAccessibleName("Local answer limit")
        self.local_share.setToolTip("A local model's answer is held to this share of its context window when no "
                                    "max_tokens is set (llm.local_max_tokens_share), so a looping small model "
                                    "cannot write until the window is full. 0: no limit.")
        form.addRow("Local answer limit", self.local_share)
        self.compaction_model = QLineEdit(model_tab)
        self.compaction_model.setPlaceholderText("Empty: the model above summarises, e.g. openai/gpt-4o-mini")
        self.compaction_model.setToolTip("The model that summarises older messages when a conversation outgrows "
                                         "the context window (llm.compaction_model): a cheaper one saves money")
        form.addRow("Compaction model", self.compaction_model)
        self.vision = QComboBox(model_tab)
        for label, value in (("As litellm or the server says", None), ("Yes: it takes images", True),
                             ("No: it does not take images", False)):
            self.vision.addItem(label, value)
        self.vision.setAccessibleName("Images")
        self.vision.activated.connect(self._vision_picked)
        #: ``llm.vision`` in the user's own file (what Settings writes), as merged from every layer, the
        #: configuration (for where a value came from), and the choices made here, by model.
        self._vision_own: Any = None
        self._vision_merged: Any = None
        self._vision_config: Any = None
        self._local_share: Any = None
        self._vision_chosen: dict[str, bool | None] = {}
        form.addRow("Images", self.vision)
        self._add_tab(model_tab, "Model")

        # -- approvals -------------------------------------------------------------------------
        approval_tab = QWidget(self)
        al = QVBoxLayout(approval_tab)
        intro = QLabel("Rules decide whether a tool runs without asking (allow), asks you first (ask) or is "
                       "refused (deny). The most specific matching rule wins; * matches anything. An MCP tool may be "
                       "named as robots see it (files__wipe) or, with its server, by its own name. The rules for "
                       "write_file and delete_file apply to every tool that writes or deletes (apply_patch, "
                       "edit_file, …); the strictest decision wins. Without a rule: read-only tools are allowed, "
                       "destructive tools ask, and MCP tools ask unless their server's annotations are trusted "
                       "(Settings › MCP servers). For run_command, Command names the commands: a glob or the first "
                       "words; ticked, exactly that command.", approval_tab)
        intro.setWordWrap(True)
        al.addWidget(intro)
        self.rules = QTableWidget(0, 5, approval_tab)
        self.rules.setHorizontalHeaderLabels(["Robot", "Server", "Tool", "Command", "Action"])
        header = self.rules.horizontalHeaderItem(3)
        if header is not None:
            header.setToolTip(COMMAND_TIP)
        self.rules.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.rules.verticalHeader().setVisible(False)
        self.rules.setAccessibleName("Approval rules")
        self.rules.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        al.addWidget(self.rules, 1)
        self.rules.itemChanged.connect(self._rule_changed)
        self.rule_problems = QLabel("", approval_tab)
        from ui import theme

        self.rule_problems.setStyleSheet(f"color: {theme.colors().warning};")
        self.rule_problems.setWordWrap(True)
        self.rule_problems.setAccessibleName("Approval rules that match no tool")
        self.rule_problems.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.rule_problems.setVisible(False)
        al.addWidget(self.rule_problems)
        self.empty_write_is_delete = QCheckBox("Emptying a file counts as deleting it (the rules for delete_file "
                                               "apply)", approval_tab)
        al.addWidget(self.empty_write_is_delete)
        row = QHBoxLayout()
        add = QPushButton("Add rule", approval_tab)
        add.clicked.connect(lambda: self._add_rule("*", "*", "*", "ask"))
        remove = QPushButton("Remove rule", approval_tab)
        remove.clicked.connect(self._remove_rule)
        row.addWidget(add)
        row.addWidget(remove)
        row.addStretch(1)
        self.policy_path = QLabel("", approval_tab)
        self.policy_path.setObjectName("Muted")
        row.addWidget(self.policy_path)
        al.addLayout(row)
        self._add_tab(approval_tab, "Approvals")

        # -- general ---------------------------------------------------------------------------
        general = QWidget(self)
        gf = QFormLayout(general)
        self.review = QComboBox(general)
        for mode, label in (("review", "Review every change before it is written"),
                            ("auto", "Apply changes automatically (undo stays available)"),
                            ("readonly", "Read only: never write files")):
            self.review.addItem(label, mode)
        self.review.setAccessibleName("File changes")
        gf.addRow("File changes", self.review)
        self.without_sandbox = QCheckBox("Where no sandbox can be made, run this folder's commands without one, "
                                         "asking me every time", general)
        self.without_sandbox.setAccessibleName("Run commands without a sandbox in this folder")
        self.without_sandbox.setToolTip(
            "Off by default. Commands (run_command) normally run only in a sandbox that cannot write the folder or "
            "reach the network. Where none can be made (macOS, Windows, a kernel without user namespaces), this "
            "lets them run directly in the open folder: they can change or delete its files and reach the network. "
            "You are asked before every command, whatever the approval rules say. Kept in your own trust file, "
            "never in the folder.")
        gf.addRow("Commands", self.without_sandbox)
        self.theme = QComboBox(general)
        self.theme.addItem("Light", "light")
        self.theme.addItem("Dark", "dark")
        self.theme.setAccessibleName("Theme")
        gf.addRow("Theme", self.theme)
        self.notifications = QCheckBox("Tell me when a long run ends or needs my approval while the window is in "
                                       "the background", general)
        self.notifications.setAccessibleName("Desktop notifications")
        gf.addRow("Notifications", self.notifications)
        self._add_tab(general, "General")
        self.mcp_page: Any = None
        self._add_mcp_page()

        self.problem = QLabel("", self)
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #cf222e;")
        self.problem.setVisible(False)
        layout.addWidget(self.problem)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel,
                                   self)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        size_to_screen(self, PREFERRED_SIZE)

    def _add_tab(self, page: QWidget, title: str, *, scroll: bool = True) -> None:
        """A tab whose page scrolls when the dialog is smaller than it (Save and Cancel stay on the screen)."""
        if not scroll:
            self._pages[page] = page
            self.tabs.addTab(page, title)
            return
        area = QScrollArea(self.tabs)
        area.setWidgetResizable(True)
        area.setFrameShape(QFrame.Shape.NoFrame)
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        area.setWidget(page)
        self._pages[page] = area
        self.tabs.addTab(area, title)

    # -- the available models -------------------------------------------------------------------
    def _add_model_list_row(self, form: QFormLayout, parent: QWidget) -> None:
        """Under the model: what the local server and the providers with a key offer (loaded in the
        background; :mod:`workspace.providers.listing`), a Refresh button, and why a source failed."""
        row = QHBoxLayout()
        self.models_note = QLabel("", parent)
        self.models_note.setWordWrap(True)
        self.models_note.setObjectName("Muted")
        self.models_note.setAccessibleName("Available models")
        row.addWidget(self.models_note, 1)
        self.refresh_models = QPushButton("Refresh", parent)
        self.refresh_models.setAccessibleName("Refresh the list of models")
        self.refresh_models.setToolTip("Ask the local server (API base) and litellm again which models are available")
        self.refresh_models.clicked.connect(lambda: self.load_models(refresh=True))
        row.addWidget(self.refresh_models, 0, Qt.AlignmentFlag.AlignTop)
        form.addRow("", row)
        #: Listed model id -> the server it came from (a local server's models).
        self.listed_bases: dict[str, str | None] = {}
        self._models_task: Any = None
        self._preset_count = self.model.count()

    def load_models(self, *, refresh: bool = False) -> None:
        """List the available models in a qasync task (the dialog never waits for a server)."""
        tasks = getattr(self.controller, "tasks", None)
        if tasks is None or (self._models_task is not None and not self._models_task.done()):
            return
        self.models_note.setText("Looking for models…")
        self.refresh_models.setEnabled(False)
        model, base = self._model_id() or None, self.api_base.text().strip() or None
        self._models_task = tasks.spawn(self._load_models(model, base, refresh), name="settings-models")

    async def _load_models(self, model: str | None, base: str | None, refresh: bool) -> None:
        from workspace.providers.listing import ModelListing, list_models

        try:
            listing = await list_models(None, model=model, api_base=base, refresh=refresh)
        except Exception as exc:  # list_models reports its failures as reasons: this is a safety net
            log.warning("listing the models failed: %s", exc)
            listing = ModelListing()
        try:
            self.show_models(listing)
        except RuntimeError:  # the dialog was closed and deleted meanwhile: nobody to tell
            pass

    def show_models(self, listing: ModelListing) -> None:
        """Offer ``listing``'s models after the presets (the typed text stays), and say what failed."""
        from ui.widgets.common import signals_blocked

        text = self.model.currentText()
        with signals_blocked(self.model):
            while self.model.count() > self._preset_count:
                self.model.removeItem(self.model.count() - 1)
            presets = {self.model.itemData(i) for i in range(self._preset_count)}
            self.listed_bases = {}
            if listing.models:
                self.model.insertSeparator(self.model.count())
            for entry in listing.models:
                if entry.id in presets:
                    continue
                self.listed_bases[entry.id] = entry.api_base
                label = entry.id + (f"  ({entry.detail})" if entry.detail else "")
                self.model.addItem(label, entry.id)
            index = self.model.findText(text)
            if index >= 0:
                self.model.setCurrentIndex(index)
            else:
                self.model.setEditText(text)
        count = len(listing.models)
        sources = ", ".join(s.name for s in listing.sources if s.models)
        lines = [f"{count} model{'s' if count != 1 else ''} available ({sources})." if count else
                 "No models listed: configure a local server (API base) or set a provider's API key."]
        lines += [f"⚠ {problem}" for problem in listing.problems]
        self.models_note.setText("\n".join(lines))
        self.refresh_models.setEnabled(True)

    def _add_mcp_page(self) -> None:
        """The MCP servers page (saved as it is edited, not by Save)."""
        try:
            from workspace.mcp import default_manager
        except ImportError:  # pragma: no cover - the mcp SDK is a dependency
            return
        from ui.settings.mcp_servers import McpServersPage

        tasks = getattr(self.controller, "tasks", None)
        if tasks is None:
            return
        self.mcp_page = McpServersPage(default_manager(), tasks.spawn, self)
        self._add_tab(self.mcp_page, "MCP servers", scroll=False)  # its form scrolls by itself

    def show_mcp_page(self) -> None:
        if self.mcp_page is not None:
            self.mcp_page.load()
            self.tabs.setCurrentWidget(self._pages[self.mcp_page])

    # -- loading -----------------------------------------------------------------------------------
    def load(self) -> None:
        config = self.controller.config
        model = config.get("llm.model") or ""
        index = self.model.findData(model)
        if index >= 0:
            self.model.setCurrentIndex(index)
        else:
            self.model.setEditText(model)
        self.api_base.setText(config.get("llm.api_base") or "")
        self.api_key.clear()
        window = config.get("llm.context_window")
        self.context_window.setValue(window if isinstance(window, int) else 0)
        # A window per model (a mapping) is edited in the file: shown, not overwritten.
        self.context_window.setEnabled(not isinstance(window, dict))
        self.compaction_model.setText(config.get("llm.compaction_model") or "")
        self._local_share = config.get("llm.local_max_tokens_share")
        share = self._local_share if isinstance(self._local_share, int | float) else 0.25
        self.local_share.setValue(round(float(share) * 100))
        self._vision_config = config
        self._vision_merged = config.get("llm.vision")
        self._vision_own = _own_setting("llm.vision")
        self._vision_chosen = {}
        self._on_model_changed(self.model.currentText())
        self.load_models()
        self.review.setCurrentIndex(max(0, self.review.findData(config.get("review.mode", "review"))))
        self.theme.setCurrentIndex(max(0, self.theme.findData(config.get("ui.theme", "light"))))
        self.notifications.setChecked(bool(config.get("ui.notifications", True)))
        folder = self._folder()
        self.without_sandbox.setEnabled(folder is not None)
        if folder is not None:
            from workspace import trust

            self.without_sandbox.setChecked(trust.runs_without_sandbox(folder))
        else:
            self.without_sandbox.setChecked(False)
            self.without_sandbox.setToolTip("Open a folder first (File > Open Folder): this is a setting of a folder.")
        self.rules.setRowCount(0)
        policy = self._policy()
        for rule in policy.rules if policy is not None else []:
            self._add_rule(rule.robot, rule.server, rule.tool, rule.action, rule.command, exact=rule.exact)
        self.empty_write_is_delete.setChecked(bool(policy is not None and policy.empty_write_is_delete))
        self._show_rule_problems()
        from workspace import paths

        self.policy_path.setText(str(paths.approval_policy_file()))
        self.problem.setVisible(False)

    def _policy(self) -> ApprovalPolicy | None:
        workspace = self.controller.workspace
        return workspace.approval.policy if workspace is not None else None

    def _model_id(self) -> str:
        data = self.model.currentData()
        text = self.model.currentText().strip()
        if data is not None and self.model.itemText(self.model.currentIndex()) == text:
            return str(data)
        return "" if text.startswith("Offline demo") else text

    def _vision_fixed_by(self, model: str) -> str | None:
        """The layer above the user's file (the folder's configuration, an environment variable) that says
        whether ``model`` takes images, or None (the user's file says it, or nobody)."""
        from workspace import paths

        config, merged = self._vision_config, self._vision_merged
        if config is None or merged is None:
            return None
        if isinstance(merged, Mapping):
            bare = model.split("/", 1)[1] if "/" in model else model
            keys = [f"llm.vision.{k}" for k in (model, bare) if isinstance(merged.get(k), bool)][:1]
        else:
            keys = ["llm.vision"]
        # A mapping set whole by one layer is recorded under llm.vision; keys merged into it, under their own.
        source = (config.sources.get(keys[0]) or config.sources.get("llm.vision")) if keys else None
        return source if source and source != str(paths.user_config_file()) else None

    def _show_vision(self, model: str) -> None:
        """What ``llm.vision`` says of ``model`` (the model field's), or the choice made here for it."""
        from workspace.attachments import vision_setting

        fixed = self._vision_fixed_by(model) if model else None
        said = self._vision_chosen[model] if model in self._vision_chosen else (
            vision_setting(self._vision_merged, model) if model else None)
        self.vision.setCurrentIndex(0 if said is None else max(0, self.vision.findData(said)))
        self.vision.setEnabled(bool(model) and fixed is None)
        if fixed is not None:
            tip = f"Said in {fixed} (llm.vision): change it there"
        elif isinstance(self._vision_own, bool):
            tip = ("For every model (llm.vision: true/false in your configuration file; a mapping of model ids "
                   "says it per model)")
        else:
            tip = ("Whether the model above takes images (llm.vision, kept per model: a thread switched to another "
                   "model asks about that one); images go only to a model that does, and a local server's model "
                   "is otherwise not known")
        self.vision.setToolTip(tip)

    def _vision_picked(self, _index: int) -> None:
        model = self._model_id()
        if model:
            self._vision_chosen[model] = self.vision.currentData()

    def _vision_to_save(self) -> tuple[bool, Any]:
        """``(changed, value)`` of ``llm.vision`` for the user's file: the choices made here recorded per model
        on top of what the file says (never what the folder's configuration adds). A true/false for every
        model, written in the file, stays one: the choice changes it for every model."""
        own, chosen = self._vision_own, self._vision_chosen
        if not chosen:
            return False, own
        if isinstance(own, bool):
            every = list(chosen.values())[-1]
            return every != own, every
        per_model = dict(own) if isinstance(own, Mapping) else {}
        for model, choice in chosen.items():
            if choice is None:
                bare = model.split("/", 1)[1] if "/" in model else model
                per_model.pop(model, None)
                per_model.pop(bare, None)
            else:
                per_model[model] = bool(choice)
        value = per_model or None
        return value != (own or None), value

    def _on_model_changed(self, _text: str) -> None:

        model = self._model_id()
        self._show_vision(model)
        if not model:
            self._key_wanted(False, "No key needed")
            self.key_note.setText("The offline demo needs no key.")
            return
        listed_base = getattr(self, "listed_bases", {}).get(model)
        if listed_base:  # a model of a local server's list: that server's address
            self.api_base.setText(listed_base)
        self._show_key(model)

    def _show_key(self, model: str) -> None:
        """The API key field and its note for ``model`` at the API base shown."""
        from workspace import secrets

        if not model:
            return
        prefix = secrets.provider_prefix(model)
        if prefix in secrets.LOCAL_PROVIDERS or model == "openai/local-model":
            if not self.api_base.text():
                self.api_base.setText(LOCAL_BASES.get(prefix, LOCAL_BASES.get(model, "")))
            self._key_wanted(False, "No key needed")
            self.key_note.setText("A local server needs no key; check the API base.")
            return
        var = secrets.key_var_for(model)
        if var is None:
            self._key_wanted(False, "Set in your environment")
            self.key_note.setText("Set the API key variable litellm documents for this provider in your environment.")
            return
        source = secrets.key_source(var)
        from workspace.urls import is_loopback_url

        # An OpenAI-compatible server on this computer (llama.cpp, vLLM, LM Studio): no key unless it asks.
        local = " A server on this computer usually needs none." if is_loopback_url(self.api_base.text()) else ""
        shown = {"environment": f"from the environment: {var}", "keyring": "stored in the system keyring",
                 "file": f"stored in {secrets.keys_file().name}"}
        self._key_wanted(True, f"•••••••• ({shown[source]})" if source else f"Paste your {var}")
        if secrets.keyring_available():
            where = "Stored in the system keyring"
        else:  # a bare Linux desktop, a container: a file only the user can read, as `llm keys` does
            where = f"No system keyring is available here: stored in {secrets.keys_file()} (readable only by you)"
        if source == "environment":  # the environment's key wins over one stored here (secrets.get_key)
            have = f" The key in use comes from the environment ({var}); it wins over one stored here."
        else:
            have = " A key is already set." if source else ""
        self.key_note.setText(f"{where} as {var}.{have}{local}")

    def _key_wanted(self, wanted: bool, placeholder: str) -> None:
        """The key field takes a key, or is read-only and looks it (greyed: the ``readOnly`` style)."""
        field = self.api_key
        if not wanted:
            field.clear()
        field.setReadOnly(not wanted)
        field.setPlaceholderText(placeholder)
        field.setToolTip("" if wanted else "This model needs no key here")
        field.style().unpolish(field)  # the [readOnly] style follows
        field.style().polish(field)

    def _add_rule(self, robot: str, server: str, tool: str, action: str, command: str | None = None, *,
                  exact: bool = False) -> None:
        """A row of the rules' table; the command's cell is ticked for a rule of exactly that command."""
        row = self.rules.rowCount()
        self.rules.blockSignals(True)  # one check of the rules for the row, below
        try:
            self.rules.insertRow(row)
            for col, value in enumerate((robot, server, tool)):
                self.rules.setItem(row, col, QTableWidgetItem(value))
            item = QTableWidgetItem(command or "")
            item.setToolTip(COMMAND_TIP)
            _command_box(item, checked=exact)
            self.rules.setItem(row, 3, item)
        finally:
            self.rules.blockSignals(False)
        combo = QComboBox(self.rules)
        combo.addItems(["allow", "ask", "deny"])
        combo.setCurrentText(action)
        self.rules.setCellWidget(row, 4, combo)

    def _rule_changed(self, item: QTableWidgetItem) -> None:
        if item.column() == 3:
            self.rules.blockSignals(True)  # (a command typed or cleared: its box shown or taken away, no second change)
            try:
                _command_box(item)
            finally:
                self.rules.blockSignals(False)
        self._show_rule_problems()

    def _remove_rule(self) -> None:
        for index in sorted({i.row() for i in self.rules.selectedIndexes()}, reverse=True):
            self.rules.removeRow(index)
        self._show_rule_problems()

    def _show_rule_problems(self) -> None:
        """Rules (and servers' autoApprove entries) that match no tool the MCP manager knows, or could not be
        checked because their servers are not running."""
        from workspace.approval import ApprovalPolicy
        from workspace.errors import ConfigurationError

        try:
            from workspace.catalog import list_robots
            from workspace.mcp import default_manager
            from workspace.mcp.policy_check import approval_problems, local_tool_names

            robots = [r.name for r in list_robots(getattr(self.controller, "folder", None))]
            problems = approval_problems(ApprovalPolicy.from_list(self.rule_dicts()), default_manager(),
                                         local=local_tool_names(robots))
        except ConfigurationError as exc:
            problems = [str(exc)]
        except ImportError:  # without the MCP extra: nothing to check against
            problems = []
        self.rule_problems.setText("\n".join(problems))
        self.rule_problems.setVisible(bool(problems))

    def rule_dicts(self) -> list[dict[str, Any]]:
        """The table's rules as the policy file writes them (a rule's command, and whether it is exact, kept:
        a command's allow saved without its command would allow every command)."""
        out = []
        for row in range(self.rules.rowCount()):
            values = []
            for col in range(3):
                item = self.rules.item(row, col)
                values.append((item.text().strip() if item is not None else "") or "*")
            combo = self.rules.cellWidget(row, 4)
            action = combo.currentText() if isinstance(combo, QComboBox) else "ask"
            rule: dict[str, Any] = {"action": action}
            for key, value in zip(("robot", "server", "tool"), values, strict=True):
                if value != "*":
                    rule[key] = value
            command_item = self.rules.item(row, 3)
            command = command_item.text().strip() if command_item is not None else ""
            if command:
                rule["command"] = command
                if command_item is not None and command_item.checkState() == Qt.CheckState.Checked:
                    rule["exact"] = True
            out.append(rule)
        return out

    # -- saving ------------------------------------------------------------------------------------
    def save(self) -> None:
        from workspace import paths, secrets
        from workspace.approval import ApprovalPolicy
        from workspace.errors import ConfigurationError

        model = self._model_id()
        values: dict[str, Any] = {
            "llm.model": model or None,
            "llm.api_base": self.api_base.text().strip() or None,
            "review.mode": self.review.currentData(),
            "ui.theme": self.theme.currentData(),
            "llm.compaction_model": self.compaction_model.text().strip() or None,
            "ui.notifications": self.notifications.isChecked(),
        }
        share = self.local_share.value() / 100
        if not isinstance(self._local_share, int | float) or round(float(self._local_share) * 100) != \
                self.local_share.value():
            values["llm.local_max_tokens_share"] = share  # written when changed: the default stays the default
        vision_changed, vision = self._vision_to_save()
        if vision_changed:
            values["llm.vision"] = vision
        if self.context_window.isEnabled():
            window = self.context_window.value()
            if 0 < window < 256:
                self._fail("The context window is at least 256 tokens (0: ask the server or litellm).")
                return
            values["llm.context_window"] = window or None
        try:
            policy = ApprovalPolicy.from_list(self.rule_dicts(), path=paths.approval_policy_file(),
                                              empty_write_is_delete=self.empty_write_is_delete.isChecked())
        except ConfigurationError as exc:
            self._fail(str(exc))
            return
        key = self.api_key.text().strip()
        if key and model and not self.api_key.isReadOnly():
            var = secrets.key_var_for(model)
            if var is None:
                self._fail("This model's key variable is not known here: set it in your environment instead.")
                return
            try:
                secrets.save_key(var, key)
            except OSError as exc:
                self._fail(f"The key could not be stored in {secrets.keys_file()}: {exc.strerror or exc}. Set {var} "
                           "in your environment instead.")
                return
            self.api_key.clear()
        try:
            save_user_settings(values)
            policy.save()
            folder = self._folder()
            if folder is not None:
                from workspace import trust

                trust.set_run_without_sandbox(folder, self.without_sandbox.isChecked())
        except Exception as exc:
            self._fail(f"Could not save the settings: {exc}")
            return
        workspace = self.controller.workspace
        if workspace is not None:
            workspace.approval.policy = policy
        self.saved.emit(values)
        self.accept()

    def _folder(self) -> Path | None:
        """The open folder (whose "run without a sandbox" this dialog shows), or None."""
        folder = getattr(self.controller, "folder", None)
        return Path(folder) if folder is not None else None

    def _fail(self, message: str) -> None:
        self.problem.setText(message)
        self.problem.setVisible(True)


__all__ = ["SettingsDialog", "save_user_setting", "save_user_settings"]
