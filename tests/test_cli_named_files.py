"""Files a person names (a results file to import, ``--output-schema``, ``--merge HUNK=FILE``, the
configuration ``robotlab mcp import --write --to`` merges into, an eval case's ``thread:`` export) are read
bounded: a FIFO is refused at once instead of waiting for a writer forever, a file over its limit is refused
before it is read, each with a message naming the file and the fix. Real FIFOs and sparse files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes.bounded_reads import bounded

from workspace.cli import CLIError, main

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def test_threads_import_of_a_fifo_or_an_oversized_file_is_refused_naming_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "db.sqlite"
    fifo = _fifo(tmp_path / "results.json")
    code, _ = bounded(lambda: main(["threads", "import", str(fifo), "--db", str(db)]))
    assert code == 2
    err = capsys.readouterr().err
    assert f"{fifo}: the results file is not a regular file (a FIFO)" in err and "replace it" in err
    big = _sparse(tmp_path / "big.json", 65 * 2**20)
    code, peak = bounded(lambda: main(["threads", "import", str(big), "--db", str(db)]))
    assert code == 2
    err = capsys.readouterr().err
    assert "65.0 MB, more than the 64.0 MB" in err and "make it smaller" in err
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_an_output_schema_or_a_merged_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    from workspace.cli.combined import _merges
    from workspace.cli.run import output_schema

    fifo = _fifo(tmp_path / "pipe")
    with pytest.raises(CLIError, match=r"--output-schema .*pipe: the output schema is not a regular file \(a FIFO\)"):
        bounded(lambda: output_schema(str(fifo)))
    with pytest.raises(CLIError, match=r"--merge c0\.f1\.h1=.*not a regular file \(a FIFO\)"):
        bounded(lambda: _merges([f"c0.f1.h1={fifo}"]))
    big = _sparse(tmp_path / "merged.py", 17 * 2**20)
    with pytest.raises(CLIError, match=r"more than the 16\.0 MB"):
        bounded(lambda: _merges([f"c0.f1.h1={big}"]))


def test_mcp_import_into_a_fifo_configuration_is_refused(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "claude.json"
    source.write_text(json.dumps({"mcpServers": {"echo": {"command": "echo", "args": ["hi"]}}}), encoding="utf-8")
    target = _fifo(tmp_path / "config.yaml")
    code, _ = bounded(lambda: main(["mcp", "import", str(source), "--write", "--to", str(target)]))
    assert code != 0
    assert "not a regular file (a FIFO)" in capsys.readouterr().err
    assert target.is_fifo()


def test_an_eval_thread_export_over_its_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from workspace.errors import ConfigurationError
    from workspace.evals.runner import _thread_history

    _sparse(tmp_path / "earlier.json", 65 * 2**20)
    with pytest.raises(ConfigurationError, match=r"earlier\.json: the results file is 65\.0 MB, more than the 64\.0 MB"):
        bounded(lambda: _thread_history("earlier.json", tmp_path))
