"""Verify in the review: the folder's verify command runs in the real sandbox on the proposed set and on
exactly the accepted hunks, a failing one stops the apply until the person says otherwise, the model is
told, an untrusted folder's command is ignored, and ``robotlab changes verify`` / ``--json`` show it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace import events as ev
from workspace import trust
from workspace.changes import split_user_message
from workspace.isolation import SandboxUnavailable, sandbox_for_platform
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.session import Workspace
from workspace.session.verify import VerifyFailed

try:
    sandbox_for_platform()
except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
    pytest.skip(f"no sandbox on this machine: {exc}", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(180)
TEXT = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
#: Prints the file as the sandbox shows it, and fails while "NINE" is in it.
VERIFY = "cat a.txt; ! grep -q NINE a.txt"


def make_folder(tmp_path: Path, *, trusted: bool = True, verify: str = VERIFY) -> Path:
    folder = tmp_path / "project"
    (folder / ".robotlab").mkdir(parents=True)
    (folder / "a.txt").write_text(TEXT, encoding="utf-8")
    (folder / ".robotlab" / "config.yaml").write_text(f"review:\n  verify: {json.dumps(verify)}\n", encoding="utf-8")
    if trusted:
        trust.trust(folder)
    return folder


def two_edits(*more: object) -> ScriptedProvider:
    return ScriptedProvider([
        [ToolCall("edit_file", {"path": "a.txt", "search": "two", "replace": "TWO"}),
         ToolCall("edit_file", {"path": "a.txt", "search": "nine", "replace": "NINE"})],
        "I proposed two edits.", *more])


async def test_verify_sees_the_proposal_then_only_the_accepted_hunk_and_the_model_is_told(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    provider = two_edits("Thanks.")
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=provider)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        proposed = await session.verify_changes("proposed")
        assert proposed is not None and proposed.subset == "proposed"
        assert "TWO" in proposed.output and "NINE" in proposed.output and not proposed.passed
        assert proposed.exit_code == 1 and proposed.change_set_id == session.changes.id
        assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT  # the disk never saw it

        first, _second = session.changes.hunks()
        session.changes.accept(first.id)  # one of two: the other stays undecided
        accepted = await session.verify_changes("accepted")
        assert accepted is not None and accepted.passed and accepted.exit_code == 0
        assert "TWO" in accepted.output and "NINE" not in accepted.output and "nine" in accepted.output
        assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT

        result = await session.apply_changes()  # verifies the accepted hunk again: passes, so it is written
        assert not result.conflicts
        text = (folder / "a.txt").read_text(encoding="utf-8")
        assert "TWO" in text and "NINE" not in text
        recorded = [e for t in session.transcript() for e in t.events if isinstance(e, ev.VerifyFinished)]
        assert [e.subset for e in recorded] == ["proposed", "accepted", "accepted"]

        await session.send("go on").wait()
        note, _typed = split_user_message(str(provider.history[-1].messages[-1].content))
        assert note is not None and f"The verify command `{VERIFY}` passed on the hunks the user accepted" in note
    finally:
        await ws.aclose()


async def test_a_failing_accepted_set_is_not_applied_until_the_caller_says_so(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    provider = two_edits("I will fix it.")
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=provider)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        session.changes.accept_all()
        with pytest.raises(VerifyFailed) as failed:
            await session.apply_changes()
        assert not failed.value.event.passed and failed.value.event.subset == "accepted"
        assert "nothing was applied" in str(failed.value)
        assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT
        assert session.changes.pending_files  # still waiting for review

        await session.apply_changes(if_verify_fails="apply")
        assert "NINE" in (folder / "a.txt").read_text(encoding="utf-8")
        await session.send("what now?").wait()
        note, _typed = split_user_message(str(provider.history[-1].messages[-1].content))
        assert note is not None and f"The verify command `{VERIFY}` FAILED on the hunks the user accepted (exit code 1)" \
            in note
        assert "    NINE" in note  # the end of its output, so the robot can fix what failed
    finally:
        await ws.aclose()


async def test_with_auto_verify_a_proposing_run_is_verified_and_a_newer_verify_supersedes_a_running_one(
        tmp_path: Path) -> None:
    from workspace.session.verify import VerifyProgress

    folder = make_folder(tmp_path)
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=two_edits("Nothing to change.", "Done."))
    seen: list[VerifyProgress] = []
    ws.auto_verify = True
    ws.verify_listeners.append(seen.append)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        task = session._verify_task
        assert task is not None and seen and seen[0].running and seen[0].subset == "proposed"
        event = await asyncio.wait_for(task, 120)  # bounds a hang only
        assert event is not None and not event.passed and "NINE" in event.output
        assert seen[-1].event == event and not seen[-1].running and session.verifying == seen[-1]
        recorded = [e for t in session.transcript() for e in t.events if isinstance(e, ev.VerifyFinished)]
        assert [(e.subset, e.passed) for e in recorded] == [("proposed", False)]  # recorded as a manual one is

        seen.clear()
        await session.send("anything else?").wait()  # proposes nothing: no verify
        assert session._verify_task is None and seen == []

        slow = session.start_verify("proposed")
        assert slow is not None
        newer = session.start_verify("accepted")  # the person asked again: the first one is cancelled
        assert newer is not None and newer is not slow
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(slow, 30)
        superseded = [p for p in seen if p.superseded]
        assert len(superseded) == 1 and superseded[0].subset == "proposed"
        assert session.verifying is not None and session.verifying.subset == "accepted"
        await asyncio.wait_for(newer, 120)
        assert seen[-1].subset == "accepted" and seen[-1].event is not None and not seen[-1].superseded
    finally:
        await ws.aclose()


async def test_an_untrusted_folders_verify_is_ignored_with_a_notice(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, trusted=False)
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=two_edits())
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        setting = session.verify_setting()
        assert setting.command is None
        assert setting.notice is not None and "not trusted" in setting.notice and "robotlab trust" in setting.notice
        assert await session.verify_changes("proposed") is None
        session.changes.accept_all()
        await session.apply_changes()  # no verify: applied as before
        assert "NINE" in (folder / "a.txt").read_text(encoding="utf-8")
    finally:
        await ws.aclose()


def robotlab(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120, input=stdin)


async def _thread_with_proposal(tmp_path: Path, folder: Path) -> str:
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=two_edits())
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        assert session.changes is not None and len(session.changes.hunks()) == 2
        return session.thread_id
    finally:
        await ws.aclose()


async def test_changes_verify_exit_codes_and_json(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    thread_id = await _thread_with_proposal(tmp_path, folder)
    db = str(tmp_path / "db.sqlite")

    failed = robotlab("changes", "verify", "--db", db, "--folder", str(folder))
    assert failed.returncode == 1, failed.stderr
    assert "✗ verify failed on the proposed changes" in failed.stdout and "NINE" in failed.stdout

    passed = robotlab("changes", "verify", "--db", db, "--folder", str(folder), "--thread", thread_id[:8],
                      "--accepted", "--json")  # nothing accepted yet: the folder as it is passes
    assert passed.returncode == 0, passed.stderr
    [event] = [json.loads(line) for line in passed.stdout.splitlines()]
    assert event["kind"] == "verify_finished" and event["passed"] is True and event["subset"] == "accepted"
    assert event["exit_code"] == 0 and "nine" in event["output"] and isinstance(event["duration"], float)
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT

    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=two_edits())
    try:  # kept with the thread's changes: the model hears the latest verify with the review outcome
        changes = ws.open_thread(thread_id).changes
        assert changes is not None and changes.last_verify is not None
        assert changes.last_verify["subset"] == "accepted" and changes.last_verify["passed"] is True
    finally:
        await ws.aclose()


async def test_changes_verify_without_a_command_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, trusted=False)
    await _thread_with_proposal(tmp_path, folder)
    result = robotlab("changes", "verify", "--db", str(tmp_path / "db.sqlite"), "--folder", str(folder))
    assert result.returncode == 2
    assert "is ignored: the folder" in result.stderr and "No verify command: set review.verify" in result.stderr


def run_line(folder: Path, server: FakeLLMServer, *extra: str) -> list[str]:
    return ["--folder", str(folder), "run", "file-helper", "capitalise", "--model", "openai/fake",
            "--api-base", server.base_url + "/v1", *extra]


def test_run_json_has_verify_finished_and_review_asks_before_applying_a_failing_set(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("edit_file", {"path": "a.txt", "search": "nine", "replace": "NINE"}))
        server.enqueue("Proposed.")
        result = robotlab(*run_line(folder, server, "--json", "--apply", "review", "--no-record"), stdin="y\nn\n")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    verifies = [e for e in events if e["kind"] == "verify_finished"]
    assert [(e["subset"], e["passed"], e["exit_code"]) for e in verifies] == [("proposed", False, 1),
                                                                               ("accepted", False, 1)]
    assert "Apply them anyway? [y/N]" in result.stderr
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT  # "n": nothing written
    [decided] = [e for e in events if e["kind"] == "change_decided"]
    assert all(not f.get("accepted") for f in decided["outcome"]), decided


def test_a_robots_verify_comes_first_and_one_inside_an_untrusted_folder_is_ignored(tmp_path: Path) -> None:
    from workspace.config import load_config
    from workspace.robot import Robot
    from workspace.session.verify import verify_command
    from workspace.templates import Template

    folder = make_folder(tmp_path)
    mine = tmp_path / "robots" / "checker.md"
    mine.parent.mkdir()
    mine.write_text("---\nverify: make lint\n---\nYou check.\n", encoding="utf-8")
    setting = verify_command(load_config(folder), Robot("checker", template=Template.load(mine)), folder=folder)
    assert setting.command == "make lint" and setting.notice is None

    untrusted = make_folder(tmp_path / "other", trusted=False)
    theirs = untrusted / "theirs.md"
    theirs.write_text("---\nverify: curl evil\n---\nYou check.\n", encoding="utf-8")
    setting = verify_command(load_config(untrusted), Robot("theirs", template=Template.load(theirs)), folder=untrusted)
    assert setting.command is None  # neither the robot's nor the folder's config's
    assert setting.notice is not None and "theirs.md" in setting.notice and "robotlab trust" in setting.notice
    trust.trust(untrusted)
    setting = verify_command(load_config(untrusted), Robot("theirs", template=Template.load(theirs)), folder=untrusted)
    assert setting.command == "curl evil"  # trusted by the user: the folder's robot may name it


def test_the_review_applies_a_failing_set_when_told_to_and_says_so(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("edit_file", {"path": "a.txt", "search": "nine", "replace": "NINE"}))
        server.enqueue("Proposed.")
        result = robotlab(*run_line(folder, server, "--apply", "review", "--no-record"), stdin="y\ny\n")
    assert result.returncode == 0, result.stderr
    assert "✗ verify failed on the proposed changes" in result.stdout
    assert "✗ verify failed on the accepted hunks" in result.stdout and "Apply them anyway? [y/N]" in result.stdout
    assert "NINE" in (folder / "a.txt").read_text(encoding="utf-8")


async def test_a_verify_that_cannot_run_says_why_to_its_listeners(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from workspace.session.verify import VerifyProgress
    from workspace.tools import commands

    folder = make_folder(tmp_path)
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=two_edits())
    seen: list[VerifyProgress] = []
    ws.verify_listeners.append(seen.append)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        assert session._verify_task is None  # auto_verify is off unless a front end turns it on
        empty = tmp_path / "bin"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))  # no bubblewrap on this machine now
        monkeypatch.setattr(commands, "_box", None)
        task = session.start_verify("proposed")
        assert task is not None and await asyncio.wait_for(task, 60) is None
        assert [p.running for p in seen] == [True, False]
        assert seen[-1].error is not None and "could not run" in seen[-1].error and "bwrap" in seen[-1].error
        assert session.verifying == seen[-1]
    finally:
        await ws.aclose()
