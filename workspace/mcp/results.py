"""Turning an MCP ``CallToolResult`` into what the model sees and what people see.

* The model (``ToolOutput.data``): the structured content when the server sent some
  (a JSON object), else the text blocks joined with blank lines. Images, audio and
  resources become a one-line description (``[image: image/png, 1.2 kB]``); the text
  of an embedded text resource is included.
* People (``ToolOutput.raw``): every content block as a dict (images with their
  base64 data, embedded resources, resource links), ``structured_content`` and
  ``is_error`` — what the inspector shows.
* ``is_error`` on the result becomes a ``tool_error`` (``ToolOutput.is_error``).

Works on plain dicts, so nothing here imports the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workspace.tools.base import ToolOutput


def _size(data: str | None) -> str:
    if not data:
        return "empty"
    count = len(data) * 3 // 4
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} kB"
    return f"{count / (1024 * 1024):.1f} MB"


def describe_block(block: Mapping[str, Any]) -> str:
    """What the model reads for one content block."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {block.get('mimeType', 'unknown type')}, {_size(block.get('data'))}]"
    if kind == "resource_link":
        name = block.get("name") or block.get("title")
        extra = f" ({name})" if name and name != block.get("uri") else ""
        mime = f", {block['mimeType']}" if block.get("mimeType") else ""
        return f"[resource link: {block.get('uri')}{extra}{mime}]"
    if kind == "resource":
        resource = block.get("resource") or {}
        uri = resource.get("uri", "")
        if "text" in resource:
            return f"[resource {uri}]\n{resource.get('text', '')}"
        mime = resource.get("mimeType", "unknown type")
        return f"[resource {uri}: {mime}, {_size(resource.get('blob'))}]"
    return f"[{kind or 'unknown'} content]"


def to_output(content: Sequence[Mapping[str, Any]], structured: Any, is_error: bool) -> ToolOutput:
    """``ToolOutput(data, raw, is_error)`` from a result's parts (content blocks as dicts)."""
    blocks = [dict(b) for b in content]
    raw: dict[str, Any] = {"content": blocks, "structured_content": structured, "is_error": bool(is_error)}
    data: Any
    if structured is not None and not is_error:
        data = structured
    else:
        parts = [describe_block(b) for b in blocks]
        data = "\n\n".join(p for p in parts if p) if parts else ""
        if is_error and not data:
            data = "The tool reported an error without a message"
    return ToolOutput(data=data, raw=raw, is_error=bool(is_error))


def result_to_output(result: Any) -> ToolOutput:
    """From an SDK ``CallToolResult`` (pydantic model)."""
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
    return to_output(blocks, result.structured_content, bool(result.is_error))


def output_text(data: Any) -> str:
    """A ``ToolOutput.data`` value as text (for MCP text content and the CLI)."""
    if isinstance(data, str):
        return data
    try:
        return json.dumps(data, ensure_ascii=False, indent=None, default=str)
    except (TypeError, ValueError):
        return str(data)


#: The most characters of one resource a model is given (the rest is cut, with a note).
RESOURCE_CHARS_FOR_MODEL = 100_000


@dataclass(frozen=True, slots=True)
class ResourceRead:
    """A resource as read (``resources/read``): its text for the model (cut to a limit, with a note that
    says so) and for people in full, with every content as the server sent it."""

    uri: str
    #: What the model is given: :attr:`full`, or its start and a note once longer than the limit.
    text: str
    #: Every content's text (binary contents as a one-line description).
    full: str
    #: Characters of :attr:`full`.
    size: int
    truncated: bool
    #: The contents as read (wire JSON: uri, mimeType, text or blob).
    contents: list[dict[str, Any]] = field(default_factory=list)


def resource_read(uri: str, contents: Sequence[Mapping[str, Any]], *,
                  limit: int = RESOURCE_CHARS_FOR_MODEL) -> ResourceRead:
    """:class:`ResourceRead` of a ``resources/read`` result's contents (dicts)."""
    parts = []
    for content in contents:
        if "text" in content:
            parts.append(str(content.get("text") or ""))
        else:
            mime = content.get("mimeType", "unknown type")
            parts.append(f"[{content.get('uri', uri)}: {mime}, {_size(content.get('blob'))}]")
    full = "\n\n".join(parts)
    size = len(full)
    if size <= limit:
        return ResourceRead(uri, full, full, size, False, [dict(c) for c in contents])
    cut = full.rfind("\n", 0, limit)
    shown = full[: cut if cut > limit // 2 else limit]
    note = (f"\n\n[… cut: the resource {uri} has {size:,} characters; the first {len(shown):,} are shown here. "
            "The whole resource was read and is kept: ask for a part of it if you need more.]")
    return ResourceRead(uri, shown + note, full, size, True, [dict(c) for c in contents])
