"""A comparison's verify marks: how many times the verify command runs, and how long from the message to every
candidate's ✓/✗, with the window's ``auto_verify`` on (each run verifies its own proposal when it ends).

Three candidates on the loopback server (tests/fakes/llm_server.py, in its own process) each propose app.py; the
verify command (``sleep 0.3`` and a grep, in the sandbox) is in force. One round: ``CompareSession.send`` then
``verify_proposals``, as ``ui/window/compare.py`` does; the figures: the verify runs counted (``run_verify``
wrapped), the wall time and this thread's CPU time (``time.thread_time``), medians of ``ROUNDS`` rounds, with
the load average. ``BENCH_ROOT`` runs another checkout's code (the same file): run it against the old commit and
this one in turns to compare them in the same period.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

ROUNDS = int(os.environ.get("ROUNDS", "5"))
SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer, Reply
def reply_fn(body):
    if body["messages"][-1].get("role") == "tool":
        return Reply.say("Done.")
    return Reply.tool("write_file", {{"path": "app.py", "content": "x = 'seven'\\n" + body["model"] + "\\n"}})
server = FakeLLMServer(reply_fn=reply_fn).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""


async def one_round(base: str, runs: list[str]) -> tuple[float, float]:
    from ui.compare.session import CandidateSpec, CompareSession
    from workspace.config import load_config
    from workspace.session import Workspace

    folder = Path(tempfile.mkdtemp(prefix="bench-verify-"))
    (folder / "app.py").write_text("x = 1\n")
    config = load_config(folder, env={}, overrides={
        "llm": {"model": "openai/model-0", "api_base": base, "max_retries": 1, "max_concurrent_requests": 4},
        "review": {"verify": "sleep 0.3; grep -q seven app.py"}})
    workspace = Workspace(config=config, folder=folder, db_path=folder.parent / f"{folder.name}.db")
    workspace.auto_verify = True  # as the window has it
    specs = [CandidateSpec("file-helper", model=f"openai/model-{i}", api_base=base) for i in range(3)]
    compare = CompareSession(workspace, specs)
    compare.start()
    wall, cpu = time.perf_counter(), time.thread_time()
    await compare.send("Edit app.py")
    marks = await compare.verify_proposals()
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    assert len(marks) == 3 and all(m.passed for m in marks.values()), marks
    await asyncio.sleep(0.5)  # a verify still going (counted when it ran) ends before the store closes
    workspace.close()
    return wall, cpu


async def main() -> None:
    from workspace.session import verify

    runs: list[str] = []
    real = verify.run_verify

    async def counted(command: str, changes: Any, **kw: Any) -> Any:
        runs.append(changes.thread_id or "")
        return await real(command, changes, **kw)

    verify.run_verify = counted  # type: ignore[assignment]
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT))], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip() + "/v1"
        await one_round(base, runs)  # warm-up
        runs.clear()
        walls, cpus = [], []
        for _ in range(ROUNDS):
            wall, cpu = await one_round(base, runs)
            walls.append(wall)
            cpus.append(cpu)
    finally:
        server.terminate()
    load = os.getloadavg()
    print(f"{ROOT}: verify runs per round {len(runs) / ROUNDS:.1f} (3 candidates); message to marks: median "
          f"{statistics.median(walls) * 1000:.0f} ms wall, {statistics.median(cpus) * 1000:.0f} ms CPU of this "
          f"thread ({ROUNDS} rounds); load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
