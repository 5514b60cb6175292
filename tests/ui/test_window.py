"""The window end to end on a ScriptedProvider: cards, approvals, stop, forks, persistence, bad databases."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.fakes.app_window import close_app, turns_made, wait_until
from tests.fakes.long_threads import add_tool_thread, question
from ui.chat.view.cards import ToolCard
from ui.chat.view.messages import RobotHeader, RunFooter, UserMessage
from ui.chat.view.stream import MarkdownStream
from workspace.providers.testing import Pause, ToolCall

ROOT = Path(__file__).resolve().parents[2]


async def _idle(root: Any, what: str = "the run to end") -> None:
    await wait_until(lambda: root.controller.idle, what=what)
    await asyncio.sleep(0.05)  # let the last flush and repaint happen


def _kinds(root: Any) -> list[str]:
    out = []
    for w in root.window.chat.items():
        if isinstance(w, UserMessage):
            out.append("user")
        elif isinstance(w, MarkdownStream):
            out.append("text")
        elif isinstance(w, ToolCard):
            out.append(f"tool:{w.tool}:{w.status}")
        elif isinstance(w, RobotHeader):
            out.append("robot")
        elif isinstance(w, RunFooter):
            out.append("footer")
    return out


async def test_text_and_two_tool_calls_make_cards_in_order(desktop: Any, provider: Any) -> None:
    provider.enqueue(
        ["Let me store and read that.", ToolCall("remember", {"key": "color", "value": "teal"}, id="c1"),
         ToolCall("recall", {"key": "size"}, id="c2")],
        "All **done**.",
    )
    desktop.window.runs.send("remember teal")
    await _idle(desktop)
    assert _kinds(desktop) == ["user", "robot", "text", "tool:remember:ok", "tool:recall:ok", "text", "footer"]
    cards = desktop.window.chat.tool_cards()
    assert [c.call_id for c in cards] == ["c1", "c2"]
    assert cards[0].arguments == {"key": "color", "value": "teal"}
    assert not cards[0].result_expanded  # results collapsed, arguments visible
    texts = [w.text for w in desktop.window.chat.items() if isinstance(w, MarkdownStream)]
    assert texts == ["Let me store and read that.", "All **done**."]
    # the inspector saw the same run
    assert [r.id for r in desktop.window.tool_model.records] == ["c1", "c2"]
    assert desktop.window.memory_model.entry("color") is not None
    assert "run_finished" in desktop.window.trace_model.kinds()
    # usage per run and per thread
    footer = next(w for w in desktop.window.chat.items() if isinstance(w, RunFooter))
    assert "tokens" in footer.usage.text()
    assert "tokens" in desktop.window.status.usage.text()
    assert desktop.window.thread_model.rowCount() == 1


async def test_denied_approval_returns_the_reason_to_the_model(desktop: Any, provider: Any) -> None:
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Understood, I won't.")
    desktop.window.runs.send("store k")
    await wait_until(lambda: desktop.window.chat.pending_approval() is not None, what="the approval card")
    panel = desktop.window.chat.pending_approval()
    assert '"key": "k"' in panel.editor.toPlainText()
    # keyboard: n focuses the reason; Enter there denies
    panel.setFocus()
    QTest.keyClick(panel, Qt.Key.Key_N)
    panel.reason.setText("not now, thanks")
    QTest.keyClick(panel.reason, Qt.Key.Key_Return)
    await _idle(desktop)
    last_call = provider.history[-1]
    result = last_call.messages[-1]
    assert result.is_tool_result and result.is_error
    assert "Denied by the user: not now, thanks" in str(result.error)
    card = desktop.window.chat.card("c1")
    assert card is not None and card.status == "denied"
    assert desktop.window.tool_model.find("c1").status == "denied"


async def test_edit_and_approve_runs_with_edited_arguments(desktop: Any, provider: Any) -> None:
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Stored.")
    desktop.window.runs.send("store k")
    await wait_until(lambda: desktop.window.chat.pending_approval() is not None, what="the approval card")
    panel = desktop.window.chat.pending_approval()
    panel.editor.setPlainText('{"key": "k", "value": 42}')
    panel.edit_and_approve()
    await _idle(desktop)
    call = provider.history[-1].messages[-1]
    assert call.is_tool_result and not call.is_error
    assert desktop.window.memory_model.entry("k").value == 42


async def test_approve_with_the_y_key(desktop: Any, provider: Any) -> None:
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Stored.")
    desktop.window.runs.send("store k")
    await wait_until(lambda: desktop.window.chat.pending_approval() is not None, what="the approval card")
    panel = desktop.window.chat.pending_approval()
    QTest.keyClick(panel, Qt.Key.Key_Y)
    await _idle(desktop)
    assert desktop.window.chat.card("c1").status == "ok"


async def test_typing_when_an_approval_appears_never_answers_it(desktop: Any, provider: Any) -> None:
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Stored.")
    window = desktop.window
    window.activateWindow()
    window.runs.send("store k")
    edit = window.composer.edit
    edit.setFocus()
    await wait_until(lambda: window.chat.pending_approval() is not None, what="the approval card")
    await asyncio.sleep(0.05)  # the card's reveal runs after it is attached
    focused = QApplication.focusWidget()
    QTest.keyClicks(focused if focused is not None else edit, "yes, now try")
    await asyncio.sleep(0.05)
    panel = window.chat.pending_approval()
    assert panel is not None and not panel.done  # still waiting for the user's decision
    assert window.chat.card("c1").status != "ok"
    window.runs.focus_approval()  # Ctrl+J: now the keys answer it
    QTest.keyClick(window.chat.pending_approval(), Qt.Key.Key_Y)
    await _idle(desktop)
    assert window.chat.card("c1").status == "ok"


async def test_stop_mid_stream_leaves_a_consistent_transcript(desktop: Any, provider: Any) -> None:
    gate = asyncio.Event()
    provider.enqueue(["Streaming the first part ", "of a long answer. ", Pause(event=gate), "never shown"])
    desktop.window.runs.send("tell me a long story")
    await wait_until(lambda: any(isinstance(w, MarkdownStream) and "long answer" in w.text
                                 for w in desktop.window.chat.items()), what="streamed text")
    assert desktop.window.composer.running
    assert not desktop.window.robot_picker.isEnabled()  # the running thread keeps its robot
    QTest.keyClick(desktop.window, Qt.Key.Key_Escape)  # Esc stops
    await _idle(desktop, "the run to stop")
    assert not desktop.window.composer.running
    assert desktop.window.robot_picker.isEnabled()
    footer = [w for w in desktop.window.chat.items() if isinstance(w, RunFooter)][-1]
    assert "Stopped" in footer.status.text()
    turns = desktop.controller.session.transcript()
    assert turns[-1].status == "cancelled"
    assert "long answer" in turns[-1].text and "never shown" not in turns[-1].text
    # the thread goes on after a stop
    provider.enqueue("Fine, a short one.")
    desktop.window.runs.send("short then")
    await _idle(desktop)
    assert desktop.controller.session.transcript()[-1].text == "Fine, a short one."


async def test_stop_while_an_approval_is_pending(desktop: Any, provider: Any) -> None:
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")])
    desktop.window.runs.send("store k")
    await wait_until(lambda: desktop.window.chat.pending_approval() is not None, what="the approval card")
    desktop.window.runs.escape()
    await _idle(desktop, "the run to stop")
    assert desktop.window.chat.pending_approval() is None
    assert desktop.controller.session.transcript()[-1].status == "cancelled"


async def test_edit_and_resend_forks_the_thread(desktop: Any, provider: Any) -> None:
    provider.enqueue("First answer.", "Second answer.")
    desktop.window.runs.send("first question")
    await _idle(desktop)
    message = desktop.window.chat.user_messages()[-1]
    assert message.turn_id is not None and message.sibling_count == 1
    message.begin_edit()
    message._edit_box.setPlainText("edited question")
    message._edit_finish(True)
    await _idle(desktop)
    users = desktop.window.chat.user_messages()
    assert [u.text for u in users] == ["edited question"]
    assert (users[0].sibling_index, users[0].sibling_count) == (1, 2)
    assert users[0].branch_label.text() == "2/2" and users[0].prev_button.isVisibleTo(users[0])
    # branch back to the original
    desktop.controller.switch_branch(users[0].turn_id, -1)
    await asyncio.sleep(0.05)
    users = desktop.window.chat.user_messages()
    assert [u.text for u in users] == ["first question"]
    assert users[0].branch_label.text() == "1/2"


async def test_regenerate_forks_too(desktop: Any, provider: Any) -> None:
    provider.enqueue("One.", "Two.")
    desktop.window.runs.send("q")
    await _idle(desktop)
    desktop.window.runs.regenerate_last()
    await _idle(desktop)
    turns = desktop.controller.session.transcript()
    assert turns[-1].sibling_count == 2 and turns[-1].text == "Two."


async def test_quit_and_reopen_restores_the_thread(provider: Any, db_path: Path) -> None:
    from ui.app import Application

    first = Application(provider=provider, db_path=db_path)
    first.window.show()
    provider.enqueue(["Noted.", ToolCall("remember", {"key": "a", "value": 1}, id="c1")], "Done.")
    first.window.runs.send("hello there")
    await _idle(first)
    thread_id = first.controller.thread_id
    await close_app(first)

    second = Application(provider=provider, db_path=db_path)
    second.window.show()
    try:
        assert second.window.thread_model.row_of(thread_id) == 0
        assert second.controller.thread_id == thread_id  # back where the user left off
        await asyncio.sleep(0.05)
        await turns_made(second.window.chat)
        assert _kinds(second) == ["user", "robot", "text", "tool:remember:ok", "text", "footer"]
        assert second.window.title_label.text() == "hello there"
        assert second.window.tool_model.find("c1") is not None
        second.window.threads.new()  # quitting on a new thread starts there next time
    finally:
        await close_app(second)
    third = Application(provider=provider, db_path=db_path)
    try:
        assert third.controller.thread_id is None
    finally:
        await close_app(third)


async def test_corrupt_database_gives_a_clear_message_and_the_app_still_works(provider: Any,
                                                                              tmp_path: Path) -> None:
    from ui.app import Application

    bad = tmp_path / "broken.db"
    bad.write_bytes(b"this is not a database" * 200)
    root = Application(provider=provider, db_path=bad)
    root.window.show()
    try:
        text = root.window.banner.text
        assert "not a usable" in text and str(bad) in text and "temporary database" in text
        provider.enqueue("Still here.")
        root.window.runs.send("are you there?")
        await _idle(root)
        assert root.controller.session.transcript()[-1].text == "Still here."
        assert bad.read_bytes().startswith(b"this is not")  # nothing was overwritten
        # The banner offers the fix; with this session's thread in the temporary database it says why not yet.
        banner = root.window.banner
        assert banner.action_button.text() == "Move aside and start fresh"
        banner.action_button.click()
        assert bad.read_bytes().startswith(b"this is not") and "temporary database" in banner.text
    finally:
        await close_app(root)


async def test_move_aside_and_start_fresh_from_the_banner(provider: Any, tmp_path: Path) -> None:
    from ui.app import Application

    bad = tmp_path / "broken.db"
    bad.write_bytes(b"this is not a database" * 200)
    root = Application(provider=provider, db_path=bad)
    root.window.show()
    try:
        root.window.banner.action_button.click()
        kept = list(tmp_path.glob("broken.db.corrupt-*"))
        assert len(kept) == 1 and kept[0].read_bytes().startswith(b"this is not")
        assert not root.window.banner.isVisible() and root.controller.store_error is None
        provider.enqueue("Kept now.")
        root.window.runs.send("hello")
        await _idle(root)
    finally:
        await close_app(root)
    from workspace.persistence import Store

    with Store.open(bad) as store:  # the fresh database holds the new thread
        assert len(store.list_threads()) == 1


async def test_locked_database_gives_a_clear_message(provider: Any, tmp_path: Path) -> None:
    from ui.app import Application

    path = tmp_path / "locked.db"
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        root = Application(provider=provider, db_path=path)
        root.window.show()
        try:
            assert "locked" in root.window.banner.text
            assert root.window.isVisible()
            assert root.window.banner.action_button.text() == "Try again"
            holder.execute("ROLLBACK")  # the other program lets go
            root.window.banner.action_button.click()
            assert root.controller.store_error is None and not root.window.banner.isVisible()
        finally:
            await close_app(root)
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()


async def test_threads_search_rename_delete_and_undo(desktop: Any, provider: Any) -> None:
    provider.enqueue("Bananas are yellow.", "Sky is blue.")
    desktop.window.runs.send("tell me about bananas")
    await _idle(desktop)
    desktop.window.threads.new()
    desktop.window.runs.send("and the sky")
    await _idle(desktop)
    assert desktop.window.thread_model.rowCount() == 2
    desktop.window.sidebar.search.setText("bananas")
    await wait_until(lambda: desktop.window.thread_model.searching, what="search results")
    assert desktop.window.thread_model.rowCount() == 1
    hit = desktop.window.thread_model.item(0)
    desktop.window.sidebar.search.clear()
    await wait_until(lambda: not desktop.window.thread_model.searching, what="the thread list")
    desktop.controller.rename_thread(hit.thread_id, "Fruit")
    assert "Fruit" in [i.title for i in desktop.window.thread_model.items]
    desktop.window.threads.delete(hit.thread_id)
    assert desktop.window.thread_model.rowCount() == 1
    assert desktop.window.toast.isVisible() and desktop.window.toast.button.text() == "Undo"
    desktop.window.toast.trigger()
    assert desktop.window.thread_model.rowCount() == 2
    assert desktop.controller.thread_id == hit.thread_id


async def test_deleting_a_thread_while_its_run_goes_stores_why_the_run_stopped(desktop: Any, provider: Any) -> None:
    """The thread's own run ends stored as stopped because the thread was deleted (not "stopped by the user"): Undo
    brings the thread back saying so."""
    from workspace import events as ev
    from workspace.delegation import THREAD_DELETED

    hold = asyncio.Event()
    provider.enqueue([Pause(event=hold), "Too late."])
    window, controller = desktop.window, desktop.controller
    window.runs.send("take your time")
    await wait_until(lambda: controller.last_run is not None and provider.history, what="the model to be asked")
    thread_id, run_id = controller.thread_id, controller.last_run.run_id
    window.threads.delete(thread_id)
    await _idle(desktop, "the deleted thread's run to stop")
    hold.set()
    ends = [e for _turn, e in controller.store.thread_events(thread_id) if e.run_id == run_id and e.terminal]
    assert [(type(e), e.reason) for e in ends] == [(ev.RunCancelled, THREAD_DELETED)]

    window.toast.trigger()  # Undo: the thread opens again, its turn says why its run stopped
    await wait_until(lambda: controller.thread_id == thread_id and window.chat.presenter.run(run_id) is not None,
                     what="the thread's turn again")
    end = window.chat.presenter.run(run_id).end
    assert end is not None and end.outcome == "cancelled"
    assert end.status_text == "■ Stopped — you deleted the thread"


async def test_keyboard_palette_and_shortcuts(desktop: Any) -> None:
    window = desktop.window
    QTest.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    assert window.command_palette.isVisible()
    QTest.keyClicks(window.command_palette.input, "dark")
    assert window.command_palette.labels()[0].startswith("Dark theme")
    QTest.keyClick(window.command_palette.input, Qt.Key.Key_Escape)
    assert not window.command_palette.isVisible()
    shortcuts = {name: a.shortcut().toString() for name, a in window.commands.by_name.items()}
    assert shortcuts["send"] == "Ctrl+Return" and shortcuts["stop"] == "Esc"
    assert shortcuts["new_thread"] == "Ctrl+N" and shortcuts["search"] == "Ctrl+F"
    assert shortcuts["palette"] == "Ctrl+K" and shortcuts["next_thread"] == "Ctrl+Tab"
    assert shortcuts["settings"] == "Ctrl+,"


async def test_settings_dialog_saves_model_and_policy_without_secrets(desktop: Any) -> None:
    from workspace import paths

    window = desktop.window
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    assert (dialog.isVisible() and not dialog.isModal()) or dialog.isVisible()
    dialog.model.setEditText("ollama/llama3.1")
    dialog.api_base.setText("http://localhost:11434")
    dialog._add_rule("*", "*", "remember", "deny")
    dialog.save()
    text = paths.user_config_file().read_text(encoding="utf-8")
    assert "ollama/llama3.1" in text and "http://localhost:11434" in text
    assert "deny" in paths.approval_policy_file().read_text(encoding="utf-8")
    assert desktop.controller.workspace.approval.policy.rules[-1].tool == "remember"


def test_offscreen_smoke_command(tmp_path: Path) -> None:
    env = {**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen", "ROBOTLAB_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "ui.main", "--theme", "dark", "--folder", str(tmp_path),
                           "--offscreen-smoke"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "main window shown" in proc.stdout


async def test_long_thread_opens_with_its_last_turns_and_loads_the_rest(provider: Any, db_path: Path) -> None:
    from ui.app import Application
    from workspace.persistence import Store

    store = Store(db_path)
    thread_id = add_tool_thread(store, 250, title="Long")
    store.close()
    root = Application(provider=provider, db_path=db_path)
    root.window.show()
    try:
        root.window.threads.open(thread_id)
        chat = root.window.chat
        assert 0 < chat.hidden_turns <= 40  # the branch's last page read before the paint
        await turns_made(chat)
        users = chat.user_messages()  # (those near the screen: the others are placeholders until scrolled to)
        assert [u.text for u in users][-1] == question(249)
        assert len(chat.presenter.state.turns) == 10
        await wait_until(lambda: chat.hidden_turns == 240, what="the rest of the branch, read in a worker")
        # the inspector reads every event in a worker thread, then shows all 250 calls
        await wait_until(lambda: root.window.tool_model.rowCount() == 250, what="the inspector")
        chat.load_earlier()  # a page of data (a few turns a frame): its turns become widgets as they near the screen
        await wait_until(lambda: chat.hidden_turns == 200, what="a page of earlier turns")
        turns = chat.presenter.state.turns
        assert len(turns) == 50 and turns[0].user is not None and turns[0].user.text == question(200)
        assert chat.hidden_turns == 200
        assert {"c200", "c201"} <= {c.call_id for c in chat.presenter.calls()}
        assert len(chat.user_messages()) < 50
        # the thread goes on from its last turn
        provider.enqueue("answer 250")
        root.window.runs.send("question 250")
        await _idle(root)
        assert root.controller.session.transcript()[-1].text == "answer 250"
        assert root.window.tool_model.rowCount() == 250
    finally:
        await close_app(root)


async def test_inspector_panes_show_details_and_diff(desktop: Any, provider: Any) -> None:
    provider.enqueue(
        [ToolCall("remember", {"key": "a", "value": 1}, id="c1"), ToolCall("remember", {"key": "b", "value": 2},
                                                                         id="c2")],
        "ok",
    )
    desktop.window.runs.send("store two")
    await _idle(desktop)
    pane = desktop.window.docks.tool_pane
    pane.select_call("c2")
    assert "remember" in pane.args_view.toPlainText() and '"b"' in pane.args_view.toPlainText()
    assert '"stored": true' in pane.result_view.toPlainText()
    assert '"id": "c2"' in pane.raw_view.toPlainText()
    pane.table.selectAll()
    pane.show_diff()
    assert "---" in pane.diff_view.toPlainText() or "identical" in pane.diff_view.toPlainText()
    trace = desktop.window.docks.trace_pane
    trace.filter.setText("remember")
    assert 0 < trace.proxy.rowCount() < desktop.window.trace_model.rowCount()
    memory = desktop.window.docks.memory_pane
    assert memory.model.rowCount() == 2
    memory.table.selectRow(0)
    assert "a" in memory.detail.toPlainText()


async def test_export_writes_markdown_with_tool_calls(desktop: Any, provider: Any, tmp_path: Path) -> None:
    provider.enqueue([ToolCall("remember", {"key": "a", "value": 1}, id="c1")], "Stored it.")
    desktop.window.runs.send("store a")
    await _idle(desktop)
    target = tmp_path / "thread.md"
    desktop.window.transfer.write_export("markdown", desktop.controller.thread_id, target)
    text = target.read_text(encoding="utf-8")
    assert "store a" in text and "remember" in text and "Stored it." in text
    json_target = tmp_path / "thread.json"
    desktop.window.transfer.write_export("json", desktop.controller.thread_id, json_target)
    desktop.window.transfer.read_import(json_target)
    assert desktop.window.thread_model.rowCount() == 2


async def test_always_allow_is_saved_to_the_policy_file(desktop: Any, provider: Any) -> None:
    from workspace import paths

    policy = desktop.controller.workspace.approval.policy
    policy.set_rule("ask", tool="remember")
    policy.path = paths.approval_policy_file()
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Stored.",
                     [ToolCall("remember", {"key": "k", "value": 2}, id="c2")], "Stored again.")
    desktop.window.runs.send("store k")
    await wait_until(lambda: desktop.window.chat.pending_approval() is not None, what="the approval card")
    panel = desktop.window.chat.pending_approval()
    panel.scope.setCurrentIndex(panel.scope.findData("always"))
    panel.approve()
    await _idle(desktop)
    assert "remember" in paths.approval_policy_file().read_text(encoding="utf-8")
    desktop.window.runs.send("store k again")  # no card this time: the policy allows it
    await _idle(desktop)
    assert desktop.window.chat.card("c2").status == "ok"
    assert desktop.window.chat.card("c2").approval is None


async def test_picking_another_robot_starts_a_new_thread(desktop: Any, provider: Any) -> None:
    provider.enqueue("Hi.")
    desktop.window.runs.send("hello")
    await _idle(desktop)
    first = desktop.controller.thread_id
    row = desktop.window.robot_model.row_of("file-helper")
    desktop.window.robot_picker.setCurrentIndex(row)
    assert desktop.controller.session is None and desktop.controller.robot_name == "file-helper"
    assert "file-helper" in desktop.window.composer.edit.placeholderText()
    provider.enqueue("Ready to edit.")
    desktop.window.runs.send("hi file helper")
    await _idle(desktop)
    assert desktop.controller.thread_id != first
    assert desktop.controller.session.thread.robot == "file-helper"
    assert desktop.window.thread_model.rowCount() == 2


async def test_switching_theme_keeps_the_conversation(desktop: Any, provider: Any) -> None:
    from ui import theme

    provider.enqueue([ToolCall("remember", {"key": "a", "value": 1}, id="c1")], "Done.")
    desktop.window.runs.send("store a")
    await _idle(desktop)
    desktop.window.settings_flow.set_theme("dark")
    try:
        await turns_made(desktop.window.chat)
        assert theme.colors().name == "dark"
        assert _kinds(desktop) == ["user", "robot", "tool:remember:ok", "text", "footer"]
        # The status bar's state in the new theme's colours (a dark green on a dark bar was hard to read).
        css = desktop.window.status.connection.styleSheet()
        assert any(getattr(theme.DARK, k) in css for k in ("success", "warning", "accent", "error")), css
    finally:
        desktop.window.settings_flow.set_theme("light")


async def test_change_proposed_shows_a_change_card(desktop: Any) -> None:
    from workspace import events as ev

    chat = desktop.window.chat
    files = [{"path": "notes.txt", "action": "modify", "hunks": 1, "added": 2, "removed": 1}]
    desktop.bridge.feed(ev.ChangeProposed(run_id="r", robot="file-helper", seq=1, change_set_id="cs1", files=files))
    desktop.bridge.flush()
    card = chat.change_card("cs1")
    assert card is not None and "notes.txt" in card.listing.text() and card.status == "pending"
    outcome = [{"path": "notes.txt", "accepted": [0], "rejected": []}]
    desktop.bridge.feed(ev.ChangeDecided(run_id="r", robot="file-helper", seq=2, change_set_id="cs1",
                                         outcome=outcome))
    desktop.bridge.flush()
    assert card.status == "decided" and "1 hunk applied" in card.note.text()
    card.review_button.click()  # no Changes dock in this build: a message, not a crash
    assert desktop.window.toast.isVisible()


async def test_the_threads_cost_in_the_status_bar_is_never_a_made_up_zero(desktop: Any) -> None:
    """A model whose price nobody knows: "cost unknown", not "$0.00"; counts of our own are marked."""
    from workspace.result import Usage

    status = desktop.window.status
    desktop.controller.model_label = lambda: ("local/model", True)
    status.set_usage(Usage(120, 30, None))
    assert status.usage.text() == "Thread: 150 tokens · cost unknown"
    status.set_usage(Usage(120, 30, 0.0012))
    assert status.usage.text() == "Thread: 150 tokens · $0.0012"
    status.set_usage(Usage(120, 30, None, estimated=True))
    assert status.usage.text().startswith("Thread: ~150 tokens") and "reported none" in status.usage.toolTip()
    desktop.controller.model_label = lambda: ("Offline demo", False)
    for cost in (None, 0.0):
        status.set_usage(Usage(120, 30, cost))
        assert status.usage.text() == "Thread: 150 tokens"  # the demo is no model: nothing to price


def test_an_application_made_elsewhere_does_not_quit_when_its_last_window_closes(qapp_instance: Any) -> None:
    """A QApplication made by someone else (pytest-qt's ``qapp``, a host program) quits by default when its
    last window closes, which ends qasync's loop under the coroutines still running on it (the window's
    async shutdown among them): the app turns that off on whatever application it is given."""
    from ui.app import get_app

    qapp_instance.setQuitOnLastWindowClosed(True)
    assert get_app() is qapp_instance and not qapp_instance.quitOnLastWindowClosed()


async def test_the_inspectors_tabs_keep_their_names_in_a_restored_layout(provider: Any, db_path: Path) -> None:
    """Reopened, the docks' layout is restored with a new tab bar: its tabs keep their names and scroll,
    as on the first launch ("Tr…" for Trace said nothing)."""
    from PySide6.QtWidgets import QTabBar

    from ui.app import Application

    def dock_tabs(root: Any) -> list[QTabBar]:
        return [b for b in root.window.findChildren(QTabBar) if b.isVisible()
                and "Tool calls" in [b.tabText(i) for i in range(b.count())]]

    first = Application(provider=provider, db_path=db_path)
    first.window.resize(1280, 720)
    first.window.show()
    await wait_until(lambda: len(dock_tabs(first)) == 1, what="the inspector's tabs")
    assert dock_tabs(first)[0].elideMode() == Qt.TextElideMode.ElideNone
    await close_app(first)
    second = Application(provider=provider, db_path=db_path)
    second.window.resize(1280, 720)
    second.window.show()
    try:
        await wait_until(lambda: len(dock_tabs(second)) == 1, what="the inspector's tabs again")
        bar = dock_tabs(second)[0]
        assert bar.elideMode() == Qt.TextElideMode.ElideNone and bar.usesScrollButtons()
    finally:
        await close_app(second)


def test_a_notice_marks_its_level_with_a_drawn_icon(qapp_instance: Any) -> None:
    """"ⓘ" was a blank box where the font lacks it: each level's mark is a themed icon, the text is the text."""
    from ui.chat.view.messages import NoticeLine

    for level in ("info", "warning", "error"):
        line = NoticeLine("The answer was cut off at the token limit.", level=level)
        pixmap = line.mark.pixmap()
        assert pixmap is not None and not pixmap.isNull()
        assert line.label.text() == "The answer was cut off at the token limit."
        assert line.label.accessibleName() == f"{level}: The answer was cut off at the token limit."
