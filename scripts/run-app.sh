#!/usr/bin/env bash
# Start the desktop app from the virtual environment. With no display, say how to get one.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ] && [ "$(uname)" = Linux ]; then
  if command -v xvfb-run >/dev/null; then
    echo "No display found (DISPLAY is not set): starting the app on a virtual screen with xvfb-run." >&2
    exec xvfb-run -a "$VENV/bin/robotlab" "$@"
  fi
  echo "No display found: DISPLAY and WAYLAND_DISPLAY are not set." >&2
  echo "Run this from a desktop session, or use 'ssh -X', or install xvfb (apt-get install xvfb) for a virtual screen." >&2
  echo "The command line works without a display: $VENV/bin/robotlab --help" >&2
  exit 1
fi
exec "$VENV/bin/robotlab" "$@"
