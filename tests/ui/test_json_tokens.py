"""JSON's tokens by regular expressions (ui.markdown.json_tokens) are pygments' JsonLexer's, token for token, on
random texts of JSON's characters (strings and their escapes, names, numbers, constants, comments, errors, texts cut
anywhere) and on real documents; a streamed JSON block is lexed by them."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from ui import markdown
from ui.chat.view import code_lines
from ui.markdown import json_tokens

#: Pieces of JSON (and what pygments' lexer takes for errors), put together at random.
PIECES = [*'"\\u0aF9:{}[],/* \n\t-.eE+truefalsnxé日', "\U0001F600", "\\u", "\\u00", "\\\\", '\\"', "//", "/*", "*/",
          '"k":', "null", "true", "1.5e+3"]


def pygments_tokens(text: str) -> list[tuple[Any, str]]:
    return list(markdown.code_lexer("json").get_tokens(text))


def test_random_texts_get_pygments_tokens() -> None:
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40)))
        assert list(json_tokens.tokens(text)) == pygments_tokens(text), repr(text)


@pytest.mark.parametrize("indent", [None, 2])
def test_documents_get_pygments_tokens(indent: int | None) -> None:
    value = [{"id": i, "name": f"item <{i}> \u00e9 \U0001F600", "tags": ["a", 'b"c', "\\"], "ok": i % 3 == 0,
              "score": i * 1.5e3, "parent": None, "nested": {"k": [-i, {}, []]}} for i in range(300)]
    text = json.dumps(value, indent=indent, ensure_ascii=indent is None)
    assert list(json_tokens.tokens(text)) == pygments_tokens(text)
    # Cut anywhere (a streamed line's window): the same as pygments' on the same cut.
    for end in range(0, len(text), 97):
        assert list(json_tokens.tokens(text[end:end + 200])) == pygments_tokens(text[end:end + 200])


def test_a_json_block_is_lexed_by_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """CodeLines (a streamed block's lines, its long line's cuts, the closing check) lexes JSON here, not with
    pygments' lexer (whose state machine steps a character at a time)."""
    lexer = markdown.code_lexer("json")
    assert json_tokens.handles(lexer)
    calls = [0]
    real = json_tokens.tokens

    def counting(text: str) -> Any:
        calls[0] += 1
        return real(text)

    monkeypatch.setattr(json_tokens, "tokens", counting)
    monkeypatch.setattr(type(lexer), "get_tokens_unprocessed", lambda *_a: pytest.fail("pygments' JSON lexer ran"))
    lines = code_lines.CodeLines("json")
    text = json.dumps([{"k": i, "s": "x"} for i in range(400)], separators=(",", ":"))
    size, _part = lines.cut(text)
    assert size > 0 and calls[0] == 1
    assert lines.finished('{"a": [1, true]}\n') and calls[0] == 2
    *_steps, whole = code_lines.whole_lines(text, "json")
    assert whole and calls[0] == 3
