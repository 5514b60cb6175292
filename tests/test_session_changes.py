"""A thread with a folder open: proposals wait for review, and the model hears the outcome."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from workspace import events as ev
from workspace.changes import split_user_message
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.session import Workspace
from workspace.session.thread import superseded_note


async def test_review_outcome_reaches_the_next_model_turn(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n", encoding="utf-8")
    provider = ScriptedProvider([
        [ToolCall("edit_file", {"path": "a.txt", "search": "two", "replace": "TWO"}),
         ToolCall("edit_file", {"path": "a.txt", "search": "nine", "replace": "NINE"})],
        "I proposed two edits.",
        "Thanks for the review.",
    ])
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=provider)
    try:
        session = ws.new_thread("file-helper")
        run = session.send("capitalise two and nine")
        await run.wait()
        assert (folder / "a.txt").read_text(encoding="utf-8").startswith("one\ntwo\n")  # nothing written yet
        hunks = session.changes.hunks()
        assert len(hunks) == 2
        session.changes.accept(hunks[0].id)
        session.changes.reject(hunks[1].id, reason="keep nine lower-case")
        result = await session.apply_changes()
        assert not result.conflicts
        text = (folder / "a.txt").read_text(encoding="utf-8")
        assert "TWO" in text and "nine" in text and "NINE" not in text

        run = session.send("ok, continue")
        await run.wait()
        last_user = provider.history[-1].messages[-1]
        note, typed = split_user_message(str(last_user.content))
        assert typed == "ok, continue"
        assert note is not None and "rejected" in note and "keep nine lower-case" in note
        kinds = [type(e) for t in session.transcript() for e in t.events]
        assert ev.ChangeProposed in kinds and ev.ChangeDecided in kinds
        assert session.thread.title == "capitalise two and nine"
        # Undo restores the file byte for byte, and redo re-applies it.
        history = session.change_history()
        history.undo()
        assert (folder / "a.txt").read_text(encoding="utf-8").startswith("one\ntwo\n")
        history.redo()
        assert "TWO" in (folder / "a.txt").read_text(encoding="utf-8")
    finally:
        await ws.aclose()


async def test_the_decision_is_recorded_on_the_threads_current_turn_as_stored(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("one\n", encoding="utf-8")
    provider = ScriptedProvider([
        [ToolCall("edit_file", {"path": "a.txt", "search": "one", "replace": "ONE"})],
        "Proposed.",
    ])
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=provider)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise").wait()
        first_turn = session.thread.current_turn_id
        assert first_turn is not None
        # Another window continues the thread behind this session's back.
        later = ws.store.add_turn(session.thread_id, user_text="from elsewhere", parent_turn_id=first_turn)
        session.changes.accept_all()
        await session.apply_changes()
        assert [type(e) for e in ws.store.turn_events(later.id)] == [ev.ChangeDecided]
        assert ev.ChangeDecided not in [type(e) for e in ws.store.turn_events(first_turn)]
    finally:
        await ws.aclose()


async def test_switching_folders_keeps_pending_changes_with_their_folder(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "a.txt").write_text(f"{folder.name}\n", encoding="utf-8")
    provider = ScriptedProvider([
        [ToolCall("edit_file", {"path": "a.txt", "search": "first", "replace": "FIRST"})],
        "Proposed.",
        [ToolCall("edit_file", {"path": "a.txt", "search": "second", "replace": "SECOND"})],
        "Proposed here too.",
    ])
    ws = Workspace(folder=first, db_path=tmp_path / "db.sqlite", provider=provider)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise").wait()
        pending_id = session.changes.id
        with pytest.raises(ValueError, match="no such folder"):
            ws.set_folder(tmp_path / "missing")
        assert ws.folder == first.resolve()
        ws.set_folder(second)  # the pending set is kept for the first folder
        assert session.changes is None
        await session.send("now here").wait()
        assert session.changes.folder == second.resolve() and len(session.changes.pending_files) == 1
        ws.set_folder(first)  # back: the first folder's set, as it was
        assert session.changes is not None and session.changes.id == pending_id
        session.changes.accept_all()
        await session.apply_changes()
        assert (first / "a.txt").read_text(encoding="utf-8") == "FIRST\n"
        assert (second / "a.txt").read_text(encoding="utf-8") == "second\n"
        ws.set_folder(second)
        assert session.changes is not None and session.changes.pending_files
        assert sorted(f for _t, f in ws.store.change_set_folders(session.thread_id)) == sorted(
            [str(first.resolve()), str(second.resolve())])  # first: its outcome not yet heard
    finally:
        await ws.aclose()


async def test_proposed_changes_survive_quitting_and_reopening(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n", encoding="utf-8")
    db = tmp_path / "db.sqlite"
    provider = ScriptedProvider([
        [ToolCall("edit_file", {"path": "a.txt", "search": "two", "replace": "TWO"}),
         ToolCall("edit_file", {"path": "a.txt", "search": "nine", "replace": "NINE"})],
        "I proposed two edits.",
    ])
    ws = Workspace(folder=folder, db_path=db, provider=provider)
    session = ws.new_thread("file-helper")
    await session.send("capitalise two and nine").wait()
    thread_id = session.thread_id
    first, second = session.changes.hunks()
    session.changes.reject(second.id, reason="keep nine")  # decided, not applied, then the app quits
    await ws.aclose()

    # Another folder open: the set waits for its own folder.
    other = tmp_path / "other"
    other.mkdir()
    ws = Workspace(folder=other, db_path=db, provider=ScriptedProvider(["Hello from the other folder."]))
    elsewhere = ws.open_thread(thread_id)
    assert elsewhere.changes is None
    await elsewhere.send("hi").wait()  # a run there keeps its own (empty) set; the first folder's stays
    await ws.aclose()

    provider = ScriptedProvider(["Noted."])
    ws = Workspace(folder=folder, db_path=db, provider=provider)
    try:
        session = ws.open_thread(thread_id)
        assert session.changes is not None
        assert [h.id for h in session.changes.hunks()] == [first.id, second.id]
        assert session.changes.hunks()[1].status == "rejected"
        session.changes.accept(first.id)
        await session.apply_changes()
        text = (folder / "a.txt").read_text(encoding="utf-8")
        assert "TWO" in text and "NINE" not in text
        await session.send("thanks").wait()
        note, _typed = split_user_message(str(provider.history[-1].messages[-1].content))
        assert note is not None and "keep nine" in note
        # Settled and heard: nothing kept (the run's end saves off the event loop, a moment later).
        for _ in range(200):
            if ws.store.load_change_set(thread_id, folder.resolve()) is None:
                break
            await asyncio.sleep(0.01)
        assert ws.store.load_change_set(thread_id, folder.resolve()) is None
    finally:
        await ws.aclose()


def _two_edits_workspace(tmp_path: Path, *replies: object) -> tuple[Path, ScriptedProvider, Workspace]:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n", encoding="utf-8")
    provider = ScriptedProvider([
        [ToolCall("edit_file", {"path": "a.txt", "search": "two", "replace": "TWO"}),
         ToolCall("edit_file", {"path": "a.txt", "search": "nine", "replace": "NINE"})],
        "I proposed two edits.", *replies,
    ])
    return folder, provider, Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=provider)


async def test_apply_then_undo_tells_the_model_the_change_was_undone(tmp_path: Path) -> None:
    folder, provider, ws = _two_edits_workspace(tmp_path, "Noted.")
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        original = (folder / "a.txt").read_bytes()
        first, second = session.changes.hunks()
        session.changes.accept(first.id)
        session.changes.reject(second.id, reason="keep nine")
        await session.apply_changes()
        result = await session.undo_changes()
        assert result.ok and (folder / "a.txt").read_bytes() == original
        await session.send("go on").wait()
        note, typed = split_user_message(str(provider.history[-1].messages[-1].content))
        assert typed == "go on" and note is not None
        assert "partly applied" not in note and "undone" in note
        assert "none of this change is on disk" in note
    finally:
        await ws.aclose()


async def test_undo_after_the_model_heard_the_outcome_is_told_at_the_next_message(tmp_path: Path) -> None:
    folder, provider, ws = _two_edits_workspace(tmp_path, "Thanks.", "Noted.")
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        original = (folder / "a.txt").read_bytes()
        session.changes.accept_all()
        await session.apply_changes()
        await session.send("thanks").wait()
        note, _typed = split_user_message(str(provider.history[-1].messages[-1].content))
        assert note is not None and "accepted and written" in note
        await session.undo_changes()
        assert (folder / "a.txt").read_bytes() == original
        session.save_changes()
        assert session.changes.has_undelivered_outcome
        await session.send("what now?").wait()
        note, typed = split_user_message(str(provider.history[-1].messages[-1].content))
        assert typed == "what now?" and note is not None
        assert "a.txt" in note and "undid" in note and "accepted and written" not in note
    finally:
        await ws.aclose()


async def test_undo_then_redo_before_the_next_message_tells_what_is_on_disk(tmp_path: Path) -> None:
    folder, provider, ws = _two_edits_workspace(tmp_path, "Noted.")
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two and nine").wait()
        session.changes.accept_all()
        await session.apply_changes()
        await session.undo_changes()
        await session.redo_changes()
        assert "TWO" in (folder / "a.txt").read_text(encoding="utf-8")
        await session.send("go on").wait()
        note, _typed = split_user_message(str(provider.history[-1].messages[-1].content))
        assert note is not None and "accepted and written" in note and "undone" not in note
    finally:
        await ws.aclose()


async def test_asking_again_answers_from_the_folder_not_from_the_replaced_answers_proposal(tmp_path: Path) -> None:
    """↻ and edit & resend: the proposal the replaced answer made (still waiting for review) is discarded, so the
    new answer edits the folder as it is (reading through it, the same edit failed: "search text not found")."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    edit = [ToolCall("edit_file", {"path": "a.txt", "search": "two", "replace": "TWO"})]
    provider = ScriptedProvider([edit, "Proposed.", edit, "Proposed again.", edit, "Proposed once more."])
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=provider)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two").wait()
        first = session.thread.current_turn_id
        assert first is not None and session.changes is not None and session.superseded == []
        with pytest.raises(ValueError, match="empty"):  # refused before anything is given up
            session.edit_and_resend(first, "  ")
        assert session.changes.pending_paths() == {"a.txt": "modified"}
        for fork in (lambda: session.regenerate(first), lambda: session.edit_and_resend(first, "capitalise it")):
            await fork().wait()
            assert session.superseded == ["a.txt"]
            turn = session.thread.current_turn_id
            assert turn is not None
            errors = [e for e in ws.store.turn_events(turn) if isinstance(e, ev.ToolError)]
            assert errors == []
            assert [fc.after for fc in session.changes.pending_files] == [b"one\nTWO\nthree\n"]
        assert (folder / "a.txt").read_text(encoding="utf-8") == "one\ntwo\nthree\n"  # nothing written
    finally:
        await ws.aclose()


async def test_asking_again_discards_only_the_replaced_answers_proposals_from_a_mixed_set(tmp_path: Path) -> None:
    """One change set waiting for review holds an earlier turn's proposals (a.txt, c.txt) and the replaced answer's
    (b.txt, c.txt again): ↻ discards the replaced answer's (b.txt, without telling the model: the new branch never
    made it; c.txt whole, one change composed of both, and the model is told: its branch had proposed it) and keeps
    a.txt waiting for review. Before, the whole set was kept, the replaced answer's proposals in it."""
    folder = tmp_path / "project"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")

    def edit(name: str, search: str, replace: str) -> ToolCall:
        return ToolCall("edit_file", {"path": f"{name}.txt", "search": search, "replace": replace})

    provider = ScriptedProvider([[edit("a", "two", "TWO"), edit("c", "one", "ONE")], "Proposed.",
                                 [edit("b", "two", "TWO"), edit("c", "three", "THREE")], "Proposed more.",
                                 [edit("b", "two", "2")], "Proposed again."])
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=provider)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise a and c").wait()
        await session.send("and b and c").wait()
        second = session.thread.current_turn_id
        assert second is not None and session.changes is not None
        assert session.changes.pending_paths() == {"a.txt": "modified", "c.txt": "modified", "b.txt": "modified"}
        await session.regenerate(second).wait()
        assert sorted(session.superseded) == ["b.txt", "c.txt"]
        assert session.superseded_kept == ["a.txt"] and session.superseded_mixed == ["c.txt"]
        # The new answer edited b.txt as the folder has it (not through the replaced proposal: no "not found").
        turn = session.thread.current_turn_id
        assert turn is not None
        assert [e for e in ws.store.turn_events(turn) if isinstance(e, ev.ToolError)] == []
        pending = {fc.path: fc.after for fc in session.changes.pending_files}
        assert pending == {"a.txt": b"one\nTWO\nthree\n", "b.txt": b"one\n2\nthree\n"}
        # The model heard of c.txt (its branch's proposal, gone), not of b.txt (never its own).
        asked = [m for m in provider.history[-1].messages if m.role == "user"][-1]
        note, _typed = split_user_message(str(asked.content))
        assert note is not None and "c.txt" in note and "b.txt" not in note
        assert all((folder / f"{n}.txt").read_text(encoding="utf-8") == "one\ntwo\nthree\n" for n in "abc")
        assert superseded_note("file-helper", session.superseded, kept=session.superseded_kept,
                               mixed=session.superseded_mixed) == (
            "file-helper's proposed changes to b.txt, c.txt were discarded: it answers again from the folder as it "
            "is. c.txt also had an earlier answer's changes, discarded with them. An earlier answer's changes to "
            "a.txt still wait for review.")
    finally:
        await ws.aclose()


async def test_asking_again_keeps_a_proposal_an_earlier_turn_made(tmp_path: Path) -> None:
    """A proposal of a turn the new branch follows is not the replaced answer's: it stays waiting for review."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    provider = ScriptedProvider([[ToolCall("edit_file", {"path": "a.txt", "search": "two", "replace": "TWO"})],
                                 "Proposed.", "Nothing to change.", "Still nothing."])
    ws = Workspace(folder=folder, db_path=tmp_path / "db.sqlite", provider=provider)
    try:
        session = ws.new_thread("file-helper")
        await session.send("capitalise two").wait()
        await session.send("anything else?").wait()
        second = session.thread.current_turn_id
        assert second is not None
        await session.regenerate(second).wait()
        assert session.superseded == []
        assert session.changes is not None and session.changes.pending_paths() == {"a.txt": "modified"}
    finally:
        await ws.aclose()
