"""The model request as sent: recorded once per call (what changed since the last), stored, whole again in the
trace, never with a key or a secret; against the loopback OpenAI-compatible server, whose received bodies are
the truth."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer, Reply

from ui.inspector.trace_tree import build_tree
from workspace import events as ev
from workspace.config import load_config
from workspace.context.requests import MAX_STRING_CHARS, resolve
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.robot import Robot
from workspace.secrets import forget_secrets, register_secret
from workspace.session import Workspace
from workspace.tools import tool

KEY = "sk-live-0123456789abcdefSECRET"
PASSWORD = "hunter2-very-private-value"


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"Result for {query}"


def scripted(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.say("Found: " + str(last["content"])[:40])
    return Reply.tool("lookup", {"query": str(last.get("content"))[:30]})


def as_sent(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k in ("model", "messages", "tools", "temperature")}


async def test_each_call_records_its_request_as_sent_without_copying_the_history(tmp_path: Path,
                                                                                 robotlab_home: Path) -> None:
    register_secret(PASSWORD, name="DB_PASSWORD")
    try:
        with FakeLLMServer(reply_fn=scripted) as server:
            provider = OpenAICompatibleProvider("fake", api_base=server.base_url + "/v1", api_key=KEY)
            robot = Robot("helper", system_prompt="You look things up.", provider=provider, tools=[lookup],
                          temperature=0.25)
            workspace = Workspace(config=load_config(), db_path=tmp_path / "t.db", provider=provider)
            session = workspace.new_thread("helper", robot=robot)
            for i in range(4):
                text = f"Question {i}: the password is {PASSWORD}" if i == 2 else f"Question {i} " + "x" * 200
                assert isinstance(await session.send(text).wait(), ev.RunFinished)
            stored = [e for _turn, e in workspace.store.thread_events(session.thread_id)]
            rows = [e for e in stored if isinstance(e, ev.ModelRequest)]
            received = list(server.requests)
            workspace.close()
    finally:
        forget_secrets([PASSWORD])

    assert len(rows) == len(received) == 8  # two calls a turn: the question, then the tool's result
    whole = resolve(stored)
    for row, body in zip(rows, received, strict=True):
        got = whole[row.request_id]
        assert got["messages"] == json.loads(json.dumps(body["messages"]).replace(PASSWORD, "<DB_PASSWORD>"))
        assert got["tools"] == body["tools"] and got["model"] == body["model"] == "fake"
        assert got["temperature"] == 0.25
    # Only what changed is kept: the later requests name the one before and hold their new messages alone.
    assert rows[0].reused_from is None and len(rows[0].messages) == 2  # system + question
    assert all(r.reused_from == p.request_id for p, r in itertools.pairwise(rows))
    # Each call adds two messages (the call and its result; the answer and the next question), except after
    # the turn with the password: the thread keeps it masked, so the next request differs from there on.
    assert [len(r.messages) for r in rows[1:]] == [2, 2, 2, 2, 2, 5, 2]
    assert PASSWORD in json.dumps(received[4]["messages"]) and PASSWORD not in json.dumps(received[6]["messages"])
    assert "tools" in rows[0].body and all("tools" in r.reused_keys for r in rows[1:])
    text = "\n".join(ev.to_json(e) for e in stored)
    assert KEY not in text and PASSWORD not in text and "<DB_PASSWORD>" in text
    assert "Authorization" not in text and "api_key" not in text
    recorded = sum(len(ev.to_json(r)) for r in rows)
    copied = sum(len(json.dumps(as_sent(b))) for b in received)
    assert recorded < copied  # (bench/bench_model_requests.py measures it on 200 turns)

    tree = build_tree(stored)
    calls = [n for n in tree.walk() if n.kind == "model_call"]
    assert len(calls) == 8
    for call, body in zip(calls, received, strict=True):
        assert call.request is not None and len(call.request["messages"]) == len(body["messages"])
        assert call.children[0].kind == "request" and call.children[0].label.startswith("Request → fake (")
    assert calls[1].data["response"]["text"].startswith("Found: Result for Question 0")
    assert calls[0].data["response"]["tool_calls"][0]["name"] == "lookup"
    exported = tree.to_json()
    assert KEY not in exported and PASSWORD not in exported and '"reused_from"' in exported
    assert tree.matching("question 3")  # a request's new messages are searched


def test_image_data_and_long_strings_are_not_recorded_and_a_trimmed_trace_says_what_is_missing() -> None:
    from workspace.context.requests import RequestRecorder

    class Payload:
        model_id = "m"

        def build_request(self, **_: Any) -> dict[str, Any]:
            return {"model": "m", "api_key": KEY, "extra_headers": {"Authorization": f"Bearer {KEY}"},
                    "messages": [{"role": "user", "content": [
                        {"type": "text", "text": "y" * (MAX_STRING_CHARS + 5)},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}}]}]}

    recorder = RequestRecorder()
    first = recorder.record(Payload(), system=None, messages=[], tools=(), settings={})  # type: ignore[arg-type]
    second = recorder.record(Payload(), system=None, messages=[], tools=(), settings={})  # type: ignore[arg-type]
    text = ev.to_json(first)
    assert KEY not in text and "extra_headers" not in text and "A" * 100 not in text
    assert "5,022 characters of data, not recorded" in text and "5 more characters, not recorded" in text
    assert second.messages == [] and second.reused_messages == 1 and second.reused_from == first.request_id
    alone = resolve([second])[second.request_id]
    assert alone["missing_messages"] == 1 and alone["messages"] == []
