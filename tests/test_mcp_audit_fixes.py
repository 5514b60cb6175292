"""Fixes from a user audit of ``robotlab mcp`` and the MCP manager:

1. a stdio ``command`` with a path separator is relative to the server's ``cwd`` (a plain name
   is looked up on the server's own ``env.PATH`` when it sets one);
2. a robot naming a server withheld from an untrusted folder is told to trust the folder;
3. ``robotlab mcp serve`` does not advertise the file-writing tools it cannot run;
4. ``robotlab mcp list`` shows the tool names the model gets when server names sanitise alike;
5. ``robotlab mcp disable SERVER TOOL`` refuses a tool the server does not have.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.mcp_servers import BAD_SERVER

from workspace import paths
from workspace.cli import main as cli_main
from workspace.config import load_config
from workspace.errors import ConfigurationError
from workspace.mcp.manager import MCPManager
from workspace.mcp.status import ServerState
from workspace.providers.testing import ScriptedProvider
from workspace.robot import Robot

pytestmark = pytest.mark.timeout(60)

FAKE = {"command": sys.executable, "args": [str(BAD_SERVER), "ok"]}


def write_config(home: Path, servers: dict[str, Any]) -> Path:
    config = home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")  # JSON is YAML
    return config


def server_script(folder: Path, name: str = "srv.py", *, executable: bool = True) -> Path:
    """The fake server as a program of its own (``#!python``), like a user's ``./srv.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f"#!{sys.executable}\n" + BAD_SERVER.read_text(encoding="utf-8"), encoding="utf-8")
    helper = BAD_SERVER.with_name("jsonrpc_stdio.py")  # the fake server imports it from its own folder
    (folder / helper.name).write_text(helper.read_text(encoding="utf-8"), encoding="utf-8")
    mode = script.stat().st_mode
    script.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH if executable else mode & ~0o111)
    return script


# -- 1. a relative command is relative to the server's cwd ------------------------------------------
@pytest.mark.skipif(os.name == "nt", reason="POSIX programs (#! and the executable bit)")
async def test_a_relative_command_is_found_in_the_servers_cwd(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    server_dir = tmp_path / "cwdtest"
    server_script(server_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # robotlab runs somewhere else: ./srv.py is not here
    manager = MCPManager({"relcwd": {"command": "./srv.py", "args": ["ok"], "cwd": str(server_dir)}})
    try:
        status = await manager.start("relcwd")
        assert status.state is ServerState.READY, status.reason
        assert "echo" in {t.original for t in status.tools}
    finally:
        await manager.aclose()


@pytest.mark.skipif(os.name == "nt", reason="POSIX programs (#! and the executable bit)")
async def test_a_relative_command_that_is_missing_or_not_executable_names_the_file_in_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server_dir = tmp_path / "cwdtest"
    server_script(server_dir, "plain.py", executable=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "missing.py").write_text("# here, but not in the server's cwd\n")
    manager = MCPManager({
        "plain": {"command": "./plain.py", "cwd": str(server_dir)},
        "missing": {"command": "./missing.py", "cwd": str(server_dir)},
    })
    try:
        plain = await manager.start("plain")
        assert plain.state is ServerState.FAILED
        assert "not executable" in (plain.reason or "") and f"chmod +x {server_dir / 'plain.py'}" in plain.reason
        missing = await manager.start("missing")
        assert missing.state is ServerState.FAILED
        assert str(server_dir / "missing.py") in (missing.reason or "") and "cwd" in missing.reason
    finally:
        await manager.aclose()


@pytest.mark.skipif(os.name == "nt", reason="POSIX programs (#! and the executable bit)")
async def test_a_plain_command_is_looked_up_on_the_servers_own_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    server_script(bin_dir, "robotlab-test-mcp-server")
    manager = MCPManager({
        "onpath": {"command": "robotlab-test-mcp-server", "args": ["ok"], "env": {"PATH": str(bin_dir)}},
        "offpath": {"command": "robotlab-test-mcp-server", "args": ["ok"]},
    })
    try:
        status = await manager.start("onpath")
        assert status.state is ServerState.READY, status.reason
        off = await manager.start("offpath")
        assert off.state is ServerState.FAILED and "not found on PATH" in (off.reason or "")
    finally:
        await manager.aclose()


@pytest.mark.skipif(os.name == "nt", reason="POSIX programs (#! and the executable bit)")
def test_cli_list_starts_a_relative_command_from_its_cwd(robotlab_home: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    server_dir = tmp_path / "cwdtest"
    server_script(server_dir)
    write_config(robotlab_home, {"relcwd": {"command": "./srv.py", "args": ["ok"], "cwd": str(server_dir)}})
    monkeypatch.chdir(robotlab_home)
    assert cli_main(["mcp", "list", "relcwd"]) == 0
    out = capsys.readouterr().out
    assert "relcwd  [ready]" in out and "relcwd__echo" in out


# -- 2. a server withheld from an untrusted folder ----------------------------------------------------
def untrusted_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "cloned"
    project = paths.project_config_file(folder)
    project.parent.mkdir(parents=True)
    project.write_text(f"mcpServers:\n  proj: {{command: {json.dumps(sys.executable)}}}\n", encoding="utf-8")
    return folder


async def test_a_robot_naming_a_withheld_server_is_told_to_trust_the_folder(tmp_path: Path) -> None:
    folder = untrusted_folder(tmp_path)
    config = load_config(folder, env={})
    assert "proj" in config.withheld["mcpServers"] and "proj" not in config.mcp_servers
    manager = MCPManager(folder=folder)
    robot = Robot("helper", system_prompt="You help.", provider=ScriptedProvider(["hi"]), config=config,
                  mcp=["proj"], mcp_manager=manager)
    with pytest.raises(ConfigurationError) as caught:
        await robot.resolve_tools()
    message = str(caught.value)
    assert f"robotlab trust {folder}" in message
    assert str(paths.project_config_file(folder)) in message and "not used until you trust" in message
    assert "Add it under mcpServers" not in message
    # A name that is nowhere still gets the usual advice.
    with pytest.raises(ConfigurationError, match="Add it under mcpServers"):
        await manager.tools_for(["nowhere"], config)
    await manager.aclose()


def test_cli_names_the_trust_command_for_a_withheld_server(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = untrusted_folder(tmp_path)
    assert cli_main(["--folder", str(folder), "mcp", "list", "proj"]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # the error itself (before it, the usual untrusted-folder note)
    assert "MCP server 'proj' is defined in" in last and f"robotlab trust {folder.resolve()}" in last
    assert "Configured: (none)" not in err


# -- 3. serve leaves out the tools that need a change set ---------------------------------------------
WRITERS = {"write_file", "edit_file", "apply_patch", "create_file", "delete_file", "rename_file"}


def test_serve_does_not_offer_the_file_writing_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workspace.surface import workspace_tools, writes_files
    from workspace.tools import registry

    served = {t.name for t in workspace_tools(tmp_path, robots=False)}
    assert not served & WRITERS
    assert {"read_file", "list_files", "search_files", "remember", "recall"} <= served
    assert {t.name for t in registry.builtin_tools() if writes_files(t)} == WRITERS | {"run_command"}
    assert "run_command" not in served  # what it writes needs review, and its commands the workspace's approval

    assert cli_main(["mcp", "serve", "--tools", "write_file", "edit_*"]) == 2
    err = capsys.readouterr().err
    assert "write_file" in err and "edit_file" in err and "cannot be served" in err

    with pytest.raises(SystemExit):
        cli_main(["mcp", "serve", "--help"])
    assert "write_file" in capsys.readouterr().out.replace("\n", " ")


# -- 4. list shows the names the model gets ------------------------------------------------------------
LOOK_ALIKES = {"a.b": FAKE, "a_b": FAKE, "a b": FAKE}


async def test_list_shows_the_model_names_of_look_alike_servers(robotlab_home: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    write_config(robotlab_home, LOOK_ALIKES)
    manager = MCPManager(load_config(None))
    try:
        given = {(t.mcp, t.name) for t in await manager.tools_for(list(LOOK_ALIKES))}
    finally:
        await manager.aclose()
    assert len({name for _, name in given}) == len(given)  # unique for the model

    def listed(*servers: str) -> set[tuple[str, str]]:
        code = cli_main(["mcp", "list", "--json", *servers])
        assert code == 0
        return {(s["name"], t["name"]) for s in json.loads(capsys.readouterr().out) for t in s["tools"]}

    import asyncio

    shown = await asyncio.to_thread(listed)
    assert shown == given
    # One server on its own shows the same names (its look-alikes are started to tell).
    alone = await asyncio.to_thread(listed, "a b")
    assert alone == {pair for pair in given if pair[0] == "a b"}
    assert any(name != "a_b__echo" and name.startswith("a_b__echo_") for _, name in alone)

    await asyncio.to_thread(cli_main, ["mcp", "list", "a.b"])
    text = capsys.readouterr().out
    for server, name in given:
        if server == "a.b":
            assert f"  {name}" in text


# -- 5. disable checks the tool's name ----------------------------------------------------------------
def disabled_tools() -> dict[str, list[str]]:
    state = paths.config_dir() / "mcp-tools.json"
    return json.loads(state.read_text())["disabledTools"] if state.exists() else {}


def test_disable_refuses_a_tool_the_server_does_not_have(robotlab_home: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    write_config(robotlab_home, {"fake": FAKE, "broken": {"command": "robotlab-no-such-server"}})
    assert cli_main(["mcp", "disable", "fake", "no-such-tool"]) == 2
    err = capsys.readouterr().err
    assert "has no tool 'no-such-tool'" in err and "echo" in err and "crash" in err
    assert disabled_tools() == {}

    assert cli_main(["mcp", "disable", "fake", "fake__echo"]) == 0  # the robot-facing name works too
    assert "tool 'echo' disabled" in capsys.readouterr().out
    assert disabled_tools() == {"fake": ["echo"]}
    assert cli_main(["mcp", "enable", "fake", "echo"]) == 0
    capsys.readouterr()
    assert disabled_tools() == {}

    # A server that cannot start: the name cannot be checked, the setting is kept all the same.
    assert cli_main(["mcp", "disable", "broken", "whatever"]) == 0
    captured = capsys.readouterr()
    assert "disabled" in captured.out and "could not be started to check" in captured.err
    assert disabled_tools() == {"broken": ["whatever"]}
