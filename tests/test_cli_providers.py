"""``robotlab run`` against a loopback server that behaves as real ones do (a subprocess, no keys):
every wait and retry shows, a cut answer says so, unknown cost says so, Ctrl-C ends a wait at once,
and litellm prints nothing of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

ROOT = Path(__file__).resolve().parent.parent
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="signals are POSIX")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **(extra or {})}
    env.pop("LITELLM_LOG", None)  # as people run it: litellm's own log level untouched
    return env


def robotlab(server: FakeLLMServer, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workspace", "run", "assistant", *args, "--model", "openai/fake",
                           "--api-base", server.base_url + "/v1"], capture_output=True, text=True, cwd=ROOT,
                          env=_env(env), timeout=120)


def lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.mark.parametrize("provider", ["auto", "litellm"])
def test_a_retry_is_a_line_and_an_event(provider: str) -> None:
    env = {"ROBOT_LAB_LLM__PROVIDER": provider}
    with FakeLLMServer() as server:
        server.enqueue(Reply.error(429, retry_after=0.1), Reply.say("Hello after the wait."))
        text = robotlab(server, "hi", env=env)
        server.enqueue(Reply.error(429, retry_after=0.1), Reply.say("Hello after the wait."))
        as_json = robotlab(server, "hi", "--json", env=env)
    assert text.returncode == 0, text.stderr
    assert "⟳ retrying: HTTP 429" in text.stdout and "Retry-After" in text.stdout
    assert "Hello after the wait." in text.stdout
    events = lines(as_json.stdout)  # nothing but JSON lines: litellm's INFO lines never reach stdout
    retry = [e for e in events if e["kind"] == "run_status" and e["state"] == "retrying"]
    assert retry and retry[0]["retry_in"] == 0.1 and retry[0]["attempt"] == 1
    assert "LiteLLM" not in text.stderr + as_json.stderr and "INFO" not in text.stderr + as_json.stderr


def test_a_cut_answer_and_an_unknown_cost_say_so() -> None:
    with FakeLLMServer(stream_usage=False) as server:
        server.enqueue(Reply.say("The first half", finish_reason="length"))
        result = robotlab(server, "tell me")
    assert result.returncode == 0, result.stderr
    assert "cut off at the token limit" in result.stdout and "max_tokens" in result.stdout
    assert "(estimated: the server reported none)" in result.stdout and "cost unknown" in result.stdout
    assert "$0.00" not in result.stdout and "✓ done" not in result.stdout


def test_an_html_page_names_the_real_problem() -> None:
    with FakeLLMServer() as server:
        server.enqueue(Reply(html="<html><title>Login</title></html>", times=3))
        result = robotlab(server, "hi")
    assert result.returncode == 1
    assert "did not answer with an event stream (it sent an HTML page" in result.stdout
    assert "is the api_base right?" in result.stdout


@posix_only
def test_ctrl_c_ends_a_wait_for_the_first_token_at_once() -> None:
    with FakeLLMServer() as server:
        server.enqueue(Reply.say("too late", stall_before=60))
        proc = subprocess.Popen([sys.executable, "-m", "workspace", "run", "assistant", "hi", "--model", "openai/fake",
                                 "--api-base", server.base_url + "/v1"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=ROOT, env=_env())
        try:
            assert server.wait_for_requests(1, timeout=60)
            time.sleep(0.2)
            started = time.monotonic()
            proc.send_signal(signal.SIGINT)
            status = proc.wait(timeout=60)
            assert time.monotonic() - started < 60 / 4  # at once: long before the 60 s stall would end
        finally:
            if proc.poll() is None:
                proc.kill()
        assert status == 130
        assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
