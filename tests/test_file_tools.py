"""The built-in file tools, the agent loop proposing changes, and `robotlab run --apply` end to end."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from workspace import events as ev
from workspace.changes import ChangeSet, compose_user_message
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.tools import registry
from workspace.tools.base import ToolContext, ToolOutput

FILE_TOOLS = ["read_file", "list_files", "search_files", "write_file", "edit_file", "apply_patch", "create_file",
              "delete_file", "rename_file"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    print('hello')\n\n\nif __name__ == '__main__':\n    main()\n")
    return root


class Harness:
    """Calls tools the way the agent loop does, collecting emitted events."""

    def __init__(self, folder: Path | None, changes: ChangeSet | None) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.context = ToolContext(robot="helper", run_id="run-1", call_id="call-1", folder=folder,
                                   changes=changes, emit=self._emit)

    def _emit(self, event: ev.Event) -> None:
        self.events.append((event.kind, event.to_dict()))

    async def __call__(self, name: str, **args: Any) -> ToolOutput:
        tool = registry.get(name)
        assert tool is not None, name
        return await tool.invoke(args, self.context)


@pytest.fixture
def call(folder: Path) -> Harness:
    return Harness(folder, ChangeSet(folder))


def test_registered_with_annotations() -> None:
    for name in FILE_TOOLS:
        tool = registry.get(name)
        assert tool is not None, name
        assert tool.read_only is (name in ("read_file", "list_files", "search_files")), name
        assert "context" not in (tool.parameters or {}).get("properties", {})
    assert registry.get("delete_file").destructive  # type: ignore[union-attr]
    assert registry.get("edit_file").parameters["required"] == ["path", "search", "replace"]  # type: ignore[index,union-attr]


# -- reading ------------------------------------------------------------------------------------------------


async def test_read_file_whole_and_ranges(call: Harness, folder: Path) -> None:
    out = await call("read_file", path="notes.txt")
    assert out.data == {"path": "notes.txt", "content": "alpha\nbeta\ngamma\n", "start_line": 1, "end_line": 3,
                        "total_lines": 3}
    out = await call("read_file", path=str(folder / "notes.txt"), start_line=2, end_line=2)
    assert out.data["content"] == "beta\n" and out.data["start_line"] == 2
    out = await call("read_file", path="notes.txt", start_line=9)
    assert out.is_error and "has 3 lines" in out.data
    out = await call("read_file", path="notes.txt", start_line=3, end_line=1)
    assert out.is_error and "end_line" in out.data
    out = await call("read_file", path="missing.txt")
    assert out.is_error and "does not exist" in out.data and "list_files" in out.data
    out = await call("read_file", path="src")
    assert out.is_error and "is a folder" in out.data


async def test_read_file_caps_and_formats(call: Harness, folder: Path) -> None:
    (folder / "big.txt").write_text("".join(f"{n}\n" for n in range(1, 5001)))
    out = await call("read_file", path="big.txt")
    assert out.data["truncated"] and out.data["end_line"] == 2000
    assert "start_line=2001" in out.data["note"]
    (folder / "crlf.txt").write_bytes(b"one\r\ntwo")
    out = await call("read_file", path="crlf.txt")
    assert out.data["content"] == "one\ntwo" and out.data["format"] == "utf-8, CRLF"
    assert "does not end with a newline" in out.data["note"]
    (folder / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    out = await call("read_file", path="pic.png")
    assert out.is_error and "binary" in out.data


async def test_list_files(call: Harness, folder: Path) -> None:
    for skipped in (".git", "node_modules", ".venv", "__pycache__"):
        (folder / skipped).mkdir()
        (folder / skipped / "x.txt").write_text("x")
    out = await call("list_files")
    assert [e["path"] for e in out.data["entries"]] == ["src/", "notes.txt"]
    out = await call("list_files", recursive=True)
    assert [e["path"] for e in out.data["entries"]] == ["src/", "notes.txt", "src/app.py"]
    out = await call("list_files", recursive=True, pattern="*.py")
    assert [e["path"] for e in out.data["entries"]] == ["src/app.py"]
    assert (await call("list_files", path="notes.txt")).is_error
    assert (await call("list_files", path="nope")).is_error
    (folder / "many").mkdir()
    for n in range(1100):
        (folder / "many" / f"{n:04}.txt").write_text("")
    out = await call("list_files", path="many")
    assert len(out.data["entries"]) == 1000 and out.data["truncated"] and "pattern" in out.data["note"]


async def test_search_files(call: Harness, folder: Path) -> None:
    out = await call("search_files", query="beta")
    assert out.data["matches"] == [{"path": "notes.txt", "line": 2, "text": "beta"}]
    out = await call("search_files", query="HELLO")  # capitals: case-sensitive
    assert out.data["matches"] == []
    out = await call("search_files", query="hello")  # smart case
    assert out.data["matches"][0]["path"] == "src/app.py"
    out = await call("search_files", query=r"^def \w+", regex=True, path="src")
    assert out.data["matches"] == [{"path": "src/app.py", "line": 1, "text": "def main():"}]
    out = await call("search_files", query="(", regex=True)
    assert out.is_error and "regex=false" in out.data
    (folder / "blob.bin").write_bytes(b"beta\x00\x01")
    out = await call("search_files", query="beta", max_results=1)
    assert len(out.data["matches"]) == 1


async def test_a_regex_that_backtracks_for_hours_stops_at_the_time_limit_and_the_loop_runs_meanwhile(
    call: Harness, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's (a|aa)+$ on a line of 60 a's backtracks for longer than anyone waits. With `re` the search held the
    interpreter's lock throughout (an audit: a 0.5 s heartbeat ticked once in 11.6 s on 27 a's; 60 would take
    years): the window froze, and the search never ended. Now it stops at the search's time limit, saying so,
    and the event loop runs while it matches."""
    import asyncio

    from workspace.tools.files import reading

    monkeypatch.setattr(reading, "MAX_SEARCH_SECONDS", 1.0)
    (folder / "trap.txt").write_text("a" * 60 + "!\n", encoding="utf-8")
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    beating = asyncio.create_task(heartbeat())
    try:
        out = await asyncio.wait_for(call("search_files", query="(a|aa)+$", regex=True, path="trap.txt"), 120)
    finally:
        beating.cancel()
    assert not out.is_error, out.data
    assert out.data["matches"] == [] and out.data["truncated"]
    assert "stopped after 1 s" in out.data["note"] and "cannot backtrack" in out.data["note"]
    assert ticks >= 5, ticks  # about 20 in the second; a search holding the lock gives 0 or 1
    # A literal search is bounded by the same limit (a folder too large to search in time).
    monkeypatch.setattr(reading, "MAX_SEARCH_SECONDS", 0.0)
    out = await call("search_files", query="beta")
    assert out.data["matches"] == [] and "stopped after 0 s" in out.data["note"]


async def test_a_cancelled_regex_search_tells_its_thread_to_stop_and_the_thread_ends(
    call: Harness, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop during a search of a backtracking pattern: the tool's task was cancelled, but its worker thread had no
    flag to look at and matched on until the search's 20 s limit. Now the cancel sets the search's flag (counted
    here), the match runs in short slices of time with the flag looked at between them, and the thread ends
    soon after (the limit below only guards against the old run-on)."""
    import asyncio
    import threading

    from workspace.tools import files
    from workspace.tools.files import common

    flags: list[Any] = []

    class Counted(threading.Event):
        def __init__(self) -> None:
            super().__init__()
            self.sets = self.seen = 0
            flags.append(self)

        def set(self) -> None:
            self.sets += 1
            super().set()

        def is_set(self) -> bool:
            stopped = super().is_set()
            self.seen += stopped  # the worker looked and was told to stop
            return stopped

    monkeypatch.setattr(common, "_stop_flag", Counted, raising=False)
    started, ended = threading.Event(), threading.Event()
    search = files._search_files

    def watched(*args: Any, **kwargs: Any) -> Any:
        started.set()
        try:
            return search(*args, **kwargs)
        finally:
            ended.set()

    monkeypatch.setattr(files, "_search_files", watched)
    (folder / "trap.txt").write_text("a" * 60 + "!\n", encoding="utf-8")
    task = asyncio.create_task(call("search_files", query="(a|aa)+$", regex=True, path="trap.txt"))
    assert await asyncio.to_thread(started.wait, 60)
    await asyncio.sleep(0.3)  # matching the line (a few slices in)
    assert not ended.is_set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(ended.wait, 8), "the search's thread ran on after the cancel"
    assert [flag.sets for flag in flags] == [1] and flags[0].seen >= 1


async def test_a_line_too_slow_for_a_regex_is_skipped_and_the_search_goes_on(call: Harness, folder: Path) -> None:
    """A line the pattern backtracks on for more than the longest slice is skipped and named; the lines after it are
    still searched (the search did not spend the rest of its 20 s on it)."""
    (folder / "trap.txt").write_text("a" * 60 + "!\n" + "aaaa\n", encoding="utf-8")
    out = await call("search_files", query="(a|aa)+$", regex=True, path="trap.txt")
    assert [(m["line"], m["text"]) for m in out.data["matches"]] == [(2, "aaaa")]
    assert "trap.txt:1" in out.data["note"] and "skipped" in out.data["note"]
    assert not out.data.get("truncated")


async def test_reads_see_this_runs_proposals(call: Harness, folder: Path) -> None:
    await call("edit_file", path="notes.txt", search="beta", replace="BETA")
    await call("create_file", path="docs/new.md", content="# new beta\n")
    await call("delete_file", path="src/app.py")
    out = await call("read_file", path="notes.txt")
    assert out.data["content"] == "alpha\nBETA\ngamma\n" and "not on disk yet" in out.data["pending"]
    out = await call("read_file", path="src/app.py")
    assert out.is_error and "deleted by a change proposed in this run" in out.data
    out = await call("list_files", recursive=True)
    entries = {e["path"]: e for e in out.data["entries"]}
    assert entries["docs/new.md"]["pending"] == "created"
    assert entries["src/app.py"]["pending"] == "deleted"
    out = await call("search_files", query="beta")
    assert {(m["path"], m.get("pending")) for m in out.data["matches"]} == {("notes.txt", True),
                                                                          ("docs/new.md", True)}
    assert (folder / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"  # nothing on disk
    assert not (folder / "docs").exists() and (folder / "src" / "app.py").exists()


# -- writing ----------------------------------------------------------------------------------------------


async def test_writes_propose_and_emit_but_never_touch_disk(call: Harness, folder: Path) -> None:
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    results = [
        await call("write_file", path="notes.txt", content="rewritten\n"),
        await call("edit_file", path="src/app.py", search="print('hello')", replace="print('bye')"),
        await call("create_file", path="new/file.txt", content="hi\n"),
        await call("rename_file", path="src/app.py", new_path="src/main.py"),
    ]
    for out in results:
        assert not out.is_error, out.data
        assert out.data["status"] == "pending_review"
        assert "awaits the user's review" in out.data["message"]
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert [k for k, _ in call.events] == ["change_proposed"] * 4
    assert call.events[1][1]["files"][0]["path"] == "src/app.py"
    assert call.events[1][1]["tool_id"] == "call-1"
    assert results[1].data["diff"].count("\n-") == 1 and "+    print('bye')" in results[1].data["diff"]
    changes = call.context.changes
    assert [f.action for f in changes.files] == ["modify", "rename", "create"]
    assert changes.run_id == "run-1" and changes.robot == "helper"


async def test_edit_file_errors_tell_the_model_how_to_fix_the_call(call: Harness, folder: Path) -> None:
    out = await call("edit_file", path="src/app.py", search="print('hello')\n  main()", replace="x")
    assert out.is_error and "not found" in out.data and "whitespace" in out.data
    out = await call("edit_file", path="src/app.py", search="def main():\n  print('hello')", replace="x")
    assert out.is_error and "differs only in whitespace/indentation starts at line 1" in out.data
    out = await call("edit_file", path="src/app.py", search="prnt('hello')", replace="x")
    assert out.is_error and "closest line is line 2" in out.data
    out = await call("edit_file", path="src/app.py", search="main", replace="run")
    assert out.is_error and "occurs 3 times" in out.data and "lines 1, 5, 6" in out.data
    assert "replace_all=true" in out.data
    out = await call("edit_file", path="src/app.py", search="main", replace="run", replace_all=True)
    assert not out.is_error and out.data["status"] == "pending_review"
    out = await call("edit_file", path="src/app.py", search="x", replace="x")
    assert out.is_error and "same" in out.data
    out = await call("edit_file", path="src/app.py", search="", replace="x")
    assert out.is_error and "empty" in out.data
    out = await call("create_file", path="notes.txt", content="x")
    assert out.is_error and "already exists" in out.data
    out = await call("delete_file", path="src")
    assert out.is_error and "folder" in out.data
    out = await call("rename_file", path="notes.txt", new_path="src/app.py")
    assert out.is_error and "already exists" in out.data


async def test_edits_keep_newline_style_and_encoding(call: Harness, folder: Path) -> None:
    (folder / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (folder / "old.txt").write_bytes("caf\xe9\nna\xefve\n".encode("latin-1"))
    (folder / "tail.txt").write_bytes(b"no newline at the end")
    out = await call("edit_file", path="win.txt", search="one\ntwo", replace="uno\ndos\nmas")
    assert not out.is_error, out.data
    out = await call("write_file", path="old.txt", content="caf\xe9\nna\xefve!\n")
    assert not out.is_error, out.data
    out = await call("edit_file", path="old.txt", search="caf\xe9", replace="\u2603")
    assert out.is_error and "cannot hold the character" in out.data
    out = await call("edit_file", path="tail.txt", search="no newline", replace="still no newline")
    assert not out.is_error
    changes = call.context.changes
    assert changes.read_bytes("win.txt") == b"uno\r\ndos\r\nmas\r\nthree\r\n"
    assert changes.read_bytes("old.txt") == "caf\xe9\nna\xefve!\n".encode("latin-1")
    assert changes.read_bytes("tail.txt") == b"still no newline at the end"
    (folder / "pic.bin").write_bytes(b"\x00\x01\x02")
    out = await call("write_file", path="pic.bin", content="text")
    assert out.is_error and "binary" in out.data
    out = await call("edit_file", path="pic.bin", search="a", replace="b")
    assert out.is_error and "binary" in out.data


async def test_apply_patch_multi_file(call: Harness, folder: Path) -> None:
    (folder / "win.txt").write_bytes(b"a\r\nb\r\nc\r\nd\r\n")
    patch = """Here is the patch:
diff --git a/notes.txt b/notes.txt
--- a/notes.txt
+++ b/notes.txt
@@ -1,3 +1,4 @@
 alpha
-beta
+BETA
+beta two
 gamma
--- a/win.txt
+++ b/win.txt
@@ -2,2 +2,2 @@
 b
-c
+C
--- /dev/null
+++ b/docs/readme.md
@@ -0,0 +1,2 @@
+# Docs
+text
diff --git a/src/app.py b/src/main.py
similarity index 90%
rename from src/app.py
rename to src/main.py
--- a/src/app.py
+++ b/src/main.py
@@ -40,2 +40,2 @@ def main():
 if __name__ == '__main__':
-    main()
+    main()  # run
"""
    out = await call("apply_patch", patch=patch)
    assert not out.is_error, out.data
    assert len(out.data["files"]) == 4
    changes = call.context.changes
    assert changes.read_bytes("notes.txt") == b"alpha\nBETA\nbeta two\ngamma\n"
    assert changes.read_bytes("win.txt") == b"a\r\nb\r\nC\r\nd\r\n"
    assert changes.read_bytes("docs/readme.md") == b"# Docs\ntext\n"
    assert changes.read_bytes("src/main.py").endswith(b"    main()  # run\n")  # type: ignore[union-attr]
    assert changes.read_bytes("src/app.py") is None
    assert (folder / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"


async def test_apply_patch_is_all_or_nothing(call: Harness, folder: Path) -> None:
    patch = """--- a/notes.txt
+++ b/notes.txt
@@ -1,2 +1,2 @@
-alpha
+ALPHA
 beta
--- a/src/app.py
+++ b/src/app.py
@@ -1,2 +1,2 @@
 def main():
-    print('goodbye')
+    print('hi')
"""
    out = await call("apply_patch", patch=patch)
    assert out.is_error and "Hunk 1 of 'src/app.py'" in out.data and "Nothing was changed" in out.data
    assert call.context.changes.files == []
    out = await call("apply_patch", patch="just some prose")
    assert out.is_error and "unified diff" in out.data


async def test_no_folder_readonly_and_auto(folder: Path) -> None:
    none = Harness(None, None)
    out = await none("read_file", path="notes.txt")
    assert out.is_error and "No folder is open" in out.data and "Open Folder" in out.data
    out = await none("write_file", path="x.txt", content="x")
    assert out.is_error and "No folder is open" in out.data
    read_only = Harness(folder, ChangeSet(folder, mode="readonly"))
    assert not (await read_only("read_file", path="notes.txt")).is_error
    out = await read_only("edit_file", path="notes.txt", search="beta", replace="BETA")
    assert out.is_error and "read-only" in out.data
    auto = Harness(folder, ChangeSet(folder, mode="auto"))
    out = await auto("edit_file", path="notes.txt", search="beta", replace="BETA")
    assert not out.is_error and out.data["status"] == "applied" and "undo" in out.data["message"]
    assert (folder / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert [k for k, _ in auto.events] == ["change_proposed", "change_decided"]
    assert auto.events[1][1]["checkpoint_id"]


# -- the agent loop ------------------------------------------------------------------------------------------


async def test_agent_proposes_user_decides_next_turn_is_told(folder: Path) -> None:
    (folder / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
    provider = ScriptedProvider()
    provider.enqueue(
        ["I'll make both edits.", ToolCall("edit_file", {"path": "a.txt", "search": "two", "replace": "TWO"}),
         ToolCall("edit_file", {"path": "notes.txt", "search": "gamma", "replace": "GAMMA"})],
        [ToolCall("edit_file", {"path": "a.txt", "search": "six", "replace": "SIX"})],
        "Proposed three hunks.",
        "Understood: I will leave notes.txt alone.",
    )
    robot = Robot("helper", system_prompt="You edit files.", tools=FILE_TOOLS, provider=provider, folder=folder)
    changes = ChangeSet(folder, thread_id="thread-1")
    run = robot.stream("Uppercase some words", folder=folder, changes=changes, thread_id="thread-1")
    events = [e async for e in run]
    assert isinstance(events[-1], ev.RunFinished)
    proposed = [e for e in events if isinstance(e, ev.ChangeProposed)]
    assert len(proposed) == 3 and all(e.change_set_id == changes.id for e in proposed)
    # The model saw "awaits review" tool results, and the second edit of a.txt matched the proposed text.
    tool_results = [m for m in provider.history[1].messages if m.is_tool_result]
    assert all("awaits the user's review" in str(m.content) for m in tool_results)
    assert (folder / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"

    # The user reviews: a.txt has two hunks, accept one and reject the other; reject notes.txt.
    a = changes.file("a.txt")
    assert [h.old_lines for h in a.hunks] == [["two\n"], ["six\n"]]
    changes.accept(a.hunks[0].id)
    changes.reject(a.hunks[1].id, reason="six stays lowercase")
    changes.reject_file("notes.txt", reason="do not touch notes")
    result = changes.apply()
    assert result.ok
    assert (folder / "a.txt").read_text() == "one\nTWO\nthree\nfour\nfive\nsix\nseven\n"
    assert (folder / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    decided = changes.decided_event(seq=len(events) + 1)
    assert decided.run_id == run.run_id and decided.robot == "helper"

    # The next turn starts from the truth.
    message = compose_user_message(changes.take_outcome_message(), "Thanks!")
    await robot.arun(message, folder=folder, changes=ChangeSet(folder, thread_id="thread-1"))
    told = provider.history[-1].messages[-1]
    assert told.is_user
    text = str(told.content)
    assert "a.txt: partly applied" in text
    assert "hunk 1 (line 2) accepted" in text
    assert 'hunk 2 (line 6) rejected (reason: "six stays lowercase")' in text
    assert 'notes.txt: edit rejected — reason: "do not touch notes"' in text
    assert text.endswith("Thanks!")
    # Undo of the thread's last change set restores the file.
    assert changes.history.undo().ok
    assert (folder / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"


async def test_parallel_edits_of_one_file_in_a_turn_compose(folder: Path) -> None:
    (folder / "many.txt").write_text("".join(f"item {n}\n" for n in range(40)))
    calls = [ToolCall("edit_file", {"path": "many.txt", "search": f"item {n}\n", "replace": f"ITEM {n}\n"})
             for n in range(0, 40, 4)]
    provider = ScriptedProvider([calls, "Done."])
    robot = Robot("helper", system_prompt="x", tools=FILE_TOOLS, provider=provider, folder=folder)
    changes = ChangeSet(folder)
    events = [e async for e in robot.stream("shout", changes=changes)]
    assert not [e for e in events if isinstance(e, ev.ToolError)]
    assert len([e for e in events if isinstance(e, ev.ChangeProposed)]) == 10
    (fc,) = changes.files
    assert len(fc.hunks) == 10
    expected = "".join(f"ITEM {n}\n" if n % 4 == 0 else f"item {n}\n" for n in range(40))
    assert changes.read_bytes("many.txt") == expected.encode()


async def test_robot_without_explicit_change_set_gets_one(folder: Path) -> None:
    provider = ScriptedProvider([[ToolCall("create_file", {"path": "hello.txt", "content": "hi\n"})], "Done."])
    robot = Robot("helper", system_prompt="x", tools=FILE_TOOLS, provider=provider, folder=folder)
    run = robot.stream("make hello.txt")
    await run.wait()
    changes = run.spec.changes
    assert isinstance(changes, ChangeSet) and [f.path for f in changes.files] == ["hello.txt"]
    assert not (folder / "hello.txt").exists()


# -- the command line -------------------------------------------------------------------------------------------


@pytest.fixture
def robot_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots" / "file-helper.md"
    path.parent.mkdir()
    path.write_text("---\nname: file-helper\ndescription: edits files\ntools: [" + ", ".join(FILE_TOOLS)
                    + "]\n---\nYou help with the files of the opened folder.\n")
    return path


def _cli(*argv: str) -> int:
    from workspace.cli import main

    return main(list(argv))


def test_cli_apply_auto_never_and_review(folder: Path, robot_file: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "x.txt").write_text("say a here\nplain\nplain\nplain\nplain\nand a there\n")
    message = 'replace "a here" with "b here" in x.txt'
    assert _cli("run", str(robot_file), message, "--folder", str(folder), "--apply", "never") == 0
    assert (folder / "x.txt").read_text().startswith("say a here")
    assert "NOT applied" in capsys.readouterr().out

    assert _cli("run", str(robot_file), message, "--folder", str(folder), "--apply", "auto") == 0
    assert (folder / "x.txt").read_text().startswith("say b here")
    out = capsys.readouterr().out
    # In auto mode each write is applied as the tool runs (with its own checkpoint), and the tool
    # result says so — the model is never told "awaits review" for a change already on disk.
    assert "edit accepted and written" in out and "awaits" not in out

    read_fd, write_fd = os.pipe()  # the answers, as if typed (or piped) into the terminal
    os.write(write_fd, b"n\nnot now\n")
    os.close(write_fd)
    message = 'replace "and a there" with "and b there" in x.txt'
    with open(read_fd, encoding="utf-8") as answers:
        monkeypatch.setattr(sys, "stdin", answers)
        assert _cli("run", str(robot_file), message, "--folder", str(folder), "--apply", "review") == 0
    out = capsys.readouterr().out
    assert "-and a there" in out and "+and b there" in out
    assert 'rejected — reason: "not now"' in out
    assert (folder / "x.txt").read_text().endswith("and a there\n")
