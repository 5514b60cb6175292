"""Shared test set-up: offline, headless, and a fresh ROBOTLAB_HOME for every test."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fakes.llm_server import FakeLLMServer

# Before anything imports Qt or litellm.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_LOG", "ERROR")

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / "tests" / "servers" / "node_modules" / ".bin"

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _allowed(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host.split("%")[0]).is_loopback
        except ValueError:
            return False
    return True  # AF_UNIX and friends


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _allowed(address):
        raise OSError(f"tests run offline: refused a connection to {address!r} (only loopback is allowed)")
    _real_connect(self, address)  # type: ignore[arg-type]


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _allowed(address):
        raise OSError(f"tests run offline: refused a connection to {address!r} (only loopback is allowed)")
    return _real_connect_ex(self, address)  # type: ignore[arg-type]


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def robotlab_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own config/data/log folders, and no provider keys or ROBOT_LAB_ variables."""
    home = tmp_path_factory.mktemp("robotlab-home")
    monkeypatch.setenv("ROBOTLAB_HOME", str(home))
    for name in list(os.environ):
        if name.startswith("ROBOT_LAB_") or name.endswith("_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    yield home


@pytest.fixture(autouse=True)
def registered_secrets() -> Iterator[None]:
    """Secrets a test registers (the api_key given to a provider, an MCP server's env value) are
    forgotten after it: one test's key must not redact another test's text."""
    from workspace import secrets

    before = set(secrets._redactor._registered)
    yield
    added = set(secrets._redactor._registered) - before
    if added:
        secrets.forget_secrets(added)


@pytest.fixture(autouse=True)
def litellm_in_this_process() -> Iterator[None]:
    """A test that builds the window (which runs litellm in a process of its own) leaves the library's
    default, litellm in this process, for the tests after it."""
    yield
    from workspace.providers import registry

    registry.set_litellm_process("same")


@pytest.fixture
def mcp_bin() -> Path:
    """Folder of the npm-installed MCP reference servers (``make test`` installs them)."""
    if not (SERVERS / "mcp-server-everything").exists():
        pytest.fail("MCP reference servers are missing: run `make test` (or `cd tests/servers && npm install`)")
    return SERVERS


@pytest.fixture
def keyring_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working keyring for this test, kept in a JSON file (tests/faults/filekeyring.py); yields the file."""
    import sys

    import keyring

    faults = str(ROOT / "tests" / "faults")
    sys.path.insert(0, faults)
    try:
        from filekeyring import FileKeyring  # type: ignore[import-not-found]
    finally:
        sys.path.remove(faults)
    path = tmp_path / "keyring.json"
    monkeypatch.setenv("FILE_KEYRING", str(path))
    previous = keyring.get_keyring()
    keyring.set_keyring(FileKeyring())
    yield path
    keyring.set_keyring(previous)


@pytest.fixture
def bus_server() -> Iterator[FakeLLMServer]:
    """The loopback model server for robots that talk (``fakes.bus_robots``): each robot answered by its system
    prompt's first sentence and the question in capitals."""
    from fakes.bus_robots import answering_server

    with answering_server() as server:
        yield server


@pytest.fixture
def slow_server() -> Iterator[FakeLLMServer]:
    """The loopback server whose model answers a delegate only after a long wait (``fakes.delegating_robots``,
    ``fakes.delegating_manager``)."""
    from fakes.llm_server import FakeLLMServer, Reply

    with FakeLLMServer() as server:
        server.enqueue(Reply.say("Late answer.", stall_before=120))
        yield server


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """The loopback OpenAI-compatible server (``fakes.llm_server``) with its default answers."""
    from fakes.llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        yield server
