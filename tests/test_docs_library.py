"""docs/library.md: every fenced Python block runs as it is (offline: the blocks use ScriptedProvider)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "library.md"
#: Pages split off library.md: their examples run the same way.
PARTS = (ROOT / "docs" / "library-config.md",)


def blocks(page: Path = PAGE) -> list[tuple[str, str]]:
    """(the heading above it, the code) of every ```python block of ``page``."""
    out: list[tuple[str, str]] = []
    heading = "top"
    text = page.read_text(encoding="utf-8")
    for match in re.finditer(r"^(#{1,3} [^\n]+)$|^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        if match.group(1):
            heading = match.group(1).lstrip("# ").strip()
        else:
            out.append((heading, match.group(2)))
    return out


def test_the_page_has_an_example_for_each_part() -> None:
    headings = [h for h, _ in blocks()]
    assert len(headings) >= 7
    for part in ("Structured output", "Robots as tools", "Every event", "approvals", "Tracing", "pipeline"):
        assert any(part.lower() in h.lower() for h in headings), part


ALL_BLOCKS = [b for page in (PAGE, *PARTS) for b in blocks(page)]


@pytest.mark.parametrize(("heading", "code"), ALL_BLOCKS, ids=[h for h, _ in ALL_BLOCKS])
def test_each_example_runs(heading: str, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROBOT_LAB_", "OTEL_")) and not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"{heading}:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{heading} printed nothing"
