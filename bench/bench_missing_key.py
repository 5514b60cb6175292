"""How long a run without its API key takes to say so: ``robotlab run`` and a library run, in fresh processes.

Each measurement starts a new process with no key in the environment and a keyring that has none
(``keyring.backends.null.Keyring``) and times it until it exits with the message naming the variable:

- ``cli``: ``python -m workspace run assistant hi --model openai/gpt-4o-mini --no-record``;
- ``library``: ``Robot("asker", system_prompt=..., model="openai/gpt-4o-mini").arun("hi")`` in a script.

Prints the median of each and whether litellm was imported before the message (it must not be).

    python bench/bench_missing_key.py [--runs N] [--base DIR]

``--base DIR``: also time another source tree (e.g. ``git archive <commit> | tar -x -C DIR``) as "before".
Bytecode is written (``PYTHONDONTWRITEBYTECODE`` unset) so the times are those of an installed program.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "openai/gpt-4o-mini"
LIBRARY = """
import asyncio, sys
from workspace.robot import Robot
try:
    asyncio.run(Robot("asker", system_prompt="You answer.", model=sys.argv[1]).arun("hi"))
except Exception as exc:
    print(exc)
print("litellm loaded" if "litellm" in sys.modules else "litellm not loaded")
"""
PROBE = """
import atexit, sys
atexit.register(lambda: sys.__stdout__.write("litellm loaded\\n" if "litellm" in sys.modules else "litellm not loaded\\n"))
from workspace.cli import main
sys.exit(main(sys.argv[1:]))
"""


def timed(cmd: list[str], *, tree: Path, home: Path) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.startswith("ROBOT_LAB_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(ROBOTLAB_HOME=str(home), PYTHONPATH=str(tree), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=home, env=env, capture_output=True, text=True, timeout=120)
    return time.perf_counter() - start, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", type=Path, help="another source tree, timed as 'before'")
    args = parser.parse_args()
    trees = [("after", ROOT)] + ([("before", args.base.resolve())] if args.base else [])
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        library, probe = home / "library.py", home / "probe.py"
        library.write_text(LIBRARY, encoding="utf-8")
        probe.write_text(PROBE, encoding="utf-8")
        kinds = {"cli": [sys.executable, str(probe), "run", "assistant", "hi", "--model", MODEL, "--no-record"],
                 "library": [sys.executable, str(library), MODEL]}
        times: dict[tuple[str, str], list[float]] = {}
        notes: dict[tuple[str, str], str] = {}
        for _label, tree in trees:  # one untimed run each: bytecode written
            for cmd in kinds.values():
                timed(cmd, tree=tree, home=home)
        for _ in range(args.runs):
            for label, tree in trees:
                for kind, cmd in kinds.items():
                    seconds, output = timed(cmd, tree=tree, home=home)
                    times.setdefault((label, kind), []).append(seconds)
                    said = "OPENAI_API_KEY" in output
                    notes[(label, kind)] = ("names OPENAI_API_KEY" if said else "does NOT name the variable") + ", " + (
                        "litellm loaded" if "litellm loaded" in output else "litellm not loaded")
    print(f"{'tree':<8} {'how':<8} {'median s':>9}  ({args.runs} runs)")
    for (label, kind), values in times.items():
        print(f"{label:<8} {kind:<8} {statistics.median(values):>9.2f}  {notes[(label, kind)]}")


if __name__ == "__main__":
    main()
