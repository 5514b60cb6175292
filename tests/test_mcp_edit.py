"""Editing mcpServers in a config file: round-trip (hand edits survive), atomic writes, secrets to
the keyring, duplicate/disable/rename, pasted Claude Desktop / VS Code blocks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
import yaml
from keyring.backend import KeyringBackend

from workspace.errors import ConfigurationError
from workspace.mcp.config import parse_server
from workspace.mcp.edit import ServersFile, keyring_name, secret_keys, store_secrets
from workspace.mcp.importers import parse_pasted

HAND_WRITTEN = """\
# My settings (written by hand)
llm:
  model: openai/gpt-4o-mini   # the cheap one
mcpServers:
  # the reference server
  everything:
    command: npx
    args: [-y, "@modelcontextprotocol/server-everything"]   # flow style kept
  remote:
    url: https://example.com/mcp
ui:
  theme: dark
"""


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.values.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.values[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.values.pop((service, username), None)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(before)


def test_edits_keep_comments_order_and_other_sections(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    servers = ServersFile(path)
    assert servers.names() == ["everything", "remote"]
    servers.set("time", {"command": "uvx", "args": ["mcp-server-time"]})
    servers.set_disabled("remote", True)
    servers.save()
    text = path.read_text(encoding="utf-8")
    for kept in ("# My settings (written by hand)", "# the cheap one", "# the reference server",
                 '[-y, "@modelcontextprotocol/server-everything"]   # flow style kept', "theme: dark"):
        assert kept in text
    data = yaml.safe_load(text)
    assert list(data["mcpServers"]) == ["everything", "remote", "time"]
    assert data["mcpServers"]["remote"]["disabled"] is True
    assert data["llm"] == {"model": "openai/gpt-4o-mini"}
    # Enabling again removes the key; rename keeps the place; duplicate and remove.
    servers.set_disabled("remote", False)
    servers.set("web", servers.entry("remote"), rename_from="remote")
    copy = servers.duplicate("everything")
    assert copy == "everything-copy"
    assert servers.duplicate("everything") == "everything-copy-2"
    servers.remove("everything-copy-2")
    servers.save()
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert list(data["mcpServers"]) == ["everything", "web", "time", "everything-copy"]
    assert data["mcpServers"]["web"] == {"url": "https://example.com/mcp"}
    assert "# the reference server" in path.read_text(encoding="utf-8")


def test_save_is_atomic_and_refuses_a_file_changed_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    os.chmod(path, 0o640)
    servers = ServersFile(path)
    servers.remove("remote")
    path.write_text(HAND_WRITTEN + "# edited elsewhere\n", encoding="utf-8")
    os.utime(path, (1, 1))
    with pytest.raises(ConfigurationError, match="changed by another program"):
        servers.save()
    servers.reload()
    servers.remove("remote")
    servers.save()
    assert "# edited elsewhere" in path.read_text(encoding="utf-8")
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]  # no temporary file left
    # A new file starts private.
    fresh = ServersFile(tmp_path / "new" / "config.yaml")
    fresh.set("a", {"command": "x"})
    fresh.save()
    assert (tmp_path / "new" / "config.yaml").stat().st_mode & 0o777 == 0o600


def test_secret_values_go_to_the_keyring_never_the_file(tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    entry = {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer sk-very-secret-123",
                                                           "Accept": "application/json"},
             "env": {"API_TOKEN": "tok-0123456789", "MODE": "fast"}}
    stored = store_secrets("remote", entry, {"headers": ["Authorization"], "env": ["API_TOKEN"]})
    name = keyring_name("remote", "headers", "Authorization")
    assert stored["headers"]["Authorization"] == f"${{keyring:{name}}}"
    assert stored["headers"]["Accept"] == "application/json"
    assert stored["env"]["MODE"] == "fast"
    assert memory_keyring.values[("robotlab", name)] == "Bearer sk-very-secret-123"
    assert secret_keys(stored) == {"env": {"API_TOKEN"}, "headers": {"Authorization"}}
    path = tmp_path / "config.yaml"
    servers = ServersFile(path)
    servers.set("remote", stored)
    servers.save()
    text = path.read_text(encoding="utf-8")
    assert "sk-very-secret" not in text and "tok-0123456789" not in text
    spec = parse_server("remote", yaml.safe_load(text)["mcpServers"]["remote"])
    assert spec.headers["Authorization"] == "Bearer sk-very-secret-123"  # filled in from the keyring at start


def test_without_a_keyring_secrets_are_refused_with_the_fix() -> None:
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        with pytest.raises(ConfigurationError, match=r"No OS keyring .*\$\{env:NAME\}"):
            store_secrets("remote", {"env": {"TOKEN": "abcdef123456"}}, {"env": ["TOKEN"]})
    finally:
        keyring.set_keyring(before)


def test_pasted_blocks_of_other_clients() -> None:
    claude = '{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}'
    assert parse_pasted(claude) == {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                                                       "/tmp"]}}
    vscode = '{"servers": {"gh": {"type": "http", "url": "https://api.example.com/mcp", // comment\n}}}'
    assert parse_pasted(vscode)["gh"]["url"] == "https://api.example.com/mcp"
    bare = '"time": {"command": "uvx", "args": ["mcp-server-time"]},'
    assert parse_pasted(bare) == {"time": {"command": "uvx", "args": ["mcp-server-time"]}}
    with pytest.raises(ConfigurationError, match="not JSON"):
        parse_pasted("{ nope")
    with pytest.raises(ConfigurationError, match="no name"):
        parse_pasted('{"command": "npx"}')
    with pytest.raises(ConfigurationError, match="Nothing pasted"):
        parse_pasted("  ")


def test_mcp_import_writes_the_file_and_its_backup_private_whatever_they_were(tmp_path: Path) -> None:
    """``mcp import`` goes through the same atomic writer with ``mode=0o600``: a configuration file names
    commands, servers and keyring entries, so the merged file (and a rewritten file's backup) are the user's
    alone even when the file was readable by others before."""
    from workspace.mcp.importers import merge_into_file

    path = tmp_path / "config.yaml"
    path.write_text("mcpServers: {a: {command: x}}\n", encoding="utf-8")  # flow style: rewritten, with a backup
    os.chmod(path, 0o644)
    report = merge_into_file(path, {"b": {"command": "y"}})
    assert "b" in path.read_text(encoding="utf-8")
    assert path.stat().st_mode & 0o777 == 0o600
    backup = path.with_suffix(".yaml.bak")
    assert report.rewritten and backup.read_text(encoding="utf-8") == "mcpServers: {a: {command: x}}\n"
    assert backup.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "config.yaml.bak"]  # no temporary file
