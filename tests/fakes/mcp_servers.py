"""Where the real MCP servers of the tests live, and small helpers to run them over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = ROOT / "tests" / "servers" / "node_modules" / ".bin"
EVERYTHING = BIN / "mcp-server-everything"
FILESYSTEM = BIN / "mcp-server-filesystem"
MEMORY = BIN / "mcp-server-memory"
TIME_SERVER = Path(sys.executable).parent / "mcp-server-time"
BAD_SERVER = Path(__file__).resolve().parent / "mcp_bad_server.py"


def require_servers() -> None:
    if not EVERYTHING.exists():
        pytest.fail("MCP reference servers are missing: run `make test` (or `cd tests/servers && npm install`)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port}")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def http_everything(mode: str) -> Iterator[str]:
    """server-everything over HTTP (``streamableHttp`` or ``sse``) on a free port; yields its base URL."""
    require_servers()
    port = free_port()
    process = subprocess.Popen([str(EVERYTHING), mode], env={**os.environ, "PORT": str(port)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process)


@contextmanager
def app_in_thread(app: Any, port: int) -> Iterator[str]:
    """An ASGI app (an MCP server's streamable HTTP app) served by uvicorn on 127.0.0.1:``port`` in a thread of
    its own (its own event loop), stopped cleanly at the end; yields its base URL."""
    import threading

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name=f"mcp-app-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
