"""An agent skill selected for a run brings its ``scripts/`` as script tools for that run alone (RobotLab's
AgentSkillMatching): the scripted model calls the skill's script, which runs as a real process in the real
sandbox and hands back its output; a later run whose message selects no skill is not offered the tool."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fakes.script_folders import require_sandbox, skill_folder

from workspace import AgentSkillCatalog, Robot
from workspace import events as ev
from workspace.agent_skills import skill_script_tools
from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.providers.testing import ScriptedProvider, ToolCall

require_sandbox()

pytestmark = pytest.mark.timeout(180)

WORDS = """#!/bin/sh
# ---
# description: Count the words of a text
# parameters:
#   text: {type: string, description: the text to count}
# required: [text]
# ---
input=$(cat)
text=$(printf %s "$input" | sed 's/.*"text": *"\\([^"]*\\)".*/\\1/')
echo "words: $(printf %s "$text" | wc -w | tr -d ' ')"
"""


@pytest.fixture
def catalog(tmp_path: Path) -> AgentSkillCatalog:
    root = tmp_path / "skills"
    skill_folder(root, "word_counter", "Counts the words of a text", {"count-words.sh": WORDS})
    skill_folder(root, "poet", "Writes short poems about nature", {})
    return AgentSkillCatalog(root)


async def test_a_selected_skills_script_is_a_tool_of_that_run_only(tmp_path: Path, catalog: AgentSkillCatalog) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    provider = ScriptedProvider([[ToolCall("count_words", {"text": "one two three"}, id="c1")], "Three words.",
                                 "A poem."])
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True)

    gate = ApprovalGate(ApprovalPolicy(), approve)
    robot = Robot("helper", system_prompt="You help.", provider=provider, folder=folder)

    events = [e async for e in robot.stream("Count the words of this text: one two three", agent_skills=catalog,
                                       approval=gate)]
    [result] = [e for e in events if isinstance(e, ev.ToolResult)]
    assert result.payload["data"]["exit_code"] == 0, result.payload
    assert result.payload["data"]["output"] == "words: 3\n"
    [request] = asked  # asked about as the command it runs, as every script tool is
    assert request.effects and "count-words.sh" in request.effects[0].command
    first = provider.history[0]
    assert "count_words" in first.tool_names
    assert first.system is not None and first.system.startswith("Use the script.")
    # The model read the script's output back as the call's result.
    assert "words: 3" in str(provider.history[1].messages[-1].content)

    await robot.arun("Write short poems about nature", agent_skills=catalog)
    assert "count_words" not in provider.history[-1].tool_names  # the poet has no scripts; the counter not chosen
    assert "count_words" not in [t.name for t in await robot.resolve_tools()]


async def test_a_script_with_a_broken_description_is_left_out_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = skill_folder(tmp_path / "skills", "counter", "Counts words",
                          {"bad.sh": "#!/bin/sh\n# ---\n# description: x\necho\n", "count-words.sh": WORDS,
                           "notes.txt": "not a script"})
    (folder / "scripts" / "notes.txt").chmod(0o644)
    from workspace import AgentSkill

    with caplog.at_level(logging.WARNING):
        tools = await skill_script_tools([AgentSkill.from_path(folder)])
    assert [t.name for t in tools] == ["count_words"]
    assert "AgentSkill 'counter'" in caplog.text and "bad.sh" in caplog.text and "skipping the script" in caplog.text


async def test_an_untrusted_folders_skill_scripts_are_not_offered_until_it_is_trusted(tmp_path: Path) -> None:
    from workspace import trust

    folder = tmp_path / "project"
    skill_folder(folder / ".robotlab" / "templates" / "skills", "word_counter", "Counts the words of a text",
                 {"count-words.sh": WORDS})
    catalog = AgentSkillCatalog(folder=folder)
    provider = ScriptedProvider(["Cannot.", "Can."])
    robot = Robot("helper", system_prompt="You help.", provider=provider, folder=folder)
    message = "Count the words of this text: one two three"

    events = [e async for e in robot.stream(message, agent_skills=catalog)]
    assert "count_words" not in provider.history[0].tool_names
    assert provider.history[0].system is not None and provider.history[0].system.startswith("Use the script.")
    [notice] = [e.detail for e in events if isinstance(e, ev.RunStatus) and "word_counter" in (e.detail or "")]
    assert "not trusted" in notice and f"robotlab trust {folder.resolve()}" in notice

    trust.trust(folder)
    await robot.arun(message, agent_skills=catalog)
    assert "count_words" in provider.history[1].tool_names
