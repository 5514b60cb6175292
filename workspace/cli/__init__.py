"""The ``robotlab`` command line (headless parts; the window lives in ``ui``).

Each sub-command module exposes ``register(subparsers)``; :data:`COMMAND_MODULES`
lists them, so adding a command never touches the others.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Mapping, Sequence

from workspace.version import __version__

COMMAND_MODULES = [
    "workspace.cli.run",
    "workspace.cli.compare",
    "workspace.cli.chat",
    "workspace.cli.misc",
    "workspace.cli.network",
    "workspace.cli.mcp",
    "workspace.cli.threads",
    "workspace.cli.trust",
    "workspace.cli.schema",
    "workspace.cli.changes",
    "workspace.cli.skills",
    "workspace.cli.eval",
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
    """Run one command; everything it prints (stdout, stderr, ``--json`` lines, logs, a crash's
    traceback) goes through :func:`workspace.secrets.redact` first."""
    from workspace.secrets import install_output_redaction

    restore = install_output_redaction()
    try:
        return _main(argv)
    finally:
        restore()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0
    from workspace.errors import Error
    from workspace.logsetup import setup_logging

    setup_logging()  # warnings on stderr, secrets redacted

    warn_unknown_env()
    try:
        status = int(func(args) or 0)
        # Flush here, so a reader that went away shows up below and not as "Exception ignored" at exit.
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return _stdout_closed()
    except CLIError as exc:
        print(f"robotlab: {exc}", file=sys.stderr)
        return exc.code
    except Error as exc:
        print(f"robotlab: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C, also at a prompt: the run is cancelled and nothing that was still waiting for a
        # decision is applied. 130 = 128 + SIGINT, what shells report for an interrupted program.
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        print("\nCancelled.", file=sys.stderr)
        return 130


#: Exit status when the reader of stdout went away (``robotlab robots list | head -1``):
#: 141 = 128 + SIGPIPE, what a shell reports for a program that SIGPIPE ended (``yes | head -1``),
#: so ``set -o pipefail`` scripts see the same status as with any other command-line tool.
EXIT_BROKEN_PIPE = 141


def _stdout_closed() -> int:
    """The recipe of the Python docs ("Note on SIGPIPE"): point stdout at the null device so the
    interpreter's final flush cannot fail again, and exit quietly (no traceback, no message)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def unknown_env_variables(env: Mapping[str, str] | None = None) -> list[str]:
    """``ROBOT_LAB_`` variables the configuration ignores: without ``__`` between section and key
    (``ROBOT_LAB_LLM=x``, ``ROBOT_LAB_LLM_MODEL=x``), :func:`workspace.config.load_config` skips them."""
    from workspace.config import ENV_PREFIX

    env = os.environ if env is None else env
    return sorted(name for name in env
                  if name.startswith(ENV_PREFIX) and "__" not in name[len(ENV_PREFIX):])


def warn_unknown_env(env: Mapping[str, str] | None = None) -> None:
    """Say on stderr which ``ROBOT_LAB_`` variables have no effect, and the form that works."""
    from workspace.config import DEFAULTS, ENV_PREFIX, SECTION_ALIASES

    sections = sorted({*DEFAULTS, *SECTION_ALIASES} - {"mcpServers"}, key=len, reverse=True)
    for name in unknown_env_variables(env):
        rest = name[len(ENV_PREFIX):].lower()
        hint = ""
        for section in sections:
            key = rest[len(section) + 1:]
            if rest.startswith(section + "_") and key:
                hint = f" (did you mean {ENV_PREFIX}{section.upper()}__{key.upper()}?)"
                break
        print(f"robotlab: warning: the environment variable {name} is ignored: configuration variables are "
              f"named {ENV_PREFIX}<SECTION>__<KEY> (two underscores), e.g. {ENV_PREFIX}LLM__MODEL{hint}",
              file=sys.stderr)
