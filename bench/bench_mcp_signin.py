"""Time of an OAuth 2.1 sign-in to a remote MCP server on loopback, and what a stored
sign-in costs a later start.

Against tests/fakes/mcp_oauth_server.py (the SDK's MCPServer with its auth settings, in a thread): each
round is a fresh client (empty keyring file): the first start (401, discovery, "sign in" state), then
``MCPManager.sign_in`` with an HTTP client as the browser (registration, authorize, the loopback
redirect, the token exchange, the handshake, tools/list), one tool call, and a new manager starting
with the stored tokens. Median of 10. Prints the figures and writes ``bench/results/mcp_signin.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "faults"))
RESULTS = Path(__file__).resolve().parent / "results" / "mcp_signin.json"
RUNS = 10


def browser(server: str, url: str) -> None:
    def follow() -> None:
        with urllib.request.urlopen(url, timeout=10) as answer:
            answer.read()

    asyncio.get_running_loop().create_task(asyncio.to_thread(follow))


async def once(url: str, home: Path) -> dict[str, float]:
    from workspace.mcp.manager import MCPManager

    os.environ["FILE_KEYRING"] = str(home / f"keyring-{time.monotonic_ns()}.json")
    servers = {"mcpServers": {"remote": {"url": url}}}
    manager = MCPManager(servers, state_file=home / "state.json")
    manager.sign_in_opener = browser
    try:
        t0 = time.perf_counter()
        status = await manager.start("remote")
        assert status.needs_sign_in, status
        t1 = time.perf_counter()
        status = await manager.sign_in("remote")
        assert status.is_ready, status.reason
        t2 = time.perf_counter()
        out = await manager.call_tool("remote", "whoami", {})
        assert not out.is_error
        t3 = time.perf_counter()
    finally:
        await manager.aclose()
    again = MCPManager(servers, state_file=home / "state.json")
    try:
        t4 = time.perf_counter()
        assert (await again.start("remote")).is_ready
        t5 = time.perf_counter()
    finally:
        await again.aclose()
    return {"first_start_to_sign_in_state": t1 - t0, "sign_in_to_tools": t2 - t1, "first_call": t3 - t2,
            "start_with_stored_sign_in": t5 - t4}


async def main() -> None:
    import keyring
    from filekeyring import FileKeyring  # type: ignore[import-not-found]

    from tests.fakes.mcp_oauth_server import OAuthServer

    keyring.set_keyring(FileKeyring())
    with tempfile.TemporaryDirectory() as tmp, OAuthServer() as server:
        os.environ["ROBOTLAB_HOME"] = tmp
        rounds = [await once(server.url, Path(tmp)) for _ in range(RUNS)]
    medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    for key, value in medians.items():
        print(f"{key:<32} {value * 1000:8.1f} ms (median of {RUNS})")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": RUNS, "median_seconds": medians}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
