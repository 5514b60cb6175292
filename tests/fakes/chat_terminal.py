"""``robotlab chat`` in a pseudo-terminal (pexpect, imported on use: a test module skips without it), answering
the cursor position requests prompt_toolkit sends on the way."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CPR_REQUEST = re.escape("\x1b[6n")
TOOLBAR = "Alt+Enter or Esc Enter: new line"


class Terminal:
    """``robotlab chat ARGS`` in a pseudo-terminal."""

    def __init__(self, *args: str, delay: str = "0.002") -> None:
        import pexpect

        env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": delay, "TERM": "xterm"}
        self.child = pexpect.spawn(sys.executable, ["-m", "workspace", "chat", *args], env=env, cwd=str(ROOT),
                                   encoding="utf-8", timeout=30, dimensions=(30, 160))
        self.child.logfile_read = open(os.environ.get("CHAT_LOG", os.devnull), "a")  # noqa: SIM115

    def expect(self, text: str) -> str:
        """Wait for ``text``; the output before it (cursor position requests are answered on the way)."""
        seen = ""
        while True:
            if self.child.expect([re.escape(text), CPR_REQUEST]) == 0:
                return seen + self.child.before
            seen += self.child.before
            self.child.send("\x1b[1;1R")

    def ready(self) -> str:
        """Wait for the prompt, drawn with its toolbar (the terminal is then in prompt_toolkit's hands)."""
        before = self.expect("›")
        return before + self.expect(TOOLBAR)

    def say(self, text: str) -> None:
        self.ready()
        self.child.send(text + "\r")

    def exit_status(self) -> int:
        import pexpect

        self.child.expect(pexpect.EOF)
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else 128 + self.child.signalstatus)
