"""Prompt templates: YAML front matter + Jinja2 body."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace.errors import ConfigurationError
from workspace.schemas import SchemaError
from workspace.templates import Template, find_template


def test_front_matter_and_body() -> None:
    # Keys of your own start with "x-" (any other unknown key is an error, see below).
    t = Template.parse("---\nmodel: m\ntemperature: 0.2\nstop: [END]\nname: helper\nx-custom: 1\n---\n"
                       "Hello {{ who }}!\n")
    assert t.name == "helper" and t.model == "m"
    assert t.settings == {"temperature": 0.2, "stop": ["END"]}
    assert t.metadata["x-custom"] == 1
    assert t.render(who="world") == "Hello world!"
    assert t.render() == "Hello !"  # undefined variables render empty


def test_no_front_matter() -> None:
    t = Template.parse("Just a body", name="plain")
    assert t.metadata == {} and t.render() == "Just a body" and t.name == "plain"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("---\nmodel: [\n---\nx", "front matter is not valid YAML at line"),
        ("---\nmodel: m\nno closing", "no closing '---'"),
        ("---\n- a\n---\nx", "must be a mapping"),
        ("---\ntemperature: warm\n---\nx", "'temperature' must be a number"),
        ("---\nmax_tokens: -5\n---\nx", "'max_tokens' must be a positive whole number"),
        ("---\ntools: 5\n---\nx", "'tools' must be inherit, none, all or a list"),
    ],
)
def test_bad_front_matter_is_a_clear_error(text: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        Template.parse(text, name="t")


def test_render_errors_name_the_template(tmp_path: Path) -> None:
    path = tmp_path / "broken.md"
    path.write_text("Hi {% if %}", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="broken.md: cannot render the template"):
        Template.load(path).render()


def test_sandboxed_rendering_refuses_unsafe_access() -> None:
    t = Template.parse("{{ ''.__class__.__mro__ }}")
    with pytest.raises(ConfigurationError):
        t.render()


def test_find_template_by_name_and_path(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("A", encoding="utf-8")
    assert find_template("a", [tmp_path]).render() == "A"
    assert find_template(str(tmp_path / "a.md"), []).render() == "A"
    with pytest.raises(ConfigurationError, match="Template 'zzz' not found"):
        find_template("zzz", [tmp_path])


# -- the front-matter schema: unknown keys and ranges name the file, the line and the fix ---------------
def test_an_unknown_key_names_the_file_its_line_and_the_closest_key(tmp_path: Path) -> None:
    path = tmp_path / "billing.md"
    path.write_text("---\nname: billing\nmodel: openai/gpt-4o-mini\ntemprature: 0.3\n---\nYou help.\n",
                    encoding="utf-8")
    with pytest.raises(ConfigurationError) as info:
        Template.load(path)
    assert str(info.value) == f"{path}:4: unknown setting 'temprature' — did you mean 'temperature'?"


def test_values_out_of_range_are_errors_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "hot.md"
    path.write_text("---\ntemperature: 7\ntop_p: 3\nmax_turns: 0\n---\nHi\n", encoding="utf-8")
    with pytest.raises(SchemaError) as info:
        Template.load(path)
    assert info.value.problems == [
        f"{path}:2: temperature: 7 is out of range: 'temperature' must be a number from 0 to 2",
        f"{path}:3: top_p: 3 is out of range: 'top_p' must be a number from 0 to 1",
        f"{path}:4: max_turns: 0 is out of range: 'max_turns' must be a positive whole number",
    ]


def test_a_bom_and_blank_lines_keep_the_line_numbers_right(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_text("\ufeff---\n\n# a comment\ndescription: x\ntop_k: many\n---\nHi\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"bom\.md:5: 'top_k' must be a positive whole number, got 'many'"):
        Template.load(path)


def test_own_keys_start_with_x_and_every_known_key_is_accepted() -> None:
    text = ("---\nname: all\ndescription: d\nmodel: ollama_chat/llama3.1\napi_base: http://localhost:11434\n"
            "temperature: 0.5\ntop_p: 1\ntop_k: 40\nmax_tokens: 100\npresence_penalty: -0.5\nfrequency_penalty: 2\n"
            "stop: END\ntools: [read_file]\nmcp: [github, {name: x, command: srv}]\nmax_turns: 3\n"
            "mcp_prompt: {server: s, prompt: p}\nx-owner: billing-team\n---\nHi")
    t = Template.parse(text)
    assert t.metadata["x-owner"] == "billing-team" and t.api_base == "http://localhost:11434"
    assert t.settings == {"temperature": 0.5, "top_p": 1, "top_k": 40, "max_tokens": 100,
                          "presence_penalty": -0.5, "frequency_penalty": 2, "stop": "END"}


def test_mcp_servers_are_not_defined_in_robot_files() -> None:
    with pytest.raises(ConfigurationError, match=r"template 't':2: mcpServers: .*define them under mcpServers in your config"):
        Template.parse("---\nmcpServers: {gh: {command: gh}}\n---\nHi", name="t")


def test_the_setting_keys_are_the_schema_fields() -> None:
    from workspace.schemas.robot import ModelSettings
    from workspace.templates import SETTING_KEYS

    assert tuple(ModelSettings.model_fields) == SETTING_KEYS
