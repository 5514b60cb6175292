"""RobotLab's ``Runnable``: the one interface a :class:`~workspace.robot.Robot` and a
:class:`~workspace.network.Network` share, so a caller can take either.

``crew`` is the robots that do the work (a robot is a crew of one), ``chief`` the first of them,
``robot_count`` how many, ``is_network`` / ``is_single`` RobotLab's ``network?`` / ``single?``.
Both also have ``run(message, **options)`` and ``await arun(message, **options)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workspace.robot import Robot


class Runnable:
    """Mixed into :class:`~workspace.robot.Robot` and :class:`~workspace.network.Network`."""

    #: RobotLab's ``network?``.
    is_network: bool = False

    @property
    def crew(self) -> list[Robot]:
        """The robots that do the work, in order."""
        raise NotImplementedError

    @property
    def chief(self) -> Robot | None:
        """The first robot of the crew (``None`` for a network with no robots yet)."""
        crew = self.crew
        return crew[0] if crew else None

    @property
    def robot_count(self) -> int:
        return len(self.crew)

    @property
    def is_single(self) -> bool:
        """RobotLab's ``single?``: a crew of exactly one."""
        return self.robot_count == 1
