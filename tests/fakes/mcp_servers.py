"""Where the real MCP servers of the tests live, and small helpers to run them over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

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
