"""``robotlab mcp``: list servers and their tools, call a tool, import other clients' servers,
switch tools on and off, and serve the workspace's own tools over MCP."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workspace.mcp.manager import MCPManager
    from workspace.mcp.status import ServerStatus


def register(sub: Any) -> None:
    mcp = sub.add_parser(
        "mcp", help="MCP servers: list, call, import, serve",
        description="Work with MCP servers (the mcpServers section of the configuration; `robotlab paths` shows "
        "where the file is), and serve this workspace's own tools over MCP.",
    )
    msub = mcp.add_subparsers(dest="mcp_command", metavar="ACTION")

    lst = msub.add_parser("list", help="show the configured servers, their status and their tools")
    lst.add_argument("servers", nargs="*", help="only these servers (default: all)")
    lst.add_argument("--json", action="store_true", help="print JSON (with prompts and resources)")
    lst.add_argument("--no-connect", action="store_true", help="do not start the servers; show the configuration")
    lst.add_argument("-v", "--verbose", action="store_true", help="also list prompts, resources and stderr")
    lst.set_defaults(func=cmd_list)

    call = msub.add_parser("call", help="call one tool of a server and print the result")
    call.add_argument("server")
    call.add_argument("tool", help="the tool's name on the server (or server__tool)")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments as a JSON object (default {})")
    call.add_argument("--json", action="store_true", help="print the full result (content blocks) as JSON")
    call.add_argument("--timeout", type=float, help="seconds to wait for the answer (default: the server's timeout)")
    call.set_defaults(func=cmd_call)

    imp = msub.add_parser(
        "import", help="read the MCP servers of Claude Desktop, Cursor, VS Code, Zed or Goose",
        description="Read another client's MCP configuration (Claude Desktop / Cursor / Cline `mcpServers`, "
        "VS Code `servers`, Zed `context_servers`, Goose `extensions`) and show it in our mcpServers format; "
        "with --write, add it to your configuration file (comments and other settings are kept).",
    )
    imp.add_argument("file", help="the other client's configuration file (JSON or YAML)")
    imp.add_argument("--write", action="store_true", help="add the servers to the user configuration file")
    imp.add_argument("--replace", action="store_true", help="replace servers that already exist (default: keep)")
    imp.add_argument("--format", choices=("mcpServers", "vscode", "zed", "goose"),
                     help="the file's format (default: detected)")
    imp.add_argument("--to", help="the configuration file to write (default: the user configuration file)")
    imp.set_defaults(func=cmd_import)

    for action, enabled in (("enable", True), ("disable", False)):
        p = msub.add_parser(action, help=f"{action} one tool of a server for every robot (remembered)")
        p.add_argument("server")
        p.add_argument("tool", help="the tool's name on the server (or server__tool)")
        p.set_defaults(func=cmd_toggle, enabled=enabled)

    serve = msub.add_parser(
        "serve", help="serve this workspace's tools (built-ins and robots as ask_<robot>) over MCP",
        description="Expose the workspace's own tools to MCP clients: the built-in tools and every robot as a "
        "tool ask_<robot>(message). stdio by default (for a client's mcpServers entry: command `robotlab`, "
        "args [mcp, serve]); --http PORT serves streamable HTTP on http://127.0.0.1:PORT/mcp.",
    )
    serve.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT")
    serve.add_argument("--folder", dest="serve_folder", help="the folder the file tools work in")
    serve.add_argument("--tools", nargs="+", metavar="NAME",
                       help="expose only these tools (names or glob patterns, e.g. 'ask_*' read_file)")
    serve.add_argument("--no-robots", action="store_true", help="do not expose robots as ask_<robot> tools")
    serve.set_defaults(func=cmd_serve)

    mcp.set_defaults(func=cmd_list, servers=[], json=False, no_connect=False, verbose=False)


def _folder(args: argparse.Namespace) -> Path | None:
    return Path(args.folder).resolve() if getattr(args, "folder", None) else None


def _manager(args: argparse.Namespace) -> MCPManager:
    from workspace.cli.trust import warn_if_untrusted
    from workspace.config import load_config
    from workspace.mcp.manager import MCPManager

    folder = _folder(args)
    config = load_config(folder)
    warn_if_untrusted(config)
    return MCPManager(config, folder=folder)


# -- list ------------------------------------------------------------------------------------
def cmd_list(args: argparse.Namespace) -> int:
    return asyncio.run(_list(args))


async def _list(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.mcp.status import ServerState

    manager = _manager(args)
    names = list(args.servers) or manager.server_names()
    unknown = [n for n in names if n not in manager.server_names()]
    if unknown:
        raise CLIError(f"unknown MCP server(s): {', '.join(unknown)}. Configured: "
                       f"{', '.join(manager.server_names()) or '(none)'}")
    if not names:
        from workspace import paths

        print(f"No MCP servers configured. Add them under mcpServers in {paths.user_config_file()}, or import "
              "another client's: robotlab mcp import ~/.cursor/mcp.json --write")
        return 0
    try:
        if not args.no_connect:
            await asyncio.gather(*(manager.start(n) for n in names if not manager.status(n).disabled))
        statuses = [manager.status(n) for n in names]
        extras: dict[str, dict[str, Any]] = {}
        if (args.json or args.verbose) and not args.no_connect:
            for status in statuses:
                if status.is_ready:
                    extras[status.name] = await _extras(manager, status.name)
        if args.json:
            out = []
            for status in statuses:
                item = status.to_dict()
                item.update(extras.get(status.name, {}))
                out.append(item)
            print(json.dumps(out, indent=2, ensure_ascii=False))
        else:
            for status in statuses:
                _print_status(status, extras.get(status.name, {}), verbose=args.verbose)
    finally:
        await manager.aclose()
    failed = [s for s in statuses if s.state is ServerState.FAILED]
    return 1 if failed else 0


async def _extras(manager: MCPManager, name: str) -> dict[str, Any]:
    from workspace.errors import MCPError

    out: dict[str, Any] = {}
    for key, fetch in (("prompts", manager.list_prompts), ("resources", manager.list_resources)):
        try:
            out[key] = await fetch(name)
        except MCPError as exc:
            out[key] = {"error": str(exc)}
    return out


def _flags(annotations: Any) -> str:
    marks = []
    if annotations.get("readOnlyHint"):
        marks.append("read-only")
    elif annotations.get("destructiveHint"):
        marks.append("destructive")
    if annotations.get("openWorldHint"):
        marks.append("open-world")
    return ", ".join(marks)


def _print_status(status: ServerStatus, extras: dict[str, Any], *, verbose: bool) -> None:
    state = "disabled" if status.disabled else str(status.state)
    head = f"{status.name}  [{state}]  {status.transport}: {status.target}"
    if status.server_info:
        head += f"  ({status.server_info})"
    print(head)
    if status.reason and not status.disabled:
        print(f"  reason: {status.reason}")
    for tool in status.tools:
        flags = _flags(tool.annotations)
        notes = [n for n in (flags, "auto-approve" if tool.auto_approve else "",
                             "off" if not tool.enabled else "") if n]
        suffix = f"  ({'; '.join(notes)})" if notes else ""
        summary = (tool.description or "").strip().splitlines()[0] if tool.description else ""
        if len(summary) > 70:
            summary = summary[:69] + "…"
        print(f"  {tool.name}{suffix}  {summary}".rstrip())
    if verbose:
        for prompt in extras.get("prompts", []) if isinstance(extras.get("prompts"), list) else []:
            print(f"  prompt {prompt.get('name')}  {prompt.get('description') or ''}".rstrip())
        for resource in extras.get("resources", []) if isinstance(extras.get("resources"), list) else []:
            print(f"  resource {resource.get('uri')}  {resource.get('name') or ''}".rstrip())
        for line in status.stderr[-10:]:
            print(f"  stderr: {line}")
    elif status.state == "failed" and status.stderr and status.reason and "stderr" not in status.reason:
        for line in status.stderr[-3:]:
            print(f"  stderr: {line}")


# -- call ------------------------------------------------------------------------------------
def cmd_call(args: argparse.Namespace) -> int:
    return asyncio.run(_call(args))


async def _call(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.mcp import naming
    from workspace.mcp.results import output_text

    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        raise CLIError(f"the arguments are not valid JSON ({exc.msg} at column {exc.colno}); give a JSON object "
                       "like '{\"message\": \"hi\"}'") from None
    if not isinstance(arguments, dict):
        raise CLIError("the arguments must be a JSON object like '{\"message\": \"hi\"}'")
    manager = _manager(args)
    try:
        if args.server not in manager.server_names():
            raise CLIError(f"unknown MCP server '{args.server}'. Configured: "
                           f"{', '.join(manager.server_names()) or '(none)'}")
        status = await manager.start(args.server)
        if not status.is_ready:
            raise CLIError(f"MCP server '{args.server}' did not start: {status.reason}", code=1)
        tool = args.tool
        prefix = naming.server_prefix(args.server)
        originals = {t.original for t in status.tools}
        if tool not in originals:
            match = next((t.original for t in status.tools if t.name == tool), None)
            if match is None and tool.startswith(prefix):
                match = tool[len(prefix):] if tool[len(prefix):] in originals else None
            if match is None:
                raise CLIError(f"MCP server '{args.server}' has no tool '{tool}'. Its tools: "
                               f"{', '.join(sorted(originals)) or '(none)'}")
            tool = match
        output = await manager.call_tool(args.server, tool, arguments, timeout=args.timeout)
    finally:
        await manager.aclose()
    if args.json:
        print(json.dumps(output.raw if output.raw is not None else {"data": output.data}, indent=2,
                         ensure_ascii=False))
    else:
        text = output_text(output.data)
        (sys.stderr if output.is_error else sys.stdout).write(text + ("\n" if not text.endswith("\n") else ""))
    return 1 if output.is_error else 0


# -- import ----------------------------------------------------------------------------------
def cmd_import(args: argparse.Namespace) -> int:
    import yaml

    from workspace import paths
    from workspace.mcp.importers import merge_into_file, read_client_file

    result = read_client_file(Path(args.file), format=args.format)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if not result.servers:
        print(f"{result.path}: no MCP servers to import")
        return 0
    if not args.write:
        print(f"# {len(result.servers)} server(s) from {result.path} ({result.format} format); "
              "add --write to save them in your configuration")
        print(yaml.safe_dump({"mcpServers": result.servers}, sort_keys=False, allow_unicode=True).rstrip())
        return 0
    target = Path(args.to).expanduser() if args.to else paths.user_config_file()
    report = merge_into_file(target, result.servers, replace=args.replace)
    if report.added:
        print(f"added to {target}: {', '.join(report.added)}")
    if report.replaced:
        print(f"replaced in {target}: {', '.join(report.replaced)}")
    if report.skipped:
        print(f"kept the existing {', '.join(report.skipped)} (use --replace to overwrite)")
    if report.rewritten:
        print(f"note: {target} was rewritten (its comments are in {target}.bak)", file=sys.stderr)
    return 0


# -- enable / disable --------------------------------------------------------------------------
def cmd_toggle(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError

    manager = _manager(args)
    if args.server not in manager.server_names():
        raise CLIError(f"unknown MCP server '{args.server}'. Configured: "
                       f"{', '.join(manager.server_names()) or '(none)'}")
    manager.set_tool_enabled(args.server, args.tool, args.enabled)
    print(f"{args.server}: tool '{args.tool}' {'enabled' if args.enabled else 'disabled'} for every robot")
    return 0


# -- serve -------------------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.mcp.server import serve_http, serve_stdio, workspace_tools

    folder_arg = args.serve_folder or getattr(args, "folder", None)
    folder = Path(folder_arg).resolve() if folder_arg else None
    if folder is not None and not folder.is_dir():
        raise CLIError(f"--folder {folder_arg}: no such folder")
    tools = workspace_tools(folder, robots=not args.no_robots, patterns=args.tools)
    if not tools:
        raise CLIError("no tools to serve (check --tools)")
    try:
        if args.http is not None:
            if not 0 < args.http < 65536:
                raise CLIError(f"--http {args.http}: a port is a number from 1 to 65535")
            print(f"Serving {len(tools)} tools on http://127.0.0.1:{args.http}/mcp (Ctrl+C stops)", file=sys.stderr)
            asyncio.run(serve_http(tools, port=args.http, folder=folder))
        else:
            asyncio.run(serve_stdio(tools, folder=folder))
    except KeyboardInterrupt:
        return 0
    return 0
