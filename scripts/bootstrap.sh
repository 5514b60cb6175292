#!/usr/bin/env bash
# Set up everything `make run` (mode "app") or `make test` (mode "dev") needs, once.
# Re-running is cheap: each step is skipped when its stamp is newer than its inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-app}"
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
STAMPS="$VENV/.stamps"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
need_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

# 1. Python 3.11+ and a virtual environment.
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "RobotLab Workspace needs Python 3.11 or newer; '$PYTHON' is missing or older." >&2
  echo "Install it (Debian/Ubuntu: sudo apt-get install python3 python3-venv) or run: make PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  say "Creating the virtual environment in $VENV"
  if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
    say "python3-venv is missing; installing it"
    need_root apt-get update -qq && need_root apt-get install -y -qq python3-venv >/dev/null || {
      echo "Could not create a virtual environment: install python3-venv (sudo apt-get install python3-venv)." >&2; exit 1; }
    "$PYTHON" -m venv "$VENV"
  fi
fi
mkdir -p "$STAMPS"

# 2. Python packages (the project itself in editable mode).
extra=""; [ "$MODE" = dev ] && extra="[dev]"
stamp="$STAMPS/pip-$MODE"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "Installing Python packages ($MODE)"
  log="$VENV/pip-install.log"
  if ! "$VENV/bin/python" -m pip install -q -e ".$extra" >"$log" 2>&1; then
    grep -v -E "^WARNING: Location .* is ignored" "$log" | tail -40 >&2
    echo "Installing the Python packages failed (full log: $log). Check your network access to PyPI." >&2
    exit 1
  fi
  LITELLM_LOCAL_MODEL_COST_MAP=True "$VENV/bin/python" -c 'import PySide6, qasync, litellm, mcp, yaml, pygments' \
    || { echo "Python packages failed to import (see $log)" >&2; exit 1; }
  touch "$stamp"
fi

# 3. System libraries Qt needs (even offscreen, QtGui links EGL, GL, fontconfig, xkbcommon...).
#    Checked with ldd on Qt's own libraries and platform plugins, so nothing is installed
#    when the machine already has them.
qt_missing() {
  local qt
  qt="$("$VENV/bin/python" -c 'import PySide6, os; print(os.path.dirname(PySide6.__file__))')/Qt"
  local files="$qt/lib/libQt6Gui.so.6 $qt/lib/libQt6Widgets.so.6 $qt/plugins/platforms/libqoffscreen.so"
  [ "$MODE" = app ] && files="$files $qt/plugins/platforms/libqxcb.so"
  for f in $files; do [ -e "$f" ] && ldd "$f" 2>/dev/null | grep -q "not found" && return 0; done
  return 1
}
if [ "$(uname)" = Linux ] && command -v ldd >/dev/null && qt_missing; then
  pkgs="libegl1 libgl1 libglib2.0-0 libfontconfig1 libfreetype6 libxkbcommon0 libdbus-1-3 libx11-6 libx11-xcb1 fonts-dejavu-core"
  [ "$MODE" = app ] && pkgs="$pkgs libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 \
libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xfixes0 libxcb-xkb1 libxcb-shm0 libxcb-sync1 libxcb-xinerama0"
  say "Installing the system libraries Qt needs"
  if ! { need_root apt-get update -qq && need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null; }; then
    echo "Qt is missing system libraries and they could not be installed automatically." >&2
    echo "Install them with your package manager (Debian/Ubuntu: sudo apt-get install $pkgs)." >&2
    exit 1
  fi
fi

# 4. For the packaging tests and the Xvfb layer (tests/xvfb): a virtual X server, xdotool for real
#    key and mouse events, a headless Wayland compositor to start the bundle on, and the validators
#    of the .desktop entry and AppStream metadata; bubblewrap for the command sandbox's tests
#    (tests/test_isolation.py; util-linux gives its prlimit, unshare and mount) (best effort).
if [ "$MODE" = dev ] && command -v dpkg-query >/dev/null; then
  missing=""
  for pkg in xvfb xauth xdotool x11-utils weston libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 desktop-file-utils appstream \
      bubblewrap util-linux; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
  done
  if [ -n "$missing" ]; then
    say "Installing test tools:$missing"
    { need_root apt-get update -qq && need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null; } \
      || echo "Could not install$missing; the packaging, Xvfb and sandbox tests that need them will be skipped." >&2
  fi
fi

# 5. MCP reference servers for the tests (npm registry), pinned by tests/servers/package-lock.json.
if [ "$MODE" = dev ]; then
  if ! command -v npm >/dev/null; then
    say "npm is missing; installing Node.js (needed for the MCP reference servers the tests use)"
    need_root apt-get update -qq && need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null || {
      echo "Could not install Node.js/npm; the MCP server tests will fail. Install nodejs and npm." >&2; }
  fi
  stamp="$STAMPS/npm"
  if command -v npm >/dev/null && { [ ! -f "$stamp" ] || [ tests/servers/package.json -nt "$stamp" ] || [ ! -d tests/servers/node_modules ]; }; then
    say "Installing the MCP reference servers (npm)"
    (cd tests/servers && npm install --no-audit --no-fund --loglevel=error >/dev/null) && touch "$stamp"
  fi
fi
