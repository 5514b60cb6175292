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
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  "$VENV/bin/python" -m pip install -q -e ".$extra" 2>&1 | grep -v -E "^WARNING: Location .* is ignored" || true
  "$VENV/bin/python" -c 'import PySide6, qasync, litellm, mcp, yaml, pygments' || { echo "Python packages failed to install" >&2; exit 1; }
  touch "$stamp"
fi

# 3. System libraries Qt needs to open a window (skipped when they are present).
if [ "$MODE" = app ] && command -v dpkg-query >/dev/null; then
  missing=""
  for pkg in libegl1 libgl1 libfontconfig1 libxkbcommon0 libxkbcommon-x11-0 libdbus-1-3 libglib2.0-0 \
             libx11-xcb1 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-randr0 \
             libxcb-render-util0 libxcb-shape0 libxcb-xfixes0 libxcb-xkb1 fonts-dejavu-core; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
  done
  if [ -n "$missing" ]; then
    say "Installing system libraries Qt needs:$missing"
    if ! { need_root apt-get update -qq && need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null; }; then
      echo "Could not install:$missing. Install them with your package manager; the app may not open a window without them." >&2
    fi
  fi
fi

# 4. MCP reference servers for the tests (npm registry), pinned by tests/servers/package-lock.json.
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
