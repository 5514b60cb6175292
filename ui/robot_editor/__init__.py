"""The robot editor (create, duplicate, edit, delete robot files): :class:`RobotEditor`.

The Qt-free part (reading, checking, previewing, writing) is :mod:`workspace.robot_files`.
"""

from __future__ import annotations

from ui.robot_editor.dialog import RobotEditor

__all__ = ["RobotEditor"]
