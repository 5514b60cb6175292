""""Run evals…": an eval file run with :func:`workspace.evals.run_eval` on the window's loop, the matrix
(rows robot, columns model, each cell ``passed/run``) filling in as results arrive, the failures below (a
cell's click shows only its own), Cancel (the cases running stop; their threads are kept, marked cancelled, and
listed with ⊘), and "Compare with last run": what got better and what got worse
since the last report of the same file (kept in memory and as JSON in the data folder).

Given the window's store, each case's run is recorded as a thread (marked as an eval case, left out of the
thread list): a double-click on a failure, or on a cell (its first failed case, else its first case), opens
that thread in the chat. The run keeps the version of the eval file it started with; an edit saved while it
runs is said under the matrix and read by the next run. The robots' and the judges' tokens are shown apart,
per failed case and for the whole run."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QFileSystemWatcher, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from workspace.secrets import redact

if TYPE_CHECKING:
    from workspace.evals import CaseResult, EvalReport
    from workspace.persistence import Store

#: Where a failure row keeps the id of its case's thread.
THREAD_ROLE = Qt.ItemDataRole.UserRole + 1

#: (case, robot, model) -> passed: what a report says, as the comparison needs it.
Verdicts = dict[tuple[str, str, str], bool]

#: The last report of each eval file (its resolved path) this session; also on disk (:func:`last_run_file`).
_LAST: dict[str, Verdicts] = {}


def verdicts(report: EvalReport) -> Verdicts:
    return {(r.case, r.robot, r.model): r.passed for r in report.results}


def last_run_file(eval_path: Path) -> Path:
    """Where the last report of ``eval_path`` is kept: ``evals/<hash of its path>.json`` in the data folder."""
    from workspace.paths import data_dir

    digest = hashlib.sha256(str(eval_path.resolve()).encode()).hexdigest()[:16]
    return data_dir() / "evals" / f"{digest}.json"


def load_last(eval_path: Path) -> Verdicts | None:
    key = str(eval_path.resolve())
    if key in _LAST:
        return _LAST[key]
    from workspace.errors import ConfigurationError
    from workspace.readlimits import RESULTS_FILE_BYTES, read_text_bounded

    try:
        rows = json.loads(read_text_bounded(last_run_file(eval_path), RESULTS_FILE_BYTES, "last eval report"))["results"]
        found = {(str(r["case"]), str(r["robot"]), str(r["model"])): bool(r["passed"]) for r in rows}
    except (OSError, ValueError, KeyError, TypeError, ConfigurationError):  # (a FIFO, too large: no last run)
        return None
    _LAST[key] = found
    return found


def keep_last(eval_path: Path, found: Verdicts) -> None:
    """Remember ``found`` as the last run of ``eval_path`` (in memory; on disk when the folder can be written)."""
    _LAST[str(eval_path.resolve())] = found
    target = last_run_file(eval_path)
    rows = [{"case": c, "robot": r, "model": m, "passed": p} for (c, r, m), p in found.items()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"file": str(eval_path.resolve()), "results": rows}, ensure_ascii=False),
                          encoding="utf-8")
    except OSError:
        pass  # the comparison still works this session


def compare(before: Verdicts, after: Verdicts) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(better: failed then passed now, worse: passed then failed now), per case × robot × model in both."""
    both = [key for key in after if key in before]
    return ([k for k in both if after[k] and not before[k]], [k for k in both if before[k] and not after[k]])


def cell_text(passed: int, total: int) -> str:
    """A matrix cell in words as well as colour: ``3/4 ✓`` when all passed, ``1/4 ✗`` otherwise."""
    return f"{passed}/{total} " + ("✓" if passed == total else "✗")


def tokens_text(input_tokens: int, output_tokens: int, cost: float | None) -> str:
    """``1,200 in / 300 out, $0.0021`` (the cost left out when no call reported a price)."""
    return f"{input_tokens:,} in / {output_tokens:,} out" + (f", ${cost:.4f}" if cost is not None else "")


def file_digest(path: Path) -> str | None:
    """The SHA-256 of the eval file's bytes (None: it cannot be read, or it is not a regular file of at most
    :data:`~workspace.readlimits.CONFIG_FILE_BYTES`, as an eval file is), to notice an edit saved during a run."""
    from workspace.errors import ConfigurationError
    from workspace.readlimits import CONFIG_FILE_BYTES, read_bounded

    try:
        return hashlib.sha256(read_bounded(path, CONFIG_FILE_BYTES, "eval file")).hexdigest()
    except (OSError, ConfigurationError):
        return None


class EvalsDialog(QDialog):
    """Run an eval file and watch its matrix fill in."""

    def __init__(self, parent: QWidget | None = None, *, store_of: Callable[[], Store | None] | None = None,
                 open_thread: Callable[[str], None] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Evals")
        #: Where each case's run is recorded as a thread, asked when a run starts (None: not recorded; the
        #: window's database opens after its window shows), and how the window opens a thread.
        self.store_of = store_of
        self.store: Store | None = None
        self.open_thread = open_thread
        self.path: Path | None = None
        #: The eval file's digest when the run began, and whether it was edited while the run went on.
        self._digest: str | None = None
        self.edited_while_running = False
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self._file_changed)
        self.task: asyncio.Task[None] | None = None
        self.report: EvalReport | None = None
        self.previous: Verdicts | None = None
        self._results: list[CaseResult] = []
        self._rows: list[str] = []
        self._columns: list[str] = []
        self._filter: tuple[str, str] | None = None
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.file_label = QLabel("No eval file chosen.")
        self.file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.choose_button = QPushButton("Choose eval file…")
        self.choose_button.clicked.connect(self.choose)
        self.run_button = QPushButton("Run")
        self.run_button.clicked.connect(lambda: self.start())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.compare_button = QPushButton("Compare with last run")
        self.compare_button.clicked.connect(self.show_comparison)
        top.addWidget(self.file_label, 1)
        for button in (self.choose_button, self.run_button, self.cancel_button, self.compare_button):
            top.addWidget(button)
        layout.addLayout(top)
        self.progress = QLabel("")
        self.progress.setWordWrap(True)
        layout.addWidget(self.progress)
        self.matrix = QTableWidget(0, 0)
        self.matrix.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.matrix.cellClicked.connect(self.filter_cell)
        self.matrix.cellDoubleClicked.connect(self.open_cell)
        layout.addWidget(self.matrix, 1)
        self.notice = QLabel("")
        self.notice.setWordWrap(True)
        self.notice.setVisible(False)
        layout.addWidget(self.notice)
        self.failures_label = QLabel("Failures")
        layout.addWidget(self.failures_label)
        self.failures = QListWidget()
        self.failures.setWordWrap(True)
        self.failures.itemActivated.connect(self.open_failure)
        self.failures.itemDoubleClicked.connect(self.open_failure)
        layout.addWidget(self.failures, 1)
        self.comparison = QListWidget()
        self.comparison.setVisible(False)
        layout.addWidget(self.comparison, 1)
        self._set_running(False)
        self.resize(860, 620)

    # -- choosing and running --------------------------------------------------------------------------------

    def choose(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Choose an eval file", "", "Eval files (*.yaml *.yml)")
        if name:
            self.start(Path(name))

    def start(self, path: Path | None = None) -> asyncio.Task[None] | None:
        """Run ``path`` (the file shown when None); None when a run is going on or no file is chosen."""
        if self.task is not None and not self.task.done():
            return None
        from workspace.errors import ConfigurationError
        from workspace.evals import load_eval_file

        path = path or self.path
        if path is None:
            self.progress.setText("Choose an eval file to run (a YAML file with cases; see the user guide, Evals).")
            return None
        self.path = path
        self.file_label.setText(str(path))
        try:
            spec = load_eval_file(path)
        except ConfigurationError as exc:
            self.progress.setText(f"The eval file cannot run: {exc}")
            return None
        self.previous = load_last(path)
        self.store = self.store_of() if self.store_of is not None else None
        self._watch(path)
        self._results, self._rows, self._columns, self._filter = [], [], [], None
        self.report = None
        self.matrix.clear()
        self.matrix.setRowCount(0)
        self.matrix.setColumnCount(0)
        self._show_failures()
        self.comparison.setVisible(False)
        self.progress.setText(f"Running {len(spec.cases)} case(s)…")
        self._set_running(True)
        self.task = asyncio.get_running_loop().create_task(self._run(spec, path), name="evals")
        self.task.add_done_callback(self._ended)
        return self.task

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():  # (also when it was cancelled before it began)
            self._set_running(False)
            stopped = sum(r.cancelled for r in self._results)
            text = f"Cancelled: {len(self._results) - stopped} result(s) came in before."
            if stopped:
                kept = any(r.cancelled and r.thread_id is not None for r in self._results)
                text += f" {stopped} case(s) running were stopped" + (
                    ": their threads are kept, marked cancelled (double-click one below to open it)." if kept else ".")
            self.progress.setText(text)

    async def _run(self, spec: Any, path: Path) -> None:
        from workspace.evals import AnswerCache, run_eval

        cache = AnswerCache()
        try:
            report = await run_eval(spec, base=path.resolve().parent, concurrency=4, cache=cache,
                                    on_result=self.add_result, store=self.store, eval_file=path)
        except Exception as exc:
            self.progress.setText(f"The eval could not run: {redact(str(exc))}")
            return
        finally:
            cache.close()
            self._set_running(False)
        self._check_edited(path)  # (an edit saved just before the end: the watcher may not have said it yet)
        self.show_report(report)
        keep_last(path, verdicts(report))

    def _set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.choose_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.compare_button.setEnabled(not running and self.report is not None)

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    # -- the eval file edited while it runs ------------------------------------------------------------------

    def _watch(self, path: Path) -> None:
        """Follow ``path`` during the run that starts now (its digest: what the run reads)."""
        if self._watcher.files():
            self._watcher.removePaths(self._watcher.files())
        self._watcher.addPath(str(path))
        self._digest = file_digest(path)
        self.edited_while_running = False
        self.notice.setVisible(False)

    def _file_changed(self, _name: str = "") -> None:
        """The eval file was saved (or replaced): during a run, say that the run keeps its version."""
        path = self.path
        if path is None:
            return
        if str(path) not in self._watcher.files() and path.exists():
            self._watcher.addPath(str(path))  # an editor that saves by replacing the file: follow the new one
        if self.task is not None and not self.task.done():
            self._check_edited(path)

    def _check_edited(self, path: Path) -> None:
        if self.edited_while_running or file_digest(path) == self._digest:
            return
        self.edited_while_running = True
        self.notice.setText("The eval file was edited while this run went on: this run keeps the version it "
                            "started with; Run again to use the new one.")
        self.notice.setVisible(True)

    # -- the matrix and the failures -------------------------------------------------------------------------

    def add_result(self, result: CaseResult) -> None:
        """One result came in: its cell and, when it failed, its failure."""
        self._results.append(result)
        if result.cancelled:  # stopped by Cancel: listed (its thread opens), not counted in the matrix
            if self._filter is None:
                self._add_failure(result)
                self._count_failures()
            return
        if result.robot not in self._rows:
            self._rows.append(result.robot)
            self.matrix.setRowCount(len(self._rows))
            self.matrix.setVerticalHeaderLabels(self._rows)
        if result.model not in self._columns:
            self._columns.append(result.model)
            self.matrix.setColumnCount(len(self._columns))
            self.matrix.setHorizontalHeaderLabels(self._columns)
        ran = [r for r in self._results if (r.robot, r.model) == (result.robot, result.model) and not r.cancelled]
        self._set_cell(result.robot, result.model, sum(r.passed for r in ran), len(ran))
        self.matrix.resizeColumnsToContents()  # a model's whole name in its column's header
        if not result.passed and self._filter in (None, (result.robot, result.model)):
            self._add_failure(result)
            self._count_failures()
        self.progress.setText(f"{len(self._results)} result(s) in, {sum(not r.passed for r in self._results)} "
                              "failed…")

    def _set_cell(self, robot: str, model: str, passed: int, total: int) -> None:
        item = QTableWidgetItem(cell_text(passed, total))
        item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
        item.setForeground(QColor(theme.colors().success if passed == total else theme.colors().error))
        item.setToolTip(f"{robot} × {model}: {passed} of {total} case(s) passed; click to see its failures, "
                        "double-click to open its first failed case (else its first case) as a thread")
        self.matrix.setItem(self._rows.index(robot), self._columns.index(model), item)

    def _add_failure(self, result: CaseResult) -> None:
        reasons = "\n".join(f"  - {redact(why)}" for why in result.failures)
        tokens = f"  robot: {tokens_text(result.input_tokens, result.output_tokens, result.outcome.cost)}"
        judge = result.judge
        if judge.calls:
            tokens += f"; judge: {tokens_text(judge.input_tokens, judge.output_tokens, judge.cost)}"
        mark = "⊘" if result.cancelled else "✗"
        item = QListWidgetItem(f"{mark} {result.case} [{result.robot} × {result.model}]\n{reasons}\n{tokens}")
        if result.thread_id is not None:
            item.setData(THREAD_ROLE, result.thread_id)
            item.setToolTip("Double-click to open this case's run as a thread in the chat")
        self.failures.addItem(item)

    def open_failure(self, item: QListWidgetItem) -> None:
        """A failure's case opened as a thread in the chat (when its run was recorded)."""
        thread_id = item.data(THREAD_ROLE)
        if isinstance(thread_id, str) and thread_id:
            self._open(thread_id)

    def open_cell(self, row: int, column: int) -> None:
        """A cell's first failed case (else its first case) opened as a thread in the chat."""
        cell = (self._rows[row], self._columns[column])
        ran = [r for r in self._results if (r.robot, r.model) == cell and r.thread_id is not None]
        chosen = next((r for r in ran if not r.passed), ran[0] if ran else None)
        if chosen is not None and chosen.thread_id is not None:
            self._open(chosen.thread_id)

    def _open(self, thread_id: str) -> None:
        if self.open_thread is None:
            self.progress.setText("Eval runs are recorded as threads only in the window (its database).")
            return
        self.open_thread(thread_id)

    def show_report(self, report: EvalReport) -> None:
        self.report = report
        self._set_running(False)
        summary = report.summary()
        robot, judge = summary["robot"], summary["judge"]
        judge_tokens = tokens_text(judge["input_tokens"], judge["output_tokens"], judge["cost"])
        judged = f"judges ({judge['calls']} call(s)): {judge_tokens}" if judge["calls"] else "no judge asked"
        robot_tokens = tokens_text(robot["input_tokens"], robot["output_tokens"], robot["cost"])
        recorded = ("Each case's run is a thread: double-click a failure or a cell to open it."
                    if self.store is not None else "Eval runs are not recorded as threads here.")
        self.progress.setText(f"{summary['passed']}/{summary['cases']} passed in {report.seconds:.1f} s; model "
                              f"answers: {report.cache_hits} from the cache, {report.cache_misses} asked. Tokens: "
                              f"robots {robot_tokens}; {judged}. {recorded}")
        self._show_failures()

    def filter_cell(self, row: int, column: int) -> None:
        """Only the failures of the clicked cell (click it again for all of them)."""
        cell = (self._rows[row], self._columns[column])
        self._filter = None if self._filter == cell else cell
        self._show_failures()

    def _show_failures(self) -> None:
        self.failures.clear()
        shown = [r for r in self._results if not r.passed and self._filter in (None, (r.robot, r.model))]
        for result in shown:
            self._add_failure(result)
        self._count_failures()

    def _count_failures(self) -> None:
        where = "" if self._filter is None else f" of {self._filter[0]} × {self._filter[1]} (click it again for all)"
        self.failures_label.setText(f"Failures{where}: {self.failures.count()}")

    # -- the comparison --------------------------------------------------------------------------------------

    def show_comparison(self) -> None:
        """What got better and worse since the run before this one of the same file."""
        self.comparison.clear()
        self.comparison.setVisible(True)
        if self.report is None:
            self.comparison.addItem("Run the eval first.")
            return
        if self.previous is None:
            self.comparison.addItem("No earlier run of this file to compare with: run it again after a change.")
            return
        better, worse = compare(self.previous, verdicts(self.report))
        for (case, robot, model) in worse:
            item = QListWidgetItem(f"Worse: {case} [{robot} × {model}] passed, now fails")
            item.setForeground(QColor(theme.colors().error))
            self.comparison.addItem(item)
        for (case, robot, model) in better:
            item = QListWidgetItem(f"Better: {case} [{robot} × {model}] failed, now passes")
            item.setForeground(QColor(theme.colors().success))
            self.comparison.addItem(item)
        if not better and not worse:
            self.comparison.addItem("Nothing changed: every case passed or failed as in the last run.")

    def done(self, code: int) -> None:
        self.cancel()
        super().done(code)


def open_evals(parent: QWidget, path: Path | None = None, *, store_of: Callable[[], Store | None] | None = None,
               open_thread: Callable[[str], None] | None = None) -> EvalsDialog:
    """"Run evals…": the view, running ``path`` when given (else the person chooses a file); each case's run is
    recorded in the store ``store_of()`` gives and ``open_thread`` opens one in the chat."""
    dialog = EvalsDialog(parent, store_of=store_of, open_thread=open_thread)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    if path is not None:
        dialog.start(path)
    return dialog


__all__ = ["THREAD_ROLE", "EvalsDialog", "cell_text", "compare", "file_digest", "keep_last", "last_run_file", "load_last",
           "open_evals", "tokens_text", "verdicts"]
