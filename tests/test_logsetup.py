"""The app's log file exists, rotates, and never holds a secret."""

from __future__ import annotations

import logging
import logging.handlers
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspace import paths
from workspace.logsetup import LOG_FILE_NAME, setup_logging


@pytest.fixture
def clean_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    root.handlers = []
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = handlers, level


def test_the_log_file_is_in_the_log_folder_and_redacted(robotlab_home: Path, clean_root: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "sk-acme-0123456789abcdef")
    path = setup_logging(log_file=True)
    assert path == paths.log_dir() / LOG_FILE_NAME
    assert setup_logging(log_file=True) == path  # idempotent: one file handler
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, logging.handlers.RotatingFileHandler)]
    assert len(handlers) == 1
    log = logging.getLogger("workspace.test")
    log.info("calling with key %s", "sk-acme-0123456789abcdef")
    try:
        raise RuntimeError("bad key sk-acme-0123456789abcdef")
    except RuntimeError:
        log.exception("failed")
    for handler in handlers:
        handler.flush()
    text = path.read_text(encoding="utf-8")
    assert "calling with key <ACME_API_KEY>" in text and "bad key <ACME_API_KEY>" in text
    assert "sk-acme-0123456789abcdef" not in text
