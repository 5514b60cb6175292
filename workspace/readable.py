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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonBlock", "JsonPieces", "TextBlock", "has_text", "json_text", "readable_blocks", "readable_parts"]

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


@dataclass(frozen=True, slots=True)
class JsonPieces:
    """The value's structure as pretty JSON made as it is read (:func:`readable_parts`): ``pieces`` yields its
    text's fragments (``json.JSONEncoder.iterencode``), the value walked only as far as they go."""

    pieces: Iterator[str]


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


def _string(node: str, where: str, texts: list[TextBlock], walk: Any) -> Any:
    """A string inside a value as it is shown: the JSON it holds (``walk``-ed), a text's placeholder (the text
    kept in ``texts``) or itself."""
    parsed = _inner_json(node)
    if parsed is not None:
        return walk(parsed, where)
    if _is_text(node):
        texts.append(TextBlock(where, node))
        lines = len(node.splitlines())
        return f"<text below: {lines} lines>" if lines > 1 else "<text below>"
    return node


class _ShownDict(dict[Any, Any]):
    """A dict of the value as shown, its values walked only when the encoder reaches them."""

    __slots__ = ("_texts", "_where")

    def __init__(self, node: dict[Any, Any], where: str, texts: list[TextBlock]) -> None:
        super().__init__(node)
        self._where, self._texts = where, texts

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]  # (what the encoder asks)
        for key, value in super().items():
            yield key, _lazy(value, _path(self._where, str(key)), self._texts)


class _ShownList(list[Any]):
    """A list of the value as shown, its items walked only when the encoder reaches them."""

    __slots__ = ("_texts", "_where")

    def __init__(self, node: list[Any] | tuple[Any, ...], where: str, texts: list[TextBlock]) -> None:
        super().__init__(node)
        self._where, self._texts = where, texts

    def __iter__(self) -> Iterator[Any]:
        for i, value in enumerate(super().__iter__()):
            yield _lazy(value, _path(self._where, i), self._texts)


def _lazy(node: Any, where: str, texts: list[TextBlock]) -> Any:
    """``node`` as shown (:func:`readable_blocks`'s walk), its dicts and lists walked as they are read."""
    if isinstance(node, str):
        return _string(node, where, texts, lambda parsed, at: _lazy(parsed, at, texts))
    if isinstance(node, dict):
        return _ShownDict(node, where, texts)
    if isinstance(node, list | tuple):
        return _ShownList(node, where, texts)
    return node


def readable_parts(value: Any) -> Iterator[JsonPieces | TextBlock]:
    """:func:`readable_blocks` made as they are read: the structure's JSON as fragments (:class:`JsonPieces`), the
    value walked and encoded only as far as they are taken, then its texts (once the fragments are all taken). A
    view shows a big value's first lines without walking it whole."""
    if isinstance(value, str):
        parsed = _as_json(value)
        if parsed is None:
            yield TextBlock("", value)
            return
        value = parsed
    if isinstance(value, dict) and len(value) == 1:
        key, only = next(iter(value.items()))
        if isinstance(only, str) and _inner_json(only) is None and _is_text(only):
            yield TextBlock("" if str(key) == "data" else str(key), only)  # as readable_blocks
            return
    texts: list[TextBlock] = []
    yield JsonPieces(_fragments(value, texts))
    yield from texts


def _fragments(value: Any, texts: list[TextBlock]) -> Iterator[str]:
    """The JSON fragments of ``value`` as shown, its texts put in ``texts`` as they are reached. A value JSON has no
    text for (a key of another type) is :func:`readable_blocks`'s text of it (its ``repr``): whole if nothing was
    given yet, else after the fragments given, on a line of its own."""
    given = False
    try:
        for fragment in _ENCODER.iterencode(_lazy(value, "", texts)):
            given = True
            yield fragment
    except (TypeError, ValueError):
        texts.clear()
        first, *rest = readable_blocks(value)
        yield ("\n" if given else "") + first.text
        texts.extend(block for block in rest if isinstance(block, TextBlock))


#: :func:`json_text`'s encoder (with an indent, ``json`` encodes in Python, as it goes, whichever is called).
_ENCODER = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)


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
            return _string(node, where, texts, walk)
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
