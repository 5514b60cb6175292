"""``review.memory: ask`` reviews a run's writes to a shared memory that outlives it (the robot's own memory, a
network's kept across its runs), key by key, old value → new value: accepted they are kept (as edited), rejected
they are not, and the robot's next run sees only what was accepted. A scratch memory (one that lives only inside a
run) is never reviewed, nor is anything with ``review.memory: auto``."""

from __future__ import annotations

from typing import Any

from workspace import Memory, Network, PendingMemoryWrite, Robot, ScriptedProvider, tool
from workspace.config import load_config
from workspace.messages import ToolResultMessage
from workspace.providers.testing import ToolCall
from workspace.tools.base import ToolContext


def keeper(provider: ScriptedProvider, **kw: Any) -> Robot:
    return Robot("keeper", system_prompt="You keep notes.", provider=provider, tools=["remember", "recall"],
                 knowledge_store=False, **kw)


def told(provider: ScriptedProvider, call: int) -> list[Any]:
    return [m.content for m in provider.history[call].messages if isinstance(m, ToolResultMessage)]


async def test_writes_that_outlive_the_run_wait_for_review_key_by_key() -> None:
    provider = ScriptedProvider()
    robot = keeper(provider, review_memory="ask")
    robot.memory.set("plan", "draft")
    provider.enqueue([ToolCall("remember", {"key": "plan", "value": "ship friday"}, id="a"),
                      ToolCall("remember", {"key": "owner", "value": {"name": "ana"}}, id="b")],
                     [ToolCall("recall", {"key": "plan"}, id="c")], "Noted.")
    result = await robot.arun("note the plan")
    assert "the person reviews it" in told(provider, 1)[0]["data"]["review"]
    # Inside the run the robot read back what it wrote ...
    assert told(provider, 2)[-1] == {"data": {"key": "plan", "found": True, "value": "ship friday"}}
    assert result.last_text_content == "Noted."
    # ... and once it ended, nothing of it is kept until reviewed.
    assert robot.memory.get("plan") == "draft" and not robot.memory.has("owner")
    plan, owner = robot.pending_memory_writes
    assert (plan.kind, plan.robot, plan.key, plan.text, plan.describe_change()) == (
        "memory", "keeper", "plan", "ship friday", "draft → ship friday")
    assert (owner.key, owner.text, owner.describe_change()) == ("owner", '{"name": "ana"}', 'unset → {"name": "ana"}')
    assert plan.to_dict()["previous"] == "draft" and plan.to_dict()["value"] == "ship friday"

    plan.accept('["ship", "monday"]')  # edited: JSON is read as JSON
    owner.reject("ask ana first")
    assert robot.memory.get("plan") == ["ship", "monday"] and not robot.memory.has("owner")
    assert robot.pending_memory_writes == []

    # The next run sees only the accepted value, and is told what was decided.
    provider.enqueue([ToolCall("recall", {"key": "owner"}, id="d"), ToolCall("recall", {"key": "plan"}, id="e")],
                     "ok")
    await robot.arun("what do we know?")
    assert told(provider, 4)[-2:] == [{"data": {"key": "owner", "found": False, "value": None}},
                                      {"data": {"key": "plan", "found": True, "value": ["ship", "monday"]}}]
    system = provider.history[3].system or ""
    assert "Kept memory 'plan': draft → [\"ship\", \"monday\"]" in system
    assert "Not kept memory 'owner'" in system and "ask ana first" in system


async def test_the_callback_reviews_at_the_runs_end_and_a_deletion_is_a_write() -> None:
    provider = ScriptedProvider()
    seen: list[PendingMemoryWrite] = []

    def review(pending: PendingMemoryWrite) -> None:
        seen.append(pending)
        assert robot.memory.get("plan") == "draft"  # put back before it is proposed
        pending.accept()

    robot = keeper(provider, review_memory="ask", on_memory_write=review)
    robot.memory.set("plan", "draft")
    provider.enqueue([ToolCall("remember", {"key": "plan", "value": "final"}, id="a")], "done")
    await robot.arun("finish it")
    assert [p.describe_change() for p in seen] == ["draft → final"] and robot.memory.get("plan") == "final"

    seen.clear()
    robot.memory.set("scrap", 1)
    model = ScriptedProvider()
    model.enqueue([ToolCall("forget", {"key": "scrap"}, id="f")], "ok")
    deleting = Robot("deleter", system_prompt="x", provider=model, memory=robot.memory, local_tools=[forget],
                     knowledge_store=False, review_memory="ask", on_memory_write=lambda p: seen.append(p))
    await deleting.arun("tidy")
    [gone] = seen
    assert gone.robot == "deleter" and gone.deleted and gone.describe_change() == "1 → deleted"
    assert robot.memory.get("scrap") == 1
    gone.accept()
    assert not robot.memory.has("scrap")


@tool
def forget(key: str, context: ToolContext | None = None) -> str:
    """Delete a key of the memory.

    Args:
        key: the key
    """
    assert context is not None and context.memory is not None
    context.memory.delete(key)
    return "gone"


async def test_scratch_memory_and_auto_review_apply_at_once() -> None:
    provider = ScriptedProvider()
    robot = keeper(provider, review_memory="ask")
    scratch = Memory()
    scratch.scratch = True
    provider.enqueue([ToolCall("remember", {"key": "tmp", "value": 1}, id="a")], "ok")
    await robot.arun("use scratch", memory=scratch)
    assert scratch.get("tmp") == 1 and robot.pending_memory_writes == []

    auto = keeper(ScriptedProvider(), config=load_config(env={}, overrides={"review": {"memory": "auto"}}))
    auto.provider.enqueue([ToolCall("remember", {"key": "k", "value": "v"}, id="a")], "ok")  # type: ignore[attr-defined]
    await auto.arun("remember")
    assert auto.memory.get("k") == "v" and auto.pending_memory_writes == []
    asked = keeper(ScriptedProvider(), config=load_config(env={}, overrides={"review": {"memory": "ask"}}))
    asked.provider.enqueue([ToolCall("remember", {"key": "k", "value": "v"}, id="a")], "ok")  # type: ignore[attr-defined]
    await asked.arun("remember")
    assert not asked.memory.has("k") and [p.key for p in asked.pending_memory_writes] == ["k"]


async def test_a_networks_memory_kept_across_runs_is_reviewed_by_its_writer() -> None:
    writer_model = ScriptedProvider()
    writer = Robot("writer", system_prompt="You write.", provider=writer_model, tools=["remember"],
                   knowledge_store=False, review_memory="ask")
    reader_model = ScriptedProvider(default="read")
    reader = Robot("reader", system_prompt="You read.", provider=reader_model, tools=["recall"],
                   knowledge_store=False)
    network = Network("team")
    network.task("write", writer)
    network.task("read", reader, depends_on=["write"], wait_for=["summary"])
    writer_model.enqueue([ToolCall("remember", {"key": "summary", "value": "all good"}, id="a")], "written")
    result = await network.arun("go")
    assert result.status == "done", result.error
    # The task waiting for the key woke inside the run; after it the key waits for review.
    assert not network.memory.has("summary")
    [pending] = writer.pending_memory_writes
    assert (pending.robot, pending.key, pending.text) == ("writer", "summary", "all good")
    pending.accept()
    assert network.memory.get("summary") == "all good"
    # A network built afresh for each run (as a window's thread does) has scratch memory: nothing is reviewed.
    fresh = Network("fresh")
    fresh.memory.scratch = True
    fresh.task("write", writer)
    writer_model.enqueue([ToolCall("remember", {"key": "summary", "value": "v2"}, id="b")], "written")
    await fresh.arun("go")
    assert fresh.memory.get("summary") == "v2" and writer.pending_memory_writes == []
