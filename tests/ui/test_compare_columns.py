"""A comparison's columns do what their buttons say, for their own candidate: a card's "Review changes" opens the
combined review at that candidate's hunks, ↻ under an answer asks that candidate again (and only it); each
candidate's proposal is verified once (its run's end verifies it: the comparison takes that result for its ✓/✗,
not a second run of the command)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.compare_window import compared
from fakes.llm_server import FakeLLMServer

from tests.fakes.app_window import running_app, wait_until
from tests.ui.chat_dump import dump_state
from workspace.config import load_config

pytestmark = pytest.mark.timeout(180)  # bounds a hang: three scripted candidates on a loaded machine


async def test_a_columns_review_changes_opens_the_combined_review_at_its_candidates_hunks(
        compare_app: Any, server: FakeLLMServer) -> None:
    comparisons = await compared(compare_app, server)
    dock = compare_app.window.docks["changes"]
    review = comparisons.review
    assert review is not None
    review.tree.setCurrentItem(review.items["c0.f1.h1"])
    dock.hide()
    changes = comparisons.session.sessions[1].changes
    card = comparisons.chats[1].change_card(changes.id)
    assert card is not None
    card.review_button.click()
    assert dock.isVisible() and dock.widget() is review
    current = review.tree.currentItem()
    assert current is not None and current.text(0).startswith("c1.f1.h1"), current.text(0) if current else None
    assert comparisons.selected == 1  # the inspector shows that candidate too
    comparisons.chats[2].change_card(comparisons.session.sessions[2].changes.id).review_button.click()
    assert review.tree.currentItem().text(0).startswith("c2.f1.h1")


async def test_regenerate_in_a_column_asks_that_candidate_again_and_only_it(
        compare_app: Any, server: FakeLLMServer) -> None:
    from ui.chat.view.messages import RunFooter

    comparisons = await compared(compare_app, server, text="Say hello")
    compare = comparisons.session
    store = compare.workspace.store
    first = store.get_thread(compare.thread_ids[2]).current_turn_id
    asked = len(server.requests)
    footers = [f for f in comparisons.chats[2].findChildren(RunFooter) if f.isVisibleTo(comparisons.chats[2])]
    assert len(footers) == 1 and footers[0].regen_button.isEnabled()
    footers[0].regen_button.click()
    assert comparisons.running
    await wait_until(lambda: not comparisons.running and comparisons.stats.columns[2].status == "finished",
                     timeout=60, what="model-c's new answer")
    chats = [r for r in server.requests[asked:] if isinstance(r, dict)]
    assert [r["model"] for r in chats] == ["model-c"]
    now = store.get_thread(compare.thread_ids[2]).current_turn_id
    assert now != first and [t.id for t in store.siblings(first)] == [first, now]  # a new branch, as ↻ makes
    assert "Answer of model-c: done" in dump_state(comparisons.chats[2].presenter.state)
    assert comparisons.view is not None and compare_app.window.chat.isHidden()  # still comparing
    for index in (0, 1):  # the others keep their one answer
        assert len(store.siblings(store.get_thread(compare.thread_ids[index]).current_turn_id)) == 1


async def test_each_candidates_proposal_is_verified_once(server: FakeLLMServer, folder: Path, db_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from workspace import events as ev
    from workspace.isolation import SandboxUnavailable, sandbox_for_platform
    from workspace.session import verify

    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
        pytest.skip(f"no sandbox on this machine: {exc}")
    runs: list[str] = []
    real = verify.run_verify

    async def counted(command: str, changes: Any, **kw: Any) -> Any:
        runs.append(changes.thread_id)
        return await real(command, changes, **kw)

    monkeypatch.setattr(verify, "run_verify", counted)
    config = load_config(folder, env={}, overrides={
        "llm": {"model": "openai/model-a", "max_retries": 1, "api_base": server.base_url + "/v1"},
        "review": {"verify": "grep -q 'B two' app.py"}})  # only model-b's proposal passes
    async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light", size=(1400, 900)) as root:
        root.controller.set_robot("file-helper")
        comparisons = await compared(root, server)
        await wait_until(lambda: comparisons.review is not None, timeout=60, what="the verify and the review")
        assert [c.verify for c in comparisons.stats.columns] == [False, True, False]
        threads = comparisons.session.thread_ids
        assert sorted(runs) == sorted(threads), runs  # one verify run per candidate
        store = root.controller.require_store()
        for thread_id in threads:
            recorded = [e for _turn, e in store.thread_events(thread_id) if isinstance(e, ev.VerifyFinished)]
            assert len(recorded) == 1, (thread_id, recorded)


async def test_after_a_combined_apply_every_candidates_card_and_row_says_what_was_decided(
        compare_app: Any, server: FakeLLMServer, folder: Path) -> None:
    from workspace import events as ev

    window = compare_app.window
    comparisons = await compared(compare_app, server)
    compare = comparisons.session
    review = comparisons.review
    window.commands.by_name["review_full"].trigger()  # during a comparison: the combined review, not an empty one
    pane = window.docks.changes_pane
    assert pane.review_window is None or not pane.review_window.isVisible()
    assert window.docks["changes"].widget() is review
    review.set_accepted("c0.f1.h1")
    review.apply()
    await wait_until(lambda: review.result is not None, timeout=60, what="the combined apply")
    cards = [chat.change_card(session.changes.id) for chat, session in zip(comparisons.chats, compare.sessions,
                                                                           strict=True)]
    assert [card.status for card in cards] == ["decided"] * 3
    assert [card._pill.text() for card in cards] == ["1 applied · 1 rejected", "rejected", "rejected"]
    assert review.items["c0.f1.h1"].text(1).endswith("· applied")
    assert review.items["c1.f1.h1"].text(1).endswith("· not taken")
    store = compare.workspace.store
    for thread_id in compare.thread_ids:  # kept with each thread: its card says so when it opens again
        assert [e for _t, e in store.thread_events(thread_id) if isinstance(e, ev.ChangeDecided)], thread_id
    comparisons.view.headers[1].keep.click()  # "Keep this one": the chat shows that thread's card as decided
    await wait_until(lambda: window.chat.change_card(compare.sessions[1].changes.id) is not None,
                     what="the kept thread's card")
    assert window.chat.change_card(compare.sessions[1].changes.id).status == "decided"


async def test_two_candidates_same_hunk_is_no_conflict_in_the_combined_review(folder: Path, db_path: Path) -> None:
    from fakes.candidates import BASE
    from fakes.llm_server import Reply

    from ui.compare.session import CandidateSpec

    def same(body: dict[str, Any]) -> Reply:  # every model writes the same line 2
        if any(m.get("role") == "tool" for m in body["messages"]):
            return Reply.say("done")
        return Reply.tool("write_file", {"path": "app.py", "content": BASE.replace("line 2\n", "two\n")})

    with FakeLLMServer(reply_fn=same, models=["model-a", "model-b"]) as server:
        config = load_config(folder, env={}, overrides={
            "llm": {"model": "openai/model-a", "max_retries": 1, "api_base": server.base_url + "/v1"}})
        async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light",
                               size=(1400, 900)) as root:
            root.controller.set_robot("file-helper")
            comparisons = root.window.comparisons
            assert comparisons.start([CandidateSpec("file-helper", model="openai/model-b",
                                                    api_base=server.base_url + "/v1")])
            comparisons.send("Edit app.py")
            await wait_until(lambda: comparisons.review is not None, timeout=60, what="the combined review")
            review = comparisons.review
            assert "same as c1.f1.h1" in review.items["c0.f1.h1"].text(2)
            review.set_accepted("c0.f1.h1")
            review.set_accepted("c1.f1.h1")
            assert not review.overlap_panes and review.apply_button.isEnabled(), review.status.text()
            review.set_accepted("c1.f1.h1", False)  # one of them is enough: the other's row says applied too
            review.apply()
            await wait_until(lambda: review.result is not None, timeout=60, what="the apply")
            assert (folder / "app.py").read_text() == BASE.replace("line 2\n", "two\n")
            assert all(item.text(1).endswith("· applied") for item in review.items.values())


async def test_at_1024_a_columns_change_card_keeps_its_note_readable(compare_app: Any, server: FakeLLMServer) -> None:
    import asyncio

    from PySide6.QtCore import QPoint

    from ui.chat.view.change_card import NOTE_MIN_WIDTH

    comparisons = await compared(compare_app, server)
    compare_app.window.resize(1024, 640)
    await wait_until(lambda: compare_app.window.width() == 1024, what="the window at 1024 px")
    await asyncio.sleep(0.1)
    for chat, session in zip(comparisons.chats, comparisons.session.sessions, strict=True):
        card = chat.change_card(session.changes.id)
        assert card is not None
        note, button = card.note, card.review_button
        # Beside the button with room for a few words, or above it: never a word a line.
        assert note.width() >= min(NOTE_MIN_WIDTH, card.width() - 24), f"the note has {note.width()} px"
        below = note.mapTo(card, QPoint(0, note.height())).y() <= button.mapTo(card, QPoint(0, 0)).y()
        assert below or note.width() >= NOTE_MIN_WIDTH
        assert button.width() >= button.sizeHint().width(), "Review changes is cut"
        assert button.mapTo(card, QPoint(button.width(), 0)).x() <= card.width()
    review = comparisons.review  # the combined list: the file row says its hunks in its one column
    top = review.tree.topLevelItem(0)
    assert top.text(0) == "app.py · 6 hunks" and top.isFirstColumnSpanned()
    assert review.tree.columnWidth(1) <= 120 and review.items["c1.f1.h1"].toolTip(1) == "openai/model-b"
