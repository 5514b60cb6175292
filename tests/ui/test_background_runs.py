"""Runs in the background: a run belongs to its thread, not to the open view. Switching threads leaves it
going; coming back shows what came so far and goes on live, or the finished answer; the sidebar shows each
thread's run state; an approval asked in a background thread waits and Ctrl+J goes to it; quitting with runs
going asks first, naming them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.fakes.app_window import wait_until
from ui.threads.model import ThreadListModel
from workspace.providers.testing import ScriptedProvider, ToolCall

#: A long answer, streamed a word at a time with a pause after each: long enough to switch threads mid-way.
WORDS = [f"w{i:02d}" for i in range(40)]
LONG = " ".join(WORDS)


@pytest.fixture
def provider() -> Any:
    return ScriptedProvider(delay=0.03)


def answer(w: Any) -> str:
    """The last answer the open thread's chat shows."""
    for turn in reversed(w.chat.presenter.state.turns):
        for run in reversed(turn.top_runs):
            if run.answer_text.strip():
                return str(run.answer_text)
    return ""


def row_state(w: Any, thread_id: str) -> tuple[Any, str]:
    """(the run state the sidebar's row holds, its accessible text) of ``thread_id``."""
    model = w.thread_model
    index = model.index(model.row_of(thread_id))
    return index.data(ThreadListModel.RunStateRole), str(index.data(Qt.ItemDataRole.AccessibleTextRole))


async def idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="every run to end")
    await asyncio.sleep(0.05)


async def a_finished_thread(root: Any, provider: Any, text: str) -> str:
    """A thread with one short answer (sent and ended); its id."""
    w = root.window
    provider.enqueue(f"Answer to {text}.")
    w.threads.new()
    w.runs.send(text)
    await idle(root)
    thread_id = root.controller.thread_id
    assert thread_id
    return str(thread_id)


async def test_a_run_goes_on_in_another_thread_and_its_thread_shows_it_live_then_finished(
        desktop: Any, provider: Any) -> None:
    w, c = desktop.window, desktop.controller
    other = await a_finished_thread(desktop, provider, "other")
    provider.enqueue(LONG, LONG)
    w.threads.new()
    w.runs.send("write long")
    await wait_until(lambda: "w03" in answer(w), what="the first words")
    long_thread = c.thread_id
    assert long_thread

    w.threads.open(other)  # the run goes on
    assert c.thread_id == other and not c.running
    assert answer(w) == "Answer to other."
    assert c.run_states() == {long_thread: "streaming"}
    await wait_until(lambda: row_state(w, long_thread)[0] == "streaming", what="the sidebar's streaming state")
    assert "answering now" in row_state(w, long_thread)[1]
    assert row_state(w, other)[0] is None
    assert not w.composer.running  # the open thread has nothing going: its message box sends

    w.threads.open(long_thread)  # still streaming: what came so far, then live
    assert c.running
    assert "w00" in answer(w)
    await wait_until(lambda: c.idle, what="the long run to end")
    await asyncio.sleep(0.1)
    assert answer(w) == LONG  # every word once: the stored part and the live part join without a seam

    # Again, and this time come back only after it ended: the finished answer, from the store.
    w.runs.send("again")
    await wait_until(lambda: "w03" in answer(w), what="the first words of the second answer")
    w.threads.open(other)
    await wait_until(lambda: c.run_states().get(long_thread) == "finished", what="the run to end out of sight")
    await wait_until(lambda: row_state(w, long_thread)[0] == "finished", what="the sidebar's finished state")
    assert "finished, not seen yet" in row_state(w, long_thread)[1]
    w.threads.open(long_thread)
    assert answer(w) == LONG and [t.user.text for t in w.chat.presenter.state.turns if t.user] == \
        ["write long", "again"]
    assert c.run_states() == {}  # seen
    await wait_until(lambda: row_state(w, long_thread)[0] is None, what="the finished mark to go once seen")


async def test_two_threads_run_at_once(desktop: Any, provider: Any, tmp_path: Path) -> None:
    w, c = desktop.window, desktop.controller
    provider.enqueue(LONG, LONG)
    w.threads.new()
    w.runs.send("first")
    first = c.thread_id
    await wait_until(lambda: "w01" in answer(w), what="the first thread's first words")
    w.threads.new()
    w.runs.send("second")  # sent while the first thread's run goes on
    await wait_until(lambda: c.thread_id is not None and c.thread_id != first, what="the second thread")
    second = c.thread_id
    await wait_until(lambda: len(c.runs_going()) == 2, what="two runs going")
    assert dict(c.runs_going()) == {first: "streaming", second: "streaming"}
    with pytest.raises(RuntimeError, match=r"2 runs are going \(‘first’, ‘second’\)"):
        c.set_folder(tmp_path)  # names them: Esc alone stops only the open thread's
    await idle(desktop)
    assert answer(w) == LONG
    w.threads.open(first)
    assert answer(w) == LONG


async def test_an_approval_asked_in_a_background_thread_waits_and_ctrl_j_goes_to_it(
        desktop: Any, provider: Any) -> None:
    w, c = desktop.window, desktop.controller
    c.workspace.approval.policy.set_rule("ask", tool="remember")
    other = await a_finished_thread(desktop, provider, "other")
    provider.enqueue([" ".join(WORDS[:12]), ToolCall("remember", {"key": "colour", "value": "teal"}, id="c1")],
                     "Noted the colour.")
    w.threads.new()
    w.runs.send("remember the colour")
    asking = c.thread_id
    await wait_until(lambda: "w01" in answer(w), what="the first words")
    w.threads.open(other)  # before the robot asks
    await wait_until(lambda: c.waiting_approvals(), what="the approval to be asked")
    assert [t for t, _r, _f in c.waiting_approvals()] == [asking]
    assert w.chat.pending_approval() is None  # not in the open thread's chat
    assert c.run_states() == {asking: "approval"}
    await wait_until(lambda: row_state(w, asking)[0] == "approval", what="the sidebar's approval state")
    assert "waiting for your approval" in row_state(w, asking)[1]
    assert w.status.waiting.isVisibleTo(w) and w.status.waiting.text() == "1 waiting for you"
    assert w.notifier.sent and w.notifier.sent[-1][0] == "Approval needed"  # the window's own notice: in front
    await asyncio.sleep(0.3)
    assert c.waiting_approvals()  # it waits: not denied for being out of sight

    action = w.commands.by_name["approval"]
    assert action.shortcut().toString() == "Ctrl+J"
    action.trigger()
    assert c.thread_id == asking
    await wait_until(lambda: w.chat.pending_approval() is not None, what="the approval card")
    panel = w.chat.pending_approval()
    await wait_until(lambda: panel.hasFocus() or panel.isAncestorOf(QApplication.focusWidget()),
                     what="the card to get the keyboard")
    panel.approve()
    await idle(desktop)
    assert answer(w).endswith("Noted the colour.")
    assert c.run_states() == {} and not w.status.waiting.isVisibleTo(w)


async def test_a_run_failing_in_the_background_marks_its_thread_and_says_so(desktop: Any, provider: Any) -> None:
    w, c = desktop.window, desktop.controller
    other = await a_finished_thread(desktop, provider, "other")
    w.threads.new()
    w.runs.send("nothing is queued for this one")  # the scripted model has no reply: the run fails
    failing = c.thread_id
    assert failing
    w.threads.open(other)
    await wait_until(lambda: c.run_states().get(failing) == "failed", what="the run to fail out of sight")
    await wait_until(lambda: row_state(w, failing)[0] == "failed", what="the sidebar's failed state")
    assert row_state(w, failing)[1].startswith(w.thread_model.item(w.thread_model.row_of(failing)).title + ", failed")
    assert w.notifier.sent[-1][0] == "A run failed"


async def test_changes_proposed_in_the_background_wait_for_review(provider: Any, db_path: Path,
                                                                  tmp_path: Path) -> None:
    from tests.fakes.app_window import running_app
    from workspace.config import load_config

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    config = load_config(folder, overrides={"review": {"mode": "review"}})
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config,
                           size=(1200, 800)) as root:
        w, c = root.window, root.controller
        other = await a_finished_thread(root, provider, "other")
        c.set_robot("file-helper")  # the shipped robot with the file tools
        provider.enqueue([" ".join(WORDS[:10]),
                          ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"}, id="e1")],
                         "Proposed: beta in capitals.")
        w.threads.new()
        w.runs.send("capitalise beta")
        editing = c.thread_id
        assert editing
        await wait_until(lambda: "w01" in answer(w), what="the first words")
        w.threads.open(other)
        await wait_until(lambda: c.run_states().get(editing) == "review", what="the run to end with changes")
        await wait_until(lambda: row_state(w, editing)[0] == "review", what="the sidebar's review state")
        assert "changes waiting for your review" in row_state(w, editing)[1]
        assert c.waiting_for_you() == 1 and w.status.waiting.text() == "1 waiting for you"
        assert (folder / "notes.txt").read_text(encoding="utf-8") == "alpha\nbeta\n"  # nothing written before Apply
        assert w.notifier.sent[-1][0] == "Changes to review"
        w.status.waiting.click()  # no approval waits: the thread whose changes wait, with the Changes dock
        assert c.thread_id == editing
        assert c.waiting_for_you() == 0


async def test_a_change_card_shown_again_mid_run_is_the_one_the_reopened_thread_shows(provider: Any, db_path: Path,
                                                                                     tmp_path: Path) -> None:
    from tests.fakes.app_window import running_app
    from tests.ui.chat_dump import assert_same, reopen, snapshot
    from workspace import events as ev
    from workspace.config import load_config
    from workspace.providers.testing import Pause

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    config = load_config(folder, overrides={"review": {"mode": "review"}})
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config,
                           size=(1200, 800)) as root:
        w, c = root.window, root.controller
        c.set_robot("file-helper")
        provider.enqueue([ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"}, id="e1")],
                         [Pause(1.0), "Proposed: beta in capitals."])
        w.runs.send("capitalise beta")
        editing = c.thread_id
        assert editing
        await wait_until(lambda: any(isinstance(e, ev.ChangeProposed) for e in c.session.run.events),
                         what="the proposal")
        w.threads.new()  # left with its change card shown
        w.threads.open(editing)  # and back while the model is still thinking
        assert c.running and len(w.chat.presenter.all_change_items()) == 1
        await idle(root)
        live = snapshot(root)
        assert len(w.chat.presenter.all_change_items()) == 1 and "Proposed: beta in capitals." in answer(w)
        assert_same(live, await reopen(root))


async def test_quitting_with_runs_going_asks_and_cancel_keeps_them(desktop: Any, provider: Any) -> None:
    w, c = desktop.window, desktop.controller
    provider.enqueue(LONG, LONG)
    w.threads.new()
    w.runs.send("Refactor the parser")
    await wait_until(lambda: "w01" in answer(w), what="the first words")
    assert not w.close()  # asked first
    box = w.quit_box
    assert box is not None and box.isVisible()
    assert box.text() == "A run is going: ‘Refactor the parser’ (streaming). Quit and stop it?"
    box.button(QMessageBox.StandardButton.Cancel).click()
    await asyncio.sleep(0.1)
    assert w.isVisible() and c.running  # Cancel: it goes on
    await idle(desktop)
    assert answer(w) == LONG

    w.runs.send("Fix tests")
    await wait_until(lambda: c.running and not c.idle, what="the second run")
    assert not w.close()
    assert "Quit and stop it?" in box.text()
    quit_button = next(b for b in box.buttons() if b.text() == "Quit and stop them")
    quit_button.click()
    await wait_until(lambda: not w.isVisible(), what="the window to close")
    await wait_until(lambda: c.idle, what="the run to be stopped")


async def test_a_network_run_left_and_shown_again_mid_way_ends_as_its_reopened_thread(db_path: Path) -> None:
    """A network's lanes and totals, shown again from the run's own events after going on out of sight, are
    what the store shows once it ended."""
    from tests.fakes.app_window import running_app
    from tests.ui.chat_dump import assert_same, reopen, snapshot
    from workspace.providers.demo import DemoProvider

    async with running_app(provider=DemoProvider(delay=0.01), db_path=db_path, theme_name="light",
                           size=(1400, 900)) as root:
        w, c = root.window, root.controller
        w.threads.new()
        w.robot_picker.setCurrentIndex(w.robot_model.row_of("parallel-analysis", "network"))
        w.runs.send("The new Acme dashboard is fast, but the export is broken.")
        network_thread = c.thread_id
        assert network_thread
        await wait_until(lambda: len(c.session.run.events) > 20 if c.session and c.session.run else False,
                         what="the network under way")
        w.threads.new()  # left mid-way
        await asyncio.sleep(0.3)
        assert c.run_states() == {network_thread: "streaming"}
        w.threads.open(network_thread)  # shown again while it goes on
        await wait_until(lambda: c.idle, timeout=60, what="the network run to end")
        await asyncio.sleep(0.1)
        live = snapshot(root)
        assert "[done]" in live["widgets"]
        assert_same(live, await reopen(root))


async def test_a_background_runs_mark_survives_a_restart_until_its_thread_is_seen(provider: Any,
                                                                                  db_path: Path) -> None:
    from tests.fakes.app_window import running_app

    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        w, c = root.window, root.controller
        other = await a_finished_thread(root, provider, "other")
        w.threads.new()
        w.runs.send("nothing is queued for this one")  # the scripted model has no reply: the run fails
        failing = c.thread_id
        assert failing
        w.threads.open(other)
        await wait_until(lambda: c.run_states().get(failing) == "failed", what="the run to fail out of sight")
        assert c.require_store().get_thread(failing).metadata["run_mark"] == "failed"

    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        w, c = root.window, root.controller
        w.threads.refresh()
        await wait_until(lambda: row_state(w, failing)[0] == "failed", what="the failed mark after the restart")
        assert "failed" in row_state(w, failing)[1]
        w.threads.open(failing)  # seen: the mark goes, in the store too
        await wait_until(lambda: row_state(w, failing)[0] is None, what="the mark to go once seen")
        assert "run_mark" not in c.require_store().get_thread(failing).metadata

    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        root.window.threads.refresh()
        assert root.controller.run_states() == {}


@pytest.mark.parametrize("limit", [1, 2])
async def test_two_background_threads_share_one_local_servers_limit(db_path: Path, limit: int) -> None:
    """Two threads' runs against one server on this machine, over real HTTP: with the provider's limit at 1
    (the local default) the second queues until the first is done, at 2 both stream at once; both finish."""
    from fakes.llm_server import FakeLLMServer, Reply

    from tests.fakes.app_window import running_app
    from workspace.config import load_config

    def reply(body: dict[str, Any]) -> Reply:  # a slow stream: long enough for the other thread's request to come
        return Reply.say(f"{LONG} from {body['messages'][-1]['content']}", chunk_size=4, chunk_delay=0.01)

    with FakeLLMServer(reply_fn=reply) as server:
        llm = {"model": "openai/local-model", "max_retries": 0, "api_base": server.base_url + "/v1"}
        if limit != 1:
            llm["max_concurrent_requests"] = limit
        config = load_config(env={}, overrides={"llm": llm})
        async with running_app(db_path=db_path, config=config, theme_name="light", size=(1200, 800)) as root:
            w, c = root.window, root.controller
            w.threads.new()
            w.runs.send("first")
            await wait_until(lambda: c.thread_id is not None, what="the first thread")
            first = c.thread_id
            w.threads.new()
            w.runs.send("second")  # while the first streams, in the background now
            await wait_until(lambda: c.thread_id not in (None, first), what="the second thread")
            assert c.thread_id != first
            await wait_until(lambda: len(c.runs_going()) == 2, what="two runs going")
            await wait_until(lambda: c.idle, timeout=60, what="both runs to end")
            await asyncio.sleep(0.05)
            assert server.max_concurrent == limit  # never more in flight at once than the limit
            assert c.run_states() == {first: "finished"}  # the first ended out of sight
            assert answer(w) == f"{LONG} from second"
            w.threads.open(first)
            assert answer(w) == f"{LONG} from first"
