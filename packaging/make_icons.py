"""Render the application icon (resources/icons/app.svg) to PNGs at the usual sizes.

    python packaging/make_icons.py            # writes resources/icons/app-<size>.png
    python packaging/make_icons.py --check    # exit 1 when a PNG is missing, the wrong size or
                                              # rendered from an older app.svg

Rendered with Qt's own SVG renderer (QtSvg ships with PySide6-Essentials) on an offscreen
QGuiApplication, so it needs no display and no other tool. The PNGs are committed: the wheel,
the bundle and the .deb (hicolor icon theme) carry them. packaging/app-icon.sha256 records the
SVG they were rendered from, so ``--check`` (and tests/test_packaging.py) notice an app.svg that
changed without the PNGs being rendered again; the check reads PNG headers and needs no Qt.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "resources" / "icons" / "app.svg"
STAMP = ROOT / "packaging" / "app-icon.sha256"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def png_path(size: int, folder: Path | None = None) -> Path:
    return (folder or SVG.parent) / f"app-{size}.png"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def svg_digest(svg: Path = SVG) -> str:
    return hashlib.sha256(svg.read_bytes()).hexdigest()


def problems(folder: Path | None = None) -> list[str]:
    """What is wrong with the rendered PNGs (empty when they are present and current)."""
    out = []
    for size in SIZES:
        path = png_path(size, folder)
        if not path.exists():
            out.append(f"{path} is missing")
        elif png_size(path) != (size, size):
            out.append(f"{path} is {png_size(path)}, not {size}x{size}")
    recorded = STAMP.read_text(encoding="utf-8").split()[0] if STAMP.exists() else ""
    if folder is None and recorded != svg_digest():
        out.append(f"{SVG.name} changed since the PNGs were rendered ({STAMP.name})")
    return out


def render(svg: Path = SVG, folder: Path | None = None, sizes: tuple[int, ...] = SIZES) -> list[Path]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(["make_icons"])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"make_icons: {svg} is not a valid SVG")
    written = []
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter, QRectF(0, 0, size, size))
        painter.end()
        path = png_path(size, folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not image.convertToFormat(QImage.Format.Format_ARGB32).save(str(path), "PNG"):
            raise SystemExit(f"make_icons: could not write {path}")
        written.append(path)
    if folder is None and svg == SVG:
        STAMP.write_text(f"{svg_digest(svg)}  resources/icons/app.svg\n", encoding="utf-8")
    del app
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the PNGs are present and current")
    parser.add_argument("--out", type=Path, help="folder to write to (default: resources/icons)")
    args = parser.parse_args(argv)
    if args.check:
        found = problems(args.out)
        for problem in found:
            print(f"make_icons: {problem}; run python packaging/make_icons.py", file=sys.stderr)
        return 1 if found else 0
    for path in render(folder=args.out):
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"{shown}  {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
