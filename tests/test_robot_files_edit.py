"""The robot editor's Qt-free part: load, write back (comments kept), check, preview, save, delete."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace import paths, robot_files
from workspace.approval import ApprovalPolicy
from workspace.catalog import list_robots
from workspace.errors import ConfigurationError
from workspace.schemas import SchemaError
from workspace.templates import Template

HAND_WRITTEN = """---
# my billing robot
name: billing
description: Answers billing questions   # shown in the picker
tools: [read_file, "*__*"]   # every MCP tool too
temperature: 0.2
x-owner: billing-team
---
You answer billing questions for {{ company | default("ACME") }}.
{# a comment in the body #}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_hand_written_file_keeps_its_comments_and_body_when_one_key_changes(robotlab_home: Path) -> None:
    path = write(paths.user_robots_dir() / "billing.md", HAND_WRITTEN)
    draft = robot_files.load_draft(path)
    assert draft.source == "user" and not draft.read_only
    assert draft.front["tools"] == ["read_file", "*__*"] and draft.front["x-owner"] == "billing-team"
    assert robot_files.render_text(draft) == HAND_WRITTEN  # nothing changed: byte for byte
    draft.front["temperature"] = 0.7
    draft.front["max_turns"] = 5
    text = robot_files.render_text(draft)
    assert "# my billing robot" in text and "# shown in the picker" in text and "# every MCP tool too" in text
    assert "temperature: 0.7" in text and text.index("x-owner") < text.index("max_turns: 5")
    assert "{# a comment in the body #}" in text
    draft.front["temperature"] = None  # left out
    assert "temperature" not in robot_files.render_text(draft)
    template = Template.parse(robot_files.render_text(draft), name="billing")
    assert template.max_turns == 5 and template.metadata["x-owner"] == "billing-team"


def test_check_uses_the_files_schema_with_lines_and_did_you_mean(robotlab_home: Path) -> None:
    draft = robot_files.new_draft("helper")
    draft.front.update({"temprature": 0.3, "max_turns": 0, "context_policy": "squash"})
    problems = robot_files.check(draft)
    by_key = {p.key: p.message for p in problems}
    assert "did you mean 'temperature'?" in by_key["temprature"]
    assert "helper.md:" in by_key["temprature"]  # the file and its line
    assert "max_turns" in by_key and "out of range" in by_key["max_turns"]
    assert "context_policy" in by_key
    with pytest.raises(SchemaError):
        robot_files.save(draft)
    assert not (paths.user_robots_dir() / "helper.md").exists()


def test_names_must_be_file_names() -> None:
    draft = robot_files.new_draft("bad name!")
    assert [p.key for p in robot_files.check(draft)] == ["name"]
    assert robot_files.valid_name("ok-name_1.2") is None


def test_credentials_are_refused_and_the_fix_named(robotlab_home: Path) -> None:
    draft = robot_files.new_draft("leaky")
    draft.front["api_base"] = "http://user:hunter2secret@localhost:8000/v1"
    messages = [p.message for p in robot_files.check(draft)]
    assert any("Settings" in m and "keyring" in m for m in messages)


def test_files_in_the_opened_folder_follow_the_trust_rules(tmp_path: Path, robotlab_home: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    draft = robot_files.new_draft("local")
    draft.front["api_base"] = "https://api.example.com/v1"
    target = robot_files.save_dirs(folder)["project"] / "local.md"
    problems = robot_files.check(draft, folder=folder, target=target)
    assert any(p.key == "api_base" and "not on this machine" in p.message for p in problems)
    assert not robot_files.check(draft, folder=folder, target=paths.user_robots_dir() / "local.md")
    draft.front["api_base"] = "http://localhost:11434"
    path = robot_files.save(draft, folder=folder, where="project")
    assert path == target and [r.source for r in list_robots(folder) if r.name == "local"] == ["project"]


def test_preview_renders_like_a_run_and_reports_errors_as_text() -> None:
    draft = robot_files.new_draft("p")
    draft.body = "Hello {{ who | default('world') }}{% if folder %} in {{ folder }}{% endif %}."
    assert robot_files.preview(draft).text == "Hello world."
    assert robot_files.preview(draft, {"who": "Ada", "folder": "/x"}).text == "Hello Ada in /x."
    draft.body = "{% if %}"
    shown = robot_files.preview(draft)
    assert shown.text == "" and shown.error and "line 1 of the body" in shown.error
    assert any(p.key == "body" for p in robot_files.check(draft))


def test_save_is_atomic_refuses_clashes_and_changes_on_disk(robotlab_home: Path) -> None:
    draft = robot_files.new_draft("writer")
    path = robot_files.save(draft)
    assert path == paths.user_robots_dir() / "writer.md" and draft.path == path
    assert [r.name for r in list_robots()].count("writer") == 1
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ConfigurationError, match="already exists"):
        robot_files.save(robot_files.new_draft("writer"))
    loaded = robot_files.load_draft(path)
    loaded.front["description"] = "Writes"
    path.write_text(path.read_text(encoding="utf-8") + "\nchanged elsewhere\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="changed on disk"):
        robot_files.save(loaded)
    again = robot_files.load_draft(path)
    again.front["description"] = "Writes"
    robot_files.save(again)
    assert "description: Writes" in path.read_text(encoding="utf-8")
    robot_files.delete(again)
    assert not path.exists()


def test_shipped_robots_are_read_only_and_duplicate_to_edit(robotlab_home: Path) -> None:
    shipped = next(r for r in list_robots() if r.source == "shipped")
    draft = robot_files.load_draft(shipped.path)
    assert draft.read_only
    with pytest.raises(ConfigurationError, match="duplicate"):
        robot_files.save(draft)
    with pytest.raises(ConfigurationError):
        robot_files.delete(draft)
    copy = robot_files.duplicate(draft, f"{draft.name}-copy")
    assert not copy.read_only and copy.path is None
    path = robot_files.save(copy)
    text = path.read_text(encoding="utf-8")
    assert f"name: {draft.name}-copy" in text and draft.body.strip()[:40] in text
    assert shipped.path.read_text(encoding="utf-8") == draft.original  # the shipped file untouched


def test_the_settings_come_from_the_schema() -> None:
    from workspace.schemas.robot import FrontMatter

    specs = {s.key: s for s in robot_files.setting_fields()}
    expected = set(FrontMatter.model_fields) - set(robot_files.EDITED_KEYS) - set(robot_files.HIDDEN_KEYS)
    assert set(specs) == expected
    assert specs["temperature"].kind == "number" and specs["temperature"].maximum == 2
    assert specs["max_turns"].kind == "integer" and specs["max_turns"].minimum == 1
    assert specs["context_policy"].kind == "choice" and "compact" in specs["context_policy"].choices
    assert specs["examples"].kind == "list" and specs["output_schema"].kind == "yaml"
    assert all(s.description for s in specs.values())
    assert "read_file" in dict(robot_files.builtin_tools())


def test_the_robots_approval_rule(tmp_path: Path) -> None:
    policy = ApprovalPolicy(path=tmp_path / "approval.yaml")
    policy.set_rule("allow", robot="billing", tool="read_file")
    assert robot_files.robot_approval(policy, "billing") is None
    robot_files.set_robot_approval(policy, "billing", "ask")
    assert robot_files.robot_approval(policy, "billing") == "ask"
    assert ApprovalPolicy.load(tmp_path / "approval.yaml").rules == policy.rules
    robot_files.set_robot_approval(policy, "billing", None)
    assert robot_files.robot_approval(policy, "billing") is None
    assert len(policy.rules) == 1  # the tool's own rule stays


def test_a_field_added_to_the_schema_is_offered_without_code_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import Field

    from workspace.schemas import robot as schema

    class Wider(schema.FrontMatter):
        fallback_models: list[str] | None = Field(None, description="Models to try when the first one fails")
        max_cost: float | None = Field(None, ge=0, description="The most one run may cost, in dollars")

    monkeypatch.setattr(schema, "FrontMatter", Wider)
    specs = {s.key: s for s in robot_files.setting_fields()}
    assert specs["fallback_models"].kind == "list" and "fails" in specs["fallback_models"].description
    assert specs["max_cost"].kind == "number" and specs["max_cost"].minimum == 0
