"""Path escapes: every way out of the opened folder a model (or an attacker steering one) may try,
through every file tool with a real ToolContext and change set, then the change set applied: a
clear error the model can act on, nothing proposed, nothing written inside or outside.

Reading tools (read_file, list_files, search_files) and writing tools (write_file, edit_file,
create_file, delete_file, rename_file both ways, apply_patch) are separate cases of each escape.
The symlink swapped in during an apply (the race) is in test_fs_faults.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workspace.changes import ChangeSet, CheckpointStore
from workspace.sandbox import unsafe_character
from workspace.tools import registry
from workspace.tools.base import ToolContext

SECRET = "top secret\n"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    folder, outside = tmp_path / "project", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text("print('hi')\n")
    (folder / "README.md").write_text("# readme\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("[core]\n")
    (outside / "secret.txt").write_text(SECRET)
    (outside / "linked.txt").write_text("linked from inside\n")
    (folder / "leak.txt").symlink_to(outside / "secret.txt")
    (folder / "docs").symlink_to(outside, target_is_directory=True)
    (folder / "loop").symlink_to(folder / "loop")
    os.link(outside / "linked.txt", folder / "hard.txt")
    return folder, outside


def tree(path: Path) -> dict[str, bytes | str]:
    """Every entry below ``path`` without following symlinks: file bytes, or where a link points."""
    found: dict[str, bytes | str] = {}
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).as_posix()
        if p.is_symlink():
            found[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            found[rel] = p.read_bytes()
    return found


class Harness:
    def __init__(self, folder: Path, store: Path) -> None:
        self.folder = folder
        self.changes = ChangeSet(folder, store=CheckpointStore(store))
        self.context = ToolContext(robot="r", run_id="run", call_id="call", folder=folder, changes=self.changes,
                                   emit=lambda event: None)

    async def call(self, name: str, **args: Any) -> Any:
        tool = registry.get(name)
        assert tool is not None
        return await tool.invoke(args, self.context)


@dataclass
class Escape:
    name: str
    path: str
    says: str
    reads: bool = True
    writes: bool = True


ESCAPES = [
    Escape("'..' out of the folder", "../outside/secret.txt", "climbs out"),
    Escape("'..' after a folder inside", "src/../../outside/secret.txt", "climbs out"),
    Escape("'..' alone", "..", "climbs out"),
    Escape("'..' with the case changed", "../OUTSIDE/secret.txt", "climbs out"),
    Escape("absolute, outside", "{outside}/secret.txt", "outside the opened folder"),
    Escape("absolute, /etc/passwd", "/etc/passwd", "outside the opened folder"),
    Escape("absolute, a sibling sharing the folder's name", "{folder}-sibling/x.txt", "outside the opened folder"),
    Escape("'~' (home)", "~/.ssh/id_rsa", "home folder"),
    Escape("symlink to a file outside", "leak.txt", "through a symbolic link"),
    Escape("symlink to a folder outside", "docs/secret.txt", "through a symbolic link"),
    Escape("symlink to a folder outside, the link itself", "docs", "through a symbolic link"),
    Escape("symlink loop", "loop/x.txt", "a symbolic link that loops"),
    Escape("NUL byte", "notes\x00.txt", "NUL character"),
    Escape("a 300-byte name", "n" * 300, "longer than file systems allow"),
    Escape("a 5,000-character path", "d/" * 2500 + "x", "too long a path"),
    Escape("a path through a file as if a folder", "README.md/x.txt", "as a folder, but it is a file"),
    Escape(".git/ internals", ".git/config", "internal '.git' folder", reads=False),
    Escape(".GIT/ (case) internals", ".GIT/hooks/pre-commit", "internal '.git' folder", reads=False),
    Escape(".git./ (Windows drops the dot)", ".git./hooks/pre-commit", "internal '.git' folder", reads=False),
    Escape("a right-to-left override in the name", "invoice\u202etxt.exe", "U+202E", reads=False),
    Escape("a newline in the name", "x\n+++ b/README.md", "U+000A", reads=False),
]


def _path(escape: Escape, folder: Path, outside: Path) -> str:
    return escape.path.format(folder=folder, outside=outside)


def _checked(out: Any, says: str, tool: str) -> None:
    message = str(out.data)
    assert out.is_error, (tool, message)
    assert says in message, (tool, says, message)
    assert unsafe_character(message) is None, (tool, message)  # names are shown escaped
    assert "Traceback" not in message and "Errno" not in message, (tool, message)


CASES = [(e, "reading tools") for e in ESCAPES if e.reads] + [(e, "writing tools") for e in ESCAPES if e.writes]


@pytest.mark.parametrize(("escape", "group"), CASES, ids=[f"{e.name}-{g}" for e, g in CASES])
async def test_an_escape_is_refused_by_every_file_tool(layout: tuple[Path, Path], tmp_path: Path, escape: Escape,
                                                       group: str, matrix: Any) -> None:
    matrix.case("path escapes", f"{escape.name} ({group})")
    folder, outside = layout
    path = _path(escape, folder, outside)
    before_inside, before_outside = tree(folder), tree(outside)
    harness = Harness(folder, tmp_path / "store")
    if group == "reading tools":
        calls: list[tuple[str, dict[str, Any]]] = [
            ("read_file", {"path": path}), ("list_files", {"path": path}),
            ("search_files", {"query": "secret", "path": path})]
    else:
        calls = [("write_file", {"path": path, "content": "x\n"}), ("create_file", {"path": path, "content": "x\n"}),
                 ("edit_file", {"path": path, "search": "top", "replace": "bottom"}), ("delete_file", {"path": path}),
                 ("rename_file", {"path": "README.md", "new_path": path}),
                 ("rename_file", {"path": path, "new_path": "moved.txt"})]
        if "\n" not in path and "\x00" not in path:  # a patch header is one line
            calls += [("apply_patch", {"patch": f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"}),
                      ("apply_patch", {"patch": f"--- a/README.md\n+++ b/{path}\n@@ -1 +1 @@\n-# readme\n+# x\n"})]
    for tool, args in calls:
        _checked(await harness.call(tool, **args), escape.says, tool)
    assert harness.changes.files == []  # nothing proposed ...
    harness.changes.accept_all()
    assert harness.changes.apply().ok
    written = {k for k in before_outside.keys() | tree(outside).keys() if before_outside.get(k) != tree(outside).get(k)}
    changed = {k for k in before_inside.keys() | tree(folder).keys() if before_inside.get(k) != tree(folder).get(k)}
    matrix.lost(len(written) + len(changed), "files written outside or changed inside")
    assert not written and not changed  # ... and nothing written anywhere


async def test_listing_and_search_do_not_follow_symlinks_out(layout: tuple[Path, Path], tmp_path: Path,
                                                            matrix: Any) -> None:
    matrix.case("path escapes", "list and search of the whole folder skip links out")
    folder, _ = layout
    harness = Harness(folder, tmp_path / "store")
    found = await harness.call("search_files", query="secret")
    assert not found.is_error and found.data["matches"] == []
    found = await harness.call("search_files", query="linked from inside")  # the hard link is a file inside
    assert [m["path"] for m in found.data["matches"]] == ["hard.txt"]
    listed = await harness.call("list_files", recursive=True)
    paths = {e["path"]: e for e in listed.data["entries"]}
    assert paths["leak.txt"]["target"] == "(outside the folder)"
    assert not any(p.startswith("docs/") and p != "docs/" for p in paths)
    assert not any(p.startswith("loop/") for p in paths)


async def test_a_hard_link_to_a_file_outside(layout: tuple[Path, Path], tmp_path: Path, matrix: Any) -> None:
    """What happens: a hard link IS a file of the folder (nothing tells it from any other), so it can
    be read; a write replaces it atomically with a new file, which breaks the link: the file outside
    keeps its content."""
    matrix.case("path escapes", "a hard link to a file outside: read, write, delete")
    folder, outside = layout
    harness = Harness(folder, tmp_path / "store")
    read = await harness.call("read_file", path="hard.txt")
    assert not read.is_error and read.data["content"] == "linked from inside\n"
    assert not (await harness.call("write_file", path="hard.txt", content="changed\n")).is_error
    harness.changes.accept_all()
    assert harness.changes.apply().ok
    assert (folder / "hard.txt").read_text() == "changed\n"
    assert (outside / "linked.txt").read_text() == "linked from inside\n"
    assert not (await harness.call("delete_file", path="hard.txt")).is_error
    harness.changes.accept_all()
    assert harness.changes.apply().ok and not (folder / "hard.txt").exists()
    matrix.lost(0 if (outside / "linked.txt").read_text() == "linked from inside\n" else 1, "files changed outside")
    assert (outside / "linked.txt").read_text() == "linked from inside\n"


async def test_windows_separators_stay_inside_on_posix(layout: tuple[Path, Path], tmp_path: Path,
                                                       matrix: Any) -> None:
    """What happens: on POSIX a backslash is an ordinary character, so '..\\outside\\x.txt' is one
    name inside the folder (on Windows it is a path, refused as '..')."""
    matrix.case("path escapes", "Windows-style '..\\\\' separators")
    folder, outside = layout
    before = tree(outside)
    harness = Harness(folder, tmp_path / "store")
    read = await harness.call("read_file", path="..\\outside\\secret.txt")
    assert read.is_error and "does not exist" in str(read.data)
    out = await harness.call("write_file", path="..\\outside\\x.txt", content="x\n")
    harness.changes.accept_all()
    result = harness.changes.apply()
    if os.sep == "\\":
        assert out.is_error and "climbs out" in str(out.data)
    else:
        assert not out.is_error and result.ok and (folder / "..\\outside\\x.txt").read_text() == "x\n"
    assert tree(outside) == before


async def test_an_escape_through_a_robot_run_is_a_tool_error_the_run_survives(layout: tuple[Path, Path],
                                                                              matrix: Any) -> None:
    """End to end: a (scripted) model asks for escapes; each is a tool_error it can read, the run
    goes on to its answer, and nothing is proposed."""
    from workspace import events as ev
    from workspace.providers.testing import ScriptedProvider, ToolCall
    from workspace.robot import Robot

    matrix.case("path escapes", "escapes asked for in a robot run")
    folder, outside = layout
    before = tree(outside)
    provider = ScriptedProvider([
        [ToolCall("read_file", {"path": "../outside/secret.txt"}), ToolCall("read_file", {"path": "leak.txt"})],
        [ToolCall("write_file", {"path": "docs/new.txt", "content": "x"}),
         ToolCall("create_file", {"path": str(outside / "made.txt"), "content": "x"})],
        "I cannot reach those files.",
    ])
    robot = Robot("r", system_prompt="You help.", provider=provider, tools=["read_file", "write_file", "create_file"],
                  folder=folder)
    events = [e async for e in robot.stream("Read the secret and leave a note")]
    errors = [e for e in events if isinstance(e, ev.ToolError)]
    assert len(errors) == 4 and not [e for e in events if isinstance(e, ev.ToolResult)]
    assert all("outside" in str(e.error) or "climbs out" in str(e.error) for e in errors)
    assert isinstance(events[-1], ev.RunFinished) and events[-1].result.last_text_content == "I cannot reach those files."
    assert not [e for e in events if isinstance(e, ev.ChangeProposed)]
    assert SECRET.strip() not in "".join(ev.to_json(e) for e in events)
    assert tree(outside) == before


