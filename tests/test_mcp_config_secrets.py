"""MCP server settings never show interpolated secrets, and hand their secrets to workspace.secrets."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from workspace.mcp.config import inline_spec, parse_server
from workspace.mcp.manager import MCPManager
from workspace.mcp.masking import mask_url
from workspace.mcp.status import ServerState, ServerStatus
from workspace.secrets import forget_secrets, redact

ENV = {
    "GITHUB_TOKEN": "ghp_interpolated0123456789",
    "SERVICE_PW": "pw-from-env-987",
    "PLAIN": "plain-value-used",
    "HOME_DIR": "/home/someone",
    "TENANT": "tenant-abc-123",
    "ZAPIER_MCP_KEY": "sk-ak-zapier0123456789",
}


@pytest.fixture(autouse=True)
def no_registered_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def _shown(*specs: object) -> str:
    return "\n".join(s.describe() for s in specs)  # type: ignore[attr-defined]


# -- describe() -------------------------------------------------------------------------------------
def test_describe_shows_args_as_written_not_their_values() -> None:
    spec = parse_server("gh", {
        "command": "${HOME_DIR}/bin/srv",
        "args": ["--token", "${GITHUB_TOKEN}", "--header=${env:PLAIN}", "--tenant=${TENANT:-none}", "plain"],
        "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
    }, environ=ENV)
    assert spec.args[1] == "ghp_interpolated0123456789"  # the connection gets the value...
    text = spec.describe()  # ...people see the reference
    assert text == ("${HOME_DIR}/bin/srv --token ${GITHUB_TOKEN} --header=${env:PLAIN} --tenant=${TENANT:-none} "
                    "plain  (env: GITHUB_TOKEN)")
    assert spec.target == text
    for value in ENV.values():
        assert value not in text


def test_describe_shows_the_url_as_written_and_masks_passwords_and_secret_query_values() -> None:
    spec = parse_server("r", {
        "url": "https://${TENANT}.example.com/mcp/${ZAPIER_MCP_KEY}/sse?token=${GITHUB_TOKEN}&region=eu&api_key=lit",
        "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Tenant": "${TENANT}"},
    }, environ=ENV)
    assert spec.url == ("https://tenant-abc-123.example.com/mcp/sk-ak-zapier0123456789/sse"
                        "?token=ghp_interpolated0123456789&region=eu&api_key=lit")
    text = spec.describe()
    assert text == ("https://${TENANT}.example.com/mcp/${ZAPIER_MCP_KEY}/sse?token=***&region=eu&api_key=***"
                    "  (headers: Authorization: ***, X-Tenant: ***)")
    userinfo = parse_server("u", {"url": "https://me:${SERVICE_PW}@h/mcp"}, environ=ENV).describe()
    assert userinfo == "https://me:***@h/mcp"
    literal = parse_server("l", {"url": "https://me:literal-pw@h/mcp?sig=abcdef&page=2"}).describe()
    assert literal == "https://me:***@h/mcp?sig=***&page=2"
    bare_token_user = parse_server("t", {"url": "https://ghp_literaltoken0123456@h/mcp"}).describe()
    assert bare_token_user == "https://***@h/mcp"


def test_describe_masks_literal_values_of_secret_looking_flags_and_headers() -> None:
    spec = parse_server("lit", {"command": "npx", "args": [
        "-y", "mcp-remote", "https://h/mcp?access_token=abc123xyz", "--api-key", "literal-key-value",
        "--password=literal-pw-value", "--header", "Authorization: Bearer literal-bearer", "--verbose",
        "--token", "${GITHUB_TOKEN}", "--port", "8080", "--secret=${SERVICE_PW:-fallback-secret}",
    ]}, environ=ENV)
    text = spec.describe()
    assert text == ('npx -y mcp-remote https://h/mcp?access_token=*** --api-key *** --password=*** --header '
                    '"Authorization: ***" --verbose --token ${GITHUB_TOKEN} --port 8080 --secret=${SERVICE_PW:-***}')


def test_describe_of_an_inline_server_and_of_a_spec_built_in_code() -> None:
    spec = inline_spec({"name": "x", "transport": {"type": "stdio", "command": "srv",
                                                   "args": ["--auth-token", "${GITHUB_TOKEN}"]}}, environ=ENV)
    assert spec.describe() == "srv --auth-token ${GITHUB_TOKEN}"
    from workspace.mcp.config import ServerSpec

    built = ServerSpec(name="b", transport="http", url="https://h/mcp?key=k", headers={"X-Key": "v"})
    assert built.describe() == "https://h/mcp?key=***  (headers: X-Key: ***)"


def test_repr_shows_no_interpolated_values() -> None:
    spec = parse_server("gh", {"command": "srv", "args": ["${GITHUB_TOKEN}"], "env": {"A": "${SERVICE_PW}"}},
                        environ=ENV)
    text = repr(spec) + str(spec) + f"{spec!r}"
    assert "ghp_" not in text and "pw-from-env" not in text and "gh" in text


def test_mask_url_still_masks_every_query_value_of_an_interpolated_url() -> None:
    assert mask_url("https://u:p@h/mcp?a=1&token=2") == "https://u:***@h/mcp?a=***&token=***"
    assert mask_url("https://h/mcp") == "https://h/mcp"


# -- what is registered for redaction ---------------------------------------------------------------
def test_env_header_and_secret_looking_values_are_registered_for_redaction() -> None:
    env = {**ENV, "FROM_VAR": "value-from-some-var", "KEYRING_ONE": "from-the-keyring-1"}
    parse_server("gh", {
        "command": "srv",
        "args": ["--token", "${GITHUB_TOKEN}", "--dir", "${HOME_DIR}", "--api-key=literal-arg-key",
                 "--name", "not-a-secret-name"],
        "env": {"SOME_VAR": "${FROM_VAR}", "NODE_ENV": "production-ish", "DB_PASSWORD": "literal-db-pw",
                "DATA_DIR": "${HOME_DIR}/data", "FROM_KEYRING": "${keyring:KEYRING_ONE}"},
    }, environ=env)
    parse_server("r", {
        "url": "https://user:${SERVICE_PW}@h/mcp?token=url-token-value&page=page-two",
        "headers": {"Authorization": "Bearer literal-bearer-token", "X-Api-Key": "${PLAIN}",
                    "Content-Type": "application/json", "X-Custom": "custom-literal-value"},
    }, environ=env)
    text = redact(" | ".join([
        "ghp_interpolated0123456789", "value-from-some-var", "literal-db-pw", "from-the-keyring-1",
        "literal-arg-key", "pw-from-env-987", "url-token-value", "Bearer literal-bearer-token", "plain-value-used",
        "custom-literal-value",
        # not secrets: paths, plain env values, non-secret flags, plain headers and query values
        "/home/someone/data", "production-ish", "not-a-secret-name", "application/json", "page-two",
    ]))
    assert text == " | ".join([
        "<GITHUB_TOKEN>", "<FROM_VAR>", "<DB_PASSWORD>", "<KEYRING_ONE>", "<api-key>", "<password>",
        "<token>", "Bearer <Authorization>", "<PLAIN>", "<X-Custom>",
        "/home/someone/data", "production-ish", "not-a-secret-name", "application/json", "page-two",
    ])


def test_a_checking_environment_registers_no_placeholders() -> None:
    # The manager parses disabled servers with an environment that echoes ${NAME} back.
    manager = MCPManager({"mcpServers": {"off": {
        "command": "srv", "disabled": True, "args": ["--token", "${GITHUB_TOKEN}"],
        "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"},
    }}}, environ={})
    assert manager.status("off").target == "srv --token ${GITHUB_TOKEN}  (env: GITHUB_TOKEN)"
    assert redact("${GITHUB_TOKEN} ${env:GITHUB_TOKEN}") == "${GITHUB_TOKEN} ${env:GITHUB_TOKEN}"


# -- the status the dock and `robotlab mcp list` show ------------------------------------------------
def test_status_snapshots_redact_reason_and_target() -> None:
    parse_server("gh", {"command": "srv", "args": ["${GITHUB_TOKEN}"]}, environ=ENV)
    status = ServerStatus(name="gh", state=ServerState.FAILED,
                          reason="cannot start /opt/ghp_interpolated0123456789/srv", target="srv x")
    assert status.reason == "cannot start /opt/<GITHUB_TOKEN>/srv"
    assert "ghp_" not in json.dumps(status.to_dict())


def test_manager_status_never_shows_interpolated_values() -> None:
    manager = MCPManager({"mcpServers": {
        "gh": {"command": "srv", "args": ["--token", "${GITHUB_TOKEN}"], "cwd": "${HOME_DIR}"},
        "web": {"url": "https://h/mcp/${ZAPIER_MCP_KEY}?token=${GITHUB_TOKEN}"},
    }}, environ=ENV)
    dumped = json.dumps([manager.status(n).to_dict() for n in manager.server_names()])
    assert "ghp_" not in dumped and "sk-ak-" not in dumped
    assert "--token ${GITHUB_TOKEN}" in dumped and "/mcp/${ZAPIER_MCP_KEY}?token=***" in dumped


def test_urls_in_env_register_only_their_passwords() -> None:
    parse_server("db", {"command": "srv", "env": {"DATABASE_URL": "${DB_URL}"}},
                 environ={"DB_URL": "postgres://app:db-password-123@db.internal:5432/main"})
    assert redact("postgres://app:db-password-123@db.internal:5432/main") == \
        "postgres://app:<password>@db.internal:5432/main"


def test_filled_values_for_stderr_masking_leave_out_paths_and_plain_variables() -> None:
    spec = parse_server("s", {"command": "srv", "args": ["${PLAIN}", "${HOME_DIR}", "${TENANT}"],
                              "cwd": "${HOME_DIR}"}, environ={**ENV, "HOME": "/home/x"})
    assert spec.filled_values == ("plain-value-used", "tenant-abc-123")
    assert spec == parse_server("s", {"command": "srv", "args": ["${PLAIN}", "${HOME_DIR}", "${TENANT}"],
                                      "cwd": "${HOME_DIR}"}, environ=ENV)
