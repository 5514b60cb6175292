"""``robotlab schema [robot|config|mcp|network|eval] [--out DIR]``: the JSON Schemas of the files people write.

Editors complete and check YAML with them (the YAML extension of VS Code: a
``# yaml-language-server: $schema=<file>`` line, or its ``yaml.schemas`` setting). The same files ship
in ``resources/schemas/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

WHAT = {
    "robot": "the front matter of robot and template files (.md)",
    "config": "config.yaml and a folder's .robotlab/config.yaml",
    "mcp": "a file of MCP servers (the mcpServers mapping)",
    "network": "network files (.yaml)",
    "eval": "eval files (.yaml) for `robotlab eval`",
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "schema",
        help="print the JSON Schema of robot files, the configuration, MCP servers, networks or evals",
        description="Print the JSON Schema of a kind of file, for editors that complete and check YAML; with "
        "--out, write <kind>.json files into a folder (every kind when none is named). Kinds: "
        + "; ".join(f"{k}: {v}" for k, v in WHAT.items()) + ".",
    )
    p.add_argument("kinds", nargs="*", metavar="KIND", help=f"which schema: {', '.join(WHAT)}")
    p.add_argument("--out", metavar="DIR", help="write <kind>.json files into DIR instead of printing")
    p.set_defaults(func=cmd_schema)


def _text(kind: str) -> str:
    from workspace.cli import CLIError
    from workspace.schemas.export import schema_text

    try:
        return schema_text(kind)
    except ImportError as exc:
        raise CLIError(f"the {kind} schema is not available in this version ({exc})") from exc


def cmd_schema(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError

    kinds = list(dict.fromkeys(args.kinds))
    unknown = [k for k in kinds if k not in WHAT]
    if unknown:
        raise CLIError(f"no schema named {unknown[0]!r}; the schemas are: {', '.join(WHAT)}")
    if args.out is None:
        if len(kinds) != 1:
            raise CLIError(f"name one schema to print ({', '.join(WHAT)}), or write them all with --out DIR")
        sys.stdout.write(_text(kinds[0]))
        return 0
    texts = {kind: _text(kind) for kind in kinds or WHAT}  # every schema first: nothing half-written
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for kind, text in texts.items():
        path = out / f"{kind}.json"
        path.write_text(text, encoding="utf-8")
        print(path)
    return 0
