"""Screenshots of a comparison on a real X server (Xvfb) driven by a person's input (xdotool): three columns
streaming at 1024x640, 1280x720 and 1920x1080, and the combined review with two overlapping hunks.

    .venv/bin/python scripts/screenshot_compare.py [--out docs/screens]

``run(width, height, out, review=..., columns=2..4, theme="dark")`` takes other sizes, counts of columns and the
dark theme (what the fit of the columns is checked on by eye).

The loopback OpenAI-compatible server (tests/fakes/llm_server.py, in a process of its own) plays four models:
each writes app.py its own way (all three change line 2), then streams its answer slowly. The app runs as the
``robotlab`` command starts it (tests/xvfb/app_main.py) with its own home; every step is a key or typed text:
Ctrl+Shift+P picks file-helper, the palette's "Compare with…" opens the dialog, where "with model" typed in its
filter box narrows the list to the models, Tab goes to the list and Space checks the last two; the message is typed
and sent; mid-stream the columns are grabbed; once all answered, Ctrl+Shift+D goes to the combined review, where
Space accepts hunk 1 of model-a and hunk 1 of model-c (the same line) and the overlap is grabbed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.xvfb.xsession import AppUnderTest, XServer, missing_tools, wait_for  # noqa: E402

SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer, Reply
BASE = "".join(f"line {{n}}\\n" for n in range(1, 13))
EDITS = {{"model-a": {{2: "A two", 8: "A eight"}}, "model-b": {{2: "B two", 10: "B ten"}},
          "model-c": {{2: "C two", 5: "C five"}}, "model-d": {{2: "D two", 11: "D eleven"}}}}
WORDS = {{"model-a": "I changed line 2 to read better and tidied line 8.",
          "model-b": "Line 2 now says what it does; line 10 got the same treatment.",
          "model-c": "A smaller change: line 2 and line 5, nothing else touched.",
          "model-d": "Line 2 and line 11 rewritten; the rest of the file is as it was."}}
def reply_fn(body):
    model = body["model"]
    rows = BASE.splitlines(keepends=True)
    for n, text in EDITS[model].items():
        rows[n - 1] = text + "\\n"
    if not any(m.get("role") == "tool" for m in body["messages"]):
        return Reply.tool("write_file", {{"path": "app.py", "content": "".join(rows)}}, stall_before=0.3)
    text = WORDS[model] + "\\n\\n" + " ".join(["Here is why, step by step:"] + [
        f"step {{i}} checks the change against the file and the tests." for i in range(1, 14)])
    return Reply.say(text, chunk_size=5, chunk_delay={delay})
server = FakeLLMServer(reply_fn=reply_fn, models=["model-a", "model-b", "model-c", "model-d"]).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""


def run(width: int, height: int, out: Path, *, review: bool, columns: int = 3, theme: str = "light") -> Path:
    """The columns mid-stream at ``width`` x ``height`` (``columns`` candidates: model-a, the robot's own, and the
    last ``columns - 1`` of model-b .. model-d); with ``review``, the combined review's overlap once all answered.
    Returns the columns' screenshot (``compare-columns-{width}.png`` for three columns in the light theme)."""
    home = Path(tempfile.mkdtemp(prefix="robotlab-compare-shot-"))
    folder = home / "project"
    folder.mkdir()
    (folder / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 13)))
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), delay=0.06)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    base = server.stdout.readline().strip() + "/v1"
    (home / "config").mkdir()
    (home / "config" / "config.yaml").write_text(
        f"llm:\n  model: openai/model-a\n  api_base: {base}\n  max_retries: 1\n  max_concurrent_requests: 4\n"
        f"ui:\n  theme: {theme}\n")
    x = XServer(width, height).start()
    app = AppUnderTest(x, home, folder=folder, shots=home / "shots")
    try:
        app.start()
        app.xdotool("windowmove", "--sync", app.window, "0", "0")
        app.xdotool("windowsize", "--sync", app.window, str(width), str(height))
        time.sleep(1.5)
        app.key("ctrl+shift+p")  # the robot picker
        app.type("file-helper")
        app.key("Return")
        if width < 1600:
            app.key("ctrl+b")  # the threads' sidebar off: room for three columns
        app.key("ctrl+k")  # the command palette
        app.type("Compare with")
        app.key("Return")  # the dialog opens once the models are listed
        wait_for(lambda: app.windows_named("Compare with"), 60, "the Compare with dialog", step=0.3)
        time.sleep(1.0)
        # The list: file-helper again, the other robot, then file-helper with model-a .. model-d. The filter box
        # has the focus: typing narrows the list to the models, Tab goes to the list, and the last ones are checked.
        app.type("with model")
        app.key("Tab", "End", "space")
        for _ in range(columns - 2):
            app.key("Up", "space")
        app.key("Return", pause=1.0)
        app.type("Tidy up app.py")
        app.key("ctrl+Return")
        # Mid-stream: every candidate's answer has begun (its first text stored), and a little more came.
        wait_for(lambda: len(app.query("SELECT DISTINCT thread_id FROM events WHERE kind = 'text_delta'")) >= columns,
                 90, "every candidate's first words", step=0.3)
        time.sleep(2.0)
        shot = app.shot("columns")
        suffix = ("" if columns == 3 else f"-{columns}") + ("" if theme == "light" else f"-{theme}")
        columns_png = out / f"compare-columns-{width}{suffix}.png"
        shutil.copy(shot, columns_png)
        if review:
            wait_for(lambda: len(app.query("SELECT id FROM turns WHERE status = 'finished'")) >= columns, 90,
                     "the answers", step=0.5)
            time.sleep(1.5)
            app.key("ctrl+shift+d")  # the Changes dock: the combined review's list
            geometry = app.geometry()
            app.click(geometry["WIDTH"] - 300, 132)  # its first row (the file), as a person would
            app.key("Down", "space", "Down", "Down", "space", pause=1.0)  # hunk 1 of model-a, of model-c
            shot = app.shot("review")
            suffix = "" if width == 1920 else f"-{width}"
            shutil.copy(shot, out / f"compare-review-overlap{suffix}.png")
    finally:
        app.stop()
        x.stop()
        server.stdin.close()
        server.wait(10)
    return columns_png


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screens"))
    args = parser.parse_args()
    missing = missing_tools()
    if missing:
        print(missing, file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run(1024, 640, out, review=False)
    run(1280, 720, out, review=False)
    run(1920, 1080, out, review=True)
    print(f"wrote {out}/compare-columns-1024.png, compare-columns-1280.png, compare-columns-1920.png, "
          "compare-review-overlap.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
