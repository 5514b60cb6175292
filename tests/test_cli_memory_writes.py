"""Memory writes proposed for review (``review.memory: ask``) in the terminal, against the loopback server in a
subprocess: ``robotlab chat`` keeps its robot, so ``/memory`` lists what waits and keeps or drops each (the next
message's run reads only what was kept); ``robotlab run`` names on stderr what it proposed and did not keep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakes.llm_server import FakeLLMServer, Reply

ROOT = Path(__file__).resolve().parent.parent
KEEPER = "---\nname: keeper\ntools: [remember, recall]\nmcp: none\n---\nYou keep notes.\n"


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0", "ROBOT_LAB_REVIEW__MEMORY": "ask"}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120, input=stdin)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".robotlab" / "robots").mkdir(parents=True)
    (folder / ".robotlab" / "robots" / "keeper.md").write_text(KEEPER)
    return folder


def test_chat_reviews_memory_writes_with_the_memory_command(robotlab_home: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    with FakeLLMServer() as server:
        # Two calls in one message run at once; their writes are numbered in the message's order all the same.
        server.enqueue(Reply.tools(("remember", {"key": "plan", "value": "ship friday"}),
                                   ("remember", {"key": "owner", "value": "ana"})))
        server.enqueue("Noted.")
        server.enqueue(Reply.tools(("recall", {"key": "plan"}), ("recall", {"key": "owner"})))
        server.enqueue("Monday.")
        result = _run("chat", "keeper", "--no-record", "--yes", "--folder", str(folder), "--model", "openai/fake",
                      "--api-base", server.base_url + "/v1",
                      stdin="note the plan\n/memory\n/memory keep 1 ship monday\n/memory drop 1 ask ana\n/memory\n"
                            "what is the plan?\n")
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert "⧗ 2 memory write(s) wait for your review (review.memory: ask): /memory to see them" in out
        assert "1. keeper: memory 'plan': unset → ship friday" in out
        assert "2. keeper: memory 'owner': unset → ana" in out
        assert "Kept memory 'plan': unset → ship monday" in out
        assert "Not kept memory 'owner': unset → ana (it stays unset): the person reviewing memory rejected it: " \
               "ask ana" in out
        assert "No memory write waits for review." in out
        results = [json.loads(m["content"]) for m in server.requests[3]["messages"] if m["role"] == "tool"][-2:]
        assert results == [{"key": "plan", "found": True, "value": "ship monday"},
                           {"key": "owner", "found": False, "value": None}]


def test_run_says_what_it_proposed_and_did_not_keep(robotlab_home: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("remember", {"key": "plan", "value": "ship friday"}))
        server.enqueue("Noted.")
        result = _run("run", "keeper", "note the plan", "--no-record", "--yes", "--folder", str(folder),
                      "--model", "openai/fake", "--api-base", server.base_url + "/v1")
        assert result.returncode == 0, result.stderr
        assert "memory: 1 write(s) proposed for review (review.memory: ask) were not kept" in result.stderr
        assert "  · keeper: memory 'plan': unset → ship friday" in result.stderr
