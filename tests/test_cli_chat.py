"""``robotlab chat`` driven through a pseudo-terminal (pexpect), as a person types: streaming answers,
a tool call and its approval inline, a multi-line message, the hunk review inline, Ctrl-C mid-stream,
the slash commands, quitting, and ``--continue`` after exit. The offline demo answers (its delay makes
the stream slow enough to interrupt). prompt_toolkit asks the terminal where the cursor is (CPR); the
helper answers like a terminal would, so the toolbar is drawn.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.chat_terminal import Terminal

from workspace.persistence import Store

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path, robotlab_home: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("hello world\n", encoding="utf-8")
    (robotlab_home / "config").mkdir(parents=True, exist_ok=True)
    (robotlab_home / "config" / "approval.yaml").write_text("rules:\n  - {tool: list_files, action: ask}\n")
    return folder


def only_thread(home: Path) -> tuple[object, list[object]]:
    with Store(home / "data" / "workspace.db") as store:
        (thread,) = store.list_threads()
        return thread, store.path(thread.id)


def test_a_chat_in_a_terminal(project: Path, robotlab_home: Path, tmp_path: Path) -> None:
    chat = Terminal("file-helper", "--folder", str(project), delay="0.02")
    try:
        chat.say("list the files")  # 1: a tool call that asks for approval, inline
        chat.expect("Approve? [y]es / [n]o / [t]his thread / [a]lways:")
        chat.child.send("y\r")
        out = chat.expect("✓ done")
        assert "list_files approved (once)" in out and "a.txt" in out

        chat.ready()  # 2: a message of two lines (Esc Enter starts the second one)
        chat.child.send("list the files\x1b\rin this folder\r")
        chat.expect("Approve?")
        chat.child.send("t\r")  # for the rest of this thread
        assert "approved (thread)" in chat.expect("✓ done")

        chat.say("hello")  # 3: Ctrl-C while the answer streams stops it, and the chat goes on
        chat.expect("offline demo")
        chat.child.sendintr()
        chat.expect("■ stopped: interrupted (Ctrl-C)")

        chat.say("replace hello with bye in a.txt")  # 4: a proposed change, reviewed hunk by hunk
        out = chat.expect("accept? [y,n,e,a,d,A,q,?]")
        assert "-hello world" in out and "+bye world" in out
        chat.child.send("y\r")
        chat.expect("Checkpoint")
        assert (project / "a.txt").read_text(encoding="utf-8") == "bye world\n"

        chat.say("/model")
        chat.expect("Model: Offline demo (no language model)")
        chat.say("/model openai/gpt-4o-mini")
        chat.expect("OPENAI_API_KEY")  # no key: said, and the model stays
        chat.say("/model demo")
        chat.expect("from your next message on")
        chat.say("/undo")
        chat.expect("Undid")
        assert (project / "a.txt").read_text(encoding="utf-8") == "hello world\n"
        chat.say(f"/export {tmp_path / 'chat.md'}")
        chat.expect("Wrote")
        chat.say("/compact")
        chat.expect("conversation compacted")  # recorded: the messages after --continue are sent with the summary
        chat.say("/exit")
        assert chat.exit_status() == 0
    finally:
        chat.child.close(force=True)

    thread, turns = only_thread(robotlab_home)
    assert thread.origin == "cli" and thread.metadata["command"] == "chat"  # type: ignore[attr-defined]
    assert [t.user_text.split("</change-review>")[-1].strip() for t in turns] == [  # type: ignore[attr-defined]
        "list the files", "list the files\nin this folder", "hello", "replace hello with bye in a.txt"]
    assert [t.status for t in turns] == ["finished", "finished", "cancelled", "finished"]  # type: ignore[attr-defined]
    assert "list the files" in (tmp_path / "chat.md").read_text(encoding="utf-8")
    history = (robotlab_home / "data" / "chat-history").read_text(encoding="utf-8")
    assert "+list the files\n+in this folder" in history and "+/undo" in history

    # --continue after exit: the same thread, its last exchange recalled; Ctrl-C clears a typed line,
    # and at an empty prompt quits.
    chat = Terminal("--continue", "--folder", str(project))
    try:
        assert "Resuming thread" in chat.ready()
        chat.child.send("what happened?\r")  # the model first hears how the review went (it reads a.txt)
        chat.expect("✓ done")
        chat.say("list the files")
        chat.expect("Approve?")  # "this thread" was for the chat that ended
        chat.child.send("n\r")
        chat.expect("Reason")
        chat.child.send("not now\r")
        assert "Denied by the user: not now" in chat.expect("✓ done")
        chat.ready()
        chat.child.send("half typed")
        chat.child.sendintr()  # clears the line (it is never sent: see the turns below)
        assert not chat.child.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=0.5) and chat.child.isalive()
        chat.child.sendintr()  # at the empty prompt: quits
        assert chat.exit_status() == 0
    finally:
        chat.child.close(force=True)
    thread, turns = only_thread(robotlab_home)
    assert len(turns) == 6 and turns[-1].user_text == "list the files"  # type: ignore[attr-defined]
    assert "<change-review>" in turns[-2].user_text and "a.txt" in turns[-2].user_text  # type: ignore[attr-defined]


def test_a_second_ctrl_c_quits(robotlab_home: Path) -> None:
    chat = Terminal(delay="0.05")
    try:
        chat.say("hello")
        chat.expect("offline demo")
        chat.child.sendintr()
        chat.expect("Ctrl-C again quits")
        chat.child.sendintr()
        # 130 while the answer stops or before the next prompt (as `robotlab run`); 0 at the prompt again.
        assert chat.exit_status() in (0, 130)
        assert "Traceback" not in chat.child.before
    finally:
        chat.child.close(force=True)
    _, turns = only_thread(robotlab_home)
    assert turns[0].status in ("cancelled", "interrupted")  # type: ignore[attr-defined]


def test_a_chat_reads_one_message_per_line_from_a_pipe(robotlab_home: Path) -> None:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
    result = subprocess.run([sys.executable, "-m", "workspace", "chat", "--no-record"], input="hello\n/help\n",
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Chat with assistant" in result.stdout and "✓ done" in result.stdout and "/review" in result.stdout
    assert result.stdout.rstrip().endswith("Bye.")  # end of input ends the chat
    assert not (robotlab_home / "data" / "workspace.db").exists()  # --no-record: nothing kept
