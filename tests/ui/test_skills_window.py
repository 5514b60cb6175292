"""The window's runs are given the agent skills (SKILL.md folders: the opened folder's and the user's), as the
library's runs are with ``agent_skills=``: the model on the loopback server receives the instructions of the
skill the message asks for, and not those of a skill it does not."""

from __future__ import annotations

from pathlib import Path

from fakes.llm_server import FakeLLMServer

from tests.fakes.app_window import running_app, wait_until
from workspace.config import load_config


def write_skill(root: Path, name: str, description: str, instructions: str) -> None:
    path = root / "skills" / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{instructions}\n", encoding="utf-8")


def system_prompt(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list) and messages[0]["role"] == "system"
    return str(messages[0]["content"])


async def test_a_window_run_gets_the_instructions_of_the_skill_its_message_asks_for(
        db_path: Path, robotlab_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "shop"
    folder.mkdir()
    write_skill(robotlab_home / "config" / "templates", "release_notes", "Write release notes for a new version",
                "RELEASE-NOTES-SKILL: list the changes as bullets, newest first.")
    write_skill(folder / ".robotlab" / "templates", "sql_helper", "Write SQL queries for the shop database",
                "SQL-SKILL: always name the columns.")
    with FakeLLMServer(default_text="Done.") as server:
        config = load_config(folder, env={}, overrides={"llm": {"model": "openai/fake",
                                                                "api_base": server.base_url + "/v1"}})
        async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light") as root:
            assert root.controller.workspace.agent_skills
            assert root.controller.send("Please write release notes for the new version 2.0")
            await wait_until(lambda: len(server.requests) == 1 and root.controller.idle, timeout=60,
                             what="the first run to end")
            first = system_prompt(server.requests[0])
            assert "RELEASE-NOTES-SKILL: list the changes as bullets" in first
            assert "SQL-SKILL" not in first
            assert root.controller.send("Write SQL queries that list the shop database's orders")
            await wait_until(lambda: len(server.requests) == 2 and root.controller.idle, timeout=60,
                             what="the second run to end")
            second = system_prompt(server.requests[1])
            assert "SQL-SKILL: always name the columns." in second  # the opened folder's skill
            assert "RELEASE-NOTES-SKILL" not in second
