"""The change review in the window, end to end on a ScriptedProvider and a real temp folder.

A robot proposes edits; the user decides in the Changes dock and the diff view (keys included),
applies, and the next model turn hears the outcome; conflicts show the three versions and write
nothing; undo / redo round-trip byte for byte; auto and read-only modes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from tests.fakes.app_window import close_app, wait_until
from workspace.changes import ACCEPTED, REJECTED, split_user_message
from workspace.providers.testing import ToolCall

#: CRLF and no final newline: untouched bytes must survive exactly.
NOTES = b"alpha\r\nbeta\r\ngamma\r\ndelta\r\nepsilon\r\nzeta\r\neta\r\ntheta\r\niota\r\nkappa\r\nlambda\r\nmu"
CODE = "def area(w, h):\n    return w * h\n\n\ndef main():\n    print(area(2, 3))\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_bytes(NOTES)
    (root / "app.py").write_text(CODE, encoding="utf-8")
    return root


async def _open(provider: Any, db_path: Path, folder: Path, *, mode: str = "review") -> Any:
    from ui.app import Application
    from workspace.config import load_config

    config = load_config(folder, overrides={"review": {"mode": mode}})
    root = Application(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config)
    root.controller.set_robot("file-helper")  # the shipped robot with the file tools
    root.window.resize(1300, 850)
    root.window.show()
    return root


@pytest.fixture
async def app(provider: Any, db_path: Path, folder: Path) -> AsyncIterator[Any]:
    root = await _open(provider, db_path, folder)
    try:
        yield root
    finally:
        await close_app(root)


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


async def _settled(pane: Any) -> None:
    await asyncio.sleep(0)
    await pane.commands.wait_idle()
    await asyncio.sleep(0.02)


def _propose_two_files(provider: Any) -> None:
    # One call a turn: calls of one turn run concurrently, so the files' order would be the order they finished.
    provider.enqueue(
        [ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"}, id="e1")],
        [ToolCall("edit_file", {"path": "notes.txt", "search": "kappa", "replace": "KAPPA"}, id="e2")],
        [ToolCall("edit_file", {"path": "app.py", "search": "    return w * h\n",
                                "replace": "    \"\"\"Area of a rectangle.\"\"\"\n    return w * h\n"}, id="e3")],
        "I proposed three edits in two files.",
    )


async def test_accept_one_hunk_reject_another_apply_and_the_robot_hears_it(app: Any, provider: Any,
                                                                          folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("tidy up the notes and document area()")
    await _idle(app)
    # nothing touched disk; the card offers the review; the dock knows the set
    assert (folder / "notes.txt").read_bytes() == NOTES
    card = next(w for w in window.chat.items() if type(w).__name__ == "ChangeCard")
    assert {f["path"] for f in card.files} == {"notes.txt", "app.py"} and card.status == "pending"
    card.review_button.click()
    assert window.docks["changes"].isVisible()
    assert pane.model.rowCount() == 2
    assert window.docks["changes"].windowTitle() == "Changes · 3"
    changes = app.controller.session.changes
    beta, kappa, doc = (h.id for h in changes.hunks())
    view = pane.view
    assert view.current_hunk.id == beta
    # a (accept) on "beta", r (reject) with a reason on "kappa", the file button rejects app.py
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_A)
    assert changes.hunk(beta).status == ACCEPTED and view.current_hunk.id == kappa
    QTest.keyClick(view, Qt.Key.Key_R)
    view.overlay.reason.setText("kappa stays lower-case")
    QTest.keyClick(view.overlay.reason, Qt.Key.Key_Return)
    assert changes.hunk(kappa).status == REJECTED
    assert view.fc.path == "app.py"  # moved on to the next undecided hunk, in the next file
    pane.reject_file_button.click()
    assert changes.hunk(doc).status == REJECTED
    assert "0 pending, 1 accepted, 2 rejected" in pane.summary.text()
    pane.apply_button.click()
    await _settled(pane)
    # the merge: only "beta" changed; CRLF, the missing final newline and the rest byte-identical
    assert (folder / "notes.txt").read_bytes() == NOTES.replace(b"beta", b"BETA")
    assert (folder / "app.py").read_text(encoding="utf-8") == CODE
    assert [pane.model.file(r).state for r in range(2)] == ["applied", "rejected"]
    assert card.status == "decided" and "1 hunk applied, 2 rejected" in card.note.text()
    assert card.undo_button.isVisible()
    assert pane.undo_button.isEnabled() and not pane.redo_button.isEnabled()
    # the next model turn starts with the outcome
    provider.enqueue("Understood.")
    window.runs.send("thanks")
    await _idle(app)
    note, typed = split_user_message(str(provider.history[-1].messages[-1].content))
    assert typed == "thanks"
    assert note is not None and "kappa stays lower-case" in note and "partly applied" in note
    assert "app.py: edit rejected" in note
    # the chat shows the note as a collapsed block, not raw text
    last = window.chat.user_messages()[-1]
    assert last.text == "thanks" and last.note_block is not None and not last.note_block.expanded
    assert "<change-review>" not in last.label.text()


async def test_a_conflict_shows_three_versions_and_writes_nothing(app: Any, provider: Any, folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    provider.enqueue([ToolCall("edit_file", {"path": "app.py", "search": "print(area(2, 3))",
                                             "replace": "print(area(4, 5))"})], "Done.")
    window.runs.send("use bigger numbers")
    await _idle(app)
    window.docks.review_changes(app.controller.session.changes.id)
    # someone edits the file meanwhile (another line)
    edited = CODE.replace("def area(w, h):", "def area(w: int, h: int) -> int:")
    (folder / "app.py").write_text(edited, encoding="utf-8")
    pane.model.accept_all()
    pane.apply_button.click()
    await _settled(pane)
    assert (folder / "app.py").read_text(encoding="utf-8") == edited  # nothing written
    assert pane.stack.currentWidget() is pane.conflicts
    view = pane.conflicts
    assert view.base_edit.toPlainText() == CODE
    assert view.disk_edit.toPlainText() == edited
    assert "print(area(4, 5))" in view.proposed_edit.toPlainText()
    assert view.base_edit.toPlainText() != view.disk_edit.toPlainText()
    assert app.controller.session.changes.pending_files  # still pending
    # merging keeps both changes, then applies
    view.buttons["rebase"].click()
    await _settled(pane)
    text = (folder / "app.py").read_text(encoding="utf-8")
    assert "def area(w: int, h: int) -> int:" in text and "print(area(4, 5))" in text
    assert pane.stack.currentWidget() is pane.view


async def test_skipping_a_conflict_leaves_the_file_and_applies_the_rest(app: Any, provider: Any,
                                                                       folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    (folder / "notes.txt").write_bytes(NOTES + b"\r\nnu")
    pane.model.accept_all()
    pane.apply()
    await _settled(pane)
    assert pane.conflicts.current.path == "notes.txt"
    assert (folder / "app.py").read_text(encoding="utf-8") == CODE  # refused as a whole: nothing written
    pane.conflicts.buttons["skip"].click()
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == NOTES + b"\r\nnu"
    assert '"""Area of a rectangle."""' in (folder / "app.py").read_text(encoding="utf-8")


async def test_undo_and_redo_from_the_dock_round_trip_byte_for_byte(app: Any, provider: Any, folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    pane.accept_all_button.click()
    pane.apply_button.click()
    await _settled(pane)
    after_notes, after_code = (folder / "notes.txt").read_bytes(), (folder / "app.py").read_bytes()
    assert after_notes == NOTES.replace(b"beta", b"BETA").replace(b"kappa", b"KAPPA")
    pane.undo_button.click()
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == NOTES
    assert (folder / "app.py").read_text(encoding="utf-8") == CODE
    card = window.chat.change_card(app.controller.session.changes.id)
    assert card.undone and card.undo_button.text() == "Redo"
    assert pane.redo_button.isEnabled()
    pane.redo_button.click()
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == after_notes
    assert (folder / "app.py").read_bytes() == after_code
    # the card's Undo does the same
    card.undo_button.click()
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == NOTES
    # an undo that would overwrite a later edit asks first, and overwrites only when told
    card.undo_button.click()  # Redo
    await _settled(pane)
    (folder / "notes.txt").write_bytes(b"someone else's text")
    pane.undo_button.click()
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == b"someone else's text"
    assert pane.stack.currentWidget() is pane.conflicts and "force" in pane.conflicts.buttons
    pane.conflicts.buttons["force"].click()
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == NOTES


async def test_all_changes_in_this_thread_shows_the_net_diff(app: Any, provider: Any, folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    pane.model.accept_all()
    pane.apply()
    await _settled(pane)
    pane.scope.button(1).click()
    await _settled(pane)
    assert pane.model.read_only and pane.title.text() == "All changes in this thread"
    assert sorted(pane.model.file(r).path for r in range(pane.model.rowCount())) == ["app.py", "notes.txt"]
    assert not pane.apply_button.isVisible()
    pane.scope.button(0).click()
    assert not pane.model.read_only


async def test_full_size_review_window_shares_decisions_with_the_dock(app: Any, provider: Any) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    review = pane.open_review()
    assert review.isVisible() and review.model is pane.model
    changes = app.controller.session.changes
    ids = [h.id for h in changes.hunks()]
    view = review.view
    view.setFocus()
    QTest.keyClicks(view, "]c]c")
    assert view.fc.path == "app.py" and view.current_hunk.id == ids[2]
    assert review.files.currentIndex().row() == 1  # the file list follows
    QTest.keyClick(view, Qt.Key.Key_A)
    assert changes.hunk(ids[2]).status == ACCEPTED
    assert "1 accepted" in pane.summary.text()  # the dock saw it
    review.layout_group.button(1).click()
    assert view.split
    review.close()


async def test_two_tool_results_open_side_by_side_in_the_review_view(app: Any, provider: Any) -> None:
    from PySide6.QtCore import QItemSelectionModel

    _propose_two_files(provider)
    app.window.runs.send("edit both")
    await _idle(app)
    pane = app.window.docks.tool_pane
    selection = pane.table.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    selection.select(pane.model.index(0, 0), flags)
    selection.select(pane.model.index(2, 0), flags)
    assert pane.compare_button.isEnabled()
    compare = pane.compare_results()
    fc = compare.view.fc
    assert compare.model.read_only and compare.view.split and fc.hunks
    assert '"path": "notes.txt"' in fc.text("before") and '"path": "app.py"' in fc.text("after")
    compare.close()


async def test_compare_the_last_two_answers(app: Any, provider: Any) -> None:
    provider.enqueue("The answer is 41.", "The answer is 42.")
    app.window.runs.send("what is it?")
    await _idle(app)
    app.window.runs.regenerate_last()
    await _idle(app)
    compare = app.window.docks.changes_pane.compare_answers()
    assert compare is not None
    fc = compare.view.fc
    assert fc.text("before") == "The answer is 41." and fc.text("after") == "The answer is 42."
    assert compare.model.read_only
    compare.close()


async def test_auto_mode_applies_at_once_and_the_card_offers_undo(provider: Any, db_path: Path,
                                                                  folder: Path) -> None:
    root = await _open(provider, db_path, folder, mode="auto")
    try:
        provider.enqueue([ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"})],
                         "Done.")
        root.window.runs.send("capitalise beta")
        await _idle(root)
        assert (folder / "notes.txt").read_bytes() == NOTES.replace(b"beta", b"BETA")
        card = root.window.chat.change_card(root.controller.session.changes.id)
        assert card.status == "decided" and card.undo_button.isVisible()
        assert "Auto-apply" in root.window.docks.changes_pane.mode_note.text()
        card.undo_button.click()
        await _settled(root.window.docks.changes_pane)
        assert (folder / "notes.txt").read_bytes() == NOTES
        assert card.undone
    finally:
        await close_app(root)


async def test_read_only_mode_refuses_writes(provider: Any, db_path: Path, folder: Path) -> None:
    root = await _open(provider, db_path, folder, mode="readonly")
    try:
        provider.enqueue([ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"},
                                   id="w1")], "I could not.")
        root.window.runs.send("capitalise beta")
        await _idle(root)
        assert (folder / "notes.txt").read_bytes() == NOTES
        assert root.window.chat.card("w1").status == "error"
        assert "Read-only" in root.window.docks.changes_pane.mode_note.text()
    finally:
        await close_app(root)


async def test_keys_in_the_inline_boxes_are_not_taken_by_window_shortcuts(app: Any, provider: Any) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    window.composer.set_text("not to be sent yet")
    changes = app.controller.session.changes
    view = pane.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_E)
    box = view.overlay
    box.editor.setPlainText("BETA!")
    QTest.keyClick(box.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)  # not "Send message"
    assert changes.hunks()[0].edited_lines == ["BETA!\r\n"]  # the file's CRLF kept
    assert window.composer.text() == "not to be sent yet" and app.controller.idle
    QTest.keyClick(view, Qt.Key.Key_R)
    QTest.keyClick(view.overlay.reason, Qt.Key.Key_Escape)  # cancels the box, not "Stop"
    assert view.overlay is None and changes.hunks()[1].status == "pending"


async def test_apply_then_undo_the_robot_hears_the_change_was_undone(app: Any, provider: Any, folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    changes = app.controller.session.changes
    beta, kappa, doc = (h.id for h in changes.hunks())
    pane.model.accept(beta, doc)
    pane.model.reject(kappa, reason="not kappa")
    await wait_until(lambda: pane.apply_button.isEnabled(), what="Apply (the history is read after the run)")
    pane.apply_button.click()
    await wait_until(lambda: pane.undo_button.isEnabled(), what="the apply and its history")
    assert (folder / "notes.txt").read_bytes() == NOTES.replace(b"beta", b"BETA")
    pane.undo_button.click()
    await wait_until(lambda: pane.redo_button.isEnabled(), what="the undo")
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == NOTES
    assert (folder / "app.py").read_text(encoding="utf-8") == CODE
    provider.enqueue("Understood.")
    window.runs.send("and now?")
    await _idle(app)
    note, typed = split_user_message(str(provider.history[-1].messages[-1].content))
    assert typed == "and now?" and note is not None
    assert "partly applied" not in note and "accepted and written" not in note
    assert "notes.txt: applied, then undone" in note and "app.py: applied, then undone" in note


async def test_the_card_counts_what_the_dock_counts_when_some_hunks_are_decided(app: Any, provider: Any) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    card = window.chat.change_card(app.controller.session.changes.id)
    assert card._pill is not None and card._pill.text() == "3 changes to review"
    beta, kappa, _doc = (h.id for h in app.controller.session.changes.hunks())
    pane.model.accept(beta)
    pane.model.reject(kappa)
    await asyncio.sleep(0.05)
    # one accepted, one rejected, one undecided: the dock, the status bar and the card say the same
    assert "1 pending, 1 accepted, 1 rejected" in pane.summary.text()
    assert window.docks["changes"].windowTitle() == "Changes · 1"
    assert window.status.review.text() == "1 change to review"
    assert card._pill.text() == "1 change to review"
    assert "1 pending, 1 accepted, 1 rejected" in card.note.text()
    pane.model.reset(beta, kappa)
    await asyncio.sleep(0.05)
    assert card._pill.text() == "3 changes to review" == window.status.review.text()


async def test_apply_with_undecided_hunks_asks_first(app: Any, provider: Any, folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    changes = app.controller.session.changes
    beta, kappa, doc = (h.id for h in changes.hunks())
    pane.model.accept(beta)
    await wait_until(lambda: pane.apply_button.isEnabled(), what="Apply")
    pane.apply_button.click()
    box = pane.apply_question
    assert box is not None and box.isVisible() and "2 hunks are still undecided" in box.text()
    await asyncio.sleep(0.05)
    assert (folder / "notes.txt").read_bytes() == NOTES and changes.pending_files  # nothing written yet
    # Go back: still nothing written, the diff is at the first undecided hunk
    box.button_back.click()
    await _settled(pane)
    assert not box.isVisible() and (folder / "notes.txt").read_bytes() == NOTES
    assert pane.view.current_hunk.id == kappa
    assert changes.hunk(kappa).status == "pending"
    # the full review window asks the same; "Reject them and apply" writes the accepted hunk only
    review = pane.open_review()
    review.apply()
    box = review.apply_question
    assert box is not None and "2 hunks are still undecided" in box.text()
    box.button_apply.click()
    await wait_until(lambda: not changes.pending_files, what="the apply")
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == NOTES.replace(b"beta", b"BETA")
    assert (folder / "app.py").read_text(encoding="utf-8") == CODE
    assert changes.hunk(kappa).status == REJECTED and changes.hunk(doc).status == REJECTED
    review.close()


async def test_apply_with_every_hunk_decided_does_not_ask(app: Any, provider: Any, folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    pane.model.accept_all()
    await wait_until(lambda: pane.apply_button.isEnabled(), what="Apply")
    pane.apply_button.click()
    assert pane.apply_question is None or not pane.apply_question.isVisible()
    await wait_until(lambda: not app.controller.session.changes.pending_files, what="the apply")
    assert (folder / "notes.txt").read_bytes() != NOTES


async def test_apply_again_while_asked_does_not_ask_twice(app: Any, provider: Any, folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    _propose_two_files(provider)
    window.runs.send("edit both")
    await _idle(app)
    await wait_until(lambda: pane.apply_button.isEnabled(), what="Apply")
    pane.apply()
    first = pane.apply_question
    pane.apply()  # Ctrl+Enter again
    assert pane.apply_question is first and first is not None and first.isVisible()
    first.button_back.click()
    await _settled(pane)
    assert (folder / "notes.txt").read_bytes() == NOTES


async def test_asking_again_discards_the_replaced_answers_proposal_and_says_so(app: Any, provider: Any) -> None:
    """↻ on an answer whose proposal waits for review: the new answer edits the folder as it is (not the old
    proposal's text: "search text not found"), the Changes dock holds only its proposal, and a toast names the
    discarded files."""
    edit = [ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"})]
    provider.enqueue(edit, "Proposed.", edit, "Proposed again.")
    app.window.runs.send("capitalise beta")
    await _idle(app)
    app.window.runs.regenerate_last()
    await _idle(app)
    session = app.controller.session
    turn = session.thread.current_turn_id
    assert [e for e in session.store.turn_events(turn) if type(e).__name__ == "ToolError"] == []
    assert [fc.after for fc in session.changes.pending_files] == [NOTES.replace(b"beta", b"BETA")]
    assert "notes.txt" in app.window.toast.label.text() and "discarded" in app.window.toast.label.text()


async def test_asking_again_keeps_an_earlier_answers_proposal_in_the_same_set_and_says_so(app: Any,
                                                                                          provider: Any) -> None:
    """One change set waiting for review holds an earlier answer's proposal (notes.txt) and the replaced answer's
    (app.py): ↻ discards only app.py's, the new answer edits app.py as the folder has it, notes.txt still waits for
    review, and the toast says both. Before, the whole set was kept, the replaced answer's app.py in it."""
    docstring = "    \"\"\"Area of a rectangle.\"\"\"\n    return w * h\n"
    provider.enqueue([ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"})], "Proposed.",
                     [ToolCall("edit_file", {"path": "app.py", "search": "    return w * h\n",
                                             "replace": docstring})], "Documented.",
                     [ToolCall("edit_file", {"path": "app.py", "search": "    return w * h\n",
                                             "replace": "    return h * w\n"})], "Swapped.")
    app.window.runs.send("capitalise beta")
    await _idle(app)
    app.window.runs.send("and document area")
    await _idle(app)
    session = app.controller.session
    assert sorted(session.changes.pending_paths()) == ["app.py", "notes.txt"]
    app.window.runs.regenerate_last()
    await _idle(app)
    turn = session.thread.current_turn_id
    assert [e for e in session.store.turn_events(turn) if type(e).__name__ == "ToolError"] == []
    pending = {fc.path: fc.after for fc in session.changes.pending_files}
    assert pending == {"notes.txt": NOTES.replace(b"beta", b"BETA"),
                       "app.py": CODE.replace("return w * h", "return h * w").encode()}
    toast = app.window.toast.label.text()
    assert "proposed changes to app.py were discarded" in toast
    assert "changes to notes.txt still wait for review" in toast
