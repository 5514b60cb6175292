#!/usr/bin/env bash
# Build the installable forms of RobotLab Workspace (`make package`):
#   dist/robotlab_workspace-<v>-py3-none-any.whl and .tar.gz  (python -m build: sdist, then the wheel from it)
#   dist/robotlab-workspace-<v>-linux-<arch>.tar.gz            (the PyInstaller one-folder bundle, archived)
#   dist/robotlab-workspace_<v>_<arch>.deb                     (dpkg-deb, from the bundle)
# then checks the bundle starts offscreen and validates the .deb's desktop entry and AppStream
# metadata, and prints sizes and build times.
#
# Environment:
#   OUT=dir               where the artefacts go (default: dist)
#   WORK=dir              PyInstaller's work and output folders (default: packaging/build)
#   STEPS="..."           a subset of: icons dist bundle smoke archive deb validate (default: all)
#   DEB_COMPRESSION=xz    dpkg-deb compressor: xz (smallest; default), zstd (fastest), gzip
#   VENV=.venv            the virtual environment with the app and its dependencies
# Installs what it needs when missing: PyInstaller and build into the venv (pip); dpkg-deb,
# desktop-file-utils and appstream with apt-get (as root or with sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="$VENV/bin/python"
OUT="${OUT:-dist}"
WORK="${WORK:-packaging/build}"
STEPS="${STEPS:-icons dist bundle smoke archive deb validate}"
APP_ID="io.github.robotlab.Workspace"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
has_step() { case " $STEPS " in *" $1 "*) return 0;; *) return 1;; esac; }
need_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
human() { du -sh --apparent-size "$1" | cut -f1; }
TIMES=()

[ -x "$PY" ] || { echo "No virtual environment at $VENV: run 'make install-dev' (or scripts/bootstrap.sh dev) first." >&2; exit 1; }
VERSION="$("$PY" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
ARCH="$(dpkg --print-architecture 2>/dev/null || uname -m)"
START="$(now)"
mkdir -p "$OUT" "$WORK"

# Tools.
py_tool() {  # module, pip requirement
  "$PY" -c "import $1" 2>/dev/null && return 0
  say "Installing $2 into $VENV"
  "$PY" -m pip install -q "$2"
}
apt_tool() {  # command, Debian package
  command -v "$1" >/dev/null && return 0
  say "Installing $2 (for $1)"
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 || {
    need_root apt-get update -qq && need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; } || {
    echo "Could not install $2; install it (sudo apt-get install $2) and run again." >&2; exit 1; }
}
has_step dist && py_tool build "build>=1.2"
has_step bundle && py_tool PyInstaller "pyinstaller>=6.10,<7"
if has_step deb || has_step validate; then apt_tool dpkg-deb dpkg; fi
if has_step validate; then apt_tool desktop-file-validate desktop-file-utils; apt_tool appstreamcli appstream; fi

BUNDLE="$WORK/dist/robotlab"

if has_step icons; then
  t="$(now)"
  if ! "$PY" packaging/make_icons.py --check 2>/dev/null; then
    say "Rendering the application icon (resources/icons/app-*.png)"
    "$PY" packaging/make_icons.py >/dev/null
  fi
  TIMES+=("icons $(since "$t")")
fi

if has_step dist; then
  t="$(now)"
  say "Building the sdist and the wheel (python -m build)"
  rm -f "$OUT"/robotlab_workspace-*
  "$PY" -m build --outdir "$OUT" . >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log" >&2; exit 1; }
  TIMES+=("wheel+sdist $(since "$t")")
fi

if has_step bundle; then
  t="$(now)"
  say "Building the PyInstaller bundle (packaging/robotlab.spec)"
  rm -rf "$BUNDLE"
  "$VENV/bin/pyinstaller" --noconfirm --log-level WARN --distpath "$WORK/dist" --workpath "$WORK/pyinstaller" \
    packaging/robotlab.spec >"$WORK/pyinstaller.log" 2>&1 || { tail -40 "$WORK/pyinstaller.log" >&2; exit 1; }
  TIMES+=("bundle $(since "$t")")
fi

if has_step smoke; then
  t="$(now)"
  say "Starting the bundle offscreen"
  home="$(mktemp -d)"
  out="$(env -u PYTHONPATH -u PYTHONHOME ROBOTLAB_HOME="$home" QT_QPA_PLATFORM=offscreen \
    "$BUNDLE/robotlab" --offscreen-smoke 2>"$WORK/smoke.log")" || { cat "$WORK/smoke.log" >&2; exit 1; }
  rm -rf "$home"
  case "$out" in *"main window shown"*) ;; *) echo "The bundle did not show its window: $out" >&2; exit 1;; esac
  "$BUNDLE/robotlab" --version
  TIMES+=("smoke $(since "$t")")
fi

ARCHIVE="$OUT/robotlab-workspace-$VERSION-linux-$(uname -m).tar.gz"
if has_step archive; then
  t="$(now)"
  say "Archiving the bundle ($ARCHIVE)"
  tar -C "$WORK/dist" --owner=0 --group=0 --transform "s,^robotlab,robotlab-workspace-$VERSION," \
    -czf "$ARCHIVE" robotlab
  TIMES+=("archive $(since "$t")")
fi

DEB="$OUT/robotlab-workspace_${VERSION}_${ARCH}.deb"
if has_step deb; then
  t="$(now)"
  say "Building the .deb (${DEB_COMPRESSION:-xz})"
  DEB="$(packaging/build_deb.sh "$BUNDLE" "$OUT" "$VERSION")"
  TIMES+=("deb $(since "$t")")
fi

if has_step validate; then
  t="$(now)"
  say "Validating the .deb's desktop entry and AppStream metadata"
  root="$(mktemp -d)"
  dpkg -x "$DEB" "$root"
  desktop-file-validate "$root/usr/share/applications/$APP_ID.desktop"
  appstreamcli validate --no-net "$root/usr/share/metainfo/$APP_ID.metainfo.xml"
  [ "$(readlink "$root/usr/bin/robotlab")" = /opt/robotlab-workspace/robotlab ] || {
    echo "/usr/bin/robotlab does not point at /opt/robotlab-workspace/robotlab" >&2; exit 1; }
  "$root/opt/robotlab-workspace/robotlab" --version
  rm -rf "$root"
  TIMES+=("validate $(since "$t")")
fi

echo
say "Artefacts"
for f in "$OUT"/robotlab_workspace-"$VERSION"* "$ARCHIVE" "$DEB"; do
  [ -f "$f" ] && printf '  %-8s %s\n' "$(human "$f")" "$f"
done
[ -d "$BUNDLE" ] && printf '  %-8s %s/ (the bundle, unpacked)\n' "$(human "$BUNDLE")" "$BUNDLE"
say "Build times (seconds)"
for entry in "${TIMES[@]}"; do printf '  %-12s %s\n' "${entry% *}" "${entry##* }"; done
printf '  %-12s %s\n' "total" "$(since "$START")"
