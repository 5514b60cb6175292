"""Startup to first paint of the main window, against a bare PySide6 window, in fresh processes.

Each child process measures from its first line (before importing Qt) to the first paint
event of its window, prints the time and exits. Medians of 15 alternating runs; ratio target <= 1.5.
Also checks that litellm and the mcp SDK are not imported on the way. Writes
bench/results/ui_startup.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RUNS = 15
ROOT = Path(__file__).resolve().parent.parent

_PAINT_PROBE = """
from PySide6.QtCore import QEvent, QObject, QTimer
class _Probe(QObject):
    done = False
    def eventFilter(self, obj, event):
        if not self.done and event.type() == QEvent.Type.Paint:
            self.done = True
            print(f"FIRST_PAINT {(time.perf_counter() - T0) * 1000:.1f}", flush=True)
            print(f"HEAVY {'litellm' in sys.modules} {'mcp' in sys.modules}", flush=True)
            os._exit(0)
        return False
probe = _Probe()
app.installEventFilter(probe)
"""

BARE = """
import time, sys, os
T0 = time.perf_counter()
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow
app = QApplication(["bare"])
""" + _PAINT_PROBE + """
window = QMainWindow()
window.setCentralWidget(QLabel("hello"))
window.resize(1400, 900)
window.show()
app.exec()
"""

APP = """
import time, sys, os
T0 = time.perf_counter()
sys.path.insert(0, ROOT)
from ui.app import get_app, run_app
app = get_app()
from PySide6.QtCore import QEvent, QObject, QTimer
class _Probe(QObject):
    first = False
    built = False
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint:
            if not self.first:
                self.first = True
                print(f"FIRST_PAINT {(time.perf_counter() - T0) * 1000:.1f}", flush=True)
            elif self.built:
                print(f"READY_PAINT {(time.perf_counter() - T0) * 1000:.1f}", flush=True)
                print(f"HEAVY {'litellm' in sys.modules} {'mcp' in sys.modules}", flush=True)
                os._exit(0)
        return False
probe = _Probe()
app.installEventFilter(probe)
import ui.app as ui_app
_load = ui_app.Application._load
def load(self, **kw):
    _load(self, **kw)
    probe.built = True
    self.window.update()
ui_app.Application._load = load
run_app([])
"""


def run(code: str, home: str) -> tuple[float, str]:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"), "ROBOTLAB_HOME": home}
    # Measure what users get: byte-code caches written and used (this sandbox sets
    # PYTHONDONTWRITEBYTECODE, which would recompile every module of the app at each start).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run([sys.executable, "-c", code.replace("ROOT)", repr(str(ROOT)) + ")")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    paint = heavy = None
    ready = 0.0
    for line in proc.stdout.splitlines():
        if line.startswith("FIRST_PAINT"):
            paint = float(line.split()[1])
        elif line.startswith("READY_PAINT"):
            ready = float(line.split()[1])
        elif line.startswith("HEAVY"):
            heavy = line
    if paint is None:
        raise RuntimeError(f"no paint measured:\n{proc.stdout}\n{proc.stderr}")
    return paint, f"{ready} {heavy or ''}"


def main() -> int:
    home = tempfile.mkdtemp(prefix="robotlab-bench-")
    run(BARE, home)  # warm the OS file cache
    run(APP, home)
    bare: list[float] = []
    app: list[float] = []
    ready: list[float] = []
    heavy: list[str] = []
    for _ in range(RUNS):  # alternate, so both see the same machine load
        bare.append(run(BARE, home)[0])
        t, flags = run(APP, home)
        app.append(t)
        parts = flags.split()
        ready.append(float(parts[0]))
        heavy = parts[1:]
    b, a, r = statistics.median(bare), statistics.median(app), statistics.median(ready)
    result = {
        "bare_window_first_paint_ms": round(b, 1),
        "main_window_first_paint_ms": round(a, 1),
        "ratio": round(a / b, 2),
        "full_ui_painted_ms": round(r, 1),
        "full_ui_ratio": round(r / b, 2),
        "target_ratio": 1.5,
        "litellm_imported": heavy[1] == "True" if len(heavy) > 2 else None,
        "mcp_imported": heavy[2] == "True" if len(heavy) > 2 else None,
        "note": "first paint: the themed window frame; full UI: every widget built, then the configuration, "
                "the database, the robots and the thread list loaded, and painted",
        "runs": RUNS,
    }
    print(f"bare PySide6 window:   {b:7.1f} ms to first paint (median of {RUNS})")
    print(f"RobotLab main window:  {a:7.1f} ms to first paint (themed frame)")
    print(f"                       {r:7.1f} ms to the full UI painted (config, database, threads loaded): "
          f"ratio {result['full_ui_ratio']:.2f}")
    print(f"ratio: {result['ratio']:.2f} (target <= 1.5); litellm imported: {result['litellm_imported']}, "
          f"mcp imported: {result['mcp_imported']}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ui_startup.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
