"""``robotlab schema`` and the JSON Schemas shipped in resources/schemas/ (for editors)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from workspace.cli import main
from workspace.config import default_config_text
from workspace.schemas.export import json_schema, schema_text, shipped_dir
from workspace.templates import Template

ROOT = Path(__file__).resolve().parent.parent
OURS = ("robot", "config", "mcp", "network", "eval")


@pytest.mark.parametrize("kind", OURS)
def test_the_shipped_schema_files_are_up_to_date(kind: str) -> None:
    path = shipped_dir() / f"{kind}.json"
    assert path == ROOT / "resources" / "schemas" / f"{kind}.json"
    assert path.read_text(encoding="utf-8") == schema_text(kind), (
        f"{path} is out of date: run `robotlab schema {kind} --out resources/schemas`")
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))


def test_the_shipped_files_follow_their_schemas() -> None:
    robot = jsonschema.Draft202012Validator(json_schema("robot"))
    for path in (ROOT / "resources" / "robots").glob("*.md"):
        assert not list(robot.iter_errors(Template.load(path).metadata)), path
    assert list(robot.iter_errors({"temprature": 0.3}))  # what the loader refuses, editors flag too
    mcp = jsonschema.Draft202012Validator(json_schema("mcp"))
    example = yaml.safe_load((ROOT / "resources" / "mcp" / "example-config.yaml").read_text(encoding="utf-8"))
    assert not list(mcp.iter_errors(example))
    config = jsonschema.Draft202012Validator(json_schema("config"))
    assert not list(config.iter_errors(yaml.safe_load(default_config_text())))
    assert list(config.iter_errors({"llm": {"temperature": 7}}))
    assert list(config.iter_errors({"mcpServers": {"a": {"command": 5}}}))
    evals = jsonschema.Draft202012Validator(json_schema("eval"))
    example = yaml.safe_load((ROOT / "examples" / "evals" / "support.yaml").read_text(encoding="utf-8"))
    assert not list(evals.iter_errors(example))
    assert list(evals.iter_errors({"robot": "a", "cases": [{"name": "x", "message": "y", "expect": [{"contain": 1}]}]}))


def test_robotlab_schema_prints_one_and_writes_several(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "robot"]) == 0
    assert json.loads(capsys.readouterr().out) == json_schema("robot")
    assert main(["schema", "config", "mcp", "--out", str(tmp_path / "out")]) == 0
    written = capsys.readouterr().out.split()
    assert written == [str(tmp_path / "out" / "config.json"), str(tmp_path / "out" / "mcp.json")]
    assert (tmp_path / "out" / "mcp.json").read_text(encoding="utf-8") == schema_text("mcp")


def test_robotlab_schema_says_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 2
    assert "name one schema to print (robot, config, mcp, network, eval)" in capsys.readouterr().err
    assert main(["schema", "robots"]) == 2
    assert "no schema named 'robots'" in capsys.readouterr().err
