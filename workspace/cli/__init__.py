"""The ``robotlab`` command line (headless parts; the window lives in ``ui``).

Each sub-command module exposes ``register(subparsers)``; :data:`COMMAND_MODULES`
lists them, so adding a command never touches the others.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from workspace import __version__

COMMAND_MODULES = [
    "workspace.cli.run",
    "workspace.cli.misc",
    "workspace.cli.network",
    "workspace.cli.mcp",
    "workspace.cli.threads",
    "workspace.cli.trust",
]


class CLIError(Exception):
    """A user-facing error: printed without a traceback, exit status 2 (or ``code``)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robotlab",
        description="RobotLab Workspace: chat with robots (LLM agents), run networks of robots, "
        "use MCP servers, and review every change before it touches your files. "
        "With no command, opens the desktop window.",
    )
    parser.add_argument("--version", action="version", version=f"robotlab-workspace {__version__}")
    parser.add_argument("--folder", help="the folder robots may read and propose changes in (default: none)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0
    from workspace.errors import Error

    try:
        return int(func(args) or 0)
    except CLIError as exc:
        print(f"robotlab: {exc}", file=sys.stderr)
        return exc.code
    except Error as exc:
        print(f"robotlab: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("robotlab: interrupted", file=sys.stderr)
        return 130
