"""The robot editor in the window: reached from the picker's button and the palette, typed into with the
keyboard, refuses invalid robots with the problem at the field, saves files the catalog reads, and the
next message uses the saved robot at once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.fakes.app_window import wait_until
from tests.ui.a11y import unnamed_controls
from workspace import paths

CTRL = Qt.KeyboardModifier.ControlModifier


def _keys(text: str) -> None:
    widget = QApplication.focusWidget()
    assert widget is not None
    QTest.keyClicks(widget, text)


async def _settle(editor: Any) -> None:
    await asyncio.sleep(0.25)  # the checks run 200 ms after the last edit
    editor.refresh_checks()


async def test_new_robot_by_keyboard_saves_a_file_the_next_message_uses(desktop: Any, provider: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    w = desktop.window
    assert "robot_editor" in w.commands.by_name and "new_robot" in w.commands.by_name
    w.commands.by_name["new_robot"].trigger()
    editor = w.robots.editor
    assert editor is not None and editor.isVisible()
    for tab in range(editor.form.count()):  # every tab's controls have a name a screen reader says
        editor.form.setCurrentIndex(tab)
        assert unnamed_controls(editor) == [], editor.form.tabText(tab)
    editor.form.setCurrentIndex(0)
    await wait_until(lambda: QApplication.focusWidget() is editor.form.name, what="the name field's focus")
    _keys("haiku-bot")
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    _keys("Answers in haiku")
    editor.form.body.setPlainText("You answer in haiku about {{ topic | default('the sea') }}.")
    await _settle(editor)
    assert editor.preview.toPlainText() == "You answer in haiku about the sea."
    editor.values.setText("topic: mountains")
    await _settle(editor)
    assert editor.preview.toPlainText() == "You answer in haiku about mountains."
    QTest.keyClick(editor.form.name, Qt.Key.Key_S, CTRL)
    path = paths.user_robots_dir() / "haiku-bot.md"
    assert path.is_file() and "description: Answers in haiku" in path.read_text(encoding="utf-8")
    assert not editor.dirty
    # The window lists it, new threads talk to it, and the next message goes to it with its prompt.
    assert w.robot_model.row_of("haiku-bot", "robot") >= 0
    assert desktop.controller.robot_name == "haiku-bot"
    provider.enqueue("Waves fold into foam")
    w.runs.send("a poem please")
    await wait_until(lambda: desktop.controller.idle and provider.history, what="the run")
    assert "You answer in haiku about the sea." in str(provider.history[-1])


async def test_an_invalid_robot_is_refused_with_the_problem_at_its_field(desktop: Any) -> None:
    w = desktop.window
    editor = w.robots.open_editor(new=True)
    editor.form.name.setText("bad name!")
    editor.form.settings["temperature"].control.setText("7")  # type: ignore[attr-defined]
    await _settle(editor)
    assert not editor.save()
    assert "cannot be a file name" in editor.form.problem_labels["name"].text()
    shown = editor.form.problem_labels["temperature"].text()
    assert shown.startswith("line ") and "out of range" in shown
    assert editor.banner.isVisible() and "2 problems" in editor.banner.text()
    assert not list(paths.user_robots_dir().glob("*.md")) if paths.user_robots_dir().exists() else True
    editor.form.name.setText("fine")
    editor.form.settings["temperature"].control.setText("0.5")  # type: ignore[attr-defined]
    editor.form.body.setPlainText("{% if %}")
    await _settle(editor)
    assert not editor.save() and "cannot render" in editor.form.problem_labels["body"].text()
    assert editor.preview_problem.isVisible()
    editor.dirty = False


async def test_shipped_robots_duplicate_to_edit_and_delete_asks_first(desktop: Any,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    w = desktop.window
    editor = w.robots.open_editor()
    assert editor.draft.read_only and editor.read_only_bar.isVisible() and editor.form.body.isReadOnly()
    assert not editor.dirty  # showing a robot is no edit
    assert not editor.save()
    editor.copy_button.click()
    copy_name = editor.form.name.text()
    assert copy_name.endswith("-copy") and not editor.draft.read_only
    assert editor.list_selection() == []  # the copy is not the shipped robot
    assert editor.save()
    path = paths.user_robots_dir() / f"{copy_name}.md"
    assert path.is_file()
    assert not editor.dirty and editor.status.text().startswith("Saved")
    assert editor.list_selection() == [copy_name]
    answers: list[bool] = [False, True]
    monkeypatch.setattr(editor, "_confirm", lambda *a, **k: answers.pop(0))
    editor.delete_robot()
    assert path.is_file()  # "No"
    editor.delete_robot()
    assert not path.exists() and w.robot_model.row_of(copy_name, "robot") < 0


async def test_the_approval_choice_goes_to_the_policy(desktop: Any) -> None:
    w = desktop.window
    editor = w.robots.open_editor(new=True)
    editor.form.name.setText("careful")
    editor.form.approval.setCurrentIndex(editor.form.approval.findData("ask"))
    await _settle(editor)
    assert editor.save()
    policy = desktop.controller.workspace.approval.policy
    assert any((r.robot, r.tool, r.action) == ("careful", "*", "ask") for r in policy.rules)
    assert "careful" in paths.approval_policy_file().read_text(encoding="utf-8")


async def test_the_editor_fits_a_small_screen(desktop: Any) -> None:
    editor = desktop.window.robots.open_editor()
    screen = editor.screen().availableGeometry()
    assert editor.width() <= screen.width() and editor.height() <= screen.height()
    assert editor.minimumSizeHint().width() <= 800
    assert isinstance(desktop.window.robot_edit_button.accessibleName(), str)
    assert Path(editor.draft.path or "").suffix == ".md"


async def test_esc_closes_the_editor_and_unsaved_changes_ask_first(desktop: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    editor = desktop.window.robots.open_editor(new=True)
    asked: list[str] = []
    answers = [False, True]

    def confirm(question: str, *_a: Any, **_k: Any) -> bool:
        asked.append(question)
        return answers.pop(0)

    monkeypatch.setattr(editor, "_confirm", confirm)
    await wait_until(lambda: QApplication.activeWindow() is editor, what="the editor to be the active window")
    QTest.keyClick(editor.form.name, Qt.Key.Key_Escape)
    assert editor.isVisible() and asked == ["Close without saving?"]  # "No": it stays
    QTest.keyClick(editor.form.name, Qt.Key.Key_Escape)
    assert not editor.isVisible()
    editor = desktop.window.robots.open_editor()  # a saved (shipped) robot: Esc closes at once
    await wait_until(lambda: QApplication.activeWindow() is editor, what="the editor to be the active window")
    QTest.keyClick(editor.robot_list, Qt.Key.Key_Escape)
    assert not editor.isVisible() and len(asked) == 2


async def test_preview_values_that_are_an_alias_bomb_are_refused(desktop: Any, provider: Any) -> None:
    """The preview values are YAML a person types: read within workspace.yaml_limits (a one-line "billion
    laughs" is a problem under the preview, not minutes of rendering 387 million strings)."""
    w = desktop.window
    w.commands.by_name["new_robot"].trigger()
    editor = w.robots.editor
    assert editor is not None
    editor.form.body.setPlainText("About {{ topic }}.")
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for name, previous in zip("bcdefghi", "abcdefgh", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    editor.values.setText("{" + ", ".join(levels) + ", topic: *i}")
    await _settle(editor)
    assert "billion laughs" in editor.preview_problem.text()
    assert editor.preview.toPlainText() == "About ."


async def test_the_editor_shows_the_robots_skills_in_order_and_the_agent_skills(desktop: Any) -> None:
    """Template skills as a run expands them (a skill's own skills first), a missing one named, the SKILL.md
    skills of the catalog, and where hooks come from."""
    skills = paths.config_dir() / "templates" / "skills"
    skills.mkdir(parents=True, exist_ok=True)
    (skills / "brief.md").write_text("---\nname: brief\n---\nBe brief.\n", encoding="utf-8")
    (skills / "tone.md").write_text("---\nname: tone\nskills: [brief]\n---\nBe kind.\n", encoding="utf-8")
    agent = paths.config_dir() / "templates" / "summarise"
    agent.mkdir(parents=True)
    (agent / "SKILL.md").write_text("---\nname: summarise\ndescription: Summarise long texts\n---\nSummarise.\n",
                                    encoding="utf-8")
    editor = desktop.window.robots.open_editor(new=True)
    editor.form.settings["skills"].set_value(["tone"])
    await _settle(editor)
    text = editor.form.skills_text()
    assert text.index("brief") < text.index("tone") < text.index("Agent skills")  # brief's text goes first
    assert "summarise Summarise long texts" in " ".join(text.split())
    assert "Hooks" in text
    editor.form.settings["skills"].set_value(["tone", "nowhere"])
    await _settle(editor)
    assert "nowhere not found" in " ".join(editor.form.skills_text().split())
    editor.form.settings["skills"].set_value(None)
    await _settle(editor)
    assert "Template skills" in editor.form.skills_text() and "brief" not in editor.form.skills_text()
