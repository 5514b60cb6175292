"""Small commands: ``robots list``, ``paths``, ``config init|show``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    robots = sub.add_parser("robots", help="list the robots you can run")
    rsub = robots.add_subparsers(dest="robots_command", metavar="ACTION")
    lst = rsub.add_parser("list", help="list robots (project, user and shipped)")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=cmd_robots_list)
    robots.set_defaults(func=cmd_robots_list, json=False)

    paths = sub.add_parser("paths", help="show where configuration, data and logs live")
    paths.add_argument("--json", action="store_true")
    paths.set_defaults(func=cmd_paths)

    config = sub.add_parser("config", help="show or create the configuration file")
    csub = config.add_subparsers(dest="config_command", metavar="ACTION")
    init = csub.add_parser("init", help="write a commented starter config.yaml (never overwrites)")
    init.set_defaults(func=cmd_config_init)
    show = csub.add_parser("show", help="print the merged configuration and where each value came from")
    show.add_argument("--check-tools", action="store_true",
                      help="start the MCP servers to check the approval rules against their tools")
    show.set_defaults(func=cmd_config_show)
    config.set_defaults(func=cmd_config_show)


def _folder(args: argparse.Namespace) -> Path | None:
    return Path(args.folder).resolve() if getattr(args, "folder", None) else None


def cmd_robots_list(args: argparse.Namespace) -> int:
    from workspace.catalog import list_robots
    from workspace.config import load_config

    config = load_config(_folder(args))
    problems: list[str] = []
    robots = list_robots(_folder(args), problems=problems)
    for problem in problems:  # a broken robot file is named, not left out in silence
        print(f"robotlab: not listed: {problem}", file=sys.stderr)
    default_model = config.get("llm.model") or "offline demo"
    if getattr(args, "json", False):
        print(json.dumps([{"name": r.name, "description": r.description, "model": r.model or default_model,
                           "source": r.source, "path": str(r.path)} for r in robots], indent=2))
        return 0
    width = max((len(r.name) for r in robots), default=4)
    for r in robots:
        model = r.model or default_model
        print(f"{r.name:<{width}}  {r.source:<7}  {model:<24}  {r.description or ''}")
    return 0


def cmd_paths(args: argparse.Namespace) -> int:
    from workspace import paths

    table = paths.all_paths()
    if args.json:
        print(json.dumps({k: str(v) for k, v in table.items()}, indent=2))
        return 0
    width = max(len(k) for k in table)
    for key, value in table.items():
        print(f"{key:<{width}}  {value}")
    return 0


def cmd_config_init(args: argparse.Namespace) -> int:
    from workspace import paths
    from workspace.config import default_config_text

    target = paths.user_config_file()
    if target.exists():
        print(f"{target} already exists; not overwriting it.")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(default_config_text(), encoding="utf-8")
    print(f"Wrote {target}")
    return 0


def cmd_config_show(args: argparse.Namespace) -> int:
    import yaml

    from workspace.config import load_config

    config = load_config(_folder(args))
    print(yaml.safe_dump(shown_config(config.data), sort_keys=False).rstrip())
    if config.sources:
        print("\n# where values came from:")
        for key, source in sorted(config.sources.items()):
            print(f"#   {key}: {source}")
    print_approval_problems(config, folder=_folder(args), check_tools=bool(getattr(args, "check_tools", False)))
    return 0


def print_approval_problems(config: Any, *, folder: Path | None = None, check_tools: bool = False) -> None:
    """The approval policy's rules and the servers' ``autoApprove`` entries that match no tool (or could not
    be checked: servers that are not running, unless ``check_tools`` starts them)."""
    import asyncio

    from workspace import paths
    from workspace.approval import ApprovalPolicy
    from workspace.catalog import list_robots
    from workspace.errors import ConfigurationError
    from workspace.mcp.manager import MCPManager
    from workspace.mcp.policy_check import approval_problems, local_tool_names

    path = paths.approval_policy_file()
    try:
        policy = ApprovalPolicy.load(path)
    except ConfigurationError as exc:
        print(f"\n# approval policy ({path}): {exc}")
        return
    manager = MCPManager(config)

    async def check() -> list[str]:
        try:
            if check_tools:
                names = [n for n in manager.server_names() if (spec := manager.spec(n)) and not spec.disabled]
                await manager.tools_ready(names, config, wait=float(config.get("agent.mcp_startup_wait", 5.0)))
            return approval_problems(policy, manager, local=local_tool_names(r.name for r in list_robots(folder)))
        finally:
            await manager.aclose()

    problems = asyncio.run(check())
    if not problems:
        return
    print(f"\n# approval policy ({path}):")
    for problem in problems:
        print(f"#   {problem}")
    if not check_tools and any("not running" in p for p in problems):
        print("#   (robotlab config show --check-tools starts the MCP servers to check them)")


def shown_config(data: dict[str, Any]) -> dict[str, Any]:
    """The configuration as ``config show`` prints it: MCP servers' env and header values, URL
    passwords and keys, and secret-looking flags masked as ``robotlab mcp list -v`` masks them
    (the output is redacted as well, like everything the command line prints)."""
    from workspace.mcp.masking import mask_url, masked_entry

    shown = dict(data)
    servers = shown.get("mcpServers")
    if isinstance(servers, dict):
        shown["mcpServers"] = {name: masked_entry(entry) for name, entry in servers.items()}
    llm = shown.get("llm")
    if isinstance(llm, dict) and isinstance(llm.get("api_base"), str):
        from urllib.parse import urlsplit

        base = llm["api_base"]
        try:
            masked = mask_url(base) if urlsplit(base).password or urlsplit(base).query else base
        except ValueError:
            masked = "<invalid url>"
        shown["llm"] = {**llm, "api_base": masked}
    return shown
