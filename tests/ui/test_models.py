"""Item models, the Markdown renderer, the bridge and the task owner: no widgets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from workspace import events as ev


def _e(cls: type[ev.Event], seq: int = 1, **fields: object) -> ev.Event:
    return cls(run_id="r1", robot="assistant", seq=seq, **fields)


@pytest.fixture(autouse=True)
def _app(qapp_instance: object) -> None:
    """Models need no widgets, but QTimer-based code needs a QCoreApplication."""


def test_tool_calls_model_pairs_calls_and_results_by_id() -> None:
    from ui.inspector.tool_calls import ToolCallsModel, diff_results

    model = ToolCallsModel()
    model.add_events([
        _e(ev.ToolUse, 1, id="a", name="read_file", input={"path": "x"}),
        _e(ev.ToolUse, 2, id="b", name="fs__write", input={"path": "y"}, server="fs"),
        _e(ev.ToolResult, 3, id="b", name="fs__write", payload={"data": "ok"}, duration=0.25, server="fs"),
        _e(ev.ToolError, 4, id="a", name="read_file", error="no such file", duration=0.01),
    ])
    assert model.rowCount() == 2
    assert [model.index(r, 0).data() for r in range(2)] == ["read_file", "write"]
    assert model.index(1, model.COL_SERVER).data() == "fs"
    assert model.index(0, model.COL_STATUS).data() == "error"
    assert model.index(1, model.COL_STATUS).data() == "ok"
    assert model.index(1, model.COL_DURATION).data() == "250 ms"
    a, b = model.records
    assert a.error == "no such file" and b.payload == {"data": "ok"}
    assert "-" in diff_results(a, b) and "+" in diff_results(a, b)
    assert '"status": "ok"' in b.raw_json()


def test_tool_calls_model_tracks_approvals() -> None:
    from ui.inspector.tool_calls import ToolCallsModel

    model = ToolCallsModel()
    changed: list[int] = []
    model.dataChanged.connect(lambda top, _bottom, *_: changed.append(top.row()))
    model.add_event(_e(ev.ToolUse, 1, id="a", name="rm", input={"p": 1}))
    model.add_event(_e(ev.ApprovalRequested, 2, id="a", name="rm", input={"p": 1}))
    assert model.records[0].status == "approval"
    model.add_event(_e(ev.ApprovalDecided, 3, id="a", name="rm", decision="deny", reason="too risky"))
    model.add_event(_e(ev.ToolError, 4, id="a", name="rm", error="Denied by the user: too risky"))
    rec = model.records[0]
    assert rec.status == "denied" and rec.reason == "too risky"
    assert changed and set(changed) == {0}


def test_tool_calls_with_the_same_id_in_two_runs_are_two_rows() -> None:
    """Local servers number their calls afresh in every request (call_0, call_1): a thread holds the same
    id in several runs, and the table must show each call, never update an older run's row."""
    from dataclasses import replace

    from ui.inspector.tool_calls import ToolCallsModel

    model = ToolCallsModel()
    first = [_e(ev.ToolUse, 1, id="call_0", name="list_files", input={"path": "."}),
             _e(ev.ToolResult, 2, id="call_0", name="list_files", payload={"entries": []}, duration=0.05)]
    second = [_e(ev.ToolUse, 3, id="call_0", name="read_file", input={"path": "README.md"}),
              _e(ev.ToolError, 4, id="call_0", name="read_file", error="No folder is open", duration=0.14)]
    model.add_events(first + [replace(e, run_id="r2") for e in second])
    assert model.rowCount() == 2
    assert [(r.tool, r.status) for r in model.records] == [("list_files", "ok"), ("read_file", "error")]
    assert model.find("call_0", "r2") is model.records[1] and model.find("call_0") is model.records[1]


def test_trace_model_and_filter() -> None:
    from ui.inspector.trace import TraceFilterModel, TraceModel

    model = TraceModel()
    proxy = TraceFilterModel()
    proxy.setSourceModel(model)
    model.append_events([_e(ev.RunStarted, 1, message="hi"), _e(ev.TextDelta, 2, text="Hel"),
                         _e(ev.TextDelta, 3, text="lo"), _e(ev.ToolUse, 4, id="x", name="recall", input={"k": 1})])
    model.append_events([_e(ev.RunFinished, 5)])
    assert model.rowCount() == 5 and proxy.rowCount() == 5
    assert model.index(3, 2).data() == "tool_use"
    assert "recall" in model.index(3, 4).data()
    proxy.set_kinds({"text_delta"})
    assert proxy.rowCount() == 2
    proxy.set_kinds(None)
    proxy.set_text("recall")
    assert proxy.rowCount() == 1
    assert model.kinds() == ["run_finished", "run_started", "text_delta", "tool_use"]


def test_memory_model_keeps_writer_and_history() -> None:
    from ui.inspector.memory import MemoryModel

    model = MemoryModel()
    model.add_events([_e(ev.MemoryChanged, 1, key="color", value="teal", writer="assistant")])
    model.add_events([_e(ev.MemoryChanged, 2, key="color", value={"name": "blue"}, previous="teal", writer="bob")])
    model.add_events([_e(ev.MemoryChanged, 3, key="size", value=3, writer="assistant")])
    assert model.rowCount() == 2
    entry = model.entry("color")
    assert entry is not None and entry.writer == "bob" and len(entry.history) == 2
    assert model.index(0, 1).data() == '{"name": "blue"}'
    assert model.index(0, 2).data() == "bob"
    model.apply("size", None, previous=3, writer="x")
    assert model.index(1, 1).data() == "(deleted)"


def test_thread_list_model_threads_and_search_hits(tmp_path: object) -> None:
    from ui.threads.model import ThreadListModel
    from workspace.persistence import SearchHit, Store

    store = Store(":memory:")
    a = store.create_thread(robot="assistant", title="First")
    store.create_thread(robot="file-helper", title=None)
    model = ThreadListModel()
    model.set_threads(store.list_threads())
    assert model.rowCount() == 2
    titles = {model.index(r).data() for r in range(2)}
    assert "First" in titles and "Untitled thread" in titles
    row = model.row_of(a.id)
    assert "assistant" in model.index(row).data(ThreadListModel.SubtitleRole)
    model.set_hits([SearchHit(a.id, "First", "t1", "the [match] here"), SearchHit(a.id, "First", "t1", "dup")])
    assert model.searching and model.rowCount() == 1
    assert model.index(0).data(ThreadListModel.SubtitleRole) == "the [match] here"
    store.close()


def test_robot_model_shows_model_or_offline_demo() -> None:
    from ui.network.robots import DEMO_LABEL, RobotListModel
    from workspace.catalog import list_robots

    model = RobotListModel()
    model.set_robots(list_robots())
    assert {"assistant", "file-helper"} <= set(model.names())
    row = model.row_of("assistant")
    assert model.index(row).data(RobotListModel.ModelRole) == DEMO_LABEL
    model.default_model = "openai/gpt-4o-mini"
    assert model.index(row).data(RobotListModel.ModelRole) == "openai/gpt-4o-mini"


def test_markdown_split_stable_and_render() -> None:
    from ui import markdown

    text = "Para one.\n\n```python\nx = 1\n"
    assert markdown.split_stable(text) == len("Para one.\n\n")
    text += "```\nafter"
    assert markdown.split_stable(text) == len(text) - len("after")
    html = markdown.render("# Title\n\nSome **bold** and `code`.\n\n```python\ndef f():\n    return 1\n```\n\n- a\n- b")
    assert "<b>bold</b>" in html and "<code" in html and "<li" in html
    assert "<span" in html  # pygments highlighted the code
    assert "&lt;script&gt;" in markdown.render("<script>alert(1)</script>")
    bold_code = markdown.inline("in **`ui/app.py`**: *qasync*")
    assert "<b><code" in bold_code and "<i>qasync</i>" in bold_code


def test_bridge_coalesces_text_and_keeps_order(qapp_instance: object) -> None:
    from ui.bridge import RunBridge

    bridge = RunBridge(flush_ms=1000)
    seen: list[tuple[str, str]] = []
    bridge.text_appended.connect(lambda _r, _b, text: seen.append(("text", text)))
    bridge.view_event.connect(lambda e: seen.append(("tool", e.name)) if isinstance(e, ev.ToolUse) else None)
    batches: list[list[ev.Event]] = []
    bridge.events_batched.connect(batches.append)
    for i in range(500):  # a stream's tokens, stamped within the store's join window of the first
        bridge.feed(_e(ev.TextDelta, i, text="x", ts=100.0 + i * 1e-4))
    bridge.feed(_e(ev.ToolUse, 501, id="a", name="recall", input={}))
    bridge.feed(_e(ev.TextDelta, 502, text="yz"))
    bridge.flush()
    # the first delta of each stretch of text goes out at once, the rest is joined until the flush
    assert seen == [("text", "x"), ("text", "x" * 499), ("tool", "recall"), ("text", "yz")]
    # one batch, the deltas of each stretch one event in it (the first one's seq)
    assert len(batches) == 1
    assert [(type(e).__name__, e.seq, getattr(e, "text", None)) for e in batches[0]] == [
        ("TextDelta", 0, "x" * 500), ("ToolUse", 501, None), ("TextDelta", 502, "yz")]


async def test_bridge_says_running_with_the_first_event_and_for_a_run_with_none(qapp_instance: object) -> None:
    """The window's running-state updates wait for the run's first event: the request leaves first."""
    from ui.bridge import RunBridge

    bridge = RunBridge(flush_ms=1000)
    said: list[bool] = []
    bridge.running_changed.connect(said.append)

    async def one_event() -> AsyncIterator[ev.Event]:
        assert bridge.running and said == []  # running at once, said with the first event
        yield _e(ev.TextDelta, 1, text="hi")
        assert said == [True]

    async def no_event() -> AsyncIterator[ev.Event]:
        return
        yield  # an async generator that ends at once

    await bridge.consume(one_event())
    assert said == [True, False] and not bridge.running
    said.clear()
    await bridge.consume(no_event())
    assert said == [True, False]  # the views still see both


async def test_bridge_released_drops_the_held_text_and_stops_feeding_the_views(qapp_instance: object) -> None:
    """Another thread opens while a run streams: the run's held text does not reach the next thread's chat,
    the views hear the open thread has nothing running, and the run's later events go nowhere."""
    import asyncio

    from ui.bridge import RunBridge

    bridge = RunBridge(flush_ms=1000)
    said: list[bool] = []
    texts: list[str] = []
    bridge.running_changed.connect(said.append)
    bridge.view_event.connect(lambda e: texts.append(e.text) if isinstance(e, ev.TextDelta) else None)
    more = asyncio.Event()

    async def streaming() -> AsyncIterator[ev.Event]:
        yield _e(ev.TextDelta, 1, text="first ")  # the first words: out at once
        yield _e(ev.TextDelta, 2, text="held ")  # joined until the next flush
        await more.wait()
        yield _e(ev.TextDelta, 3, text="after")

    task = asyncio.ensure_future(bridge.consume(streaming()))
    for _ in range(20):
        await asyncio.sleep(0)
    assert texts == ["first "] and said == [True] and bridge.running
    bridge.release()
    assert said == [True, False] and not bridge.running
    more.set()
    assert await task is None
    bridge.flush()
    assert texts == ["first "] and said == [True, False]  # "held " and "after" went nowhere; no second False


def test_bridge_gives_views_every_event_in_order_with_text_joined(qapp_instance: object) -> None:
    from ui.bridge import RunBridge

    bridge = RunBridge(flush_ms=1000)
    seen: list[ev.Event] = []
    bridge.view_event.connect(seen.append)
    for i in range(1, 4):
        bridge.feed(_e(ev.TextDelta, i, text=f"{i} ", ts=100.0 + i))
    bridge.feed(_e(ev.ToolUse, 4, id="a", name="recall", input={}))
    bridge.feed(_e(ev.TextDelta, 5, text="tail"))
    bridge.flush()
    assert [type(e).__name__ for e in seen] == ["TextDelta", "TextDelta", "ToolUse", "TextDelta"]
    first, joined = seen[0], seen[1]
    assert isinstance(first, ev.TextDelta) and first.text == "1 " and first.seq == 1  # the first words: at once
    assert isinstance(joined, ev.TextDelta) and joined.text == "2 3 " and joined.seq == 3  # the last delta's seq
    # … and the first one's time, as the store's joined row has it (a live and a reopened thread time alike)
    assert joined.ts == 102.0
    assert isinstance(seen[3], ev.TextDelta) and seen[3].text == "tail"


def test_bridge_joins_thinking_at_the_time_of_its_first_delta(qapp_instance: object) -> None:
    from ui.bridge import RunBridge

    bridge = RunBridge(flush_ms=1000)
    seen: list[ev.Event] = []
    bridge.view_event.connect(seen.append)
    for i in range(1, 4):
        bridge.feed(_e(ev.ReasoningDelta, i, text=f"{i} ", ts=100.0 + i))
    bridge.flush()
    assert len(seen) == 1 and isinstance(seen[0], ev.ReasoningDelta)
    assert (seen[0].text, seen[0].seq, seen[0].ts) == ("1 2 3 ", 3, 101.0)


def test_bridge_gives_every_event_class_to_the_views_and_keeps_only_subscribed_signals(qapp_instance: object) -> None:
    """No event is dropped: each class of the Event union reaches ``view_event`` and the trace's batches;
    and every per-kind signal of the bridge has a subscriber in the window (no dead signals)."""
    import re
    import typing

    from PySide6.QtCore import Signal

    from ui.bridge import RunBridge, event_summary

    bridge = RunBridge(flush_ms=1000)
    viewed: list[str] = []
    batched: list[str] = []
    bridge.view_event.connect(lambda e: viewed.append(type(e).__name__))
    bridge.events_batched.connect(lambda batch: batched.extend(type(e).__name__ for e in batch))
    classes = typing.get_args(ev.Event)
    for seq, cls in enumerate(classes):
        event = _e(cls, seq)
        bridge.feed(event)
        bridge.flush()
        assert isinstance(event_summary(event), str)
    names = sorted(cls.__name__ for cls in classes)
    assert sorted(viewed) == names and sorted(batched) == names

    root = Path(__file__).resolve().parents[2] / "ui"
    sources = "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.py") if p.name != "bridge.py")
    signals = [n for n, v in vars(RunBridge).items() if isinstance(v, Signal)]
    assert "run_ended" in signals and "view_event" in signals
    unsubscribed = [n for n in signals if not re.search(rf"\.{n}\.connect\(", sources)]
    assert unsubscribed == [], f"signals of the bridge nothing in ui/ connects to: {unsubscribed}"


async def test_task_owner_reports_errors_and_treats_cancel_as_normal() -> None:
    from ui.tasks import TaskOwner

    errors: list[str] = []
    owner = TaskOwner(on_error=lambda name, exc: errors.append(f"{name}:{exc}"))

    async def boom() -> None:
        raise ValueError("bad")

    async def forever() -> None:
        await asyncio.sleep(100)

    owner.spawn(boom(), name="boom")
    owner.spawn(forever(), name="forever")
    await asyncio.sleep(0.01)
    assert errors == ["boom:bad"]
    assert len(owner) == 1
    await owner.shutdown()
    assert len(owner) == 0 and errors == ["boom:bad"]
    with pytest.raises(RuntimeError):
        owner.spawn(forever())


def test_mcp_servers_model_from_status_snapshots() -> None:
    from ui.mcp.model import McpServersModel
    from workspace.mcp.status import ServerState, ServerStatus, ToolInfo

    model = McpServersModel()
    model.set_statuses([ServerStatus(name="everything", state=ServerState.STOPPED, transport="stdio")])
    assert model.index(0, 1).data() == "stopped" and model.index(0, 2).data() == "—"
    tools = (ToolInfo(name="everything__echo", original="echo"),
             ToolInfo(name="everything__add", original="add", enabled=False))
    model.update(ServerStatus(name="everything", state=ServerState.READY, transport="stdio", tools=tools))
    model.update(ServerStatus(name="broken", state=ServerState.FAILED, reason="command not found: nope"))
    assert model.rowCount() == 2
    assert model.index(0, 1).data() == "ready" and model.index(0, 2).data() == "1/2"
    assert model.index(1, 1).data() == "failed" and "not found" in model.index(1, 0).data(Qt.ItemDataRole.ToolTipRole)


def test_table_models_find_rows_by_key_after_a_reset_and_tell_views_what_changed() -> None:
    """The shared table base (ui/widgets/table_model.py): a reset rebuilds each model's lookup by key, an insert
    and a change reach the views as one signal each, and headers come from the columns."""
    from ui.inspector.memory import MemoryModel
    from ui.inspector.tool_calls import ToolCallsModel
    from ui.mcp.model import McpServersModel
    from workspace.mcp.status import ServerState, ServerStatus

    memory = MemoryModel()
    memory.set_events([_e(ev.MemoryChanged, 1, key="a", value=1), _e(ev.MemoryChanged, 2, key="b", value=2)])
    assert memory.rowCount() == 2 and memory.entry("b") is not None
    assert [memory.headerData(c, Qt.Orientation.Horizontal) for c in range(memory.columnCount())] == \
        ["Key", "Value", "Writer", "Time"]
    changed: list[tuple[int, int]] = []
    memory.dataChanged.connect(lambda top, bottom: changed.append((top.row(), bottom.column())))
    memory.apply("b", 3, previous=2)
    assert changed == [(1, 3)] and memory.index(1, 1).data() == "3"
    memory.clear()
    assert memory.rowCount() == 0 and memory.entry("a") is None
    memory.apply("a", 5)  # after a clear the key is new again: a row of its own, not a stale row number
    assert memory.rowCount() == 1 and memory.index(0, 1).data() == "5"
    assert memory.index(0, 0).data(Qt.ItemDataRole.UserRole).key == "a"

    servers = McpServersModel()
    inserted: list[int] = []
    servers.rowsInserted.connect(lambda _parent, first, _last: inserted.append(first))
    servers.update(ServerStatus(name="one", state=ServerState.READY))
    servers.update(ServerStatus(name="two", state=ServerState.READY))
    assert inserted == [0, 1] and servers.status("two") is not None
    servers.set_statuses([ServerStatus(name="two", state=ServerState.FAILED)])
    assert servers.status("one") is None and servers.status("two").state == ServerState.FAILED
    servers.update(ServerStatus(name="two", state=ServerState.READY))
    assert servers.rowCount() == 1 and servers.index(0, 1).data() == "ready"

    calls = ToolCallsModel()
    calls.set_events([_e(ev.ToolUse, 1, id="c1", name="read_file", input={})])
    calls.add_event(_e(ev.ToolResult, 2, id="c1", name="read_file", payload="ok", duration=0.5))
    assert calls.rowCount() == 1 and calls.index(0, calls.COL_STATUS).data() == "ok"
    calls.clear()
    calls.add_event(_e(ev.ToolResult, 3, id="c1", name="read_file", payload="ok", duration=0.5))
    assert calls.rowCount() == 1  # a result with no call after a clear gets a row of its own
    assert calls.index(5, 0).data() is None  # past the rows: nothing
