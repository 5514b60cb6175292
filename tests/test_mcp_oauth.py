"""Remote MCP servers with sign-in, against a local server that requires OAuth 2.1
(tests/fakes/mcp_oauth_server.py: the SDK's MCPServer with its auth settings, an in-process
authorization server). The "browser" is an HTTP client that follows the sign-in page's redirect to
the client's loopback listener. No network: everything is on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.mcp_oauth_server import OAuthServer
from workspace import events as ev
from workspace.mcp.manager import MCPManager
from workspace.mcp.oauth import LoopbackCallback, SignInFailed, storage_key
from workspace.mcp.status import ServerState

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    with OAuthServer() as running:
        yield running


class Browser:
    """Opens sign-in pages the way a person's browser would: follows the redirects to the end."""

    def __init__(self) -> None:
        self.visited: list[str] = []
        self.pages: list[str] = []

    def __call__(self, server: str, url: str) -> None:
        self.visited.append(url)

        def follow() -> None:
            with urllib.request.urlopen(url, timeout=10) as answer:
                self.pages.append(answer.read().decode("utf-8"))

        asyncio.get_running_loop().create_task(asyncio.to_thread(follow))


def manager_for(server: OAuthServer, tmp_path: Path, **entry: Any) -> tuple[MCPManager, Browser]:
    manager = MCPManager({"mcpServers": {"remote": {"url": server.url, **entry}}},
                         state_file=tmp_path / "mcp-tools.json")
    browser = Browser()
    manager.sign_in_opener = browser
    return manager, browser


async def test_sign_in_call_refresh_and_revoke(server: OAuthServer, keyring_file: Path, tmp_path: Path) -> None:
    manager, browser = manager_for(server, tmp_path)
    try:
        # Never signed in: the server is not started behind the person's back; its status says how.
        status = await manager.start("remote")
        assert status.state is ServerState.FAILED and status.auth == "sign-in" and status.needs_sign_in
        assert "needs you to sign in" in str(status.reason) and "robotlab mcp login remote" in str(status.reason)
        assert browser.visited == []

        # Sign in: dynamic registration, the browser, the loopback redirect, PKCE, the tokens.
        started = time.perf_counter()
        status = await manager.sign_in("remote")
        took = time.perf_counter() - started
        assert status.is_ready, status.reason
        assert status.auth == "signed-in" and status.sign_in_url is None
        assert len(browser.visited) == 1 and "code_challenge_method=S256" in browser.visited[0]
        assert "You are signed in to remote" in browser.pages[0]
        assert server.provider.authorizations == 1
        print(f"\nsign-in on loopback: {took * 1000:.0f} ms")
        stored = json.loads(keyring_file.read_text(encoding="utf-8"))
        key = f"robotlab/{storage_key('remote', server.url)}"
        value = json.loads(stored[key])
        assert value["tokens"]["access_token"].startswith("at-") and value["client"]["client_id"]
        assert value["client"]["redirect_uris"][0].startswith("http://127.0.0.1:")

        out = await manager.call_tool("remote", "whoami", {})
        assert not out.is_error and "signed in as ada" in str(out.data)

        # The access token expires at the server: the next call refreshes (no browser), then works.
        server.provider.expire_access()
        out = await manager.call_tool("remote", "whoami", {})
        assert not out.is_error, out.data
        assert server.provider.refreshes == 1 and len(browser.visited) == 1

        # Revoked at the server: the call fails naming the fix, the status says "sign in again".
        server.provider.revoke_all()
        out = await manager.call_tool("remote", "whoami", {})
        assert out.is_error and "needs you to sign in again" in str(out.data)
        status = manager.status("remote")
        assert status.auth == "sign-in-again" and "sign in again" in str(status.reason)
        assert len(browser.visited) == 1  # nobody opened a browser on the person's behalf

        status = await manager.sign_in("remote")
        assert status.is_ready and status.auth == "signed-in"
        out = await manager.call_tool("remote", "whoami", {})
        assert not out.is_error
    finally:
        await manager.aclose()


async def test_a_new_process_uses_the_stored_sign_in_and_refreshes_when_it_expired(
        keyring_file: Path, tmp_path: Path) -> None:
    with OAuthServer(token_lifetime=2) as server:
        first, _ = manager_for(server, tmp_path)
        try:
            assert (await first.sign_in("remote")).is_ready
        finally:
            await first.aclose()
        await asyncio.sleep(2.5)  # the stored access token has expired meanwhile
        second, browser2 = manager_for(server, tmp_path)
        try:
            status = await second.start("remote")
            assert status.is_ready and status.auth == "signed-in", status.reason
            assert browser2.visited == [] and server.provider.refreshes == 1  # refreshed before asking
            assert not (await second.call_tool("remote", "whoami", {})).is_error
        finally:
            await second.aclose()


async def test_a_run_names_the_server_that_needs_a_sign_in(server: OAuthServer, keyring_file: Path,
                                                           tmp_path: Path) -> None:
    from workspace.providers.testing import ScriptedProvider
    from workspace.robot import Robot

    manager, _ = manager_for(server, tmp_path)
    try:
        assert (await manager.sign_in("remote")).is_ready
        server.provider.revoke_all()
        await manager.connection("remote").stop()
        robot = Robot("helper", system_prompt="You help.", provider=ScriptedProvider(["Hi."]), mcp_manager=manager,
                      mcp=["remote"])
        events = [e async for e in robot.stream("hello")]
        notice = next(e for e in events if isinstance(e, ev.McpServers))
        assert "remote" in notice.failed and "sign in again" in notice.message
        assert "robotlab mcp login remote" in notice.message
        assert isinstance(events[-1], ev.RunFinished)
    finally:
        await manager.aclose()


async def test_without_a_keyring_a_sign_in_is_refused_naming_the_fix_or_kept_in_a_file(
        server: OAuthServer, tmp_path: Path) -> None:
    manager, _ = manager_for(server, tmp_path)  # the tests' keyring is the null one: none available
    try:
        status = await manager.sign_in("remote")
        assert not status.is_ready
        assert "No OS keyring is available" in str(status.reason) and "tokenStore: file" in str(status.reason)
    finally:
        await manager.aclose()
    manager, _ = manager_for(server, tmp_path, oauth={"tokenStore": "file"})
    try:
        status = await manager.sign_in("remote")
        assert status.is_ready, status.reason
        files = list((Path(os.environ["ROBOTLAB_HOME"])).rglob("MCP_OAUTH_REMOTE_*.json"))
        assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
        assert not (await manager.call_tool("remote", "whoami", {})).is_error
        await manager.sign_out("remote")
        assert not files[0].exists() and manager.status("remote").auth == "sign-in"
    finally:
        await manager.aclose()


async def test_sign_in_states_of_servers_that_never_sign_in(server: OAuthServer, tmp_path: Path) -> None:
    manager, browser = manager_for(server, tmp_path, oauth=False)
    try:
        status = await manager.start("remote")
        assert status.state is ServerState.FAILED and status.auth is None and browser.visited == []
        assert "401" in str(status.reason) or "error" in str(status.reason).lower()
    finally:
        await manager.aclose()


async def test_the_loopback_listener_answers_once_and_says_why_a_sign_in_failed() -> None:
    callback = LoopbackCallback("remote")
    uri = await callback.start()
    try:
        assert uri.startswith("http://127.0.0.1:") and uri.endswith("/callback")

        def get(path: str) -> tuple[int, str]:
            try:
                with urllib.request.urlopen(uri.replace("/callback", path), timeout=5) as answer:
                    return answer.status, answer.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read().decode()

        assert (await asyncio.to_thread(get, "/favicon.ico"))[0] == 404
        status, page = await asyncio.to_thread(get, "/callback?error=access_denied&error_description=no+thanks")
        assert status == 200 and "failed: no thanks" in page
        with pytest.raises(SignInFailed, match="was refused: no thanks"):
            await callback.wait(5)
        assert "already finished" in (await asyncio.to_thread(get, "/callback?code=x&state=y"))[1]
    finally:
        await callback.aclose()
    late = LoopbackCallback("remote")
    await late.start()
    try:
        with pytest.raises(SignInFailed, match="did not finish within"):
            await late.wait(0.1)
    finally:
        await late.aclose()


# -- the command line ---------------------------------------------------------------------------------------
def test_mcp_login_call_revoke_and_logout_on_the_command_line(server: OAuthServer, robotlab_home: Path,
                                                              tmp_path: Path) -> None:
    import select
    import subprocess

    root = Path(__file__).resolve().parent.parent
    config = robotlab_home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"mcpServers:\n  remote:\n    url: {server.url}\n", encoding="utf-8")
    keyring = tmp_path / "cli-keyring.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "tests" / "faults")]),
           "PYTHON_KEYRING_BACKEND": "filekeyring.FileKeyring", "FILE_KEYRING": str(keyring)}

    def robotlab(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, env=env,
                              cwd=root, timeout=60, stdin=subprocess.DEVNULL)

    # Not signed in: a call names the fix (and opens no browser: nobody is at a terminal).
    result = robotlab("mcp", "call", "remote", "whoami")
    assert result.returncode == 1 and "needs you to sign in" in result.stderr
    assert "robotlab mcp login remote" in result.stderr

    # robotlab mcp login: the page's address is printed; the "browser" follows it.
    proc = subprocess.Popen([sys.executable, "-m", "workspace", "mcp", "login", "remote", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root)
    try:
        assert proc.stderr is not None
        err = ""
        deadline = time.monotonic() + 30
        while "http://127.0.0.1" not in err or not err.endswith("\n"):
            assert time.monotonic() < deadline and proc.poll() is None, err
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:  # the raw descriptor: a buffered readline could hold the next line where select cannot see it
                err += os.read(proc.stderr.fileno(), 65536).decode()
        url = next(line.strip() for line in err.splitlines() if line.strip().startswith("http://127.0.0.1"))
        assert "Sign in to remote on this page" in err
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert "You are signed in to remote" in answer.read().decode()
        out, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err + rest
    assert "Signed in to remote (1 tools)" in out
    assert "access_token" in keyring.read_text(encoding="utf-8")  # in the keyring, not in a config file
    assert "access_token" not in config.read_text(encoding="utf-8")

    result = robotlab("mcp", "call", "remote", "whoami")
    assert result.returncode == 0, result.stderr
    assert "signed in as ada" in result.stdout

    server.provider.revoke_all()
    result = robotlab("mcp", "call", "remote", "whoami")
    assert result.returncode == 1 and "needs you to sign in again" in result.stderr
    result = robotlab("mcp", "list", "remote")
    assert "[sign in again]" in result.stdout

    result = robotlab("mcp", "logout", "remote")
    assert result.returncode == 0 and "Signed out of remote" in result.stdout
    assert "MCP_OAUTH_REMOTE" not in keyring.read_text(encoding="utf-8")
