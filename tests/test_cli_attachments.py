"""``robotlab run --attach FILE`` and ``/attach`` in ``robotlab chat``, against the loopback
server in a subprocess, as people run them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakes.images import png
from fakes.llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0", **(env or {})}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120, input=stdin)


def test_run_attaches_files_and_records_them(robotlab_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.md").write_text("The answer is 42.\n")
    (folder / "cat.png").write_bytes(png())
    with FakeLLMServer() as server:
        base = ["run", "assistant", "What is in these?", "--model", "openai/fake", "--api-base", server.base_url + "/v1",
                "--folder", str(folder)]
        result = _run(*base, "--attach", "notes.md", "-a", "cat.png")
        assert result.returncode == 0, result.stderr
        assert "attached: notes.md (18 B), cat.png (75 B)" in result.stdout
        content = server.requests[0]["messages"][-1]["content"]
        assert [p["type"] for p in content] == ["text", "text", "text", "image_url"]
        assert "The answer is 42." in content[1]["text"]
        # Continued: the conversation carries the attachments again.
        again = _run("run", "--continue", "And now?", "--model", "openai/fake", "--api-base",
                     server.base_url + "/v1", "--folder", str(folder), "--json")
        assert again.returncode == 0, again.stderr
        first_user = next(m for m in server.requests[1]["messages"] if m["role"] == "user")
        assert first_user["content"][-1]["type"] == "image_url"
        # Outside the folder, or too large: refused before anything is sent or recorded.
        (tmp_path / "secret.txt").write_text("no")
        refused = _run(*base, "--attach", str(tmp_path / "secret.txt"))
        assert refused.returncode != 0 and "is outside the opened folder" in refused.stderr
        (folder / "huge.log").write_text("x" * 200_000)
        refused = _run(*base, "--attach", "huge.log", "--json")
        assert refused.returncode != 0 and "attachments are sent whole up to 100.0 KB" in refused.stderr
        assert "raise the limit: attachments.max_text_bytes in the configuration" in refused.stderr
        failed = json.loads(refused.stdout.splitlines()[-1])
        assert failed["kind"] == "run_failed" and failed["error_type"] == "AttachmentError"
        assert len(server.requests) == 2
        # The configuration's limit (here a variable; config.yaml the same): the file goes.
        roomy = {"ROBOT_LAB_ATTACHMENTS__MAX_TEXT_BYTES": "300000", "ROBOT_LAB_LLM__CONTEXT_WINDOW": "128000"}
        sent = _run(*base, "--attach", "huge.log", env=roomy)
        assert sent.returncode == 0, sent.stderr
        assert "attached: huge.log (195.3 KB)" in sent.stdout and len(server.requests) == 3
        # llm.vision: false refuses the image before anything is sent.
        blind = _run(*base, "-a", "cat.png", env={"ROBOT_LAB_LLM__VISION": "false"})
        assert blind.returncode != 0 and "openai/fake does not take images" in blind.stdout + blind.stderr
        assert len(server.requests) == 3


def test_chat_attach_command(robotlab_home: Path, tmp_path: Path) -> None:
    (tmp_path / "todo.txt").write_text("buy milk")
    result = _run("chat", "--no-record", "--folder", str(tmp_path),
                  stdin="/attach\n/attach todo.txt\n/attach missing.txt\n/attach\nWhat should I do?\n/attach\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Nothing attached. /attach PATH sends a file" in out
    assert "📎 todo.txt (text/plain, 8 B) goes with your next message" in out
    assert "✗ missing.txt: no such file; check the path" in out
    assert "attached: todo.txt (8 B)" in out  # the run's line: it went with the message
    assert out.count("Nothing attached.") == 2  # sent, so nothing waits any more



def test_chat_attach_honours_the_configured_limit(robotlab_home: Path, tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("x" * 2000)
    result = _run("chat", "--no-record", "--folder", str(tmp_path), stdin="/attach log.txt\n",
                  env={"ROBOT_LAB_ATTACHMENTS__MAX_TEXT_BYTES": "1024"})
    assert result.returncode == 0, result.stderr
    assert "✗ log.txt is 2.0 KB of text; attachments are sent whole up to 1.0 KB" in result.stdout
    assert "attachments.max_text_bytes in the configuration" in result.stdout
