"""Agent skills: RobotLab's AgentSkill and catalog tests, ported, where the catalog looks, and selection."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from workspace import AgentSkill, AgentSkillCatalog, ConfigurationError
from workspace.agent_skills import instructions, lexical_similarity


def write_skill(root: Path, folder: str, front: str, body: str = "Do it well.", scripts: dict[str, str] | None = None
                ) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(f"---\n{front}---\n{body}\n", encoding="utf-8")
    for name, text in (scripts or {}).items():
        (path / "scripts").mkdir(exist_ok=True)
        (path / "scripts" / name).write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    """RobotLab's test fixtures: a good skill, one with a script, one without description, one without name."""
    root = tmp_path / "skills"
    write_skill(root, "test_skill", "name: test_skill\ndescription: A test skill for verifying AgentSkills.io "
                "integration\n", body="\nApply rigorous testing practices.\n")
    write_skill(root, "scripted_skill", "name: scripted_skill\ndescription: Runs a greeting script\nnetwork: false\n"
                "fs_read: [.]\n", scripts={"hello.sh": "#!/bin/sh\n# Say hello\necho hello\n"})
    write_skill(root, "bad_skill", "name: bad_skill\n")
    write_skill(root, "no_name_skill", "description: has no name\n")
    return root


# -- AgentSkill (agent_skill_test.rb) -------------------------------------------------------------------------
def test_a_skill_has_its_name_description_instructions_and_folder(fixtures: Path) -> None:
    skill = AgentSkill.from_path(fixtures / "test_skill" / "SKILL.md")
    assert skill.name == "test_skill"
    assert skill.description == "A test skill for verifying AgentSkills.io integration"
    assert skill.instructions == "Apply rigorous testing practices."  # the body, stripped
    assert skill.path == fixtures / "test_skill"
    assert AgentSkill.from_path(fixtures / "test_skill") == skill  # the folder will do


@pytest.mark.parametrize(("folder", "key"), [("bad_skill", "description"), ("no_name_skill", "name")])
def test_a_missing_name_or_description_names_the_file_and_the_fix(fixtures: Path, folder: str, key: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"SKILL.md at .*{folder}.SKILL.md missing '{key}': add a line "
                                                 rf"'{key}: ...'"):
        AgentSkill.from_path(fixtures / folder)


def test_scripts_are_the_files_of_scripts_sorted(fixtures: Path) -> None:
    assert AgentSkill.from_path(fixtures / "test_skill").scripts == []
    scripted = AgentSkill.from_path(fixtures / "scripted_skill")
    assert [p.name for p in scripted.scripts] == ["hello.sh"]
    assert scripted.capabilities == {"network": False, "fs_read": ["."]}


def test_front_matter_that_is_not_a_mapping_counts_as_empty_and_bad_yaml_says_where(tmp_path: Path) -> None:
    write_skill(tmp_path, "listy", "- just\n- a list\n")
    with pytest.raises(ConfigurationError, match="missing 'name'"):
        AgentSkill.from_path(tmp_path / "listy")
    write_skill(tmp_path, "broken", "name: [unclosed\n")
    with pytest.raises(ConfigurationError, match=r"broken.SKILL.md: the front matter is not valid YAML"):
        AgentSkill.from_path(tmp_path / "broken")
    with pytest.raises(ConfigurationError, match="Cannot read the skill"):
        AgentSkill.from_path(tmp_path / "nowhere")


# -- AgentSkillCatalog (agent_skill_catalog_test.rb) -------------------------------------------------------------
def test_the_catalog_finds_skills_by_name_and_skips_bad_ones(fixtures: Path, caplog: pytest.LogCaptureFixture) -> None:
    catalog = AgentSkillCatalog(fixtures)
    with caplog.at_level(logging.WARNING, logger="workspace.agent_skills"):
        assert catalog.find("test_skill") is not None
    assert catalog.find("nonexistent") is None
    assert [s.name for s in catalog.all()] == ["scripted_skill", "test_skill"]
    assert catalog.find("bad_skill") is None
    assert len(catalog.problems) == 2
    assert "AgentSkillCatalog: SKILL.md at" in caplog.text and "skipping" in caplog.text


def test_the_catalog_reads_once_until_reloaded(fixtures: Path) -> None:
    catalog = AgentSkillCatalog([fixtures])
    assert len(catalog.all()) == 2
    write_skill(fixtures, "late", "name: late\ndescription: added later\n")
    assert len(catalog.all()) == 2
    catalog.reload()
    assert [s.name for s in catalog.all()] == ["late", "scripted_skill", "test_skill"]


def test_skills_are_found_where_robot_templates_are(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    given = tmp_path / "given"
    write_skill(folder / ".robotlab" / "templates" / "skills", "review", "name: review\ndescription: the folder's\n")
    write_skill(Path(os.environ["ROBOTLAB_HOME"]) / "config" / "templates" / "skills", "review",
                "name: review\ndescription: the user's\n")
    write_skill(Path(os.environ["ROBOTLAB_HOME"]) / "config" / "templates" / "skills", "notes",
                "name: notes\ndescription: the user's notes\n")
    write_skill(given, "review", "name: review\ndescription: given in template_dirs\n")
    assert AgentSkillCatalog(folder=folder).find("review").description == "the folder's"  # type: ignore[union-attr]
    assert AgentSkillCatalog().find("review").description == "the user's"  # type: ignore[union-attr]
    both = AgentSkillCatalog(folder=folder, template_dirs=[given])
    assert both.find("review").description == "given in template_dirs"  # type: ignore[union-attr]
    assert both.find("notes") is not None


# -- selection ---------------------------------------------------------------------------------------------------
@pytest.fixture
def catalog(tmp_path: Path) -> AgentSkillCatalog:
    root = tmp_path / "skills"
    write_skill(root, "code_reviewer", "name: code_reviewer\ndescription: Reviews code for bugs, style problems and "
                "security issues\n", body="Read the diff line by line.")
    write_skill(root, "sql_helper", "name: sql_helper\ndescription: Writes and optimizes SQL queries for "
                "databases\n", body="Prefer joins to subqueries.")
    write_skill(root, "poet", "name: poet\ndescription: Writes short poems about nature\n", body="Use few words.")
    return AgentSkillCatalog(root)


async def test_the_lexical_measure_selects_by_the_message_without_any_key(catalog: AgentSkillCatalog) -> None:
    chosen = await catalog.select("Please review this code for bugs")
    assert [s.name for s in chosen] == ["code_reviewer"]
    chosen = await catalog.select("This SQL query on my database is slow, can you optimize it?")
    assert [s.name for s in chosen] == ["sql_helper"]
    assert await catalog.select("What's the weather tomorrow?") == []
    assert await catalog.select("   ") == []
    assert instructions(await catalog.select("review my code for security bugs")) == "Read the diff line by line."


async def test_selection_among_named_skills_and_a_clear_error_for_an_unknown_one(catalog: AgentSkillCatalog) -> None:
    assert await catalog.select("Review this code for bugs", among=["sql_helper", "poet"]) == []
    with pytest.raises(ConfigurationError, match=r"No agent skill named 'reviewer' \(found: code_reviewer, poet, "
                                                 r"sql_helper\); skills are folders with a SKILL.md under"):
        await catalog.select("x", among=["reviewer"])


def test_the_lexical_measure_is_a_cosine_of_stemmed_words() -> None:
    assert lexical_similarity("Reviews codes", "review code") == pytest.approx(1.0)
    assert lexical_similarity("optimized classes", "optimizes a class") == pytest.approx(1.0)
    assert lexical_similarity("queries", "query") == pytest.approx(1.0)
    assert lexical_similarity("the and of", "anything at all") == 0.0
    assert 0.0 < lexical_similarity("optimizing queries", "optimizes SQL queries") < 1.0


VOCAB = ("code", "bug", "sql", "quer", "poem")


def bag_embedder(texts: Sequence[str]) -> list[list[float]]:
    """A small real embedder: counts of a fixed vocabulary (what a sentence model does, in miniature)."""
    return [[float(text.lower().count(word)) for word in VOCAB] for text in texts]


async def test_a_pluggable_embedder_decides_with_robotlabs_threshold(catalog: AgentSkillCatalog) -> None:
    catalog.embedder = bag_embedder
    scores = await catalog.scores("a bug in my code")
    assert scores["code_reviewer"] == pytest.approx(1.0)
    assert scores["poet"] == 0.0
    assert [s.name for s in await catalog.select("a bug in my code")] == ["code_reviewer"]
    # 0.70: "query" alone is 1/sqrt(2) ~ 0.707 similar to the SQL helper's description (sql + query).
    assert math.isclose((await catalog.scores("one query"))["sql_helper"], 1 / math.sqrt(2))
    assert [s.name for s in await catalog.select("one query")] == ["sql_helper"]


async def test_an_async_embedder_works_and_a_failing_one_falls_back_to_the_lexical_measure(
        catalog: AgentSkillCatalog, caplog: pytest.LogCaptureFixture) -> None:
    async def remote(texts: Sequence[str]) -> list[list[float]]:
        return bag_embedder(texts)

    catalog.embedder = remote
    assert [s.name for s in await catalog.select("a bug in my code")] == ["code_reviewer"]

    def down(texts: Sequence[str]) -> list[list[float]]:
        raise ConnectionError("embeddings service unreachable")

    catalog.embedder = down
    catalog.threshold = 0.25
    with caplog.at_level(logging.WARNING, logger="workspace.agent_skills"):
        chosen = await catalog.select("Please review this code for bugs")
    assert [s.name for s in chosen] == ["code_reviewer"]
    assert "embedding failed (embeddings service unreachable); using the lexical measure" in caplog.text


def test_a_threshold_outside_zero_to_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="threshold must be between 0 and 1"):
        AgentSkillCatalog(tmp_path, threshold=70)


async def test_a_run_gets_the_instructions_of_the_skills_its_message_asks_for(catalog: AgentSkillCatalog) -> None:
    from workspace import Robot
    from workspace.providers.testing import ScriptedProvider

    provider = ScriptedProvider(["Found two bugs.", "A poem.", "Sunny."])
    robot = Robot("helper", system_prompt="You are helpful.", provider=provider)
    await robot.arun("Please review this code for bugs", agent_skills=catalog)
    await robot.arun("Write short poems about nature in autumn", agent_skills=catalog)
    await robot.arun("What's the weather tomorrow?", agent_skills=catalog)
    systems = [call.system for call in provider.history]
    assert systems == ["Read the diff line by line.\n\nYou are helpful.", "Use few words.\n\nYou are helpful.",
                       "You are helpful."]
