"""``robotlab trust [DIR]``: let a folder's own .robotlab/ settings take effect (see workspace.trust)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "trust",
        help="let a folder's .robotlab/ settings (MCP servers, api_base, approval rules) take effect",
        description="A folder's .robotlab/config.yaml may start MCP servers (programs on your machine), send "
        "requests (with your provider key) to its own api_base, allow tools without asking or apply changes "
        "without review. None of that happens until you trust the folder, and again after those settings "
        "change. This command shows them and records your trust.",
    )
    p.add_argument("dir", nargs="?", help="the folder (default: --folder, else the current folder)")
    p.add_argument("--yes", "-y", action="store_true", help="trust without asking")
    p.add_argument("--revoke", action="store_true", help="forget the folder's trust")
    p.add_argument("--run-without-sandbox", choices=("on", "off"), metavar="on|off",
                   help="where no sandbox can be made on this system, let run_command run this folder's commands "
                        "without one, asking you every time (it can change the folder and reach the network); off "
                        "by default, kept in your own trust file, never in the folder")
    p.set_defaults(func=cmd_trust)


def cmd_trust(args: argparse.Namespace) -> int:
    from workspace import trust
    from workspace.cli import CLIError

    folder = Path(args.dir or getattr(args, "folder", None) or ".").resolve()
    if not folder.is_dir():
        raise CLIError(f"{folder}: no such folder")
    switch = getattr(args, "run_without_sandbox", None)
    if switch is not None:
        on = switch == "on"
        changed = trust.set_run_without_sandbox(folder, on)
        if on:
            print(f"{folder}: where no sandbox can be made, run_command runs its commands WITHOUT one, directly in the "
                  "folder (they can change its files and reach the network), and asks you before every command"
                  + ("." if changed else " (it already did)."))
        else:
            print(f"{folder}: commands run only in a sandbox" + ("." if changed else " (they already did)."))
        return 0
    if args.revoke:
        print(f"{folder}: trust " + ("revoked." if trust.revoke(folder) else "was not given; nothing to do."))
        return 0
    settings = trust.needs_trust(folder)
    if not settings:
        print(f"{folder}: its .robotlab/ has nothing that needs trust; its settings already apply.")
        return 0
    if trust.is_trusted(folder, settings):
        print(f"{folder}: already trusted with these settings.")
        return 0
    print(f"{folder} asks for:")
    for line in trust.describe(settings):
        print(f"  - {line}")
    if not args.yes:
        if not sys.stdin.isatty():
            raise CLIError("not trusted: run again with --yes to trust these settings")
        try:
            answer = input("Trust this folder? Only if you know who wrote these settings. [y/N] ")
        except (EOFError, KeyboardInterrupt):
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("Not trusted; the settings above stay unused.")
            return 1
    try:
        trust.trust(folder, expected=settings)
    except trust.TrustChanged as exc:
        raise CLIError(str(exc)) from None
    print(f"Trusted. Its settings apply from now on (until they change). Undo: robotlab trust --revoke {folder}")
    return 0


def warn_if_untrusted(config: Any) -> None:
    """One message on stderr when the folder's settings are withheld (commands that run robots call it)."""
    if config is not None and getattr(config, "withheld", None) and config.folder is not None:
        from workspace.trust import untrusted_message

        print(f"robotlab: {untrusted_message(config.folder, config.withheld)}", file=sys.stderr)
