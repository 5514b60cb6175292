"""The fault matrix: what an unlucky user or an attacker does, each case a test that must survive.

Every test here records its cases with the ``matrix`` fixture (area, case, and what was lost:
messages, rows, files, secrets found). At the end of the run a table is printed (cases tried,
survived, lost) and written to ``bench/results/fault_matrix.json``; ``bench/fault_matrix.py``
runs only this suite and prints the same table.

A case *survives* when its test passes: a clear error (never a hang), nothing lost beyond what
is documented (the streamed text of the last 250 ms on kill -9), no secret in any output.

The areas: provider faults (test_fault_providers.py), MCP faults (test_fault_mcp.py), bad inputs
(test_fault_inputs.py), path escapes (test_fault_paths.py, and the swap race in
test_fs_faults.py), forged names and kill -9 during apply (test_fs_faults.py), kill -9 during
recording and signals (test_fault_kill.py), damaged databases (test_fault_databases.py), the
secrets sweep (test_fault_secrets.py), and file names the file system cannot hold, git's quoted
patch headers, runs stopped before their first word and a full disk while a run is recorded
(test_fault_files_disk.py); approval by effect (test_fault_approval_effect.py), keys only where the
user sent them (test_fault_keys.py), bounded inputs: YAML alias bombs, template time and size, streamed
reads, deep arguments and results, stdout that is not UTF-8 (test_fault_bounds.py), and a local
conversation staying local (test_fault_local.py).

A time limit in these tests is a bound on hanging, never a measure of speed: generous (ten times the
wait a case is set, or half of a wait it must not make) so the matrix holds on a loaded machine; the
figures themselves are printed by bench/bench_fault_timing.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from faultkit import ROOT, Case, Matrix, table

RESULTS = ROOT / "bench" / "results" / "fault_matrix.json"


_ALL: list[Case] = []


@pytest.fixture
def matrix(request: pytest.FixtureRequest) -> Iterator[Matrix]:
    found = Matrix()
    request.node._fault_matrix = found
    yield found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    found: Matrix | None = getattr(item, "_fault_matrix", None)
    if found is not None and (report.when == "call" or (report.when == "setup" and report.failed)):
        for case in found.cases:
            if case.survived is None or not report.passed:
                case.survived = report.passed
                if not report.passed:
                    case.note = report.longreprtext.strip().splitlines()[-1][:160] if report.longreprtext else ""
            if case not in _ALL:
                _ALL.append(case)
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _ALL:
        return
    terminalreporter.write_sep("=", "fault matrix (tests/faults)")
    terminalreporter.write_line(table(_ALL))
    try:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps([case.__dict__ for case in _ALL], indent=2) + "\n", encoding="utf-8")
    except OSError:
        pass
