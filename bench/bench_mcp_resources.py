"""Browsing MCP resources: the time from "show me this server's resources" to a preview, against
server-everything over stdio (the server already started, as in the MCP dock once it is ready).

1. list: ``resources/list`` + ``resources/templates/list`` (what the dock's Resources tab asks first);
2. preview: reading the first Markdown document (``MCPManager.read_resource_content``, which also looks its
   name up in the list) plus turning it into the preview's HTML (``ui.mcp.resources.preview_html``:
   Markdown rendered; Qt-free);
3. template: filling in ``demo://resource/dynamic/text/{resourceId}`` and reading it.

Median of 30 each. Prints the figures and writes ``bench/results/mcp_resources.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EVERYTHING = ROOT / "tests" / "servers" / "node_modules" / ".bin" / "mcp-server-everything"
RESULTS = Path(__file__).resolve().parent / "results" / "mcp_resources.json"
RUNS = 30


async def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from ui.mcp.resources import preview_html
    from workspace.mcp.manager import MCPManager

    _app = QApplication.instance() or QApplication([])  # the theme's colours need one
    timings: dict[str, list[float]] = {"list": [], "preview": [], "list_and_preview": [], "template": []}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ROBOTLAB_HOME"] = tmp
        manager = MCPManager({"mcpServers": {"everything": {"command": str(EVERYTHING)}}},
                             state_file=Path(tmp) / "state.json")
        try:
            await manager.start("everything")
            for _ in range(RUNS):
                t0 = time.perf_counter()
                resources = await manager.list_resources("everything")
                templates = await manager.list_resource_templates("everything")
                t1 = time.perf_counter()
                doc = next(r for r in resources if r.get("mimeType") == "text/markdown")
                content = await manager.read_resource_content("everything", doc["uri"])
                kind, _html = preview_html(content)
                t2 = time.perf_counter()
                assert kind == "html" and templates
                await manager.read_template("everything", "demo://resource/dynamic/text/{resourceId}",
                                            {"resourceId": "3"})
                t3 = time.perf_counter()
                timings["list"].append(t1 - t0)
                timings["preview"].append(t2 - t1)
                timings["list_and_preview"].append(t2 - t0)
                timings["template"].append(t3 - t2)
        finally:
            await manager.aclose()
    medians = {key: statistics.median(values) for key, values in timings.items()}
    for key, value in medians.items():
        print(f"{key:<20} {value * 1000:8.2f} ms (median of {RUNS})")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": RUNS, "median_seconds": medians}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
