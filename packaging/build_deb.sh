#!/usr/bin/env bash
# Build the .deb of RobotLab Workspace from the PyInstaller bundle (one folder).
#
#   packaging/build_deb.sh BUNDLE_DIR OUT_DIR [VERSION]
#
# BUNDLE_DIR is PyInstaller's output folder (the one holding the `robotlab` executable and
# `_internal/`); the package installs it under /opt/robotlab-workspace, with
#   /usr/bin/robotlab                                     -> /opt/robotlab-workspace/robotlab
#   /usr/share/applications/io.github.robotlab.Workspace.desktop
#   /usr/share/metainfo/io.github.robotlab.Workspace.metainfo.xml
#   /usr/share/icons/hicolor/<N>x<N>/apps/io.github.robotlab.Workspace.png (16 ... 512)
#   /usr/share/icons/hicolor/scalable/apps/io.github.robotlab.Workspace.svg
#   /usr/share/doc/robotlab-workspace/copyright
# No maintainer scripts: the icon cache and the desktop database are refreshed by the dpkg
# triggers of hicolor-icon-theme and desktop-file-utils.
# DEB_COMPRESSION (xz, gzip, zstd, none; default xz) picks dpkg-deb's compressor.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BUNDLE_DIR OUT_DIR [VERSION]" >&2
  exit 2
fi
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
BUNDLE="$(cd "$1" && pwd)"
OUT="$2"
VERSION="${3:-$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -1)}"
APP_ID="io.github.robotlab.Workspace"
PKG="robotlab-workspace"
PREFIX="/opt/$PKG"
ARCH="$(dpkg --print-architecture)"
SIZES="16 24 32 48 64 128 256 512"

[ -x "$BUNDLE/robotlab" ] || { echo "build_deb: $BUNDLE/robotlab is missing: build the bundle first" >&2; exit 1; }
command -v dpkg-deb >/dev/null || { echo "build_deb: dpkg-deb is missing (Debian/Ubuntu: apt-get install dpkg)" >&2; exit 1; }

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
umask 022

# The application.
install -d "$STAGE$PREFIX" "$STAGE/usr/bin"
cp -a "$BUNDLE/." "$STAGE$PREFIX/"
ln -s "$PREFIX/robotlab" "$STAGE/usr/bin/robotlab"

# Desktop integration.
install -D -m 0644 "$HERE/linux/$APP_ID.desktop" "$STAGE/usr/share/applications/$APP_ID.desktop"
install -D -m 0644 "$HERE/linux/$APP_ID.metainfo.xml" "$STAGE/usr/share/metainfo/$APP_ID.metainfo.xml"
for size in $SIZES; do
  png="$ROOT/resources/icons/app-$size.png"
  [ -f "$png" ] || { echo "build_deb: $png is missing: run packaging/make_icons.py" >&2; exit 1; }
  install -D -m 0644 "$png" "$STAGE/usr/share/icons/hicolor/${size}x${size}/apps/$APP_ID.png"
done
install -D -m 0644 "$ROOT/resources/icons/app.svg" "$STAGE/usr/share/icons/hicolor/scalable/apps/$APP_ID.svg"

# Documentation.
install -d "$STAGE/usr/share/doc/$PKG"
cat > "$STAGE/usr/share/doc/$PKG/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: robotlab-workspace
Source: https://github.com/robotlab/robotlab-workspace

Files: *
Copyright: RobotLab Workspace developers
License: MIT

Files: opt/robotlab-workspace/_internal/*
Comment: A self-contained Python runtime with the libraries the application uses, each under
 its own license: CPython (PSF-2.0), Qt 6 and PySide6 (LGPL-3.0, dynamically linked: the
 shared libraries in _internal/PySide6/Qt/lib can be replaced), litellm (MIT), the MCP SDK (MIT),
 pygments (BSD-2-Clause), and others; their license files are in the *.dist-info folders.
License: various

License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy of this software
 and associated documentation files (the "Software"), to deal in the Software without
 restriction, including without limitation the rights to use, copy, modify, merge, publish,
 distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
 Software is furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in all copies or
 substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
 BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
 NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
 DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
EOF

# Everything readable, nothing group/other-writable.
chmod -R u+rwX,go+rX,go-w "$STAGE"

# Control file. Depends: what the bundle links but does not carry (checked with readelf:
# libc, OpenGL/EGL, libxcb and two xcb utility libraries, the Wayland client libraries).
installed_size="$(du -sk --apparent-size "$STAGE" | cut -f1)"
install -d "$STAGE/DEBIAN"
cat > "$STAGE/DEBIAN/control" <<EOF
Package: $PKG
Version: $VERSION
Architecture: $ARCH
Maintainer: RobotLab Workspace developers <robotlab-workspace@users.noreply.github.com>
Installed-Size: $installed_size
Depends: libc6 (>= 2.34), libgl1, libegl1, libxcb1, libxcb-icccm4, libxcb-keysyms1, libwayland-client0, libwayland-cursor0, libwayland-egl1
Recommends: fonts-dejavu-core | fonts-liberation2 | fonts-noto-core
Suggests: gnome-keyring | kwalletmanager, nodejs
Section: devel
Priority: optional
Homepage: https://github.com/robotlab/robotlab-workspace
Description: desktop workspace for LLM agents (robots), tools and MCP servers
 RobotLab Workspace lets you chat with LLM agents, watch every tool call as it
 happens, inspect their memory, connect MCP servers, run networks of robots, and
 review every change a robot wants to make to your files, per file and per hunk,
 before anything touches disk. Works with any model litellm supports, local
 servers such as Ollama, or an offline demo that needs no API key.
 .
 This package is self-contained: it carries its own Python runtime and Qt 6
 under /opt/robotlab-workspace. Start it from the application menu or with the
 robotlab command, which is also the command line (robotlab --help).
EOF

mkdir -p "$OUT"
deb="$OUT/${PKG}_${VERSION}_${ARCH}.deb"
threads=()  # xz on every core: about 1.6 times faster on two
dpkg-deb --help 2>/dev/null | grep -q -- --threads-max && threads=(--threads-max="$(nproc 2>/dev/null || echo 1)")
dpkg-deb "${threads[@]}" --root-owner-group -Z"${DEB_COMPRESSION:-xz}" --build "$STAGE" "$deb" >/dev/null
echo "$deb"
