"""Signing in to a remote MCP server from the MCP dock: the server that needs a sign-in says
so with a Sign in button, the page's address shows (and can be copied) while the browser is open, the
dock turns to "Signed in", and a revoked sign-in turns to "Sign in again". The server is the local OAuth
test server; the "browser" is an HTTP client that follows the redirect to the app's loopback listener."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import close_app, wait_until
from tests.fakes.mcp_oauth_server import OAuthServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def remote(robotlab_home: Path, keyring_file: Path) -> Iterator[OAuthServer]:
    with OAuthServer() as server:
        config = robotlab_home / "config" / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f"mcpServers:\n  remote:\n    url: {server.url}\n", encoding="utf-8")
        yield server


async def test_sign_in_from_the_dock_and_sign_in_again_after_a_revoke(remote: OAuthServer, provider: Any,
                                                                      db_path: Path) -> None:
    from PySide6.QtGui import QGuiApplication

    from ui.app import Application
    from workspace.mcp import set_default_manager

    set_default_manager(None)
    root = Application(provider=provider, db_path=db_path)
    root.window.resize(1300, 850)
    root.window.show()
    opened: list[str] = []
    try:
        pane = root.window.docks.mcp_pane
        pane.manager.sign_in_opener = lambda server, url: opened.append(url)  # the browser, held back
        pane.table.selectRow(0)
        pane.start_button.click()
        await wait_until(lambda: pane.model.index(0, 1).data() == "sign in", timeout=30, what="the sign-in state")
        assert pane.sign_in_box.isVisible() and pane.sign_in_button.text() == "Sign in"
        assert "needs you to sign in" in pane.sign_in_note.text()
        assert pane.sign_in_button.accessibleName() == "Sign in to remote"

        pane.sign_in_button.click()
        await wait_until(lambda: bool(opened), what="the browser to be asked to open the page")
        await wait_until(lambda: pane.model.index(0, 1).data() == "signing in…", what="the signing-in state")
        assert pane.copy_link_button.isVisible() and pane.sign_in_button.text() == "Cancel sign-in"
        assert "open the sign-in page" in pane.sign_in_note.text()
        pane.copy_link_button.click()
        assert QGuiApplication.clipboard().text() == opened[0]
        root.window.docks["mcp"].raise_()
        await asyncio.sleep(0.05)
        root.window.grab().save(str(db_path.parent / "signing-in.png"))

        def browse() -> None:
            with urllib.request.urlopen(opened[0], timeout=10) as answer:
                answer.read()

        await asyncio.to_thread(browse)
        await wait_until(lambda: pane.model.index(0, 1).data() == "ready", timeout=30, what="the server to start")
        assert pane.sign_out_button.isVisible() and not pane.sign_in_button.isVisible()
        assert "Signed in" in pane.sign_in_note.text()
        assert pane.tools.count() == 1

        remote.provider.revoke_all()
        out = await pane.manager.call_tool("remote", "whoami", {})
        assert out.is_error and "sign in again" in str(out.data)
        await wait_until(lambda: pane.model.index(0, 1).data() == "sign in again", what="the sign-in-again state")
        assert pane.sign_in_button.text() == "Sign in again" and "revoked or has expired" in pane.sign_in_note.text()
        root.window.grab().save(str(db_path.parent / "sign-in-again.png"))
    finally:
        await close_app(root)
        set_default_manager(None)
