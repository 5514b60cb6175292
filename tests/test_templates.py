"""Prompt templates: YAML front matter + Jinja2 body."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace.errors import ConfigurationError
from workspace.templates import Template, find_template


def test_front_matter_and_body() -> None:
    t = Template.parse("---\nmodel: m\ntemperature: 0.2\nstop: [END]\nname: helper\ncustom: 1\n---\nHello {{ who }}!\n")
    assert t.name == "helper" and t.model == "m"
    assert t.settings == {"temperature": 0.2, "stop": ["END"]}
    assert t.metadata["custom"] == 1
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
