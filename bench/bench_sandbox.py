"""The command sandbox's cost (workspace/isolation): start-up per command, and the overlay's set-up
as the folder grows.

1. Start-up overhead: the same command (`/bin/sh -c true`) as a bare asyncio subprocess and in the
   sandbox (`BubblewrapSandbox.run`: the layers, the namespaces, the overlay, bwrap, reading the
   changes back, removing the run's directory), median of 50 each, interleaved, in one run
   (target: under 50 ms more).
   Also the CPU time of the children per command (robust to other load on a shared machine).
2. Overlay set-up for folders of 100, 10,000 and 100,000 files: the same run of `true` on each,
   median of 10 (target: flat: the folder is a lower layer, never copied).
3. 10 MB of output streamed through the callback: the longest stall of this event loop (a 5 ms
   ticker) while it streams; the window's own cost (rendering) comes on top, measured with it.

Prints the figures and writes bench/results/sandbox.json. No timing asserts.
Run: PYTHONPATH=. .venv/bin/python bench/bench_sandbox.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from workspace.isolation import Limits, SandboxUnavailable, sandbox_for_platform
from workspace.isolation.bubblewrap import BubblewrapSandbox

ROOT = Path(__file__).resolve().parent.parent


async def bare(command: str, folder: Path) -> float:
    start = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, cwd=folder, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    await process.communicate()
    return time.perf_counter() - start


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def stall_while_streaming(
    box: BubblewrapSandbox, folder: Path, megabytes: int
) -> tuple[float, float, int]:
    """(longest stall of the loop in ms, seconds, chunks) while ``megabytes`` MB stream through."""
    loop = asyncio.get_running_loop()
    longest = 0.0
    running = True

    async def ticker() -> None:
        nonlocal longest
        last = loop.time()
        while running:
            await asyncio.sleep(0.005)
            now = loop.time()
            longest = max(longest, now - last - 0.005)
            last = now

    chunks = 0

    def count(_text: str) -> None:
        nonlocal chunks
        chunks += 1

    tick = asyncio.ensure_future(ticker())
    start = time.perf_counter()
    result = await box.run(
        f"head -c {megabytes * 1_000_000} /dev/zero | tr '\\0' 'x'", folder, on_output=count
    )
    elapsed = time.perf_counter() - start
    running = False
    await tick
    assert result.output.total_chars == megabytes * 1_000_000, result.output.text[:200]
    return longest * 1000, elapsed, chunks


async def sandboxed(box: BubblewrapSandbox, command: str, folder: Path) -> float:
    start = time.perf_counter()
    result = await box.run(command, folder)
    elapsed = time.perf_counter() - start
    assert result.exit_code == 0, result.output.text
    return elapsed


def make_folder(base: Path, files: int) -> Path:
    folder = base / f"folder-{files}"
    per_dir = 100
    for i in range(files):
        directory = folder / f"d{i // per_dir:04d}"
        if i % per_dir == 0:
            directory.mkdir(parents=True)
        (directory / f"f{i % per_dir:03d}.txt").write_text(f"file {i}\n")
    return folder


async def main(quick: bool) -> dict[str, object]:
    try:
        box = sandbox_for_platform()
    except SandboxUnavailable as exc:
        print(f"skipped: {exc}")
        return {"skipped": str(exc)}
    assert isinstance(box, BubblewrapSandbox)
    runs = 10 if quick else 50
    sizes = (100, 1_000) if quick else (100, 10_000, 100_000)
    figures: dict[str, object] = {
        "bwrap": box.capabilities.version,
        "process_limit": box.capabilities.process_limit,
    }
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        base = Path(tmp)
        small = make_folder(base, 10)
        await bare("true", small)
        await sandboxed(box, "true", small)  # warm caches
        bare_times: list[float] = []
        box_times: list[float] = []
        bare_cpu: list[float] = []
        box_cpu: list[float] = []
        for _ in range(runs):
            cpu = children_cpu()
            bare_times.append(await bare("true", small))
            bare_cpu.append(children_cpu() - cpu)
            cpu = children_cpu()
            box_times.append(await sandboxed(box, "true", small))
            box_cpu.append(children_cpu() - cpu)
        b, s = statistics.median(bare_times), statistics.median(box_times)
        bc, sc = statistics.median(bare_cpu) * 1000, statistics.median(box_cpu) * 1000
        print(f"start-up, median of {runs}: bare subprocess {b * 1000:.1f} ms, sandbox {s * 1000:.1f} ms")
        print(
            f"  overhead {(s - b) * 1000:.1f} ms per command, ratio {s / b:.1f}x (target: under 50 ms more)"
        )
        print(f"  CPU of the children per command: bare {bc:.1f} ms, sandbox {sc:.1f} ms")
        figures["startup"] = {
            "bare_cpu_ms": bc,
            "sandbox_cpu_ms": sc,
            "runs": runs,
            "bare_ms": b * 1000,
            "sandbox_ms": s * 1000,
            "overhead_ms": (s - b) * 1000,
        }
        overlay: dict[str, float] = {}
        for size in sizes:
            made = time.perf_counter()
            folder = make_folder(base, size)
            made = time.perf_counter() - made
            times = [await sandboxed(box, "true", folder) for _ in range(10)]
            overlay[str(size)] = statistics.median(times) * 1000
            print(
                f"overlay of {size:>7,} files: {overlay[str(size)]:.1f} ms per command, median of 10 "
                f"(making the folder took {made:.1f} s)"
            )
        first, last = overlay[str(sizes[0])], overlay[str(sizes[-1])]
        print(f"  {sizes[-1] // sizes[0]:,}x the files: {last / first:.2f}x the time (target: flat)")
        figures["overlay_ms"] = overlay
        streaming = BubblewrapSandbox(
            bwrap=box.bwrap, limits=Limits(max_output_bytes=16 << 20), _caps=box.capabilities
        )
        stall, seconds, chunks = await stall_while_streaming(streaming, small, 10)
        print(
            f"10 MB of output streamed in {seconds:.2f} s ({chunks:,} chunks to the callback): "
            f"longest event-loop stall {stall:.1f} ms"
        )
        figures["stream_10mb"] = {"seconds": seconds, "chunks": chunks, "longest_stall_ms": stall}
    out = ROOT / "bench" / "results" / "sandbox.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv))
