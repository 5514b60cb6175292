"""Logging for the app and the CLI: warnings on stderr, the app's log file, secrets redacted.

Every handler gets :class:`workspace.secrets.RedactFilter`, so an API key or an MCP server's
token in a log message, its arguments or a traceback is written as ``<NAME>``.
"""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

LOG_FILE_NAME = "robotlab.log"


def setup_logging(*, log_file: bool = False, level: int = logging.WARNING) -> Path | None:
    """Configure the root logger once; with ``log_file``, also keep INFO and above in the log folder
    (``robotlab paths``), rotated at 1 MB with 3 old files. Returns the log file (None: none)."""
    from workspace import secrets

    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    path: Path | None = None
    if log_file:
        from workspace import paths

        path = paths.log_dir() / LOG_FILE_NAME
        root = logging.getLogger()
        if not any(isinstance(h, logging.handlers.RotatingFileHandler) for h in root.handlers):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                handler = logging.handlers.RotatingFileHandler(path, maxBytes=1_000_000, backupCount=3,
                                                               encoding="utf-8", delay=True)
            except OSError as exc:  # a read-only home must not stop the app
                logging.getLogger(__name__).warning("no log file at %s: %s", path, exc)
                path = None
            else:
                handler.setLevel(logging.INFO)
                handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
                root.addHandler(handler)
                root.setLevel(min(root.level, logging.INFO))
                for other in root.handlers:  # the console keeps showing warnings only
                    if not isinstance(other, logging.handlers.RotatingFileHandler):
                        other.setLevel(max(other.level, level))
    secrets.install_log_redaction()
    return path
