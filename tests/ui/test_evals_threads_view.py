"""The evals view in the window: each case's run is recorded as a thread of the window's database, left out of
the thread list, and a double-click on a failure (or on a cell of the matrix) opens that thread in the chat;
the robots' and judges' tokens are shown. An eval file edited while it runs: the run keeps the version it
started with and says so; the next run reads the new one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from tests.fakes.app_window import wait_until
from tests.ui.eval_files import TWO_CASES, eval_folder
from ui.evals.view import THREAD_ROLE, EvalsDialog


def answer(window: Any) -> str:
    """The last answer the open thread's chat shows."""
    for turn in reversed(window.chat.presenter.state.turns):
        for run in reversed(turn.top_runs):
            if run.answer_text.strip():
                return str(run.answer_text)
    return ""


async def test_a_failure_and_a_cell_open_the_cases_thread_in_the_chat(desktop: Any, tmp_path: Path) -> None:
    path = eval_folder(tmp_path) / "two.yaml"
    window, controller = desktop.window, desktop.controller
    window.commands.by_name["run_evals"].trigger()
    (dialog,) = [d for d in window.findChildren(EvalsDialog) if d.isVisible()]
    task = dialog.start(path)
    assert task is not None
    await asyncio.wait_for(task, 120)
    assert dialog.report is not None
    results = {r.case: r for r in dialog.report.results}
    assert all(r.thread_id for r in results.values())
    assert "Tokens: robots " in dialog.progress.text() and "no judge asked" in dialog.progress.text()
    assert "double-click a failure or a cell to open it" in dialog.progress.text()
    # The eval's threads are in the database, not in the thread list.
    store = controller.store
    assert {store.get_thread(r.thread_id).metadata["eval_case"] for r in results.values()} == {"the-list", "fruit"}
    window.threads.refresh()
    listed = [item.thread_id for item in window.thread_model.items]
    assert not set(listed) & {r.thread_id for r in results.values()}
    # The failure row (fruit) opens fruit's thread: its message and the demo robot's answer in the chat.
    (item,) = [dialog.failures.item(i) for i in range(dialog.failures.count())]
    assert item.text().startswith("✗ fruit") and "robot: " in item.text()
    assert item.data(THREAD_ROLE) == results["fruit"].thread_id
    dialog.failures.itemDoubleClicked.emit(item)
    await wait_until(lambda: controller.thread_id == results["fruit"].thread_id, what="fruit's thread to open")
    said = results["fruit"].outcome.answer  # (the run's last text; the chat shows the whole run's)
    await wait_until(lambda: said and said in answer(window), what="its answer in the chat")
    assert [t.user.text for t in window.chat.presenter.state.turns if t.user] == ["list the files"]
    assert window.title_label.text() == "Eval fruit · offline-demo"
    # Another thread open; the cell's double-click opens its first failed case again.
    window.threads.new()
    await wait_until(lambda: controller.thread_id is None, what="a new thread")
    dialog.matrix.cellDoubleClicked.emit(0, 0)
    await wait_until(lambda: controller.thread_id == results["fruit"].thread_id, what="the cell's failed case")
    dialog.close()


async def test_a_cell_with_no_failure_opens_its_first_case(qapp_instance: Any, tmp_path: Path) -> None:
    from workspace.persistence import Store

    path = eval_folder(tmp_path, TWO_CASES.replace('"banana"', '"orders.csv"')) / "two.yaml"
    opened: list[str] = []
    with Store.open(tmp_path / "threads.db") as store:
        dialog = EvalsDialog(store_of=lambda: store, open_thread=opened.append)
        task = dialog.start(path)
        assert task is not None
        await asyncio.wait_for(task, 120)
        assert dialog.report is not None and dialog.report.passed
        dialog.open_cell(0, 0)
        first = dialog._results[0]
        assert opened == [first.thread_id] and first.thread_id is not None
        dialog.close()


async def test_an_eval_file_edited_while_it_runs(qapp_instance: Any, tmp_path: Path) -> None:
    many = TWO_CASES + "".join(f"  - name: more-{i}\n    message: \"list the files\"\n    folder: fixtures/shop\n"
                               "    expect:\n      - regex: 'orders\\.csv'\n" for i in range(6))
    path = eval_folder(tmp_path, many) / "two.yaml"
    dialog = EvalsDialog()
    dialog.show()
    task = dialog.start(path)
    assert task is not None
    await wait_until(lambda: dialog._results, what="a first result")
    assert not task.done(), "the run ended before the edit: give it more cases"
    # Saved while it runs: fruit now expects what the answer has, and a case is added.
    edited = many.replace('"banana"', '"orders.csv"') + ("  - name: added\n    message: \"list the files\"\n"
                                                         "    folder: fixtures/shop\n")
    path.write_text(edited, encoding="utf-8")
    await asyncio.wait_for(task, 120)
    assert dialog.report is not None
    # The run kept the version it started with: fruit failed as it was written then, no case was added.
    assert sorted(r.case for r in dialog.report.results) == sorted(["the-list", "fruit", *(f"more-{i}" for i in
                                                                                           range(6))])
    assert [r.case for r in dialog.report.results if not r.passed] == ["fruit"]
    assert dialog.edited_while_running and dialog.notice.isVisible()
    assert dialog.notice.text() == ("The eval file was edited while this run went on: this run keeps the version "
                                    "it started with; Run again to use the new one.")
    # The next run reads the new version, and the notice goes.
    again = dialog.start()
    assert again is not None
    assert not dialog.notice.isVisible()
    await asyncio.wait_for(again, 120)
    assert dialog.report is not None and dialog.report.passed and len(dialog.report.results) == 9
    assert not dialog.edited_while_running and not dialog.notice.isVisible()
    assert dialog.matrix.item(0, 0).text() == "9/9 ✓"
    assert dialog.matrix.item(0, 0).data(Qt.ItemDataRole.ToolTipRole).endswith("(else its first case) as a thread")
    dialog.close()


async def test_an_eval_whose_folder_sends_the_key_elsewhere_is_refused_in_the_window(
    qapp_instance: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """Run evals… keeps the command line's rule: a robot file of the eval's folder naming an address off this
    machine is refused before any case runs, with the fix, and no case starts."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-window-evalkey-0123456789")
    (tmp_path / "bot.md").write_text("---\nname: bot\nmodel: openai/fake\napi_base: http://192.0.2.2:9/v1\ntools: []\n"
                                     "---\nYou are a bot.\n", encoding="utf-8")
    path = tmp_path / "evals.yaml"
    path.write_text("robot: bot.md\ncases:\n  - name: one\n    message: hi\n    expect:\n      - contains: pass\n",
                    encoding="utf-8")
    dialog = EvalsDialog()
    dialog.show()
    try:
        task = dialog.start(path)
        assert task is not None
        await asyncio.wait_for(task, 60)
        text = dialog.progress.text()
        assert text.startswith("The eval could not run:"), text
        assert "is not on this machine, and files in the opened folder may not send your provider key" in text
        assert "sk-window-evalkey" not in text
        assert dialog.report is None and not dialog._results
    finally:
        dialog.close()
