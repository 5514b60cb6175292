"""Render a chat whose answer uses the Markdown the chat supports, offscreen, to a PNG.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshot_markdown.py [markdown.png] [--theme dark]

The answer streams in (through the frozen-prefix renderer) and holds a setext heading, a table,
a task list, nested and numbered lists, a quote, links, raw HTML (shown as text) and a code
block with its language and "Copy" link.
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

ANSWER = """Release checklist
=================

| Step | Owner | State |
|:-----|:-----:|------:|
| Tag the release | **Ada** | ~~blocked~~ ready |
| Build the `wheel` | Lin | 80 % |

- [x] Changelog written
- [ ] Screenshots updated
  - [ ] light theme
  - [x] dark theme

3. Publish the wheel
4. Announce it on [the wiki](https://en.wikipedia.org/wiki/Foo_(bar)) <b>not bold</b>

> Ship on *Friday*; see https://example.org/notes.

```python
def publish(version: str) -> None:
    print(f"publishing {version}")
```
"""


async def _wait_until(predicate: object, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        if loop.time() > end:
            raise TimeoutError("the scripted conversation did not finish")
        await asyncio.sleep(0.02)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("output", nargs="?", default="markdown.png")
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    parser.add_argument("--size", default="1100x900")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="robotlab-home-"))
    os.environ["ROBOTLAB_HOME"] = str(home)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"

    from ui.app import Application, get_app, new_event_loop
    from workspace.providers.testing import ScriptedProvider

    app = get_app()
    loop = new_event_loop(app)
    provider = ScriptedProvider(delay=0.001, chunk_words=3, model_id="demo/markdown", label="demo/markdown")
    provider.is_language_model = True  # type: ignore[misc]
    provider.enqueue(ANSWER)
    root = Application(theme_name=args.theme, provider=provider, db_path=home / "shot.db")
    width, height = (int(v) for v in args.size.split("x"))
    root.window.resize(width, height)
    root.window.show()
    try:
        with loop:
            root.window.runs.send("What is left before the release?")
            loop.run_until_complete(_wait_until(lambda: root.controller.idle))
            loop.run_until_complete(asyncio.sleep(0.3))
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
