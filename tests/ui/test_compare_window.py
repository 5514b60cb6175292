"""Many robots at once in the window: "Compare with…" sends one message to three candidates on the loopback
model server (each model writes app.py its own way), their columns stream side by side, the verdict is kept
with the threads and exported, and the combined review in the Changes dock takes hunks across candidates.

What a person sees and gets: each column shows only its candidate's answer, with its figures; nothing is
written before Apply; taking hunk 1 of A and hunk 2 of B writes exactly those bytes, undone as one; two
accepted hunks over the same lines are shown side by side and Apply waits until one is picked; "Keep this
one" goes on with that candidate's thread alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.candidates import BASE, EDITS
from fakes.compare_window import compared
from fakes.llm_server import FakeLLMServer

from tests.fakes.app_window import as_read, running_app, wait_until
from tests.ui.chat_dump import dump_state
from workspace.config import load_config

pytestmark = pytest.mark.timeout(180)  # bounds a hang: three scripted candidates, twice, on a loaded machine


async def test_columns_stream_per_candidate_and_the_verdict_is_kept_and_exported(
        compare_app: Any, server: FakeLLMServer, folder: Path) -> None:
    from workspace.exports import export_markdown

    comparisons = await compared(compare_app, server)
    view = comparisons.view
    assert view is not None and view.isVisible() and not compare_app.window.chat.isVisible()
    assert [h.name.text() for h in view.headers] == ["openai/model-a", "openai/model-b", "openai/model-c"]
    assert [h.name.palette().windowText().color().name() for h in view.headers] == ["#1f6feb", "#c0470b", "#0f8a6d"]
    for index, model in enumerate(EDITS):
        shown = dump_state(comparisons.chats[index].presenter.state)
        assert f"Answer of {model}: done" in shown, shown
        assert not any(f"Answer of {other}" in shown for other in EDITS if other != model), shown
        figures = as_read(view.headers[index].figures.text())
        assert "1 tool" in figures and "TTFT" in figures and "tok/s" in figures, figures
        stats = comparisons.stats.columns[index]
        assert stats.output_tokens > 0 and stats.ttft is not None and stats.tool_calls == 1
    assert (folder / "app.py").read_text() == BASE  # nothing written before Apply

    # At 1280x720 each column is narrow (about 270 px with the docks open): its cards narrow with it (names
    # and pills end in "…") instead of being cut off at the column's right edge.
    compare_app.window.resize(1280, 720)
    await wait_until(lambda: compare_app.window.width() <= 1280, what="the window at 1280 px")
    for chat in comparisons.chats:
        await wait_until(lambda chat=chat: chat.widget().width() <= chat.viewport().width(),
                         what=f"the column's content ({chat.widget().width()} px) inside its "
                              f"{chat.viewport().width()} px")

    store = compare_app.controller.require_store()
    threads = comparisons.session.thread_ids
    assert [store.get_thread(t).metadata["candidate"] for t in threads] == [0, 1, 2]
    assert len({store.get_thread(t).metadata["comparison"] for t in threads}) == 1

    view.choices.button(1).click()
    view.reason.setText("kept the tests green")
    view.save.click()
    for thread_id in threads:
        assert store.get_thread(thread_id).metadata["verdict"] == {
            "winner": 1, "label": "openai/model-b", "reason": "kept the tests green"}
    exported = export_markdown(store, threads[0])
    assert "- **Verdict:** candidate 2 (openai/model-b) is the better answer: kept the tests green" in exported
    assert "candidate 1 of 3 (openai/model-a)" in exported


async def test_the_combined_review_takes_hunk_1_of_a_and_hunk_2_of_b_and_undoes_as_one(
        compare_app: Any, server: FakeLLMServer, folder: Path) -> None:
    comparisons = await compared(compare_app, server)
    review = comparisons.review
    assert review is not None and compare_app.window.docks["changes"].widget() is review
    assert sorted(review.items) == ["c0.f1.h1", "c0.f1.h2", "c1.f1.h1", "c1.f1.h2", "c2.f1.h1", "c2.f1.h2"]
    assert review.items["c1.f1.h2"].text(1) == "openai/model-b"
    review.set_accepted("c0.f1.h1")
    review.set_accepted("c1.f1.h2")
    assert review.apply_button.isEnabled() and not review.overlap_panes
    assert (folder / "app.py").read_text() == BASE  # still nothing written
    review.apply()
    await wait_until(lambda: review.result is not None, timeout=60, what="the combined apply")
    expected = BASE.replace("line 2\n", "A two\n").replace("line 9\n", "B nine\n")
    assert (folder / "app.py").read_bytes() == expected.encode()
    assert review.undo_button.isEnabled()
    review.undo_button.click()
    await wait_until(lambda: (folder / "app.py").read_text() == BASE, timeout=30, what="the undo")


async def test_an_overlap_is_shown_side_by_side_and_refused_until_one_is_picked(
        compare_app: Any, server: FakeLLMServer, folder: Path) -> None:
    import asyncio

    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QPushButton

    comparisons = await compared(compare_app, server)
    review = comparisons.review
    assert review is not None
    review.set_accepted("c0.f1.h1")
    review.set_accepted("c1.f1.h1")  # both change line 2
    assert len(review.overlap_panes) == 1
    # At 1024x640 the three sides share the dock's width: every button shows whole, inside the review and
    # the window, the candidates' names ending in "…" (whole in their tooltips) rather than pushing them out.
    compare_app.window.resize(1024, 640)
    await wait_until(lambda: compare_app.window.width() == 1024, what="the window at 1024 px")
    await asyncio.sleep(0.1)
    for button in review.findChildren(QPushButton):
        if button.isVisibleTo(review):
            left = button.mapTo(review, QPoint(0, 0)).x()
            right = button.mapTo(compare_app.window, QPoint(button.width(), 0)).x()
            assert left + button.width() <= review.width() and right <= compare_app.window.width(), (
                f"{button.text()!r} spans x {left}..{left + button.width()} of the review's {review.width()} px")
            assert button.width() >= button.sizeHint().width(), f"{button.text()!r} is cut"
    assert not review.apply_button.isEnabled()
    assert "c0.f1.h1 and c1.f1.h1" in review.status.text() and "pick one" in review.status.text()
    pane_text = " ".join(w.toPlainText() for w in review.overlap_panes[0].findChildren(type(review.preview)))
    assert "line 2" in pane_text and "A two" in pane_text and "B two" in pane_text  # the file as it is, and both
    review.apply()  # refused: nothing happens
    assert review.result is None and (folder / "app.py").read_text() == BASE
    review.overlap_panes[0].findChild(QPushButton, "use-c1.f1.h1").click()
    assert review.selection.accepted == ["c1.f1.h1"]
    assert review.items["c0.f1.h1"].checkState(0).name == "Unchecked"
    assert review.apply_button.isEnabled() and not review.overlap_panes
    review.apply()
    await wait_until(lambda: review.result is not None, timeout=60, what="the apply")
    assert (folder / "app.py").read_text() == BASE.replace("line 2\n", "B two\n")


async def test_edit_a_merge_applies_the_persons_lines_in_place_of_the_overlap_and_undoes_as_one(
        compare_app: Any, server: FakeLLMServer, folder: Path) -> None:
    from PySide6.QtWidgets import QPushButton

    comparisons = await compared(compare_app, server)
    review = comparisons.review
    assert review is not None
    for hunk_id in ("c0.f1.h1", "c1.f1.h1", "c2.f1.h2"):  # A and B both change line 2; C's line 5 goes along
        review.set_accepted(hunk_id)
    assert len(review.overlap_panes) == 1 and not review.apply_button.isEnabled()
    review.overlap_panes[0].findChild(QPushButton, "merge-c0.f1.h1").click()
    dialog = review.merge_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.text() == "A two\nB two\n"  # both hunks' text, one after the other
    dialog.from_file.click()
    assert dialog.text() == "line 2\n"  # the file as it is there
    dialog.editor.setPlainText("A and B two")
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    assert not review.overlap_panes and review.apply_button.isEnabled()
    assert "1 merge of yours" in review.status.text()
    assert sorted(review.selection.accepted) == ["c0.f1.h1", "c1.f1.h1", "c2.f1.h2"]
    assert (folder / "app.py").read_text() == BASE  # nothing written before Apply
    review.apply()
    await wait_until(lambda: review.result is not None, timeout=60, what="the apply")
    assert (folder / "app.py").read_text() == BASE.replace("line 2\n", "A and B two\n").replace("line 5\n",
                                                                                                 "C five\n")
    review.undo_button.click()
    await wait_until(lambda: (folder / "app.py").read_text() == BASE, timeout=60, what="the undo, as one")


async def test_a_comparisons_columns_come_back_when_a_candidates_thread_reopens_and_after_a_restart(
        server: FakeLLMServer, folder: Path, db_path: Path) -> None:
    config = load_config(folder, env={}, overrides={"llm": {"model": "openai/model-a", "max_retries": 1,
                                                            "api_base": server.base_url + "/v1"}})

    def shown(root: Any, comparisons: Any) -> None:
        view = comparisons.view
        assert view is not None and view.isVisible() and not root.window.chat.isVisible()
        assert comparisons.session.thread_ids == threads and comparisons.session.active == [0, 1, 2]
        for index, model in enumerate(EDITS):
            text = dump_state(comparisons.chats[index].presenter.state)
            assert f"Answer of {model}: done" in text, text
            assert not any(f"Answer of {other}" in text for other in EDITS if other != model), text
        assert [as_read(h.figures.text()) for h in view.headers] == figures  # tokens, TTFT, tok/s, tools as they were
        assert view.choices.checkedId() == 2 and view.reason.text() == "shortest"
        assert view.verdict_note.text() == "Kept: openai/model-c"
        assert comparisons.review is not None and root.window.docks["changes"].widget() is comparisons.review

    async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light", size=(1400, 900)) as root:
        root.controller.set_robot("file-helper")
        comparisons = await compared(root, server)
        threads = comparisons.session.thread_ids
        view = comparisons.view
        figures = [as_read(h.figures.text()) for h in view.headers]
        assert all("TTFT" in f and "1 tool" in f for f in figures), figures
        view.choices.button(2).click()
        view.reason.setText("shortest")
        view.save.click()
        root.window.threads.new()  # away: one chat again
        assert comparisons.view is None and root.window.chat.isVisible()
        root.window.threads.open(threads[1])  # back, through any candidate's thread: the columns
        shown(root, comparisons)
        store = root.controller.require_store()
        kept = {t: store.get_thread(t).metadata["compare_stats"] for t in threads}
        for thread_id in threads:  # no figures kept (the command line's comparisons): counted from the events
            store.update_thread_metadata(thread_id, compare_stats=None)
        root.window.threads.new()
        root.window.threads.open(threads[0])
        counted = comparisons.stats.columns
        assert [(c.status, c.tool_calls, c.ttft) for c in counted] == [("finished", 1, None)] * 3
        assert [(c.input_tokens, c.output_tokens) for c in counted] == [
            (kept[t]["input_tokens"], kept[t]["output_tokens"]) for t in threads]
        for thread_id, saved in kept.items():
            store.update_thread_metadata(thread_id, compare_stats=saved)

    async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light", size=(1400, 900)) as root:
        comparisons = root.window.comparisons
        root.window.threads.open(threads[2])  # after a restart, the same
        await wait_until(lambda: comparisons.view is not None, what="the columns after the restart")
        shown(root, comparisons)
        comparisons.view.headers[0].keep.click()  # kept: that thread goes on alone, no columns when it reopens
        root.window.threads.new()
        root.window.threads.open(threads[2])
        assert comparisons.view is None and comparisons.review is not None and root.window.chat.isVisible()


async def test_keep_this_one_goes_on_with_that_candidates_thread_alone(
        compare_app: Any, server: FakeLLMServer, folder: Path) -> None:
    comparisons = await compared(compare_app, server)
    kept_thread = comparisons.session.thread_ids[2]
    asked = len(server.requests)
    comparisons.view.headers[2].keep.click()
    assert comparisons.view is None and compare_app.window.chat.isVisible()
    assert compare_app.controller.thread_id == kept_thread
    compare_app.window.composer.set_text("And now?")
    compare_app.window.composer.submit()
    await wait_until(lambda: compare_app.controller.idle and len(server.requests) > asked, timeout=60,
                     what="the answer")
    chats = [r for r in server.requests[asked:] if isinstance(r, dict)]
    assert [r["model"] for r in chats] == ["model-c"]
    assert "Answer of model-c: done" in dump_state(compare_app.window.chat.presenter.state)


async def test_compare_with_offers_the_listed_models_and_starts_the_columns(
        compare_app: Any, server: FakeLLMServer) -> None:
    from PySide6.QtCore import Qt

    from workspace.providers import listing

    listing.clear_cache()
    window = compare_app.window
    window.commands.by_name["compare"].trigger()  # the palette's and the Thread menu's "Compare with…"
    await wait_until(lambda: window.comparisons.dialog is not None and window.comparisons.dialog.isVisible(),
                     timeout=30, what="the dialog")
    dialog = window.comparisons.dialog
    texts = [dialog.list.item(row).text() for row in range(dialog.list.count())]
    assert texts[0] == "file-helper again (its own model)"
    assert "file-helper with openai/model-b" in texts and "assistant (robot)" in texts
    ok = dialog.buttons.buttons()[0]
    assert not ok.isEnabled()  # none checked yet
    for text in ("file-helper with openai/model-b", "file-helper with openai/model-c"):
        dialog.list.item(texts.index(text)).setCheckState(Qt.CheckState.Checked)
    assert ok.isEnabled()
    dialog.accept()
    view = window.comparisons.view
    assert view is not None and [h.index for h in view.headers] == [0, 1, 2]
    assert view.labels == ["openai/model-a", "openai/model-b", "openai/model-c"]


async def test_an_approval_a_candidate_asks_for_shows_in_its_own_column(
        compare_app: Any, server: FakeLLMServer) -> None:
    from ui.compare.session import CandidateSpec

    window = compare_app.window
    comparisons = window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("file-helper", model="openai/model-b", api_base=base)])
    comparisons.send("Run the tests")
    await wait_until(lambda: comparisons.chats[1].pending_approval() is not None, timeout=60,
                     what="model-b's approval card in its column")
    assert comparisons.chats[0].pending_approval() is None and window.chat.pending_approval() is None
    # Another thread while model-b waits: one chat; the columns are set aside, their runs go on.
    view = comparisons.view
    window.threads.new()
    assert comparisons.running and not view.isVisible() and window.chat.isVisible()
    assert not comparisons.stop() and comparisons.running  # Esc there is the open thread's, not the columns'
    window.threads.open(comparisons.session.thread_ids[1])  # back: the same columns, the card still waiting
    assert comparisons.view is view and view.isVisible() and not window.chat.isVisible()
    comparisons.chats[1].pending_approval().approve()
    await wait_until(lambda: not comparisons.running, timeout=60, what="both answers")
    assert [c.status for c in comparisons.stats.columns] == ["finished", "finished"]
    assert "Answer of model-b: done" in dump_state(comparisons.chats[1].presenter.state)


async def test_each_column_shows_the_verify_run_on_its_own_proposal(server: FakeLLMServer, folder: Path,
                                                                    db_path: Path) -> None:
    from workspace.isolation import SandboxUnavailable, sandbox_for_platform

    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
        pytest.skip(f"no sandbox on this machine: {exc}")
    config = load_config(folder, env={}, overrides={
        "llm": {"model": "openai/model-a", "max_retries": 1, "api_base": server.base_url + "/v1"},
        "review": {"verify": "grep -q 'B two' app.py"}})  # only model-b's proposal passes
    async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light", size=(1400, 900)) as root:
        root.controller.set_robot("file-helper")
        comparisons = await compared(root, server)
        await wait_until(lambda: comparisons.review is not None, timeout=60, what="the verify and the review")
        assert [c.verify for c in comparisons.stats.columns] == [False, True, False]
        figures = [as_read(h.figures.text()) for h in comparisons.view.headers]
        assert figures[0].endswith("verify ✗") and figures[1].endswith("verify ✓"), figures
        assert (folder / "app.py").read_text() == BASE  # each verify ran on its own layer: nothing written


async def test_a_candidates_thread_opened_again_brings_back_the_combined_review(
        compare_app: Any, server: FakeLLMServer, folder: Path) -> None:
    comparisons = await compared(compare_app, server)
    threads = comparisons.session.thread_ids
    dock = compare_app.window.docks["changes"]
    comparisons.view.headers[1].keep.click()  # the thread goes on with model-b: the review stays
    assert compare_app.controller.thread_id == threads[1] and dock.widget() is comparisons.review
    compare_app.window.threads.new()  # another thread: the dock's own review again
    assert comparisons.review is None and dock.widget() is not None
    assert type(dock.widget()).__name__ != "CombinedReview"
    compare_app.window.threads.open(threads[0])  # any candidate's thread: every candidate's hunks
    review = comparisons.review
    assert review is not None and dock.widget() is review
    assert sorted(review.items) == ["c0.f1.h1", "c0.f1.h2", "c1.f1.h1", "c1.f1.h2", "c2.f1.h1", "c2.f1.h2"]
    assert review.thread_id == threads[1]  # the apply goes in the kept thread's history
    review.set_accepted("c2.f1.h2")
    review.apply()
    await wait_until(lambda: review.result is not None, timeout=60, what="the apply")
    assert (folder / "app.py").read_text() == BASE.replace("line 5\n", "C five\n")
