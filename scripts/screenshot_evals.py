"""Screenshots of the evals view on a real X server (Xvfb) driven by a person's input (xdotool): the matrix of
two robots × two models with passes and failures, then "Compare with last run" after the eval file changed.

    .venv/bin/python scripts/screenshot_evals.py [--out docs/screens]

The loopback OpenAI-compatible server (tests/fakes/llm_server.py, in a process of its own) plays the models:
model-a answers every case well, model-b forgets the order number, and a judge model answers the rubric.
The app runs as the ``robotlab`` command starts it (tests/xvfb/app_main.py) with its own home; every step is a
key, a click or typed text: the command palette's "Run evals…", "Choose eval file…", the file's path typed in
the file dialog; once the matrix is full it is grabbed (eval-matrix.png); then the eval file is edited (a case
expects something else), Run is clicked, and "Compare with last run" is grabbed (eval-compare.png).
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
def reply_fn(body):
    said = str([m for m in body["messages"] if m["role"] == "user"][-1]["content"])
    if "You judge" in str(body["messages"][0]["content"]):
        good = "1041" in said
        return Reply.say('{{"pass": %s, "reason": "%s"}}' % ("true" if good else "false",
                         "it names the order" if good else "it does not name the order"))
    billing = "billing" in str(body["messages"][0]["content"])
    return Reply.say(ANSWERS[(billing, body["model"])], stall_before=0.2)
ANSWERS = {{
    (False, "model-a"): "Sorry about that: order 1041 was charged twice, and a refund of 42.00 is on its way.",
    (False, "model-b"): "Sorry, we will look into order 1041 soon.",
    (True, "model-a"): "Order 1041 was charged twice; a refund of 42.00 is on its way. Thanks for your patience.",
    (True, "model-b"): "Thanks for writing! We will look into it.",
}}
server = FakeLLMServer(reply_fn=reply_fn, models=["model-a", "model-b", "judge"]).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""

ROBOT = "---\nname: {name}\ndescription: {what}\n---\n{what}\n"
EVAL = """robot: null
robots: [support.md, billing.md]
models:
  - {{model: openai/model-a, api_base: '{base}'}}
  - {{model: openai/model-b, api_base: '{base}'}}
cases:
  - name: charged-twice
    message: "I was charged twice for order 1041"
    expect:
      - contains: "1041"
      - rubric: {{text: "The answer names the order", model: openai/judge, api_base: '{base}'}}
  - name: refund
    message: "When do I get my money back?"
    expect:
      - contains: "refund"
  - name: apology
    message: "Your shop double-billed me"
    expect:
      - regex: '(?i)sorry'
"""


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
    home = Path(tempfile.mkdtemp(prefix="robotlab-evals-shot-"))
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT))], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    base = server.stdout.readline().strip() + "/v1"
    evals = home / "evals"
    evals.mkdir()
    (evals / "support.md").write_text(ROBOT.format(name="support", what="Answers customers kindly."))
    (evals / "billing.md").write_text(ROBOT.format(name="billing", what="Answers billing questions."))
    eval_file = evals / "support.yaml"
    eval_file.write_text(EVAL.format(base=base).replace("robot: null\n", ""), encoding="utf-8")
    x = XServer(1280, 720).start()
    app = AppUnderTest(x, home, shots=home / "shots")
    try:
        app.start()
        app.xdotool("windowmove", "--sync", app.window, "0", "0")
        app.xdotool("windowsize", "--sync", app.window, "1280", "720")
        time.sleep(1.5)
        app.key("ctrl+k")  # the command palette
        app.type("Run evals")
        app.key("Return", pause=1.5)
        dialog = app.window_named("^Evals$")
        app.xdotool("windowsize", "--sync", dialog, "1100", "640")
        app.xdotool("windowmove", "--sync", dialog, "90", "40")
        time.sleep(0.5)
        where = app.geometry(dialog)
        print("the evals view:", where, flush=True)
        app.click(where["X"] + 707, where["Y"] + 25)  # "Choose eval file…": the file dialog
        time.sleep(1.5)
        app.type(str(eval_file))
        app.key("Return", pause=1.0)
        wait_for(lambda: len(app.query("SELECT id FROM turns WHERE status = 'finished'")) >= 12, 120,
                 "the twelve cases", step=0.5)
        time.sleep(2.0)
        shutil.copy(app.shot("matrix"), out / "eval-matrix.png")
        # The file changes (charged-twice now expects the amount, apology a thank-you too), the eval runs again.
        eval_file.write_text(eval_file.read_text().replace('contains: "1041"', 'contains: "42.00"').replace(
            "'(?i)sorry'", "'(?i)sorry|thanks'"), encoding="utf-8")
        time.sleep(0.5)
        app.click(where["X"] + 810, where["Y"] + 25)  # Run
        wait_for(lambda: len(app.query("SELECT id FROM turns WHERE status = 'finished'")) >= 24, 120,
                 "the twelve cases again", step=0.5)
        time.sleep(2.0)
        app.click(where["X"] + 1003, where["Y"] + 25)  # Compare with last run
        time.sleep(1.0)
        shutil.copy(app.shot("compare"), out / "eval-compare.png")
        print(f"wrote {out}/eval-matrix.png, eval-compare.png")
        return 0
    finally:
        app.stop()
        x.stop()
        server.stdin.close()
        server.wait(10)


if __name__ == "__main__":
    raise SystemExit(main())
