"""A widget made in parts during start-up: :class:`StagedBuild`."""

from __future__ import annotations

from collections.abc import Iterator


class StagedBuild:
    """Mixed into a widget that is made in parts, so that no part holds the window more than a frame.

    The widget's :meth:`_construct` is a generator that makes one part, then yields, then the next, and so on.
    Its ``__init__`` calls :meth:`_start_build`: the first part is made at once; a staged widget leaves the rest
    to :meth:`build_steps` (a start-up step each), one made whole makes them all there.
    Put it after the Qt class among the bases (``class Pane(QFrame, StagedBuild)``)."""

    _steps: Iterator[None]

    def _construct(self) -> Iterator[None]:
        """Make the widget, yielding between its parts."""
        raise NotImplementedError

    def _start_build(self, *, staged: bool) -> None:
        """Make the first part; the others too unless ``staged``."""
        self._steps = self._construct()
        next(self._steps)
        if not staged:
            for _ in self._steps:
                pass

    def build_steps(self) -> Iterator[None]:
        """What is left of a staged widget's build, a part per step (nothing for a widget made whole). The same
        iterator every time: a part is never made twice."""
        return self._steps
