"""Change review models (no widgets), the row builder, and the diff view driven directly (offscreen)."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtTest import QTest

from workspace.changes import ACCEPTED, PENDING, REJECTED, ChangeSet, CheckpointStore, compare_texts

TEN = "".join(f"line {i}\n" for i in range(1, 41))


@pytest.fixture(autouse=True)
def _app(qapp_instance: object) -> None:
    """Models need no widgets, but queued signals and timers need the application object."""


def _set(tmp_path: Path) -> ChangeSet:
    """Two files: a.txt with two hunks, b.py with one."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text(TEN, encoding="utf-8")
    (folder / "b.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    changes = ChangeSet(folder, store=CheckpointStore(tmp_path / "ck"))
    changes.propose("a.txt", TEN.replace("line 3\n", "line three\n").replace("line 30\n", "line thirty\n").encode())
    changes.propose("b.py", b"def f():\n    return 2\n")
    return changes


def _model(changes: ChangeSet | None = None) -> Any:
    from ui.review.model import ChangeReviewModel

    model = ChangeReviewModel()
    if changes is not None:
        model.bind(changes)
    return model


# -- the model ----------------------------------------------------------------------------------------


def test_model_lists_files_with_counts(tmp_path: Path) -> None:
    changes = _set(tmp_path)
    model = _model(changes)
    assert model.rowCount() == 2
    assert [model.index(r).data() for r in range(2)] == ["a.txt", "b.py"]
    counts = model.index(0).data(model.CountsRole)
    assert counts["hunks"] == 2 and counts["pending"] == 2 and counts["added"] == 2 and counts["removed"] == 2
    total = model.counts()
    assert (total.files, total.hunks, total.pending, total.accepted, total.rejected) == (2, 3, 3, 0, 0)
    assert "2 hunk(s): 2 pending" in model.index(0).data(Qt.ItemDataRole.ToolTipRole)


def test_navigation_order_crosses_files_and_wraps(tmp_path: Path) -> None:
    changes = _set(tmp_path)
    model = _model(changes)
    order = [h.id for _, h in model.hunk_order()]
    assert order == [h.id for h in changes.hunks()]
    fc, first = model.next_hunk(None)
    assert fc.path == "a.txt" and first.id == order[0]
    assert model.next_hunk(order[1])[1].id == order[2]  # ]c from a.txt's last hunk goes into b.py
    assert model.next_hunk(order[2])[1].id == order[0]  # and wraps
    assert model.prev_hunk(order[0])[1].id == order[2]  # [c wraps backwards
    model.accept(order[0])
    assert model.next_hunk(order[2], undecided=True)[1].id == order[1]  # decided ones are skipped
    model.accept(order[1])
    model.reject(order[2])
    assert model.next_hunk(None, undecided=True) is None


def test_decisions_go_to_the_change_set_and_refresh_the_views(tmp_path: Path) -> None:
    changes = _set(tmp_path)
    model = _model(changes)
    seen: list[str] = []
    model.changed.connect(lambda: seen.append("changed"))
    ids = [h.id for h in changes.hunks()]
    assert model.accept(ids[0])
    assert model.reject(ids[1], reason="keep thirty lower-case")
    assert changes.hunk(ids[0]).status == ACCEPTED
    assert changes.hunk(ids[1]).status == REJECTED and changes.hunk(ids[1]).reason == "keep thirty lower-case"
    assert model.edit_hunk(ids[2], "    return 3\n")
    assert changes.hunk(ids[2]).edited and changes.hunk(ids[2]).status == ACCEPTED
    assert seen  # the views heard about it
    assert model.reset(ids[2]) and changes.hunk(ids[2]).status == PENDING and not changes.hunk(ids[2]).edited
    assert model.reject_file("b.py", reason="not this file")
    assert changes.file("b.py").reason == "not this file"
    assert model.accept_all() and model.counts().accepted == 3
    assert model.reject_all() and model.counts().rejected == 3
    counts = model.counts()
    assert (counts.pending, counts.accepted, counts.rejected) == (0, 0, 3)


def test_decisions_on_a_settled_set_are_refused_with_a_message(tmp_path: Path) -> None:
    changes = _set(tmp_path)
    model = _model(changes)
    problems: list[str] = []
    model.problem.connect(problems.append)
    ids = [h.id for h in changes.hunks()]
    changes.accept_all()
    changes.apply()
    model.refresh()
    assert [model.file(r).state for r in range(2)] == ["applied", "applied"]
    assert not model.reject(ids[0])
    assert problems and "already settled" in problems[-1]
    assert model.counts().files == 0  # nothing left under review
    assert model.hunk_order()  # but the settled files can still be browsed


def test_read_only_files_cannot_be_decided(tmp_path: Path) -> None:
    model = _model()
    problems: list[str] = []
    model.problem.connect(problems.append)
    fc = compare_texts("a\nb\nc\n", "a\nB\nc\n", name="result.json")
    model.set_files([fc], title="Two results")
    assert model.read_only and model.rowCount() == 1 and model.title == "Two results"
    assert model.counts().hunks == 1
    assert not model.accept(fc.hunks[0].id)
    assert problems and "reading only" in problems[0]


def test_proposals_from_a_worker_thread_reach_the_model_on_the_gui_thread(tmp_path: Path) -> None:
    changes = _set(tmp_path)
    model = _model(changes)
    assert model.rowCount() == 2
    (changes.folder / "c.txt").write_text("x\n", encoding="utf-8")
    worker = threading.Thread(target=lambda: changes.propose("c.txt", b"y\n"))
    worker.start()
    worker.join()
    assert model.rowCount() == 2  # not yet: the notification is queued to the GUI thread
    for _ in range(5):
        QCoreApplication.processEvents()
    assert model.rowCount() == 3 and model.file(2).path == "c.txt"


# -- rows ----------------------------------------------------------------------------------------------


def test_rows_show_context_around_hunks_and_gaps_between() -> None:
    from ui.review.rows import ADD, CTX, DEL, GAP, HUNK, build_rows

    old = "".join(f"l{i}\n" for i in range(100))
    new = old.replace("l10\n", "L10\n").replace("l80\n", "l80\nextra\n")
    fc = compare_texts(old, new, name="x.txt")
    rows = build_rows(fc)
    kinds = [r[0] for r in rows.rows]
    # gap, 3 context, header, -, +, 3 context, gap, 3 context, header, +, gap
    assert kinds == [GAP, CTX, CTX, CTX, HUNK, DEL, ADD, CTX, CTX, CTX, GAP, CTX, CTX, CTX, HUNK, ADD, CTX, CTX,
                     CTX, GAP]
    assert [g.count for g in rows.gaps] == [7, 64, 16]
    whole = build_rows(fc, whole_file=True)
    assert sum(1 for r in whole.rows if r[0] == CTX) == 99 - 0  # every unchanged line
    opened = build_rows(fc, expanded={rows.gaps[1].region})
    assert len([r for r in opened.rows if r[0] == GAP]) == 2
    assert rows.hunk_span(0) == (4, 7)


def test_side_by_side_pairs_similar_lines_on_one_row() -> None:
    from ui.review.rows import HUNK, PAIR, build_rows

    fc = compare_texts("a\nkeep this line\nb\n", "a\nnew line here\nkeep this line, changed\nb\n", name="t.txt")
    rows = build_rows(fc, split=True)
    pairs = [r for r in rows.rows if r[0] == PAIR]
    assert [r[0] for r in rows.rows].count(HUNK) == 1
    # the added line alone on the right, then the similar pair side by side
    assert (pairs[0][2], pairs[0][3]) == (-1, 1)
    assert (pairs[1][2], pairs[1][3]) == (1, 2)


# -- the diff view --------------------------------------------------------------------------------------


def _big_change(lines: int = 20_000, hunks: int = 500) -> Any:
    rng = random.Random(7)
    old = [f"    value_{i} = compute({i}, {rng.randint(0, 99)})\n" for i in range(lines)]
    new = list(old)
    for p in sorted(rng.sample(range(lines // 8), hunks), reverse=True):
        new[p * 8 + 2] = new[p * 8 + 2].replace("compute", "calculate")
    return compare_texts("".join(old), "".join(new), name="big.py")


def test_view_paints_only_the_visible_rows_of_a_huge_diff(qtbot: Any) -> None:
    from ui.review.view import DiffView

    fc = _big_change()
    view = DiffView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.set_whole_file(True)
    view.show_file(fc)
    view.show()
    view.grab()
    assert len(fc.hunks) == 500
    assert len(view.rows) > 20_000
    visible = view.visible_rows()
    assert 0 < len(visible) < 60
    # only the blocks of visible lines were lexed, not 20,000 lines
    colors = view._line_colors(fc.old_lines)
    assert colors is not None and len(colors._blocks) <= 4
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    view.grab()
    assert view.visible_rows().start > 9000


def test_view_keys_navigate_and_decide(tmp_path: Path, qtbot: Any) -> None:
    from ui.review.view import DiffView

    changes = _set(tmp_path)
    model = _model(changes)
    view = DiffView(model)
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    ids = [h.id for h in changes.hunks()]
    assert view.current_hunk.id == ids[0]
    QTest.keyClicks(view, "]c")
    assert view.current_hunk.id == ids[1]
    QTest.keyClicks(view, "]c")
    assert view.fc.path == "b.py" and view.current_hunk.id == ids[2]  # crossed into the next file
    QTest.keyClicks(view, "[c")
    assert view.fc.path == "a.txt" and view.current_hunk.id == ids[1]
    QTest.keyClick(view, Qt.Key.Key_K)
    assert view.current_hunk.id == ids[0]
    QTest.keyClick(view, Qt.Key.Key_A)  # accept, then on to the next undecided hunk
    assert changes.hunk(ids[0]).status == ACCEPTED and view.current_hunk.id == ids[1]
    QTest.keyClick(view, Qt.Key.Key_R)  # reject asks for a reason inline
    box = view.overlay
    assert box is not None and box.reason is not None
    box.reason.setText("keep thirty")
    QTest.keyClick(box.reason, Qt.Key.Key_Return)
    assert changes.hunk(ids[1]).status == REJECTED and changes.hunk(ids[1]).reason == "keep thirty"
    assert view.overlay is None and view.current_hunk.id == ids[2]
    QTest.keyClick(view, Qt.Key.Key_E)  # edit the proposed lines, Ctrl+Enter saves and accepts
    box = view.overlay
    assert box is not None and box.editor is not None
    assert box.editor.toPlainText() == "    return 2"
    box.editor.setPlainText("    return 42")
    QTest.keyClick(box.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    h = changes.hunk(ids[2])
    assert h.status == ACCEPTED and h.edited_lines == ["    return 42\n"]
    assert changes.file("b.py").merge().data == b"def f():\n    return 42\n"
    QTest.keyClick(view, Qt.Key.Key_U)  # undo the decision
    assert changes.hunk(view.current_hunk.id).status == PENDING
    QTest.keyClick(view, Qt.Key.Key_S)
    assert view.split


def test_header_buttons_decide_the_hunk(tmp_path: Path, qtbot: Any) -> None:
    from ui.review.view import DiffView

    changes = _set(tmp_path)
    view = DiffView(_model(changes))
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    view.grab()
    first = changes.hunks()[0]
    rect = view.button_rect(first.id, "accept")
    assert rect is not None
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert changes.hunk(first.id).status == ACCEPTED
    view.grab()
    rect = view.button_rect(first.id, "reset")  # a decided hunk offers Undo
    assert rect is not None
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert changes.hunk(first.id).status == PENDING


def test_clicking_a_gap_shows_the_hidden_lines(qtbot: Any) -> None:
    from ui.review.rows import GAP
    from ui.review.view import DiffView

    old = "".join(f"l{i}\n" for i in range(60))
    fc = compare_texts(old, old.replace("l40\n", "L40\n"), name="x.txt")
    view = DiffView()
    qtbot.addWidget(view)
    view.resize(700, 900)
    view.show_file(fc)
    view.show()
    before = len(view.rows)
    gap_row = next(i for i, r in enumerate(view.rows.rows) if r[0] == GAP)
    view.verticalScrollBar().setValue(0)
    y = view._row_y(gap_row) + 4
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.viewport().rect().topLeft() + _pt(10, y))
    assert len(view.rows) > before


def _pt(x: int, y: int) -> Any:
    from PySide6.QtCore import QPoint

    return QPoint(x, y)


def test_syntax_colours_come_from_pygments_for_the_file_type() -> None:
    from ui import theme
    from ui.review.highlight import LineColors, lexer_for, palette

    assert lexer_for("src/app.py") is not None and lexer_for("notes.unknownext") is None
    lines = ["def f(x):\n", "    return 'a'  # comment\n"]
    colors = LineColors(lines, lexer_for("app.py"), palette(theme.colors().pygments_style))
    assert colors.runs(1, lex=False) is None  # not lexed yet: the view draws it plain, then colours it
    runs = colors.runs(0)  # flat: length, style, length, style, ...
    assert sum(runs[0::2]) == len("def f(x):")
    assert runs[0] == 3 and runs[1] != 0  # "def" is a keyword with a colour
    assert colors.runs(1, lex=False) is not None  # same block


def test_review_note_block_is_collapsed_and_summarises(qtbot: Any) -> None:
    from ui.chat.view.review_note import ReviewNoteBlock, note_summary

    note = ("The user reviewed the file changes you proposed (change set x):\n"
            "- a.txt: partly applied — hunk 1 (line 3) accepted; hunk 2 (line 30) rejected (reason: \"no\").\n"
            "- b.py: edit accepted and written.\n")
    assert note_summary(note) == "Review outcome sent to the robot · 2 files: 1 accepted, 1 partly"
    block = ReviewNoteBlock(note)
    qtbot.addWidget(block)
    assert not block.expanded and not block.body.isVisibleTo(block)
    block.toggle.click()
    assert block.expanded and block.body.isVisibleTo(block) and "hunk 2" in block.body.text()


def test_review_note_summary_counts_undone_files() -> None:
    from ui.chat.view.review_note import note_summary
    from workspace.changes import format_outcome

    applied = {"path": "a.txt", "action": "modify", "status": "applied", "undone": True,
               "hunks": [{"index": 0, "status": "accepted", "old_start": 2, "old_count": 1, "kind": "text"}]}
    earlier = {"path": "b.txt", "action": "modify", "status": "undone", "hunks": []}
    again = {"path": "c.txt", "action": "modify", "status": "redone", "hunks": []}
    note = format_outcome([applied, earlier, again])
    assert "accepted and written" not in note and "partly applied" not in note
    assert note_summary(note) == "Review outcome sent to the robot · 3 files: 2 undone, 1 redone"


@pytest.mark.parametrize("width", [260, 300, 340, 420, 900])
def test_a_hunks_buttons_never_cover_its_label_in_a_narrow_pane(tmp_path: Path, qtbot: Any, width: int) -> None:
    """In the narrow Changes dock (1024×640) the buttons painted over "Hunk 1 of 2": they give way (their keys,
    then the label shortens) and stay inside the pane."""
    from ui.review.view import DiffView

    changes = _set(tmp_path)
    view = DiffView(_model(changes))
    qtbot.addWidget(view)
    view.resize(width, 500)
    view.show()
    view.grab()
    first = changes.hunks()[0]
    rects = [view.button_rect(first.id, action) for action in ("accept", "reject", "edit")]
    assert all(r is not None for r in rects)
    left = min(r.left() for r in rects if r is not None)
    assert view.label_ends[first.id] < left, (view.label_ends, left)
    assert all(r.left() >= 0 and r.right() < view.viewport().width() for r in rects if r is not None)
    if width >= 900:
        assert view.label_ends[first.id] > 60  # "Hunk 1 of 2" whole where there is room
