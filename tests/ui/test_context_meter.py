"""The context meter in the status bar: used / window with the share, live while streaming."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ui.chat.composer.context_meter import ContextMeter, short_tokens
from workspace import events as ev


def usage(used: int, window: int = 2048, *, estimated: bool = True) -> ev.ContextUsage:
    return ev.ContextUsage(run_id="r1", robot="assistant", used=used, window=window, estimated=estimated,
                           system_tokens=40, tools_tokens=300, threshold=0.8)


def test_short_token_counts() -> None:
    assert [short_tokens(n) for n in (999, 1000, 1234, 2048, 12_500, 128_000, 1_000_000)] == [
        "999", "1k", "1.2k", "2k", "12k", "128k", "1M"]


def test_the_meter_shows_used_window_and_share(qtbot: Any) -> None:
    meter = ContextMeter()
    qtbot.addWidget(meter)
    assert not meter.isVisibleTo(None) or not meter.label.text()  # nothing counted yet: hidden
    meter.show_usage(usage(1024))
    assert meter.label.text() == "~1k / 2k · 50%"
    assert meter.bar.value() == 500
    assert "1,024 of 2,048 tokens (50%)" in meter.toolTip()
    assert "System prompt 40 · tools 300 · messages 684" in meter.toolTip()
    assert "compacted at 80%" in meter.toolTip()
    meter.show_usage(ev.ContextUsage(run_id="r1", robot="assistant", used=1024, window=2048, system_tokens=40,
                                     tools_tokens=300, biggest_tools={"search_files": 180, "read_file": 90}))
    assert "tools: 300 tokens, biggest: search_files (180), read_file (90)" in meter.toolTip()
    meter.show_usage(usage(1100, estimated=False))  # the server's own count: no "~"
    assert meter.label.text() == "1.1k / 2k · 54%"
    assert "as the server counted" in meter.toolTip()


def test_the_meter_fills_while_the_answer_streams_and_empties_after_compaction(qtbot: Any) -> None:
    meter = ContextMeter()
    qtbot.addWidget(meter)
    meter.show_usage(usage(1500, estimated=False))
    meter.add_streamed("x" * 300)  # about 100 tokens of answer
    meter.add_streamed("y" * 300)
    assert meter.used == 1700
    assert meter.label.text().startswith("~")
    assert meter._level() == "full"  # past 80 %: shown in the error colour
    meter.show_compacted(ev.ContextCompacted(run_id="r1", robot="assistant", summary="s", replaced_count=20,
                                             newly_replaced=20, tokens_before=1700, tokens_after=600, window=2048))
    assert meter.used == 600
    assert meter._level() == "ok"
    assert "Compacted: 20 earlier messages summarised (1,700 → 600 tokens)" in meter.toolTip()
    meter.show_usage(None)  # another thread, never counted
    assert meter.label.text() == "" and meter.used == 0


async def test_the_status_bar_meter_follows_the_bridge(desktop: Any) -> None:
    status = desktop.window.status
    desktop.window.bridge.feed(usage(512))
    desktop.window.bridge.flush()
    assert status.context.isVisible()
    assert status.context.label.text() == "~512 / 2k · 25%"
    status.show_thread_context(None)  # a new thread: nothing to show
    assert not status.context.isVisible()


async def test_settings_choose_the_window_and_the_compaction_model(desktop: Any) -> None:
    from workspace import paths
    from workspace.config import load_config

    window = desktop.window
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    dialog.context_window.setValue(100)
    dialog.save()
    assert dialog.problem.isVisible() and "at least 256" in dialog.problem.text()
    dialog.context_window.setValue(16384)
    dialog.compaction_model.setText("openai/gpt-4o-mini")
    dialog.save()
    config = load_config()
    assert config.get("llm.context_window") == 16384
    assert config.get("llm.compaction_model") == "openai/gpt-4o-mini"
    assert "compaction_model: openai/gpt-4o-mini" in paths.user_config_file().read_text(encoding="utf-8")



def _pick(combo: Any, value: Any) -> None:
    """Choose ``value`` in a combo box as a person does (``activated`` follows)."""
    index = combo.findData(value) if value is not None else 0
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


async def test_settings_say_whether_the_model_takes_images(desktop: Any, tmp_path: Path) -> None:
    """Settings › Model › Images is said of the model above and kept for it alone: a thread switched to
    another model asks about that one (litellm's map, or its own line)."""
    from workspace import paths
    from workspace.config import load_config

    window = desktop.window

    def dialog_for(model: str | None = None) -> Any:
        window.settings_flow.open_settings()
        dialog = window.settings_flow.dialog
        if model is not None:
            dialog.model.setCurrentText(model)
        return dialog

    dialog = dialog_for("ollama/llava")
    assert dialog.vision.currentData() is None and dialog.vision.isEnabled()
    _pick(dialog.vision, True)
    dialog.model.setCurrentText("ollama/llava-13b")  # typing on in the model field…
    dialog.model.setCurrentText("ollama/llava")  # …and back: the choice made for it stays
    assert dialog.vision.currentData() is True
    dialog.save()
    assert load_config().get("llm.vision") == {"ollama/llava": True}
    assert "ollama/llava: true" in paths.user_config_file().read_text(encoding="utf-8")
    dialog = dialog_for()
    assert dialog.model.currentText() == "ollama/llava" and dialog.vision.currentData() is True
    dialog.model.setCurrentText("ollama/qwen2.5")  # another model: nothing said of it yet
    assert dialog.vision.currentData() is None
    _pick(dialog.vision, False)
    dialog.save()
    assert load_config().get("llm.vision") == {"ollama/llava": True, "ollama/qwen2.5": False}
    # Back to "as litellm or the server says": that model's line goes.
    dialog = dialog_for()
    _pick(dialog.vision, None)
    dialog.save()
    assert load_config().get("llm.vision") == {"ollama/llava": True}

    # A folder's own configuration: what it says is shown, not editable here, and never copied into the
    # user's file when another model is saved.
    folder = tmp_path / "project"
    folder.mkdir()
    project = paths.project_config_file(folder)
    project.parent.mkdir(parents=True, exist_ok=True)
    project.write_text("llm:\n  vision: {ollama/bakllava: true}\n", encoding="utf-8")
    desktop.controller.set_folder(folder)
    dialog = dialog_for("ollama/bakllava")
    assert dialog.vision.currentData() is True and not dialog.vision.isEnabled()
    assert str(project) in dialog.vision.toolTip()
    dialog.model.setCurrentText("ollama/moondream")
    assert dialog.vision.isEnabled()
    _pick(dialog.vision, True)
    dialog.save()
    written = paths.user_config_file().read_text(encoding="utf-8")
    assert "ollama/moondream: true" in written and "bakllava" not in written
    desktop.controller.set_folder(None)

    # Written by hand for every model: shown for each, and changed for every model.
    paths.user_config_file().write_text("llm:\n  model: ollama/llava\n  vision: true\n", encoding="utf-8")
    desktop.controller.reload_config()
    dialog = dialog_for()
    assert dialog.vision.currentData() is True and "every model" in dialog.vision.toolTip()
    dialog.save()
    assert load_config().get("llm.vision") is True
    dialog = dialog_for("ollama/qwen2.5")
    _pick(dialog.vision, False)
    dialog.save()
    assert load_config().get("llm.vision") is False


async def test_settings_say_a_server_on_this_computer_needs_no_key(desktop: Any, monkeypatch: Any) -> None:
    """An OpenAI-compatible server on loopback (llama.cpp, vLLM): the key note says it usually needs none,
    and follows an API base typed afterwards."""
    from workspace import secrets

    monkeypatch.setattr(secrets, "keyring_available", lambda: False)
    window = desktop.window
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    dialog.api_base.setText("http://127.0.0.1:8080/v1")
    dialog.model.setCurrentText("openai/qwen2.5")
    assert "A server on this computer usually needs none" in dialog.key_note.text()
    dialog.api_base.setText("")
    dialog.api_base.editingFinished.emit()
    assert dialog.key_note.text().startswith("No system keyring is available here: stored in ")
    assert dialog.key_note.text().endswith("(readable only by you) as OPENAI_API_KEY.")


def test_the_meter_follows_a_switch_of_theme(qtbot: Any) -> None:
    """The bar is drawn in the theme's colours: after a switch, in the new ones (it kept the old)."""
    from PySide6.QtWidgets import QApplication

    from ui import theme

    app = QApplication.instance()
    theme.apply_theme(app, "light")
    meter = ContextMeter()
    qtbot.addWidget(meter)
    meter.show_usage(usage(100))
    assert theme.LIGHT.border in meter.bar.styleSheet()
    try:
        theme.apply_theme(app, "dark")
        app.processEvents()
        assert theme.DARK.border in meter.bar.styleSheet() and theme.DARK.accent in meter.bar.styleSheet()
    finally:
        theme.apply_theme(app, "light")


async def test_settings_hold_a_local_models_answer_to_a_share_of_the_window(desktop: Any) -> None:
    """Settings › Model › Local answer limit is llm.local_max_tokens_share (default 25 %), written when changed."""
    from workspace import paths
    from workspace.config import load_config

    window = desktop.window
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    assert dialog.local_share.value() == 25 and dialog.local_share.accessibleName() == "Local answer limit"
    dialog.save()
    assert "local_max_tokens_share" not in paths.user_config_file().read_text(encoding="utf-8")
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    dialog.local_share.setValue(40)
    dialog.save()
    assert load_config().get("llm.local_max_tokens_share") == 0.4
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    assert dialog.local_share.value() == 40
    dialog.local_share.setValue(0)
    assert dialog.local_share.text() == "No limit"
    dialog.save()
    assert load_config().get("llm.local_max_tokens_share") == 0
