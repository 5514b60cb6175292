"""RobotLab's script tools (``ScriptTool.from_path``), run as real processes in the real sandbox (bubblewrap):
described by front matter, by a sidecar and by ``--help``; the arguments reach the script; the call is asked
about as the command it runs; what it writes is proposed, not applied; the user's tools folder and a
trusted folder's ``.robotlab/tools/`` are discovered, an untrusted folder's ignored with a notice."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fakes.script_folders import Gate, executable, require_sandbox

from workspace import ScriptTool, trust
from workspace import events as ev
from workspace.changes import ChangeSet
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.script_tools import discover_script_tools, user_tools_dir
from workspace.tools.script import ScriptToolError

require_sandbox()

pytestmark = pytest.mark.timeout(180)

FRONT = """#!/bin/sh
# ---
# description: Write a greeting into a file
# parameters:
#   who: {type: string, description: whom to greet}
# required: [who]
# ---
input=$(cat)
echo "stdin: $input"
who=$(printf %s "$input" | sed 's/.*"who": *"\\([^"]*\\)".*/\\1/')
echo "hello $who" > greeting.txt
echo "wrote greeting.txt"
"""

HELP = """#!/bin/sh
# a comment that is not the description
if [ "$1" = "--help" ]; then echo "usage: count-args [ARGS...] - print how many arguments it got"; exit 0; fi
echo "got $# arguments: $*"
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("old\n")
    return root


async def call(tool: ScriptTool, arguments: dict[str, Any], folder: Path, changes: ChangeSet,
               gate: Gate) -> list[ev.Event]:
    robot = Robot("helper", system_prompt="x", tools=[tool],
                  provider=ScriptedProvider([[ToolCall(tool.name, arguments, id="c0")], "Done."]), folder=folder)
    return [e async for e in robot.stream("go", changes=changes, approval=gate)]


def results(events: list[ev.Event]) -> list[Any]:
    return [e.payload["data"] if isinstance(e, ev.ToolResult) else {"error": e.error}
            for e in events if isinstance(e, ev.ToolResult | ev.ToolError)]


def test_not_executable_is_skipped_with_robotlabs_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plain = tmp_path / "my-check.sh"
    plain.write_text("#!/bin/sh\necho hi\n")
    with caplog.at_level(logging.WARNING):
        assert ScriptTool.from_path(plain) is None
    assert "ScriptTool: my-check.sh is not executable, skipping" in caplog.text


def test_front_matter_names_and_describes_the_tool(tmp_path: Path) -> None:
    tool = ScriptTool.from_path(executable(tmp_path / "say-hello.sh", FRONT))
    assert tool is not None and tool.name == "say_hello"
    assert tool.description == "Write a greeting into a file"
    assert tool.parameters["properties"]["who"]["type"] == "string"
    assert tool.parameters["required"] == ["who"]


def test_a_sidecar_describes_the_tool(tmp_path: Path) -> None:
    path = executable(tmp_path / "lines.py", "#!/usr/bin/env python3\nimport json, sys\nprint(json.load(sys.stdin))\n")
    (tmp_path / "lines.json").write_text('{"description": "Count lines", "parameters": {"path": "string"}}')
    tool = ScriptTool.from_path(path)
    assert tool is not None and tool.name == "lines" and tool.description == "Count lines"
    assert tool.parameters["properties"] == {"path": {"type": "string"}}


def test_bad_front_matter_names_the_fix(tmp_path: Path) -> None:
    path = executable(tmp_path / "bad.sh", "#!/bin/sh\n# ---\n# description: x\necho\n")
    with pytest.raises(ScriptToolError, match="not closed; end it with a '# ---' line"):
        ScriptTool.from_path(path)


async def test_help_describes_it_and_args_reach_the_script(folder: Path) -> None:
    tool = ScriptTool.from_path(executable(folder / "tools" / "count-args", HELP))
    assert tool is not None and tool.name == "count_args"
    assert tool.description == "usage: count-args [ARGS...] - print how many arguments it got"
    assert list(tool.parameters["properties"]) == ["args"]
    events = await call(tool, {"args": "one 'two three'"}, folder, ChangeSet(folder),
                        Gate([{"tool": "run_command", "action": "allow"}]))
    [data] = results(events)
    assert data["exit_code"] == 0 and data["output"] == "got 2 arguments: one two three\n", data
    streamed = "".join(e.text for e in events if isinstance(e, ev.ToolOutput))
    assert "got 2 arguments" in streamed


async def test_a_failing_help_falls_back_to_the_first_comment(tmp_path: Path) -> None:
    tool = ScriptTool.from_path(executable(tmp_path / "x.sh", "#!/bin/sh\n# Does x\nexit 3\n"))
    assert tool is not None and tool.description == "Does x"


async def test_it_is_asked_about_as_the_command_it_runs_and_denied_never_runs(folder: Path) -> None:
    tool = ScriptTool.from_path(executable(folder / ".robotlab" / "tools" / "greet.sh", FRONT))
    assert tool is not None
    gate = Gate([], answer=False)
    changes = ChangeSet(folder)
    events = await call(tool, {"who": "Ann"}, folder, changes, gate)
    [request] = gate.asked
    assert request.effects and request.effects[0].command == '.robotlab/tools/greet.sh <<< {"who": "Ann"}'
    assert not any(isinstance(e, ev.ToolOutput) for e in events)
    assert "error" in results(events)[0]
    assert not changes.pending_files


async def test_writes_are_proposed_not_applied_and_input_arrives_on_stdin(tmp_path: Path, folder: Path) -> None:
    # A script outside the folder (the user's tools folder) is handed into the sandbox.
    tool = ScriptTool.from_path(executable(tmp_path / "user-tools" / "greet", FRONT))
    assert tool is not None
    changes = ChangeSet(folder)
    events = await call(tool, {"who": "Ann"}, folder, changes, Gate([{"tool": "run_command", "action": "allow"}]))
    [data] = results(events)
    assert data["exit_code"] == 0, data
    assert 'stdin: {"who": "Ann"}' in data["output"]
    assert data["changes"] == ["greeting.txt"]
    assert not (folder / "greeting.txt").exists()
    assert [fc.path for fc in changes.pending_files] == ["greeting.txt"]
    changes.apply(accept_pending=True)
    assert (folder / "greeting.txt").read_text() == "hello Ann\n"


def test_the_user_tools_folder_is_discovered(folder: Path) -> None:
    executable(user_tools_dir() / "count-args", HELP)
    (user_tools_dir() / "count-args.md").write_text("notes, not a tool")
    tools, notices = discover_script_tools(folder)
    assert [t.name for t in tools] == ["count_args"] and notices == []


def test_an_untrusted_folders_tools_are_ignored_with_a_notice_and_trusted_ones_used(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workspace.tools import script as script_module

    executable(folder / ".robotlab" / "tools" / "greet.sh", FRONT)
    executable(folder / ".robotlab" / "tools" / "other", "#!/bin/sh\necho help\n")
    helped: list[Path] = []
    real_help = script_module._help_text
    monkeypatch.setattr(script_module, "_help_text", lambda p: helped.append(p) or real_help(p))
    tools, notices = discover_script_tools(folder)
    assert tools == [] and helped == []  # an untrusted folder's scripts are not run, not even for --help
    [notice] = notices
    assert "greet" in notice and "not trusted" in notice and "robotlab trust" in notice
    trust.trust(folder)
    tools, notices = discover_script_tools(folder)
    assert [t.name for t in tools] == ["greet", "other"] and notices == []
    assert [p.name for p in helped] == ["other"]


async def test_a_robot_can_name_a_script_tool(folder: Path) -> None:
    executable(user_tools_dir() / "count-args", HELP)
    robot = Robot("helper", system_prompt="x", tools=["count_args"],
                  provider=ScriptedProvider(["Done."]), folder=folder)
    manifest = await robot.resolve_tools()
    assert [t.name for t in manifest] == ["count_args"]


def test_an_agent_skills_scripts_become_script_tools(tmp_path: Path) -> None:
    from workspace import AgentSkill

    skill = tmp_path / "counter"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: counter\ndescription: counts things\n---\nCount.\n")
    executable(skill / "scripts" / "count-args", HELP)
    (skill / "scripts" / "notes.txt").write_text("not a script\n")
    tools = AgentSkill.from_path(skill).script_tools
    assert [t.name for t in tools] == ["count_args"]
