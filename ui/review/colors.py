"""The diff's colours for the current theme (:func:`diff_colors`), mixed from the theme's palette."""


from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtGui import (
    QColor,
)

from ui import theme

if TYPE_CHECKING:
    pass


def mix(base: str, over: str, alpha: float) -> QColor:
    a, b = QColor(base), QColor(over)
    return QColor(round(a.red() + (b.red() - a.red()) * alpha), round(a.green() + (b.green() - a.green()) * alpha),
                  round(a.blue() + (b.blue() - a.blue()) * alpha))


@dataclass(slots=True)
class DiffColors:
    bg: QColor
    text: QColor
    muted: QColor
    gutter: QColor
    gutter_text: QColor
    add_bg: QColor
    add_strong: QColor
    add_gutter: QColor
    del_bg: QColor
    del_strong: QColor
    del_gutter: QColor
    header: QColor
    header_current: QColor
    border: QColor
    accent: QColor
    gap: QColor
    success: QColor
    error: QColor
    warning: QColor
    button: QColor
    button_hover: QColor
    accept_bg: QColor
    reject_bg: QColor


def diff_colors() -> DiffColors:
    c = theme.colors()
    dark = c.name == "dark"
    green, red = ("#2ea043", "#f85149") if dark else ("#1a7f37", "#cf222e")
    bg = c.surface
    return DiffColors(
        bg=QColor(bg), text=QColor(c.text), muted=QColor(c.muted),
        gutter=mix(bg, c.sidebar, 0.6 if dark else 0.8), gutter_text=mix(c.muted, bg, 0.25),
        add_bg=mix(bg, green, 0.14 if dark else 0.10), add_strong=mix(bg, green, 0.40 if dark else 0.30),
        add_gutter=mix(bg, green, 0.22 if dark else 0.18),
        del_bg=mix(bg, red, 0.14 if dark else 0.08), del_strong=mix(bg, red, 0.42 if dark else 0.26),
        del_gutter=mix(bg, red, 0.22 if dark else 0.15),
        header=QColor(c.card_header), header_current=mix(c.card_header, c.accent, 0.16 if dark else 0.10),
        border=QColor(c.border), accent=QColor(c.accent), gap=mix(bg, c.sidebar, 0.7),
        success=QColor(c.success), error=QColor(c.error), warning=QColor(c.warning),
        button=QColor(c.surface), button_hover=mix(c.surface, c.accent, 0.12),
        accept_bg=mix(bg, c.success, 0.14), reject_bg=mix(bg, c.error, 0.10),
    )




__all__ = ["DiffColors", "diff_colors", "mix"]
