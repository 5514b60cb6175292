"""File-system faults: a symlink swapped in during an apply, names that forge the review, kill -9
mid-apply and its recovery, temp files in listings."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes.killed_apply import BIG, FILES, TEMP, file_states, kill_mid_apply, killed_project, temp_files

from workspace.changes import ChangeSet, CheckpointStore

# -- the swap race -------------------------------------------------------------------------------

#: Another process swapping ``sub`` and a symlink to the outside folder in a tight loop, atomically
#: (Linux's renameat2 with RENAME_EXCHANGE: ``sub`` is always either the folder or the symlink).
SWAPPER = textwrap.dedent("""
    import ctypes, os, sys, time
    folder, outside = sys.argv[1], sys.argv[2]
    sub, link = os.path.join(folder, "sub"), os.path.join(folder, ".sub-link")
    os.symlink(outside, link, target_is_directory=True)
    libc = ctypes.CDLL(None, use_errno=True)

    def exchange():
        if libc.renameat2(-100, sub.encode(), -100, link.encode(), 2) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")

    print("ready", flush=True)
    for line in sys.stdin:  # one trial: "DELAY STOPFILE"; swap from DELAY seconds on until STOPFILE exists
        delay, stop = line.split(" ", 1)
        time.sleep(float(delay))
        swaps = 0
        while not os.path.exists(stop.strip()):
            exchange()  # sub is the symlink
            exchange()  # sub is the folder again
            swaps += 1
        print(swaps, flush=True)  # sub is the folder again
    os.unlink(link)
""")

MODIFIED, CREATED, DELETED = 200, 30, 20
TRIALS = 40


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _reset(folder: Path) -> None:
    sub = folder / "sub"
    for path in sorted(sub.rglob("*"), reverse=True) if sub.exists() else []:
        path.rmdir() if path.is_dir() else path.unlink()
    sub.mkdir(exist_ok=True)
    for n in range(MODIFIED + DELETED):
        (sub / f"m{n:03}.txt").write_text(f"old {n}\n")


@pytest.fixture
def fast_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync makes each trial take seconds on a real disk; durability is not what these trials test."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@pytest.mark.skipif(sys.platform != "linux", reason="the swapper uses Linux's renameat2(RENAME_EXCHANGE)")
def test_a_symlink_swapped_in_during_the_apply_redirects_nothing(tmp_path: Path, fast_fsync: None,
                                                                 matrix: Any) -> None:
    matrix.case("path escapes", f"symlink swap race during apply ({TRIALS} trials)")
    folder, outside = tmp_path / "project", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    for n in range(MODIFIED + DELETED):
        (outside / f"m{n:03}.txt").write_text(f"outside {n}\n")  # same names: a followed write would land here
    outside_before = _tree(outside)
    store = CheckpointStore(tmp_path / "store")
    rng = random.Random(16)
    outcomes = {"applied": 0, "refused": 0}
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(folder), str(outside)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert swapper.stdin is not None and swapper.stdout is not None
    assert swapper.stdout.readline().strip() == "ready"
    try:
        swaps = 0
        for trial in range(TRIALS):
            _reset(folder)
            changes = ChangeSet(folder, store=store, thread_id=f"swap-{trial}")
            for n in range(MODIFIED):
                changes.propose(f"sub/m{n:03}.txt", f"new {n}\n".encode())
            for n in range(MODIFIED, MODIFIED + DELETED):
                changes.propose(f"sub/m{n:03}.txt", None)
            for n in range(CREATED):
                changes.propose(f"sub/fresh/c{n:03}.txt", f"created {n}\n".encode())
            changes.accept_all()
            stop = tmp_path / f"stop-{trial}"
            swapper.stdin.write(f"{rng.uniform(0, 0.03):.4f} {stop}\n")
            swapper.stdin.flush()
            try:
                result = changes.apply()  # never raises: a conflict or an error says what happened
            finally:
                stop.touch()
                swaps += int(swapper.stdout.readline())
            assert (folder / "sub").is_dir() and not (folder / "sub").is_symlink()
            outside_now = _tree(outside)
            stray = [p for p in [*outside.rglob("*"), *folder.rglob("*")] if TEMP in p.name]
            changed = {k for k in outside_before.keys() | outside_now.keys()
                       if outside_before.get(k) != outside_now.get(k)}
            matrix.lost(len(changed) + len(stray), "files written outside or temp files left")
            # Nothing was written outside: no file changed or appeared there, no temp file either.
            assert _tree(outside) == outside_before, f"trial {trial}: a write landed outside the folder"
            assert not [p for p in outside.rglob("*") if TEMP in p.name]
            assert not [p for p in folder.rglob("*") if TEMP in p.name]
            # Inside, the set is wholly new (applied) or wholly old (refused, or restored after a failure).
            inside = _tree(folder / "sub")
            if result.ok:
                outcomes["applied"] += 1
                assert all(inside[f"m{n:03}.txt"] == f"new {n}\n".encode() for n in range(MODIFIED))
                assert not any(f"m{n:03}.txt" in inside for n in range(MODIFIED, MODIFIED + DELETED))
                assert all(inside[f"fresh/c{n:03}.txt"] == f"created {n}\n".encode() for n in range(CREATED))
            else:
                outcomes["refused"] += 1
                assert result.error and (result.conflicts or "Nothing was applied" in result.error)
                assert all(inside[f"m{n:03}.txt"] == f"old {n}\n".encode() for n in range(MODIFIED + DELETED))
                assert not (folder / "sub" / "fresh").exists()
        swapper.stdin.close()
        assert swapper.wait(timeout=30) == 0
    finally:
        if swapper.poll() is None:  # a failed assertion above: do not leave it swapping
            swapper.kill()
            swapper.wait()
    assert sum(outcomes.values()) == TRIALS and swaps > TRIALS
    print(f"swap race: {outcomes}, {swaps} swaps")


def test_a_folder_symlinked_in_between_the_check_and_the_write_is_refused_and_rolled_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, matrix: Any) -> None:
    """A folder the apply creates is replaced by a symlink out right after the conflict check: the
    write refuses to go through it, the file already written is restored, and apply says so as a
    conflict (never a raw OSError)."""
    matrix.case("path escapes", "a folder symlinked out between the check and the write")
    from workspace.changes.history import ChangeHistory

    folder, outside = tmp_path / "project", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "a.txt").write_text("old a\n")
    changes = ChangeSet(folder, store=CheckpointStore(tmp_path / "store"))
    changes.propose("a.txt", b"new a\n")
    changes.propose("new/b.txt", b"new b\n")
    changes.accept_all()
    begin = ChangeHistory.begin

    def begin_then_swap(self: ChangeHistory, *args: object, **kwargs: object) -> object:
        entry = begin(self, *args, **kwargs)  # type: ignore[arg-type]
        os.symlink(outside, folder / "new", target_is_directory=True)  # after the checks, before the writes
        return entry

    monkeypatch.setattr(ChangeHistory, "begin", begin_then_swap)
    result = changes.apply()
    assert not result.ok and result.error
    assert "symbolic link" in result.error and "every file is unchanged" in result.error
    assert [c.path for c in result.conflicts] == ["new/b.txt"] and "symbolic link" in result.conflicts[0].message
    assert list(outside.iterdir()) == []
    assert (folder / "a.txt").read_text() == "old a\n"
    assert not [p for p in folder.rglob("*") if TEMP in p.name]
    assert all(fc.state == "pending" for fc in changes.files)


def test_a_vanished_folder_or_unreadable_file_is_a_conflict_not_an_exception(tmp_path: Path, matrix: Any) -> None:
    matrix.case("path escapes", "a folder replaced by a file, an unreadable file (a conflict)")
    folder = tmp_path / "project"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.txt").write_text("old\n")
    changes = ChangeSet(folder, store=CheckpointStore(tmp_path / "store"))
    changes.propose("sub/a.txt", b"new\n")
    changes.accept_all()
    (folder / "sub" / "a.txt").unlink()
    (folder / "sub").rmdir()
    (folder / "sub").write_text("a file where the folder was\n")
    result = changes.apply()
    assert not result.ok and result.conflicts and result.error
    if os.geteuid() != 0:  # root reads anything
        (folder / "sub").unlink()
        (folder / "sub").mkdir()
        (folder / "sub" / "a.txt").write_text("old\n")
        os.chmod(folder / "sub" / "a.txt", 0)
        result = changes.apply()
        assert not result.ok and result.conflicts and "cannot be read" in result.conflicts[0].message


def test_the_path_based_fallback_writes_and_refuses_symlinks_too(tmp_path: Path, matrix: Any) -> None:
    """Where dir_fd is missing (Windows), FolderIO works on paths with the same checks."""
    matrix.case("path escapes", "the path-based fallback (no dir_fd) refuses symlinks")
    from workspace.changes import FolderIO, UnsafePathError
    from workspace.sandbox import Sandbox

    folder, outside = tmp_path / "project", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    with FolderIO(Sandbox(folder), dir_fd=False) as io:
        created: list[str] = []
        io.write("a/b/c.txt", b"hello", created=created)
        assert created == ["a", "a/b"] and io.state("a/b/c.txt") == (b"hello", (folder / "a/b/c.txt").stat().st_mode
                                                                     & 0o7777)
        assert io.unlink("a/b/c.txt") and not io.unlink("a/b/c.txt")
        os.symlink(outside, folder / "link", target_is_directory=True)
        with pytest.raises(UnsafePathError, match="symbolic link"):
            io.write("link/x.txt", b"x")
        io.sync()
    assert list(outside.iterdir()) == []


# -- names that forge the review ------------------------------------------------------------------

FORGED = "x\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# readme\n+# README"
BAD_NAMES = [
    (FORGED, "U+000A"),
    ("invoice\u202etxt.exe", "U+202E"),  # right-to-left override: shows as "invoiceexe.txt"
    ("a\u2066b.txt", "U+2066"),  # left-to-right isolate
    ("zero\u200bwidth.txt", "U+200B"),
    ("line\u2028sep.txt", "U+2028"),
    ("tab\there.txt", "U+0009"),
    ("esc\x1b[2Khidden.txt", "U+001B"),
    ("nel\x85.txt", "U+0085"),
    ("bom\ufeff.txt", "U+FEFF"),
    ("tag\U000e0041.txt", "U+E0041"),
]


def _harness(folder: Path) -> tuple[ChangeSet, Any]:
    from workspace.tools import registry
    from workspace.tools.base import ToolContext

    changes = ChangeSet(folder)
    context = ToolContext(robot="helper", run_id="run-1", call_id="call-1", folder=folder, changes=changes,
                          emit=lambda event: None)

    async def call(name: str, **args: Any) -> Any:
        tool = registry.get(name)
        assert tool is not None
        return await tool.invoke(args, context)

    return changes, call


@pytest.mark.parametrize(("name", "code"), BAD_NAMES)
async def test_control_format_and_bidi_names_are_refused_by_every_writing_tool(tmp_path: Path, name: str,
                                                                                 code: str, matrix: Any) -> None:
    matrix.case("forged names", f"{code} in a name, every writing tool")
    from workspace.sandbox import unsafe_character

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("# readme\n")
    changes, call = _harness(folder)
    calls = [("create_file", {"path": name, "content": "hi\n"}),
             ("write_file", {"path": name, "content": "hi\n"}),
             ("edit_file", {"path": name, "search": "a", "replace": "b"}),
             ("delete_file", {"path": name}),
             ("rename_file", {"path": "README.md", "new_path": name})]
    if "\n" not in name and "\t" not in name:  # a patch header is one line, a tab starts its timestamp
        calls.append(("apply_patch", {"patch": f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+hi\n"}))
        calls.append(("apply_patch", {"patch": f"--- a/README.md\n+++ b/{name}\n@@ -1 +1 @@\n-# readme\n+# x\n"}))
    for tool, args in calls:
        out = await call(tool, **args)
        message = str(out.data)
        assert out.is_error, (tool, message)
        assert code in message and "characters" in message, (tool, message)
        assert unsafe_character(message) is None, (tool, message)  # the refusal itself shows the name escaped
    assert changes.files == []
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"]


def test_display_path_escapes_every_unsafe_character(matrix: Any) -> None:
    matrix.case("forged names", "every unsafe character shown escaped")
    from workspace.sandbox import display_path, unsafe_character

    for name, _ in BAD_NAMES:
        shown = display_path(name)
        assert unsafe_character(shown) is None and shown.isprintable(), shown
    assert display_path(FORGED) == "x\\n--- a/README.md\\n+++ b/README.md\\n@@ -1 +1 @@\\n-# readme\\n+# README"
    assert display_path("invoice\u202etxt.exe") == "invoice\\u202etxt.exe"
    assert display_path("tag\U000e0041.txt") == "tag\\U000e0041.txt"
    assert display_path("naïve café/日本語 ok.txt") == "naïve café/日本語 ok.txt"  # printable stays as it is


def _forged_change_set(folder: Path) -> ChangeSet:
    """A change set holding a forged name, as one saved by an older version would (tools refuse them now)."""
    (folder / "notes.txt").write_text("one\n")
    changes = ChangeSet(folder)
    fc = changes.propose("notes.txt", b"two\n")
    assert fc is not None
    fc.path = FORGED
    fc.recompute()
    return changes


async def test_the_terminal_review_and_the_run_lines_show_forged_names_escaped(tmp_path: Path,
                                                                                 matrix: Any) -> None:
    matrix.case("forged names", "the terminal review and run lines")
    import io

    from workspace import events as ev
    from workspace.cli.render import EventPrinter
    from workspace.cli.review import settle_in_terminal

    folder = tmp_path / "project"
    folder.mkdir()
    for mode, answers in (("review", ["n", ""]), ("never", [])):
        changes = _forged_change_set(folder)
        printer = EventPrinter(io.StringIO())
        prompts: list[str] = []
        queue = list(answers)

        async def ask(prompt: str, queue: list[str] = queue, prompts: list[str] = prompts) -> str:
            prompts.append(prompt)
            if not queue:
                raise EOFError
            return queue.pop(0)

        await settle_in_terminal(changes, mode=mode, printer=printer, ask=ask)
        shown = printer.out.getvalue() + "".join(prompts)  # type: ignore[attr-defined]
        assert "x\\n--- a/README.md" in shown, shown
        lines = shown.splitlines()
        assert not any(line.startswith("--- a/README.md") or line.startswith("+++ b/README.md") for line in lines)
        assert "+# README" not in lines
    printer = EventPrinter(io.StringIO())
    printer(ev.ToolUse(run_id="r", robot="helper", seq=1, id="c", name="create_file",
                       input={"path": "invoice\u202etxt.exe", "content": "x"}))
    printer(ev.ChangeProposed(run_id="r", robot="helper", seq=2, change_set_id="cs",
                              files=[{"path": FORGED, "added": 1, "removed": 0}]))
    printer(ev.ChangeDecided(run_id="r", robot="helper", seq=3, change_set_id="cs",
                             outcome=[{"path": "evil\u202etxt.exe", "accepted": [0], "rejected": []}]))
    text = printer.out.getvalue()  # type: ignore[attr-defined]
    assert "\u202e" not in text and "invoice\\u202etxt.exe" in text and "evil\\u202etxt.exe" in text
    assert "x\\n--- a/README.md" in text and len(text.splitlines()) == 3
    json_printer = EventPrinter(io.StringIO(), json_lines=True)
    json_printer(ev.ChangeProposed(run_id="r", robot="helper", seq=2, change_set_id="cs",
                                   files=[{"path": "evil\u202etxt.exe"}]))
    line = json_printer.out.getvalue()  # type: ignore[attr-defined]
    assert "\u202e" not in line and json.loads(line)["files"][0]["path"] == "evil\u202etxt.exe"


def test_exports_show_forged_names_escaped(tmp_path: Path, matrix: Any) -> None:
    matrix.case("forged names", "exports (md, json, jsonl)")
    from workspace import events as ev
    from workspace.exports import export_thread
    from workspace.persistence import Store

    with Store(tmp_path / "threads.db") as store:
        thread = store.create_thread(robot="helper", title="names")
        turn = store.add_turn(thread.id, user_text="make files", parent_turn_id=None)
        store.append_events(thread.id, turn.id, [
            ev.ToolUse(run_id="r", robot="helper", seq=1, id="c", name="create_file",
                       input={"path": "invoice\u202etxt.exe", "content": "x"}),
            ev.ChangeProposed(run_id="r", robot="helper", seq=2, change_set_id="cs",
                              files=[{"path": FORGED, "action": "create", "added": 1, "removed": 0}]),
            ev.ChangeDecided(run_id="r", robot="helper", seq=3, change_set_id="cs",
                             outcome=[{"path": "invoice\u202etxt.exe", "accepted": [0], "rejected": []}]),
        ])
        exports = {fmt: export_thread(store, thread.id, fmt) for fmt in ("md", "json", "jsonl")}
    for fmt, text in exports.items():
        assert "\u202e" not in text, fmt
        assert "--- a/README.md" not in text.replace("\\n--- a/README.md", ""), fmt
    md = exports["md"]
    assert "- `x\\n--- a/README.md" in md and "invoice\\u202etxt.exe" in md
    events = [json.loads(line) for line in exports["jsonl"].splitlines()]
    assert events[0]["input"]["path"] == "invoice\u202etxt.exe"  # the data itself is unchanged
    assert events[1]["files"][0]["path"] == FORGED


# -- kill -9 during a multi-file apply, and recovery ----------------------------------------------------

TRIALS_KILLED = 6
ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize("direction", ["back", "forward"])
async def test_kill_9_mid_apply_is_found_and_recovered(tmp_path: Path, direction: str, matrix: Any) -> None:
    matrix.case("kill -9 during apply", f"mid-apply, recovered {direction}")
    from workspace.changes import ChangeHistory, find_interrupted_applies, recover

    folder = killed_project(tmp_path)
    store = CheckpointStore(tmp_path / "store")

    def still_running() -> None:  # the writer is alive (it holds its journal entry's lock): not reported
        assert find_interrupted_applies(folder, store=store) == []

    kill_mid_apply(folder, str(store.root), pause=6, while_paused=still_running)
    states = file_states(folder)  # each file whole: old or new
    assert sorted(states.values()).count("new") == 5 and len(temp_files(folder)) == 1
    assert not (store.root / "journal").exists() or list((store.root / "journal").iterdir())
    # Temp files never show in the tools' listings, searches or reads.
    _, call = _harness(folder)
    listed = await call("list_files", recursive=True)
    assert not [e for e in listed.data["entries"] if TEMP in e["path"]]
    found = await call("search_files", query="old 7")
    assert found.data["matches"] and not [m for m in found.data["matches"] if TEMP in m["path"]]
    temp = temp_files(folder)[0].relative_to(folder).as_posix()
    read = await call("read_file", path=temp)
    assert read.is_error and "does not exist" in str(read.data)
    written = await call("write_file", path="x" + TEMP, content="x")
    assert written.is_error and TEMP in str(written.data)

    [item] = find_interrupted_applies(folder, store=store)
    assert item.kind == "apply" and len(item.new_files) == 5 and len(item.temp_files) == 1
    assert "stopped while applying" in item.message() and "Roll it back" in item.message()
    result = recover(item, direction, store=store)
    assert result.ok, result.message
    assert result.temp_files == [temp] and "removed 1 temporary file" in result.message
    want = "old" if direction == "back" else "new"
    assert set(file_states(folder).values()) == {want}
    assert not temp_files(folder)
    assert (folder / "made").exists() is (direction == "forward")  # the folder the apply created
    assert find_interrupted_applies(folder, store=store) == []
    [entry] = ChangeHistory(folder, "killed", store=store).entries()
    assert entry.state == ("failed" if direction == "back" else "applied")


def test_kill_9_at_random_moments_leaves_every_file_whole(tmp_path: Path, matrix: Any) -> None:
    matrix.case("kill -9 during apply", f"at random moments ({TRIALS_KILLED} trials)")
    from workspace.changes import find_interrupted_applies, recover

    rng = random.Random(9)
    seen = {"interrupted": 0, "finished": 0}
    for trial in range(TRIALS_KILLED):
        (tmp_path / f"t{trial}").mkdir()
        folder = killed_project(tmp_path / f"t{trial}")
        store = CheckpointStore(tmp_path / f"t{trial}" / "store")
        kill_mid_apply(folder, str(store.root), delay=rng.uniform(0.0, 0.015))
        states = file_states(folder)  # raises KeyError on a half-written file
        items = find_interrupted_applies(folder, store=store)
        if not items:  # killed before the first write or after the last
            assert len(set(states.values())) == 1
            seen["finished"] += 1
            continue
        seen["interrupted"] += 1
        direction = "back" if trial % 2 else "forward"
        assert recover(items[0], direction, store=store).ok
        assert set(file_states(folder).values()) == {"old" if direction == "back" else "new"}
        assert not temp_files(folder)
    assert sum(seen.values()) == TRIALS_KILLED
    print(f"kill -9 at random moments: {seen}")


def test_the_command_line_reports_and_recovers_an_interrupted_apply(tmp_path: Path, robotlab_home: Path,
                                                                    matrix: Any) -> None:
    matrix.case("kill -9 during apply", "robotlab run reports it, changes recover")
    folder = killed_project(tmp_path)
    kill_mid_apply(folder, "-", pause=4)  # the default store, in ROBOTLAB_HOME

    def robotlab(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ui.main", *args], capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}, timeout=120, input=stdin)

    robot = robotlab_home / "config" / "robots" / "echoer.md"
    robot.parent.mkdir(parents=True, exist_ok=True)
    robot.write_text("---\ntools: []\n---\nYou help.")
    run = robotlab("run", "echoer", "hi", "--folder", str(folder), "--apply", "never")
    assert run.returncode == 0, run.stderr
    assert "stopped while applying" in run.stderr and "robotlab changes recover" in run.stderr
    listed = robotlab("changes", "recover", "--list")
    assert listed.returncode == 1 and "3 file(s) are new" in listed.stdout
    asked = robotlab("changes", "recover")  # not a terminal: lists, and says how to choose
    assert asked.returncode == 1 and "--back" in asked.stderr
    done = robotlab("changes", "recover", "--forward", "--folder", str(folder))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Completed the interrupted applying" in done.stdout and "removed 1 temporary file" in done.stdout
    assert set(file_states(folder).values()) == {"new"} and not temp_files(folder)
    again = robotlab("changes", "recover")
    assert again.returncode == 0 and "No interrupted apply" in again.stdout
    run = robotlab("run", "echoer", "hi", "--folder", str(folder), "--apply", "never")
    assert "stopped while" not in run.stderr


@pytest.mark.parametrize("direction", ["back", "forward"])
def test_kill_9_mid_undo_is_recovered(tmp_path: Path, direction: str, matrix: Any) -> None:
    matrix.case("kill -9 during apply", f"mid-undo, recovered {direction}")
    from workspace.changes import ChangeHistory, find_interrupted_applies, recover

    folder = killed_project(tmp_path)
    store = CheckpointStore(tmp_path / "store")
    kill_mid_apply(folder, str(store.root), pause=5, what="undo")
    assert sorted(file_states(folder).values()).count("old") >= 4 and len(temp_files(folder)) == 1
    [item] = find_interrupted_applies(folder, store=store)
    assert item.kind == "undo" and "stopped while undoing" in item.message()
    result = recover(item, direction, store=store)
    assert result.ok, result.message
    # Back: as before the undo (the change applied); forward: the undo done (every file old).
    assert set(file_states(folder).values()) == {"new" if direction == "back" else "old"}
    assert not temp_files(folder)
    [entry] = ChangeHistory(folder, "killed", store=store).entries()
    assert entry.state == ("applied" if direction == "back" else "undone")
    assert find_interrupted_applies(folder, store=store) == []


def test_an_entry_stuck_at_applying_without_a_journal_is_reported_and_recovered(tmp_path: Path, matrix: Any) -> None:
    """History entries an older version left at "applying" (no journal) are found too."""
    matrix.case("kill -9 during apply", "an entry left at applying without a journal")
    import shutil

    from workspace.changes import find_interrupted_applies, recover

    folder = killed_project(tmp_path)
    store = CheckpointStore(tmp_path / "store")
    kill_mid_apply(folder, str(store.root), pause=3)
    shutil.rmtree(store.root / "journal")  # as before journals existed
    [item] = find_interrupted_applies(folder, store=store)
    assert not item.journal and item.entry_id and len(item.new_files) == 2 and len(item.temp_files) == 1
    assert recover(item, "back", store=store).ok
    assert set(file_states(folder).values()) == {"old"} and not temp_files(folder)
    assert find_interrupted_applies(folder, store=store) == []


def test_a_file_changed_after_the_interruption_is_not_overwritten_unasked(tmp_path: Path, matrix: Any) -> None:
    matrix.case("kill -9 during apply", "a file changed after the interruption")
    from workspace.changes import find_interrupted_applies, recover

    folder = killed_project(tmp_path)
    store = CheckpointStore(tmp_path / "store")
    kill_mid_apply(folder, str(store.root), pause=4)
    (folder / "f11.txt").write_text("the user's own edit\n")
    [item] = find_interrupted_applies(folder, store=store)
    assert item.changed_files == ["f11.txt"] and "changed since" in item.message()
    refused = recover(item, "back", store=store)
    assert not refused.ok and refused.conflicts == ["f11.txt"] and "force" in refused.message
    assert (folder / "f11.txt").read_text() == "the user's own edit\n"
    forced = recover(item, "back", store=store, force=True)
    assert forced.ok and forced.saved_checkpoint_id
    assert store.load(forced.saved_checkpoint_id).files["f11.txt"] is not None  # the edit is kept there
    assert (folder / "f11.txt").read_bytes() == b"old 11\n" * (BIG // 7)


async def test_the_workspace_offers_recovery_to_the_window(tmp_path: Path, matrix: Any) -> None:
    matrix.case("kill -9 during apply", "the window is offered the recovery")
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    folder = killed_project(tmp_path)
    kill_mid_apply(folder, "-", pause=2)  # the default store, as the window uses it
    with Workspace(folder=folder, db_path=tmp_path / "threads.db", provider=ScriptedProvider()) as ws:
        items = ws.interrupted_applies()
        assert len(items) == 1 and ws.interrupted_applies(all_folders=True) == items
        notice = ws.recovery_notice(items)
        assert notice and "stopped while applying" in notice and "1 file(s) are new" in notice
        assert ws.recovery_notice([]) is None
        result = ws.recover_apply(items[0], "back")
        assert result.ok and "Rolled back" in result.message
        assert ws.interrupted_applies() == []
    assert set(file_states(folder).values()) == {"old"} and not temp_files(folder)


def test_an_apply_whose_rollback_failed_too_is_offered_for_recovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     matrix: Any) -> None:
    matrix.case("kill -9 during apply", "the apply and its rollback fail (disk full)")
    from workspace.changes import find_interrupted_applies, recover

    folder = killed_project(tmp_path)
    store = CheckpointStore(tmp_path / "store")
    changes = ChangeSet(folder, store=store, thread_id="t")
    for n in range(FILES):
        changes.propose(f"f{n:02}.txt", (f"new {n}\n".encode() * (BIG // 7)))
    changes.accept_all()
    real, count = os.replace, [0]

    def failing(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("dst_dir_fd") is not None:
            count[0] += 1
            if count[0] >= 4:  # the 4th write fails, and so does putting the first 3 back
                raise OSError(28, "No space left on device")
        real(src, dst, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", failing)
        result = changes.apply()
    assert not result.ok and result.error and "also failed" in result.error and "next start" in result.error
    assert sorted(file_states(folder).values()).count("new") == 3 and not temp_files(folder)
    [item] = find_interrupted_applies(folder, store=store)
    assert len(item.new_files) == 3
    assert recover(item, "back", store=store).ok
    assert set(file_states(folder).values()) == {"old"}
    assert find_interrupted_applies(folder, store=store) == []


def test_an_apply_across_more_folders_than_it_keeps_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          fast_fsync: None, matrix: Any) -> None:
    """Folder handles beyond the limit are closed (synced first); the apply and its undo still work
    and leave no descriptor open."""
    matrix.case("kill -9 during apply", "an apply across more folders than it keeps open")
    from workspace.changes import folderio

    monkeypatch.setattr(folderio, "MAX_OPEN_DIRS", 4)
    folder = tmp_path / "project"
    for n in range(30):
        (folder / f"d{n:02}" / "deeper").mkdir(parents=True)
        (folder / f"d{n:02}" / "deeper" / "f.txt").write_text(f"old {n}\n")
    open_before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    changes = ChangeSet(folder, store=CheckpointStore(tmp_path / "store"), thread_id="many")
    for n in range(30):
        changes.propose(f"d{n:02}/deeper/f.txt", f"new {n}\n".encode())
        changes.propose(f"e{n:02}/made.txt", b"made\n")
    changes.accept_all()
    assert changes.apply().ok
    assert all((folder / f"d{n:02}/deeper/f.txt").read_text() == f"new {n}\n" for n in range(30))
    assert changes.history.undo().ok
    assert all((folder / f"d{n:02}/deeper/f.txt").read_text() == f"old {n}\n" for n in range(30))
    assert not list(folder.glob("e*"))  # the folders the apply created are gone again
    if open_before is not None:
        assert len(os.listdir("/proc/self/fd")) == open_before
