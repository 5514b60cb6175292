"""Themes: one Qt style sheet per theme in ``resources/styles`` plus the colours the
generated HTML (Markdown, JSON, cards) needs, and themed SVG icons.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PySide6.QtCore import QByteArray, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QIcon, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QApplication

THEMES = ("light", "dark")


@dataclass(frozen=True, slots=True)
class Colors:
    name: str
    window: str
    surface: str
    sidebar: str
    text: str
    muted: str
    border: str
    accent: str
    accent_text: str
    user_bubble: str
    card: str
    card_header: str
    code_bg: str
    inline_code_bg: str
    success: str
    warning: str
    warning_bg: str
    error: str
    error_bg: str
    selection: str
    pygments_style: str


LIGHT = Colors(
    name="light", window="#f4f5f7", surface="#ffffff", sidebar="#eef0f4", text="#1f2328", muted="#6b7280",
    border="#e2e5ea", accent="#5b57d9", accent_text="#ffffff", user_bubble="#eef0fd", card="#fafbfc",
    card_header="#f3f4f7", code_bg="#f6f8fa", inline_code_bg="#eff1f5", success="#1a7f37", warning="#9a6700",
    warning_bg="#fff8e6", error="#cf222e", error_bg="#fff0ef", selection="#dcdafc", pygments_style="friendly",
)
DARK = Colors(
    name="dark", window="#16171b", surface="#1c1d22", sidebar="#202228", text="#e6e7ea", muted="#9aa0aa",
    border="#30333b", accent="#8d89f7", accent_text="#15151a", user_bubble="#2a2b45", card="#22242a",
    card_header="#272a31", code_bg="#15161a", inline_code_bg="#2c2f37", success="#4ac26b", warning="#e3b341",
    warning_bg="#2e2716", error="#f47067", error_bg="#3a1f1f", selection="#3d3b7a", pygments_style="monokai",
)

_current: Colors = LIGHT

#: Badge colours for robots (picked by a stable hash of the robot's name).
BADGE_COLORS = ("#9a6700", "#0f8a6d", "#c0470b", "#b4338f", "#1f6feb", "#8250df", "#5b57d9", "#0e7490")


def colors() -> Colors:
    return _current


def badge_index(name: str) -> int:
    """Which of :data:`BADGE_COLORS` is the robot's (a tiny string hash: hashlib costs startup time)."""
    h = 0
    for ch in name:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    return h % len(BADGE_COLORS)


def badge_color(name: str) -> str:
    """A stable colour per robot name."""
    return BADGE_COLORS[badge_index(name)]


#: The colours that mark a comparison's candidates (their columns, their hunks in the combined review), in order.
CANDIDATE_COLORS = ("#1f6feb", "#c0470b", "#0f8a6d", "#8250df")


def candidate_color(index: int) -> str:
    """The colour of candidate ``index`` of a comparison."""
    return CANDIDATE_COLORS[index % len(CANDIDATE_COLORS)]


@lru_cache(maxsize=1)
def resources_dir() -> Path:
    """The shipped resources (found once: every icon asks)."""
    from workspace.paths import resources_dir as _resources

    return _resources()


def style_sheet(name: str) -> str:
    """The theme's QSS; ``@ICONS@`` in it becomes the icons folder (for arrows and checks); then the rules of
    the chat's many widgets whose colours come from the theme's colours (:func:`chat_rules`)."""
    path = resources_dir() / "styles" / f"{name}.qss"
    icons = (resources_dir() / "icons").as_posix()
    return path.read_text(encoding="utf-8").replace("@ICONS@", icons) + chat_rules(LIGHT if name == "light" else DARK)


#: The tones of a status pill (``QLabel#Pill[tone=...]``, :func:`pill_tone`) and their colours' names in
#: :class:`Colors` (text, background).
PILL_TONES = {"ok": ("success", "card_header"), "error": ("error", "error_bg"), "approval": ("warning", "warning_bg"),
              "busy": ("accent", "card_header")}
_CHIP = "border-radius: 8px; padding: 1px 8px; font-size: 11px; font-weight: 600;"
#: The rule for a robot badge or status pill that shows nothing (its ``empty`` property): no background.
EMPTY_PILL = 'QLabel#RobotChip[empty="true"], QLabel#Pill[empty="true"] { background-color: transparent; }'


def chip_colors(color: str, c: Colors) -> tuple[str, str]:
    """A robot badge's text colour and background (a tint of ``color``; CSS ``rgba``) in theme ``c``."""
    base = QColor(color)
    tint = QColor(base)
    light = c.name == "light"
    tint.setAlpha(38 if light else 70)
    fg = base.name() if light else base.lighter(150).name()
    return fg, f"rgba({tint.red()}, {tint.green()}, {tint.blue()}, {tint.alpha()})"


def chat_rules(c: Colors) -> str:
    """Rules for widgets the chat makes by the hundred, set once on the application rather than on each widget
    (a widget's own style sheet is parsed and its widget polished apart, for each one): a text that fits its
    height (``QTextBrowser[autoHeight="true"]``), the robots' names (``#RobotName[badge=i]``) and badges
    (``#RobotChip[badge=i]``) in the robot's colour, the status pills of tool cards (``#Pill[tone=...]``), a
    tool's server in muted text (``#ToolTitle[muted="true"]``), the model's thinking (``#ThinkingText``), how a
    run ended under its answer (``#Muted[tone=...]``), a notice line's text by its level
    (``#NoticeText[level=...]``), no background for a badge or pill narrowed to nothing (``[empty="true"]``)."""
    rules = ['QTextBrowser[autoHeight="true"], QTextBrowser[autoHeight="true"]:focus '
             "{ background: transparent; border: none; padding: 0px; }",
             f'#ToolTitle[muted="true"] {{ color: {c.muted}; }}',
             f"QLabel#ThinkingText {{ color: {c.muted}; padding-left: 18px; }}"]
    for tone, color in (("muted", c.muted), ("warning", c.warning), ("error", c.error)):
        rules.append(f'QLabel#Muted[tone="{tone}"] {{ color: {color}; }}')
    for level, color in (("info", c.muted), ("warning", c.warning), ("error", c.error)):
        rules.append(f'QLabel#NoticeText[level="{level}"] {{ color: {color}; }}')
    for i, color in enumerate(BADGE_COLORS):
        fg, bg = chip_colors(color, c)
        rules.append(f'QLabel#RobotName[badge="{i}"] {{ color: {color}; font-weight: 600; }}')
        rules.append(f'QLabel#RobotChip[badge="{i}"] {{ color: {fg}; background-color: {bg}; {_CHIP} }}')
    for tone, (fg_name, bg_name) in PILL_TONES.items():
        rules.append(f'QLabel#Pill[tone="{tone}"] {{ color: {getattr(c, fg_name)}; '
                     f"background-color: {getattr(c, bg_name)}; {_CHIP} }}")
    # A badge narrowed to nothing (``ElidedLabel(pill=True)``): no empty pill; its padding stays (after the rules
    # above, as specific: it wins).
    rules.append(EMPTY_PILL)
    return "\n/* The chat's widgets (ui.theme.chat_rules) */\n" + "\n".join(rules) + "\n"


def mono_font(size_delta: int = 0) -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    if size_delta:
        font.setPointSizeF(max(6.0, font.pointSizeF() + size_delta))
    return font


def mono_family() -> str:
    family = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
    return f"'{family}', 'DejaVu Sans Mono', 'Menlo', 'Consolas', monospace"


def apply_theme(app: QApplication, name: str) -> Colors:
    """Set the palette and style sheet of ``app`` for theme ``name`` ("light" / "dark")."""
    global _current
    if name not in THEMES:
        name = "light"
    _current = LIGHT if name == "light" else DARK
    c = _current
    app.setStyle("Fusion")
    pal = QPalette()
    pal.setColor(QPalette.ColorRole.Window, QColor(c.window))
    pal.setColor(QPalette.ColorRole.WindowText, QColor(c.text))
    pal.setColor(QPalette.ColorRole.Base, QColor(c.surface))
    pal.setColor(QPalette.ColorRole.AlternateBase, QColor(c.card))
    pal.setColor(QPalette.ColorRole.Text, QColor(c.text))
    pal.setColor(QPalette.ColorRole.Button, QColor(c.surface))
    pal.setColor(QPalette.ColorRole.ButtonText, QColor(c.text))
    pal.setColor(QPalette.ColorRole.Highlight, QColor(c.accent))
    pal.setColor(QPalette.ColorRole.HighlightedText, QColor(c.accent_text))
    pal.setColor(QPalette.ColorRole.PlaceholderText, QColor(c.muted))
    pal.setColor(QPalette.ColorRole.ToolTipBase, QColor(c.surface))
    pal.setColor(QPalette.ColorRole.ToolTipText, QColor(c.text))
    pal.setColor(QPalette.ColorRole.Link, QColor(c.accent))
    pal.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor(c.muted))
    pal.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor(c.muted))
    app.setPalette(pal)
    app.setStyleSheet(style_sheet(name))
    icon.cache_clear()
    return c


@lru_cache(maxsize=256)
def icon(name: str, color: str | None = None, size: int = 20) -> QIcon:
    """A themed icon from ``resources/icons/<name>.svg`` (``currentColor`` becomes ``color``)."""
    path = resources_dir() / "icons" / f"{name}.svg"
    try:
        svg = path.read_text(encoding="utf-8")
    except OSError:
        return QIcon()
    normal = svg.replace("currentColor", color or _current.text)
    # One pixmap at the screen's scale; Qt derives the disabled look (icons cost startup time).
    app = QApplication.instance()
    scale = max(1, round(app.devicePixelRatio())) if isinstance(app, QApplication) else 1
    pixmap = _render(normal, size * scale)
    pixmap.setDevicePixelRatio(scale)
    return QIcon(pixmap)


def _render(svg: str, px: int) -> QPixmap:
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    pixmap = QPixmap(QSize(px, px))
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, px, px))
    painter.end()
    return pixmap


@lru_cache(maxsize=1)
def app_icon() -> QIcon:
    """The application's icon (the same in every theme): drawn once, at four sizes; the window, the application and
    the sidebar's logo share it (drawn for each, it cost start-up a few milliseconds each time)."""
    path = resources_dir() / "icons" / "app.svg"
    svg = path.read_text(encoding="utf-8")
    result = QIcon()
    for px in (16, 32, 64, 256):
        result.addPixmap(_render(svg, px))
    return result
