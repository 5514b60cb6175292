"""Screenshot of robots talking on a network's message bus, in the chat, from a real run with a scripted model
(no key, no network):

- ``bus-lanes``: ``examples/networks/release-bus.yaml`` run in the window; the writer's lane holds its
  ``send_message`` call (the editor's answering run inside it) and the two messages, "writer → editor" and
  the editor's reply, as compact cards in each sender's colour, then the announcer's lane.

    xvfb-run -a -s "-screen 0 1280x720x24" .venv/bin/python scripts/screenshot_bus.py --platform xcb --out docs/screens

Under Xvfb the message is typed into the message box and sent with Ctrl+Enter (xdotool), as a person would.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshot_robotlab import type_and_send
from scripts.window_shots import (
    ROOT,
    folder_with,
    fresh_home,
    run_window,
    shots_main,
    show_filling_screen,
    until,
)

STATES = ("bus-lanes",)
NETWORK = ROOT / "examples" / "networks" / "release-bus.yaml"


def shoot(state: str, out: Path) -> int:
    home = fresh_home()
    networks = home / "config" / "networks"
    networks.mkdir(parents=True, exist_ok=True)
    shutil.copy(NETWORK, networks / NETWORK.name)
    folder = folder_with("shop-site", {"README.md": "# Shop site\n"}, prefix="robotlab-bus-")

    def build() -> Any:
        from examples.bus_network import provider
        from ui.app import Application

        root = Application(folder=folder, theme_name="light", provider=provider(), db_path=home / "shots.db")
        show_filling_screen(root.window)
        return root

    async def grab(root: Any, app: Any) -> None:
        from ui.chat.model.state import LaneItem

        w = root.window
        w.robots.refresh()
        w.robot_picker.setCurrentIndex(w.robot_model.row_of("release-bus", "network"))
        await asyncio.sleep(0.3)
        await type_and_send(w, "Release notes for v2.0: startup is twice as fast")
        await until(lambda: root.controller.idle and any(
            isinstance(i, LaneItem) and i.task == "announce" and i.status == "done"
            for turn in w.chat.presenter.state.turns for i in turn.items), timeout=60, what="the network's run")
        for turn in w.chat.presenter.state.turns:  # open the writer's lane, as a click on its header does
            for item in turn.items:
                if isinstance(item, LaneItem) and item.task == "write":
                    w.chat.presenter.set_lane_collapsed(item, False, by_user=True)
        await asyncio.sleep(0.5)
        from ui.chat.view.lanes import TaskLane

        lane = next(x for x in w.chat.items() if isinstance(x, TaskLane) and x.task == "write")
        w.chat.verticalScrollBar().setValue(lane.mapTo(w.chat.widget(), lane.rect().topLeft()).y() - 8)
        await asyncio.sleep(0.8)
        app.processEvents()
        out.parent.mkdir(parents=True, exist_ok=True)
        app.primaryScreen().grabWindow(0).save(str(out))
        print(f"wrote {out}")

    return run_window(build, grab)


def main() -> int:
    return shots_main(__file__, __doc__, STATES, shoot)


if __name__ == "__main__":
    sys.exit(main())
