"""Names of MCP tools as robots see them: ``<server>__<tool>``.

Model APIs accept tool names matching ``^[A-Za-z0-9_-]{1,64}$``, so both parts are
sanitised (anything else becomes ``_``) and a name longer than 64 characters is cut
and ends in a short hash of the original pair, which keeps it stable and unique.
Two pairs that sanitise to the same name (``my.server`` and ``my_server``) are told
apart the same way: the later one gets the hashed form.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

MAX_LENGTH = 64
SEPARATOR = "__"
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    """``part`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_`` (never empty)."""
    cleaned = _BAD.sub("_", part)
    return cleaned or "_"


def _hashed(server: str, tool: str, base: str) -> str:
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{base[: MAX_LENGTH - 9]}_{digest}"


def tool_name(server: str, tool: str, *, taken: Container[str] = frozenset()) -> str:
    """The robot-facing name of ``tool`` on ``server``, unique among ``taken``.

    ``taken`` is only asked ``in`` (never copied): a caller naming many tools passes one set and adds
    each name it chose, so naming N tools costs N look-ups, not N copies of the names so far.
    """
    base = f"{sanitize(server)}{SEPARATOR}{sanitize(tool)}"
    used = taken
    exact = base == f"{server}{SEPARATOR}{tool}"
    name = base if len(base) <= MAX_LENGTH and (exact or base not in used) else _hashed(server, tool, base)
    counter = 2
    while name in used:  # a hash collision, or the same pair twice: make it unique all the same
        name = _hashed(f"{server}#{counter}", tool, base)
        counter += 1
    return name


def server_prefix(server: str) -> str:
    """The prefix every tool of ``server`` starts with (``github__``), for glob patterns."""
    return f"{sanitize(server)}{SEPARATOR}"
