"""Save the whole X screen ($DISPLAY) as a PNG, as a person would see it: ``python grab.py OUT.png``.

There is no xwd on the machine and ImageMagick's ``import`` may be missing: Qt's own screen grab on the
same display (``QScreen.grabWindow(0)``, the root window) takes what the X server shows, dialogs included.
"""

from __future__ import annotations

import sys

from PySide6.QtGui import QGuiApplication


def main(out: str) -> int:
    app = QGuiApplication([sys.argv[0], "-platform", "xcb"])
    screen = app.primaryScreen()
    if screen is None or not screen.grabWindow(0).save(out):
        print(f"could not grab the screen into {out}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
