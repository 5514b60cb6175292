"""Cancel in the evals view while the cases' threads are being written: the cases that were running are listed
as stopped (⊘, their reason, their thread opens), the matrix counts only the cases that ended, the progress line
says what happened, and Run again on the same database passes every case. The model is the loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.echo_eval import CASES, EchoModel, echo_eval_file
from fakes.llm_server import FakeLLMServer

from tests.fakes.app_window import wait_until
from ui.evals.view import THREAD_ROLE, EvalsDialog
from workspace.persistence import Store


async def test_cancel_lists_the_stopped_cases_and_a_rerun_passes(qapp_instance: Any, tmp_path: Path) -> None:
    model = EchoModel()
    opened: list[str] = []
    with Store.open(tmp_path / "threads.db") as store, FakeLLMServer(reply_fn=model) as server:
        path = echo_eval_file(tmp_path, server)
        dialog = EvalsDialog(store_of=lambda: store, open_thread=opened.append)
        task = dialog.start(path)
        assert task is not None
        await wait_until(lambda: len(store.list_threads(include_evals=True)) >= 2 and server.requests,
                         what="cases to be running")
        dialog.cancel_button.click()
        await wait_until(task.done, what="the eval to stop")
        assert task.cancelled()
        # (the view hears of the end in the task's done callback, a turn of the loop after the task is done)
        await wait_until(lambda: dialog.progress.text().startswith("Cancelled"), what="the view told of the end")
        stopped = [dialog.failures.item(i) for i in range(dialog.failures.count())]
        assert stopped and all(item.text().startswith("⊘ ") and "stopped (the eval was cancelled)" in item.text()
                               for item in stopped)
        assert dialog.progress.text() == (
            f"Cancelled: 0 result(s) came in before. {len(stopped)} case(s) running were stopped: their threads are "
            "kept, marked cancelled (double-click one below to open it).")
        assert dialog.matrix.rowCount() == 0  # no case ended: nothing counted
        threads = {t.id: t for t in store.list_threads(include_evals=True)}
        for item in stopped:
            thread_id = item.data(THREAD_ROLE)
            assert [turn.status for turn in store.turns(thread_id)] == ["cancelled"]
            assert threads[thread_id].metadata["eval_case"] in item.text()
        dialog.failures.itemDoubleClicked.emit(stopped[0])
        assert opened == [stopped[0].data(THREAD_ROLE)]
        assert dialog.run_button.isEnabled() and not dialog.cancel_button.isEnabled()

        model.stalling.clear()
        dialog.run_button.click()
        assert dialog.task is not None and dialog.task is not task
        await wait_until(dialog.task.done, timeout=120, what="the second run to end")
        assert dialog.report is not None and dialog.report.passed
        assert dialog.matrix.item(0, 0).text() == f"{len(CASES)}/{len(CASES)} ✓"
        assert dialog.failures.count() == 0
        dialog.close()
