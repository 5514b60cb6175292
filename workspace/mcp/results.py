"""Turning an MCP ``CallToolResult`` into what the model sees and what people see.

* The model (``ToolOutput.data``): the structured content when the server sent some
  (a JSON object), else the text blocks joined with blank lines. Images, audio and
  resources become a one-line description (``[image: image/png, 1.2 kB]``); the text
  of an embedded text resource is included.
* People (``ToolOutput.raw``): every content block as a dict (images with their
  base64 data, embedded resources, resource links), ``structured_content`` and
  ``is_error`` — what the inspector shows.
* ``is_error`` on the result becomes a ``tool_error`` (``ToolOutput.is_error``).
* A result is kept up to :data:`MAX_RESULT_CHARS` characters (text, the base64 data of images, audio and
  blobs, structured content): past it the rest is left out, the text cut at a line end, and the model and
  people are told (``[cut: 92.0 MiB more …]`` at the end of the text; ``raw["cut"]`` has the figures).
  The SDK reads a whole message before it is seen here: that read is bounded by the call's time limit
  (``mcpServers.<name>.timeout``), what is kept by this limit. The text is held once: ``data`` is the
  same string as the text block of ``raw`` when there is one.

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


#: The most characters of one MCP tool result kept (see the module documentation); the model is sent at
#: most ``llm.max_tool_result_chars`` of it, the thread and the inspector keep all of it.
MAX_RESULT_CHARS = 8 * 1024 * 1024
#: What a content block counts for at least (so a result of a million empty blocks is bounded too).
BLOCK_CHARS = 16


def _chars(value: Any) -> int:
    """About how many characters ``value`` (JSON: dicts, lists, strings, numbers) holds, walked without recursion
    (a structure nested 100,000 deep is counted too)."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            total += 2
            for key, inner in item.items():
                total += len(str(key)) + 1
                stack.append(inner)
        elif isinstance(item, list | tuple):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 8
    return total


def _mib(chars: int) -> str:
    return f"{chars / (1024 * 1024):.1f} MiB"


def _bounded(blocks: list[dict[str, Any]], structured: Any, limit: int) -> tuple[list[dict[str, Any]], Any, int, str]:
    """``blocks`` and ``structured`` within ``limit`` characters: the blocks that fit, the first that does not cut
    (a text at a line end) or named, the rest left out; structured content kept whole or left out. Returns them,
    the characters left out and a note for the end of the text ("" when nothing was)."""
    budget = limit
    left_out = 0
    what: list[str] = []
    if structured is not None:
        size = _chars(structured)
        if size <= budget:
            budget -= size
        else:
            left_out += size
            what.append(f"its structured content ({_mib(size)})")
            structured = None
    kept: list[dict[str, Any]] = []
    dropped = 0
    for block in blocks:
        text = block.get("text") if block.get("type") == "text" else None
        size = max(BLOCK_CHARS, len(text) if isinstance(text, str) else _chars(block))
        if size <= budget:
            kept.append(block)
            budget -= size
            continue
        if budget <= 0:
            left_out += size
            dropped += 1
            continue
        if isinstance(text, str):
            end = text.rfind("\n", 0, budget)
            shown = text[: end if end > budget // 2 else budget]
            kept.append({**block, "text": shown})
            left_out += len(text) - len(shown)
            what.append(f"the end of a text ({len(text) - len(shown):,} characters)")
            budget = 0
            continue
        # An image, audio or resource too big for what is left: named in its place; later blocks may still fit.
        kind = str(block.get("type") or "unknown")
        resource = block.get("resource")
        mime = block.get("mimeType") or (resource.get("mimeType") if isinstance(resource, Mapping) else None)
        named = f"[{kind} content{f', {mime}' if mime else ''}: {_mib(size)}, left out]"
        budget -= max(BLOCK_CHARS, len(named))
        kept.append({"type": "text", "text": named})
        left_out += size
        what.append(f"{kind} content ({_mib(size)})")
    if dropped:
        what.append(f"{dropped:,} more content block{'s' if dropped != 1 else ''}")
    if not left_out:
        return kept, structured, 0, ""
    note = (f"[cut: {_mib(left_out)} more of this result left out ({', '.join(what)}): one MCP tool result is "
            f"kept up to {_mib(limit)}. Ask the tool for a smaller part (a range, a page, a narrower query).]")
    return kept, structured, left_out, note


def to_output(content: Sequence[Mapping[str, Any]], structured: Any, is_error: bool, *,
              limit: int = MAX_RESULT_CHARS) -> ToolOutput:
    """``ToolOutput(data, raw, is_error)`` from a result's parts (content blocks as dicts), at most ``limit``
    characters of them kept (the rest is left out with a note: see the module documentation)."""
    blocks, structured, left_out, note = _bounded([dict(b) for b in content], structured, limit)
    if note:
        last = blocks[-1] if blocks and blocks[-1].get("type") == "text" else None
        if last is not None:  # the note ends the text (no second copy of it for a join)
            last["text"] = f"{last.get('text') or ''}\n\n{note}"
        else:
            blocks.append({"type": "text", "text": note})
    raw: dict[str, Any] = {"content": blocks, "structured_content": structured, "is_error": bool(is_error)}
    if left_out:
        raw["cut"] = {"left_out_chars": left_out, "limit_chars": limit}
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
