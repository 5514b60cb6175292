"""Render the main window offscreen with a scripted conversation to a PNG.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshot.py docs/screenshot.png [--theme dark]

The conversation: text with Markdown and code, two tool calls with results, a second turn
whose tool call waits for approval, and the inspector open on the tool calls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ANSWER = """The event loop is set up in **`ui/app.py`**: Qt and asyncio share one thread through
*qasync*, so the window stays responsive while a robot streams:

```python
loop = qasync.QEventLoop(app)
loop.run_until_complete(main())
```

I'll note that in memory so other robots can find it."""


def _demo_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="robotlab-shot-")) / "demo-project"
    folder.mkdir()
    (folder / "ui").mkdir()
    (folder / "workspace").mkdir()
    (folder / "README.md").write_text("# Demo project\n", encoding="utf-8")
    (folder / "ui" / "app.py").write_text("import qasync\nloop = qasync.QEventLoop(app)\n", encoding="utf-8")
    (folder / "workspace" / "agent.py").write_text("class AgentRun: ...\n", encoding="utf-8")
    return folder


def _ensure_tools(folder: Path) -> None:
    """Stand-ins for the built-in file tools when they are not installed (read-only, in ``folder``)."""
    from workspace.tools import registry
    from workspace.tools.decorator import tool

    if registry.get("list_files") is None:
        @tool(read_only=True)
        def list_files(path: str = ".") -> dict[str, object]:
            """List the files of a folder.

            Args:
                path: folder relative to the opened folder
            """
            base = folder / path
            entries = sorted(str(p.relative_to(folder)) for p in base.rglob("*") if p.is_file())
            return {"path": path, "entries": entries}

        registry.register(list_files)
    if registry.get("search_files") is None:
        @tool(read_only=True)
        def search_files(query: str) -> dict[str, object]:
            """Search the files for a text.

            Args:
                query: the text to find
            """
            matches = []
            for p in sorted(folder.rglob("*.py")):
                for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
                    if query.lower() in line.lower():
                        matches.append({"path": str(p.relative_to(folder)), "line": n, "text": line.strip()})
            return {"query": query, "matches": matches}

        registry.register(search_files)


async def _wait_until(predicate: object, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        if loop.time() > end:
            raise TimeoutError("the scripted conversation did not reach the expected state")
        await asyncio.sleep(0.02)


async def _script(root: object, provider: object) -> None:
    from workspace.providers.testing import ToolCall

    window = root.window  # type: ignore[attr-defined]
    controller = root.controller  # type: ignore[attr-defined]
    provider.enqueue(  # type: ignore[attr-defined]
        ["I'll look through the folder first.", ToolCall("list_files", {"path": "."}, id="call_list"),
         ToolCall("search_files", {"query": "QEventLoop"}, id="call_search")],
        [ANSWER, ToolCall("remember", {"key": "event_loop", "value": {"file": "ui/app.py", "line": 2}},
                          id="call_remember")],
    )
    controller.workspace.approval.policy.set_rule("ask", tool="remember")
    window.runs.send("Where is the event loop set up in this project?")
    await _wait_until(lambda: window.chat.pending_approval() is not None)
    await asyncio.sleep(0.3)
    window.docks.tool_pane.select_call("call_search")
    window.docks.tool_pane.tabs.setCurrentIndex(1)
    card = window.chat.card("call_list")
    if card is not None:
        card.set_result_expanded(False)
    # Show the whole turn from the user's message down to the approval buttons.
    users = window.chat.user_messages()
    panel = window.chat.pending_approval()
    if users and panel is not None:
        bottom = panel.mapTo(window.chat.widget(), panel.rect().bottomLeft()).y()
        top = users[-1].y() - 6
        height = window.chat.viewport().height()
        window.chat.verticalScrollBar().setValue(max(0, top, bottom + 14 - height))
    await asyncio.sleep(0.3)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("output", nargs="?", default=str(ROOT / "docs" / "screenshot.png"))
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    parser.add_argument("--size", default="1400x960")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="robotlab-home-"))
    os.environ["ROBOTLAB_HOME"] = str(home)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"

    from ui.app import Application, get_app, new_event_loop
    from workspace.providers.testing import ScriptedProvider

    folder = _demo_folder()
    _ensure_tools(folder)
    app = get_app()
    loop = new_event_loop(app)
    # A scripted conversation says so: never a real model's name on words no model wrote.
    provider = ScriptedProvider(delay=0.002, chunk_words=3, model_id="scripted-example",
                                label="Scripted example (no language model)")
    root = Application(folder=folder, theme_name=args.theme, provider=provider, db_path=home / "shot.db")
    width, height = (int(v) for v in args.size.split("x"))
    root.window.resize(width, height)
    root.window.show()
    root.window.docks.fit_tabs()  # as at start-up, for the size the picture is taken at: every tab whole
    try:
        with loop:
            loop.run_until_complete(_script(root, provider))
            out = Path(args.output)
            out.parent.mkdir(parents=True, exist_ok=True)
            app.processEvents()
            root.window.grab().save(str(out))
            print(f"wrote {out}")
            loop.run_until_complete(root.aclose())
    finally:
        if not loop.is_closed():
            loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
