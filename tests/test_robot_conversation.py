"""RobotLab's conversation API (messages, clear_messages, replace_messages, update), the on_content streaming
callback and the token totals, against the loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace.config import load_config
from workspace.messages import Message, TextMessage
from workspace.robot import Robot
from workspace.run_config import RunConfig


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def robot(server: FakeLLMServer, **options: Any) -> Robot:
    config = load_config(env={}, overrides={"llm": {"provider": "auto", "max_retries": 0}})
    options.setdefault("system_prompt", "You help.")
    return Robot("r", model="openai/fake", api_base=server.base_url + "/v1", config=config, **options)


def roles_and_texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], str(m.get("content"))) for m in body["messages"]]


async def ask(r: Robot, text: str, **options: Any) -> Any:
    return await asyncio.wait_for(r.arun(text, **options), 60)  # bounds a hang only


async def test_messages_checkpoint_and_restore(server: FakeLLMServer) -> None:
    r = robot(server)
    server.enqueue(Reply.say("Paris."), Reply.say("Berlin."), Reply.say("Rome."))
    await ask(r, "Capital of France?")
    saved = r.messages
    assert [(m.role, m.content) for m in saved] == [("user", "Capital of France?"), ("assistant", "Paris.")]
    await ask(r, "And Germany?")
    assert len(r.messages) == 4 and len(saved) == 2  # a copy, not the live list
    assert r.replace_messages(saved) is r
    await ask(r, "And Italy?")
    assert roles_and_texts(server.requests[-1]) == [
        ("system", "You help."), ("user", "Capital of France?"), ("assistant", "Paris."), ("user", "And Italy?")]
    # Dicts are taken too; a bad message leaves the conversation as it was and says which one.
    before = r.messages
    with pytest.raises(TypeError, match="message 1 is a int"):
        r.replace_messages([{"type": "text", "role": "user", "content": "hi"}, 3])
    with pytest.raises(ValueError, match="message 0: Invalid role: robot"):
        r.replace_messages([{"type": "text", "role": "robot", "content": "hi"}])
    with pytest.raises(ValueError, match=r"update\(system_prompt=...\)"):
        r.replace_messages([TextMessage(role="system", content="be terse")])
    with pytest.raises(TypeError, match="a list of messages"):
        r.replace_messages("hello")  # type: ignore[arg-type]
    assert r.messages == before
    r.replace_messages([{"type": "text", "role": "user", "content": "hi"},
                        Message.from_dict({"type": "text", "role": "assistant", "content": "hello"})])
    assert [m.content for m in r.messages] == ["hi", "hello"]


async def test_clear_messages_keeps_or_drops_the_system_prompt(server: FakeLLMServer) -> None:
    r = robot(server)
    server.enqueue(Reply.say("one"), Reply.say("two"), Reply.say("three"))
    await ask(r, "first")
    assert r.clear_messages() is r and r.messages == []
    await ask(r, "second")
    assert roles_and_texts(server.requests[-1]) == [("system", "You help."), ("user", "second")]
    r.clear_messages(keep_system=False)
    await ask(r, "third")
    assert roles_and_texts(server.requests[-1]) == [("user", "third")]


async def test_update_changes_the_robot_between_runs(server: FakeLLMServer) -> None:
    r = robot(server, context={"who": "nobody"})
    server.enqueue(Reply.say("a"), Reply.say("b"))
    await ask(r, "hi")
    assert r.update(system_prompt="You are terse.", model="openai/fake2", temperature=0.1, max_tokens=20) is r
    await ask(r, "again")
    body = server.requests[-1]
    assert body["model"] == "fake2" and body["temperature"] == 0.1 and body["max_tokens"] == 20
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert len(r.messages) == 4  # the conversation stays
    r.update(temperature=None)
    assert "temperature" not in r.settings
    with pytest.raises(Exception, match="temprature"):
        r.update(temprature=0.3)
    with pytest.raises(Exception, match="model must be a model id"):
        r.update(model="")


async def test_on_content_stored_then_per_run(server: FakeLLMServer) -> None:
    seen: list[tuple[str, str]] = []
    r = robot(server, on_content=lambda text: seen.append(("stored", text)))
    server.enqueue(Reply.say("Hello there, friend."), Reply.say("Bye now."))
    result = await ask(r, "hi", on_content=lambda text: seen.append(("run", text)))
    stored = [t for who, t in seen if who == "stored"]
    assert "".join(stored) == result.last_text_content == "Hello there, friend."
    assert len(stored) > 1  # each piece as it arrives, not the answer once
    # Both fire for every piece, the stored one first.
    assert seen == [(who, t) for t in stored for who in ("stored", "run")]
    # A run's config carries one too; without a per-run one only the stored one fires.
    seen.clear()
    await ask(r, "bye")
    assert {who for who, _ in seen} == {"stored"} and "".join(t for _, t in seen) == "Bye now."
    own: list[str] = []
    server.enqueue(Reply.say("Via config."))
    await ask(r, "x", config=RunConfig(on_content=own.append))
    assert "".join(own) == "Via config."


async def test_token_totals(server: FakeLLMServer) -> None:
    r = robot(server)
    server.enqueue(Reply.say("one", usage=(11, 4)), Reply.say("two", usage=(30, 6)))
    first = await ask(r, "a")
    assert (first.input_tokens, first.output_tokens) == (11, 4)
    await ask(r, "b")
    assert (r.total_input_tokens, r.total_output_tokens) == (41, 10)
    assert r.reset_token_totals() is r and (r.total_input_tokens, r.total_output_tokens) == (0, 0)
    server.enqueue(Reply.say("no usage", usage=False))
    quiet = await ask(r, "c")  # a server that reports no usage: what the run counted, or nothing
    assert (r.total_input_tokens, r.total_output_tokens) == (quiet.input_tokens or 0, quiet.output_tokens or 0)


async def test_a_robot_files_model_stays_when_its_prompt_goes(server: FakeLLMServer, tmp_path: Any) -> None:
    (tmp_path / "filed.md").write_text(f"---\nmodel: openai/fake3\napi_base: {server.base_url}/v1\n---\nYou file.\n",
                                       encoding="utf-8")
    (tmp_path / "other.md").write_text("---\nmodel: openai/fake4\n---\nYou are other, {{ who }}.\n", encoding="utf-8")
    r = Robot("filed", template=tmp_path / "filed.md")
    r.clear_messages(keep_system=False)
    assert r.model == "openai/fake3"
    server.enqueue(Reply.say("ok"), Reply.say("ok"))
    await ask(r, "hi")
    assert server.requests[-1]["model"] == "fake3" and server.requests[-1]["messages"][0]["role"] == "user"
    r2 = Robot("filed", template=tmp_path / "filed.md")
    r2.update(template=tmp_path / "other.md", context={"who": "Ann"})
    assert r2.model == "openai/fake4" and r2.render_system() == "You are other, Ann."
