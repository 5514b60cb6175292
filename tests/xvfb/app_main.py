"""The app as the ``robotlab`` command starts it (``ui.main.main``), for the Xvfb layer.

One change: the offline demo's pace is read from the file named by ``ROBOTLAB_XVFB_DELAY_FILE`` (seconds
between its words) at each model call, so the test can slow a run down to watch it stream and stop it
with Esc, then speed the next ones up. Everything else is the real program on a real X server.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


class _Pace:
    """``DemoProvider.delay``, read from the file each time (0.005 s when it cannot be read)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __get__(self, obj: Any, owner: Any = None) -> float:
        try:
            return float(self.path.read_text(encoding="utf-8").strip() or 0)
        except (OSError, ValueError):
            return 0.005

    def __set__(self, obj: Any, value: float) -> None:
        pass  # the file decides


def main() -> int:
    pace = os.environ.get("ROBOTLAB_XVFB_DELAY_FILE")
    if pace:
        from workspace.providers.demo import DemoProvider

        DemoProvider.delay = _Pace(Path(pace))  # type: ignore[assignment,method-assign]
    from ui.main import main as robotlab

    return robotlab(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
