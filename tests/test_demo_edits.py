"""The offline demo proposes an edit when asked to change a file, instead of only
reading it: the change goes to review like a model's would."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace import events as ev
from workspace.providers.demo import DEMO_LINE, DemoProvider
from workspace.session import Workspace


@pytest.mark.parametrize(("message", "added"), [
    ("add a line to notes.txt", DEMO_LINE),
    ('append "Bought milk." to notes.txt', "Bought milk."),
    ("please fix the typo in notes.txt", DEMO_LINE),
])
async def test_asked_to_change_a_file_the_demo_proposes_an_edit(tmp_path: Path, message: str, added: str) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("shopping\neggs\n", encoding="utf-8")
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=DemoProvider(delay=0))
    try:
        session = ws.new_thread("file-helper")
        run = session.send(message)
        await run.wait()
        assert (folder / "notes.txt").read_text(encoding="utf-8") == "shopping\neggs\n"  # waits for review
        files = session.changes.files
        assert [f.path for f in files] == ["notes.txt"]
        assert files[0].counts()["added"] == 1
        hunk = files[0].hunks[0]
        assert added in "".join(hunk.new_lines)
        text = " ".join(e.text for t in session.transcript() for e in t.events if isinstance(e, ev.Text))
        assert "without a language model" in text and "review" in text.lower()
    finally:
        await ws.aclose()


async def test_reading_a_file_still_only_reads_it(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("shopping\n", encoding="utf-8")
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=DemoProvider(delay=0))
    try:
        session = ws.new_thread("file-helper")
        run = session.send("read notes.txt")
        await run.wait()
        assert session.changes is None or not session.changes.files
        answer = "".join(e.text for e in run.events if isinstance(e, ev.Text))
        assert "(1 line)" in answer, answer  # one line, not "1 lines"
    finally:
        await ws.aclose()


async def test_the_review_note_in_front_of_a_message_is_no_request_to_edit(tmp_path: Path) -> None:
    from workspace.changes import compose_user_message

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("shopping\n", encoding="utf-8")
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=DemoProvider(delay=0))
    try:
        session = ws.new_thread("file-helper")
        note = "notes.txt: edit applied (1 hunk accepted); the change was written."
        await session.send(compose_user_message(note, "what happened in notes.txt?")).wait()
        assert session.changes is None or not session.changes.files  # read, not edited
    finally:
        await ws.aclose()


async def test_the_first_message_after_an_applied_edit_is_read_without_the_review_note(tmp_path: Path) -> None:
    """After a demo edit is applied, the next message carries the review outcome in front of it: the demo answers
    what the person typed (`run "ls"`: a command), not the note's words ("notes.txt ... applied": read the file)."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("shopping\n", encoding="utf-8")
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=DemoProvider(delay=0))
    try:
        session = ws.new_thread("file-helper")
        await session.send("add a line to notes.txt").wait()
        result = await session.apply_changes(accept_pending=True)
        assert result.ok and DEMO_LINE in (folder / "notes.txt").read_text(encoding="utf-8")
        run = session.send('run "ls"')
        await run.wait()
        calls = [e for e in run.events if isinstance(e, ev.ToolUse) and not e.nested]
        assert calls and calls[0].name == "run_command", [(c.name, c.input) for c in calls]
        assert calls[0].input == {"command": "ls"}
    finally:
        await ws.aclose()
