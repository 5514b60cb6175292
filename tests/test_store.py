"""The SQLite thread store: migrations, the event log, the turn tree, search, recovery, locks."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from workspace import events as ev
from workspace.messages import TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage
from workspace.persistence import (
    MIGRATIONS,
    NotFoundError,
    Store,
    StoreError,
    coalesce_text,
    conversation_from_events,
    schema,
)
from workspace.result import RobotResult, Usage
from workspace.secrets import forget_secrets, register_secret

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "workspace.db"


@pytest.fixture
def store(db: Path) -> Any:
    s = Store.open(db)
    yield s
    s.close()


def make(cls: type[ev.Event], seq: int = 1, run_id: str = "run1", **fields: Any) -> ev.Event:
    return cls(run_id=run_id, robot="helper", seq=seq, **fields)


def sample_result(text: str = "Done.") -> RobotResult:
    call = ToolMessage("call_1", "add", {"a": 1, "b": 2})
    return RobotResult(
        "helper",
        [TextMessage("assistant", "Adding.", stop_reason="tool"), ToolCallMessage(tools=[call]),
         TextMessage("assistant", text, stop_reason="stop")],
        [ToolResultMessage(call, {"data": 3})],
        stop_reason="stop",
        usage=Usage(10, 5, 0.25),
        duration=0.5,
    )


def one_of_each() -> list[ev.Event]:
    """One event of every kind, with non-default fields."""
    result = sample_result()
    samples: dict[type[ev.Event], dict[str, Any]] = {
        ev.RunStarted: {"message": "hi", "model": "scripted", "is_language_model": False,
                        "attachments": [{"kind": "file", "name": "a.md", "mime": "text/markdown", "size": 3,
                                         "sha256": "ab" * 32, "path": "a.md"}]},
        ev.TextDelta: {"text": "Hel"},
        ev.Text: {"text": "Hello"},
        ev.ToolUse: {"id": "call_1", "name": "add", "input": {"a": 1, "b": 2}, "server": "calc", "from_text": True},
        ev.ApprovalRequested: {"id": "call_1", "name": "add", "input": {"a": 1}, "server": "calc",
                               "annotations": {"destructiveHint": True}},
        ev.ApprovalDecided: {"id": "call_1", "name": "add", "decision": "deny", "input": {"a": 1},
                             "reason": "no", "scope": "thread"},
        ev.ToolResult: {"id": "call_1", "name": "add", "payload": {"data": 3}, "raw": [{"type": "text"}],
                        "duration": 0.25, "server": "calc"},
        ev.ToolError: {"id": "call_2", "name": "add", "error": {"type": "ValueError", "message": "bad"},
                       "duration": 0.1},
        ev.ToolProgress: {"id": "call_1", "name": "slow", "progress": 2.0, "total": 4.0, "message": "half way"},
        ev.ToolOutput: {"id": "call_1", "name": "run_command", "text": "collected 3 items\n..."},
        ev.MemoryChanged: {"key": "k", "value": {"x": 1}, "previous": None, "writer": "helper"},
        ev.ChangeProposed: {"change_set_id": "cs1", "files": [{"path": "a.txt", "action": "modify",
                                                                "hunks": [], "added": 1, "removed": 0}]},
        ev.ChangeDecided: {"change_set_id": "cs1", "outcome": [{"path": "a.txt", "accepted": [0], "rejected": []}],
                           "checkpoint_id": "cp1"},
        ev.VerifyFinished: {"change_set_id": "cs1", "subset": "accepted", "command": "pytest -q", "passed": True,
                            "exit_code": 0, "output": "3 passed\n", "duration": 1.5, "timed_out": False},
        ev.Usage: {"input_tokens": 10, "output_tokens": 5, "cost": 0.25, "total_input_tokens": 10,
                   "total_output_tokens": 5, "total_cost": 0.25, "model": "m", "reasoning_tokens": 2,
                   "estimated": True},
        ev.ModelRequest: {"request_id": "rq2", "model": "openai/x", "body": {"temperature": 0.2},
                          "messages": [{"role": "user", "content": "and now?"}], "reused_from": "rq1",
                          "reused_messages": 3, "reused_keys": ["tools"]},
        ev.ReasoningDelta: {"text": "Let me"},
        ev.Reasoning: {"text": "Let me think."},
        ev.RunStatus: {"state": "retrying", "detail": "HTTP 429 from http://127.0.0.1:9/v1", "retry_in": 2.5,
                       "attempt": 1, "model": "openai/x", "endpoint": "http://127.0.0.1:9/v1"},
        ev.McpServers: {"starting": ["slow"], "joined": ["fine"], "failed": {"broken": "it exited"},
                        "message": "MCP server 'slow' is still starting"},
        ev.ContextUsage: {"used": 1500, "window": 2048, "estimated": False, "system_tokens": 40, "tools_tokens": 300,
                          "threshold": 0.75, "biggest_tools": {"search_files": 200, "read_file": 100}},
        ev.BusMessage: {"sender": "alice", "to": "bob", "content": {"question": "2 + 2?"}, "message_id": "alice:1",
                        "in_reply_to": None},
        ev.ModelChanged: {"model": "openai/other", "previous": "openai/x", "robot_default": False,
                          "api_base": "http://127.0.0.1:8080/v1", "previous_api_base": "http://127.0.0.1:1234/v1"},
        ev.ContextCompacted: {"summary": "The user asked for X.", "replaced_count": 12, "newly_replaced": 8,
                              "tokens_before": 1700, "tokens_after": 600, "window": 2048, "trigger": "overflow",
                              "model": "m"},
        ev.TaskStarted: {"message": "go"},
        ev.TaskFinished: {"status": "done", "result": result},
        ev.RunFailed: {"error": "boom", "error_type": "ProviderError", "partial": result},
        ev.RunCancelled: {"reason": "stopped by the user", "partial": result},
        ev.RunFinished: {"result": result},
    }
    assert set(samples) == set(ev.EVENT_TYPES.values()), "add the new event kind to this test"
    out = []
    for seq, cls in enumerate((ev.EVENT_TYPES[kind] for kind in ev.event_kinds()), start=1):
        task = "t1" if cls in (ev.TaskStarted, ev.TaskFinished) else None
        out.append(make(cls, seq=seq, task=task, **samples[cls]))
    return out


# -- opening and migrations -------------------------------------------------------------------------


def test_open_creates_folders_wal_and_migrations(db: Path) -> None:
    assert not db.parent.exists()
    with Store(db) as s:
        assert db.exists()
        mode = next(s.iter_rows("PRAGMA journal_mode"))[0]
        assert mode == "wal"
        assert next(s.iter_rows("PRAGMA foreign_keys"))[0] == 1
        names = [r["name"] for r in s.iter_rows("SELECT name FROM _migrations ORDER BY rowid")]
    assert names == [fn.__name__ for fn in MIGRATIONS]
    assert names[0] == "m001_initial"
    assert all(n[0] == "m" and n[1:4].isdigit() and n[4] == "_" for n in names)


def test_migrations_are_idempotent(db: Path) -> None:
    with Store(db) as s:
        thread = s.create_thread(robot="helper", title="kept")
        schema = [tuple(r) for r in s.iter_rows("SELECT type, name, sql FROM sqlite_master ORDER BY name")]
    for _ in range(3):
        with Store(db) as s:
            assert [tuple(r) for r in s.iter_rows("SELECT type, name, sql FROM sqlite_master ORDER BY name")] == schema
            assert len(list(s.iter_rows("SELECT name FROM _migrations"))) == len(MIGRATIONS)
            assert s.get_thread(thread.id).title == "kept"


def test_memory_database(tmp_path: Path) -> None:
    with Store(":memory:") as s:
        t = s.create_thread(robot="helper")
        s.add_turn(t.id, user_text="hi", parent_turn_id=None)
        assert s.get_thread(t.id).turn_count == 1


# -- threads ----------------------------------------------------------------------------------------


def test_threads_crud_soft_delete_restore_purge(store: Store) -> None:
    a = store.create_thread(robot="helper", title="First")
    b = store.create_thread(robot="writer", kind="robot", folder="/tmp/x")
    assert b.title is None and b.folder == "/tmp/x" and b.kind == "robot" and b.turn_count == 0
    assert {t.id for t in store.list_threads()} == {a.id, b.id}
    assert store.rename_thread(b.id, "  Second   one ").title == "Second one"

    deleted = store.delete_thread(a.id)
    assert deleted.deleted_at is not None and deleted.is_deleted
    assert [t.id for t in store.list_threads()] == [b.id]
    assert {t.id for t in store.list_threads(include_deleted=True)} == {a.id, b.id}
    assert store.restore_thread(a.id).deleted_at is None
    assert {t.id for t in store.list_threads()} == {a.id, b.id}

    turn = store.add_turn(a.id, user_text="hello", parent_turn_id=None)
    store.append_event(a.id, turn.id, make(ev.Text, text="bye"))
    store.delete_thread(a.id)
    assert store.purge_deleted(older_than=3600) == 0  # deleted just now
    assert store.purge_deleted() == 1
    with pytest.raises(NotFoundError):
        store.get_thread(a.id)
    assert list(store.iter_rows("SELECT * FROM events")) == []
    assert store.search("hello") == []

    with pytest.raises(ValueError, match="kind"):
        store.create_thread(robot="x", kind="team")


def test_resolve_thread_id_by_prefix(store: Store) -> None:
    t = store.create_thread(robot="helper")
    assert store.resolve_thread_id(t.id) == t.id
    assert store.resolve_thread_id(t.id[:6]) == t.id
    with pytest.raises(NotFoundError, match="No thread id starts with"):
        store.resolve_thread_id("zzzz")


# -- events -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("flush_interval", [0.0, 0.25])
def test_every_event_kind_round_trips(db: Path, flush_interval: float) -> None:
    events = one_of_each()
    with Store(db, flush_interval=flush_interval) as s:
        t = s.create_thread(robot="helper")
        turn = s.add_turn(t.id, user_text="hi", parent_turn_id=None)
        for e in events:
            s.append_event(t.id, turn.id, e)
    with Store(db) as s:
        back = s.turn_events(turn.id)
    assert [type(e) for e in back] == [type(e) for e in events]
    for original, loaded in zip(events, back, strict=True):
        assert type(loaded) is type(original)
        assert loaded.to_dict() == original.to_dict()
    failed = next(e for e in back if isinstance(e, ev.RunFailed))
    assert isinstance(failed.partial, RobotResult)
    finished = next(e for e in back if isinstance(e, ev.RunFinished))
    original_result = next(e for e in events if isinstance(e, ev.RunFinished)).result
    assert finished.result == original_result and finished.result.checksum == original_result.checksum


def test_append_events_batch_and_usage_totals(store: Store) -> None:
    t = store.create_thread(robot="helper")
    turn = store.add_turn(t.id, user_text="hi", parent_turn_id=None)
    store.append_events(t.id, turn.id, [
        make(ev.RunStarted, seq=1, message="hi", model="openai/gpt-4o-mini"),
        make(ev.Usage, seq=2, input_tokens=100, output_tokens=20, cost=None),
        make(ev.Usage, seq=3, input_tokens=50, output_tokens=10, cost=0.5),
    ])
    assert store.get_turn(turn.id).usage == Usage(150, 30, 0.5)
    info = store.get_thread(t.id)
    assert (info.input_tokens, info.output_tokens, info.cost, info.model) == (150, 30, 0.5, "openai/gpt-4o-mini")
    assert store.usage(t.id) == Usage(150, 30, 0.5)
    other = store.add_turn(t.id, user_text="again", parent_turn_id=turn.id)
    store.append_event(t.id, other.id, make(ev.Usage, seq=1, run_id="run2", input_tokens=1, output_tokens=1))
    assert store.usage(t.id) == Usage(151, 31, 0.5)


def test_text_deltas_are_held_and_coalesced(db: Path) -> None:
    with Store(db, flush_interval=60) as s:
        t = s.create_thread(robot="helper")
        turn = s.add_turn(t.id, user_text="hi", parent_turn_id=None)
        s.append_event(t.id, turn.id, make(ev.RunStarted, seq=1))
        words = [f"w{i} " for i in range(100)]
        for i, w in enumerate(words):
            s.append_event(t.id, turn.id, make(ev.TextDelta, seq=2 + i, text=w))
        # Held, not yet written: readers of this store still see them, as one delta.
        assert s.has_held_text(turn.id)
        rows = list(s.iter_rows("SELECT kind FROM events WHERE turn_id = ?", (turn.id,)))
        assert [r["kind"] for r in rows] == [ev.RunStarted.kind]
        seen = s.turn_events(turn.id)
        assert [type(e) for e in seen] == [ev.RunStarted, ev.TextDelta]
        assert seen[1].text == "".join(words)  # type: ignore[attr-defined]
        # Any other event writes them first, as one row keeping the first delta's seq.
        s.append_event(t.id, turn.id, make(ev.Usage, seq=200, input_tokens=1))
        rows = list(s.iter_rows("SELECT kind, seq, data FROM events WHERE turn_id = ? ORDER BY id", (turn.id,)))
        assert [r["kind"] for r in rows] == [ev.RunStarted.kind, ev.TextDelta.kind, ev.Usage.kind]
        assert rows[1]["seq"] == 2 and '"deltas":100' in rows[1]["data"]
        s.append_event(t.id, turn.id, make(ev.Text, seq=201, text="".join(words)))
        view = coalesce_text(s.turn_events(turn.id))
        assert [type(e) for e in view] == [ev.RunStarted, ev.Text, ev.Usage]
        assert view[1].text == "".join(words)  # type: ignore[attr-defined]


def test_held_deltas_are_written_after_the_flush_interval(db: Path) -> None:
    with Store(db, flush_interval=0.05) as s:
        t = s.create_thread(robot="helper")
        turn = s.add_turn(t.id, user_text="hi", parent_turn_id=None)
        s.append_event(t.id, turn.id, make(ev.TextDelta, seq=1, text="a "))
        time.sleep(0.06)
        s.append_event(t.id, turn.id, make(ev.TextDelta, seq=2, text="b "))  # due: written now
        s.append_event(t.id, turn.id, make(ev.TextDelta, seq=3, text="c"))  # held again
        with sqlite3.connect(db) as other:  # what a crash would leave on disk
            rows = other.execute("SELECT kind, json_extract(data, '$.text') FROM events").fetchall()
        assert rows == [(ev.TextDelta.kind, "a b ")]
        s.flush()
        assert [e.text for e in s.turn_events(turn.id)] == ["a b ", "c"]  # type: ignore[attr-defined]


def test_a_key_streamed_over_the_flush_interval_is_never_split_between_two_rows(db: Path) -> None:
    """Each row is redacted alone, so a key split between two rows was stored (its two halves matched by
    nothing): held text is written before its turn ends only up to a boundary with whitespace on one side, a word
    being written held on (a stalled stream's timer too); the turn's end writes the rest, the key redacted."""
    key = "sk-splitkey-0123456789abcdefghijkl"
    register_secret(key, name="OPENAI_API_KEY")
    try:
        with Store(db, flush_interval=0.02) as s:
            t = s.create_thread(robot="helper")
            turn = s.add_turn(t.id, user_text="hi", parent_turn_id=None)
            pieces = ["The key", " in .env", " is ", key[:6], key[6:14], key[14:25], key[25:], " there", ",", " done"]
            for seq, piece in enumerate(pieces, 1):
                s.append_event(t.id, turn.id, make(ev.TextDelta, seq=seq, text=piece))
                time.sleep(0.03)  # every delta finds the held ones due
                if seq == 6:
                    s.flush(turn.id, whole=False)  # (a stalled stream's timer)
            with sqlite3.connect(db) as other:  # what a crash would leave on disk
                early = [r[0] for r in other.execute("SELECT json_extract(data, '$.text') FROM events")]
            assert early == ["The key", " in .env is ", "<OPENAI_API_KEY>", " there,"]  # as it came, a word held
            s.flush(turn.id)
            with sqlite3.connect(db) as other:
                texts = [r[0] for r in other.execute("SELECT json_extract(data, '$.text') FROM events ORDER BY id")]
        assert "".join(texts) == "The key in .env is <OPENAI_API_KEY> there, done"
        assert not any(key[:6] in text or key[-6:] in text for text in texts), texts
    finally:
        forget_secrets([key])


def test_flush_interval_zero_stores_every_delta(store: Store, db: Path) -> None:
    with Store(db, flush_interval=0) as s:
        t = s.create_thread(robot="helper")
        turn = s.add_turn(t.id, user_text="hi", parent_turn_id=None)
        for i in range(5):
            s.append_event(t.id, turn.id, make(ev.TextDelta, seq=i, text=str(i)))
        assert [e.text for e in s.turn_events(turn.id)] == ["0", "1", "2", "3", "4"]  # type: ignore[attr-defined]


def test_terminal_event_finishes_the_turn(store: Store) -> None:
    t = store.create_thread(robot="helper")
    turn = store.add_turn(t.id, user_text="hi", parent_turn_id=None)
    assert store.get_turn(turn.id).status == "running"
    store.append_event(t.id, turn.id, make(ev.RunStarted))
    store.append_event(t.id, turn.id, make(ev.RunCancelled, seq=2, reason="stop"))
    assert store.get_turn(turn.id).status == "cancelled"
    store.finish_turn(turn.id, "cancelled")
    with pytest.raises(ValueError, match="Invalid turn status"):
        store.finish_turn(turn.id, "done")


# -- the turn tree ---------------------------------------------------------------------------------


def test_turn_tree_path_siblings_and_branch_switching(store: Store) -> None:
    t = store.create_thread(robot="helper")
    a = store.add_turn(t.id, user_text="A", parent_turn_id=None)
    b = store.add_turn(t.id, user_text="B", parent_turn_id=a.id)
    c = store.add_turn(t.id, user_text="C", parent_turn_id=b.id)
    assert store.get_thread(t.id).current_turn_id == c.id
    assert [x.user_text for x in store.path(t.id)] == ["A", "B", "C"]
    # Edit B: a sibling of B under A; it becomes current.
    b2 = store.add_turn(t.id, user_text="B2", parent_turn_id=a.id)
    d = store.add_turn(t.id, user_text="D", parent_turn_id=b2.id)
    assert [x.user_text for x in store.path(t.id)] == ["A", "B2", "D"]
    assert [x.id for x in store.siblings(b.id)] == [b.id, b2.id]
    assert [x.id for x in store.siblings(a.id)] == [a.id]
    assert store.path(t.id, c.id)[-1].id == c.id
    # Back to B: its deepest latest descendant (C) becomes current.
    assert store.set_current(t.id, b.id).id == c.id
    assert [x.user_text for x in store.path(t.id)] == ["A", "B", "C"]
    assert store.set_current(t.id, b2.id).id == d.id
    # A newer child wins when several.
    c2 = store.add_turn(t.id, user_text="C2", parent_turn_id=b.id)
    store.set_current(t.id, d.id)
    assert store.set_current(t.id, b.id).id == c2.id
    # The latest turn of the whole subtree, not the latest child's first leaf.
    assert store.set_current(t.id, a.id).id == c2.id
    e = store.add_turn(t.id, user_text="E", parent_turn_id=d.id)
    assert store.set_current(t.id, a.id).id == e.id
    assert store.branch_map(t.id) == {None: [a.id], a.id: [b.id, b2.id], b.id: [c.id, c2.id], b2.id: [d.id], d.id: [e.id]}
    assert store.get_thread(t.id).turn_count == 7
    # Two first messages (the first one edited) are siblings too.
    a2 = store.add_turn(t.id, user_text="A2", parent_turn_id=None)
    assert [x.id for x in store.siblings(a2.id)] == [a.id, a2.id]
    other = store.create_thread(robot="helper")
    with pytest.raises(StoreError, match="another thread"):
        store.add_turn(other.id, user_text="x", parent_turn_id=a.id)
    with pytest.raises(NotFoundError):
        store.path(other.id, a.id)


# -- the conversation ------------------------------------------------------------------------------


def valid_conversation(messages: list[Any]) -> bool:
    open_ids: set[str] = set()
    for m in messages:
        if isinstance(m, ToolCallMessage):
            if open_ids:
                return False
            open_ids = {t.id or "" for t in m.tools}
        elif isinstance(m, ToolResultMessage):
            open_ids.discard(m.tool.id or "")
        elif open_ids:
            return False
    return not open_ids


def test_history_messages_from_results_and_from_events(store: Store) -> None:
    t = store.create_thread(robot="helper")
    first = store.add_turn(t.id, user_text="add 1 and 2", parent_turn_id=None)
    store.append_event(t.id, first.id, make(ev.RunFinished, seq=9, result=sample_result("It is 3.")))
    second = store.add_turn(t.id, user_text="and again?", parent_turn_id=first.id)
    # A crash mid-run: text, a tool call with its result, a second call without one, no terminal event.
    store.append_events(t.id, second.id, [
        make(ev.RunStarted, seq=1, run_id="r2"),
        make(ev.TextDelta, seq=2, run_id="r2", text="Calling "),
        make(ev.TextDelta, seq=3, run_id="r2", text="tools."),
        make(ev.ToolUse, seq=4, run_id="r2", id="c1", name="add", input={"a": 1}),
        make(ev.ToolUse, seq=5, run_id="r2", id="c2", name="add", input={"a": 2}),
        make(ev.ToolResult, seq=6, run_id="r2", id="c1", name="add", payload={"data": 1}),
    ])
    messages = store.history_messages(t.id)
    assert valid_conversation(messages)
    kinds = [(m.type, m.role) for m in messages]
    assert kinds == [
        ("text", "user"), ("text", "assistant"), ("tool_call", "assistant"), ("tool_result", "tool_result"),
        ("text", "assistant"),
        ("text", "user"), ("text", "assistant"), ("tool_call", "assistant"), ("tool_result", "tool_result"),
        ("tool_result", "tool_result"),
    ]
    assert messages[4].content == "It is 3."
    assert messages[6].content == "Calling tools." and messages[6].stop_reason == "tool"
    assert messages[8].content == {"data": 1}
    assert "interrupted" in messages[9].content["error"]
    assert store.history_messages(t.id, first.id) == messages[:5]


def test_conversation_from_events_text_then_calls_then_text() -> None:
    events = [
        make(ev.TextDelta, seq=1, text="a"), make(ev.Usage, seq=2), make(ev.Text, seq=3, text="a"),
        make(ev.ToolUse, seq=4, id="x", name="t", input={}),
        make(ev.ToolError, seq=5, id="x", name="t", error="nope"),
        make(ev.TextDelta, seq=6, text="b"),
    ]
    messages = conversation_from_events(events)
    assert [m.type for m in messages] == ["text", "tool_call", "tool_result", "text"]
    assert messages[2].content == {"error": "nope"} and messages[3].content == "b"


# -- search ----------------------------------------------------------------------------------------


def fill_for_search(s: Store) -> tuple[str, str]:
    a = s.create_thread(robot="helper", title="Weather")
    ta = s.add_turn(a.id, user_text="What is the weather in Lisbon?", parent_turn_id=None)
    s.append_event(a.id, ta.id, make(ev.Text, text="Sunny in Lisbon, 24 degrees."))
    b = s.create_thread(robot="coder", title="Code")
    tb = s.add_turn(b.id, user_text="Read the config file", parent_turn_id=None)
    s.append_event(b.id, tb.id, make(ev.ToolUse, id="c", name="read_file", input={"path": "settings.yaml"}))
    s.append_event(b.id, tb.id, make(ev.Text, seq=2, text="The config mentions Lisbon too."))
    return a.id, b.id


@pytest.mark.parametrize("fts", [True, False])
def test_search_across_threads(db: Path, fts: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not fts:
        monkeypatch.setattr(schema, "_FTS5", False)
    with Store(db) as s:
        assert s.fts is fts
        a, b = fill_for_search(s)
        hits = s.search("lisbon")
        assert {h.thread_id for h in hits} == {a, b}
        assert {h.kind for h in hits} == {"user", "assistant"}
        assert any("[Lisbon]" in h.snippet or "[lisbon]" in h.snippet.lower() for h in hits)
        tool_hits = s.search("read_file settings")
        assert [(h.thread_id, h.kind) for h in tool_hits] == [(b, "tool")]
        assert s.search("sunny lisb")[0].title == "Weather"  # prefixes, all words
        assert s.search("nothing-like-this") == []
        for odd in ('"', "*", "a OR", "NEAR(", "-", "'; DROP TABLE threads; --"):
            s.search(odd)  # never raises
        s.delete_thread(a)
        assert {h.thread_id for h in s.search("lisbon")} == {b}
        s.restore_thread(a)
        assert len({h.thread_id for h in s.search("lisbon", limit=1)}) == 1


def test_fts_index_is_rebuilt_after_writes_without_fts(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(db) as s:
        fill_for_search(s)
    monkeypatch.setattr(schema, "_FTS5", False)
    with Store(db) as s:
        t = s.create_thread(robot="helper")
        s.add_turn(t.id, user_text="zanzibar trip", parent_turn_id=None)
        assert [h.thread_id for h in s.search("zanzibar")] == [t.id]
    monkeypatch.setattr(schema, "_FTS5", True)
    with Store(db) as s:
        assert s.fts
        assert [h.thread_id for h in s.search("zanzibar")] == [t.id]


# -- secrets ---------------------------------------------------------------------------------------


def test_secrets_never_reach_the_database(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-abcdefghijklmnop1234"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    with Store(db) as s:
        t = s.create_thread(robot="helper", title=f"key {secret}")
        turn = s.add_turn(t.id, user_text=f"my key is {secret}", parent_turn_id=None)
        s.append_event(t.id, turn.id, make(ev.ToolUse, id="c", name="http", input={"auth": secret}))
        s.append_event(t.id, turn.id, make(ev.TextDelta, seq=2, text=f"echo {secret}"))
        s.append_event(t.id, turn.id, make(ev.RunFinished, seq=3, result=RobotResult(
            "helper", [TextMessage("assistant", secret)])))
        assert "<OPENAI_API_" in s.search("my key")[0].snippet
    for path in db.parent.iterdir():
        assert secret.encode() not in path.read_bytes(), path.name


# -- a crash, a corrupt file, a locked file --------------------------------------------------------


def test_a_crashed_process_leaves_its_turn_interrupted_with_its_events(db: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os, time
        from workspace.persistence import Store
        from workspace import events as ev
        s = Store({str(db)!r}, flush_interval=0.05)
        t = s.create_thread(robot="helper", title="crash")
        turn = s.add_turn(t.id, user_text="tell me a story", parent_turn_id=None)
        s.append_event(t.id, turn.id, ev.RunStarted(run_id="r", robot="helper", seq=1, message="m"))
        s.append_event(t.id, turn.id, ev.TextDelta(run_id="r", robot="helper", seq=2, text="Once upon "))
        time.sleep(0.06)
        s.append_event(t.id, turn.id, ev.TextDelta(run_id="r", robot="helper", seq=3, text="a time"))
        time.sleep(0.06)  # (due at seq 3: "Once upon " written, the word being written held on)
        s.append_event(t.id, turn.id, ev.TextDelta(run_id="r", robot="helper", seq=4, text=" (lost)"))
        # (due at seq 4: "a time" written, the word after it held on)
        print(t.id, turn.id, flush=True)
        os._exit(1)  # no close, no cleanup: a crash
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 1, out.stderr
    thread_id, turn_id = out.stdout.split()
    with Store(db) as s:
        assert s.interrupted_turns == [turn_id]
        turn = s.get_turn(turn_id)
        assert turn.status == "interrupted" and turn.finished_at is not None
        events = coalesce_text(s.turn_events(turn_id))
        assert [type(e) for e in events] == [ev.RunStarted, ev.Text]
        assert events[1].text == "Once upon a time"  # type: ignore[attr-defined]
        assert s.history_messages(thread_id)[-1].content == "Once upon a time"
        assert [h.turn_id for h in s.search("upon")] == [turn_id]
    with Store(db) as s:  # only once
        assert s.interrupted_turns == []


def test_a_live_store_keeps_its_running_turns(db: Path) -> None:
    with Store(db) as first:
        t = first.create_thread(robot="helper")
        turn = first.add_turn(t.id, user_text="hi", parent_turn_id=None)
        with Store(db) as second:  # e.g. `robotlab threads list` while the app runs
            assert second.get_turn(turn.id).status == "running"
        assert first.get_turn(turn.id).status == "running"
    with Store(db) as again:  # closed with the turn unfinished: interrupted
        assert again.get_turn(turn.id).status == "interrupted"


def test_corrupt_database_names_the_file_and_recovers_on_request(db: Path) -> None:
    db.parent.mkdir(parents=True)
    garbage = b"this is not a database at all " * 200
    db.write_bytes(garbage)
    with pytest.raises(StoreError) as info:
        Store.open(db)
    assert info.value.reason == "corrupt"
    assert str(db) in str(info.value) and "corrupt-" in str(info.value)
    assert db.read_bytes() == garbage  # nothing changed without recovery
    with Store.open(db, recover=True) as s:
        assert s.recovered_from is not None and s.recovered_from.name.startswith("workspace.db.corrupt-")
        assert s.recovered_from.read_bytes() == garbage
        t = s.create_thread(robot="helper")
        assert [x.id for x in s.list_threads()] == [t.id]
    with Store.open(db, recover=True) as s:
        assert s.recovered_from is None


def test_locked_database_is_a_clear_error_not_a_hang(db: Path) -> None:
    db.parent.mkdir(parents=True)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE x (y)")
    holder.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    try:
        with pytest.raises(StoreError) as info:
            Store.open(db, busy_timeout=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert info.value.reason == "locked"
    assert str(db) in str(info.value) and "locked by another program" in str(info.value)
    assert time.monotonic() - started < 30


def test_locked_wal_database_at_open(db: Path) -> None:
    Store(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked"):
            Store.open(db, busy_timeout=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_writes_while_locked_are_kept_and_written_later_in_order(db: Path) -> None:
    with Store(db, write_timeout=0.05, retry_after=0.0) as s:
        t = s.create_thread(robot="helper")
        turn = s.add_turn(t.id, user_text="hi", parent_turn_id=None)
        s.append_event(t.id, turn.id, make(ev.RunStarted, seq=1))
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreError) as info:
                s.append_event(t.id, turn.id, make(ev.Text, seq=2, text="kept"))
            assert info.value.reason == "locked" and str(db) in str(info.value)
            assert s.queued_writes > 0
            with pytest.raises(StoreError):
                s.append_event(t.id, turn.id, make(ev.Text, seq=3, text="also kept"))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        s.append_event(t.id, turn.id, make(ev.Text, seq=4, text="after"))
        assert s.queued_writes == 0
        assert [e.seq for e in s.turn_events(turn.id)] == [1, 2, 3, 4]


def test_closed_store_raises(db: Path) -> None:
    s = Store(db)
    s.close()
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.list_threads()


def test_unusable_location_names_the_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="ROBOTLAB_HOME"):
        Store(blocker / "sub" / "workspace.db")
    if os.name != "nt":
        with pytest.raises(StoreError, match="folder"):
            Store(tmp_path)


def test_thread_metadata_and_origin(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """m004_thread_metadata: a JSON object per thread (the command line's origin), redacted like the rest."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-metadata-secret-123456")
    with Store(db) as s:
        window = s.create_thread(robot="helper", title="from the window")
        assert window.metadata == {} and window.origin is None and window.origin_label == ""
        cli = s.create_thread(robot="helper", metadata={"origin": "cli", "command": "run",
                                                        "note": "key sk-metadata-secret-123456"})
        assert cli.origin == "cli" and cli.origin_label == "terminal"
        assert "sk-metadata-secret" not in str(cli.metadata)
        updated = s.update_thread_metadata(cli.id, model="openai/gpt-4o-mini", note=None)
        assert updated.metadata == {"origin": "cli", "command": "run", "model": "openai/gpt-4o-mini"}
        other = s.create_thread(robot="writer", kind="network")
        latest = s.latest_thread()
        assert latest is not None and latest.id == other.id
        latest_robot = s.latest_thread(kind="robot")
        assert latest_robot is not None and latest_robot.id in (window.id, cli.id)
        assert s.latest_thread(kind="robot", robot="nobody") is None
        s.delete_thread(other.id)
        assert s.latest_thread(kind="network") is None  # deleted threads are not continued


def test_a_database_of_the_previous_version_gets_the_metadata_column(db: Path) -> None:
    with Store(db) as s:
        thread = s.create_thread(robot="helper", title="old")
    conn = sqlite3.connect(db)  # as m001..m003 left it: no metadata column, no m004 recorded
    conn.execute("ALTER TABLE threads DROP COLUMN metadata")
    conn.execute("DELETE FROM _migrations WHERE name = 'm004_thread_metadata'")
    conn.commit()
    conn.close()
    with Store(db) as s:
        assert s.get_thread(thread.id).metadata == {} and s.get_thread(thread.id).title == "old"
        names = [r["name"] for r in s.iter_rows("SELECT name FROM _migrations ORDER BY rowid")]
    assert names[-1] == "m004_thread_metadata"


# -- large payloads ---------------------------------------------------------------------------------


def _big_result_events(text: str) -> list[ev.Event]:
    call = ToolMessage(id="c1", name="server__read", input={"path": "big.log"})
    result = RobotResult(robot_name="helper", output=[ToolCallMessage(role="assistant", tools=[call]),
                                                      TextMessage(role="assistant", content="It is a log.")],
                         tool_calls=[ToolResultMessage(tool=call, content={"data": text})], stop_reason="stop")
    raw = {"content": [{"type": "text", "text": text[:-1] + text[-1:]}], "isError": False}  # a copy, as MCP gives
    return [
        ev.ToolUse(run_id="r1", robot="helper", seq=1, id="c1", name="server__read", input={"path": "big.log"}),
        ev.ToolResult(run_id="r1", robot="helper", seq=2, id="c1", name="server__read", payload={"data": text},
                      raw=raw),
        ev.Text(run_id="r1", robot="helper", seq=3, text="It is a log."),
        ev.RunFinished(run_id="r1", robot="helper", seq=4, result=result),
    ]


def test_a_large_tool_result_is_stored_once_compressed_and_read_back_whole(db: Path) -> None:
    from workspace.exports import export_thread
    from workspace.persistence.blobs import BLOB_THRESHOLD

    line = "2024-05-01 INFO worker processed request in 12 ms status=ok\n"
    text = line * (3 * BLOB_THRESHOLD // len(line) * 10)  # ~1 MB
    with Store(db) as s:
        thread = s.create_thread(robot="helper", title="big")
        turn = s.add_turn(thread.id, user_text="read big.log", parent_turn_id=None)
        s.append_events(thread.id, turn.id, _big_result_events(text))
        s.add_turn(thread.id, user_text="again", parent_turn_id=turn.id)  # a later turn: the same blob again
        blobs = list(s.iter_rows("SELECT hash, size, codec, length(data) AS stored FROM blobs"))
        assert len(blobs) == 1  # payload, raw copy and the run's result: one blob
        assert blobs[0]["size"] == len(text) and blobs[0]["codec"] == "zlib" and blobs[0]["stored"] < len(text) / 20
        assert max(r[0] for r in s.iter_rows("SELECT length(data) FROM events")) < 4000  # the log stays small
        assert all(r[0] == blobs[0]["hash"] for r in s.iter_rows("SELECT blobs FROM events WHERE blobs IS NOT NULL"))
    with Store(db) as s:
        events = s.turn_events(turn.id)
        result_event = next(e for e in events if isinstance(e, ev.ToolResult))
        assert result_event.payload == {"data": text}
        assert result_event.raw["content"][0]["text"] == text
        assert result_event.payload["data"] is result_event.raw["content"][0]["text"]  # one string in memory
        finished = s.turn_result(turn.id)
        assert finished is not None and finished.tool_calls[0].content == {"data": text}
        assert {"data": text} in [m.content for m in s.history_messages(thread.id, turn.id)]
        for fmt in ("markdown", "json", "jsonl"):
            assert "status=ok" in export_thread(s, thread.id, fmt)
        assert {h.thread_id for h in s.search("log")} == {thread.id}


def test_large_lists_and_strings_that_look_like_references_round_trip(db: Path) -> None:
    from workspace.persistence.blobs import BLOB_THRESHOLD

    many = [{"name": f"file{i}.txt", "size": i} for i in range(BLOB_THRESHOLD // 10)]  # large, small strings
    tricky = "\x00blob:0000000000000000000000000000000000000000000000000000000000000000"
    with Store(db) as s:
        thread = s.create_thread(robot="helper")
        turn = s.add_turn(thread.id, user_text="list", parent_turn_id=None)
        s.append_event(thread.id, turn.id, ev.ToolResult(run_id="r", robot="helper", seq=1, id="c", name="ls",
                                                         payload={"data": many, "note": tricky}))
        assert len(list(s.iter_rows("SELECT hash FROM blobs"))) == 2
    with Store(db) as s:
        (event,) = s.turn_events(turn.id)
        assert isinstance(event, ev.ToolResult) and event.payload == {"data": many, "note": tricky}


def test_purging_threads_removes_their_blobs_but_keeps_shared_ones(db: Path) -> None:
    from workspace.persistence.blobs import BLOB_THRESHOLD

    shared, own = "s" * BLOB_THRESHOLD, "o" * BLOB_THRESHOLD
    with Store(db) as s:
        keep, drop = s.create_thread(robot="helper"), s.create_thread(robot="helper")
        for thread, payloads in ((keep, [shared]), (drop, [shared, own])):
            turn = s.add_turn(thread.id, user_text="x", parent_turn_id=None)
            for i, payload in enumerate(payloads):
                s.append_event(thread.id, turn.id, ev.ToolResult(run_id="r", robot="helper", seq=i, id=f"c{i}",
                                                                 name="t", payload={"data": payload}))
        assert len(list(s.iter_rows("SELECT hash FROM blobs"))) == 2
        s.delete_thread(drop.id)
        assert s.purge_deleted() == 1
        assert len(list(s.iter_rows("SELECT hash FROM blobs"))) == 1
        assert s.turn_events(s.path(keep.id)[0].id)[0].payload == {"data": shared}  # type: ignore[union-attr]


def test_a_missing_blob_reads_as_a_note_and_the_thread_still_opens(db: Path) -> None:
    from workspace.persistence.blobs import BLOB_THRESHOLD

    with Store(db) as s:
        thread = s.create_thread(robot="helper")
        turn = s.add_turn(thread.id, user_text="x", parent_turn_id=None)
        s.append_events(thread.id, turn.id, _big_result_events("z" * BLOB_THRESHOLD))
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM blobs")
    conn.commit()
    conn.close()
    with Store(db) as s:
        events = s.turn_events(turn.id)
        payload = next(e for e in events if isinstance(e, ev.ToolResult)).payload
        assert "could not be read from the database" in payload["data"]


def test_secrets_in_a_large_payload_never_reach_the_blobs(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zlib

    from workspace.persistence.blobs import BLOB_THRESHOLD

    monkeypatch.setenv("PLANTED_API_KEY", "sk-planted-0123456789")
    text = "x" * BLOB_THRESHOLD + " key sk-planted-0123456789 and http://me:pw-in-url@host/"
    with Store(db) as s:
        thread = s.create_thread(robot="helper")
        turn = s.add_turn(thread.id, user_text="x", parent_turn_id=None)
        s.append_event(thread.id, turn.id, ev.ToolResult(run_id="r", robot="helper", seq=1, id="c", name="t",
                                                         payload={"data": text}))
        (stored,) = [zlib.decompress(r[0]).decode() for r in s.iter_rows("SELECT data FROM blobs")]
    assert "sk-planted-0123456789" not in stored and "pw-in-url" not in stored
    assert stored.endswith(" key <PLANTED_API_KEY> and http://me:<redacted>@host/")


def test_a_value_sqlite_cannot_hold_ends_its_transaction_and_later_writes_go_on(store: Any) -> None:
    """An integer past SQLite's range raises OverflowError, not sqlite3.Error: the batch's transaction was left open,
    and every later write of the session failed ("cannot start a transaction within a transaction"), kept in
    memory only and lost at exit (an audit's server reporting 10**30 tokens)."""
    thread = store.create_thread(robot="helper")
    turn = store.add_turn(thread.id, user_text="hi", parent_turn_id=None)
    with pytest.raises(OverflowError):
        store.append_event(thread.id, turn.id, make(ev.Usage, input_tokens=10**30, output_tokens=1))
    store.append_event(thread.id, turn.id, make(ev.Text, seq=2, text="kept"))
    with sqlite3.connect(store.db_path) as conn:
        kinds = [row[0] for row in conn.execute("SELECT kind FROM events WHERE turn_id = ?", (turn.id,))]
    assert "text" in kinds


def test_a_usage_count_no_column_can_hold_is_no_count() -> None:
    from workspace.providers.openai_format import MAX_TOKEN_COUNT, usage_numbers

    assert usage_numbers({"prompt_tokens": 10**30, "completion_tokens": 7,
                          "completion_tokens_details": {"reasoning_tokens": -3}}) == (0, 7, 0)
    assert usage_numbers({"input_tokens": float("inf"), "output_tokens": float("nan")}) == (0, 0, 0)
    assert usage_numbers({"prompt_tokens": MAX_TOKEN_COUNT, "completion_tokens": "12"}) == (MAX_TOKEN_COUNT, 12, 0)


def test_a_row_sqlite_cannot_hold_queued_behind_a_lock_is_dropped_with_its_batch(db: Path) -> None:
    """Queued while another program held the lock, the row that cannot be written failed every later write again
    (a review's finding): it is dropped with the rows queued beside it, said in the log, and writing goes on."""
    store = Store.open(db, retry_after=0.05)
    try:
        thread = store.create_thread(robot="helper")
        turn = store.add_turn(thread.id, user_text="hi", parent_turn_id=None)
        other = sqlite3.connect(db, timeout=0)
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError):
            store.append_event(thread.id, turn.id, make(ev.Usage, input_tokens=2**64, output_tokens=1))
        other.rollback()
        other.close()
        time.sleep(0.1)
        with pytest.raises(OverflowError):
            store.append_event(thread.id, turn.id, make(ev.Text, seq=2, text="with it"))
        store.append_event(thread.id, turn.id, make(ev.Text, seq=3, text="after"))
        with sqlite3.connect(db) as conn:
            texts = [row[0] for row in conn.execute("SELECT data FROM events WHERE kind = 'text'")]
        assert len(texts) == 1 and "after" in texts[0]
    finally:
        store.close()
