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
    call.add_argument("--yes", "-y", action="store_true",
                      help="approve the server's sampling requests (a completion from the configured model) without "
                      "asking; its requests for input get their defaults")
    call.add_argument("--model", help="the model that answers the server's sampling requests (default: the "
                      "configured one)")
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

    login = msub.add_parser(
        "login", help="sign in to a remote MCP server (OAuth) in your browser",
        description="Sign in to a streamable HTTP or SSE server that requires OAuth: its sign-in page opens in your "
        "browser (its address is printed too, to open elsewhere), and the tokens are kept in your system's keyring.",
    )
    login.add_argument("server")
    login.add_argument("--no-browser", action="store_true", help="only print the sign-in page's address")
    login.set_defaults(func=cmd_login)
    logout = msub.add_parser("logout", help="forget the sign-in of a remote MCP server (its tokens in the keyring)")
    logout.add_argument("server")
    logout.set_defaults(func=cmd_logout)

    for action, enabled in (("enable", True), ("disable", False)):
        p = msub.add_parser(action, help=f"{action} one tool of a server for every robot (remembered)")
        p.add_argument("server")
        p.add_argument("tool", help="the tool's name on the server (or server__tool)")
        p.set_defaults(func=cmd_toggle, enabled=enabled)

    serve = msub.add_parser(
        "serve", help="serve this workspace's tools (built-ins and robots as ask_<robot>) over MCP",
        description="Expose the workspace's own tools to MCP clients: the built-in tools and every robot as a "
        "tool ask_<robot>(message). stdio by default (for a client's mcpServers entry: command `robotlab`, "
        "args [mcp, serve]); --http PORT serves streamable HTTP on http://127.0.0.1:PORT/mcp. "
        "The file-writing tools (write_file, edit_file, apply_patch, create_file, delete_file, rename_file) are "
        "not served: their changes wait for review in the app or `robotlab run`, which a served call cannot "
        "offer. The read-only file tools (read_file, list_files, search_files) work in --folder.",
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
        raise CLIError(_unknown_servers(manager, unknown))
    if not names:
        from workspace import paths

        print(f"No MCP servers configured. Add them under mcpServers in {paths.user_config_file()}, or import "
              "another client's: robotlab mcp import ~/.cursor/mcp.json --write")
        return 0
    try:
        if not args.no_connect:
            # Servers whose names sanitise alike share tool names: start them too, so the names shown
            # are the ones a robot using them all gets.
            starting = names + [n for n in _look_alikes(manager, names) if n not in names]
            await asyncio.gather(*(manager.start(n) for n in starting if not manager.status(n).disabled))
        statuses = [_with_model_names(manager, manager.status(n)) for n in names]
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


def _unknown_servers(manager: MCPManager, unknown: list[str]) -> str:
    withheld = [n for n in unknown if n in manager.withheld_servers()]
    if withheld:
        return manager.unknown_message(withheld[0])
    return (f"unknown MCP server(s): {', '.join(unknown)}. Configured: "
            f"{', '.join(manager.server_names()) or '(none)'}")


def _look_alikes(manager: MCPManager, names: list[str]) -> list[str]:
    """Other configured servers whose tool names start with the same prefix as one of ``names``."""
    from workspace.mcp import naming

    prefixes = {naming.server_prefix(n) for n in names}
    return [n for n in manager.server_names() if naming.server_prefix(n) in prefixes]


def _with_model_names(manager: MCPManager, status: ServerStatus) -> ServerStatus:
    """``status`` with each tool under the name the model gets (unique across all the servers, as a
    robot with ``mcp: all`` sees them; see MCPManager.tools_for)."""
    import dataclasses

    if not status.tools:
        return status
    names = manager.model_tool_names().get(status.name, {})
    tools = tuple(dataclasses.replace(t, name=names.get(t.original, t.name)) for t in status.tools)
    return dataclasses.replace(status, tools=tools)


async def _extras(manager: MCPManager, name: str) -> dict[str, Any]:
    from workspace.errors import MCPError

    out: dict[str, Any] = {}
    for key, fetch in (("prompts", manager.list_prompts), ("resources", manager.list_resources)):
        try:
            out[key] = await fetch(name)
        except MCPError as exc:
            out[key] = {"error": str(exc)}
    return out


def _flags(annotations: Any, *, trusted: bool = True) -> str:
    marks = []
    if annotations.get("readOnlyHint"):
        # An untrusted server's claim: its tools are asked about all the same (trustAnnotations).
        marks.append("read-only" if trusted else "read-only as claimed, asked about")
    elif annotations.get("destructiveHint"):
        marks.append("destructive")
    if annotations.get("openWorldHint"):
        marks.append("open-world")
    return ", ".join(marks)


def _print_status(status: ServerStatus, extras: dict[str, Any], *, verbose: bool) -> None:
    state = "disabled" if status.disabled else str(status.state)
    if status.needs_sign_in and not status.is_ready:
        state = status.auth.replace("-", " ") if status.auth else state
    head = f"{status.name}  [{state}]  {status.transport}: {status.target}"
    if status.server_info:
        head += f"  ({status.server_info})"
    print(head)
    if status.reason and not status.disabled:
        print(f"  reason: {status.reason}")
    if status.tools_note:
        print(f"  tools: {status.tools_note}")
    for tool in status.tools:
        flags = _flags(tool.annotations, trusted=status.trust_annotations or tool.auto_approve)
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
    from workspace.mcp.results import output_text

    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        raise CLIError(f"the arguments are not valid JSON ({exc.msg} at column {exc.colno}); give a JSON object "
                       "like '{\"message\": \"hi\"}'") from None
    if not isinstance(arguments, dict):
        raise CLIError("the arguments must be a JSON object like '{\"message\": \"hi\"}'")
    manager = _manager(args)
    _answer_requests_here(manager, args)
    try:
        if args.server not in manager.server_names():
            raise CLIError(_unknown_servers(manager, [args.server]))
        status = await manager.start(args.server)
        if status.needs_sign_in and sys.stdin.isatty():  # a person is here: sign in now, then call
            print(f"MCP server '{args.server}' needs you to sign in.", file=sys.stderr)
            status = await _sign_in(manager, args.server, browser=True)
        if not status.is_ready:
            raise CLIError(f"MCP server '{args.server}' did not start: {status.reason}", code=1)
        tool = _resolve_tool(args.server, status, args.tool)
        if tool is None:
            raise CLIError(_no_such_tool(args.server, status, args.tool))
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


def _answer_requests_here(manager: MCPManager, args: argparse.Namespace) -> None:
    """A call outside a run: the server's sampling and elicitation requests are asked in the terminal
    (approved with --yes, denied with a message naming it when nobody is there), sampling answered by
    the configured model (or --model)."""
    from workspace.approval import ApprovalDecision, ApprovalRequest
    from workspace.cli.server_requests import ask_server_request
    from workspace.config import load_config
    from workspace.providers import provider_for

    yes = bool(getattr(args, "yes", False))

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        decision = await ask_server_request(request, yes=yes, out=sys.stderr if getattr(args, "json", False)
                                            else sys.stdout)
        if not decision.approved and decision.reason not in ("decline", "cancel"):
            print(f"robotlab: {decision.reason}", file=sys.stderr)
        elif not decision.approved:
            print(f"robotlab: {request.server}'s request for input: {decision.reason}d", file=sys.stderr)
        return decision

    manager.requests.fallback_ask = ask
    config = load_config(_folder(args))
    model = getattr(args, "model", None) or str(config.get("llm.model", "") or "")
    try:
        manager.requests.fallback_provider = provider_for(model, api_base=config.get("llm.api_base"), config=config)
    except Exception as exc:  # no usable model: sampling requests are refused with the reason
        print(f"note: sampling requests cannot be answered: {exc}", file=sys.stderr)


def _resolve_tool(server: str, status: ServerStatus, tool: str) -> str | None:
    """The server's own name of ``tool``: given as that name, as ``server__tool``, or as the
    (hashed) name `robotlab mcp list` shows when another server's tools sanitise alike."""
    from workspace.mcp import naming

    originals = {t.original for t in status.tools}
    if tool in originals:
        return tool
    match = next((t.original for t in status.tools if t.name == tool), None)
    if match is not None:
        return match
    prefix = naming.server_prefix(server)
    if tool.startswith(prefix) and tool[len(prefix):] in originals:
        return tool[len(prefix):]
    for t in status.tools:  # the form a look-alike server's tool of the same name pushes it to
        if naming.tool_name(server, t.original, taken={t.name}) == tool:
            return t.original
    return None


def _no_such_tool(server: str, status: ServerStatus, tool: str) -> str:
    originals = sorted(t.original for t in status.tools)
    return f"MCP server '{server}' has no tool '{tool}'. Its tools: {', '.join(originals) or '(none)'}"


# -- login / logout ------------------------------------------------------------------------------
def terminal_opener(*, browser: bool) -> Any:
    """Shows a sign-in page's address (on stderr) and opens it in the browser (unless ``browser`` is false)."""

    def open_page(server: str, url: str) -> None:
        print(f"Sign in to {server} on this page (it opens in your browser; waiting up to 5 minutes):\n  {url}",
              file=sys.stderr, flush=True)
        if browser:
            import webbrowser

            try:
                webbrowser.open(url)
            except Exception as exc:  # no browser here: the address is printed
                print(f"note: could not open a browser ({exc}); open the address above", file=sys.stderr)

    return open_page


async def _sign_in(manager: MCPManager, name: str, *, browser: bool) -> ServerStatus:
    manager.sign_in_opener = terminal_opener(browser=browser)
    return await manager.sign_in(name)


def cmd_login(args: argparse.Namespace) -> int:
    return asyncio.run(_login(args))


async def _login(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError

    manager = _manager(args)
    try:
        if args.server not in manager.server_names():
            raise CLIError(_unknown_servers(manager, [args.server]))
        status = await _sign_in(manager, args.server, browser=not args.no_browser)
        if status.auth is None and status.is_ready:
            print(f"MCP server '{args.server}' is up and did not ask for a sign-in.")
            return 0
        if not status.is_ready:
            raise CLIError(f"Signing in to MCP server '{args.server}' did not work: {status.reason}", code=1)
        print(f"Signed in to {args.server} ({len(status.tools)} tools); the sign-in is kept in your system's keyring.")
        return 0
    finally:
        await manager.aclose()


def cmd_logout(args: argparse.Namespace) -> int:
    return asyncio.run(_logout(args))


async def _logout(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError

    manager = _manager(args)
    try:
        if args.server not in manager.server_names():
            raise CLIError(_unknown_servers(manager, [args.server]))
        await manager.sign_out(args.server)
    finally:
        await manager.aclose()
    print(f"Signed out of {args.server}: its tokens are gone from the keyring.")
    return 0


# -- import ----------------------------------------------------------------------------------
def cmd_import(args: argparse.Namespace) -> int:
    import yaml

    from workspace import paths
    from workspace.mcp.edit import keep_secrets_out
    from workspace.mcp.importers import merge_into_file, merge_text, read_client_file
    from workspace.mcp.masking import masked_entry
    from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

    result = read_client_file(Path(args.file), format=args.format)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if not result.servers:
        print(f"{result.path}: no MCP servers to import")
        return 0
    if not args.write:
        print(f"# {len(result.servers)} server(s) from {result.path} ({result.format} format); "
              "add --write to save them in your configuration (env values and headers shown as *** go to the "
              "keyring, never into the file)")
        shown = {name: masked_entry(entry) for name, entry in result.servers.items()}
        print(yaml.safe_dump({"mcpServers": shown}, sort_keys=False, allow_unicode=True).rstrip())
        return 0
    target = Path(args.to).expanduser() if args.to else paths.user_config_file()
    # Only the servers that will be written have their secrets stored (a kept server's entries stay as they are).
    existing = read_text_bounded(target, CONFIG_FILE_BYTES, "configuration file") if target.exists() else ""
    planned = merge_text(existing, result.servers, replace=args.replace, source=str(target))[1]
    writing = set(planned.added) | set(planned.replaced)
    stored, kept = keep_secrets_out({k: v for k, v in result.servers.items() if k in writing})
    servers = {name: stored.get(name, entry) for name, entry in result.servers.items()}
    report = merge_into_file(target, servers, replace=args.replace)
    for line in kept:
        print(f"note: {line}", file=sys.stderr)
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
    return asyncio.run(_toggle(args))


async def _toggle(args: argparse.Namespace) -> int:
    """Switch a tool on or off; the name is checked against the server's tools when it can be started."""
    from workspace.cli import CLIError

    manager = _manager(args)
    _answer_requests_here(manager, args)
    try:
        if args.server not in manager.server_names():
            raise CLIError(_unknown_servers(manager, [args.server]))
        status = await manager.start(args.server)
        tool = args.tool
        unchecked = None
        if status.is_ready:
            original = _resolve_tool(args.server, status, tool)
            if original is None:
                # Switching on a name that is recorded as off (a tool the server no longer has) tidies up.
                if not (args.enabled and not manager.is_tool_enabled(args.server, tool)):
                    raise CLIError(_no_such_tool(args.server, status, tool))
            else:
                tool = original
        else:
            why = status.reason or ("it is disabled in the configuration" if status.disabled else str(status.state))
            unchecked = f"the server could not be started to check that it has a tool '{tool}' ({why})"
        manager.set_tool_enabled(args.server, tool, args.enabled)
    finally:
        await manager.aclose()
    print(f"{args.server}: tool '{tool}' {'enabled' if args.enabled else 'disabled'} for every robot")
    if unchecked:
        print(f"note: {unchecked}; the setting is kept as given", file=sys.stderr)
    return 0


# -- serve -------------------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.mcp.server import serve_http, serve_stdio
    from workspace.surface import workspace_prompts, workspace_resources, workspace_tools

    folder_arg = args.serve_folder or getattr(args, "folder", None)
    folder = Path(folder_arg).resolve() if folder_arg else None
    if folder is not None and not folder.is_dir():
        raise CLIError(f"--folder {folder_arg}: no such folder")
    tools = workspace_tools(folder, robots=not args.no_robots, patterns=args.tools)
    if not tools:
        from workspace.surface import writes_files
        from workspace.tools.registry import builtin_tools
        from workspace.tools.selection import filter_tools

        asked = [t.name for t in filter_tools(builtin_tools(), list(args.tools or [])) if writes_files(t)]
        if asked:
            raise CLIError(f"no tools to serve: {', '.join(asked)} cannot be served (file changes need review in "
                           "the app or `robotlab run`); check --tools")
        raise CLIError("no tools to serve (check --tools)")
    prompts = workspace_prompts(folder) if not args.no_robots else []
    db = getattr(args, "db", None)
    resources = workspace_resources(Path(db) if db else None)
    try:
        if args.http is not None:
            if not 0 < args.http < 65536:
                raise CLIError(f"--http {args.http}: a port is a number from 1 to 65535")
            print(f"Serving {len(tools)} tools on http://127.0.0.1:{args.http}/mcp (Ctrl+C stops)", file=sys.stderr)
            asyncio.run(serve_http(tools, port=args.http, folder=folder, prompts=prompts, resources=resources))
        else:
            asyncio.run(serve_stdio(tools, folder=folder, prompts=prompts, resources=resources))
    except KeyboardInterrupt:
        return 0
    return 0
