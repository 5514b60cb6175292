"""A virtual X server (Xvfb), the real app on it, and a person's input through xdotool (XTEST events).

:class:`XServer` starts ``Xvfb :N -screen 0 WxHx24`` on a free display number; :class:`AppUnderTest`
starts the app on it (``--platform xcb`` wording: ``QT_QPA_PLATFORM=xcb``) with its own ROBOTLAB_HOME,
finds its window with ``xdotool search --sync --name``, types, presses keys and clicks with xdotool,
grabs the screen (tests/xvfb/grab.py) and reads what happened from the app's own database (the
thread's turns and events), never from pixels.
"""

from __future__ import annotations

import os
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def sizes() -> list[tuple[int, int]]:
    """The screen sizes the tests run at: ``ROBOTLAB_XVFB_SIZES`` (``1280x720,1920x1080``), default 1280x720."""
    out = []
    for size in os.environ.get("ROBOTLAB_XVFB_SIZES", "1280x720").split(","):
        width, height = (int(v) for v in size.strip().lower().split("x"))
        out.append((width, height))
    return out


TITLE = "RobotLab Workspace"


def missing_tools() -> str | None:
    """Why the layer cannot run here (None: it can)."""
    for tool, package in (("Xvfb", "xvfb"), ("xdotool", "xdotool")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {package}; scripts/bootstrap.sh dev installs it)"
    return None


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, *, step: float = 0.1) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


class XServer:
    """``Xvfb -displayfd`` at W×H: the server picks a free display number itself and writes it when it is
    ready to take connections (choosing a number here and waiting for its socket raced a server still
    shutting down on the same number: the app then found no server there).

    ``-noreset``: by default the server resets itself when its last client leaves, and a client that connects
    during the reset is dropped before its setup is answered. A test that quits the app and starts it again
    (or an xdotool call between two) met exactly that: "could not connect to display" from a live server."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.display = ""
        self.process: subprocess.Popen[bytes] | None = None
        self.log: Path | None = None

    def start(self) -> XServer:
        read_end, write_end = os.pipe()
        log = tempfile.NamedTemporaryFile(prefix="xvfb-", suffix=".log", delete=False)  # noqa: SIM115
        self.log = Path(log.name)
        try:
            process = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0",
                                        f"{self.width}x{self.height}x24", "-nolisten", "tcp", "-noreset"],
                                       pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=log)
        finally:
            os.close(write_end)
            log.close()
        with os.fdopen(read_end, "rb") as ready:
            number = _read_line(ready, 20)
        if not number.strip().isdigit():
            process.kill()
            process.wait(5)
            raise RuntimeError(f"Xvfb did not report a display (status {process.returncode}): {self.errors()}")
        self.display, self.process = f":{number.strip()}", process
        return self

    def errors(self) -> str:
        """The end of what the server wrote (its warnings, or why it ended)."""
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(encoding="utf-8", errors="replace")[-1500:]

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.log is not None:
            self.log.unlink(missing_ok=True)


def _read_line(stream: Any, timeout: float) -> str:
    """One line from a pipe, or what came before ``timeout`` seconds (the server may die silently)."""
    data = b""
    end = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        left = end - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            break
        chunk = os.read(stream.fileno(), 64)
        if not chunk:
            break
        data += chunk
    return data.decode("ascii", errors="replace")


class AppUnderTest:
    """The app on ``server`` with its own home folder; its window found by title."""

    def __init__(self, server: XServer, home: Path, *, folder: Path | None = None, shots: Path) -> None:
        self.server, self.home, self.folder, self.shots = server, home, folder, shots
        self.pace = home / "demo-pace"
        self.pace.write_text("0.005", encoding="utf-8")
        self.process: subprocess.Popen[bytes] | None = None
        self.window = ""
        self.log = home / "app-output.txt"

    # -- the process -----------------------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("ROBOT_LAB_")}
        env.update(DISPLAY=self.server.display, QT_QPA_PLATFORM="xcb", ROBOTLAB_HOME=str(self.home),
                   ROBOTLAB_XVFB_DELAY_FILE=str(self.pace), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
                   QT_ACCESSIBILITY="0", NO_AT_BRIDGE="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
        env.pop("QT_SCALE_FACTOR", None)
        return env

    def start(self) -> AppUnderTest:
        args = [sys.executable, str(HERE / "app_main.py")]
        if self.folder is not None:
            args += ["--folder", str(self.folder)]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(args, env=self.env(), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        process = self.process

        def shown() -> list[str]:
            if process.poll() is not None:
                raise AssertionError(f"the app ended with status {process.returncode}: {self.output()}")
            # The title grows ("thread — folder — RobotLab Workspace"): this process's window, by its end.
            return self.windows_named(f"{TITLE}$", pid=process.pid)

        try:
            ids = wait_for(shown, 90, "the window (xdotool search --name)", step=0.3)
        except AssertionError:
            self.stop()
            server = "running" if self.server.alive() else f"ended; it said: {self.server.errors()}"
            raise AssertionError(f"the window did not appear; the app said: {self.output()}\n"
                                 f"the X server {self.server.display} is {server}") from None
        self.window = ids[0]
        self.focus()
        return self

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:] if self.log.exists() else ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # the window closes as with its close button
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    # -- a person's input ------------------------------------------------------------------------------------
    def xdotool(self, *args: str) -> str:
        done = subprocess.run(["xdotool", *args], env=self.env(), capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise AssertionError(f"xdotool {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def focus(self) -> None:
        self.xdotool("windowfocus", "--sync", self.window)
        time.sleep(0.2)

    def key(self, *keys: str, pause: float = 0.3) -> None:
        self.xdotool("key", "--clearmodifiers", *keys)
        time.sleep(pause)

    def type(self, text: str) -> None:
        self.xdotool("type", "--delay", "8", text)
        time.sleep(0.2)

    def click(self, x: int, y: int) -> None:
        self.xdotool("mousemove", "--sync", str(x), str(y), "click", "1")
        time.sleep(0.3)

    def geometry(self, window: str | None = None) -> dict[str, int]:
        out = self.xdotool("getwindowgeometry", "--shell", window or self.window)
        values = dict(line.split("=", 1) for line in out.split() if "=" in line)
        return {k: int(v) for k, v in values.items() if k in ("X", "Y", "WIDTH", "HEIGHT")}

    def windows_named(self, title: str, *, pid: int | None = None) -> list[str]:
        """The visible windows whose title matches ``title`` (and of process ``pid``) now (no waiting)."""
        args = ["xdotool", "search", "--all", "--onlyvisible", *(["--pid", str(pid)] if pid else []), "--name", title]
        found = subprocess.run(args, env=self.env(), capture_output=True, text=True, timeout=30)
        return found.stdout.split()

    def title(self) -> str:
        return self.xdotool("getwindowname", self.window).strip()

    def window_named(self, title: str) -> str:
        found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", title], env=self.env(),
                               capture_output=True, text=True, timeout=30)
        ids = found.stdout.split()
        assert ids, f"no window named {title!r}"
        return ids[-1]

    def shot(self, name: str) -> Path:
        out = self.shots / f"{name}-{self.server.width}x{self.server.height}.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, str(HERE / "grab.py"), str(out)], env=self.env(), capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0 and out.is_file(), f"the screen grab failed: {done.stderr}"
        return out

    # -- what the app recorded -------------------------------------------------------------------------------
    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        db = self.home / "data" / "workspace.db"
        if not db.exists():
            return []
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                return list(conn.execute(sql, params))
        except sqlite3.OperationalError:
            return []  # not created yet, or busy for a moment

    def turn(self, text: str) -> tuple[str, str] | None:
        """(id, status) of the latest turn whose message is ``text``."""
        rows = self.query("SELECT id, status FROM turns WHERE user_text = ? ORDER BY created_at DESC LIMIT 1", text)
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def wait_turn(self, text: str, status: str | tuple[str, ...], timeout: float = 60) -> str:
        wanted = (status,) if isinstance(status, str) else status
        found = wait_for(lambda: (t := self.turn(text)) is not None and t[1] in wanted and t, timeout,
                         f"the turn {text!r} to be {' or '.join(wanted)}")
        return str(found[0])

    def events(self, turn_id: str, kind: str) -> int:
        return len(self.query("SELECT id FROM events WHERE turn_id = ? AND kind = ?", turn_id, kind))
