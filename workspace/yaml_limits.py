"""YAML read with limits: every YAML the workspace reads from a folder or from a person goes through here.

YAML's aliases (``*name``) repeat an anchored value (``&name``) without copying it, so a 1 KB file
of nested aliases (the "billion laughs") stands for a billion values: parsing is cheap, but
whatever walks the result (checking the schema, ``json.dumps``, ``copy.deepcopy``) takes minutes
and gigabytes. An alias may also name the value that contains it, which makes a structure that
contains itself (every walk of it ends in a ``RecursionError``). And ``[[[[…`` nested deep enough
overflows the parser's recursion.

The loaders here count, while composing the document, how many values the aliases add once
expanded (:data:`MAX_ALIAS_VALUES`), refuse an alias inside the value it names, and refuse nesting
deeper than :data:`MAX_DEPTH`: each is a :class:`YAMLLimitError` (a ``yaml.YAMLError``, so every
caller's message names its file and line) raised in a few milliseconds. Aliases used as YAML
intends (``<<: *defaults`` a few times) stay well within the limits.

- :func:`safe_load` for ``yaml.safe_load``; :func:`load_with_node` for a document with its node
  tree (the lines of keys); :data:`BoundedSafeLoader` is the PyYAML loader class.
- :func:`round_trip_yaml` is a ruamel.yaml ``YAML(typ="rt")`` with the same limits (robot files and
  the ``mcpServers`` editor keep comments with it).

This module imports PyYAML; import it inside functions (``import workspace`` stays light).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent
from yaml.nodes import Node

__all__ = [
    "MAX_ALIAS_VALUES",
    "MAX_DEPTH",
    "BoundedSafeLoader",
    "YAMLLimitError",
    "load_with_node",
    "round_trip_yaml",
    "safe_load",
]

#: How many values the aliases of one document may add once expanded (each alias counts the values
#: of what it names, nested aliases included).
MAX_ALIAS_VALUES = 10_000
#: How deep mappings and lists may nest.
MAX_DEPTH = 100


class YAMLLimitError(ComposerError):
    """A document past one of the limits (``problem`` says which and what to do)."""


class _Limits:
    """What one document has used of the limits so far (the composers' shared state)."""

    def __init__(self) -> None:
        self.open: list[str] = []  # anchors of the values being composed (an alias to one is recursive)
        self.sizes: dict[int, int] = {}  # id(node) -> values it stands for, its aliases expanded
        self.added = 0
        self.depth = 0


def _depth_problem() -> str:
    return f"mappings and lists nest more than {MAX_DEPTH} levels deep here; flatten the document"


def _alias_problem(anchor: str, added: int) -> str:
    return (f"the aliases (*{anchor} and the others) stand for more than {MAX_ALIAS_VALUES:,} values once "
            f"expanded (at least {added:,}), which looks like a 'billion laughs' document: write the values out "
            "or use fewer nested aliases")


def _compose(limits: _Limits, event: Any, is_alias: bool, compose: Any, error: type[Exception]) -> Any:
    """Compose one node through ``compose()`` (the library's own), keeping ``limits``."""
    anchor = getattr(event, "anchor", None)
    if is_alias:
        if anchor in limits.open:
            raise error(None, None, f"the alias *{anchor} is inside the value &{anchor} it names (a recursive alias "
                                    "makes a value that contains itself): name a value defined before it",
                        event.start_mark)
        node = compose()
        limits.added += limits.sizes.get(id(node), 1)
        if limits.added > MAX_ALIAS_VALUES:
            raise error(None, None, _alias_problem(str(anchor), limits.added), event.start_mark)
        return node
    limits.depth += 1
    if limits.depth > MAX_DEPTH:
        raise error(None, None, _depth_problem(), event.start_mark)
    if anchor is not None:
        limits.open.append(anchor)
    try:
        node = compose()
    finally:
        limits.depth -= 1
        if anchor is not None:
            limits.open.pop()
    size = 1
    if isinstance(node.value, list):
        for item in node.value:
            for child in (item if isinstance(item, tuple) else (item,)):
                size += limits.sizes.get(id(child), 1)
    limits.sizes[id(node)] = size
    return node


class BoundedSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` within :data:`MAX_ALIAS_VALUES` and :data:`MAX_DEPTH` (see the module)."""

    _limits: _Limits

    def compose_document(self) -> Node | None:
        self._limits = _Limits()
        try:
            node: Node | None = super().compose_document()
        finally:
            self._limits.sizes.clear()
        return node

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        # Refused while scanning: the scanner's look-ahead is quadratic in the flow level ('[[[[…').
        if self.flow_level >= MAX_DEPTH:
            raise YAMLLimitError(None, None, _depth_problem(), self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()
        node: Node | None = _compose(self._limits, event, isinstance(event, AliasEvent),
                                     lambda: super(BoundedSafeLoader, self).compose_node(parent, index),
                                     YAMLLimitError)
        return node


def load_with_node(text: str) -> tuple[Any, Node | None]:
    """The first (only) document of ``text`` and its node tree (None, None when it is empty);
    ``yaml.YAMLError`` (:class:`YAMLLimitError` past a limit) when it is not valid."""
    loader = BoundedSafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` within the limits."""
    return load_with_node(text)[0]


def round_trip_yaml() -> Any:
    """A ruamel.yaml ``YAML(typ="rt")`` whose loads keep the limits (a ruamel ``ComposerError`` past one)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.composer import ComposerError as RuamelComposerError
    from ruamel.yaml.events import AliasEvent as RuamelAliasEvent
    from ruamel.yaml.scanner import RoundTripScanner

    class BoundedComposer(Composer):
        def compose_document(self) -> Any:
            self._limits = _Limits()
            return super().compose_document()

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.parser.peek_event()
            return _compose(self._limits, event, isinstance(event, RuamelAliasEvent),
                            lambda: super(BoundedComposer, self).compose_node(parent, index), RuamelComposerError)

    class BoundedScanner(RoundTripScanner):
        def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:
            if len(self.flow_context) >= MAX_DEPTH:
                raise RuamelComposerError(None, None, _depth_problem(), self.reader.get_mark())
            super().fetch_flow_collection_start(TokenClass, to_push)

    rt = YAML(typ="rt")
    rt.Composer = BoundedComposer
    rt.Scanner = BoundedScanner
    return rt
