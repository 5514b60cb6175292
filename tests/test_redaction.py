"""Secrets of MCP servers and the environment never reach the database, exports, logs,
`robotlab mcp list` or the status the desktop shows (real MCP servers, real SQLite files)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.mcp_servers import EVERYTHING, require_servers

from workspace import events as ev
from workspace.cli import main as cli_main
from workspace.exports import export_thread
from workspace.mcp.manager import MCPManager
from workspace.persistence import Store
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.secrets import forget_secrets, install_log_redaction

pytestmark = pytest.mark.timeout(60)

#: A value with a name that does not look secret: only the MCP configuration says it is one.
VALUE = "acme-credential-0123456789"


@pytest.fixture(autouse=True)
def no_registered_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def _write_config(text: str) -> Path:
    from workspace import paths

    user = paths.user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(text)
    return user


async def test_an_mcp_env_secret_echoed_by_a_tool_never_reaches_the_database_or_exports(tmp_path: Path) -> None:
    require_servers()
    manager = MCPManager({"mcpServers": {"everything": {
        "command": str(EVERYTHING), "autoApprove": ["echo"], "env": {"SERVICE_AUTH": "${ACME_VALUE}"},
    }}}, environ={"ACME_VALUE": VALUE, "PATH": os.environ.get("PATH", "")})
    try:
        provider = ScriptedProvider([[ToolCall("everything__echo", {"message": f"key {VALUE}"}, id="c1")],
                                     f"The key is {VALUE}."])
        robot = Robot("helper", system_prompt="You help.", provider=provider, mcp_manager=manager,
                      mcp=["everything"])
        events = [event async for event in robot.stream(f"echo {VALUE}")]
    finally:
        await manager.aclose()
    result = next(e for e in events if isinstance(e, ev.ToolResult))
    assert VALUE in json.dumps(result.to_dict())  # the run itself is not altered...
    db = tmp_path / "workspace.db"
    with Store(db) as store:  # ...what is kept and exported is
        thread = store.create_thread(robot="helper", title=f"about {VALUE}")
        turn = store.add_turn(thread.id, user_text=f"echo {VALUE}", parent_turn_id=None)
        store.append_events(thread.id, turn.id, events)
        exported = {fmt: export_thread(store, thread.id, fmt) for fmt in ("md", "json", "jsonl")}
    for fmt, text in exported.items():
        assert VALUE not in text, fmt
        assert "<ACME_VALUE>" in text, fmt
    for path in tmp_path.iterdir():
        assert VALUE.encode() not in path.read_bytes(), path.name


def test_robotlab_mcp_list_shows_references_not_values(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ACME_VALUE", VALUE)
    _write_config(
        "mcpServers:\n"
        "  gh:\n"
        "    command: srv\n"
        "    args: [--token, '${ACME_VALUE}', --flag=x]\n"
        "  remote:\n"
        "    url: 'https://h.example/mcp?auth=${ACME_VALUE}&region=eu'\n"
        "    headers: {Authorization: 'Bearer ${env:ACME_VALUE}'}\n"
    )
    assert cli_main(["mcp", "list", "--no-connect"]) == 0
    out = capsys.readouterr().out
    assert VALUE not in out
    assert "srv --token ${ACME_VALUE} --flag=x" in out
    assert "https://h.example/mcp?auth=***&region=eu  (headers: Authorization: ***)" in out
    assert cli_main(["mcp", "list", "--no-connect", "--json"]) == 0
    out = capsys.readouterr().out
    assert VALUE not in out and "${ACME_VALUE}" in out


def test_a_failing_server_printing_an_interpolated_arg_is_masked(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ACME_VALUE", VALUE)
    _write_config(
        "mcpServers:\n"
        "  talker:\n"
        "    command: sh\n"
        "    args: [-c, 'echo \"starting with $1\" >&2; exit 3', sh, '${ACME_VALUE}']\n"
    )
    assert cli_main(["mcp", "list", "--verbose"]) == 1  # a server failed
    out = capsys.readouterr().out
    assert "failed" in out and "starting with" in out
    assert VALUE not in out


def test_log_records_are_redacted_once_the_filter_is_installed(caplog: pytest.LogCaptureFixture) -> None:
    from workspace.mcp.config import parse_server

    parse_server("s", {"command": "srv", "headers": {"X-Api-Key": "${ACME_VALUE}"}, "url": "https://h/mcp"},
                 environ={"ACME_VALUE": VALUE})
    install_log_redaction()  # the root logger's handlers and logging.lastResort
    caplog.handler.addFilter(install_log_redaction())  # pytest's capturing handler
    logging.getLogger("workspace.mcp").warning("server said %s", VALUE)
    assert VALUE not in caplog.text and "server said <ACME_VALUE>" in caplog.text
