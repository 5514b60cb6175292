"""Render the change review offscreen to PNGs: the main window with the Changes dock, the full-size review
(unified and side by side) and a conflict.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshot_review.py [--theme dark] [--out docs]

A scripted file-helper proposes edits to two files of a demo folder; one hunk is accepted, one
rejected with a reason, the rest wait.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GEOMETRY = '''"""Shapes and their areas."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Rectangle:
    width: float
    height: float

    def area(self):
        return self.width * self.height

    def perimeter(self):
        return 2 * (self.width + self.height)


@dataclass
class Circle:
    radius: float

    def area(self):
        return 3.14 * self.radius ** 2


def total_area(shapes):
    total = 0
    for shape in shapes:
        total = total + shape.area()
    return total


def describe(shape):
    print("shape with area " + str(shape.area()))
'''

README = """# Shapes

Small helpers for rectangles and circles.

## Usage

    from geometry import Rectangle
    Rectangle(2, 3).area()
"""


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="robotlab-review-shot-")) / "geometry"
    folder.mkdir()
    (folder / "geometry.py").write_text(GEOMETRY, encoding="utf-8")
    (folder / "README.md").write_text(README, encoding="utf-8")
    return folder


async def _wait(predicate: object, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        if loop.time() > end:
            raise TimeoutError("the scripted conversation did not reach the expected state")
        await asyncio.sleep(0.02)


def _edit(path: str, search: str, replace: str, call: str) -> object:
    from workspace.providers.testing import ToolCall

    return ToolCall("edit_file", {"path": path, "search": search, "replace": replace}, id=call)


async def _script(root: object, provider: object, out: Path, theme: str) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    window = root.window  # type: ignore[attr-defined]
    controller = root.controller  # type: ignore[attr-defined]
    provider.enqueue(  # type: ignore[attr-defined]
        ["I'll tighten up `geometry.py` and document it.",
         _edit("geometry.py", "    def area(self):\n        return self.width * self.height\n",
               "    def area(self) -> float:\n        return self.width * self.height\n", "c1"),
         _edit("geometry.py", "        return 3.14 * self.radius ** 2\n",
               "        return math.pi * self.radius ** 2\n", "c2"),
         _edit("geometry.py", "    total = 0\n    for shape in shapes:\n        total = total + shape.area()\n"
               "    return total\n", "    return sum(shape.area() for shape in shapes)\n", "c3"),
         _edit("geometry.py", '    print("shape with area " + str(shape.area()))\n',
               '    return f"{type(shape).__name__} with area {shape.area():.2f}"\n', "c4"),
         _edit("README.md", "Small helpers for rectangles and circles.\n",
               "Small, typed helpers for rectangles and circles: areas, perimeters and totals.\n", "c5")],
        "I proposed five edits in two files: type hints, `math.pi`, a simpler `total_area`, and "
        "`describe` now returns its text. Nothing is written until you review them.",
    )
    controller.set_robot("file-helper")
    window.runs.send("Clean up geometry.py and mention it in the README")
    await _wait(lambda: controller.idle)
    await asyncio.sleep(0.2)
    pane = window.docks.changes_pane
    changes = controller.session.changes
    hunks = changes.hunks()
    pane.model.accept(hunks[0].id)
    pane.model.reject(hunks[1].id, reason="keep 3.14: the tests compare with it")
    dock = window.docks["changes"]
    dock.show()
    dock.raise_()
    window.resizeDocks([dock], [560], Qt.Orientation.Horizontal)
    pane.view.select_hunk(hunks[2].id)
    await asyncio.sleep(0.2)
    QApplication.processEvents()
    window.grab().save(str(out / f"changes-dock-{theme}.png"))

    review = pane.open_review(hunk_id=hunks[2].id)
    review.resize(1360, 820)
    await asyncio.sleep(0.2)
    QApplication.processEvents()
    review.grab().save(str(out / f"review-{theme}.png"))
    review.view.set_split(True)
    review.view.select_hunk(hunks[3].id)
    await asyncio.sleep(0.2)
    QApplication.processEvents()
    review.grab().save(str(out / f"review-split-{theme}.png"))
    # the reason box of `r`, open on the current hunk
    review.view.set_split(False)
    review.view.select_hunk(hunks[3].id)
    review.view.reject_current()
    if review.view.overlay is not None and review.view.overlay.reason is not None:
        review.view.overlay.reason.setText("describe() must keep printing")
    await asyncio.sleep(0.1)
    QApplication.processEvents()
    review.grab().save(str(out / f"review-reject-{theme}.png"))
    if review.view.overlay is not None:
        review.view.overlay.cancel()

    # a conflict: the file changed on disk before Apply
    folder = Path(controller.folder)
    (folder / "geometry.py").write_text(GEOMETRY.replace('"""Shapes and their areas."""',
                                                         '"""Shapes, areas and perimeters."""'), encoding="utf-8")
    pane.model.accept_all()
    review.apply()
    await _wait(lambda: review.stack.currentWidget() is review.conflicts)
    await asyncio.sleep(0.2)
    QApplication.processEvents()
    review.grab().save(str(out / f"review-conflict-{theme}.png"))
    review.close()

    # resolved: the file is put back, everything applied; the next message carries the outcome
    pane.commands.cancel_conflicts()
    (folder / "geometry.py").write_text(GEOMETRY, encoding="utf-8")
    pane.model.reject(hunks[1].id, reason="keep 3.14: the tests compare with it")
    pane.apply()
    await pane.commands.wait_idle()
    provider.enqueue("Thanks — I'll leave `3.14` alone; the rest is in place.")  # type: ignore[attr-defined]
    window.runs.send("Looks good, thanks!")
    await _wait(lambda: controller.idle)
    await asyncio.sleep(0.3)
    window.chat.scroll_to_bottom()
    await asyncio.sleep(0.1)
    QApplication.processEvents()
    window.grab().save(str(out / f"changes-applied-{theme}.png"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    parser.add_argument("--out", default=str(ROOT / "docs"))
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="robotlab-home-"))
    os.environ["ROBOTLAB_HOME"] = str(home)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"

    from ui.app import Application, get_app, new_event_loop
    from workspace.providers.testing import ScriptedProvider

    folder = _folder()
    app = get_app()
    loop = new_event_loop(app)
    # A scripted conversation says so: never a real model's name on words no model wrote.
    provider = ScriptedProvider(model_id="scripted-example", label="Scripted example (no language model)")
    root = Application(folder=folder, theme_name=args.theme, provider=provider, db_path=home / "shot.db")
    root.window.resize(1500, 940)
    root.window.show()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        with loop:
            loop.run_until_complete(_script(root, provider, out, args.theme))
            print(f"wrote {out}/changes-dock-{args.theme}.png, review-*-{args.theme}.png")
            loop.run_until_complete(root.aclose())
    finally:
        if not loop.is_closed():
            loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
