"""Help > About: the version, the versions underneath, and where your data lives.

Non-modal (opened with ``show()``), so it never spins a nested event loop.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSize, Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QGridLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.screen import size_to_screen


def about_facts() -> dict[str, str]:
    """What the dialog states about the program (also used by its test)."""
    import PySide6
    from PySide6.QtCore import qVersion

    from workspace.version import __version__

    return {
        "RobotLab Workspace": __version__,
        "Python": f"{platform.python_version()} ({sys.executable})",
        "Qt / PySide6": f"{qVersion()} / {PySide6.__version__}",
        "Build": "self-contained bundle" if getattr(sys, "frozen", False) else "Python environment",
        "System": f"{platform.system()} {platform.release()} {platform.machine()}",
    }


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle("About RobotLab Workspace")
        self.setModal(False)
        outer = QVBoxLayout(self)
        # What the dialog says scrolls on a short screen (1024×640); Close stays on the screen.
        body = QWidget(self)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        head = QLabel(self)
        head.setPixmap(theme.app_icon().pixmap(64, 64))
        head.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(head)
        title = QLabel("<h2>RobotLab Workspace</h2>"
                       "<p>A desktop workspace for working with LLM agents: robots, networks of robots, "
                       "MCP servers, and review of every change before it touches your files.</p>", self)
        title.setWordWrap(True)
        title.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(title)

        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        grid.setHorizontalSpacing(16)
        row = 0
        for key, value in about_facts().items():
            grid.addWidget(self._muted(key), row, 0)
            grid.addWidget(self._selectable(value), row, 1, 1, 2)
            row += 1
        where = QLabel("<b>Where your data lives</b> — <code>robotlab paths</code> prints the same", self)
        grid.setRowMinimumHeight(row, where.sizeHint().height() + 16)
        grid.addWidget(where, row, 0, 1, 3, Qt.AlignmentFlag.AlignBottom)
        row += 1
        from workspace import paths

        self.paths = paths.all_paths()
        for name, path in self.paths.items():
            grid.addWidget(self._muted(name), row, 0, Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(self._selectable(str(path)), row, 1, Qt.AlignmentFlag.AlignVCenter)
            button = QPushButton("Open", self)
            button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
            button.setToolTip(f"Open {path if path.is_dir() else path.parent} in the file manager")
            button.clicked.connect(lambda _=False, p=path: self.open_location(p))
            grid.addWidget(button, row, 2)
            row += 1
        layout.addLayout(grid)

        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)
        outer.addWidget(scroll, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        outer.addWidget(buttons)
        wanted = body.sizeHint()
        margins = outer.contentsMargins()
        size_to_screen(self, QSize(wanted.width() + margins.left() + margins.right() + 24,
                                   wanted.height() + buttons.sizeHint().height() + outer.spacing()
                                   + margins.top() + margins.bottom()))

    def _muted(self, text: str) -> QLabel:
        label = QLabel(text, self)
        label.setProperty("role", "muted")
        return label

    def _selectable(self, text: str) -> QLabel:
        label = QLabel(text, self)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    @staticmethod
    def open_location(path: Path) -> Any:
        folder = path if path.is_dir() else path.parent
        folder.mkdir(parents=True, exist_ok=True)
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
