"""RobotLab's one ``skills:`` for both kinds of skill: a name that is a template skill is expanded as before
(depth-first, each once); a name that is no template but a ``SKILL.md`` folder becomes one of the robot's pending
agent skills, given to a run whose message asks for it (its instructions before the system prompt, its scripts as
that run's tools, run in the real sandbox), against the loopback OpenAI-compatible server; a name that is neither
is refused naming where both kinds are looked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace import ConfigurationError, Robot
from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.isolation import SandboxUnavailable, sandbox_for_platform

pytestmark = pytest.mark.timeout(180)

COUNTER = """#!/bin/sh
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
def templates(tmp_path: Path) -> Path:
    """A folder of templates: two template skills (one using the other), two agent skills, one with a script."""
    root = tmp_path / "templates"
    (root / "skills").mkdir(parents=True)
    (root / "skills" / "polite.md").write_text("---\nskills: [brief]\n---\nBe polite.\n")
    (root / "skills" / "brief.md").write_text("Be brief.\n")
    counter = root / "skills" / "word_counter"
    (counter / "scripts").mkdir(parents=True)
    (counter / "SKILL.md").write_text("---\nname: word_counter\ndescription: Counts the words of a text\n---\n"
                                      "Count with the script.\n")
    script = counter / "scripts" / "count-words.sh"
    script.write_text(COUNTER)
    script.chmod(0o755)
    poet = root / "skills" / "poet"
    poet.mkdir()
    (poet / "SKILL.md").write_text("---\nname: poet\ndescription: Writes short poems about nature\n---\n"
                                   "Use few words.\n")
    return root


def test_one_skills_list_splits_into_template_skills_and_pending_agent_skills(templates: Path) -> None:
    robot = Robot("helper", system_prompt="You help.", skills=["polite", "word_counter", "brief", "poet"],
                  template_dirs=[templates])
    assert [t.name for t in robot.skill_templates] == ["brief", "polite"]  # depth-first, each once
    assert [s.name for s in robot.agent_skills] == ["word_counter", "poet"]
    assert robot.skills == ["polite", "word_counter", "brief", "poet"]
    # the agent skills' text is not part of the template prompt: it goes to the runs that ask for it
    assert robot.render_system({}) == "Be brief.\n\nBe polite.\n\nYou help."


def test_a_robot_files_skills_and_a_template_skills_own_skills_may_name_agent_skills(templates: Path,
                                                                                       tmp_path: Path) -> None:
    (templates / "skills" / "rhymes.md").write_text("---\nskills: [poet]\n---\nRhyme.\n")
    path = tmp_path / "bard.md"
    path.write_text("---\nname: bard\nskills: [rhymes, word_counter]\n---\nYou are a bard.\n")
    from workspace.templates import Template

    robot = Robot("bard", template=Template.load(path), template_dirs=[templates])
    assert [t.name for t in robot.skill_templates] == ["rhymes"]
    assert [s.name for s in robot.agent_skills] == ["poet", "word_counter"]


def test_a_name_that_is_neither_kind_is_refused_naming_where_both_are_looked_for(templates: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Robot("helper", system_prompt="You help.", skills=["polite", "juggler"], template_dirs=[templates])
    message = str(caught.value)
    assert "skill 'juggler' not found" in message
    assert "juggler.md" in message and "a folder juggler/ with a SKILL.md" in message and str(templates) in message


def test_the_cycle_warning_still_comes_and_template_skills_alone_work_as_before(
        templates: Path, caplog: pytest.LogCaptureFixture) -> None:
    (templates / "skills" / "a.md").write_text("---\nskills: [b]\n---\nA.\n")
    (templates / "skills" / "b.md").write_text("---\nskills: [a]\n---\nB.\n")
    robot = Robot("looper", system_prompt="Go.", skills=["a"], template_dirs=[templates])
    assert [t.name for t in robot.skill_templates] == ["b", "a"] and robot.agent_skills == []
    assert "Robot 'looper': skill cycle detected at 'a', skipping" in caplog.text


async def test_a_run_gets_the_pending_agent_skill_its_message_asks_for_with_its_script(templates: Path,
                                                                                       tmp_path: Path) -> None:
    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
        pytest.skip(f"no sandbox on this machine: {exc}")
    folder = tmp_path / "project"
    folder.mkdir()

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True)

    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("count_words", {"text": "one two three"}))
        server.enqueue("Three words.")
        server.enqueue("Leaves fall.")
        robot = Robot("helper", system_prompt="You help.", skills=["polite", "word_counter", "poet"],
                      template_dirs=[templates], model="openai/fake", api_base=server.base_url + "/v1",
                      folder=folder)
        result = await robot.arun("Count the words of this text: one two three",
                                  approval=ApprovalGate(ApprovalPolicy(), approve))
        assert result.last_text_content == "Three words."
        first, second = server.requests[0], server.requests[1]
        system = first["messages"][0]["content"]
        assert system.startswith("Count with the script.\n\n") and "Be polite." in system
        assert "Use few words." not in system  # the poet was not asked for
        assert "count_words" in [t["function"]["name"] for t in first.get("tools", [])]
        tool_results = [m for m in second["messages"] if m["role"] == "tool"]
        assert "words: 3" in json.dumps(tool_results)  # the script ran in the sandbox and answered

        await robot.arun("Write short poems about nature")
        third = server.requests[2]
        assert third["messages"][0]["content"].startswith("Use few words.\n\n")
        assert "count_words" not in [t["function"]["name"] for t in third.get("tools", [])]  # that run's alone


def test_the_editor_lists_an_agent_skill_named_in_skills_by_its_skill_md(tmp_path: Path) -> None:
    from workspace.robot_files import skills_of

    folder = tmp_path / "project"
    poet = folder / ".robotlab" / "templates" / "skills" / "poet"
    poet.mkdir(parents=True)
    (poet / "SKILL.md").write_text("---\nname: poet\ndescription: Writes short poems\n---\nUse few words.\n")
    template, agent = skills_of({"name": "bard", "skills": ["poet", "juggler"]}, folder=folder)
    assert template[0] == ("poet", str(poet / "SKILL.md"))
    assert template[1][0] == "juggler" and template[1][1].startswith("not found: ")
    assert ("poet", "Writes short poems") in agent
