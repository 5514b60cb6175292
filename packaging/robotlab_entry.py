"""Entry point of the PyInstaller bundle: the same as the ``robotlab`` console script."""

from __future__ import annotations

import os
import sys

from ui.main import main


def _forget_bundle_environment() -> None:
    """Keep the bundle's Qt out of the programs the app starts (MCP servers, tools, editors).

    PyInstaller's PySide6 runtime hook points QT_PLUGIN_PATH and QML2_IMPORT_PATH at the bundle;
    a Qt program started from here would inherit them and try this Qt's plugins. The bundle's own
    Qt finds its plugins without them (through the qt.conf that PySide6 registers).
    """
    if getattr(sys, "frozen", False):
        for name in ("QT_PLUGIN_PATH", "QML2_IMPORT_PATH"):
            os.environ.pop(name, None)


if __name__ == "__main__":
    _forget_bundle_environment()
    sys.exit(main())
