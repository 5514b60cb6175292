"""Command-line runs recorded as threads: ``run`` and ``network run`` recorded in the
window's store with their origin, ``--no-record``, ``--continue`` / ``--thread``, ``threads show``,
``--db`` before or after the action, the exit statuses (the turn limit), ``--plain`` / ``--json``
piped, and a network's tasks printed in whole lines.

Most tests call ``workspace.cli.main`` in-process with a provider registered at run time (fast, and
it can count what the robot was given); a few run the real command in a subprocess, piped.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workspace import events as ev
from workspace.cli import main
from workspace.cli.network import NetworkPrinter
from workspace.cli.runs import EXIT_TURN_LIMIT
from workspace.persistence import Store
from workspace.providers import registry as providers
from workspace.providers.testing import FunctionProvider, ToolCall
from workspace.session import Workspace

ROOT = Path(__file__).resolve().parent.parent


def write_robot(home: Path, name: str, text: str) -> Path:
    path = home / "config" / "robots" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def counting(messages: list[Any], info: Any) -> Any:
    """Says how many messages it was given, and the first user message: what the robot heard."""
    first = next((m.content for m in messages if m.role == "user"), "")
    return f"I was given {len(messages)} message(s); the first: {first}"


class Factory:
    """Serves ``test/<anything>`` models with one provider, so a test can see what it was sent."""

    name = "test-cli"

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def matches(self, model: str | None, api_base: str | None) -> bool:
        return bool(model) and str(model).startswith("test/")

    def create(self, model: str | None, **options: Any) -> Any:
        return self.provider


@pytest.fixture
def provider(robotlab_home: Path) -> Iterator[FunctionProvider]:
    write_robot(robotlab_home, "bot", "---\ndescription: test robot\ntools: [list_files]\n---\nYou help.")
    fake = FunctionProvider(counting)
    providers.register(Factory(fake))
    yield fake
    providers.unregister(Factory.name)


# --model test/x needs no key once an API base is given (a local server, as far as the check goes).
MODEL = ["--model", "test/x", "--api-base", "http://127.0.0.1:9"]


def db_of(home: Path) -> Path:
    return home / "data" / "workspace.db"


def test_run_is_recorded_with_its_origin_and_listed(provider: FunctionProvider, robotlab_home: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "bot", "hello there", *MODEL, "--plain"]) == 0
    assert capsys.readouterr().out == "I was given 1 message(s); the first: hello there\n"
    assert main(["threads", "list"]) == 0
    listed = capsys.readouterr().out
    assert "terminal" in listed and "hello there" in listed
    assert main(["threads", "list", "--json"]) == 0
    (thread,) = json.loads(capsys.readouterr().out)
    assert thread["origin"] == "cli" and thread["metadata"] == {"origin": "cli", "command": "run", "model": "test/x",
                                                              "api_base": "http://127.0.0.1:9"}
    assert thread["kind"] == "robot" and thread["turns"] == 1

    assert main(["run", "bot", "not kept", *MODEL, "--no-record", "--plain"]) == 0
    capsys.readouterr()
    with Store(db_of(robotlab_home)) as store:
        assert len(store.list_threads()) == 1


def test_continue_and_thread_give_the_robot_the_conversation(provider: FunctionProvider,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "bot", "first question", *MODEL, "--plain"]) == 0
    assert main(["run", "bot", "another thread", *MODEL, "--plain"]) == 0
    capsys.readouterr()
    # --continue: the latest thread; ROBOT may be left out, and the thread's --model is remembered.
    assert main(["run", "--continue", "a follow-up", "--api-base", "http://127.0.0.1:9", "--plain"]) == 0
    assert capsys.readouterr().out == "I was given 3 message(s); the first: another thread\n"
    assert main(["threads", "list", "--json"]) == 0
    threads = json.loads(capsys.readouterr().out)
    older = next(t for t in threads if t["title"] == "first question")
    # --thread ID (a prefix), with the robot named: that thread, whatever came later.
    assert main(["run", "bot", "back to the first", "--thread", older["id"][:6], *MODEL, "--plain"]) == 0
    assert capsys.readouterr().out == "I was given 3 message(s); the first: first question\n"
    # --continue with --no-record: the conversation so far, and nothing kept.
    assert main(["run", "-c", "bot", "just asking", *MODEL, "--no-record", "--plain"]) == 0
    assert capsys.readouterr().out == "I was given 5 message(s); the first: first question\n"
    assert main(["threads", "list", "--json"]) == 0
    assert {t["title"]: t["turns"] for t in json.loads(capsys.readouterr().out)} == {
        "first question": 2, "another thread": 2}


def test_continue_errors_name_the_fix(provider: FunctionProvider, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--continue", "hello", *MODEL]) == 2
    assert "no thread to continue yet" in capsys.readouterr().err
    assert main(["run", "bot", *MODEL]) == 2
    assert 'robotlab run bot "your message"' in capsys.readouterr().err
    assert main(["run", "bot", "hi", *MODEL, "--plain"]) == 0
    assert main(["run", "--thread", "zzzz", "more", *MODEL]) == 2
    assert "No thread id starts with 'zzzz'" in capsys.readouterr().err
    assert main(["run", "--continue", "x", *MODEL, "--db", str(tmp_path / "typo.db")]) == 2
    assert "no database at" in capsys.readouterr().err and not (tmp_path / "typo.db").exists()


def test_the_window_opens_a_cli_thread_and_replays_it(provider: FunctionProvider, robotlab_home: Path,
                                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A thread recorded by ``robotlab run`` is an ordinary thread for the window's session code:
    listed with its origin, its transcript rebuilt, and a message sent there continues it."""
    (robotlab_home / "config" / "approval.yaml").write_text("rules:\n  - {tool: list_files, action: allow}\n")
    provider.fn = lambda messages, info: (ToolCall("list_files", {"path": "."}) if len(messages) == 1
                                          else counting(messages, info))
    assert main(["run", "bot", "look around", *MODEL, "--json", "--folder", str(tmp_path)]) == 0
    kinds = [json.loads(line)["kind"] for line in capsys.readouterr().out.splitlines()]
    assert ev.ToolUse.kind in kinds and kinds[-1] == ev.RunFinished.kind

    replies = FunctionProvider(counting)
    with Workspace(db_path=db_of(robotlab_home), provider=replies) as workspace:
        (info,) = workspace.threads()
        assert info.origin == "cli" and info.origin_label == "terminal"
        session = workspace.open_thread(info.id)
        (view,) = session.transcript()
        assert view.user_text == "look around" and view.status == "finished"
        assert [type(e) for e in view.events if isinstance(e, ev.ToolUse | ev.ToolResult)] == [ev.ToolUse, ev.ToolResult]
        assert "I was given 3 message(s)" in view.text
        history = session.history()
        assert [m.role for m in history] == ["user", "assistant", "tool_result", "assistant"]


async def test_a_message_sent_from_the_window_continues_a_cli_thread(provider: FunctionProvider,
                                                                      robotlab_home: Path) -> None:
    # main() runs its own event loop: in a thread, as another process would.
    assert await asyncio.to_thread(main, ["run", "bot", "hello from the terminal", *MODEL, "--plain"]) == 0
    replies = FunctionProvider(counting)
    workspace = Workspace(db_path=db_of(robotlab_home), provider=replies)
    try:
        (info,) = workspace.threads()
        session = workspace.open_thread(info.id)
        run = session.send("and now from the window")
        events = [event async for event in run]  # replayed from the start, as the window's chat does
        assert isinstance(events[0], ev.RunStarted) and isinstance(events[-1], ev.RunFinished)
        assert "I was given 3 message(s); the first: hello from the terminal" in session.transcript()[-1].text
    finally:
        await workspace.aclose()


def test_threads_show_prints_tool_calls_with_names_escaped(provider: FunctionProvider, robotlab_home: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    (robotlab_home / "config" / "approval.yaml").write_text("rules:\n  - {tool: list_files, action: allow}\n")
    sneaky = "x\x1b[2J\u202eevil\n--- a/README.md"
    provider.fn = lambda messages, info: (ToolCall("list_files", {"path": sneaky}) if len(messages) == 1
                                          else "Done: \x1b]0;title\x07 listed.")
    assert main(["run", "bot", "look around", *MODEL, "--plain"]) == 0
    capsys.readouterr()
    assert main(["threads", "list", "--json"]) == 0
    thread_id = json.loads(capsys.readouterr().out)[0]["id"]
    assert main(["threads", "show", thread_id[:6]]) == 0
    out = capsys.readouterr().out
    assert "from the terminal (robotlab run)" in out and "── 1 · you" in out and "look around" in out
    assert "→ list_files" in out and "✗ list_files" in out and "✓ done" in out  # no such folder: an error
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\u001b[2J" in out and "\\u202e" in out and "\\x1b]0;title\\x07" in out
    assert "--- a/README.md" not in out.splitlines()
    assert main(["threads", "show", thread_id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["thread"]["origin"] == "cli" and len(data["turns"]) == 1
    kinds = [e["kind"] for e in data["turns"][0]["events"]]
    assert ev.ToolUse.kind in kinds and ev.ToolError.kind in kinds and ev.TextDelta.kind not in kinds
    tool_use = next(e for e in data["turns"][0]["events"] if e["kind"] == ev.ToolUse.kind)
    assert tool_use["input"] == {"path": sneaky}  # JSON keeps the data as it was


@pytest.mark.parametrize("action", [["list"], ["show", "{id}"], ["export", "{id}"], ["search", "hello"],
                                    ["list", "--json"], []])
def test_db_before_or_after_the_action(provider: FunctionProvider, robotlab_home: Path, tmp_path: Path,
                                       action: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "elsewhere.db"
    assert main(["run", "bot", "hello there", *MODEL, "--plain", "--db", str(db)]) == 0
    with Store(db) as store:
        thread_id = store.list_threads()[0].id
    capsys.readouterr()
    args = [a.format(id=thread_id[:8]) for a in action]
    before = main(["threads", "--db", str(db), *args])
    out_before = capsys.readouterr().out
    after = main(["threads", *args, "--db", str(db)])
    out_after = capsys.readouterr().out
    assert before == after == 0
    for out in (out_before, out_after):
        assert "hello" in out or thread_id[:8] in out
    assert not db_of(robotlab_home).exists()  # the default database was never created


def test_recover_takes_db_in_both_positions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "damaged.db"
    db.write_bytes(b"garbage" * 1000)
    assert main(["threads", "--db", str(db), "recover"]) == 0
    assert "was damaged" in capsys.readouterr().out
    assert main(["threads", "recover", "--db", str(db)]) == 0
    assert "is fine" in capsys.readouterr().out


def test_the_turn_limit_has_its_own_exit_status(provider: FunctionProvider, robotlab_home: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (robotlab_home / "config" / "approval.yaml").write_text("rules:\n  - {tool: list_files, action: allow}\n")
    provider.fn = lambda messages, info: ToolCall("list_files", {"path": "."})
    assert main(["run", "bot", "go on forever", *MODEL, "--max-turns", "2"]) == EXIT_TURN_LIMIT == 3
    captured = capsys.readouterr()
    assert "stopped at the turn limit" in captured.out and "✓ done" not in captured.out
    assert main(["run", "bot", "go on forever", *MODEL, "--max-turns", "1", "--json"]) == EXIT_TURN_LIMIT
    captured = capsys.readouterr()
    assert all(json.loads(line) for line in captured.out.splitlines())
    assert "stopped at the turn limit" in captured.err and "Exit status 3" in captured.err


def test_run_help_documents_the_exit_statuses_and_output_modes() -> None:
    help_text = subprocess.run([sys.executable, "-m", "workspace", "run", "--help"], capture_output=True,
                               text=True, cwd=ROOT, timeout=60).stdout
    assert "exit status:" in help_text and "3    stopped at the turn limit" in help_text
    assert "--plain" in help_text and "--json" in help_text and "--no-record" in help_text
    assert "--continue" in help_text and "--thread ID" in help_text
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")  # the CLI reference says so too
    assert "stopped at the turn limit" in reference and "--plain" in reference


# -- piped, as scripts use it ----------------------------------------------------------------------


def robotlab(*args: str, delay: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": delay}
    env.pop("PYTHONUNBUFFERED", None)
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


def test_plain_and_json_pipe_into_other_programs(robotlab_home: Path) -> None:
    plain = robotlab("run", "assistant", "remember that colour is blue", "--plain")
    assert plain.returncode == 0 and plain.stderr == ""
    assert "●" not in plain.stdout and "→" not in plain.stdout and "✓ done" not in plain.stdout
    jq = robotlab("run", "assistant", "remember that colour is blue", "--json")
    lines = [json.loads(line) for line in jq.stdout.splitlines()]
    assert jq.returncode == 0 and lines[0]["kind"] == ev.RunStarted.kind and lines[-1]["kind"] == ev.RunFinished.kind
    texts = [e["text"] for e in lines if e["kind"] == ev.Text.kind]
    assert len(texts) == 2 and "remember" in texts[0]  # what it said before the tool call is not the answer
    assert plain.stdout == texts[-1].rstrip("\n") + "\n"  # the final answer, and only that
    failed = robotlab("run", "no-such-robot", "hi", "--plain")
    assert failed.returncode == 2 and failed.stdout == "" and "Unknown robot" in failed.stderr
    listed = robotlab("threads", "list", "--json")
    assert [t["origin"] for t in json.loads(listed.stdout)] == ["cli", "cli"]  # the failed one never started


def test_network_tasks_print_whole_labelled_lines(robotlab_home: Path) -> None:
    result = robotlab("network", "run", "parallel-analysis", "Acme is great. Bob from Acme loves Paris.",
                      delay="0.003")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for sentence in ("Entities by capitalisation and amounts (offline demo rule): Acme, Bob, Paris.",
                     "Saved `keywords` to the shared memory:", "Sentiment by word list (offline demo rule):"):
        assert any(re.match(r"^\[\w+\] " + re.escape(sentence), line) for line in lines), sentence
    text_lines = [line for line in lines if line.startswith("[")]
    assert all(re.match(r"^\[(sentiment|entities|keywords|synthesis)\]( |$)", line) for line in text_lines)
    assert "tasks: sentiment done, entities done, keywords done, synthesis done" in result.stdout
    listed = json.loads(robotlab("threads", "list", "--json").stdout)
    assert listed[0]["kind"] == "network" and listed[0]["metadata"]["command"] == "network run"


def test_network_printer_holds_each_tasks_text_until_its_line_is_complete() -> None:
    out = io.StringIO()
    printer = NetworkPrinter(out)

    def delta(task: str, text: str) -> ev.TextDelta:
        return ev.TextDelta(run_id=task, robot=task, task=task, text=text)

    for event in [delta("a", "The quick "), delta("b", "Lorem "), delta("a", "brown fox\njumps"),
                  delta("b", "ipsum dolor"), ev.ToolUse(run_id="b", robot="b", task="b", name="t"),
                  delta("a", " over."), ev.Text(run_id="a", robot="a", task="a", text="The quick brown fox\njumps over."),
                  ev.TaskFinished(run_id="b", robot="b", task="b")]:
        printer(event)
    printer.finish()
    assert out.getvalue().splitlines() == [
        "[a] The quick brown fox", "[b] Lorem ipsum dolor", "[b] → t {}", "[a] jumps over.", "■ task b done"]


def test_network_run_continue_records_one_thread(robotlab_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ROBOT_LAB_DEMO__DELAY", "0")
    assert main(["network", "run", "support-triage", "I need a refund for my invoice", "--plain"]) == 0
    assert "Billing specialist" in capsys.readouterr().out
    assert main(["network", "run", "--continue", "and for the other invoice too", "--plain"]) == 0
    assert "Billing specialist" in capsys.readouterr().out
    assert main(["run", "--continue", "hi", "--plain"]) == 2  # no robot thread: the network's is not one
    assert "no robot thread to continue" in capsys.readouterr().err
    assert main(["threads", "list", "--json"]) == 0
    (thread,) = json.loads(capsys.readouterr().out)
    assert thread["kind"] == "network" and thread["robot"] == "support-triage" and thread["turns"] == 2
    assert thread["metadata"]["command"] == "network run" and thread["metadata"]["network_file"].endswith(".yaml")
