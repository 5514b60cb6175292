"""Exports (Markdown, RobotLab JSON results, JSONL events), import, and `robotlab threads`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workspace import events as ev
from workspace.cli import main
from workspace.exports import (
    ImportFormatError,
    export_events_jsonl,
    export_markdown,
    export_results_json,
    export_thread,
    import_results_json,
)
from workspace.messages import Message
from workspace.persistence import Store
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.result import RobotResult
from workspace.session import Workspace

ROBOT = """\
---
name: helper
description: A robot for the tests
tools: [remember, recall]
---
You help.
"""
SECRET = "sk-test-0123456789abcdefXYZ"
EXPORT_KEYS = {"robot_name", "output", "tool_calls", "created_at", "id", "checksum", "stop_reason"}


@pytest.fixture(autouse=True)
def helper_robot(robotlab_home: Path) -> None:
    path = robotlab_home / "config" / "robots" / "helper.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ROBOT, encoding="utf-8")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "workspace.db"


@pytest.fixture
async def thread(db: Path) -> tuple[str, str]:
    """A thread with text, two tool calls (one failing), memory, usage, a fork, a change and a stop."""
    provider = ScriptedProvider()
    provider.enqueue(
        ["I will note it. ", ToolCall("remember", {"key": "city", "value": "Lisbon"}, id="c1"),
         ToolCall("recall", {"wrong": "argument"}, id="c2")],
        "Noted: **Lisbon** with ```fences``` inside.",
        "Another take.",
        "The edited answer.",
    )
    workspace = Workspace(db_path=db, provider=provider)
    session = workspace.new_thread("helper")
    first = session.send("Remember Lisbon")
    async for _ in first:
        pass
    second = session.send("Anything else?")
    await second.wait()
    store = workspace.store
    store.append_events(session.thread_id, second.turn_id, [
        ev.ChangeProposed(run_id=second.run_id, robot="helper", seq=90, change_set_id="cs1",
                          files=[{"path": "notes.md", "action": "modify", "added": 2, "removed": 1}]),
        ev.ChangeDecided(run_id=second.run_id, robot="helper", seq=91, change_set_id="cs1",
                         outcome=[{"path": "notes.md", "accepted": [0], "rejected": [1], "reason": "too long"}],
                         checkpoint_id="cp7"),
    ])
    edited = session.edit_and_resend(second.turn_id, "Anything more?")
    await edited.wait()
    await workspace.aclose()
    return session.thread_id, first.turn_id


async def test_markdown_has_messages_tool_calls_results_errors_and_usage(db: Path, thread: tuple[str, str]) -> None:
    thread_id, _ = thread
    with Store(db) as store:
        md = export_markdown(store, thread_id)
        second_branch = store.siblings(store.path(thread_id)[-1].id)[0].id
        old = export_markdown(store, thread_id, leaf_turn_id=second_branch)
    assert md.startswith("# Remember Lisbon\n")
    assert "- **Robot:** helper" in md and "- **Model:** Scripted provider (test double)" in md
    assert "## You\n" in md and "Remember Lisbon" in md
    assert "I will note it." in md and "The edited answer." in md
    assert "Another take." not in md  # another branch
    assert "## You (version 2 of 2)" in md
    assert "**Tool call** `remember`" in md and '"value": "Lisbon"' in md
    assert "**Result** of `remember`" in md and '"stored": true' in md
    assert "**Error** from `recall`" in md and "wrong" in md
    assert "*Memory* `city` by helper" in md
    assert "*Usage:" in md and "- **Usage:**" in md
    assert "````json" not in md or md.count("````") % 2 == 0
    # The other branch holds the change proposal and decision.
    assert "**Change proposed** `cs1`" in old and "`notes.md` (modify, +2 −1)" in old
    assert "accepted hunks [0], rejected hunks [1] (too long)" in old and "`cp7`" in old
    assert "Another take." in old and "## You (version 1 of 2)" in old


async def test_results_json_is_robotlab_shape_one_per_run(db: Path, thread: tuple[str, str]) -> None:
    thread_id, _ = thread
    with Store(db) as store:
        items = json.loads(export_results_json(store, thread_id))
        bare = json.loads(export_results_json(store, thread_id, with_prompt=False))
    assert len(items) == 2
    for item, plain in zip(items, bare, strict=True):
        assert set(plain) == EXPORT_KEYS
        assert set(item) == EXPORT_KEYS | {"prompt"}
        result = RobotResult.from_dict(item)
        assert result.checksum == item["checksum"]
        assert result.export() == plain
    first = RobotResult.from_dict(items[0])
    assert [t.name for m in first.output if m.is_tool_call for t in m.tools] == ["remember", "recall"]
    assert [m.is_error for m in first.tool_calls] == [False, True]
    assert items[0]["prompt"] == [{"type": "text", "role": "user", "content": "Remember Lisbon"}]
    assert first.last_text_content.startswith("Noted:")


async def test_events_jsonl_round_trips(db: Path, thread: tuple[str, str]) -> None:
    thread_id, first_turn = thread
    with Store(db) as store:
        lines = export_events_jsonl(store, thread_id).splitlines()
        everything = export_events_jsonl(store, thread_id, all_branches=True).splitlines()
        assert export_thread(store, thread_id, "jsonl").splitlines() == lines
    events = [ev.event_from_dict(json.loads(line)) for line in lines]
    assert events[0].kind == "run_started" and json.loads(lines[0])["turn_id"] == first_turn
    assert sum(1 for e in events if e.terminal) == 2
    assert any(e.kind == "tool_use" for e in events)
    assert len(everything) > len(lines)
    assert sum(1 for line in everything if json.loads(line)["kind"] == "change_proposed") == 1


async def test_import_round_trip(db: Path, thread: tuple[str, str]) -> None:
    thread_id, _ = thread
    with Store(db) as store:
        text = export_results_json(store, thread_id)
        imported = import_results_json(store, text)
        assert imported.id != thread_id and imported.turn_count == 2 and imported.robot == "helper"
        assert imported.title == "Remember Lisbon"
        assert [t.user_text for t in store.path(imported.id)] == ["Remember Lisbon", "Anything more?"]
        assert all(t.status == "finished" for t in store.path(imported.id))

        def dicts(messages: list[Message]) -> list[dict[str, Any]]:
            return [m.to_dict() for m in messages]

        assert dicts(store.history_messages(imported.id)) == dicts(store.history_messages(thread_id))
        again = json.loads(export_results_json(store, imported.id))
        assert again == json.loads(text)
        md = export_markdown(store, imported.id)
        assert "**Tool call** `remember`" in md and "**Error** from `recall`" in md
        # Bare RobotLab exports (no prompt) import too, with an explicit robot and title.
        bare = export_results_json(store, thread_id, with_prompt=False)
        other = import_results_json(store, bare, robot="assistant", title="From RobotLab")
        assert (other.robot, other.title, other.turn_count) == ("assistant", "From RobotLab", 2)
        assert [t.user_text for t in store.path(other.id)] == ["", ""]
        # One result, or a RobotLab memory export with "results".
        one = json.loads(bare)[0]
        assert import_results_json(store, json.dumps(one)).turn_count == 1
        assert import_results_json(store, json.dumps({"data": {}, "results": [one]})).turn_count == 1


def test_import_rejects_what_is_not_results(db: Path) -> None:
    with Store(db) as store:
        with pytest.raises(ImportFormatError, match="Not valid JSON"):
            import_results_json(store, "{nope")
        with pytest.raises(ImportFormatError, match="Expected RobotLab results JSON"):
            import_results_json(store, '"text"')
        with pytest.raises(ImportFormatError, match="Item 1"):
            import_results_json(store, json.dumps([{"robot_name": "a", "output": []}, {"x": 1}]))
        with pytest.raises(ImportFormatError, match="Item 0 is not a valid RobotLab result"):
            import_results_json(store, json.dumps([{"robot_name": "a", "output": [{"type": "nope"}]}]))
        with pytest.raises(ImportFormatError, match="no results"):
            import_results_json(store, "[]")
        assert store.list_threads() == []


def test_exports_never_contain_secrets(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(db) as store:  # stored before the key was known to this process...
        t = store.create_thread(robot="helper", title="secret")
        turn = store.add_turn(t.id, user_text=f"use {SECRET}", parent_turn_id=None)
        store.append_events(t.id, turn.id, [
            ev.ToolUse(run_id="r", robot="helper", seq=1, id="c", name="http", input={"token": SECRET}),
            ev.RunFinished(run_id="r", robot="helper", seq=2,
                           result=RobotResult("helper", [{"type": "text", "role": "assistant", "content": SECRET}])),
        ])
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)  # ...exports still redact it
        for fmt in ("md", "json", "jsonl"):
            out = export_thread(store, t.id, fmt)
            assert SECRET not in out and "<ANTHROPIC_API_KEY>" in out, fmt


# -- the command line -------------------------------------------------------------------------------


async def test_cli_list_export_search_import(db: Path, thread: tuple[str, str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    thread_id, _ = thread
    assert main(["threads", "list", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert thread_id[:8] in out and "Remember Lisbon" in out

    assert main(["threads", "list", "--json", "--db", str(db)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["id"] == thread_id and listed[0]["turns"] == 3

    target = tmp_path / "out" / "thread.json"
    assert main(["threads", "export", thread_id[:6], "--format", "json", "-o", str(target), "--db", str(db)]) == 0
    assert len(json.loads(target.read_text())) == 2
    assert main(["threads", "export", thread_id, "--db", str(db)]) == 0
    assert "**Tool call** `remember`" in capsys.readouterr().out
    assert main(["threads", "export", thread_id, "-f", "jsonl", "--db", str(db)]) == 0
    assert all(json.loads(line) for line in capsys.readouterr().out.splitlines())

    assert main(["threads", "search", "lisbon", "--db", str(db)]) == 0
    assert thread_id[:8] in capsys.readouterr().out
    assert main(["threads", "search", "zebra", "--db", str(db)]) == 1
    assert "Nothing matches 'zebra'" in capsys.readouterr().err
    assert main(["threads", "search", "remember", "--json", "--db", str(db)]) == 0
    assert {h["kind"] for h in json.loads(capsys.readouterr().out)} >= {"user", "tool"}

    assert main(["threads", "import", str(target), "--title", "Back again", "--db", str(db)]) == 0
    assert "Back again" in capsys.readouterr().out
    with Store(db) as store:
        assert len(store.list_threads()) == 2


async def test_cli_import_of_a_jsonl_export_says_to_export_json_and_success_counts_one_thread(
        db: Path, thread: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread_id, _ = thread
    lines = tmp_path / "thread.jsonl"
    assert main(["threads", "export", thread_id, "-f", "jsonl", "-o", str(lines), "--db", str(db)]) == 0
    one = tmp_path / "one.jsonl"
    one.write_text(lines.read_text().splitlines()[0] + "\n")  # a one-line export is one JSON object
    for path in (lines, one):
        capsys.readouterr()
        assert main(["threads", "import", str(path), "--db", str(db)]) == 2
        err = capsys.readouterr().err
        assert "JSONL event export" in err and "robotlab threads export ID --format json" in err, err
        assert "Extra data" not in err
    whole = tmp_path / "thread.json"
    assert main(["threads", "export", thread_id, "--format", "json", "-o", str(whole), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["threads", "import", str(whole), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Imported 1 thread, ") and ": 2 turns, one per result" in out, out
    single = tmp_path / "single.json"
    single.write_text(json.dumps(json.loads(whole.read_text())[:1]))
    assert main(["threads", "import", str(single), "--db", str(db)]) == 0
    assert ": 1 turn, one per result" in capsys.readouterr().out


def test_cli_errors_name_the_fix(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["threads", "--db", str(db)]) == 2  # reading never creates a database
    assert f"no database at {db}" in capsys.readouterr().err and not db.exists()
    Store.open(db).close()
    assert main(["threads", "--db", str(db)]) == 0
    assert "No threads yet" in capsys.readouterr().out
    assert main(["threads", "export", "abc", "--db", str(db)]) == 2
    assert "robotlab threads list" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "results"}')
    assert main(["threads", "import", str(bad), "--db", str(db)]) == 2
    assert "Expected RobotLab results JSON" in capsys.readouterr().err
    assert main(["threads", "import", str(tmp_path / "missing.json"), "--db", str(db)]) == 2
    assert "Cannot read" in capsys.readouterr().err
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"garbage" * 1000)
    assert main(["threads", "list", "--db", str(corrupt)]) == 2
    assert str(corrupt) in capsys.readouterr().err


def test_cli_recovers_a_damaged_database_keeping_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "w.db"
    bad.write_bytes(b"garbage, not sqlite" * 100)
    assert main(["threads", "--db", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not a usable" in err and "robotlab threads recover" in err
    assert main(["threads", "recover", "--db", str(bad)]) == 0
    out = capsys.readouterr().out
    kept = list(tmp_path.glob("w.db.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"garbage") and str(kept[0]) in out
    assert main(["threads", "--db", str(bad)]) == 0 and "No threads yet" in capsys.readouterr().out
    assert main(["threads", "recover", "--db", str(bad)]) == 0 and "is fine" in capsys.readouterr().out


async def test_markdown_shows_multi_line_strings_as_text_not_escaped_json(db: Path) -> None:
    provider = ScriptedProvider()
    provider.enqueue([ToolCall("remember", {"key": "poem", "value": 'roses are "red"\nviolets are blue'}, id="p1")],
                     "Kept.")
    workspace = Workspace(db_path=db, provider=provider)
    session = workspace.new_thread("helper")
    run = session.send("keep the poem")
    await run.wait()
    await workspace.aclose()
    with Store(db) as store:
        md = export_markdown(store, session.thread_id)
    assert '"value": "<text below: 2 lines>"' in md
    assert '`value`:\n\n```text\nroses are "red"\nviolets are blue\n```' in md
    assert "\\n" not in md and '\\"' not in md
