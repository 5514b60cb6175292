"""The schema of an ``mcpServers`` entry (the format of Claude Desktop, Cursor, Cline and Roo Code).

``mcpServers`` is a format many clients share and extend, so an entry keeps keys this schema does
not know (they are written back as they were). A key that looks like a misspelling of a known one
is an error with the closest ("unknown setting 'comand' — did you mean 'command'?"):
:func:`workspace.mcp.config.parse_server` checks that, and the values, with messages naming the
file, the server and the key. This module gives the JSON Schema (``robotlab schema mcp``) and the
known keys. Imported on use: it imports pydantic.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["McpOAuth", "McpServer", "McpTransport", "mcp_json_schema", "server_json_schema"]

Scalar = str | int | float | bool
Duration = float | str


class McpTransport(BaseModel):
    """RobotLab's inline form: ``{name: x, transport: {type: stdio, command: ..., args: [...]}}``."""

    model_config = ConfigDict(extra="allow")

    type: str | None = Field(None, description="stdio | sse | http (streamable HTTP)")
    command: str | None = None
    args: list[Scalar] | None = None
    env: dict[str, Scalar | None] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, Scalar | None] | None = None


class McpOAuth(BaseModel):
    """How RobotLab signs in to a remote server (OAuth 2.1: a browser, a loopback redirect, tokens in the keyring)."""

    model_config = ConfigDict(extra="allow")

    enabled: bool | None = Field(None, description="false: never sign in to this server")
    scope: str | list[str] | None = Field(None, description="The scopes to ask for (default: what the server says)")
    clientName: str | None = Field(None, description="The client's name the server shows (default: RobotLab Workspace)")
    clientId: str | None = Field(None, description="A client registered with the server beforehand (default: "
                                 "registered on the fly, dynamic client registration)")
    clientSecret: str | None = Field(None, description="That client's secret (write it as ${keyring:NAME})")
    callbackPort: int | None = Field(None, description="The loopback port of the sign-in's redirect (default: a "
                                     "free one; a client registered beforehand needs its own)")
    tokenStore: str | None = Field(None, description="keyring (the default) or file (a file only you can read; "
                                   "less safe, for systems without a keyring)", examples=["keyring", "file"])


class McpServer(BaseModel):
    """One MCP server: a program to start (``command``) or an address to connect to (``url``)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={
        "anyOf": [{"required": ["command"]}, {"required": ["url"]}, {"required": ["serverUrl"]},
                  {"required": ["transport"]}]})

    command: str | None = Field(None, description="stdio: the program to start (${VAR} and ~ are expanded)")
    args: list[Scalar] | str | None = Field(None, description="stdio: the program's arguments")
    env: dict[str, Scalar | None] | None = Field(
        None, description="stdio: extra environment variables; values may be ${VAR}, ${env:VAR}, ${keyring:NAME}")
    cwd: str | None = Field(None, description="stdio: the working folder")
    url: str | None = Field(None, description="HTTP: the server's address (streamable HTTP; .../sse: SSE)")
    serverUrl: str | None = Field(None, description="The same as url (Windsurf's spelling)")
    headers: dict[str, Scalar | None] | None = Field(None, description="HTTP: headers sent with every request")
    type: str | None = Field(None, description="stdio | sse | http | streamable-http | streamableHttp | "
                             "streamable_http (default: from command or url)",
                             examples=["stdio", "sse", "http", "streamable-http"])
    transportType: str | None = Field(None, description="The same as type (Cline's spelling)")
    disabled: bool | str | int | None = Field(None, description="true: configured but never started")
    enabled: bool | str | int | None = Field(None, description="false: the same as disabled: true")
    timeout: Duration | None = Field(None, description="Per-call time limit: seconds (1000 or more: "
                                     "milliseconds) or \"30s\", \"500ms\", \"2m\" (default 120 s)")
    connectTimeout: Duration | None = Field(None, description="Start-up and handshake time limit (default 30 s)")
    autoApprove: list[str] | str | None = Field(
        None, description="Tools (names or glob patterns) the approval policy may run without asking")
    alwaysAllow: list[str] | str | None = Field(None, description="The same as autoApprove (Roo Code's spelling)")
    disabledTools: list[str] | str | None = Field(None, description="Tools never offered to robots")
    trustAnnotations: bool | str | int | None = Field(
        None, description="true: believe the server's tool annotations (its readOnlyHint tools run without asking); "
        "by default every tool of the server is asked about, whatever its annotations claim")
    sampling: str | None = Field(
        None, description="When the server asks for a completion from the thread's model (sampling/createMessage): "
        "ask (the default), allow (without asking) or deny", examples=["ask", "allow", "deny"])
    oauth: bool | McpOAuth | None = Field(
        None, description="Remote servers that require OAuth 2.1 sign-in (on by default for HTTP and SSE servers "
        "without an Authorization header); false: never sign in")
    name: str | None = Field(None, description="The server's name, in an inline server of a robot's mcp: list")
    transport: McpTransport | None = Field(None, description="RobotLab's inline form of the connection")


def server_json_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON Schema of one entry (with ``$ref`` into ``#/$defs``) and those ``$defs``."""
    schema = McpServer.model_json_schema(ref_template="#/$defs/{model}")
    defs = schema.pop("$defs", {})
    defs["McpServer"] = schema
    return {"$ref": "#/$defs/McpServer"}, defs


def mcp_json_schema() -> dict[str, Any]:
    """The JSON Schema of a file of MCP servers (``robotlab schema mcp``): ``{mcpServers: {NAME: entry}}``."""
    server, defs = server_json_schema()
    servers = {"type": "object", "additionalProperties": server,
               "description": "MCP servers by name (a server's tools are named <server>__<tool>)"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "RobotLab Workspace MCP servers",
        "description": "The mcpServers mapping of Claude Desktop, Cursor, Cline and Roo Code, as RobotLab reads it "
                       "(config.yaml, or a file of servers).",
        "type": "object",
        "properties": {"mcpServers": servers, "mcp_servers": {**servers, "description": "The same as mcpServers"}},
        "$defs": defs,
    }
