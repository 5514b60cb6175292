"""The command line under the conditions people and scripts put it in: ``--json`` piped into
another program, Ctrl-C at a prompt, stdin closed or empty, stdout closed early (``| head -1``),
typos in arguments and in environment variables. Every test runs the real CLI in a subprocess
(the offline demo: no keys, no network)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

from workspace.cli.review import _StdinLines

ROOT = Path(__file__).resolve().parent.parent
TEXT = "hello world\nline 2\n"
EDIT = "replace hello with bye in a.txt"

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="signals, ptys and select on pipes are POSIX")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0", **(extra or {})}
    env.pop("PYTHONUNBUFFERED", None)  # block-buffered stdout, as when piped in real use
    return env


def robotlab(*args: str, input: str | None = None, stdin: Any = None, env: dict[str, str] | None = None,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    kwargs: dict[str, Any] = {"input": input} if input is not None else {"stdin": stdin}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=_env(env), timeout=120, **kwargs)


def spawn(*args: str, stdin: Any, stdout: Any = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "workspace", *args], stdin=stdin, stdout=stdout,
                            stderr=subprocess.PIPE, cwd=ROOT, env=_env())


def read_until(proc: subprocess.Popen[bytes], needle: bytes, *, timeout: float = 60) -> tuple[bytes, bytes]:
    """Read stdout and stderr (without closing anything) until ``needle`` shows up in either."""
    streams: dict[IO[bytes], bytearray] = {s: bytearray() for s in (proc.stdout, proc.stderr) if s is not None}
    deadline = time.monotonic() + timeout
    while not any(needle in buf for buf in streams.values()):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(f"never saw {needle!r}; got {dict((k.fileno(), bytes(v)) for k, v in streams.items())}")
        ready, _, _ = select.select(list(streams), [], [], 0.5)
        for stream in ready:
            streams[stream] += os.read(stream.fileno(), 65536)
    out = bytes(streams[proc.stdout]) if proc.stdout in streams else b""
    err = bytes(streams[proc.stderr]) if proc.stderr in streams else b""
    return out, err


def wait_exit(proc: subprocess.Popen[bytes], *, timeout: float = 10) -> int:
    """The exit status; fails (and kills the process) if it hangs. stdin is left as it is on purpose:
    closing it would end a blocked ``input()`` with EOF and hide the hang being tested."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the command did not exit after Ctrl-C: it hangs at the prompt") from None


def json_lines(stdout: str) -> list[dict[str, Any]]:
    events = []
    for n, line in enumerate(stdout.splitlines(), start=1):
        try:
            events.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"stdout line {n} is not JSON: {line!r}") from None
        assert isinstance(events[-1], dict), line
    return events


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text(TEXT, encoding="utf-8")
    return root


def spawn_asking_in_a_terminal(home: Path, *flags: str) -> tuple[subprocess.Popen[bytes], int]:
    """``robotlab run`` of a robot whose tool call asks for approval, its stdin a pseudo-terminal (the
    approval prompt only asks on a terminal); returns the process and the terminal's master side."""
    import pty

    write_robot(home, "mem", "---\ntools: [remember, recall]\n---\nYou remember.")
    (home / "config" / "approval.yaml").write_text("rules:\n  - {tool: remember, action: ask}\n")
    master, slave = pty.openpty()
    proc = spawn("run", "mem", "remember that colour is blue", *flags, stdin=slave)
    os.close(slave)
    return proc, master


def write_robot(home: Path, name: str, text: str) -> None:
    path = home / "config" / "robots" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# -- 1. --json: stdout holds JSON lines only ---------------------------------------------------------


@pytest.mark.parametrize(("apply", "answers", "expected"), [
    ("auto", None, TEXT.replace("hello", "bye")),
    ("review", "y\n", TEXT.replace("hello", "bye")),
    ("review", "n\ntoo informal\n", TEXT),
    ("review", "", TEXT),  # end of input at the first prompt: nothing is applied
    ("never", None, TEXT),
])
def test_json_run_prints_only_json_on_stdout(folder: Path, apply: str, answers: str | None, expected: str) -> None:
    result = robotlab("--folder", str(folder), "run", "file-helper", EDIT, "--json", "--apply", apply,
                      input=answers if answers is not None else "")
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "run_started" and "run_finished" in kinds and "change_proposed" in kinds
    assert "change_decided" in kinds  # the outcome is an event too
    assert (folder / "a.txt").read_text(encoding="utf-8") == expected
    if apply == "review":
        # The people's part went to stderr: the hunk, the question and the outcome.
        assert "+bye world" in result.stderr and "accept? [y,n,e,a,d,A,q,?]" in result.stderr
        assert "The user reviewed the file changes" in result.stderr
    if answers == "n\ntoo informal\n":
        assert 'rejected — reason: "too informal"' in result.stderr
    if apply == "never":
        change_set = next(e for e in events if e["kind"] == "change_set")
        assert "+bye world" in change_set["diff"]
        assert "NOT applied (--apply never)" in result.stderr


def test_text_run_keeps_the_review_on_stdout(folder: Path) -> None:
    result = robotlab("--folder", str(folder), "run", "file-helper", EDIT, "--apply", "review", input="y\n")
    assert result.returncode == 0, result.stderr
    assert "accept? [y,n,e,a,d,A,q,?]" in result.stdout and "+bye world" in result.stdout
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT.replace("hello", "bye")


# -- 2. Ctrl-C and end of input at a prompt ------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("json_mode", [False, True])
def test_ctrl_c_at_the_review_prompt_cancels_at_once(folder: Path, json_mode: bool) -> None:
    args = ["--folder", str(folder), "run", "file-helper", EDIT, "--apply", "review"]
    proc = spawn(*args, *(["--json"] if json_mode else []), stdin=subprocess.PIPE)
    try:
        out, err = read_until(proc, b"accept? [y,n,e,a,d,A,q,?]")
        assert (b"accept?" in err) if json_mode else (b"accept?" in out)
        proc.send_signal(signal.SIGINT)
        assert wait_exit(proc) == 130
        assert proc.stderr is not None and proc.stdout is not None
        err += proc.stderr.read()
        out += proc.stdout.read()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
    assert b"Cancelled." in err and b"Traceback" not in err
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT  # nothing applied
    if json_mode:
        json_lines(out.decode())


@posix_only
@pytest.mark.parametrize("json_mode", [False, True])
def test_ctrl_c_at_the_approval_prompt_cancels_at_once(robotlab_home: Path, json_mode: bool) -> None:
    proc, master = spawn_asking_in_a_terminal(robotlab_home, *(["--json"] if json_mode else []))
    try:
        out, err = read_until(proc, b"Approve? [y]es")
        assert (b"Approve?" in err and b"Approve?" not in out) if json_mode else (b"Approve?" in out)
        proc.send_signal(signal.SIGINT)
        assert wait_exit(proc) == 130
        assert proc.stderr is not None and proc.stdout is not None
        err += proc.stderr.read()
        out += proc.stdout.read()
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert b"Cancelled." in err and b"Traceback" not in err
    if json_mode:
        events = json_lines(out.decode())
        assert not any(e["kind"] == "memory_changed" for e in events)


@posix_only
def test_approval_answered_in_a_terminal_with_json(robotlab_home: Path) -> None:
    proc, master = spawn_asking_in_a_terminal(robotlab_home, "--json")
    try:
        out, err = read_until(proc, b"Approve? [y]es")
        os.write(master, b"y\n")
        assert wait_exit(proc, timeout=60) == 0
        assert proc.stderr is not None and proc.stdout is not None
        out += proc.stdout.read()
        err += proc.stderr.read()
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    events = json_lines(out.decode())
    assert any(e["kind"] == "approval_decided" and e["decision"] == "approve" for e in events)
    assert any(e["kind"] == "memory_changed" and e["value"] == "blue" for e in events)


@posix_only
def test_approval_prompt_whose_terminal_goes_away_is_a_denial(robotlab_home: Path) -> None:
    proc, master = spawn_asking_in_a_terminal(robotlab_home, "--json")
    try:
        out, err = read_until(proc, b"Approve? [y]es")
    finally:
        os.close(master)  # the terminal is gone: reading it ends (EIO), which is no answer
    assert wait_exit(proc, timeout=60) == 0
    assert proc.stderr is not None and proc.stdout is not None
    out += proc.stdout.read()
    err += proc.stderr.read()
    assert b"Traceback" not in err
    events = json_lines(out.decode())
    denied = [e for e in events if e["kind"] == "approval_decided"]
    assert denied and denied[0]["decision"] == "deny" and "end of input" in denied[0]["reason"]
    assert not any(e["kind"] == "memory_changed" for e in events)


def test_stdin_at_end_rejects_the_changes(folder: Path) -> None:
    result = robotlab("--folder", str(folder), "run", "file-helper", EDIT, "--apply", "review",
                      stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "NOT applied" in result.stdout
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT


def test_answers_piped_in_at_once_are_read_one_per_prompt(folder: Path) -> None:
    result = robotlab("--folder", str(folder), "run", "file-helper", "replace hello with bye in a.txt",
                      "--apply", "review", input="n\nnot now\n")
    assert result.returncode == 0, result.stderr
    assert 'reason: "not now"' in result.stdout
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT


async def test_stdin_lines_split_chunks_and_end_with_eof() -> None:
    read_fd, write_fd = os.pipe()
    lines = _StdinLines(read_fd)
    os.write(write_fd, b"y\nn\r\nreason with \xc3\xa9\npartial")
    os.close(write_fd)
    try:
        assert [await lines.readline() for _ in range(4)] == ["y", "n", "reason with é", "partial"]
        with pytest.raises(EOFError):
            await lines.readline()
        with pytest.raises(EOFError):  # stays at the end
            await lines.readline()
    finally:
        os.close(read_fd)


async def test_a_cancelled_prompt_leaves_its_read_to_the_next_one() -> None:
    import asyncio

    read_fd, write_fd = os.pipe()
    lines = _StdinLines(read_fd)
    try:
        waiting = asyncio.ensure_future(lines.readline())
        await asyncio.sleep(0.05)
        waiting.cancel()  # Ctrl-C while the thread is blocked reading
        with pytest.raises(asyncio.CancelledError):
            await waiting
        os.write(write_fd, b"yes\n")
        assert await asyncio.wait_for(lines.readline(), 10) == "yes"
    finally:
        os.close(write_fd)
        os.close(read_fd)


# -- 3. stdout closed early ------------------------------------------------------------------------------


def _with_closed_stdout(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run with stdout a pipe whose reader is already gone: every write fails with EPIPE,
    what ``| head -1`` does to the output after the first line."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    try:
        return subprocess.run([sys.executable, "-m", "workspace", *args], stdout=write_fd, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, cwd=ROOT, env=_env(), timeout=120)
    finally:
        os.close(write_fd)


def _thread_db(tmp_path: Path) -> Path:
    results = tmp_path / "results.json"
    result = robotlab("run", "assistant", "hello there", "--json")
    finished = [e for e in json_lines(result.stdout) if e["kind"] == "run_finished"]
    results.write_text(json.dumps([finished[0]["result"]] * 3), encoding="utf-8")
    db = tmp_path / "threads.db"
    imported = robotlab("threads", "import", str(results), "--db", str(db))
    assert imported.returncode == 0, imported.stderr
    return db


@posix_only
@pytest.mark.parametrize("args", [
    ["robots", "list"],
    ["robots", "list", "--json"],
    ["paths"],
    ["run", "assistant", "hello"],
    ["run", "assistant", "hello", "--json"],
    ["threads", "export", "DB"],
    ["threads", "export", "DB", "--format", "jsonl"],
])
def test_a_closed_stdout_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    if "DB" in args:
        db = _thread_db(tmp_path)
        listed = json.loads(robotlab("threads", "list", "--json", "--db", str(db)).stdout)
        args = [listed[0]["id"] if a == "DB" else a for a in args] + ["--db", str(db)]
    result = _with_closed_stdout(*args)
    stderr = result.stderr.decode()
    assert result.returncode == 141, stderr  # 128 + SIGPIPE, like any tool a pipe closed on
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Exception ignored" not in stderr


@posix_only
def test_piped_into_head(robotlab_home: Path) -> None:
    for n in range(300):  # enough lines to outlast the pipe's buffer
        write_robot(robotlab_home, f"robot-{n:03}", f"---\ndescription: {'x' * 200}\n---\nHi")
    result = subprocess.run(f"'{sys.executable}' -m workspace robots list | head -1", shell=True,
                            capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=120)
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 1
    assert "Traceback" not in result.stderr and "Broken pipe" not in result.stderr


# -- 4. argument and environment typos ---------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_max_turns_must_be_at_least_one(value: str) -> None:
    result = robotlab("run", "assistant", "hi", f"--max-turns={value}")
    assert result.returncode == 2
    assert "--max-turns" in result.stderr and ("must be >= 1" in result.stderr or "1 or more" in result.stderr)
    assert "Traceback" not in result.stderr


def test_max_turns_one_is_accepted() -> None:
    result = robotlab("run", "assistant", "hi", "--max-turns", "1", "--json")
    assert result.returncode == 0, result.stderr
    assert json_lines(result.stdout)[-1]["kind"] == "run_finished"


@pytest.mark.parametrize("path", ["./nonexist.md", "nonexist.md", "robots/helper", "/no/such/robot.md"])
def test_a_robot_path_that_does_not_exist_says_file_not_found(path: str) -> None:
    result = robotlab("run", path, "hi")
    assert result.returncode == 2
    assert "not found" in result.stderr and path in result.stderr
    assert "Unknown robot" not in result.stderr


def test_a_robot_path_that_exists_runs(tmp_path: Path) -> None:
    robot = tmp_path / "mine.md"
    robot.write_text("---\ndescription: mine\ntools: []\n---\nYou help.", encoding="utf-8")
    result = robotlab("run", str(robot), "hi")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("args", [
    ["threads", "export", "abc"],
    ["threads", "list"],
    ["threads", "search", "hello"],
])
def test_reading_commands_never_create_a_database(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "typo" / "path.db"
    result = robotlab(*args, "--db", str(db))
    assert result.returncode == 2
    assert f"no database at {db}" in result.stderr
    assert not db.exists() and not db.parent.exists()


def test_import_may_create_the_database(tmp_path: Path) -> None:
    db = _thread_db(tmp_path)
    assert db.is_file()
    listed = robotlab("threads", "list", "--db", str(db))
    assert listed.returncode == 0 and "Imported from RobotLab (3 results)" in listed.stdout


@pytest.mark.parametrize(("name", "hint"), [
    ("ROBOT_LAB_LLM", None),
    ("ROBOT_LAB_LLM_MODEL", "ROBOT_LAB_LLM__MODEL"),
    ("ROBOT_LAB_AGENT_MAX_TURNS", "ROBOT_LAB_AGENT__MAX_TURNS"),
])
def test_ignored_environment_variables_are_named(name: str, hint: str | None) -> None:
    result = robotlab("paths", env={name: "abc"})
    assert result.returncode == 0, result.stderr
    assert name in result.stderr and "ROBOT_LAB_<SECTION>__<KEY>" in result.stderr
    if hint:
        assert f"did you mean {hint}?" in result.stderr
    json_stdout = robotlab("paths", "--json", env={name: "abc"})
    json.loads(json_stdout.stdout)  # the warning never lands on stdout


def test_well_formed_environment_variables_are_not_warned_about() -> None:
    result = robotlab("paths", env={"ROBOT_LAB_LLM__TEMPERATURE": "0.2", "ROBOTLAB_OTHER": "x"})
    assert result.returncode == 0 and "warning" not in result.stderr


# -- 5. the JSON stream always ends with its one terminal event ----------------------------------------


def _spawn_slow(*args: str, extra: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    env = _env({"ROBOT_LAB_DEMO__DELAY": "0.05", **(extra or {})})
    return subprocess.Popen([sys.executable, "-m", "workspace", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env)


@posix_only
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_stream_still_ends_the_json_with_run_cancelled(robotlab_home: Path, sig: int) -> None:
    proc = _spawn_slow("run", "assistant", "hello there", "--json")
    try:
        read_until(proc, b'"text_delta"')
        proc.send_signal(sig)
        assert wait_exit(proc) == 128 + sig  # 130 for Ctrl-C, 143 for SIGTERM
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    events = json_lines(out.decode())
    assert events[-1]["kind"] == "run_cancelled" and "Traceback" not in err.decode()
    assert [e["kind"] for e in events].count("run_cancelled") == 1


@posix_only
def test_sigterm_stops_the_run_when_its_terminal_has_gone(robotlab_home: Path) -> None:
    """The reader of its output gone (a killed test runner, a closed terminal), SIGTERM still stops the run at
    once: the handler said "Cancelled." on stderr before cancelling, the print raised, and the run went on (a
    process left behind for as long as its model kept answering)."""
    from tests.fakes.llm_server import FakeLLMServer, Reply

    with FakeLLMServer() as server:
        server.enqueue(Reply.say("late", stall_before=120))  # the model takes its time: nothing is written
        proc = _spawn_slow("run", "assistant", "hello there", "--json", "--model", "openai/fake", "--api-base",
                           server.base_url + "/v1", extra={"OPENAI_API_KEY": "sk-test"})
        try:
            read_until(proc, b'"run_started"')
            assert server.wait_for_requests(1, timeout=60)
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()
            proc.stderr.close()
            proc.send_signal(signal.SIGTERM)
            # At once (the old code waited for the model): 143 (SIGTERM), 141 when the run's last lines met the
            # closed pipe, or 120, Python's status when its last flush of stdout at exit fails
            assert wait_exit(proc, timeout=60) in (128 + signal.SIGTERM, 128 + signal.SIGPIPE, 120)
        finally:
            if proc.poll() is None:
                proc.kill()


def test_a_failure_before_the_run_is_one_run_failed_line(robotlab_home: Path) -> None:
    result = robotlab("run", "no-such-robot", "hi", "--json")
    assert result.returncode == 2
    (event,) = json_lines(result.stdout)
    assert event["kind"] == "run_failed" and "Unknown robot 'no-such-robot'" in event["error"]
    assert "Unknown robot" in result.stderr


def test_template_variables_from_the_command_line(robotlab_home: Path) -> None:
    write_robot(robotlab_home, "cust", "---\ntools: []\n---\nYou help {{ customer.name }}.")
    missing = robotlab("run", "cust", "hi")
    assert missing.returncode == 2 and "--param NAME=VALUE" in missing.stderr
    given = robotlab("run", "cust", "hi", "--param", 'customer={"name": "Ada"}', "--json")
    assert given.returncode == 0, given.stderr
    assert json_lines(given.stdout)[-1]["kind"] == "run_finished"


def test_robots_list_names_the_files_it_could_not_read(robotlab_home: Path) -> None:
    write_robot(robotlab_home, "broken", "---\nname: [unclosed\n---\nHi")
    write_robot(robotlab_home, "fine", "---\ndescription: ok\n---\nHi")
    result = robotlab("robots", "list")
    assert result.returncode == 0 and "fine" in result.stdout and "broken" not in result.stdout
    assert "not listed:" in result.stderr and "broken.md" in result.stderr


def test_the_turn_limit_is_not_reported_as_done(robotlab_home: Path) -> None:
    from tests.fakes.llm_server import FakeLLMServer, Reply

    with FakeLLMServer() as server:
        for _ in range(3):
            server.enqueue(Reply.tool("list_files", {"path": "."}))
        result = robotlab("run", "assistant", "look around", "--max-turns", "2", "--model", "openai/fake",
                          "--api-base", server.base_url + "/v1", env={"OPENAI_API_KEY": "sk-test"})
    # The turn limit is no success (it was 0): a status of its own, 3 (`run --help`).
    assert result.returncode == 3, result.stderr
    assert "stopped at the turn limit" in result.stdout and "--max-turns" in result.stdout
    assert "✓ done" not in result.stdout


@posix_only
def test_a_signal_mid_run_never_asks_to_review_and_writes_nothing(folder: Path) -> None:
    proc = _spawn_slow("--folder", str(folder), "run", "file-helper", EDIT + " and explain it at length")
    try:
        read_until(proc, b"edit_file")  # the edit is proposed; the demo goes on talking
        proc.send_signal(signal.SIGTERM)
        assert wait_exit(proc) == 143
        assert proc.stdout is not None and proc.stderr is not None
        out = proc.stdout.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "accept?" not in out  # no review of a stopped run
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT


@posix_only
def test_a_second_ctrl_c_quits_at_once_without_a_traceback(robotlab_home: Path) -> None:
    proc = _spawn_slow("run", "assistant", "hello there", extra={"ROBOT_LAB_DEMO__DELAY": "0.2"})
    try:
        read_until(proc, b"assistant")
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        assert wait_exit(proc) == 130
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in err and "Cancelled." in err


def test_param_may_not_take_a_run_options_name(robotlab_home: Path) -> None:
    result = robotlab("run", "assistant", "hi", "--param", "tools=\"all\"")
    assert result.returncode == 2 and "run option, not a template variable" in result.stderr
