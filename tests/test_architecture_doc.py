"""docs/ARCHITECTURE.md's examples run, and the names it points at exist."""

from __future__ import annotations

import re
from pathlib import Path

from workspace.tools import ToolContext

DOC = Path(__file__).resolve().parent.parent / "docs" / "ARCHITECTURE.md"


async def test_the_tool_example_runs(tmp_path: Path) -> None:
    block = re.search(r"### A tool\n\n```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(block.group(1), namespace)
    word_count = namespace["word_count"]
    (tmp_path / "a.txt").write_text("one two three", encoding="utf-8")
    out = await word_count.invoke({"path": "a.txt"}, ToolContext(folder=tmp_path))  # type: ignore[attr-defined]
    assert out.data == 3 and not out.is_error
    outside = await word_count.invoke({"path": "../x"}, ToolContext(folder=tmp_path))  # type: ignore[attr-defined]
    assert outside.is_error


def test_the_files_it_names_exist() -> None:
    root = DOC.parent.parent
    named = set(re.findall(r"`((?:workspace|ui)/[\w/]+\.py)`", DOC.read_text(encoding="utf-8")))
    assert named, "the page names modules"
    missing = sorted(p for p in named if not (root / p).is_file())
    assert missing == []
