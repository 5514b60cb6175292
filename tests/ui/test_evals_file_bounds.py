"""The eval window's reads of files are bounded: the eval file's digest (taken to notice an edit during a run),
the eval file a case is saved to and the last run's report. A FIFO put in their place is not waited on (the
window's thread read it: it froze), a file over the limit is not read whole. Real FIFOs and sparse files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakes.bounded_reads import bounded, huge

from ui.evals.save_case import CaseError, save_case
from ui.evals.view import file_digest, last_run_file, load_last

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


def test_the_digest_of_a_fifo_or_a_huge_eval_file_is_none(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("cases: []\n", encoding="utf-8")
    assert file_digest(good) is not None
    os.mkfifo(tmp_path / "pipe.yaml")
    assert bounded(lambda: file_digest(tmp_path / "pipe.yaml"))[0] is None
    digest, peak = bounded(lambda: file_digest(huge(tmp_path / "huge.yaml")))
    assert digest is None
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_saving_a_case_to_a_fifo_or_a_huge_eval_file_is_refused_naming_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    with pytest.raises(CaseError, match=r"pipe\.yaml: the eval file is not a regular file \(a FIFO\)"):
        bounded(lambda: save_case(tmp_path / "pipe.yaml", "name: one\nmessage: hi\n", robot="x"))
    big = huge(tmp_path / "big.yaml")
    with pytest.raises(CaseError, match=r"more than the 1\.0 MB"):
        bounded(lambda: save_case(big, "name: one\nmessage: hi\n", robot="x"))
    assert big.stat().st_size == 64 * 2**20  # left as it was


def test_a_last_report_that_is_a_fifo_is_no_last_run(tmp_path: Path) -> None:
    eval_file = tmp_path / "cases.yaml"
    eval_file.write_text("cases: []\n", encoding="utf-8")
    report = last_run_file(eval_file)
    report.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(report)
    assert bounded(lambda: load_last(eval_file))[0] is None
