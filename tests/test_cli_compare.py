"""Many robots at once on the command line, in subprocesses against the loopback model server (each model
answering its own way): ``robotlab run ... --compare`` / ``--robots``, then ``robotlab changes list``,
``changes apply --take`` and ``changes undo`` on the candidates' pending changes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.candidates import BASE, EDITS, edited, project
from fakes.llm_server import FakeLLMServer, Reply

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(240)  # bounds a hang: a handful of Python start-ups on a loaded machine


def answer(body: dict[str, Any]) -> Reply:
    model = body["model"]
    if body["messages"][-1].get("role") == "tool":
        return Reply.say(f"{model} edited app.py")
    last = str(body["messages"][-1].get("content"))
    if "Edit app.py" not in last:
        return Reply.say(f"{model} heard you")
    return Reply.tool("write_file", {"path": "app.py", "content": edited(model)})


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=answer) as srv:
        yield srv


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return project(tmp_path)


def robotlab(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120, stdin=subprocess.DEVNULL)


def compare(server: FakeLLMServer, folder: Path | None, *extra: str) -> subprocess.CompletedProcess[str]:
    where = ["--folder", str(folder)] if folder is not None else []
    return robotlab(*where, "run", "file-helper", "Edit app.py", "--model", "openai/model-a", "--api-base",
                    server.base_url + "/v1", *extra)


def listing(folder: Path, *extra: str) -> dict[str, Any]:
    result = robotlab("changes", "list", "--folder", str(folder), "--json", *extra)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_compare_shows_each_answer_under_its_model_and_leaves_the_changes_pending(server: FakeLLMServer,
                                                                                  folder: Path) -> None:
    result = compare(server, folder, "--compare", "openai/model-b,openai/model-c")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for index, model in enumerate(EDITS):
        head = next(line for line in out.splitlines() if line.startswith(f"── candidate {index}: openai/{model} ──"))
        assert "tokens" in head and " s" in head, head
        assert out.index(f"{model} edited app.py") > out.index(head)
    assert "robotlab changes list --thread" in result.stderr
    assert out.count("  proposed: app.py (2 hunks, +2 -2)") == 3, out
    assert (folder / "app.py").read_text() == BASE  # nothing written
    data = listing(folder)
    assert [c["candidate"] for c in data["candidates"]] == [0, 1, 2]
    assert [c["label"] for c in data["candidates"]] == ["openai/model-a", "openai/model-b", "openai/model-c"]
    assert len({c["thread_id"] for c in data["candidates"]}) == 3  # linked threads, one per candidate
    assert data["comparison"]
    assert [(h["id"], h["candidate"], h["path"], h["old_start"]) for h in data["hunks"]] == [
        ("c0.f1.h1", 0, "app.py", 2), ("c0.f1.h2", 0, "app.py", 8), ("c1.f1.h1", 1, "app.py", 2),
        ("c1.f1.h2", 1, "app.py", 9), ("c2.f1.h1", 2, "app.py", 2), ("c2.f1.h2", 2, "app.py", 5)]
    assert data["hunks"][3]["new_lines"] == ["B nine\n"]
    # The three line-2 hunks cannot be taken together: each names the others.
    assert data["hunks"][0]["overlaps"] == ["c1.f1.h1", "c2.f1.h1"] and data["hunks"][1]["overlaps"] == []
    text = robotlab("changes", "list", "--folder", str(folder)).stdout
    assert "c1.f1.h1  candidate 1 (openai/model-b)  app.py  hunk 1, line 2  +1 -1  (overlaps c0.f1.h1, c2.f1.h1: " \
        "take one)" in text, text
    # Any candidate's thread names the same comparison.
    again = listing(folder, "--thread", data["candidates"][2]["thread_id"][:8])
    assert [h["id"] for h in again["hunks"]] == [h["id"] for h in data["hunks"]]


def test_apply_takes_exactly_the_hunks_given_refuses_overlaps_and_undo_restores(server: FakeLLMServer,
                                                                                folder: Path) -> None:
    assert compare(server, folder, "--compare", "openai/model-b").returncode == 0
    refused = robotlab("changes", "apply", "--folder", str(folder), "--take", "c0.f1.h1", "c1.f1.h1")
    assert refused.returncode == 2, refused.stderr
    assert "c0.f1.h1 and c1.f1.h1 both change app.py" in refused.stderr
    assert (folder / "app.py").read_text() == BASE
    unknown = robotlab("changes", "apply", "--folder", str(folder), "--take", "c5.f1.h1")
    assert unknown.returncode == 2 and "No pending hunk 'c5.f1.h1'" in unknown.stderr

    applied = robotlab("changes", "apply", "--folder", str(folder), "--take", "c0.f1.h1", "c1.f1.h2")
    assert applied.returncode == 0, applied.stderr
    assert "Applied 2 hunks to app.py as one change" in applied.stdout
    expected = BASE.replace("line 2\n", "A two\n").replace("line 9\n", "B nine\n")
    assert (folder / "app.py").read_bytes() == expected.encode()
    nothing = robotlab("changes", "list", "--folder", str(folder))
    assert nothing.returncode == 2 and "No thread has pending changes" in nothing.stderr

    # Candidate 1's robot hears, with its next message, which hunks of whose were taken.
    thread = json.loads(robotlab("threads", "list", "--json").stdout)
    second = next(t for t in thread if t.get("metadata", {}).get("candidate") == 1)
    went_on = robotlab("--folder", str(folder), "run", "--thread", second["id"][:8], "And now?", "--api-base",
                       server.base_url + "/v1")
    assert went_on.returncode == 0, went_on.stderr
    told = str(server.requests[-1]["messages"][-1]["content"])
    assert "Taken — yours: app.py hunk 2 (line 9); from candidate 0 (openai/model-a): app.py hunk 1 (line 2)" \
        in told, told

    undone = robotlab("--folder", str(folder), "changes", "undo")  # the global --folder works too
    assert undone.returncode == 0, undone.stderr
    assert (folder / "app.py").read_bytes() == BASE.encode()


def test_apply_with_a_merge_writes_the_persons_lines_in_place_of_overlapping_hunks(
        server: FakeLLMServer, folder: Path, tmp_path: Path) -> None:
    assert compare(server, folder, "--compare", "openai/model-b").returncode == 0
    merged = tmp_path / "merged.txt"
    merged.write_text("A and B two\n")
    bad = robotlab("changes", "apply", "--folder", str(folder), "--take", "c0.f1.h1", "--merge", "c0.f1.h1")
    assert bad.returncode == 2 and "give HUNK_ID=FILE" in bad.stderr, bad.stderr
    gone = tmp_path / "no-such-merge.txt"
    missing = robotlab("changes", "apply", "--folder", str(folder), "--take", "c0.f1.h1", "--merge",
                       f"c0.f1.h1={gone}")
    assert missing.returncode == 2 and f"cannot read {gone}" in missing.stderr, missing.stderr
    assert (folder / "app.py").read_text() == BASE  # nothing written
    applied = robotlab("changes", "apply", "--folder", str(folder), "--take", "c0.f1.h1", "c1.f1.h1", "c1.f1.h2",
                       "--merge", f"c0.f1.h1={merged}")
    assert applied.returncode == 0, applied.stderr
    assert "Applied 3 hunks to app.py as one change" in applied.stdout
    assert (folder / "app.py").read_text() == BASE.replace("line 2\n", "A and B two\n").replace("line 9\n",
                                                                                                 "B nine\n")
    undone = robotlab("changes", "undo", "--folder", str(folder))
    assert undone.returncode == 0, undone.stderr
    assert (folder / "app.py").read_text() == BASE


def test_json_events_carry_their_candidate(server: FakeLLMServer) -> None:
    result = compare(server, None, "--robots", "file-helper", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert {e["candidate"] for e in events} == {0, 1}
    finished = [e for e in events if e["kind"] == "run_finished"]
    assert sorted(e["candidate"] for e in finished) == [0, 1]
    for index in (0, 1):
        assert len({e["run_id"] for e in events if e["candidate"] == index}) == 1


@pytest.mark.parametrize(("extra", "message"), [
    (("--compare", "a,b,c,d"), "give 1 to 3 names"),
    (("--compare", "a,,b"), "an empty name"),
    (("--compare", "a", "--apply", "auto"), "leave out --apply auto"),
    (("--compare", "a", "--no-record"), "leave out --no-record"),
])
def test_bad_comparisons_are_refused_with_the_fix(server: FakeLLMServer, folder: Path, extra: tuple[str, ...],
                                                  message: str) -> None:
    result = compare(server, folder, *extra)
    assert result.returncode == 2
    assert message in result.stderr, result.stderr


def test_plain_prints_each_answer_under_its_name(server: FakeLLMServer) -> None:
    result = compare(server, None, "--compare", "openai/model-b", "--plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["== openai/model-a ==", "model-a edited app.py", "== openai/model-b ==",
                                          "model-b edited app.py"]


def test_ctrl_c_stops_every_candidate(folder: Path) -> None:
    def slow(body: dict[str, Any]) -> Reply:
        return Reply.say("never in time", stall_before=60)

    with FakeLLMServer(reply_fn=slow) as server:
        env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "workspace", "--folder", str(folder), "run", "file-helper", "Edit app.py",
             "--model", "openai/model-a", "--api-base", server.base_url + "/v1", "--compare", "openai/model-b",
             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
            stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        started: set[int] = set()
        lines = []
        for line in proc.stdout:  # both candidates started: then Ctrl-C
            lines.append(json.loads(line))
            if lines[-1]["kind"] == "run_started":
                started.add(lines[-1]["candidate"])
            if started == {0, 1}:
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    lines += [json.loads(line) for line in rest.splitlines()]
    assert proc.returncode == 130
    assert sorted(e["candidate"] for e in lines if e["kind"] == "run_cancelled") == [0, 1]
    assert (folder / "app.py").read_text() == BASE


def test_apply_runs_the_verify_command_on_the_combined_set_first(server: FakeLLMServer, folder: Path) -> None:
    from workspace import trust
    from workspace.isolation import SandboxUnavailable, sandbox_for_platform

    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
        pytest.skip(f"no sandbox on this machine: {exc}")
    # Passes only when A's line 2 and B's line 9 are both in the file: on the combined set, not on either's.
    verify = "grep -q '^A two$' app.py && grep -q '^B nine$' app.py"
    (folder / ".robotlab").mkdir()
    (folder / ".robotlab" / "config.yaml").write_text(f"review:\n  verify: {json.dumps(verify)}\n")
    trust.trust(folder)
    ran = compare(server, folder, "--compare", "openai/model-b")
    assert ran.returncode == 0, ran.stderr
    # Each candidate's verify ran on its own proposal alone (its own layer): both fail, each under its name.
    assert ran.stdout.count("✗ verify failed on the proposed changes") == 2, ran.stdout
    assert ran.stdout.index("✗ verify failed") > ran.stdout.index("── candidate 0")
    failed = robotlab("changes", "apply", "--folder", str(folder), "--take", "c0.f1.h1", "c0.f1.h2")
    assert failed.returncode == 1, failed.stderr
    assert "✗ verify failed on the accepted hunks" in failed.stderr and "nothing was applied" in failed.stderr
    assert (folder / "app.py").read_text() == BASE
    applied = robotlab("changes", "apply", "--folder", str(folder), "--take", "c0.f1.h1", "c1.f1.h2")
    assert applied.returncode == 0, applied.stderr
    assert "✓ verify passed on the accepted hunks" in applied.stdout
    assert (folder / "app.py").read_text() == BASE.replace("line 2\n", "A two\n").replace("line 9\n", "B nine\n")


def test_the_same_hunk_from_two_candidates_is_listed_as_agreeing_not_as_a_conflict(folder: Path) -> None:
    def same(body: dict[str, Any]) -> Reply:  # model-a and model-b write the same line 2
        if body["messages"][-1].get("role") == "tool":
            return Reply.say("edited app.py")
        return Reply.tool("write_file", {"path": "app.py", "content": BASE.replace("line 2\n", "two\n")})

    with FakeLLMServer(reply_fn=same) as server:
        result = compare(server, folder, "--compare", "openai/model-b")
    assert result.returncode == 0, result.stderr
    data = listing(folder)
    assert [(h["id"], h["overlaps"], h["same_as"]) for h in data["hunks"]] == [
        ("c0.f1.h1", [], ["c1.f1.h1"]), ("c1.f1.h1", [], ["c0.f1.h1"])]
    text = robotlab("changes", "list", "--folder", str(folder)).stdout
    assert "take one" not in text and "(same as c1.f1.h1: applied once)" in text, text
    applied = robotlab("changes", "apply", "--folder", str(folder), "--take", "c0.f1.h1", "c1.f1.h1")
    assert applied.returncode == 0, applied.stderr
    assert (folder / "app.py").read_text() == BASE.replace("line 2\n", "two\n")
