"""MCP configuration, naming, imports and result conversion: no server needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from workspace.cli import main as cli_main
from workspace.config import load_config
from workspace.errors import ConfigurationError
from workspace.mcp import naming
from workspace.mcp.config import (
    DEFAULT_CALL_TIMEOUT,
    load_servers_file,
    parse_duration,
    parse_server,
    parse_servers,
)
from workspace.mcp.importers import merge_text, read_client_file
from workspace.mcp.manager import MCPManager
from workspace.mcp.masking import mask_url
from workspace.mcp.results import to_output
from workspace.mcp.status import ServerState

ENV = {"TOKEN": "s3cret-token-value", "HOME_DIR": "/home/me"}


# -- parsing -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spelling", "transport"),
    [("stdio", "stdio"), ("sse", "sse"), ("http", "http"), ("streamable-http", "http"),
     ("streamableHttp", "http"), ("streamable_http", "http"), ("STREAMABLE-HTTP", "http")],
)
def test_every_type_spelling_is_accepted(spelling: str, transport: str) -> None:
    entry = {"type": spelling, "url": "http://127.0.0.1:1/mcp"} if transport != "stdio" else {
        "type": spelling, "command": "srv"}
    assert parse_server("s", entry).transport == transport


def test_transport_is_inferred_from_command_or_url() -> None:
    assert parse_server("a", {"command": "srv", "args": ["x"]}).transport == "stdio"
    assert parse_server("b", {"url": "https://example.com/mcp"}).transport == "http"
    assert parse_server("c", {"url": "https://example.com/sse"}).transport == "sse"
    assert parse_server("d", {"transportType": "sse", "url": "https://example.com/events"}).transport == "sse"


def test_bad_entries_name_the_source_server_and_key() -> None:
    with pytest.raises(ConfigurationError, match=r"cfg.yaml: mcpServers.x: needs 'command'"):
        parse_server("x", {"args": ["a"]}, source="cfg.yaml")
    with pytest.raises(ConfigurationError, match=r"mcpServers.x.type: unknown type 'carrier-pigeon'.*stdio, sse"):
        parse_server("x", {"type": "carrier-pigeon", "command": "a"})
    with pytest.raises(ConfigurationError, match=r"mcpServers.x.args: expected a list"):
        parse_server("x", {"command": "a", "args": {"no": 1}})
    with pytest.raises(ConfigurationError, match=r"mcpServers.x.env.A: expected a string"):
        parse_server("x", {"command": "a", "env": {"A": {"nested": 1}}})
    with pytest.raises(ConfigurationError, match=r"mcpServers.x.url: expected an http"):
        parse_server("x", {"url": "ftp://host/mcp"})
    with pytest.raises(ConfigurationError, match=r"mcpServers.x.type: type 'websocket' is not supported"):
        parse_server("x", {"type": "websocket", "url": "ws://host"})


def test_interpolation_of_env_variables_with_defaults() -> None:
    spec = parse_server(
        "gh",
        {"command": "${HOME_DIR}/bin/srv", "args": ["--token=${env:TOKEN}", "${MISSING:-fallback}"],
         "env": {"GITHUB_TOKEN": "${TOKEN}"}, "cwd": "${env:HOME_DIR}"},
        environ=ENV,
    )
    assert spec.command == "/home/me/bin/srv"
    assert spec.args == ("--token=s3cret-token-value", "fallback")
    assert spec.env == {"GITHUB_TOKEN": "s3cret-token-value"}
    assert spec.cwd == "/home/me"
    remote = parse_server("r", {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
                          environ=ENV)
    assert remote.headers == {"Authorization": "Bearer s3cret-token-value"}


def test_a_missing_variable_names_server_key_and_variable() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_server("github", {"command": "srv", "env": {"GITHUB_TOKEN": "${env:GH_PAT}"}}, source="/x/config.yaml",
                     environ={})
    text = str(info.value)
    assert "/x/config.yaml" in text and "mcpServers.github.env.GITHUB_TOKEN" in text
    assert "GH_PAT" in text and "export GH_PAT" in text


def test_secrets_are_masked_in_descriptions() -> None:
    remote = parse_server("r", {"url": "https://user:pw@h/mcp?key=abc&x=1",
                                "headers": {"Authorization": "Bearer ${TOKEN}"}}, environ=ENV)
    text = remote.describe()
    assert "s3cret" not in text and "pw" not in text and "abc" not in text
    assert "Authorization: ***" in text and "key=***" in text
    local = parse_server("l", {"command": "srv", "env": {"TOKEN": "${TOKEN}"}}, environ=ENV)
    assert "s3cret" not in local.describe() and "TOKEN" in local.describe()
    assert mask_url("https://h/mcp") == "https://h/mcp"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(30, 30.0), (2.5, 2.5), (60000, 60.0), ("500ms", 0.5), ("30s", 30.0), ("2m", 120.0), ("45", 45.0)],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value, where="t") == pytest.approx(seconds)


def test_bad_durations_explain_the_accepted_forms() -> None:
    with pytest.raises(ConfigurationError, match=r"mcpServers.x.timeout: expected a time like 60"):
        parse_server("x", {"command": "a", "timeout": "soon"})
    with pytest.raises(ConfigurationError, match="more than zero"):
        parse_server("x", {"command": "a", "timeout": 0})


def test_cline_and_roo_extras_and_unknown_keys_are_kept() -> None:
    entry = {"command": "srv", "disabled": False, "timeout": 90, "autoApprove": ["read"], "alwaysAllow": ["list"],
             "disabledTools": ["delete_*"], "x-custom": {"keep": True}, "connectTimeout": "5s"}
    spec = parse_server("s", entry)
    assert spec.timeout == 90 and spec.connect_timeout == 5
    assert spec.auto_approve == ("read", "list") and spec.disabled_tools == ("delete_*",)
    assert spec.to_dict() == entry
    assert parse_server("s", {"command": "a"}).timeout == DEFAULT_CALL_TIMEOUT
    assert parse_server("s", {"command": "a", "enabled": False}).disabled


def test_robotlab_inline_transport_form() -> None:
    spec = parse_server("github", {"name": "github", "transport": {"type": "stdio", "command": "github-mcp-server",
                                                                     "args": ["stdio"]}})
    assert spec.transport == "stdio" and spec.command == "github-mcp-server" and spec.args == ("stdio",)


def test_config_round_trip_keeps_unknown_keys(tmp_path: Path) -> None:
    user = tmp_path / "config.yaml"
    user.write_text(yaml.safe_dump({"mcpServers": {"s": {"command": "srv", "x-note": "kept", "autoApprove": []}}}))
    config = load_config(user_file=user)
    assert config.mcp_servers["s"] == {"command": "srv", "x-note": "kept", "autoApprove": []}
    specs = parse_servers(config.mcp_servers, source=str(user))
    assert specs["s"].to_dict()["x-note"] == "kept"


def test_servers_file_in_json_with_comments_and_errors_naming_the_file(tmp_path: Path) -> None:
    good = tmp_path / "mcp.json"
    good.write_text('{\n  // a comment\n  "mcpServers": {"a": {"command": "srv", "args": ["x",],},},\n}\n')
    assert load_servers_file(good)["a"].args == ("x",)
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"a": {"command": "srv",, }}}')
    with pytest.raises(ConfigurationError, match=r"bad.json: not valid JSON at line 1"):
        load_servers_file(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("mcpServers:\n  a:\n    command: srv\n    args: {not: a list}\n")
    with pytest.raises(ConfigurationError, match=r"wrong.yaml: mcpServers.a.args: expected a list"):
        load_servers_file(wrong)
    broken = tmp_path / "broken.yaml"
    broken.write_text("mcpServers:\n  a: [unclosed\n")
    with pytest.raises(ConfigurationError, match=r"broken.yaml: not valid YAML at line"):
        load_servers_file(broken)


def test_manager_reports_a_bad_entry_without_hiding_the_others(tmp_path: Path) -> None:
    user = tmp_path / "config.yaml"
    user.write_text("mcpServers:\n  ok: {command: srv}\n  bad: {command: srv, env: {T: '${NOPE_NOT_SET_X}'}}\n"
                    "  idle: {command: srv, disabled: true, env: {T: '${NOPE_NOT_SET_X}'}}\n"
                    "  off: {command: srv}\n")
    manager = MCPManager(load_config(user_file=user))
    bad = manager.status("bad")
    assert bad.state is ServerState.FAILED
    assert str(user) in (bad.reason or "") and "mcpServers.bad.env.T" in (bad.reason or "")
    assert manager.status("ok").state is ServerState.STOPPED
    idle = manager.status("idle")
    assert idle.disabled and idle.state is ServerState.STOPPED  # disabled: its variables need not be set
    # YAML 1.1 reads an unquoted `off:` as false: say so instead of inventing a server called "False".
    assert "put the name in quotes" in (manager.status("False").reason or "")


# -- naming --------------------------------------------------------------------------------------
def test_tool_names_are_sanitised_bounded_and_unique() -> None:
    assert naming.tool_name("everything", "echo") == "everything__echo"
    assert naming.tool_name("my server", "get.item/v2") == "my_server__get_item_v2"
    long = naming.tool_name("s" * 40, "t" * 40)
    assert len(long) == 64 and long == naming.tool_name("s" * 40, "t" * 40)
    assert long != naming.tool_name("s" * 40, "t" * 39 + "u")
    first = naming.tool_name("a_b", "x")
    second = naming.tool_name("a.b", "x", taken={first})
    assert first == "a_b__x" and second != first and len(second) <= 64
    assert all(c.isalnum() or c in "_-" for c in second)


# -- results -------------------------------------------------------------------------------------
def test_result_conversion_keeps_everything_for_people() -> None:
    blocks = [
        {"type": "text", "text": "Here it is"},
        {"type": "image", "data": "iVBORw0KGgo=" * 100, "mimeType": "image/png"},
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"},
        {"type": "resource", "resource": {"uri": "mem://note", "text": "embedded text"}},
        {"type": "resource", "resource": {"uri": "mem://blob", "blob": "AAAA", "mimeType": "application/zip"}},
    ]
    out = to_output(blocks, None, False)
    assert not out.is_error
    assert out.data.startswith("Here it is")
    assert "[image: image/png," in out.data and "[resource link: file:///a.txt (a.txt), text/plain]" in out.data
    assert "embedded text" in out.data and "application/zip" in out.data
    assert out.raw["content"] == blocks and out.raw["is_error"] is False
    structured = to_output([{"type": "text", "text": '{"t": 1}'}], {"t": 1}, False)
    assert structured.data == {"t": 1} and structured.raw["structured_content"] == {"t": 1}
    error = to_output([{"type": "text", "text": "boom"}], None, True)
    assert error.is_error and error.data == "boom" and error.raw["is_error"] is True


# -- importing other clients' files --------------------------------------------------------------------
def test_import_claude_desktop_and_cursor(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${env:API_TOKEN}"},
                   "autoApprove": ["search"], "x-extra": 1},
    }}))
    result = read_client_file(path)
    assert result.format == "mcpServers"
    assert result.servers["remote"]["x-extra"] == 1
    assert result.servers["filesystem"]["args"][1] == "@modelcontextprotocol/server-filesystem"


def test_import_vscode_with_inputs(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("""{
      // VS Code writes comments
      "inputs": [{"type": "promptString", "id": "github-token", "description": "GitHub PAT", "password": true}],
      "servers": {
        "github": {"type": "stdio", "command": "docker", "args": ["run", "-i", "ghcr.io/github/github-mcp-server"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${input:github-token}"}},
        "remote": {"type": "http", "url": "https://api.example.com/mcp"}
      }
    }""")
    result = read_client_file(path)
    assert result.format == "vscode"
    assert result.servers["github"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"] == "${env:GITHUB_TOKEN}"
    assert any("GITHUB_TOKEN" in note and "GitHub PAT" in note for note in result.notes)
    assert result.servers["remote"]["type"] == "http"


def test_import_zed_both_command_styles(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"theme": "One Dark", "context_servers": {
        "old": {"command": {"path": "/usr/bin/srv", "args": ["--x"], "env": {"A": "1"}}, "settings": {}},
        "new": {"source": "custom", "command": "uvx", "args": ["mcp-server-git"], "enabled": False},
        "web": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
    }}))
    result = read_client_file(path)
    assert result.format == "zed"
    assert result.servers["old"] == {"command": "/usr/bin/srv", "args": ["--x"], "env": {"A": "1"}}
    assert result.servers["new"] == {"command": "uvx", "args": ["mcp-server-git"], "disabled": True}
    assert result.servers["web"]["url"] == "https://example.com/mcp"


def test_import_goose_extensions(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("""
GOOSE_PROVIDER: openai
extensions:
  developer: {type: builtin, name: developer, enabled: true}
  github:
    type: stdio
    cmd: npx
    args: [-y, "@modelcontextprotocol/server-github"]
    envs: {LOG: debug}
    env_keys: [GITHUB_TOKEN]
    enabled: false
    timeout: 300
  remote: {type: streamable_http, uri: "https://example.com/mcp", headers: {A: b}, enabled: true}
""")
    result = read_client_file(path)
    assert result.format == "goose"
    assert "developer" not in result.servers and any("developer" in n for n in result.notes)
    assert result.servers["github"] == {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                                        "env": {"LOG": "debug", "GITHUB_TOKEN": "${env:GITHUB_TOKEN}"},
                                        "timeout": 300, "disabled": True}
    assert result.servers["remote"]["type"] == "streamable-http"


def test_import_errors_name_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "goose.yaml"
    path.write_text("extensions:\n  gh: {type: stdio, args: [x]}\n")
    with pytest.raises(ConfigurationError, match=r"goose.yaml: extensions.gh.cmd: missing"):
        read_client_file(path)
    other = tmp_path / "other.json"
    other.write_text('{"something": 1}')
    with pytest.raises(ConfigurationError, match=r"other.json: no MCP servers found.*mcpServers"):
        read_client_file(other)
    bad = tmp_path / "claude.json"
    bad.write_text('{"mcpServers": {"x": {"args": ["a"]}}}')
    with pytest.raises(ConfigurationError, match=r"claude.json: mcpServers.x: needs 'command'"):
        read_client_file(bad)


def test_merge_keeps_comments_and_existing_servers() -> None:
    text = ("# my settings\nllm:\n  model: openai/gpt-4o-mini  # the model\n"
            "mcpServers:\n  mine:\n    command: srv  # keep me\nui:\n  theme: dark\n")
    merged, report = merge_text(text, {"mine": {"command": "other"}, "new": {"url": "https://h/mcp"}})
    assert "# keep me" in merged and "# the model" in merged and "# my settings" in merged
    data = yaml.safe_load(merged)
    assert data["mcpServers"] == {"mine": {"command": "srv"}, "new": {"url": "https://h/mcp"}}
    assert data["ui"] == {"theme": "dark"} and not report.rewritten
    assert report.added == ["new"] and report.skipped == ["mine"]
    replaced, report = merge_text(text, {"mine": {"command": "other"}}, replace=True)
    assert yaml.safe_load(replaced)["mcpServers"]["mine"] == {"command": "other"} and report.replaced == ["mine"]
    empty, _ = merge_text("llm: {}\nmcpServers: {}  # none yet\n", {"a": {"command": "x"}})
    assert yaml.safe_load(empty)["mcpServers"] == {"a": {"command": "x"}} and "# none yet" in empty
    fresh, _ = merge_text("", {"a": {"command": "x"}})
    assert yaml.safe_load(fresh) == {"mcpServers": {"a": {"command": "x"}}}


def test_cli_import_writes_into_the_user_config(tmp_path: Path, robotlab_home: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from workspace import paths

    user = paths.user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("# hand-written\nllm:\n  model:\n")
    source = tmp_path / "cursor.json"
    source.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}))
    assert cli_main(["mcp", "import", str(source)]) == 0
    assert "time:" in capsys.readouterr().out and "time" not in user.read_text()
    assert cli_main(["mcp", "import", str(source), "--write"]) == 0
    assert "# hand-written" in user.read_text()
    assert load_config().mcp_servers["time"] == {"command": "uvx", "args": ["mcp-server-time"]}
    assert cli_main(["mcp", "import", str(source), "--write"]) == 0
    assert "kept the existing time" in capsys.readouterr().out


def test_cli_reports_a_bad_config_file_by_file_and_key(robotlab_home: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from workspace import paths

    user = paths.user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("mcpServers:\n  good: {command: srv}\n  bad:\n    command: srv\n    args: oops: [\n")
    assert cli_main(["mcp", "list"]) == 2
    err = capsys.readouterr().err
    assert str(user) in err and "line" in err
    user.write_text("mcpServers:\n  bad:\n    command: srv\n    args: {a: 1}\n")
    assert cli_main(["mcp", "list", "--no-connect"]) == 1
    out = capsys.readouterr().out
    assert "mcpServers.bad.args" in out and str(user) in out


def test_the_shipped_example_configuration_parses() -> None:
    from workspace import paths
    from workspace.mcp.config import read_file

    example = paths.resources_dir() / "mcp" / "example-config.yaml"
    manager = MCPManager(read_file(example), environ={})
    assert {"time", "filesystem", "github", "remote"} <= set(manager.server_names())
    assert all(manager.status(n).state is ServerState.STOPPED for n in manager.server_names())
    assert manager.status("github").disabled and manager.is_auto_approved("filesystem", "read_text_file")
    assert not manager.is_tool_enabled("filesystem", "move_file")


# -- misspelt keys: errors with the closest key; other clients' keys are kept ----------------------------
def test_a_misspelt_key_names_the_server_and_the_closest_key() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_server("gh", {"comand": "github-mcp-server", "args": ["stdio"]}, source="cfg.yaml")
    assert str(info.value) == "cfg.yaml: mcpServers.gh: unknown setting 'comand' — did you mean 'command'?"
    with pytest.raises(ConfigurationError, match=r"mcpServers.gh.transport: unknown setting 'comand'"):
        parse_server("gh", {"transport": {"type": "stdio", "comand": "x"}})
    with pytest.raises(ConfigurationError, match=r"unknown setting 'AutoApprove' — did you mean 'autoApprove'"):
        parse_server("gh", {"command": "x", "AutoApprove": []})
    # Keys of other clients (VS Code's envFile, Gemini CLI's trust) and notes of your own are kept.
    entry = {"command": "x", "envFile": ".env", "trust": True, "description": "mine", "custom": 1}
    assert parse_server("gh", entry).to_dict() == entry


def test_a_misspelt_key_in_the_configuration_names_the_file_and_line(tmp_path: Path) -> None:
    user = tmp_path / "config.yaml"
    user.write_text("mcpServers:\n  ok: {command: srv}\n  gh:\n    command: srv\n    timout: 30\n")
    manager = MCPManager(load_config(user_file=user, env={}))
    gh = manager.status("gh")
    assert gh.state is ServerState.FAILED and gh.source == str(user)
    assert gh.reason == f"{user}:5: mcpServers.gh: unknown setting 'timout' — did you mean 'timeout'?"
    assert manager.status("ok").state is ServerState.STOPPED  # the others are unaffected


def test_the_known_keys_are_the_schema_fields() -> None:
    from workspace.mcp.config import KNOWN_KEYS, TRANSPORT_KEYS
    from workspace.schemas.mcp import McpServer, McpTransport

    assert set(McpServer.model_fields) == KNOWN_KEYS
    assert set(McpTransport.model_fields) == TRANSPORT_KEYS
