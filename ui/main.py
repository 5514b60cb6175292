"""Entry point of the ``robotlab`` command: the window with no sub-command, else the CLI.

This module imports neither PySide6 nor the core's heavy parts at import time, so
``robotlab run ...`` starts fast and works without a display.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # Window options take values ("--theme dark", "--folder DIR"): _only_window_options reads them.
    if not args or _only_window_options(args):
        from ui.app import run_app

        return run_app(args)
    from workspace.cli import main as cli_main

    return cli_main(args)


def _only_window_options(args: list[str]) -> bool:
    window_flags = {"--folder", "--offscreen-smoke", "--theme", "--quit-after"}
    i = 0
    while i < len(args):
        flag = args[i].split("=", 1)[0]
        if flag not in window_flags:
            return False
        i += 1 if "=" in args[i] or flag == "--offscreen-smoke" else 2
    return True


if __name__ == "__main__":
    sys.exit(main())
