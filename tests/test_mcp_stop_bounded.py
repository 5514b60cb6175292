"""A stdio server's stop is bounded even when the SDK's shutdown is cut short.

The SDK's ``stdio_client`` shuts down under a shielded scope (close stdin, wait, terminate, kill) and its stdout
reader waits, shielded too, for the server's output to end. A second cancellation of the connection's task
goes through that shield before the kill: an event loop that closes cancels every task left (pytest-asyncio's
runner, ``asyncio.run``), after a close that stopped waiting for the stop (the window waits 3 s). The server
then ran on and the loop waited for ever for the task (the hang of tests/ui/test_mcp_dock.py on a busy machine).
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from fakes.mcp_servers import EVERYTHING, require_servers

from workspace.mcp import actor as actor_module
from workspace.mcp.client import Connection
from workspace.mcp.config import parse_server


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


@pytest.mark.skipif(os.name == "nt", reason="POSIX process groups")
@pytest.mark.parametrize("cancel_after", [0.0, 0.05, 0.3])
def test_a_stop_given_up_on_then_cancelled_by_the_closing_loop_still_ends_the_server(
    cancel_after: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_servers()
    monkeypatch.setattr(actor_module, "KILL_AFTER", 1.0)
    conn = Connection(parse_server("everything", {"command": str(EVERYTHING)}))
    loop = asyncio.new_event_loop()
    pids: list[int] = []

    async def start_then_give_up_on_the_stop() -> None:
        await conn.start()
        pids.append(conn._process.pid)
        stop = asyncio.get_running_loop().create_task(conn.stop())
        await asyncio.sleep(0)  # the stop is requested: the connection begins to close
        stop.cancel()  # as asyncio.wait_for(..., timeout) does: the actor goes on, nobody waits for it
        await asyncio.sleep(cancel_after)

    try:
        loop.run_until_complete(start_then_give_up_on_the_stop())
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in left:  # what asyncio.Runner.close does
            task.cancel()
        began = time.monotonic()

        async def everything_ends() -> None:
            await asyncio.wait_for(asyncio.gather(*left, return_exceptions=True), 10)

        loop.run_until_complete(everything_ends())
        assert time.monotonic() - began < 5
        deadline = time.monotonic() + 5
        while _alive(pids[0]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pids[0]), "the server outlived its connection"
    finally:
        if pids and _alive(pids[0]):
            os.killpg(pids[0], 9)
        loop.close()
