"""A screenshot of a comparison with the inspector showing a candidate's tool calls (``compare-inspector``):
three candidates on the loopback model server (tests/fakes/llm_server.py) each make a call of their own —
model-a reads app.py, model-b reads a file that is not there, model-c lists the folder — then answer; a click in
the second column's answer selects it, and the Tool calls dock shows model-b's call, its error in the Result tab.

    xvfb-run -a -s "-screen 0 1280x720x24" .venv/bin/python scripts/screenshot_compare_inspector.py --platform xcb \
        --out docs/screens

Under Xvfb the click is a person's (xdotool); elsewhere (offscreen) the column is selected through the window.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.window_shots import folder_with, fresh_home, run_window, shots_main, show_filling_screen, until

STATES = ("compare-inspector",)
MODELS = ["model-a", "model-b", "model-c"]
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "model-a": ("read_file", {"path": "app.py"}),
    "model-b": ("read_file", {"path": "config.toml"}),
    "model-c": ("list_files", {"path": "."}),
}
ANSWERS = {
    "model-a": "app.py prints a greeting and exits: nothing to configure there.",
    "model-b": "There is no config.toml in this folder, so the app runs on its defaults.",
    "model-c": "The folder holds app.py and notes.txt; the notes say how to run the app.",
}


def reply_fn(body: dict[str, Any]) -> Any:
    from tests.fakes.llm_server import Reply

    model = body["model"]
    if not any(m.get("role") == "tool" for m in body["messages"]):
        name, arguments = CALLS[model]
        return Reply.tool(name, arguments)
    return Reply.say(ANSWERS[model], chunk_size=8, chunk_delay=0.01)


async def xdo(*args: str) -> bool:
    """A person's input through xdotool on the X server (False: no X server or no xdotool: the caller acts)."""
    if os.environ.get("QT_QPA_PLATFORM") != "xcb" or shutil.which("xdotool") is None:
        return False
    done = await asyncio.to_thread(subprocess.run, ["xdotool", *args], capture_output=True, timeout=30)
    await asyncio.sleep(0.3)
    return done.returncode == 0


def shoot(state: str, out: Path) -> int:
    from tests.fakes.llm_server import FakeLLMServer

    home = fresh_home()
    folder = folder_with("hello-app", {
        "app.py": "print('Hello from the app')\n",
        "notes.txt": "Run it with: python app.py\n",
    }, prefix="robotlab-compare-inspector-")
    server = FakeLLMServer(reply_fn=reply_fn, models=MODELS).start()
    base = server.base_url + "/v1"

    def build() -> Any:
        from ui.app import Application
        from workspace.config import load_config

        config = load_config(folder, env={}, overrides={"llm": {"model": "openai/model-a", "api_base": base,
                                                                "max_retries": 1, "max_concurrent_requests": 4}})
        root = Application(folder=folder, config=config, theme_name="light", db_path=home / "compare.db")
        root.controller.set_robot("file-helper")
        show_filling_screen(root.window)
        return root

    async def grab(root: Any, app: Any) -> None:
        from PySide6.QtCore import Qt

        from ui.compare.session import CandidateSpec

        w = root.window
        comparisons = w.comparisons
        w.commands.by_name["toggle_sidebar"].trigger()  # the threads' list off: room for three columns
        w.docks.focus_dock("tools")
        w.resizeDocks([w.docks["tools"]], [420], Qt.Orientation.Horizontal)
        assert comparisons.start([CandidateSpec("file-helper", model=f"openai/{m}", api_base=base)
                                  for m in MODELS[1:]])
        w.composer.set_text("Does the app need a config file?")
        w.composer.submit()
        await until(lambda: not comparisons.running and comparisons.stats is not None
                    and all(c.status == "finished" for c in comparisons.stats.columns), timeout=90,
                    what="the three answers")
        # The start-up probe of the model server can time out while the window is busy starting: probed again.
        w.status.probe_server(again=True)
        try:
            await until(lambda: "not reachable" not in w.status.connection.text(), timeout=10,
                        what="the model server's probe")
        except TimeoutError:
            print("the model server's probe still fails: shot with its warning")
        await asyncio.sleep(0.5)
        chat = comparisons.chats[1]
        text = next(item for item in chat.items() if hasattr(item, "append"))
        where = text.mapToGlobal(text.rect().center())
        clicked = await xdo("mousemove", "--sync", str(where.x()), str(where.y())) and await xdo("click", "1")
        if clicked:
            try:
                await until(lambda: comparisons.selected == 1, timeout=5, what="the click's column")
            except TimeoutError:
                print("the click did not select the column: selected through the window")
        if comparisons.selected != 1:
            comparisons.select(1)
        pane = w.docks.tool_pane
        await until(lambda: pane.model.rowCount() == 1, what="model-b's call in the inspector")
        pane.table.selectRow(0)
        # The Result tab's page holds its view (made when the tab is first picked): pick the tab by its title.
        pane.tabs.setCurrentIndex([pane.tabs.tabText(i) for i in range(pane.tabs.count())].index("Result"))
        await asyncio.sleep(0.5)
        app.processEvents()
        out.parent.mkdir(parents=True, exist_ok=True)
        app.primaryScreen().grabWindow(0).save(str(out))
        print(f"wrote {out}")

    try:
        return run_window(build, grab)
    finally:
        server.stop()


def main() -> int:
    return shots_main(__file__, __doc__, STATES, shoot)


if __name__ == "__main__":
    sys.exit(main())
