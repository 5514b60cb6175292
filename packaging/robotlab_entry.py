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


#: workspace.providers.litellm_host.BUNDLE_ARG, written out: importing that module would delay every start.
LITELLM_HOST_ARG = "--litellm-host"


def _run() -> int:
    if sys.argv[1:2] == [LITELLM_HOST_ARG]:  # the window's litellm process (no ``python -m`` in a bundle)
        from workspace.providers.litellm_host import main as host_main

        return host_main()
    return main()


if __name__ == "__main__":
    _forget_bundle_environment()
    sys.exit(_run())
