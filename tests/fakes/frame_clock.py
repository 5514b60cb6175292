"""A view with a frame clock, as a comparison's column has: the renders a ``MarkdownStream`` in it leaves for later
wait here until the test runs them (its next turn)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QVBoxLayout, QWidget


class FrameClock(QWidget):
    """A render a stream leaves for later waits in ``waiting`` until the test's next turn."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[Callable[[], None]] = []
        self.resize(800, 600)
        QVBoxLayout(self)

    def defer_render(self, render: Callable[[], None]) -> bool:
        self.waiting.append(render)
        return True
