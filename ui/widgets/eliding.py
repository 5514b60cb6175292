"""Text cut to a width with "…": the one rule (:func:`elide_text`), the width a widget puts around its text
(:func:`text_overhead`), and the mixin that elides again when the widget's width, font or style changes
(:class:`ElidesOnResize`). Used by :class:`ui.widgets.common.ElidedLabel`,
:class:`ui.widgets.flow.ElidedToolButton` and the compare verdict row's radio buttons."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QWidget

if TYPE_CHECKING:
    _WidgetBase = QWidget
else:  # a plain mixin at run time: the Qt class comes after it in the subclass's bases
    _WidgetBase = object


def elide_text(metrics: QFontMetrics, text: str, room: int, *, whole: bool = False, width: int | None = None) -> str:
    """``text`` as it fits in ``room`` pixels: whole when it fits, else cut and ending in "…" (nothing when not
    even "…" fits); with ``whole=True``, all of it or nothing. ``width``: the text's width, when known."""
    if (metrics.horizontalAdvance(text) if width is None else width) <= room:
        return text
    if whole:
        return ""
    return metrics.elidedText(text, Qt.TextElideMode.ElideRight, max(0, room))


def text_overhead(hint_width: int, metrics: QFontMetrics, shown: str) -> int:
    """The width a widget puts around its text (frame, margins, an icon or an indicator, padding): its size
    hint's width less the width of the text it shows now."""
    return max(0, hint_width - metrics.horizontalAdvance(shown))


class ElidesOnResize(_WidgetBase):
    """Mixin for a widget that elides its text: calls ``_elide`` when its size, font or style changes. Put it
    before the Qt class in the bases (``class ElidedLabel(ElidesOnResize, QLabel)``)."""

    def _elide(self) -> None:
        raise NotImplementedError

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._elide()


__all__ = ["ElidesOnResize", "elide_text", "text_overhead"]
