"""The cost of attaching and sending a 1 MB text file and a 2 MB image.

On the loopback OpenAI-compatible server (tests/fakes/llm_server.py), through the lean provider, in a
thread of a real SQLite database (a Workspace with the file's folder open), median of 7 runs:

- ``attach_ms``: reading the file into an :class:`~workspace.attachments.Attachment` (the sandbox, the
  type, the secrets redacted for text, the SHA-256);
- ``send_ms``: ``ThreadSession.send(..., attachments=[...])`` to the run's end (the content stored once
  as a blob, the request with its content parts built, sent and answered), and ``send_plain_ms`` the
  same message without the attachment;
- ``again_ms``: the next message of the thread (the conversation rebuilt from the store, the
  attachment read back and sent again).

Run: ``.venv/bin/python bench/bench_attachments.py``. Prints the figures and writes
bench/results/attachments.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

RUNS = 7


def noisy_png(target: int) -> bytes:
    """A PNG of random pixels of about ``target`` bytes (random data does not compress)."""
    side = int((target / 3) ** 0.5)
    rng = random.Random(7)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + rng.randbytes(side * 3) for _ in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")


def text_file(target: int) -> str:
    line = "2026-11-25 12:00:{:02d} INFO worker {:>4} handled request {:>8} in {:>4} ms\n"
    out, n = [], 0
    size = 0
    while size < target:
        text = line.format(n % 60, n % 97, n, n % 1000)
        out.append(text)
        size += len(text)
        n += 1
    return "".join(out)[:target]


async def one(folder: Path, name: str, server: Any) -> dict[str, float]:
    from workspace.attachments import Attachment
    from workspace.providers.openai_provider import OpenAICompatibleProvider
    from workspace.session import Workspace

    provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", max_retries=0)
    with tempfile.TemporaryDirectory() as db_dir:
        ws = Workspace(db_path=Path(db_dir) / "w.db", folder=folder, provider=provider)
        try:
            session = ws.new_thread("assistant")
            await asyncio.wait_for(session.send("Warm up").wait(), 60)  # the SDK and the connection, once
            start = time.perf_counter()
            await asyncio.wait_for(session.send("Nothing attached").wait(), 60)
            plain = time.perf_counter() - start
            start = time.perf_counter()
            attachment = Attachment.from_path(name, folder=folder, max_text_bytes=None)
            attach = time.perf_counter() - start
            start = time.perf_counter()
            await asyncio.wait_for(session.send("What is in it?", attachments=[attachment]).wait(), 60)
            send = time.perf_counter() - start
            start = time.perf_counter()
            await asyncio.wait_for(session.send("And now?").wait(), 60)
            again = time.perf_counter() - start
            await asyncio.sleep(0.1)  # the thread's change set is saved off the loop after each run
        finally:
            await ws.aclose()
    return {"attach_ms": attach * 1e3, "send_ms": send * 1e3, "send_plain_ms": plain * 1e3, "again_ms": again * 1e3}


def main() -> None:
    from fakes.llm_server import FakeLLMServer

    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        folder = Path(tmp)
        (folder / "big.log").write_text(text_file(1024 * 1024), encoding="utf-8")
        (folder / "photo.png").write_bytes(noisy_png(2 * 1024 * 1024))
        for label, name in (("text_1mb", "big.log"), ("image_2mb", "photo.png")):
            runs = [asyncio.run(one(folder, name, server)) for _ in range(RUNS)]
            figures[label] = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
            figures[label]["size_bytes"] = float((folder / name).stat().st_size)
            server.clear()
    print(f"attachments on the loopback server (lean provider, a SQLite thread), median of {RUNS} runs:")
    for label, values in figures.items():
        print(f"  {label:9} ({values['size_bytes'] / 1048576:.2f} MB): attach {values['attach_ms']:.1f} ms, "
              f"send to the run's end {values['send_ms']:.1f} ms (the same message without it "
              f"{values['send_plain_ms']:.1f} ms), the next message (sent again) {values['again_ms']:.1f} ms")
    out = ROOT / "bench" / "results" / "attachments.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
