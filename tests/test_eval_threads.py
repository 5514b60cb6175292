"""Eval runs recorded as threads (each case × robot × model a thread marked as an eval case, left out of thread
lists unless asked), the rubric judge's tokens counted apart from the robot's, and a judge that becomes
unreachable in the middle of an eval: its cases fail naming the judge, the others go on, and `robotlab eval`
exits 1. The models are loopback OpenAI-compatible servers; the store is a SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace import events as ev
from workspace.evals import load_eval_file, run_eval
from workspace.persistence import Store, coalesce_text

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(300)  # bounds a hang only

ROBOT = "---\nname: helper\ndescription: Helps.\ntools: [read_file]\n---\nYou help.\n"


def robot_answer(body: dict[str, Any]) -> Reply:
    said = str([m for m in body["messages"] if m["role"] == "user"][-1]["content"])
    if "You judge" in str(body["messages"][0]["content"]):
        return Reply.say('{"pass": true, "reason": "it names the order"}')
    return Reply.say(f"About {said}: we will refund order 1041.")


def write(tmp_path: Path, server: FakeLLMServer, cases: str) -> Path:
    (tmp_path / "helper.md").write_text(ROBOT, encoding="utf-8")
    path = tmp_path / "eval.yaml"
    path.write_text(f"robot: helper.md\nmodels: [{{model: openai/fake, api_base: '{server.base_url}/v1'}}]\n"
                    f"cases:{cases}", encoding="utf-8")
    return path


CASES = """
  - name: refund
    message: "I was charged twice"
    expect:
      - contains: refund
      - rubric: {text: "The answer names the order"}
  - name: sorry
    message: "say sorry"
    expect:
      - contains: apologies
"""


async def test_each_case_is_a_thread_marked_as_an_eval_case_and_left_out_of_lists(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "threads.db")
    mine = store.create_thread(robot="helper", title="a conversation of mine")
    with FakeLLMServer(reply_fn=robot_answer) as server:
        path = write(tmp_path, server, CASES)
        report = await run_eval(load_eval_file(path), base=tmp_path, store=store, eval_file=path)
    by_case = {r.case: r for r in report.results}
    assert by_case["refund"].passed and not by_case["sorry"].passed
    assert report.run_id and report.summary()["eval_run"] == report.run_id
    for result in report.results:
        assert result.thread_id is not None and result.to_dict()["thread_id"] == result.thread_id
        thread = store.get_thread(result.thread_id)
        assert thread.metadata == {"origin": "eval", "eval_file": str(path.resolve()), "eval_case": result.case,
                                   "eval_run": report.run_id, "eval_model": "openai/fake"}
        assert thread.robot == "helper" and thread.origin_label == "eval"
        (turn,) = store.turns(thread.id)
        assert turn.user_text == next(c.message for c in load_eval_file(path).cases if c.name == result.case)
        assert turn.status == "finished"
        ((_, events),) = store.path_events(thread.id)
        said = [e.text for e in coalesce_text(events) if isinstance(e, ev.Text)]
        assert said == [result.outcome.answer] and "refund order 1041" in said[0]
    assert by_case["refund"].thread_id != by_case["sorry"].thread_id
    # The thread lists a person reads leave the eval's threads out; asked, they are there.
    assert [t.id for t in store.list_threads()] == [mine.id]
    assert {t.id for t in store.list_threads(include_evals=True)} == {mine.id, *(r.thread_id for r in report.results)}
    assert store.latest_thread() is not None and store.latest_thread().id == mine.id  # type: ignore[union-attr]
    # Search leaves them out as the lists do (ranked by FTS5, and by the LIKE fallback); asked, they are found.
    evals = {r.thread_id for r in report.results}
    for fts in (store.fts, False):
        store.fts = fts
        assert not {h.thread_id for h in store.search("refund")}, fts
        assert {h.thread_id for h in store.search("refund", include_evals=True)} <= evals
        assert {h.thread_id for h in store.search("refund", include_evals=True)}, fts
    store.close()


async def test_without_a_store_nothing_is_recorded(tmp_path: Path) -> None:
    with FakeLLMServer(reply_fn=robot_answer) as server:
        report = await run_eval(load_eval_file(write(tmp_path, server, CASES)), base=tmp_path)
    assert [r.thread_id for r in report.results] == [None, None]


async def test_the_judges_tokens_are_counted_apart_from_the_robots(tmp_path: Path) -> None:
    with FakeLLMServer(reply_fn=robot_answer) as server:
        report = await run_eval(load_eval_file(write(tmp_path, server, CASES)), base=tmp_path)
        judged = [r for r in server.requests if "You judge" in str(r["messages"][0]["content"])]
    by_case = {r.case: r for r in report.results}
    refund, sorry = by_case["refund"], by_case["sorry"]
    assert len(judged) == 1
    assert refund.judge.calls == 1 and refund.judge.input_tokens > 0 and refund.judge.output_tokens > 0
    assert sorry.judge.calls == 0 and sorry.judge.input_tokens == 0
    # The robot's tokens are its run's alone: the judge's question (the rubric and the answer) is longer.
    assert 0 < refund.input_tokens < refund.judge.input_tokens and refund.output_tokens > 0
    assert refund.to_dict()["judge"] == {"calls": 1, "input_tokens": refund.judge.input_tokens,
                                         "output_tokens": refund.judge.output_tokens, "cost": None}
    totals = report.summary()
    assert totals["judge"] == {"calls": 1, "input_tokens": refund.judge.input_tokens,
                               "output_tokens": refund.judge.output_tokens, "cost": None}
    assert totals["robot"]["input_tokens"] == refund.input_tokens + sorry.input_tokens


def test_a_judge_unreachable_mid_run_fails_its_cases_by_name_and_the_others_go_on(tmp_path: Path) -> None:
    judge = FakeLLMServer()
    asked: list[int] = []

    def verdict(body: dict[str, Any]) -> Reply:
        asked.append(1)
        if len(asked) == 1:
            return Reply.say('{"pass": true, "reason": "fine"}')
        # The second question: the judge's server goes away while it is asked (and stays away).
        threading.Thread(target=judge.stop, daemon=True).start()
        return Reply.say('{"pass": true, "reason": "never sent"}', stall_before=5)

    judge.reply_fn = verdict
    judge.start()
    address = f"{judge.base_url}/v1"
    judged = f"      - rubric: {{text: 'The answer is kind', model: openai/judge, api_base: '{judge.base_url}/v1'}}\n"
    cases = "".join(f"""
  - name: case-{i}
    message: "order {i}"
    expect:
      - contains: "order {i}"
{judged}""" for i in range(1, 4)) + """
  - name: unjudged
    message: "order 4"
    expect:
      - contains: "order 4"
"""
    try:
        with FakeLLMServer(reply_fn=robot_answer) as server:
            path = write(tmp_path, server, cases)
            env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(tmp_path / "home")}
            done = subprocess.run([sys.executable, "-m", "workspace", "eval", str(path), "--json", "-j", "1",
                                   "--no-cache", "--db", str(tmp_path / "threads.db")], capture_output=True, text=True, cwd=ROOT, env=env, timeout=240)
    finally:
        judge.stop()
    assert done.returncode == 1, done.stderr  # some case failed (as documented), not 2: the eval ran
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    results = {r["case"]: r for r in lines if not r.get("summary")}
    assert set(results) == {"case-1", "case-2", "case-3", "unjudged"}  # every case ran to its result
    assert results["case-1"]["passed"] and results["unjudged"]["passed"]
    for name in ("case-2", "case-3"):
        (why,) = results[name]["failures"]
        assert why.startswith('rubric: {"text": "The answer is kind", "model": "openai/judge", "api_base": '), why
        assert f"the judge (openai/judge) could not answer: openai/judge: could not connect to {address}" in why, why
        assert results[name]["answer"] == f"About order {name[-1]}: we will refund order 1041."  # the robot answered
    assert lines[-1]["summary"] and lines[-1]["failed"] == 2 and lines[-1]["judge"]["calls"] == 3
    # Each case's thread is named in its result and is in the database (--db), marked as an eval case.
    with Store.open(tmp_path / "threads.db") as store:
        for result in results.values():
            assert store.get_thread(result["thread_id"]).metadata["eval_case"] == result["case"]


async def test_a_case_stopped_at_the_timeout_is_recorded_with_its_stop(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "threads.db")
    with FakeLLMServer(reply_fn=lambda body: Reply.say("too late", stall_before=30)) as server:
        path = write(tmp_path, server, '\n  - name: slow\n    message: "hello"\n')
        path.write_text(path.read_text(encoding="utf-8").replace("cases:", "timeout: 1\ncases:"), encoding="utf-8")
        report = await run_eval(load_eval_file(path), base=tmp_path, store=store, eval_file=path)
    (result,) = report.results
    assert result.failures == ["the run did not finish: stopped after the eval's timeout of 1 s (timeout: in the "
                               "eval file)"]
    assert result.thread_id is not None
    (turn,) = store.turns(result.thread_id)
    assert turn.status == "cancelled"
    ((_, events),) = store.path_events(result.thread_id)
    assert isinstance(events[-1], ev.RunCancelled) and "timeout of 1 s" in events[-1].reason
    store.close()


def test_the_text_report_names_each_failed_cases_thread_and_the_tokens_apart(tmp_path: Path) -> None:
    with FakeLLMServer(reply_fn=robot_answer) as server:
        path = write(tmp_path, server, CASES)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(tmp_path / "home")}
        done = subprocess.run([sys.executable, "-m", "workspace", "eval", str(path), "--no-cache", "--db",
                               str(tmp_path / "threads.db")], capture_output=True, text=True, cwd=ROOT, env=env,
                              timeout=240)
    assert done.returncode == 1, done.stderr
    with Store.open(tmp_path / "threads.db") as store:
        (sorry,) = [t for t in store.list_threads(include_evals=True) if t.metadata["eval_case"] == "sorry"]
        assert store.list_threads() == []
    assert f"FAIL sorry [helper × openai/fake] (thread {sorry.id[:8]})" in done.stdout
    (tokens,) = [line for line in done.stdout.splitlines() if line.startswith("Tokens: ")]
    assert tokens.startswith("Tokens: robots: ") and "; judges (1 call(s)): " in tokens, tokens
    assert tokens.endswith("out, cost not known"), tokens
    assert "`robotlab threads list --evals`" in done.stdout
    # Listed with --evals, not without.
    listed = subprocess.run([sys.executable, "-m", "workspace", "threads", "list", "--evals", "--db",
                             str(tmp_path / "threads.db")], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=120)
    assert sorry.id[:8] in listed.stdout and "eval" in listed.stdout
    plain = subprocess.run([sys.executable, "-m", "workspace", "threads", "list", "--db", str(tmp_path / "threads.db")],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert sorry.id[:8] not in plain.stdout
