"""Values (tool arguments, results, errors, memory) as people read them: pretty JSON, with every string
that would need JSON escapes (lines, quotes, tabs, backslashes) shown as text, not as a JSON string full
of ``\\n`` and ``\\"``.

:func:`readable_blocks` splits a value into blocks: one :class:`JsonBlock` for its structure (such a
string in it reads ``"<text below: 12 lines>"``) and one :class:`TextBlock` per such string, labelled
with where it is (``content``, ``files[0].text``). A string that holds a JSON object or array is read
as that JSON. The inspector (``ui``) turns the blocks into HTML, the Markdown export
into fenced blocks. Qt-free, no imports beyond the standard library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonBlock", "TextBlock", "has_text", "json_text", "readable_blocks"]

#: Strings longer than this are not parsed as JSON documents (a big JSON string stays a string).
PARSE_LIMIT = 2_000_000
#: A string with one of these would show JSON escapes (``\\n``, ``\\"``, ``\\t``, ``\\\\``): it is shown as text.
_ESCAPED = ("\n", '"', "\t", "\\")


@dataclass(frozen=True, slots=True)
class JsonBlock:
    """The value's structure as pretty JSON."""

    text: str


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A multi-line string of the value, as text; ``label`` says where it is ("" for the value itself)."""

    label: str
    text: str


Block = JsonBlock | TextBlock


def _as_json(text: str) -> Any:
    """The JSON object or array ``text`` holds, or None (plain words, a bare number, a string, too big)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or len(stripped) > PARSE_LIMIT:
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def _inner_json(node: str) -> Any:
    """The JSON object or array a string inside a value holds (read as that JSON), or None."""
    return _as_json(node) if node.lstrip()[:1] in ("{", "[") else None


def _is_text(node: str) -> bool:
    """Whether a string inside a value (not JSON) is shown as text: it has what JSON would escape."""
    return any(ch in node for ch in _ESCAPED)


def has_text(value: Any) -> bool:
    """Whether :func:`readable_blocks` shows a part of ``value`` as text (a :class:`TextBlock`): the same walk
    without making the blocks (no paths, no JSON), stopping at the first such string."""
    if isinstance(value, str):
        parsed = _as_json(value)
        if parsed is None:
            return True
        value = parsed
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            parsed = _inner_json(node)
            if parsed is not None:
                pending.append(parsed)
            elif _is_text(node):
                return True
        elif isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list | tuple):
            pending.extend(node)
    return False


def json_text(value: Any, *, indent: int = 2) -> str:
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    name = key if key.isidentifier() else json.dumps(key, ensure_ascii=False)
    return f"{parent}.{name}" if parent else name


def readable_blocks(value: Any) -> list[Block]:
    """``value`` as blocks to show: see the module's docstring."""
    if isinstance(value, str):
        parsed = _as_json(value)
        if parsed is None:
            return [TextBlock("", value)]
        value = parsed
    texts: list[TextBlock] = []

    def walk(node: Any, where: str) -> Any:
        if isinstance(node, str):
            parsed = _inner_json(node)
            if parsed is not None:
                return walk(parsed, where)
            if _is_text(node):
                texts.append(TextBlock(where, node))
                lines = len(node.splitlines())
                return f"<text below: {lines} lines>" if lines > 1 else "<text below>"
            return node
        if isinstance(node, dict):
            return {k: walk(v, _path(where, str(k))) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [walk(v, _path(where, i)) for i, v in enumerate(node)]
        return node

    shown = walk(value, "")
    if not texts:
        return [JsonBlock(json_text(shown))]
    if isinstance(shown, dict) and len(shown) == 1 and len(texts) == 1 and texts[0].label == _path("", str(
            next(iter(shown)))):
        # {"data": "many\nlines"}: the text alone, labelled by its key (not for "data", the usual wrapper)
        key = str(next(iter(shown)))
        return [TextBlock("" if key == "data" else key, texts[0].text)]
    return [JsonBlock(json_text(shown)), *texts]
