"""Start-up after the first paint in steps: the window's widgets are made a part per turn of the event loop, their
modules imported beforehand in a worker thread, the configuration left to start-up's worker, and what a person
types at the frame meanwhile reaches the message box."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication

from tests.fakes.app_window import close_app, wait_until

ROOT = Path(__file__).resolve().parents[2]


async def test_the_widgets_are_made_a_part_per_step_without_reading_the_configuration(db_path: Path) -> None:
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        window = root.window
        window.show()
        steps = window.build_steps()
        assert steps is window.build_steps()  # one iterator: a part is never made twice
        count = 0
        for _ in steps:
            count += 1
            assert not window.built
        assert window.built and count >= 8, count
        window.build()  # after the steps: nothing left to make
        # The model picker was shown without the configuration: start-up reads it in a worker thread.
        assert not root.controller.config_loaded
    finally:
        await close_app(root)


async def test_keys_typed_at_the_frame_before_its_widgets_reach_the_message_box(db_path: Path) -> None:
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        window = root.window
        window.show()
        for text in "hi":
            QApplication.sendEvent(window, QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_H if text == "h" else Qt.Key.Key_I,
                                                     Qt.KeyboardModifier.NoModifier, text))
        root.finish_startup(staged=True)
        await wait_until(lambda: root.loaded, timeout=60, what="the start-up")
        assert window.composer.edit.toPlainText() == "hi"
        assert QApplication.focusWidget() is window.composer.edit or not window.isActiveWindow()
    finally:
        await close_app(root)


def test_the_modules_imported_ahead_are_all_the_window_build_imports(tmp_path: Path) -> None:
    # Imported in a worker thread first, the window's thread imports nothing of ours while it builds: a module the
    # build starts to import and the list lacks is one the window's thread would stop for again.
    code = """
import sys
from ui.app import Application, get_app
from ui.main_window import import_build_modules
get_app()
root = Application(db_path=sys.argv[1], theme_name="light", defer=True)
import_build_modules(root.window.docks.pane_modules())
before = set(sys.modules)
root.window.build()
print(" ".join(sorted(m for m in set(sys.modules) - before if m.startswith(("ui", "workspace")))))
"""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ROBOTLAB_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "w.db")], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"imported on the window's thread during the build: {done.stdout.strip()}"
