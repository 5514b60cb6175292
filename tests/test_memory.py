"""Memory, MemoryChange, Waiter and StateProxy: ports of RobotLab's memory_test.rb, waiter_test.rb
and state_proxy_test.rb (spec 1.3), plus the asyncio-specific behaviour of the port.

Skipped on purpose: RobotLab's Redis backend (``redis?``) and its semantic cache (``cache`` is the
cache module, ``enable_cache: false``): the workspace has neither; ``cache`` is always ``None``.
Ruby's Symbol/String key equivalence becomes "keys are strings" here.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from workspace.errors import AwaitTimeout, Error
from workspace.memory import (
    HISTORY_LIMIT,
    TIMEOUT,
    Memory,
    MemoryChange,
    StateProxy,
    Waiter,
)
from workspace.messages import Message, TextMessage
from workspace.result import RobotResult


def result(name: str, text: str = "hi") -> RobotResult:
    return RobotResult(name, [TextMessage("assistant", f"Response from {name}: {text}")])


class Recorder:
    """A thread-safe list of the changes a callback received."""

    def __init__(self) -> None:
        self.changes: list[MemoryChange] = []
        self.threads: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, change: MemoryChange) -> None:
        with self._lock:
            self.changes.append(change)
            self.threads.append(threading.get_ident())

    @property
    def keys(self) -> list[str]:
        return [c.key for c in self.changes]


# --------------------------------------------------------------------------------------------
# memory_test.rb: plain key-value behaviour


class TestBasics:
    def test_set_and_get_via_brackets(self) -> None:
        memory = Memory()
        memory["user_id"] = 123
        assert memory["user_id"] == 123
        assert memory.get("user_id") == 123

    def test_missing_is_none(self) -> None:
        assert Memory()["missing"] is None
        assert Memory().get("missing") is None

    def test_non_string_keys_become_strings(self) -> None:
        memory = Memory()
        memory[42] = "x"
        assert memory["42"] == "x"
        assert memory.keys() == ["42"]

    def test_has_and_contains(self) -> None:
        memory = Memory()
        memory.set("k", None)
        assert memory.has("k")
        assert "k" in memory
        assert "other" not in memory

    def test_reserved_keys_always_exist(self) -> None:
        memory = Memory()
        for key in ("data", "results", "messages", "session_id", "cache"):
            assert memory.has(key)
            assert key in memory

    def test_data_is_state_proxy(self) -> None:
        memory = Memory()
        assert isinstance(memory.data, StateProxy)
        assert memory["data"] is memory.data
        memory.data["category"] = "billing"
        assert memory.data.category == "billing"
        memory.data.priority = "high"
        assert memory.data["priority"] == "high"

    def test_results_and_messages_empty_by_default(self) -> None:
        memory = Memory()
        assert memory.results == []
        assert memory.messages == []
        assert memory["results"] == []

    def test_results_and_messages_are_copies(self) -> None:
        memory = Memory()
        memory.results.append(result("x"))
        memory.messages.append(TextMessage("user", "x"))
        assert memory.results == [] and memory.messages == []

    def test_session_id(self) -> None:
        memory = Memory()
        assert memory.session_id is None
        memory.session_id = "thread-123"
        assert memory.session_id == "thread-123"
        memory["session_id"] = "thread-456"
        assert memory["session_id"] == "thread-456"

    def test_cache_is_none_and_cannot_be_reassigned(self) -> None:
        memory = Memory()
        assert memory.cache is None
        assert memory["cache"] is None
        with pytest.raises(ValueError, match="Cannot reassign cache - it is initialized automatically"):
            memory["cache"] = object()
        with pytest.raises(ValueError, match="Cannot reassign cache"):
            memory.set("cache", 1)

    def test_set_returns_value(self) -> None:
        memory = Memory()
        value = {"score": 0.8}
        assert memory.set("sentiment", value) is value
        assert memory.get("sentiment") == {"score": 0.8}

    def test_get_several_keys(self) -> None:
        memory = Memory()
        memory.merge({"a": 1, "b": 2, "c": 3})
        assert memory.get("a", "b", "c") == {"a": 1, "b": 2, "c": 3}
        assert memory.get("a", "missing") == {"a": 1}

    def test_keys_and_all_keys(self) -> None:
        memory = Memory()
        memory["x"] = 1
        memory["y"] = 2
        assert memory.keys() == ["x", "y"]
        assert set(memory.all_keys()) == {"data", "results", "messages", "session_id", "cache", "x", "y"}
        assert len(memory) == 2

    def test_delete(self) -> None:
        memory = Memory()
        memory["x"] = 1
        assert memory.delete("x") == 1
        assert not memory.has("x")
        assert memory.delete("x") is None

    def test_delete_reserved(self) -> None:
        memory = Memory()
        for key in ("data", "results", "messages", "session_id", "cache"):
            with pytest.raises(ValueError, match=f"Cannot delete reserved key: {key}"):
                memory.delete(key)

    def test_merge(self) -> None:
        memory = Memory()
        assert memory.merge({"user_id": 456, "session_id": "s-1"}) is memory
        assert memory["user_id"] == 456
        assert memory.session_id == "s-1"
        assert memory.keys() == ["user_id"]  # session_id went to the reserved slot
        memory.merge(extra=True)
        assert memory["extra"] is True

    def test_clear_keeps_reserved(self) -> None:
        memory = Memory(data={"category": "billing"}, session_id="s")
        memory["custom"] = "value"
        memory.append_result(result("r"))
        assert memory.clear() is memory
        assert memory.keys() == []
        assert memory.has("data")
        assert memory.data["category"] == "billing"
        assert memory.session_id == "s"
        assert len(memory.results) == 1

    def test_reset_empties_everything(self) -> None:
        memory = Memory(data={"category": "billing"}, session_id="s", messages=[TextMessage("user", "hi")])
        memory["custom"] = "value"
        memory.append_result(result("r"))
        seen = Recorder()
        memory.subscribe("after", callback=seen)
        assert memory.reset() is memory
        assert memory.keys() == []
        assert memory.data.to_dict() == {}
        assert memory.results == []
        assert memory.messages == []
        assert memory.session_id is None
        memory["after"] = 1  # subscriptions survive a reset
        assert seen.keys == ["after"]

    def test_results_api(self) -> None:
        memory = Memory()
        assert memory.append_result(result("robot1")) is memory
        memory.append_result(result("robot2").export())  # a dict is converted
        assert [r.robot_name for r in memory.results] == ["robot1", "robot2"]
        tail = memory.results_from(1)
        assert len(tail) == 1 and tail[0].robot_name == "robot2"
        assert memory.results_from(5) == []
        assert memory.set_results([result("only")]) is memory
        assert [r.robot_name for r in memory.results] == ["only"]

    def test_init_with_values(self) -> None:
        memory = Memory(data={"category": "billing"}, session_id="thread-123",
                        messages=[{"type": "text", "role": "user", "content": "Hello"}])
        assert memory.data.category == "billing"
        assert memory.session_id == "thread-123"
        assert isinstance(memory.messages[0], TextMessage)

    def test_reserved_writes_through_brackets(self) -> None:
        memory = Memory()
        memory["data"] = {"a": 1}
        assert memory.data.a == 1
        memory["messages"] = [{"type": "text", "role": "user", "content": "x"}]
        assert isinstance(memory.messages[0], Message)
        memory["results"] = [result("r")]
        assert len(memory.results) == 1
        assert memory.keys() == []

    def test_format_history(self) -> None:
        memory = Memory(messages=[TextMessage("user", "Hello")])
        memory.append_result(result("robot1"))
        history = memory.format_history()
        assert len(history) == 2
        assert history[0].content == "Hello"
        assert history[1].content.startswith("Response from robot1")
        custom = memory.format_history(lambda r: [TextMessage("assistant", r.robot_name)])
        assert [m.content for m in custom] == ["Hello", "robot1"]

    def test_network_name_and_current_writer(self) -> None:
        assert Memory().network_name is None
        memory = Memory(network_name="support")
        assert memory.network_name == "support"
        assert memory.current_writer is None
        memory.current_writer = "classifier"
        assert memory.current_writer == "classifier"


class TestCopy:
    def test_copy_keeps_values(self) -> None:
        memory = Memory(data={"nested": {"a": [1]}}, session_id="s", network_name="net")
        memory["custom"] = {"deep": [1, 2]}
        memory.append_result(result("r"))
        clone = memory.copy()
        assert clone.network_name == "net"
        assert clone.session_id == "s"
        assert clone["custom"] == {"deep": [1, 2]}
        assert clone.data["nested"] == {"a": [1]}
        assert len(clone.results) == 1

    def test_copy_is_isolated(self) -> None:
        memory = Memory(data={"nested": {"a": [1]}})
        memory["custom"] = {"deep": [1, 2]}
        clone = memory.copy()
        clone.data["nested"]["a"].append(2)
        clone["custom"]["deep"].append(3)
        clone["new"] = 1
        clone.append_result(result("x"))
        assert memory.data["nested"] == {"a": [1]}
        assert memory["custom"] == {"deep": [1, 2]}
        assert not memory.has("new")
        assert memory.results == []

    def test_copy_drops_subscriptions_and_writer(self) -> None:
        memory = Memory()
        memory.current_writer = "w"
        seen = Recorder()
        memory.subscribe("k", callback=seen)
        clone = memory.copy()
        assert clone.current_writer is None
        assert not clone.is_subscribed("k")
        clone["k"] = 1
        assert seen.changes == []

    def test_dup_and_clone_aliases(self) -> None:
        memory = Memory()
        memory["x"] = 1
        assert memory.dup()["x"] == 1
        assert memory.clone()["x"] == 1
        assert copy.copy(memory)["x"] == 1
        assert copy.deepcopy(memory)["x"] == 1


class TestSerialization:
    def test_to_dict(self) -> None:
        memory = Memory(data={"category": "billing"}, messages=[TextMessage("user", "Hello")],
                        session_id="thread-123")
        memory.append_result(result("robot1"))
        memory["user_id"] = 456
        memory["sentiment"] = {"score": 0.8}
        d = memory.to_dict()
        assert list(d) == ["data", "results", "messages", "session_id", "custom"]
        assert d["data"] == {"category": "billing"}
        assert d["messages"] == [{"type": "text", "role": "user", "content": "Hello"}]
        assert d["results"][0]["robot_name"] == "robot1"
        assert "checksum" in d["results"][0]
        assert d["custom"] == {"user_id": 456, "sentiment": {"score": 0.8}}

    def test_to_dict_drops_nil_session(self) -> None:
        memory = Memory()
        memory["custom"] = "value"
        d = memory.to_dict()
        assert "session_id" not in d
        assert d["custom"] == {"custom": "value"}

    def test_to_json(self) -> None:
        memory = Memory()
        memory["key"] = "value"
        memory["when"] = datetime(2024, 1, 15, 10, 30, tzinfo=UTC)  # not JSON: becomes a string
        parsed = json.loads(memory.to_json())
        assert parsed["custom"]["key"] == "value"
        assert parsed["custom"]["when"] == "2024-01-15T10:30:00Z"

    def test_from_dict_round_trip(self) -> None:
        memory = Memory(data={"category": "billing"}, messages=[TextMessage("user", "Hello")],
                        session_id="thread-123")
        r = result("robot1")
        memory.append_result(r)
        memory["user_id"] = 456
        again = Memory.from_dict(json.loads(memory.to_json()))
        assert again.data.to_dict() == {"category": "billing"}
        assert again.session_id == "thread-123"
        assert again["user_id"] == 456
        assert again.messages == [TextMessage("user", "Hello")]
        assert again.results == [r]
        assert again.to_dict() == memory.to_dict()


class TestThreadSafety:
    def test_concurrent_writes_from_ten_threads(self) -> None:
        memory = Memory()
        observed = Recorder()
        subscribed = Recorder()
        memory.add_observer(observed)
        memory.subscribe_pattern("t*", callback=subscribed)  # no loop: called in the writer threads
        barrier = threading.Barrier(10)

        def writer(n: int) -> None:
            barrier.wait()
            for i in range(100):
                memory.set(f"t{n}_{i}", i)
                memory.set("shared", (n, i))

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(memory.keys()) == 1001
        assert all(memory[f"t{n}_{i}"] == i for n in range(10) for i in range(100))
        assert len(observed.changes) == 2000
        assert len(subscribed.changes) == 1000
        assert len(memory.history("shared")) == HISTORY_LIMIT


# --------------------------------------------------------------------------------------------
# memory_test.rb: waiting (get with wait:) -> wait_for


class TestWaitFor:
    async def test_returns_at_once_when_present(self) -> None:
        memory = Memory()
        memory["ready"] = "yes"
        assert await memory.wait_for("ready", timeout=0.1) == "yes"

    async def test_waits_for_writer_task(self) -> None:
        memory = Memory()

        async def writer() -> None:
            await asyncio.sleep(0.02)
            memory.set("result", 42)

        task = asyncio.create_task(writer())
        assert await memory.wait_for("result", timeout=2) == 42
        await task

    async def test_waits_for_writer_thread(self) -> None:
        memory = Memory()

        def writer() -> None:
            time.sleep(0.05)
            memory.set("result", "from thread")

        thread = threading.Thread(target=writer)
        thread.start()
        assert await memory.wait_for("result", timeout=2) == "from thread"
        thread.join()

    async def test_timeout(self) -> None:
        memory = Memory()
        with pytest.raises(AwaitTimeout) as exc:
            await memory.wait_for("missing", timeout=0.1)
        assert str(exc.value) == "Timeout waiting for missing after 0.1 seconds"
        assert isinstance(exc.value, Error)

    async def test_none_counts_as_missing_for_one_key(self) -> None:
        memory = Memory()
        memory["k"] = None
        with pytest.raises(AwaitTimeout):
            await memory.wait_for("k", timeout=0.05)

        async def writer() -> None:
            await asyncio.sleep(0.01)
            memory["k"] = None  # still nothing: keep waiting
            await asyncio.sleep(0.01)
            memory["k"] = "value"

        task = asyncio.create_task(writer())
        assert await memory.wait_for("k", timeout=2) == "value"
        await task

    async def test_several_keys(self) -> None:
        memory = Memory()
        memory["a"] = 1

        async def writer() -> None:
            await asyncio.sleep(0.01)
            memory["b"] = None  # present, even though None
            await asyncio.sleep(0.01)
            memory["c"] = 3

        task = asyncio.create_task(writer())
        assert await memory.wait_for("a", "b", "c", timeout=2) == {"a": 1, "b": None, "c": 3}
        await task

    async def test_several_keys_timeout_names_missing_key(self) -> None:
        memory = Memory()
        memory["a"] = 1
        with pytest.raises(AwaitTimeout, match=r"^Timeout waiting for b after 0\.05 seconds$"):
            await memory.wait_for("a", "b", timeout=0.05)

    async def test_many_waiters_one_write(self) -> None:
        memory = Memory()
        waits = [asyncio.create_task(memory.wait_for("go", timeout=2)) for _ in range(3)]
        await asyncio.sleep(0)
        memory["go"] = "now"
        assert await asyncio.gather(*waits) == ["now", "now", "now"]

    async def test_cancelled_wait_leaves_memory_usable(self) -> None:
        memory = Memory()
        task = asyncio.create_task(memory.wait_for("k"))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        memory["k"] = 1
        assert await memory.wait_for("k", timeout=0.1) == 1

    async def test_reserved_key_returns_at_once(self) -> None:
        memory = Memory(data={"a": 1})
        assert (await memory.wait_for("data", timeout=0.1)).to_dict() == {"a": 1}

    async def test_needs_a_key(self) -> None:
        with pytest.raises(ValueError):
            await Memory().wait_for()


# --------------------------------------------------------------------------------------------
# memory_test.rb: subscriptions


class TestSubscriptions:
    def test_subscribe_returns_string_id(self) -> None:
        sub_id = Memory().subscribe("k", callback=lambda c: None)
        assert isinstance(sub_id, str)
        uuid.UUID(sub_id)

    def test_callback_required(self) -> None:
        with pytest.raises(ValueError, match="Callback required for subscribe"):
            Memory().subscribe("k")
        with pytest.raises(ValueError, match="Callback required for subscribe_pattern"):
            Memory().subscribe_pattern("k*")

    async def test_callback_receives_change(self) -> None:
        memory = Memory(network_name="net")
        memory.current_writer = "sentiment_analyzer"
        seen = Recorder()
        memory.subscribe("sentiment", callback=seen)
        memory.set("sentiment", {"score": 0.8})
        assert seen.changes == []  # asynchronous: not inside the writer's call
        await memory.flush()
        change = seen.changes[0]
        assert change.key == "sentiment"
        assert change.value == {"score": 0.8}
        assert change.previous is None
        assert change.writer == "sentiment_analyzer"
        assert change.network_name == "net"
        assert change.is_created

    async def test_previous_value_on_update(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory["k"] = "old"
        memory.subscribe("k", callback=seen)
        memory["k"] = "new"
        await memory.flush()
        assert seen.changes[0].previous == "old"
        assert seen.changes[0].value == "new"
        assert seen.changes[0].is_updated

    async def test_notifies_even_when_unchanged(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.subscribe("k", callback=seen)
        memory["k"] = 1
        memory["k"] = 1
        await memory.flush()
        assert len(seen.changes) == 2

    async def test_multi_key_subscription(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.subscribe("a", "b", callback=seen)
        memory["a"] = 1
        memory["b"] = 2
        memory["c"] = 3
        await memory.flush()
        assert seen.keys == ["a", "b"]

    async def test_unsubscribe(self) -> None:
        memory = Memory()
        seen = Recorder()
        sub_id = memory.subscribe("k", callback=seen)
        memory["k"] = 1
        await memory.flush()
        assert memory.unsubscribe(sub_id) is True
        memory["k"] = 2
        await memory.flush()
        assert [c.value for c in seen.changes] == [1]
        assert memory.unsubscribe(sub_id) is False
        assert memory.unsubscribe("nonexistent") is False

    def test_unsubscribe_pattern(self) -> None:
        memory = Memory()
        sub_id = memory.subscribe_pattern("a*", callback=lambda c: None)
        assert memory.is_subscribed("abc")
        assert memory.unsubscribe(sub_id) is True
        assert not memory.is_subscribed("abc")

    def test_unsubscribe_keys(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.subscribe("k", callback=seen)
        memory.subscribe("k", "other", callback=seen)
        memory.subscribe_pattern("k*", callback=seen)
        assert memory.unsubscribe_keys("k") is memory
        memory["k"] = 1  # no loop: would run at once
        assert seen.keys == ["k"]  # only the pattern subscription is left
        memory["other"] = 2
        assert seen.keys == ["k", "other"]

    def test_is_subscribed(self) -> None:
        memory = Memory()
        assert not memory.is_subscribed("k")
        memory.subscribe("k", callback=lambda c: None)
        assert memory.is_subscribed("k")
        assert not memory.is_subscribed("other")

    def test_pattern_namespace(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.subscribe_pattern("analysis:*", callback=seen)
        memory["analysis:sentiment"] = 1
        memory["analysis:entities"] = 2
        memory["other:thing"] = 3
        memory["analysis"] = 4
        assert seen.keys == ["analysis:sentiment", "analysis:entities"]

    def test_pattern_question_mark_is_one_char(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.subscribe_pattern("step?", callback=seen)
        for key in ("step1", "step2", "step10", "step"):
            memory[key] = 1
        assert seen.keys == ["step1", "step2"]

    def test_pattern_regex_characters_are_literal(self) -> None:
        memory = Memory()
        plus = Recorder()
        brackets = Recorder()
        memory.subscribe_pattern("a+b.*", callback=plus)
        memory.subscribe_pattern("x[1]?", callback=brackets)
        for key in ("a+b.c", "a+b.", "aab.c", "ab.c", "a+bxc", "x[1]z", "x1z", "x[1]", "x[1]zz"):
            memory[key] = 1
        assert plus.keys == ["a+b.c", "a+b."]
        assert brackets.keys == ["x[1]z"]

    def test_pattern_is_anchored(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.subscribe_pattern("mid*", callback=seen)
        memory["amid"] = 1
        memory["mid\nline"] = 2
        assert seen.keys == ["mid\nline"]

    async def test_bracket_write_is_reactive(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.subscribe("k", callback=seen)
        memory["k"] = "v"
        await memory.flush()
        assert seen.keys == ["k"]

    async def test_reserved_writes_and_delete_do_not_notify(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.subscribe("session_id", "data", "k", callback=seen)
        memory["k"] = 1
        await memory.flush()
        memory["session_id"] = "s"
        memory["data"] = {"a": 1}
        memory.delete("k")
        await memory.flush()
        assert seen.keys == ["k"]

    async def test_raising_subscriber_does_not_break_writer(self, caplog: pytest.LogCaptureFixture) -> None:
        memory = Memory()
        seen = Recorder()

        def boom(change: MemoryChange) -> None:
            raise RuntimeError("subscriber exploded")

        memory.subscribe("k", callback=boom)
        memory.subscribe("k", callback=seen)
        with caplog.at_level(logging.ERROR, logger="workspace.memory"):
            assert memory.set("k", 1) == 1
            await memory.flush()
        assert memory["k"] == 1
        assert seen.keys == ["k"]
        assert "Memory subscription callback error: subscriber exploded" in caplog.text

    def test_raising_subscriber_without_loop(self, caplog: pytest.LogCaptureFixture) -> None:
        memory = Memory()

        def boom(change: MemoryChange) -> None:
            raise RuntimeError("no loop boom")

        memory.subscribe("k", callback=boom)
        with caplog.at_level(logging.ERROR, logger="workspace.memory"):
            memory["k"] = 1
        assert memory["k"] == 1
        assert "Memory subscription callback error: no loop boom" in caplog.text

    async def test_async_callback(self) -> None:
        memory = Memory()
        got: list[Any] = []

        async def on_change(change: MemoryChange) -> None:
            await asyncio.sleep(0)
            got.append(change.value)

        memory.subscribe("k", callback=on_change)
        memory["k"] = "async"
        await memory.flush()
        assert got == ["async"]

    async def test_raising_async_callback(self, caplog: pytest.LogCaptureFixture) -> None:
        memory = Memory()

        async def boom(change: MemoryChange) -> None:
            raise ValueError("async boom")

        memory.subscribe("k", callback=boom)
        with caplog.at_level(logging.ERROR, logger="workspace.memory"):
            memory["k"] = 1
            await memory.flush()
        assert "Memory subscription callback error: async boom" in caplog.text

    async def test_callback_can_write_memory(self) -> None:
        memory = Memory()
        memory.subscribe("raw", callback=lambda c: memory.set("enriched", c.value * 2))
        memory["raw"] = 21
        assert await memory.wait_for("enriched", timeout=1) == 42

    async def test_thread_writer_callbacks_run_on_subscriber_loop(self) -> None:
        memory = Memory()
        seen = Recorder()
        got_async: list[int] = []

        async def on_async(change: MemoryChange) -> None:
            got_async.append(threading.get_ident())

        memory.subscribe("k", callback=seen)
        memory.subscribe("k", callback=on_async)
        await asyncio.to_thread(memory.set, "k", "from thread")
        for _ in range(5):
            await memory.flush()
        assert seen.keys == ["k"]
        assert seen.threads == [threading.get_ident()]
        assert got_async == [threading.get_ident()]

    def test_async_callback_without_any_loop(self) -> None:
        memory = Memory()
        done = threading.Event()

        async def on_change(change: MemoryChange) -> None:
            done.set()

        memory.subscribe("k", callback=on_change)
        memory["k"] = 1
        assert done.wait(2)


# --------------------------------------------------------------------------------------------
# observers and history (the agent loop's hook and the inspector's record)


class TestObserversAndHistory:
    def test_observer_is_synchronous(self) -> None:
        memory = Memory()
        seen = Recorder()
        remove = memory.add_observer(seen)
        memory.current_writer = "bot"
        memory["k"] = 1
        assert seen.keys == ["k"]
        assert seen.changes[0].writer == "bot"
        remove()
        memory["k"] = 2
        assert seen.keys == ["k"]
        remove()  # twice is harmless

    async def test_observer_sync_inside_loop(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory.add_observer(seen)
        memory["k"] = 1
        assert seen.keys == ["k"]

    def test_raising_observer_is_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        memory = Memory()

        def boom(change: MemoryChange) -> None:
            raise RuntimeError("observer boom")

        memory.add_observer(boom)
        with caplog.at_level(logging.ERROR, logger="workspace.memory"):
            assert memory.set("k", 1) == 1
        assert "observer boom" in caplog.text

    def test_observer_sees_deletions(self) -> None:
        memory = Memory()
        seen = Recorder()
        memory["a"] = 1
        memory["b"] = 2
        memory.add_observer(seen)
        memory.delete("a")
        memory.clear()
        assert seen.keys == ["a", "b"]
        assert all(c.is_deleted for c in seen.changes)

    def test_writer_override(self) -> None:
        memory = Memory()
        memory.current_writer = "default"
        memory.set("k", 1, writer="explicit")
        memory.set("k", 2)
        assert [c.writer for c in memory.history("k")] == ["explicit", "default"]

    def test_history_is_bounded(self) -> None:
        memory = Memory()
        for i in range(HISTORY_LIMIT + 20):
            memory["k"] = i
        history = memory.history("k")
        assert len(history) == HISTORY_LIMIT
        assert history[0].value == 20
        assert history[-1].value == HISTORY_LIMIT + 19
        assert history[-1].previous == HISTORY_LIMIT + 18
        assert memory.history("never") == []


# --------------------------------------------------------------------------------------------
# MemoryChange


class TestMemoryChange:
    def test_truth_table(self) -> None:
        created = MemoryChange(key="k", value=1)
        updated = MemoryChange(key="k", value=2, previous=1)
        deleted = MemoryChange(key="k", value=None, previous=1)
        nothing = MemoryChange(key="k", value=None)
        assert (created.is_created, created.is_updated, created.is_deleted) == (True, False, False)
        assert (updated.is_created, updated.is_updated, updated.is_deleted) == (False, True, False)
        assert (deleted.is_created, deleted.is_updated, deleted.is_deleted) == (False, False, True)
        assert (nothing.is_created, nothing.is_updated, nothing.is_deleted) == (False, False, False)

    def test_defaults(self) -> None:
        change = MemoryChange("k", 1)
        assert change.timestamp.tzinfo is not None
        assert change.writer is None and change.network_name is None and change.correlation_id is None
        assert MemoryChange("k", 1, timestamp=None).timestamp is not None  # type: ignore[arg-type]

    def test_to_dict(self) -> None:
        change = MemoryChange(key="sentiment", value={"score": 0.8}, writer="sentiment_analyzer",
                              network_name="parallel_analysis",
                              timestamp=datetime(2026, 1, 16, 16, 30, tzinfo=UTC))
        d = change.to_dict()
        assert d == {"key": "sentiment", "value": {"score": 0.8}, "writer": "sentiment_analyzer",
                     "network_name": "parallel_analysis", "timestamp": "2026-01-16T16:30:00Z"}
        assert list(d) == ["key", "value", "writer", "network_name", "timestamp"]

    def test_json_round_trip(self) -> None:
        change = MemoryChange(key="k", value=[1, "two"], previous={"a": None}, writer="w", network_name="n",
                              timestamp=datetime(2026, 1, 16, 10, 30, tzinfo=UTC), correlation_id="c-1")
        assert MemoryChange.from_dict(json.loads(change.to_json())) == change

    def test_frozen(self) -> None:
        change = MemoryChange("k", 1)
        with pytest.raises(AttributeError):
            change.value = 2  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# waiter_test.rb


class TestWaiter:
    def test_wait_blocks_until_signal(self) -> None:
        waiter = Waiter()
        got: list[Any] = []
        thread = threading.Thread(target=lambda: got.append(waiter.wait(timeout=2)))
        thread.start()
        time.sleep(0.02)
        assert got == []
        waiter.signal("value")
        thread.join(2)
        assert got == ["value"]

    def test_returns_immediately_when_signaled(self) -> None:
        waiter = Waiter()
        waiter.signal(42)
        assert waiter.wait(timeout=0) == 42
        assert waiter.wait() == 42

    def test_timeout(self) -> None:
        assert Waiter().wait(timeout=0.1) is TIMEOUT

    def test_value_when_signaled_in_time(self) -> None:
        waiter = Waiter()
        threading.Timer(0.02, waiter.signal, args=("in time",)).start()
        assert waiter.wait(timeout=2) == "in time"

    def test_is_signaled(self) -> None:
        waiter = Waiter()
        assert not waiter.is_signaled
        waiter.signal(1)
        assert waiter.is_signaled

    def test_broadcast_to_all_waiters(self) -> None:
        waiter = Waiter()
        got: list[Any] = []
        lock = threading.Lock()

        def wait() -> None:
            value = waiter.wait(timeout=2)
            with lock:
                got.append(value)

        threads = [threading.Thread(target=wait) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.02)
        waiter.signal("all")
        for t in threads:
            t.join(2)
        assert got == ["all", "all", "all"]

    def test_signal_none(self) -> None:
        waiter = Waiter()
        waiter.signal(None)
        assert waiter.is_signaled
        assert waiter.wait(timeout=0) is None

    async def test_async_wait(self) -> None:
        waiter = Waiter()
        asyncio.get_running_loop().call_later(0.01, waiter.signal, "async value")
        assert await waiter.wait_async(timeout=2) == "async value"
        assert await waiter.wait_async() == "async value"

    async def test_async_timeout(self) -> None:
        assert await Waiter().wait_async(timeout=0.05) is TIMEOUT
        assert await Waiter().wait_async(timeout=0) is TIMEOUT

    async def test_async_wait_signaled_from_thread(self) -> None:
        waiter = Waiter()
        threading.Timer(0.02, waiter.signal, args=("threaded",)).start()
        waits = [waiter.wait_async(timeout=2) for _ in range(3)]
        assert await asyncio.gather(*waits) == ["threaded"] * 3


# --------------------------------------------------------------------------------------------
# state_proxy_test.rb


class TestStateProxy:
    def test_init_from_dict(self) -> None:
        proxy = StateProxy({"name": "Alice", "age": 30})
        assert proxy["name"] == "Alice"
        assert proxy["age"] == 30

    def test_init_empty(self) -> None:
        assert StateProxy().is_empty
        assert len(StateProxy(None)) == 0

    def test_non_string_keys_become_strings(self) -> None:
        proxy = StateProxy({1: "one"})
        assert proxy["1"] == "one"
        assert proxy[1] == "one"
        assert proxy.keys() == ["1"]

    def test_on_change_for_new_key(self) -> None:
        calls: list[tuple[str, Any, Any]] = []
        proxy = StateProxy(on_change=lambda k, old, new: calls.append((k, old, new)))
        proxy["name"] = "Bob"
        assert calls == [("name", None, "Bob")]

    def test_get_and_set(self) -> None:
        proxy = StateProxy({"a": 1})
        assert proxy["missing"] is None
        assert proxy.get("missing", "dflt") == "dflt"
        assert proxy.set("b", 2) == 2
        proxy["c"] = 3
        assert proxy.to_dict() == {"a": 1, "b": 2, "c": 3}

    def test_membership(self) -> None:
        proxy = StateProxy({"a": 1})
        assert proxy.has("a")
        assert "a" in proxy
        assert not proxy.has("b")

    def test_keys_values_items(self) -> None:
        proxy = StateProxy({"a": 1, "b": 2})
        assert proxy.keys() == ["a", "b"]
        assert proxy.values() == [1, 2]
        assert proxy.items() == [("a", 1), ("b", 2)]
        assert list(proxy.each()) == [("a", 1), ("b", 2)]
        assert list(proxy) == ["a", "b"]

    def test_delete(self) -> None:
        proxy = StateProxy({"a": 1, "b": 2})
        assert proxy.delete("a") == 1
        assert not proxy.has("a")
        assert proxy.delete("missing") is None
        del proxy["b"]
        assert proxy.is_empty

    def test_merge(self) -> None:
        calls: list[str] = []
        proxy = StateProxy({"a": 1, "b": 2}, on_change=lambda k, old, new: calls.append(k))
        assert proxy.merge({"b": 20, "c": 3, "a": 1}) is proxy
        assert proxy.to_dict() == {"a": 1, "b": 20, "c": 3}
        assert calls == ["b", "c"]  # "a" did not change

    def test_to_dict_is_a_copy(self) -> None:
        proxy = StateProxy({"a": 1})
        d = proxy.to_dict()
        d["a"] = 99
        assert proxy["a"] == 1
        assert proxy.to_hash() == {"a": 1}

    def test_dup_is_deep_and_keeps_on_change(self) -> None:
        calls: list[str] = []
        proxy = StateProxy({"nested": {"list": [1, 2]}, "x": 1}, on_change=lambda k, o, n: calls.append(k))
        clone = proxy.dup()
        clone["nested"]["list"].append(3)
        clone["x"] = 2
        assert proxy["nested"] == {"list": [1, 2]}
        assert proxy["x"] == 1
        assert calls == ["x"]  # the copy kept the callback
        assert copy.deepcopy(proxy) == proxy

    def test_size(self) -> None:
        proxy = StateProxy({"a": 1, "b": 2})
        assert proxy.size == 2
        assert len(proxy) == 2
        assert not proxy.is_empty

    def test_attribute_access(self) -> None:
        proxy = StateProxy({"name": "Alice"})
        assert proxy.name == "Alice"
        proxy.name = "Bob"
        assert proxy["name"] == "Bob"
        proxy.created = True  # the setter creates new keys
        assert proxy["created"] is True

    def test_unknown_attribute(self) -> None:
        proxy = StateProxy({"name": "Alice"})
        with pytest.raises(AttributeError):
            _ = proxy.unknown

    def test_hasattr_only_for_existing_keys(self) -> None:
        proxy = StateProxy({"name": "Alice"})
        assert hasattr(proxy, "name")
        assert not hasattr(proxy, "unknown")
        assert "name" in dir(proxy)

    def test_on_change_only_on_real_change(self) -> None:
        calls: list[tuple[str, Any, Any]] = []
        proxy = StateProxy({"a": 1}, on_change=lambda k, old, new: calls.append((k, old, new)))
        proxy["a"] = 1
        proxy.a = 1
        assert calls == []
        proxy.a = 2
        assert calls == [("a", 1, 2)]

    def test_repr(self) -> None:
        text = repr(StateProxy({"name": "Alice", "age": 30}))
        assert "RobotLab::StateProxy" in text
        assert "name" in text and "age" in text

    def test_equality(self) -> None:
        assert StateProxy({"a": 1}) == {"a": 1}
        assert StateProxy({"a": 1}) == StateProxy({"a": 1})
        assert StateProxy({"a": 1}) != StateProxy({"a": 2})
