"""Settings › Model › API key without an OS keyring (a bare Linux desktop, a container): the key is kept in a
file only the user can read, the field says where, it never looks enabled when it is not, and text typed into
it never lands in another field (it once ended up in the model name, saved in config.yaml)."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

KEY = "sk-typed-into-settings-0123456789"


@pytest.fixture
def no_keyring() -> Iterator[None]:
    """What a bare Linux desktop or a container has: no keyring backend at all (keyring's ``fail`` backend)."""
    import keyring
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(before)


@pytest.fixture
def dialog(qtbot: Any, no_keyring: None) -> Any:
    from ui.settings.dialog import SettingsDialog
    from workspace.config import load_config

    controller = SimpleNamespace(config=load_config(), workspace=None, tasks=None)
    found = SettingsDialog(controller)
    qtbot.addWidget(found)
    found.show()
    qtbot.waitExposed(found)
    return found


def test_a_key_typed_without_a_keyring_is_kept_in_a_private_file_never_in_the_configuration(
        dialog: Any, qtbot: Any) -> None:
    from workspace import paths, secrets

    assert not secrets.keyring_available()
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    line = dialog.model.lineEdit()
    line.selectAll()
    line.setFocus()
    qtbot.keyClicks(line, "openai/gpt-4o-mini")  # a person types the model, then clicks the key field ...
    qtbot.mouseClick(dialog.api_key, Qt.MouseButton.LeftButton)
    qtbot.keyClicks(QApplication.focusWidget(), KEY)  # ... and types where the keyboard goes: the focus
    assert dialog.model.currentText() == "openai/gpt-4o-mini", dialog.model.currentText()
    assert dialog.api_key.text() == KEY
    keys_file = secrets.keys_file()
    assert str(keys_file) in dialog.key_note.text() and "readable only by you" in dialog.key_note.text()
    dialog.save()
    config_text = paths.user_config_file().read_text(encoding="utf-8")
    assert KEY not in config_text
    assert "model: openai/gpt-4o-mini" in config_text
    assert stat.S_IMODE(paths.user_config_file().stat().st_mode) == 0o600  # it names servers and keyring entries
    assert secrets.get_key("OPENAI_API_KEY") == KEY
    assert keys_file.parent == paths.config_dir()
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    assert KEY in keys_file.read_text(encoding="utf-8")


@pytest.mark.parametrize("model", ["", "ollama_chat/llama3.1"])
def test_the_key_field_of_a_model_without_a_key_takes_nothing_and_looks_it(dialog: Any, qtbot: Any,
                                                                          model: str) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from workspace import paths

    dialog.setStyleSheet(style_sheet("light"))
    dialog.model.setEditText("openai/gpt-4o-mini")
    dialog._on_model_changed("openai/gpt-4o-mini")
    field = dialog.api_key
    takes_a_key = field.grab().toImage().pixelColor(field.width() // 2, field.height() // 2).name()
    dialog.model.setEditText(model)
    dialog._on_model_changed(model)
    assert field.isReadOnly() and field.placeholderText() == "No key needed"
    looks = field.grab().toImage().pixelColor(field.width() // 2, field.height() // 2).name()
    assert looks != takes_a_key  # greyed: it does not look like a field to type in
    qtbot.mouseClick(field, Qt.MouseButton.LeftButton)
    qtbot.keyClicks(QApplication.focusWidget(), KEY)
    assert KEY not in dialog.model.currentText() and KEY not in dialog.api_base.text()
    dialog.save()
    assert KEY not in paths.user_config_file().read_text(encoding="utf-8")


def style_sheet(name: str) -> str:
    from ui.theme import style_sheet as sheet

    return sheet(name)


def test_a_key_only_in_the_environment_is_said_to_come_from_there(dialog: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_API_KEY set in the environment, nothing stored (no keys.json): the field says where the key comes
    from, not that it is stored."""
    from workspace import secrets

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert not secrets.keys_file().exists()
    dialog.model.setEditText("openai/gpt-4o-mini")
    dialog._on_model_changed("openai/gpt-4o-mini")
    assert dialog.api_key.placeholderText() == "•••••••• (from the environment: OPENAI_API_KEY)"
    assert "comes from the environment (OPENAI_API_KEY)" in dialog.key_note.text()
    assert "stored" not in dialog.api_key.placeholderText()
    monkeypatch.delenv("OPENAI_API_KEY")
    secrets.save_key("OPENAI_API_KEY", KEY)  # now kept in the keys file (no keyring here)
    dialog._on_model_changed("openai/gpt-4o-mini")
    assert dialog.api_key.placeholderText() == "•••••••• (stored in keys.json)"
    assert "A key is already set." in dialog.key_note.text()
