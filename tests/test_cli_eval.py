"""``robotlab eval FILE`` as a person or CI runs it: the table, the failures, --junit (parsed with xml.etree),
--json, the exit status, and a re-run answered from the cache (zero requests reach the loopback server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(300)  # bounds a hang only

ROBOT = "---\nname: helper\ndescription: Helps.\ntools: [read_file]\n---\nYou help.\n"
CASES = """cases:
  - name: refund
    message: "I was charged twice"
    expect:
      - contains: refund
  - name: reads
    message: "read the orders"
    folder: shop
    expect:
      - tool_called: {name: read_file, args: {path: orders.csv}}
  - name: apology
    message: "say sorry"
    expect:
      - contains: sorry
"""


def answer(body: dict[str, Any]) -> Reply:
    said = str([m for m in body["messages"] if m["role"] == "user"][-1]["content"])
    if body["messages"][-1]["role"] == "tool":
        return Reply.say("I read it.")
    if "read the orders" in said:
        return Reply.tool("read_file", {"path": "orders.csv"})
    return Reply.say("We will refund you.")


def make(tmp_path: Path, server: FakeLLMServer, cases: str = CASES) -> Path:
    (tmp_path / "helper.md").write_text(ROBOT, encoding="utf-8")
    (tmp_path / "shop").mkdir(exist_ok=True)
    (tmp_path / "shop" / "orders.csv").write_text("order\n1041\n", encoding="utf-8")
    path = tmp_path / "support.yaml"
    path.write_text(f"robot: helper.md\nmodels: [{{model: openai/fake, api_base: '{server.base_url}/v1'}}]\n{cases}",
                    encoding="utf-8")
    return path


def robotlab(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "workspace", "eval", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=240)


def test_a_failing_case_exits_1_with_the_table_the_reason_and_junit(tmp_path: Path) -> None:
    junit = tmp_path / "out.xml"
    with FakeLLMServer(reply_fn=answer) as server:
        done = robotlab(str(make(tmp_path, server)), "--junit", str(junit), "-j", "2", home=tmp_path / "home")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["robot", "openai/fake"] and lines[2].split() == ["helper", "2/3", "(66%)"]
    assert "FAIL apology [helper × openai/fake]" in done.stdout
    assert "- contains: \"sorry\": the answer does not contain 'sorry'; it was 'We will refund you.'" in done.stdout
    assert "2/3 passed" in done.stdout and "0 from the cache, 4 asked" in done.stdout
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "3" and root.get("failures") == "1"
    suites = root.findall("testsuite")
    assert len(suites) == 1 and suites[0].get("tests") == "3" and suites[0].get("failures") == "1"
    cases = {c.get("name"): c for c in suites[0].findall("testcase")}
    assert set(cases) == {"refund", "reads", "apology"}
    failure = cases["apology"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("contains: \"sorry\": the answer does not")
    assert cases["refund"].find("failure") is None and cases["reads"].find("failure") is None


def test_all_passing_exits_0_and_a_re_run_asks_the_server_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeLLMServer(reply_fn=answer) as server:
        path = make(tmp_path, server, CASES.split("  - name: apology")[0])
        first = robotlab(str(path), "--json", home=home)
        asked = len(server.requests)
        again = robotlab(str(path), "--json", home=home)
        after = len(server.requests)
        fresh = robotlab(str(path), "--no-cache", home=home)
        assert len(server.requests) == after + asked
    assert first.returncode == 0 and again.returncode == 0 and fresh.returncode == 0, first.stderr + again.stderr
    assert asked == 3 and after == asked  # the re-run: zero requests reached the loopback server
    results = [json.loads(line) for line in again.stdout.splitlines()]
    assert sorted(r["case"] for r in results[:-1]) == ["reads", "refund"]
    assert all(r["passed"] and r["requests"] == 0 for r in results[:-1])
    summary = results[-1]
    assert summary["summary"] and summary["cases"] == 2 and summary["failed"] == 0
    assert summary["cache_hits"] == 3 and summary["model_requests"] == 0
    assert "(cache off)" in fresh.stdout


def test_models_and_robots_from_the_command_line(tmp_path: Path) -> None:
    with FakeLLMServer(reply_fn=answer) as server:
        path = make(tmp_path, server, CASES.split("  - name: reads")[0])
        (tmp_path / "twin.md").write_text(ROBOT.replace("name: helper", "name: twin"), encoding="utf-8")
        done = robotlab(str(path), "--robots", f"helper.md,{tmp_path / 'twin.md'}", "--models", "openai/fake,openai/fake2",
                        "--api-base", f"{server.base_url}/v1", "--json", home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["cases"] == 4
    assert {(p["robot"], p["model"]) for p in summary["pass_rates"]} == {
        ("helper", "openai/fake"), ("helper", "openai/fake2"), ("twin", "openai/fake"), ("twin", "openai/fake2")}


@pytest.mark.parametrize(("text", "args", "said"), [
    ("robot: a\ncases: []\n", [], "cases"),
    ("robot: a\ncases: [{name: x, message: y, expect: [{contain: z}]}]\n", [], "did you mean 'contains'?"),
    ("robot: a\ncases: [{name: x, message: y}]\n", ["--api-base", "http://127.0.0.1:9/v1"], "--api-base goes with"),
    ("robot: a\ncases: [{name: x, message: y}]\n", ["--models", " , "], "--models is empty"),
    ("robot: a\ncases: [{name: x, message: y}]\n", ["-j", "0"], "must be >= 1"),
    ("robot: a\nmodels: [{model: openai/fake, api_base: 'http://192.0.2.2:9/v1'}]\ncases: [{name: x, message: y}]\n",
     [], "files in the opened folder may not send your provider key elsewhere"),
])
def test_bad_input_exits_2_naming_the_fix(tmp_path: Path, text: str, args: list[str], said: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    done = robotlab(str(path), *args, home=tmp_path / "home")
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_file_and_a_missing_key_exit_2(tmp_path: Path) -> None:
    missing = robotlab(str(tmp_path / "nope.yaml"), home=tmp_path / "home")
    assert missing.returncode == 2 and "eval file not found" in missing.stderr
    path = tmp_path / "e.yaml"
    path.write_text("robot: assistant\nmodels: [openai/gpt-4o-mini]\ncases: [{name: x, message: y}]\n",
                    encoding="utf-8")
    no_key = robotlab(str(path), home=tmp_path / "home")  # the autouse fixture took every *_API_KEY away
    assert no_key.returncode == 2 and "needs an API key: set OPENAI_API_KEY" in no_key.stderr
