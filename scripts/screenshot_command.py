"""Screenshots of a command's tool card: ``running`` (its output streaming in, the clock ticking)
and ``finished`` (the output kept, the result under it), from a real command in the real sandbox, called by
a scripted model (no key, no network).

    xvfb-run -s "-screen 0 1280x720x24" .venv/bin/python scripts/screenshot_command.py --platform xcb --out shots

Each state runs in its own process (like ``screenshot_states.py``); files are ``run-command-<state>.png``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.window_shots import folder_with, fresh_home, run_window, shots_main, show_filling_screen, until

STATES = ("running", "finished")
#: A test run printing coloured lines (the card shows them without the codes), then a long wait.
RUNNING = (r"echo 'collecting tests…'; for i in $(seq 1 30); do "
           r"printf 'tests/test_garden_%02d.py::test_watering \033[32mPASSED\033[0m\n' $i; sleep 0.08; done; sleep 60")
FINISHED = (r"echo 'counting notes'; wc -l *.txt *.md; grep -n -i water notes.txt; "
            r"printf '\033[32mall good\033[0m\n'")


def shoot(state: str, out: Path) -> int:
    home = fresh_home()

    def build() -> Any:
        from ui.app import Application
        from workspace.providers.testing import ScriptedProvider, ToolCall

        folder = folder_with("garden-notes", {
            "notes.txt": "Plant tomatoes in May.\nWater the basil every morning.\n",
            "README.md": "# Garden notes\n\nWhat grows where, and when to water it.\n",
            "plan.md": "- [ ] build the raised bed\n- [x] buy seeds\n",
        }, prefix="robotlab-command-")
        command = RUNNING if state == "running" else FINISHED
        provider = ScriptedProvider([
            ["I'll run it in the sandbox.", ToolCall("run_command", {"command": command}, id="c1")],
            "The notes mention watering once, in notes.txt; every file is there.",
        ])
        root = Application(folder=folder, theme_name="light", provider=provider, db_path=home / "command.db")
        root.controller.set_robot("file-helper")
        root.controller.workspace.approval.policy.set_rule("allow", tool="run_command")
        show_filling_screen(root.window)
        return root

    async def grab(root: Any, app: Any) -> None:
        w = root.window
        w.runs.send("run the garden tests" if state == "running" else "check the notes for watering")

        def card() -> Any:
            return next((c for c in w.chat.tool_cards() if c.call_id == "c1"), None)

        if state == "running":
            await until(lambda: card() is not None and card().output is not None
                        and card().output.text.count("\n") >= 22, timeout=60, what="the output to stream")
            await asyncio.sleep(1.2)  # the clock shows a second or more
        else:
            await until(lambda: root.controller.idle and card() is not None and card().status == "ok",
                        timeout=60, what="the run to end")
            await asyncio.sleep(0.3)
        app.processEvents()
        out.parent.mkdir(parents=True, exist_ok=True)
        w.grab().save(str(out))
        print(f"wrote {out}")
        if state == "running":
            root.controller.stop()

    return run_window(build, grab)


def main() -> int:
    return shots_main(__file__, __doc__, STATES, shoot, prefix="run-command-")


if __name__ == "__main__":
    sys.exit(main())
