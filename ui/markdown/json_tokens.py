"""pygments' ``JsonLexer`` tokens by regular expressions (no Qt).

pygments' JSON lexer reads its text a character at a time in Python (a state machine, a step a character), about
0.15 ms a KB of a streamed one-line JSON answer, and the closing check lexes the block again. :func:`tokens` gives
the same tokens (the same token types and texts, in the same order) a match a token, ~30 % less: a string, and the
spaces and comments after it, wait in a queue until what follows says whether the strings are names (a colon:
``Name.Tag``) or strings, as pygments' queue has them; a number is a float when it holds any of ``.eE+``; no
validation, and what pygments calls an error is one here (a string or comment left open, to the end; any other
character, alone). ``tests/ui/test_json_tokens.py`` compares the two on random texts of JSON's characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: One token a match. A closed string: an escape takes the character after it; ``\u`` takes up to four hex digits
#: and, after fewer, any one character (a quote there does not close the string, as in pygments' state machine).
#: A name of constants (``[truefalsn]``: pygments' set('truefalsenull')) starts with ``f``, ``n`` or ``t``.
_TOKEN = re.compile(r'(?P<s>"(?:[^"\\]++|\\u[0-9a-fA-F]{4}|\\u[0-9a-fA-F]{0,3}[^0-9a-fA-F]|\\[^u])*+")'
                    r"|(?P<p>[{}\[\],]+)|(?P<n>[-0-9][-0-9.eE+]*)|(?P<c>[ftn][truefalsn]*)|(?P<k>:[{}\[\],]*)"
                    r"|(?P<w>[ \n\r\t]+)|(?P<o>//[^\n]*)|(?P<m>/\*[\s\S]*?\*/)|(?P<e>[\s\S])")


def handles(lexer: Any) -> bool:
    """Whether :func:`tokens` gives ``lexer.get_tokens_unprocessed``'s tokens: pygments' own JSON lexer, not one
    made from it."""
    from pygments.lexers.data import JsonLexer

    return type(lexer) is JsonLexer


def tokens(text: str) -> Iterator[tuple[Any, str]]:
    """The token types and texts of ``JsonLexer().get_tokens_unprocessed(text)``."""
    from pygments.token import Comment, Error, Keyword, Name, Number, Punctuation, String, Whitespace

    double, tag, punctuation = String.Double, Name.Tag, Punctuation
    held = {"w": Whitespace, "o": Comment.Single, "m": Comment.Multiline}  # queued after a string
    queue: list[tuple[Any, str]] = []
    for m in _TOKEN.finditer(text):
        group, value = m.lastgroup, m.group()
        if group == "s":
            queue.append((double, value))
        elif group == "k":  # a colon: the strings before it are names
            if queue:
                for kind, queued in queue:
                    yield (tag if kind is double else kind), queued
                queue.clear()
            yield punctuation, value
        elif group in held:
            if queue:
                queue.append((held[group], value))
            else:
                yield held[group], value
        elif group == "e" and (value == '"' or (value == "/" and text.startswith("*", m.end()))):
            yield from queue  # a string or comment open to the end
            yield Error, text[m.start():]
            return
        else:
            if queue:
                yield from queue
                queue.clear()
            if group == "p":
                yield punctuation, value
            elif group == "n":
                floats = "." in value or "e" in value or "E" in value or "+" in value
                yield (Number.Float if floats else Number.Integer), value
            elif group == "c":
                yield Keyword.Constant, value
            else:
                yield Error, value
    yield from queue
