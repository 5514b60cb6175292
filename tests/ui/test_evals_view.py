"""The evals view and "Save as test case" in the window: an eval file of the offline demo robot (no key) runs
on the window's loop, the matrix fills in with pass rates in words, a failure is listed with its reason and a
cell filters the list; a second run compared with the first names the case that got worse; the open thread
saved as a test case is a case ``load_eval_file`` reads, a bad edit is refused with the parser's message, and
the view runs the saved case."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.fakes.app_window import wait_until
from tests.ui.eval_files import EXAMPLES, TWO_CASES, eval_folder
from ui.evals.save_case import SaveCaseDialog, appended_text, save_case
from ui.evals.view import EvalsDialog, last_run_file
from workspace.evals import load_eval_file
from workspace.providers.testing import ToolCall


async def run(dialog: EvalsDialog, path: Path | None = None) -> None:
    task = dialog.start(path)
    assert task is not None, dialog.progress.text()
    assert dialog.cancel_button.isEnabled() and not dialog.run_button.isEnabled()
    await asyncio.wait_for(task, 120)


def failure_texts(dialog: EvalsDialog) -> list[str]:
    return [dialog.failures.item(i).text() for i in range(dialog.failures.count())]


async def test_the_view_runs_an_eval_file_and_shows_the_matrix_and_a_failure(qapp_instance: Any,
                                                                              tmp_path: Path) -> None:
    path = eval_folder(tmp_path) / "two.yaml"
    dialog = EvalsDialog()
    live: list[str] = []  # what the cell said as each result came in, before the report
    dialog.matrix.model().dataChanged.connect(lambda *_: live.append(dialog.matrix.item(0, 0).text()))
    await run(dialog, path)
    assert sorted(live) in (["1/1 ✓", "1/2 ✗"], ["0/1 ✗", "1/2 ✗"])
    assert dialog.matrix.rowCount() == 1 and dialog.matrix.columnCount() == 1
    assert dialog.matrix.verticalHeaderItem(0).text() == "support"
    assert dialog.matrix.horizontalHeaderItem(0).text() == "offline-demo"
    assert dialog.matrix.item(0, 0).text() == "1/2 ✗"  # in words, not only in colour
    (failure,) = failure_texts(dialog)
    assert failure.startswith("✗ fruit [support × offline-demo]") and "contains" in failure and "banana" in failure
    assert dialog.progress.text().startswith("1/2 passed")
    # A cell's click shows its failures only; a second click shows all again.
    dialog.filter_cell(0, 0)
    assert dialog.failures_label.text().startswith("Failures of support × offline-demo") and dialog.failures.count() == 1
    dialog.filter_cell(0, 0)
    assert dialog.failures_label.text() == "Failures: 1"
    assert last_run_file(path).is_file()  # the report is kept for the next run's comparison
    dialog.close()


async def test_compare_with_last_run_names_the_case_that_got_worse(qapp_instance: Any, tmp_path: Path) -> None:
    path = eval_folder(tmp_path) / "two.yaml"
    dialog = EvalsDialog()
    await run(dialog, path)
    dialog.show_comparison()
    assert "No earlier run" in dialog.comparison.item(0).text()
    # The answer stays the same; what it must show changes: the-list now fails, fruit now passes.
    path.write_text(TWO_CASES.replace("orders\\.csv", "invoices\\.csv").replace('"banana"', '"orders.csv"'),
                    encoding="utf-8")
    await run(dialog)
    dialog.show_comparison()
    lines = [dialog.comparison.item(i).text() for i in range(dialog.comparison.count())]
    assert lines == ["Worse: the-list [support × offline-demo] passed, now fails",
                     "Better: fruit [support × offline-demo] failed, now passes"]
    # A fresh view (another session) compares with the report kept on disk.
    again = EvalsDialog()
    await run(again, path)
    again.show_comparison()
    assert again.comparison.item(0).text().startswith("Nothing changed")
    dialog.close()
    again.close()


async def test_cancel_stops_a_run(qapp_instance: Any, tmp_path: Path) -> None:
    folder = eval_folder(tmp_path)
    many = TWO_CASES + "".join(f"  - name: more-{i}\n    message: \"list the files\"\n    folder: fixtures/shop\n"
                               for i in range(8))
    (folder / "many.yaml").write_text(many, encoding="utf-8")
    dialog = EvalsDialog()
    task = dialog.start(folder / "many.yaml")
    assert task is not None
    await wait_until(lambda: dialog._results, what="a first result")
    dialog.cancel_button.click()
    await wait_until(task.done, what="the eval to stop")
    assert task.cancelled() and dialog.progress.text().startswith("Cancelled:")
    assert len(dialog._results) < 10 and dialog.report is None
    assert dialog.run_button.isEnabled() and not dialog.cancel_button.isEnabled()
    # Cancelled before it began, it says so too.
    task = dialog.start()
    assert task is not None
    dialog.cancel()
    await wait_until(task.done, what="the eval to stop")
    assert dialog.progress.text() == "Cancelled: 0 result(s) came in before."
    dialog.close()


async def test_a_bad_eval_file_is_refused_with_the_parsers_message(qapp_instance: Any, tmp_path: Path) -> None:
    path = eval_folder(tmp_path) / "bad.yaml"
    path.write_text("robot: support.md\ncases:\n  - name: x\n    message: hi\n    expect:\n      - tool_caled: {}\n",
                    encoding="utf-8")
    dialog = EvalsDialog()
    assert dialog.start(path) is None
    assert "tool_caled" in dialog.progress.text() and "tool_called" in dialog.progress.text()
    dialog.close()


def test_a_case_is_appended_keeping_the_files_comments() -> None:
    case = {"name": "new", "message": "hi", "expect": [{"contains": "hello"}]}
    text = appended_text(TWO_CASES, case, robot="ignored")
    assert text.startswith("# two cases") and text.endswith("- contains: hello\n")
    assert [c["name"] for c in yaml.safe_load(text)["cases"]] == ["the-list", "fruit", "new"]
    fresh = yaml.safe_load(appended_text(None, case, robot="support"))
    assert fresh == {"robot": "support", "cases": [case]}


async def test_save_as_test_case_writes_a_case_the_view_runs(desktop: Any, provider: Any, tmp_path: Path) -> None:
    provider.enqueue([ToolCall("list_files", {"path": "."}, id="c1")], "Here are the files: orders.csv and notes.md.")
    desktop.window.runs.send("list the files")
    await wait_until(lambda: desktop.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)
    desktop.window.commands.by_name["save_test_case"].trigger()
    (dialog,) = [d for d in desktop.window.findChildren(SaveCaseDialog) if d.isVisible()]
    case = yaml.safe_load(dialog.editor.toPlainText())
    assert case["message"] == "list the files"
    assert case["expect"] == [{"tool_called": {"name": "list_files"}}, {"contains": "Here are the files"}]
    path = eval_folder(tmp_path) / "support.yaml"
    shutil.copy(EXAMPLES / "support.yaml", path)
    before = path.read_text(encoding="utf-8")
    # A bad edit is refused with the parser's message, and the file is left as it was.
    dialog.path_edit.setText(str(path))
    dialog.editor.setPlainText(dialog.editor.toPlainText().replace("tool_called", "tool_caled"))
    assert not dialog.save()
    assert "Not saved" in dialog.error.text() and "did you mean 'tool_called'" in dialog.error.text()
    assert str(path) in dialog.error.text() and ".new" not in dialog.error.text()
    assert path.read_text(encoding="utf-8") == before and not list(path.parent.glob(".*.new"))
    # The case edited: its name, the folder the robot works on, a phrase the demo robot's answer has.
    edited = {**case, "name": "saved", "folder": "fixtures/shop",
              "expect": [case["expect"][0], {"contains": "orders.csv"}]}
    dialog.editor.setPlainText(yaml.safe_dump(edited, sort_keys=False))
    assert dialog.save() and dialog.saved_to == path
    spec = load_eval_file(path)
    assert [c.name for c in spec.cases] == ["look-up", "note", "the-list", "saved"]
    assert path.read_text(encoding="utf-8").startswith(before)  # appended: the file's comments are kept
    # The view runs the saved case with the others.
    view = EvalsDialog()
    await run(view, path)
    assert view.report is not None
    saved = [r for r in view.report.results if r.case == "saved"]
    assert len(saved) == 1 and saved[0].passed, saved[0].failures
    assert view.matrix.item(0, 0).text() == "4/4 ✓"
    view.close()


async def test_save_into_a_new_file_names_the_threads_robot(desktop: Any, provider: Any, tmp_path: Path) -> None:
    provider.enqueue("Hello.")
    desktop.window.runs.send("hi")
    await wait_until(lambda: desktop.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)
    desktop.window.commands.by_name["save_test_case"].trigger()
    (dialog,) = [d for d in desktop.window.findChildren(SaveCaseDialog) if d.isVisible()]
    path = tmp_path / "new.yaml"
    dialog.path_edit.setText(str(path))
    assert dialog.save(), dialog.error.text()
    spec = load_eval_file(path)
    assert [c.message for c in spec.cases] == ["hi"] and spec.robot
    assert save_case(path, "name: second\nmessage: again\n", robot="x") == 2
