"""Evals (workspace.evals): the eval file, each assertion kind passing and failing with its reason, the
matrix at a concurrency, and the cache that answers a re-run without asking the model. The model is the
loopback OpenAI-compatible server, which answers by the case's message."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace.errors import ConfigurationError
from workspace.evals import AnswerCache, Outcome, check, load_eval_file, run_eval
from workspace.evals.checks import subset
from workspace.evals.spec import Expect
from workspace.isolation import SandboxUnavailable, sandbox_for_platform

pytestmark = pytest.mark.timeout(300)  # bounds a hang only

ROBOT = """---
name: helper
description: Helps in tests.
tools: [read_file, write_file, edit_file, list_files]
---
You help.
"""


def _has_sandbox() -> bool:
    try:
        sandbox_for_platform()
    except SandboxUnavailable:
        return False
    return True


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def answer(body: dict[str, Any]) -> Reply:
    """The scripted model: by the case's message; after a tool result, a closing sentence."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    said = _last_user(body)
    if "You judge" in str(system):
        if "polite" in said:
            return Reply.say('{"pass": true, "reason": "it is polite"}')
        if "rhymes" in said:
            return Reply.say('{"pass": false, "reason": "it does not rhyme"}')
        return Reply.say("Sure, that passes!")
    if body["messages"][-1]["role"] == "tool":
        return Reply.say("Done: I looked at it.")
    if "read the orders" in said:
        return Reply.tool("read_file", {"path": "orders.csv"})
    if "write a note" in said:
        return Reply.tool("write_file", {"path": "notes.md", "content": "A refund was promised.\n"})
    if "json" in said:
        return Reply.say('{"order": 1041, "refund": true}')
    return Reply.say("We will refund order 1041 today.")


@pytest.fixture
def server() -> Any:
    with FakeLLMServer(reply_fn=answer) as fake:
        yield fake


def write_eval(tmp_path: Path, server: FakeLLMServer, cases: str, *, head: str = "") -> Path:
    (tmp_path / "helper.md").write_text(ROBOT, encoding="utf-8")
    shop = tmp_path / "shop"
    shop.mkdir(exist_ok=True)
    (shop / "orders.csv").write_text("order,amount\n1041,42.00\n1041,42.00\n", encoding="utf-8")
    (shop / "test.sh").write_text("grep -q refund notes.md\n", encoding="utf-8")
    path = tmp_path / "eval.yaml"
    path.write_text(f"robot: helper.md\nmodels: [{{model: openai/fake, api_base: '{server.base_url}/v1'}}]\n"
                    f"{head}cases:\n{cases}", encoding="utf-8")
    return path


async def run(path: Path, **options: Any) -> Any:
    return await run_eval(load_eval_file(path), base=path.parent, **options)


def reasons(report: Any) -> dict[str, list[str]]:
    return {r.case: r.failures for r in report.results}


async def test_text_assertions_pass_and_fail_with_their_reason(tmp_path: Path, server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, """
  - name: holds
    message: "I was charged twice"
    expect:
      - contains: "refund"
      - regex: 'order \\d{4}'
      - equals: "We will refund order 1041 today."
  - name: fails
    message: "I was charged twice, again"
    expect:
      - contains: "sorry"
      - regex: '^No'
      - equals: "We will refund."
  - name: json-holds
    message: "answer in json"
    expect:
      - json_schema: {type: object, required: [order, refund], properties: {refund: {type: boolean}}}
  - name: json-fails
    message: "answer in json please"
    expect:
      - json_schema: {type: object, properties: {order: {type: string}}}
  - name: not-json
    message: "plain words"
    expect:
      - json_schema: {type: object}
""")
    report = await run(path, concurrency=3)
    why = reasons(report)
    assert why["holds"] == [] and why["json-holds"] == []
    assert why["fails"] == [
        "contains: \"sorry\": the answer does not contain 'sorry'; it was 'We will refund order 1041 today.'",
        "regex: \"^No\": the answer does not match the regex '^No'; it was 'We will refund order 1041 today.'",
        "equals: \"We will refund.\": the answer is not equal to 'We will refund.'; it was "
        "'We will refund order 1041 today.'",
    ]
    assert why["json-fails"] == ['json_schema: {"type": "object", "properties": {"order": {"type": "string"}}}: the '
                                 "answer's JSON does not match json_schema at order: 1041 is not of type 'string'"]
    assert len(why["not-json"]) == 1 and "the answer is not JSON" in why["not-json"][0]
    assert not report.passed and report.pass_rates() == {("helper", "openai/fake"): (2, 5)}


async def test_tool_and_change_assertions_on_a_copy_of_the_folder(tmp_path: Path, server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, """
  - name: reads
    message: "read the orders"
    folder: shop
    expect:
      - tool_called: {name: read_file, args: {path: orders.csv}}
      - tool_called: {name: read_file, args: {path: other.csv}}
      - tool_called: {name: list_files}
  - name: notes
    message: "write a note"
    folder: shop
    expect:
      - change_proposed: {path: notes.md, contains: "refund"}
      - change_proposed: {path: notes.md, contains: "apology"}
      - change_proposed: {path: orders.csv}
""")
    report = await run(path)
    why = reasons(report)
    assert why["reads"] == [
        'tool_called: {"name": "read_file", "args": {"path": "other.csv"}}: the tool \'read_file\' was called, but '
        'never with arguments matching {"path": "other.csv"} (its calls: {"path": "orders.csv"})',
        "tool_called: {\"name\": \"list_files\"}: the tool 'list_files' was not called (tools called: read_file)",
    ]
    assert why["notes"] == [
        'change_proposed: {"path": "notes.md", "contains": "apology"}: the change proposed to notes.md does not '
        "contain 'apology'",
        'change_proposed: {"path": "orders.csv"}: no change was proposed to orders.csv (changes proposed: notes.md)',
    ]
    assert report.results[0].outcome.answer == "Done: I looked at it."
    assert not (tmp_path / "shop" / "notes.md").exists()  # proposed in the copy's change set, nothing applied


async def test_time_and_cost_bounds(tmp_path: Path, server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, """
  - name: in-time
    message: "hello"
    expect:
      - max_seconds: 120
  - name: too-slow
    message: "hello again"
    expect:
      - max_seconds: 0.000001
  - name: price-unknown
    message: "hello there"
    expect:
      - max_cost: 1
""")
    why = reasons(await run(path))
    assert why["in-time"] == []
    assert len(why["too-slow"]) == 1 and "more than max_seconds 1e-06" in why["too-slow"][0]
    assert why["price-unknown"] == ["max_cost: 1.0: the cost is not known (the provider reported no price for this "
                                    "model), so max_cost cannot hold; leave max_cost out for this model"]
    # A known price: within the bound, and over it.
    bound = Expect(max_cost=0.01)
    assert check(bound, Outcome(cost=0.004)) is None
    assert check(bound, Outcome(cost=0.02)) == "the case cost $0.020000, more than max_cost $0.01"


async def test_a_rubric_is_judged_by_a_model_and_its_answer_parsed_strictly(tmp_path: Path,
                                                                            server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, """
  - name: judged
    message: "I was charged twice"
    expect:
      - rubric: {text: "The answer is polite"}
      - rubric: {text: "The answer rhymes", model: openai/fake}
      - rubric: {text: "Anything at all"}
""", head=f"api_base: '{server.base_url}/v1'\n")
    report = await run(path)
    assert reasons(report)["judged"] == [
        'rubric: {"text": "The answer rhymes", "model": "openai/fake"}: the judge (openai/fake) failed it: it does '
        "not rhyme",
        'rubric: {"text": "Anything at all"}: the judge (openai/fake) did not answer with the JSON asked for '
        "({\"pass\": true|false, \"reason\": \"...\"}); it said 'Sure, that passes!'",
    ]
    judged = [r for r in server.requests if "You judge" in str(r["messages"][0]["content"])]
    assert len(judged) == 3 and "We will refund order 1041 today." in judged[0]["messages"][-1]["content"]


@pytest.mark.skipif(not _has_sandbox(), reason="verify runs in the bubblewrap sandbox")
async def test_verify_runs_on_the_proposed_changes(tmp_path: Path, server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, """
  - name: note-written
    message: "write a note"
    folder: shop
    expect:
      - verify: passed
  - name: no-note
    message: "hello"
    folder: shop
    expect:
      - verify: passed
""", head="verify: sh test.sh\n")
    why = reasons(await run(path))
    assert why["note-written"] == []  # the test passes only on the proposed notes.md
    assert len(why["no-note"]) == 1
    assert why["no-note"][0] == ("verify: \"passed\": the verify command 'sh test.sh' failed (exit code 2), expected "
                                 "passed; its output ends: grep: notes.md: No such file or directory")


async def test_the_matrix_runs_every_robot_and_model_at_a_concurrency(tmp_path: Path, server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, "".join(f"""
  - name: case-{i}
    message: "I was charged twice ({i})"
    expect:
      - contains: refund
""" for i in range(6)))
    (tmp_path / "other.md").write_text(ROBOT.replace("name: helper", "name: other"), encoding="utf-8")
    from workspace.evals import ModelEntry

    base = f"{server.base_url}/v1"
    report = await run(path, robots=["helper.md", "other.md"], concurrency=4,
                       models=[ModelEntry(model="openai/fake", api_base=base),
                               ModelEntry(model="openai/fake", api_base=base, label="fake-2")])
    assert len(report.results) == 24 and report.passed
    assert report.pass_rates() == {(r, m): (6, 6) for r in ("helper", "other") for m in ("openai/fake", "fake-2")}
    assert len(server.requests) == 24


async def test_the_cache_answers_a_re_run_without_asking_the_model(tmp_path: Path, server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, """
  - name: reads
    message: "read the orders"
    folder: shop
    expect:
      - tool_called: {name: read_file}
  - name: notes
    message: "write a note"
    folder: shop
    expect:
      - change_proposed: {path: notes.md, contains: refund}
""")
    cache = AnswerCache(tmp_path / "cache.db")
    first = await run(path, cache=cache, concurrency=2)
    asked = len(server.requests)
    assert first.passed and asked == 4 and (first.cache_hits, first.cache_misses) == (0, 4)
    again = await run(path, cache=cache, concurrency=2)
    assert again.passed and len(server.requests) == asked  # nothing reached the server
    assert (again.cache_hits, again.cache_misses) == (4, 0)
    assert [r.outcome.answer for r in again.results] == [r.outcome.answer for r in first.results]
    refreshed = await run(path, cache=AnswerCache(tmp_path / "cache.db", refresh=True))
    assert refreshed.passed and len(server.requests) == asked + 4


async def test_no_secret_reaches_the_cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workspace.secrets import register_secret

    secret = "sk-eval-secret-0123456789abcdef"
    register_secret(secret, name="OPENAI_API_KEY")
    with FakeLLMServer() as fake:
        fake.enqueue(Reply.say(f"your key is {secret}"))
        path = write_eval(tmp_path, fake, """
  - name: leaks
    message: "what is my key?"
    expect:
      - contains: "your key is"
""")
        cache = AnswerCache(tmp_path / "cache.db")
        report = await run(path, cache=cache)
        cache.close()
    assert report.passed
    stored = (tmp_path / "cache.db").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("cache.db-*"))
    assert secret.encode() not in stored
    rows = sqlite3.connect(tmp_path / "cache.db").execute("SELECT chunks FROM answers").fetchall()
    assert len(rows) == 1 and "<OPENAI_API_KEY>" in rows[0][0]


def test_arguments_match_as_a_subset() -> None:
    assert subset({"path": "a.csv"}, {"path": "a.csv", "limit": 3})
    assert subset({"q": {"city": "Oslo"}}, {"q": {"city": "Oslo", "days": 2}})
    assert subset({"limit": 3}, {"limit": "3"})
    assert not subset({"path": "a.csv"}, {"path": "b.csv"})
    assert not subset({"flag": True}, {"flag": 1})
    assert not subset({"path": "a.csv"}, {})


def test_a_bad_eval_file_names_the_case_the_key_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text("robot: helper\ncases:\n  - name: refund\n    message: hi\n    expect:\n      - contains: a\n"
                    "        regex: b\n      - tool_caled: {name: x}\n  - name: slow\n    message: hi\n    expect:\n"
                    "      - max_seconds: -1\n", encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        load_eval_file(path)
    text = str(caught.value)
    assert f"{path}:6: case 'refund' (cases[0]).expect[0]" in text and "write one item per assertion" in text
    assert f"{path}:8: unknown setting 'tool_caled' in case 'refund' (cases[0]).expect[1] — did you mean " \
           "'tool_called'?" in text
    assert f"{path}:12: case 'slow' (cases[1]).expect[0].max_seconds: -1 is out of range" in text
    path.write_text("robot: a\nrobots: [b]\ncases: [{name: x, message: y}]\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"robot: NAME, or several with robots: \[A, B\]"):
        load_eval_file(path)
    path.write_text("robot: a\ncases: [{name: x, message: y, folder: nowhere}]\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"case 'x': folder: nowhere is not a folder"):
        load_eval_file(path)
    path.write_text("robot: a\ncases: [{name: x, message: y, expect: [{regex: '('}]}]\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"not a valid regular expression"):
        load_eval_file(path)
    with pytest.raises(ConfigurationError, match=r"eval file not found: .*nope.yaml"):
        load_eval_file(tmp_path / "nope.yaml")


async def test_a_case_whose_robot_cannot_load_fails_with_the_reason(tmp_path: Path, server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, "  - name: x\n    message: hi\n")
    spec = load_eval_file(path)
    report = await run_eval(spec, base=tmp_path, robots=["no-such-robot"])
    assert len(report.results) == 1 and not report.passed
    assert "Unknown robot 'no-such-robot'" in report.results[0].failures[0]


async def test_a_router_group_spreads_the_cases_over_its_deployments(tmp_path: Path) -> None:
    with FakeLLMServer(reply_fn=answer) as one, FakeLLMServer(reply_fn=answer) as two:
        deployments = ", ".join(f"{{litellm_params: {{model: openai/fake, api_base: '{s.base_url}/v1', "
                                f"api_key: sk-deployment-{n}-0123456789}}}}" for n, s in enumerate((one, two)))
        (tmp_path / "helper.md").write_text(ROBOT, encoding="utf-8")
        path = tmp_path / "eval.yaml"
        path.write_text("robot: helper.md\nmodels:\n  - model: cluster\n"
                        f"    router: {{model_list: [{deployments}]}}\ncases:\n" + "".join(
                            f"  - name: c{i}\n    message: 'charged twice ({i})'\n    expect: [{{contains: refund}}]\n"
                            for i in range(20)), encoding="utf-8")
        report = await run(path, concurrency=4)
        assert report.passed, [r.failures for r in report.results if not r.passed]
        assert report.pass_rates() == {("helper", "cluster"): (20, 20)}
        # litellm's Router shuffles: both deployments answered (all 20 on one: a 1 in 500,000 chance).
        assert len(one.requests) + len(two.requests) == 20 and one.requests and two.requests
        assert one.request_log[0].headers["authorization"] == "Bearer sk-deployment-0-0123456789"


def test_a_router_without_deployments_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text("robot: a\nmodels: [{model: cluster, router: {routing_strategy: simple-shuffle}}]\n"
                    "cases: [{name: x, message: y}]\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"router: needs model_list:"):
        load_eval_file(path)


async def test_a_case_continues_a_recorded_thread(tmp_path: Path, server: FakeLLMServer) -> None:
    from workspace.paths import database_path
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    ws = Workspace(db_path=database_path(), provider=ScriptedProvider(["Noted: order 1041, charged twice."]))
    session = ws.new_thread("assistant")
    run = session.send("My order 1041 was charged twice")
    await run.wait()
    thread_id = session.thread_id
    from workspace.exports import export_thread

    (tmp_path / "thread.json").write_text(export_thread(ws.store, thread_id, "json"), encoding="utf-8")
    await ws.aclose()
    path = write_eval(tmp_path, server, f"""
  - name: follow-up
    message: "so what now?"
    thread: {thread_id[:8]}
    expect:
      - contains: refund
  - name: from-export
    message: "and now?"
    thread: thread.json
    expect:
      - contains: refund
  - name: unknown-thread
    message: "so what now?"
    thread: no-such-thread
""")
    report = await run_eval(load_eval_file(path), base=tmp_path)
    why = reasons(report)
    assert why["follow-up"] == []
    assert why["from-export"] == []
    sent = sorted([m["content"] for m in r["messages"]][1:] for r in server.requests)
    assert sent == [["My order 1041 was charged twice", "Noted: order 1041, charged twice.", "and now?"],
                    ["My order 1041 was charged twice", "Noted: order 1041, charged twice.", "so what now?"]]
    assert why["unknown-thread"] == ["the run did not finish: ConfigurationError: thread: no-such-thread: no recorded "
                                     "thread has that id; see `robotlab threads list`"]


@pytest.mark.skipif(not _has_sandbox(), reason="run_command runs in the bubblewrap sandbox")
async def test_approve_answers_the_tools_that_ask(tmp_path: Path) -> None:
    def runs(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.say("Ran it." if "hello" not in str(body["messages"][-1]["content"]) else "Ran: hello")
        return Reply.tool("run_command", {"command": "echo hello > out.txt"})

    with FakeLLMServer(reply_fn=runs) as fake:
        path = write_eval(tmp_path, fake, """
  - name: denied
    message: "make out.txt"
    folder: shop
    expect:
      - tool_called: {name: run_command}
      - change_proposed: {path: out.txt}
  - name: allowed
    message: "make out.txt, please"
    folder: shop
    approve: allow
    expect:
      - change_proposed: {path: out.txt, contains: hello}
""")
        (tmp_path / "helper.md").write_text(ROBOT.replace("list_files]", "list_files, run_command]"),
                                            encoding="utf-8")
        why = reasons(await run(path))
        denied = [m for r in fake.requests if r["messages"][-1]["role"] == "tool" for m in r["messages"][-1:]]
    assert why["allowed"] == []
    assert why["denied"] == ['change_proposed: {"path": "out.txt"}: no change was proposed to out.txt (changes '
                             "proposed: none)"]
    assert any("The eval denies tools that ask for approval ('run_command')" in str(m["content"]) for m in denied)


async def test_a_case_past_the_timeout_is_stopped_and_failed(tmp_path: Path) -> None:
    with FakeLLMServer(reply_fn=lambda body: Reply.say("late", stall_before=60)) as slow:
        path = write_eval(tmp_path, slow, "  - name: stuck\n    message: hi\n    expect: [{contains: late}]\n",
                          head="timeout: 0.5\n")
        report = await run(path)
    assert reasons(report)["stuck"] == [
        "the run did not finish: stopped after the eval's timeout of 0.5 s (timeout: in the eval file)",
        "contains: \"late\": the answer does not contain 'late'; it was ''"]


def test_the_cache_key_is_the_request_without_secrets_or_run_ids() -> None:
    from workspace.evals import request_key
    from workspace.messages import TextMessage, ToolCallMessage, ToolResultMessage
    from workspace.messages import ToolMessage as Call
    from workspace.providers.base import ToolSpec

    def key(call_id: str, folder: str, **settings: Any) -> str:
        messages = [TextMessage("user", f"read {folder}/orders.csv"),
                    ToolCallMessage(tools=[Call(call_id, "read_file", {"path": "orders.csv"})]),
                    ToolResultMessage(Call(call_id, "read_file", {"path": "orders.csv"}), "1041")]
        return request_key("openai/fake", system="You help.", messages=messages,
                           tools=[ToolSpec("read_file", "Read a file.")], settings={"temperature": 0, **settings},
                           replace={folder: "<folder>"})

    first = key("call_abc", "/tmp/robotlab-eval-1/folder")
    assert key("call_xyz", "/tmp/robotlab-eval-2/folder") == first  # another run of the same case
    assert key("call_abc", "/tmp/robotlab-eval-1/folder", api_key="sk-one", extra_headers={"x": "y"}) == first
    assert key("call_abc", "/tmp/robotlab-eval-1/folder", temperature=1) != first
    assert len(first) == 64 and int(first, 16) >= 0


async def test_attachments_go_with_the_message_from_the_case_folder(tmp_path: Path, server: FakeLLMServer) -> None:
    path = write_eval(tmp_path, server, """
  - name: attached
    message: "what is in the attached file?"
    folder: shop
    attachments: [orders.csv]
    expect:
      - contains: refund
  - name: missing
    message: "and this one?"
    folder: shop
    attachments: [nope.csv]
""")
    why = reasons(await run(path))
    assert why["attached"] == []
    assert len(why["missing"]) == 1 and "nope.csv" in why["missing"][0]
    assert len(server.requests) == 1 and "1041,42.00" in json.dumps(server.requests[0]["messages"][-1])
