""""Save as test case": the open thread's first turn as an eval case — its name from the thread's title, its
message the first user message, ``expect`` prefilled with ``tool_called`` for each tool the turn called and
``contains`` of a short phrase of its answer — edited as YAML in a small dialog and appended to the ``cases:``
of an eval file the person picks or creates. The file is checked with :func:`workspace.evals.load_eval_file`
before it is written; a bad edit is refused with the parser's message and nothing is written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workspace.secrets import redact

if TYPE_CHECKING:
    from ui.services import Services
    from workspace.persistence import Store


class CaseError(ValueError):
    """The case or the file it goes to is not valid; the message says what to fix."""


def short_phrase(answer: str, words: int = 4) -> str | None:
    """A few words of the answer's first line that ``contains:`` can look for (None: no answer)."""
    for line in answer.splitlines():
        picked = line.strip().strip("#*>-` ").split()[:words]
        if picked:
            return " ".join(picked).rstrip(".,;:!?")
    return None


def case_from_thread(store: Store, thread_id: str) -> dict[str, Any]:
    """The case a thread makes: name, message and what its first turn showed."""
    from workspace.replay import read_thread

    turns, _, _ = read_thread(store, thread_id)
    if not turns:
        raise CaseError("The thread has no message yet: send one, then save it as a test case.")
    first = turns[0]
    expect: list[dict[str, Any]] = []
    for name in dict.fromkeys(call.name for call in first.calls):
        expect.append({"tool_called": {"name": name}})
    phrase = short_phrase(redact(first.answer))
    if phrase:
        expect.append({"contains": phrase})
    title = store.get_thread(thread_id).display_title.strip() or "case"
    return {"name": title, "message": redact(first.user_text), "expect": expect}


def case_yaml(case: dict[str, Any]) -> str:
    return yaml.safe_dump(case, sort_keys=False, allow_unicode=True, width=100)


def _parse_case(text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CaseError(f"The case is not valid YAML: {exc}") from None
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        raise CaseError("The case must be one mapping with name:, message: and expect: (see the user guide, Evals).")
    return data


def appended_text(existing: str | None, case: dict[str, Any], *, robot: str) -> str:
    """The eval file with ``case`` appended to its ``cases:``; a new file names ``robot``. The file's own text
    (its comments) is kept when ``cases:`` is its last key; otherwise it is written again from its data."""
    item = yaml.safe_dump([case], sort_keys=False, allow_unicode=True, width=100)
    if existing is None or not existing.strip():
        return yaml.safe_dump({"robot": robot}, sort_keys=False, allow_unicode=True) + "cases:\n" + \
            "".join(f"  {line}\n" for line in item.splitlines())
    try:
        data = yaml.safe_load(existing)
    except yaml.YAMLError as exc:
        raise CaseError(f"The eval file is not valid YAML, fix it first: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise CaseError("The eval file has no cases: list to add to; choose an eval file or a new file's name.")
    keys = list(data)
    if keys[-1] == "cases" and data["cases"]:
        text = existing if existing.endswith("\n") else existing + "\n"
        indent = _item_indent(existing)
        candidate = text + "".join(f"{indent}{line}\n" for line in item.splitlines())
        try:
            if yaml.safe_load(candidate).get("cases") == [*data["cases"], case]:
                return candidate
        except (yaml.YAMLError, AttributeError):
            pass
    data["cases"] = [*data["cases"], case]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _item_indent(text: str) -> str:
    """The indentation of the ``- `` items of ``cases:`` (the file's last key): the least indented after it."""
    after = ("\n" + text).split("\ncases:", 1)[-1]
    items = [ln[: len(ln) - len(ln.lstrip(" "))] for ln in after.splitlines() if ln.lstrip(" ").startswith("- ")]
    return min(items, key=len) if items else "  "


def save_case(path: Path, text: str, *, robot: str) -> int:
    """Append the case in ``text`` (YAML) to the eval file at ``path`` (made when missing), checked with
    ``load_eval_file`` first; returns the number of cases the file now has. Raises :class:`CaseError`."""
    from workspace.errors import Error
    from workspace.evals import load_eval_file

    case = _parse_case(text)
    if path.is_dir():
        raise CaseError(f"{path} is a folder: give the eval file's name (a .yaml file).")
    if not path.parent.is_dir():
        raise CaseError(f"The folder {path.parent} does not exist: choose a file in an existing folder.")
    from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

    try:  # a FIFO or a file over the limit is refused at once, never read whole or waited on
        existing = read_text_bounded(path, CONFIG_FILE_BYTES, "eval file") if path.exists() else None
    except (Error, OSError, UnicodeDecodeError) as exc:
        raise CaseError(str(exc)) from None
    candidate = appended_text(existing, case, robot=robot)
    trial = path.with_name(f".{path.name}.new")
    trial.write_text(candidate, encoding="utf-8")
    try:
        spec = load_eval_file(trial)
    except Error as exc:
        trial.unlink(missing_ok=True)
        raise CaseError(str(exc).replace(str(trial), str(path)).replace(trial.name, path.name)) from None
    os.replace(trial, path)
    return len(spec.cases)


class SaveCaseDialog(QDialog):
    """The case as YAML to edit, the eval file to append it to, Save."""

    def __init__(self, text: str, *, robot: str, path: Path | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Save as test case")
        self.robot = robot
        self.saved_to: Path | None = None
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("The case (YAML: name, message, expect — edit what the answer must show):"))
        self.editor = QPlainTextEdit()
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setPlainText(text)
        layout.addWidget(self.editor, 1)
        row = QHBoxLayout()
        row.addWidget(QLabel("Eval file:"))
        self.path_edit = QLineEdit(str(path) if path is not None else "")
        self.path_edit.setPlaceholderText("an eval file to add the case to, or a new file's name (.yaml)")
        row.addWidget(self.path_edit, 1)
        choose = QPushButton("Choose…")
        choose.clicked.connect(self.choose)
        row.addWidget(choose)
        layout.addLayout(row)
        self.error = QLabel("")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.error)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.save_button = QPushButton("Save")
        self.save_button.setDefault(True)
        self.save_button.clicked.connect(self.save)
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(self.reject)
        buttons.addWidget(cancel)
        buttons.addWidget(self.save_button)
        layout.addLayout(buttons)
        self.resize(640, 480)

    def choose(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Add the case to an eval file", self.path_edit.text(),
                                              "Eval files (*.yaml *.yml)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if name:
            self.path_edit.setText(name)

    def save(self) -> bool:
        """Append the case; on a bad case or file, say why and keep the dialog open."""
        where = self.path_edit.text().strip()
        if not where:
            self.error.setText("Choose the eval file to add the case to (or type a new file's name).")
            return False
        path = Path(where).expanduser()
        try:
            count = save_case(path, self.editor.toPlainText(), robot=self.robot)
        except CaseError as exc:
            self.error.setText(f"Not saved: {exc}")
            return False
        except OSError as exc:
            self.error.setText(f"Not saved: could not write {path}: {exc.strerror or exc}")
            return False
        self.saved_to = path
        self.error.setText(f"Saved: {path} has {count} case(s).")
        self.accept()
        return True


def open_save_case(services: Services) -> SaveCaseDialog | None:
    """"Save as test case" on the open thread (a notice when there is none, or it is a network's)."""
    c = services.session
    session = c.session
    if session is None:
        services.notices.toast("Open a thread to save it as a test case.")
        return None
    if getattr(session, "is_network", False):
        services.notices.toast("Only a robot's thread can be saved as a test case.")
        return None
    store = c.require_store()
    try:
        case = case_from_thread(store, session.thread_id)
        robot = store.get_thread(session.thread_id).robot or "assistant"
    except CaseError as exc:
        services.notices.toast(str(exc))
        return None
    except Exception as exc:
        services.notices.banner(f"Could not read the thread: {redact(str(exc))}")
        return None
    dialog = SaveCaseDialog(case_yaml(case), robot=robot, parent=services.shell)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog


__all__ = ["CaseError", "SaveCaseDialog", "appended_text", "case_from_thread", "case_yaml", "open_save_case",
           "save_case", "short_phrase"]
