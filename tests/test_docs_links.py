"""Every link in README.md, AGENTS.md and docs/*.md resolves: relative links name files that exist,
a ``#anchor`` into a Markdown page names one of its headings (as GitHub spells anchors), and the
files the pages name in backticks exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "AGENTS.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchors(page: Path) -> set[str]:
    """The anchors of ``page``'s headings: lower case, punctuation dropped, spaces as hyphens."""
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not checked offline
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no heading #{anchor} in {file.name})")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)}: broken links, fix or remove them: {broken}"


def test_the_checker_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n```sh\n# not a heading\n```\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](#nowhere) [there](other.md#other-page) "
                    "[code](other.md#not-a-heading) ![img](missing.png) [web](https://example.com/x)\n",
                    encoding="utf-8")
    assert broken_links(page) == ["missing.md (no such file)", "#nowhere (no heading #nowhere in page.md)",
                                  "other.md#not-a-heading (no heading #not-a-heading in other.md)",
                                  "missing.png (no such file)"]


NAMED = re.compile(r"`((?:workspace|ui|tests|bench|scripts)/[\w/.-]*\w)`")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_files_a_page_names_exist(page: Path) -> None:
    """A module, folder or script named in backticks (`ui/widgets/table_model.py`) exists: a moved or removed file
    fails here rather than leaving the documents pointing at nothing."""
    named = set(NAMED.findall(page.read_text(encoding="utf-8")))
    missing = sorted(name for name in named if not (ROOT / name).exists())
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist: {missing}"


def test_the_readme_keeps_its_two_commands_and_points_to_the_guides() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "scripts/run     # start the app" in readme and "scripts/test    # run the whole test suite" in readme
    assert "](docs/screenshot.png)" in readme
    assert "](docs/user-guide.md)" in readme and "](docs/cli.md)" in readme
