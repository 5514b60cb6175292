"""MCP resources and prompts for people and robots: what a read gives, templates, the robot's tools.

* :class:`ResourceContent` — one resource as read (``resources/read``): its URI, name, MIME type and
  either its text or its bytes (a ``blob`` decoded), whole. :meth:`MCPManager.read_resource_content
  <workspace.mcp.manager.MCPManager.read_resource_content>` returns it (the MCP dock's preview, and
  message attachments).
* :func:`template_variables` / :func:`expand_template` — RFC 6570 URI templates as MCP servers write
  them (``demo://resource/dynamic/text/{resourceId}``): simple ``{var}`` expansion (values
  percent-encoded), ``{+var}`` (reserved characters kept) and ``{var1,var2}`` lists; a missing
  argument raises :class:`TemplateArgumentsMissing` naming it.
* :func:`prompt_text` — a ``prompts/get`` result as the text a person sends (see its docstring for
  what happens to assistant messages).
* :func:`resource_tools` — ``list_mcp_resources`` and ``read_mcp_resource``: read-only tools a robot is
  given when its file says ``mcp_resources: true`` (and it has MCP servers). Big resources are cut for
  the model with a note; the tool result's ``raw`` keeps them whole (the inspector).

Plain data and the manager's coroutines only: nothing here imports the SDK.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from workspace.errors import MCPError

if TYPE_CHECKING:
    from workspace.tools.base import Tool

#: Tool names (built in, not ``server__tool``: they read any of the robot's servers).
LIST_TOOL = "list_mcp_resources"
READ_TOOL = "read_mcp_resource"


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """One resource as read: ``text`` for a text content, ``data`` (bytes) for a blob; the whole of it."""

    server: str
    uri: str
    mime_type: str | None = None
    text: str | None = None
    data: bytes | None = None
    #: The resource's name (from the server's list, when known), else None.
    name: str | None = None
    #: Further contents of the same read (a server may answer one URI with several), same shape.
    more: tuple[ResourceContent, ...] = field(default_factory=tuple)

    @property
    def is_text(self) -> bool:
        return self.text is not None

    @property
    def is_image(self) -> bool:
        return self.data is not None and (self.mime_type or "").startswith("image/")

    @property
    def is_json(self) -> bool:
        mime = (self.mime_type or "").split(";")[0].strip().lower()
        return self.text is not None and (mime == "application/json" or mime.endswith("+json"))

    @property
    def size(self) -> int:
        """Characters of the text, or bytes of the data."""
        return len(self.text) if self.text is not None else len(self.data or b"")

    @property
    def label(self) -> str:
        return self.name or self.uri


def content_from_dict(server: str, uri: str, content: Mapping[str, Any], *, name: str | None = None,
                      more: Sequence[Mapping[str, Any]] = ()) -> ResourceContent:
    """A :class:`ResourceContent` from one wire content (``uri``, ``mimeType``, ``text`` or ``blob``)."""
    data: bytes | None = None
    text: str | None = None
    if "text" in content:
        text = str(content.get("text") or "")
    else:
        try:
            data = base64.b64decode(str(content.get("blob") or ""), validate=False)
        except (binascii.Error, ValueError):
            data = b""
    return ResourceContent(
        server=server, uri=str(content.get("uri") or uri), mime_type=content.get("mimeType"), text=text, data=data,
        name=name, more=tuple(content_from_dict(server, uri, c) for c in more),
    )


# -- URI templates (RFC 6570, the parts MCP servers use) ------------------------------------------------
_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^{}]*)\}")
_UNRESERVED = "-._~"
_RESERVED = ":/?#[]@!$&'()*+,;="


class TemplateArgumentsMissing(MCPError):
    """A resource template expanded without some of its variables."""

    def __init__(self, template: str, missing: Sequence[str]) -> None:
        self.template = template
        self.missing = list(missing)
        names = ", ".join(missing)
        super().__init__(f"The resource template {template} needs {len(missing)} more argument"
                         f"{'s' if len(missing) != 1 else ''}: {names}. Give {'them' if len(missing) != 1 else 'it'} "
                         "a value (the MCP dock's form, or arguments={...})")


def template_variables(template: str) -> list[str]:
    """The variable names of a URI template, in order, once each."""
    names: list[str] = []
    for match in _EXPRESSION.finditer(template):
        for part in match.group(2).split(","):
            name = part.strip().rstrip("*").split(":", 1)[0]
            if name and name not in names:
                names.append(name)
    return names


def expand_template(template: str, arguments: Mapping[str, Any]) -> str:
    """The URI of ``template`` with ``arguments`` (see the module docstring); missing ones raise
    :class:`TemplateArgumentsMissing`."""
    values = {k: str(v) for k, v in arguments.items() if v is not None and str(v) != ""}
    missing = [n for n in template_variables(template) if n not in values]
    if missing:
        raise TemplateArgumentsMissing(template, missing)

    def expand(match: re.Match[str]) -> str:
        operator, names = match.group(1), [p.strip().rstrip("*").split(":", 1)[0] for p in match.group(2).split(",")]
        safe = _UNRESERVED + (_RESERVED if operator in ("+", "#") else "")
        parts = [quote(values[n], safe=safe) for n in names if n]
        if operator in ("", "+"):
            return ",".join(parts)
        if operator == "#":
            return "#" + ",".join(parts)
        if operator in ("/", "."):
            return operator + operator.join(parts)
        joiner = {"?": "&", "&": "&", ";": ";"}[operator]
        lead = "?" if operator == "?" else operator
        return lead + joiner.join(f"{n}={p}" for n, p in zip([n for n in names if n], parts, strict=True))

    return _EXPRESSION.sub(expand, template)


# -- prompts ----------------------------------------------------------------------------------------------
def prompt_messages(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(role, text)`` of each message of a ``prompts/get`` result (images and resources described)."""
    from workspace.mcp.results import describe_block

    out = []
    for message in result.get("messages") or []:
        out.append((str(message.get("role") or "user"), describe_block(message.get("content") or {})))
    return out


def prompt_text(result: Mapping[str, Any]) -> str:
    """The message a person sends for an MCP prompt (the composer's ``/server:prompt``).

    A prompt of user messages only becomes their text, one after the other. A prompt that also has
    assistant messages (a scripted exchange) cannot be replayed as turns of the thread without the
    model saying them, so the whole exchange goes into the one message, each part labelled ("User:",
    "Assistant:"), as :meth:`MCPManager.prompt_template` does: the person sees everything before
    sending and the model reads the exchange as context.
    """
    messages = prompt_messages(result)
    if not messages:
        return ""
    if all(role == "user" for role, _ in messages):
        return "\n\n".join(text for _, text in messages)
    return "\n\n".join(f"{role.capitalize()}: {text}" for role, text in messages)


# -- the robot's tools ------------------------------------------------------------------------------------
def resource_tools(manager: Any, servers: Iterable[str]) -> list[Tool]:
    """``list_mcp_resources(server?)`` and ``read_mcp_resource(server, uri)`` over ``servers`` (the robot's
    MCP servers); read-only (``readOnlyHint``: no approval asked by default)."""
    from workspace.tools.base import Tool, ToolOutput

    allowed = list(dict.fromkeys(servers))
    names = ", ".join(allowed)

    def check(server: str) -> str | None:
        if server not in allowed:
            return f"'{server}' is not one of this robot's MCP servers. Use one of: {names}"
        return None

    async def list_handler(arguments: dict[str, Any]) -> ToolOutput:
        server = arguments.get("server")
        targets = [str(server)] if server else allowed
        lines: list[str] = []
        raw: dict[str, Any] = {}
        for name in targets:
            problem = check(name)
            if problem:
                return ToolOutput(problem, is_error=True)
            try:
                found = await manager.list_resources(name)
                templates = await manager.list_resource_templates(name)
            except Exception as exc:  # one server down: say so, list the others
                lines.append(f"{name}: not available: {exc}")
                raw[name] = {"error": str(exc)}
                continue
            raw[name] = {"resources": found, "templates": templates}
            if not found and not templates:
                lines.append(f"{name}: no resources")
                continue
            for r in found:
                extra = " ".join(x for x in (f"({r['name']})" if r.get("name") else "", r.get("mimeType") or "") if x)
                desc = f" — {r['description']}" if r.get("description") else ""
                lines.append(f"{name} {r.get('uri')} {extra}{desc}".rstrip())
            for t in templates:
                desc = f" — {t['description']}" if t.get("description") else ""
                lines.append(f"{name} template {t.get('uriTemplate')} ({t.get('name', '')}){desc}: fill in the "
                             "{…} parts to read one")
        return ToolOutput("\n".join(lines) or "No resources", raw=raw)

    async def read_handler(arguments: dict[str, Any]) -> ToolOutput:
        server, uri = str(arguments.get("server") or ""), str(arguments.get("uri") or "")
        problem = check(server)
        if problem:
            return ToolOutput(problem, is_error=True)
        try:
            read = await manager.read_resource_text(server, uri)
        except Exception as exc:
            return ToolOutput(str(exc), raw={"error": str(exc)}, is_error=True)
        raw = {"server": server, "uri": uri, "size": read.size, "truncated": read.truncated,
               "contents": read.contents}
        return ToolOutput(read.text, raw=raw)

    server_param = {"type": "string", "description": "The MCP server's name", "enum": allowed}
    return [
        Tool(LIST_TOOL, f"List the resources (and resource templates) of this robot's MCP servers ({names}). "
             "Give a server to list only its resources.",
             {"type": "object", "properties": {"server": server_param}, "additionalProperties": False},
             list_handler, annotations={"readOnlyHint": True}, title="List MCP resources"),
        Tool(READ_TOOL, "Read one resource of an MCP server by its URI (from list_mcp_resources, or a template "
             "filled in). Long resources are cut, with a note saying so.",
             {"type": "object", "properties": {"server": server_param, "uri": {
                 "type": "string", "description": "The resource's URI"}}, "required": ["server", "uri"],
              "additionalProperties": False},
             read_handler, annotations={"readOnlyHint": True}, title="Read an MCP resource"),
    ]
