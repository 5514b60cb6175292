"""What a skill's capabilities cost a script call (workspace/isolation/grants.py): the same command
(`/bin/sh -c true`) in the sandbox unconfined (the whole folder, as every script tool) and confined to a grant
(`fs_read: [docs]`, `fs_write: [out/]`: a read-only empty folder, one path bound read-only, one writable made
in the pending layer), median of 30 each, interleaved, in one run (target: under 10 ms more than unconfined).

Prints the figures. No timing asserts.
Run: PYTHONPATH=. .venv/bin/python bench/bench_skill_grants.py [--quick]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from workspace.isolation import Grant, SandboxUnavailable, sandbox_for_platform

TARGET_MS = 10.0


async def main(rounds: int) -> None:
    try:
        box = sandbox_for_platform()
    except SandboxUnavailable as exc:
        print(f"no sandbox here: {exc}")
        return
    grant = Grant(read=("docs",), write=("out",))
    with tempfile.TemporaryDirectory(prefix="bench-grants-") as tmp:
        folder = Path(tmp)
        (folder / "docs").mkdir()
        (folder / "docs" / "readme.txt").write_text("read me\n")
        plain: list[float] = []
        confined: list[float] = []
        await box.run("true", folder)  # warm: the first run checks bwrap
        for _ in range(rounds):
            for grant_or_none, out in ((None, plain), (grant, confined)):
                start = time.perf_counter()
                result = await box.run("true", folder, grant=grant_or_none)
                out.append(time.perf_counter() - start)
                assert result.exit_code == 0, result.output.text
    unconfined_ms = statistics.median(plain) * 1000
    confined_ms = statistics.median(confined) * 1000
    print(f"a script call, median of {rounds}: unconfined {unconfined_ms:.1f} ms, confined to a grant "
          f"{confined_ms:.1f} ms: {confined_ms - unconfined_ms:+.1f} ms (target: under {TARGET_MS:g} ms more)")


if __name__ == "__main__":
    asyncio.run(main(8 if "--quick" in sys.argv else 30))
