"""What a hostile file costs with the bounds on what is read, and what it cost without them.

1. The 1 KB "billion laughs" YAML (nine levels of nine aliases, 9**9 strings once expanded):
   - ``bounded``: loading a robot file holding it (``Template.load``: the bounded loader refuses it),
     loading it with ``workspace.yaml_limits.safe_load``, and a config.yaml holding it (``load_config``);
   - ``before``: PyYAML's ``safe_load`` (cheap: aliases are shared) and then one walk of the result
     (``json.dumps``, what the schema check, the store and deepcopy also do) for 5, 6 and 7 levels
     (9**5 .. 9**7 strings); the 9-level figure is extrapolated (x81 per two levels), since
     measuring it takes minutes and gigabytes.
2. Robot templates: ``'x' * 300000000``, a text doubled 40 times, and loops that do not end, rendered
   through ``Template.render`` (refused; the loop at the 3 s deadline).

Each case runs in a fresh Python process (its ``ru_maxrss`` is its own, the modules the app has loaded
imported first); prints the median wall time and peak RSS of ``REPEATS`` runs, and the tracemalloc peak of
one more run (tracemalloc slows allocations, so it is not on while timing). Writes bench/results/bounds.json.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_bounds.py``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 3

BOMB = r'''
def bomb(levels, indent=""):
    lines = [f'{indent}a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi"[:levels - 1]:
        lines.append(f"{indent}{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines) + "\n"
'''

CHILD = BOMB + r'''
import json, os, resource, sys, tempfile, time, tracemalloc
from pathlib import Path
case, arg, traced = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
tmp = Path(tempfile.mkdtemp())
import yaml  # imported before measuring, as the app has them
import workspace.config, workspace.schemas.config, workspace.schemas.robot, workspace.template_limits
from workspace import yaml_limits
from workspace.templates import Template
outcome = "ok"
if traced:
    tracemalloc.start()
started = time.perf_counter()
try:
    if case == "robot":
        path = tmp / "bomb.md"
        path.write_text("---\nname: bomb\nx-bomb:\n" + bomb(9, "  ") + "---\nHi\n")
        Template.load(path)
    elif case == "safe_load":
        yaml_limits.safe_load(bomb(9))
    elif case == "config":
        from workspace.config import load_config
        path = tmp / "config.yaml"
        path.write_text("x-bomb:\n" + bomb(9, "  "))
        load_config(user_file=path, env={})
    elif case == "before":
        json.dumps(yaml.safe_load(bomb(int(arg))))
    elif case == "template":
        Template.parse(arg, name="t").render()
except Exception as exc:
    outcome = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
seconds = time.perf_counter() - started
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"seconds": seconds, "tracemalloc_mb": peak / 2**20,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "outcome": outcome}))
'''

CASES: list[tuple[str, str, str]] = [
    ("alias bomb in a robot file (bounded)", "robot", ""),
    ("alias bomb, yaml_limits.safe_load (bounded)", "safe_load", ""),
    ("alias bomb in config.yaml (bounded)", "config", ""),
    ("before: safe_load + json.dumps, 5 levels", "before", "5"),
    ("before: safe_load + json.dumps, 6 levels", "before", "6"),
    ("before: safe_load + json.dumps, 7 levels", "before", "7"),
    ("template: 'x' * 300000000", "template", "{{ 'x' * 300000000 }}"),
    ("template: a text doubled 40 times", "template",
     "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}"),
    ("template: loops that do not end", "template",
     "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
]


def run(case: str, arg: str, *, traced: bool) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", CHILD, case, arg, "1" if traced else "0"], cwd=ROOT, capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    results: dict[str, dict[str, object]] = {}
    print(f"{'case':<46} {'median s':>9} {'tracemalloc MB':>15} {'peak RSS MB':>12}  outcome")
    for name, case, arg in CASES:
        runs = [run(case, arg, traced=False) for _ in range(REPEATS)]
        traced = run(case, arg, traced=True)
        figures: dict[str, object] = {key: statistics.median(float(r[key]) for r in runs)  # type: ignore[arg-type]
                                      for key in ("seconds", "rss_mb")}
        figures["tracemalloc_mb"] = traced["tracemalloc_mb"]
        figures["outcome"] = runs[0]["outcome"]
        results[name] = figures
        print(f"{name:<46} {figures['seconds']:>9.3f} {figures['tracemalloc_mb']:>15.1f} "
              f"{figures['rss_mb']:>12.0f}  {figures['outcome']}")
    seven = results["before: safe_load + json.dumps, 7 levels"]
    print(f"before, 9 levels (extrapolated x81 from 7): ~{float(seven['seconds']) * 81:.0f} s, "  # type: ignore[arg-type]
          f"~{float(seven['rss_mb']) * 81 / 1024:.1f} GB of RSS")  # type: ignore[arg-type]
    out = ROOT / "bench" / "results" / "bounds.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
