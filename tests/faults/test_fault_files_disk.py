"""File names the file system cannot hold, git's quoted patch headers, a full disk while a run is
recorded, and a run stopped before its first word: each a case of the fault matrix.

- A name longer than a file system holds (255 bytes in UTF-8 for one part of a path) is refused
  when the change is proposed (every writing tool, and ChangeSet itself), never when it is
  applied; a name that fits gets a temporary name that fits too (cut by bytes, not characters).
- ``apply_patch`` reads git's quoted headers (``--- "a/x y.md"``, C escapes such as ``\\303\\251``).
- ``README.md/`` is not ``README.md``: a trailing slash names a folder.
- A full disk (SQLite's own SQLITE_FULL: ``PRAGMA max_page_count``; a real small tmpfs for the
  command line) while a run is recorded: the run says its end could not be saved and why, and
  ``robotlab run`` exits with EXIT_NOT_SAVED.
- A run stopped (or failed) before any text leaves a conversation a strict chat template accepts:
  user and assistant alternate in the next request.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from faultkit import ROOT

from workspace import events as ev
from workspace.changes import ChangeSet, CheckpointStore
from workspace.changes.folderio import temp_name
from workspace.cli.runs import EXIT_NOT_SAVED
from workspace.config import load_config
from workspace.errors import SandboxError
from workspace.messages import STOPPED_BEFORE_ANSWERING
from workspace.persistence import Store
from workspace.robot import Robot
from workspace.sandbox import NAME_MAX, TEMP_SUFFIX
from workspace.session import Workspace
from workspace.session.recording import NOT_SAVED
from workspace.tools import registry
from workspace.tools.base import ToolContext

# -- file names ----------------------------------------------------------------------------------------

E_ACUTE = "\u00e9"  # 2 bytes in UTF-8
HAN = "\u6f22"  # 3 bytes in UTF-8


class Harness:
    def __init__(self, folder: Path, store: Path, *, mode: str = "review") -> None:
        self.folder = folder
        self.changes = ChangeSet(folder, store=CheckpointStore(store), mode=mode)  # type: ignore[arg-type]
        self.context = ToolContext(robot="r", run_id="run", call_id="call", folder=folder, changes=self.changes,
                                   emit=lambda event: None)

    async def call(self, name: str, **args: Any) -> Any:
        tool = registry.get(name)
        assert tool is not None
        return await tool.invoke(args, self.context)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("# readme\n")
    (folder / "src").mkdir()
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


async def test_a_name_too_long_in_bytes_is_refused_when_proposed(project: Path, tmp_path: Path,
                                                                  matrix: Any) -> None:
    """86 characters of 3 bytes: 258 bytes, one part of a path a file system cannot hold."""
    matrix.case("file names", "a name of 258 bytes (86 3-byte characters): refused by every writing tool")
    long = HAN * 86 + ".md"
    assert len(long) < NAME_MAX < len(long.encode())
    harness = Harness(project, tmp_path / "store")
    before = _files(project)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"path": long, "content": "x\n"}), ("create_file", {"path": f"src/{long}", "content": "x\n"}),
        ("rename_file", {"path": "README.md", "new_path": long}),
        ("apply_patch", {"patch": f"--- /dev/null\n+++ b/{long}\n@@ -0,0 +1 @@\n+x\n"}),
        ("apply_patch", {"patch": f"--- a/README.md\n+++ b/{long}\n@@ -1 +1 @@\n-# readme\n+# x\n"}),
    ]
    for tool, args in calls:
        out = await harness.call(tool, **args)
        assert out.is_error and "longer than file systems allow" in str(out.data), (tool, out.data)
    for propose in (lambda: harness.changes.propose(long, b"x\n"),
                    lambda: harness.changes.propose_rename("README.md", long)):
        with pytest.raises(SandboxError, match="longer than file systems allow"):
            propose()
    assert harness.changes.files == []
    matrix.lost(0 if _files(project) == before else 1, "files changed")
    assert _files(project) == before


@pytest.mark.parametrize("char", [E_ACUTE, HAN], ids=["2-byte", "3-byte"])
def test_the_temporary_name_fits_in_bytes(char: str) -> None:
    for count in (1, 50, 84, 127, 200):
        name = char * count
        tmp = temp_name(name)
        assert len(tmp.encode()) <= NAME_MAX, (count, len(tmp.encode()))
        assert tmp.endswith(TEMP_SUFFIX) and tmp.startswith(".")
        tmp.encode("utf-8")  # no half character


async def test_a_long_name_that_fits_is_written_through_a_temporary_name_that_fits(project: Path, tmp_path: Path,
                                                                                    matrix: Any) -> None:
    """84 characters of 3 bytes (252 bytes) fit; the temporary file's name must fit as well."""
    matrix.case("file names", "a name of 252 bytes (84 3-byte characters) is applied (its temp name cut by bytes)")
    name = HAN * 84
    assert len(name.encode()) == 252
    harness = Harness(project, tmp_path / "store", mode="auto")
    out = await harness.call("write_file", path=name, content="long\n")
    assert not out.is_error, out.data
    assert out.data["status"] == "applied", out.data
    assert (project / name).read_text() == "long\n"
    edited = await harness.call("edit_file", path=name, search="long", replace="longer")
    assert not edited.is_error and (project / name).read_text() == "longer\n", edited.data
    assert not [p for p in project.iterdir() if p.name.endswith(TEMP_SUFFIX)]
    matrix.lost(0, "")


GIT_QUOTED = [
    ("a space", "x y.md", '"a/x y.md"', '"b/x y.md"'),
    ("an octal-escaped \u00e9", f"caf{E_ACUTE}.md", '"a/caf\\303\\251.md"', '"b/caf\\303\\251.md"'),
    ("a backslash and a quote", 'x\\"q.md', '"a/x\\\\\\"q.md"', '"b/x\\\\\\"q.md"'),
]


@pytest.mark.parametrize(("what", "name", "old", "new"), GIT_QUOTED, ids=[c[0] for c in GIT_QUOTED])
async def test_apply_patch_reads_git_quoted_headers(project: Path, tmp_path: Path, what: str, name: str, old: str,
                                                    new: str, matrix: Any) -> None:
    matrix.case("file names", f"apply_patch with git's quoted header: {what}")
    (project / name).write_text("one\ntwo\n")
    harness = Harness(project, tmp_path / "store", mode="auto")
    patch = (f"diff --git {old} {new}\nindex 1111111..2222222 100644\n--- {old}\n+++ {new}\n"
             "@@ -1,2 +1,2 @@\n one\n-two\n+three\n")
    out = await harness.call("apply_patch", patch=patch)
    assert not getattr(out, "is_error", False), out.data
    assert (project / name).read_text() == "one\nthree\n"
    assert sorted(p.name for p in project.iterdir()) == sorted(["README.md", "src", name])
    matrix.lost(0, "")


async def test_apply_patch_creates_and_renames_with_quoted_names(project: Path, tmp_path: Path, matrix: Any) -> None:
    matrix.case("file names", "apply_patch: a quoted new file and a quoted rename")
    harness = Harness(project, tmp_path / "store", mode="auto")
    created = await harness.call("apply_patch", patch=(
        'diff --git "a/new \\303\\251.md" "b/new \\303\\251.md"\nnew file mode 100644\n--- /dev/null\n'
        '+++ "b/new \\303\\251.md"\n@@ -0,0 +1 @@\n+hello\n'))
    assert not created.is_error, created.data
    assert (project / f"new {E_ACUTE}.md").read_text() == "hello\n"
    renamed = await harness.call("apply_patch", patch=(
        'diff --git a/README.md "b/read me \\303\\251.md"\nsimilarity index 100%\nrename from README.md\n'
        'rename to "read me \\303\\251.md"\n'))
    assert not renamed.is_error, renamed.data
    assert (project / f"read me {E_ACUTE}.md").read_text() == "# readme\n" and not (project / "README.md").exists()
    matrix.lost(0, "")


async def test_a_quoted_name_without_its_closing_quote_is_refused_with_the_fix(project: Path, tmp_path: Path) -> None:
    harness = Harness(project, tmp_path / "store")
    out = await harness.call("apply_patch", patch='--- "a/README.md\n+++ "b/README.md\n@@ -1 +1 @@\n-# readme\n+# x\n')
    assert out.is_error and "no closing one" in str(out.data) and '"a/x y.md"' in str(out.data), out.data
    assert harness.changes.files == []


async def test_a_trailing_slash_is_not_the_file(project: Path, tmp_path: Path, matrix: Any) -> None:
    matrix.case("file names", "'README.md/' (a trailing slash) is refused, not taken as README.md")
    harness = Harness(project, tmp_path / "store")
    before = _files(project)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "README.md/"}), ("write_file", {"path": "README.md/", "content": "x\n"}),
        ("edit_file", {"path": "README.md/", "search": "readme", "replace": "x"}),
        ("delete_file", {"path": "README.md/"}), ("rename_file", {"path": "README.md/", "new_path": "x.md"}),
        ("rename_file", {"path": "README.md", "new_path": "notes/"}),
        ("write_file", {"path": "notes/", "content": "x\n"}), ("create_file", {"path": "new.md/", "content": "x\n"}),
        ("apply_patch", {"patch": "--- a/README.md/\n+++ b/README.md/\n@@ -1 +1 @@\n-# readme\n+# x\n"}),
    ]
    for tool, args in calls:
        out = await harness.call(tool, **args)
        assert out.is_error and "ends with '/'" in str(out.data), (tool, out.data)
    assert harness.changes.files == []
    listed = await harness.call("list_files", path="src/")  # a folder with its slash is still fine
    assert not listed.is_error, listed.data
    matrix.lost(0 if _files(project) == before else 1, "files changed")


# -- a run stopped (or failed) before its first word ------------------------------------------------

HOW_LONG = 60.0  # an anti-hang bound: each of these runs takes well under a second


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default_text="fine") as srv:
        yield srv


def _robot(address: str) -> Robot:
    config = load_config(env={}, overrides={"llm": {"provider": "auto", "max_retries": 0, "max_wait": 60}})
    return Robot("r", system_prompt="You help.", model="openai/fake", api_base=address, config=config,
                 api_key="sk-test")


def _roles(request: dict[str, Any]) -> list[str]:
    return [str(m["role"]) for m in request["messages"] if m["role"] != "system"]


def _alternates(roles: list[str]) -> bool:
    """What a strict chat template accepts: user and assistant take turns (tool results follow their call)."""
    spoken = [r for r in roles if r in ("user", "assistant")]
    return bool(spoken) and spoken[0] == "user" and all(a != b for a, b in itertools.pairwise(spoken))


async def _stop_before_the_first_token(run: Any, llm: FakeLLMServer, count: int) -> list[ev.Event]:
    async def drain() -> list[ev.Event]:
        return [e async for e in run]

    task = asyncio.ensure_future(drain())
    assert await asyncio.to_thread(llm.wait_for_requests, count, HOW_LONG)
    run.cancel()
    events = await asyncio.wait_for(task, timeout=HOW_LONG)
    assert isinstance(events[-1], ev.RunCancelled), events[-1]
    assert not [e for e in events if isinstance(e, ev.TextDelta | ev.Text)]
    return events


HOW_IT_ENDS = ["stopped", "failed"]


async def _end_early(how: str, run: Any, llm: FakeLLMServer, count: int) -> None:
    if how == "stopped":
        await _stop_before_the_first_token(run, llm, count)
    else:
        events = [e async for e in run]
        assert isinstance(events[-1], ev.RunFailed), events[-1]


def _enqueue_early_end(how: str, llm: FakeLLMServer) -> None:
    llm.enqueue(Reply.say("late", stall_before=30) if how == "stopped" else Reply.error(400, "bad request"))


@pytest.mark.parametrize("how", HOW_IT_ENDS)
async def test_a_run_ended_before_any_text_leaves_alternating_turns_in_the_library(llm: FakeLLMServer, how: str,
                                                                                    matrix: Any) -> None:
    matrix.case("stopped runs", f"library: a run {how} before any text, then another message")
    llm.clear()
    robot = _robot(llm.base_url + "/v1")
    before = len(llm.requests)
    _enqueue_early_end(how, llm)
    await asyncio.wait_for(_end_early(how, robot.stream("first question"), llm, before + 1), timeout=HOW_LONG)
    llm.enqueue(Reply.say("second answer"))
    events = await asyncio.wait_for(_collect(robot.stream("second question")), timeout=HOW_LONG)
    assert isinstance(events[-1], ev.RunFinished), events[-1]
    roles = _roles(llm.requests[-1])
    assert _alternates(roles), roles
    sent = [m for m in llm.requests[-1]["messages"] if m["role"] != "system"]
    assert sent[0]["content"] == "first question" and sent[-1]["content"] == "second question"
    assert sent[1] == {"role": "assistant", "content": STOPPED_BEFORE_ANSWERING}
    matrix.lost(0, "")


async def _collect(run: Any) -> list[ev.Event]:
    return [e async for e in run]


@pytest.mark.parametrize("how", HOW_IT_ENDS)
async def test_a_run_ended_before_any_text_leaves_alternating_turns_in_a_thread(llm: FakeLLMServer, tmp_path: Path,
                                                                                 how: str, matrix: Any) -> None:
    """The window's session and ``robotlab run --continue``: the conversation rebuilt from the store."""
    matrix.case("stopped runs", f"thread: a run {how} before any text, then another message (and reopened)")
    llm.clear()
    address = llm.base_url + "/v1"
    db = tmp_path / "threads.db"
    workspace = Workspace(db_path=db, config=_robot(address).config)
    try:
        session = workspace.new_thread("r", robot=_robot(address))
        before = len(llm.requests)
        _enqueue_early_end(how, llm)
        await asyncio.wait_for(_end_early(how, session.send("first question"), llm, before + 1), timeout=HOW_LONG)
        llm.enqueue(Reply.say("second answer"))
        run = session.send("second question")
        await asyncio.wait_for(run.wait(), timeout=HOW_LONG)
        roles = _roles(llm.requests[-1])
        assert _alternates(roles), roles
        thread_id = session.thread_id
    finally:
        workspace.close()
    again = Workspace(db_path=db, config=_robot(address).config)  # reopened: the conversation from the store
    try:
        session = again.open_thread(thread_id, robot=_robot(address))
        llm.enqueue(Reply.say("third answer"))
        await asyncio.wait_for(session.send("third question").wait(), timeout=HOW_LONG)
        roles = _roles(llm.requests[-1])
        assert _alternates(roles) and roles.count("user") == 3, roles
    finally:
        again.close()
    matrix.lost(0, "")


# -- a full disk while a run is recorded --------------------------------------------------------------

BIG_ANSWER = "All work and no play makes a long answer. " * 6000  # about 250 KB: many new pages


def _fill_the_database(store: Any) -> None:
    """SQLite's own "database or disk is full" (SQLITE_FULL) from now on: the file may not grow."""
    pages = int(next(iter(store.iter_rows("PRAGMA page_count")))[0])
    assert int(next(iter(store.iter_rows(f"PRAGMA max_page_count = {pages}")))[0]) == pages


async def test_a_full_disk_while_a_run_is_recorded_is_said_in_the_thread(llm: FakeLLMServer, tmp_path: Path,
                                                                         matrix: Any) -> None:
    """The window's session (and the library's): the run says its end could not be saved, and why."""
    matrix.case("full disk", "the database fills up during a run: the thread says its end was not saved")
    llm.clear()
    address = llm.base_url + "/v1"
    workspace = Workspace(db_path=tmp_path / "threads.db", config=_robot(address).config)
    try:
        session = workspace.new_thread("r", robot=_robot(address))
        llm.enqueue(Reply.say(BIG_ANSWER, chunk_size=2000))
        run = session.send("write a lot")
        seen: list[ev.Event] = []

        async def watch() -> None:
            async for event in run:
                if isinstance(event, ev.RunStarted):
                    _fill_the_database(workspace.store)
                seen.append(event)

        await asyncio.wait_for(watch(), timeout=HOW_LONG)
        assert isinstance(seen[-1], ev.RunFinished), seen[-1]
        assert run.save_error is not None and "database or disk is full" in run.save_error, run.save_error
        notices = [e for e in seen if isinstance(e, ev.RunStatus) and e.state == "notice"]
        assert notices and notices[-1] is seen[-2], seen[-3:]  # said just before the end
        assert notices[-1].detail.startswith(NOT_SAVED) and "database or disk is full" in notices[-1].detail
        assert seen[-1].result.last_text_content == BIG_ANSWER  # the run itself is whole
        from tests.ui.chat_dump import dump_state  # the window's chat (Qt-free): a warning in the turn
        from ui.chat.model.presenter import ChatPresenter

        presenter = ChatPresenter()
        presenter.add_user("write a lot")
        presenter.feed_all(seen)
        assert f"notice [warning] '{NOT_SAVED}: " in dump_state(presenter.state), dump_state(presenter.state)
        thread_id, turn_id = session.thread_id, run.turn_id
        list(workspace.store.iter_rows("PRAGMA max_page_count = 1073741823"))  # space again ...
    finally:
        workspace.close()  # ... and what was kept in memory is written on closing
    store = Store.open(tmp_path / "threads.db")
    try:
        turn = next(t for t in store.turns(thread_id) if t.id == turn_id)
        kept = store.history_messages(thread_id)
    finally:
        store.close()
    lost = (turn.status != "finished") + (kept[-1].content != BIG_ANSWER)
    matrix.lost(lost, "the end of the run, after space was freed")
    assert turn.status == "finished" and kept[-1].content == BIG_ANSWER


def _can_mount_a_small_disk() -> bool:
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


FILL = """
import os, sys
path, free = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(fd, b"x" * 4096)
except OSError:
    pass
os.close(fd)
os.truncate(path, max(0, os.path.getsize(path) - free))
"""


@pytest.mark.skipif(not _can_mount_a_small_disk(), reason="needs a mount namespace (unshare -m) to mount a small tmpfs")
def test_robotlab_run_on_a_disk_that_fills_up_says_so_and_exits_non_zero(llm: FakeLLMServer, tmp_path: Path,
                                                                         matrix: Any) -> None:
    """A real full disk: a 2 MB tmpfs (in a mount namespace of its own) holding the database, filled
    but for 200 KB before ``robotlab run --json`` streams an answer of 2 MB."""
    matrix.case("full disk", "robotlab run --json on a tmpfs that fills up: said, exit status EXIT_NOT_SAVED")
    disk = tmp_path / "disk"
    disk.mkdir()
    db = disk / "threads.db"
    llm.clear()
    llm.enqueue(Reply.say("All work and no play makes a long answer. " * 50_000, chunk_size=4000))
    py = shlex.quote(sys.executable)
    script = (f"mount -t tmpfs -o size=2m tmpfs {shlex.quote(str(disk))} || exit 97\n"
              f"{py} -c {shlex.quote(f'from workspace.persistence import Store; Store.open({str(db)!r}).close()')}"
              " || exit 98\n"
              f"{py} -c {shlex.quote(FILL)} {shlex.quote(str(disk / 'filler'))} 200000 || exit 99\n"
              f"exec {py} -m workspace run assistant 'write a lot' --json --model openai/fake "
              f"--api-base {llm.base_url}/v1 --db {shlex.quote(str(db))}\n")
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "ROBOTLAB_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=HOW_LONG * 2)
    assert done.returncode == EXIT_NOT_SAVED, (done.returncode, done.stderr[-2000:])
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # nothing but JSON lines
    assert lines[-1]["kind"] == "run_finished"
    said = lines[-2]
    assert said["kind"] == "run_status" and said["state"] == "notice", said
    assert said["detail"].startswith(NOT_SAVED) and "database or disk is full" in said["detail"], said
    assert "robotlab: the end of the run could not be saved: " in done.stderr and "disk is full" in done.stderr
    assert "Traceback" not in done.stderr
    matrix.lost(0, "")
