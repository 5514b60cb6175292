"""What MCP servers ask of the person, asked in the terminal: sampling and elicitation.

``robotlab run``, ``network run`` and ``mcp call`` answer a server's ``sampling/createMessage``
and ``elicitation/create`` here (the window shows a card instead):

* **sampling**: the messages the server wants sent and the model that answers are shown;
  ``[y]es / [n]o / [e]dit / [a]lways for this server``; ``--yes`` approves without asking.
* **elicitation**: ``[y]es`` fills in the form one field at a time (each question built from
  the schema: its title and description, the default in brackets, the choices numbered; an
  answer that does not fit says why and asks again), ``[d]ecline`` or ``[c]ancel``. ``--yes``
  accepts the defaults when they are a complete answer (no required field left empty).

With nobody at a terminal (stdin is not one) and no ``--yes``, sampling is denied and
elicitation declined, with a message that names ``--yes`` (and the server's ``sampling: allow``).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from workspace.approval import ApprovalDecision, ApprovalRequest
from workspace.cli.render import printable
from workspace.mcp.requests import ELICITATION, SAMPLING


def is_server_request(request: ApprovalRequest) -> bool:
    return request.tool in (SAMPLING, ELICITATION)


Read = Callable[[str], Awaitable[str]]


async def ask_server_request(request: ApprovalRequest, *, yes: bool, out: TextIO | None = None,
                             interactive: bool | None = None, read: Read | None = None) -> ApprovalDecision:
    """The person's answer to a server's sampling or elicitation request (see the module). ``read(prompt)``
    asks for a line (default: standard input, the prompt on ``out``); end of input raises EOFError."""
    stream = out if out is not None else sys.stdout
    tty = sys.stdin.isatty() if interactive is None else interactive

    async def line(prompt: str) -> str:
        from workspace.cli.review import read_terminal_line

        return await read_terminal_line(prompt, out=stream)

    reader = read or line
    if request.tool == SAMPLING:
        return await _sampling(request, yes=yes, out=stream, interactive=tty, read=reader)
    return await _elicitation(request, yes=yes, out=stream, interactive=tty, read=reader)


# -- sampling -------------------------------------------------------------------------------------------
def describe_sampling(request: ApprovalRequest) -> str:
    data = request.input if isinstance(request.input, dict) else {}
    lines = [f"{request.server or 'An MCP server'} asks for a completion from {data.get('model', 'the model')} "
             f"(sampling), during {request.robot or 'a call'}:"]
    if data.get("systemPrompt"):
        lines.append(f"  system: {printable(str(data['systemPrompt']))}")
    for message in data.get("messages") or []:
        if isinstance(message, dict):
            text = printable(str(message.get("text") or "")).replace("\n", "\n    ")
            lines.append(f"  [{message.get('role', 'user')}] {text}")
    if data.get("maxTokens"):
        lines.append(f"  (an answer of at most {data['maxTokens']} tokens)")
    return "\n".join(lines)


async def _sampling(request: ApprovalRequest, *, yes: bool, out: TextIO, interactive: bool,
                    read: Read) -> ApprovalDecision:
    server = request.server or "the server"
    if yes:
        return ApprovalDecision(approved=True, reason="--yes")
    if not interactive:
        return ApprovalDecision(approved=False, reason=(
            f"{server} asked for a completion from the model (sampling) and nobody is at a terminal to approve it; "
            f"rerun with --yes to approve it, or set mcpServers.{server}.sampling: allow"))
    out.write("\n" + describe_sampling(request) + "\n")
    edited: dict[str, Any] | None = None
    while True:
        try:
            answer = (await read("Approve? [y]es / [n]o / [e]dit / [a]lways for this server: ")).strip().lower()
        except EOFError:
            return ApprovalDecision(approved=False, reason="no answer in the terminal (end of input)")
        if answer in ("y", "yes"):
            return ApprovalDecision(approved=True, input=edited)
        if answer in ("a", "always"):
            return ApprovalDecision(approved=True, input=edited, scope="server")
        if answer in ("e", "edit"):
            try:
                edited = await _edit_sampling(edited or dict(request.input or {}), out, read)
            except EOFError:
                return ApprovalDecision(approved=False, reason="no answer in the terminal (end of input)")
            continue
        if answer in ("n", "no", ""):
            try:
                reason = (await read("Reason (sent to the server): ")).strip()
            except EOFError:
                reason = ""
            return ApprovalDecision(approved=False, reason=reason or "denied in the terminal")
        out.write("Answer y, n, e or a.\n")


async def _edit_sampling(data: dict[str, Any], out: TextIO, read: Read) -> dict[str, Any]:
    """Each message's new text (Enter keeps it) and the token limit."""
    messages = []
    for index, message in enumerate(data.get("messages") or [], start=1):
        if not isinstance(message, dict):
            continue
        text = await read(f"Message {index} [{message.get('role', 'user')}] (Enter keeps it): ")
        messages.append({**message, "text": text.rstrip("\n") if text.strip() else message.get("text", "")})
    tokens = data.get("maxTokens")
    while True:
        answer = (await read(f"Max tokens [{tokens}]: ")).strip()
        if not answer:
            break
        if answer.isdigit() and int(answer) > 0:
            tokens = int(answer)
            break
        out.write("Type a whole number above 0.\n")
    return {**data, "messages": messages, "maxTokens": tokens}


# -- elicitation ----------------------------------------------------------------------------------------
async def _elicitation(request: ApprovalRequest, *, yes: bool, out: TextIO, interactive: bool,
                       read: Read) -> ApprovalDecision:
    from workspace.mcp.forms import check_all, content_of, form_fields, start_value

    data = dict(request.input or {})
    schema = data.get("requestedSchema") if isinstance(data.get("requestedSchema"), dict) else {}
    fields = form_fields(schema or {})
    server = request.server or "the server"
    names = ", ".join(f.label for f in fields) or "no fields"
    if not interactive:
        if yes:
            values: dict[str, Any] = {f.name: start_value(f) for f in fields}
            problems = check_all(fields, values)
            if not problems:
                return ApprovalDecision(approved=True, input={**data, "content": content_of(fields, values)},
                                        reason="--yes: the defaults")
            missing = ", ".join(f.label for f in fields if f.name in problems)
            return ApprovalDecision(approved=False, reason=(
                f"{server} asked for input ({names}) and nobody is at a terminal to answer; --yes sends the defaults, "
                f"but {missing} has none: declined. Run it in a terminal to answer"))
        return ApprovalDecision(approved=False, reason=(
            f"{server} asked for input ({names}) and nobody is at a terminal to answer: declined. Run it in a "
            "terminal to answer, or rerun with --yes to send the defaults"))
    out.write(f"\n{server} asks for input: {printable(str(data.get('message') or ''))}\n")
    try:
        answer = (await read("Answer? [y]es (fill in the form) / [d]ecline / [c]ancel: ")).strip().lower()
    except EOFError:
        return ApprovalDecision(approved=False, reason="cancel")
    if answer in ("d", "decline", "n", "no"):
        return ApprovalDecision(approved=False, reason="decline")
    if answer not in ("y", "yes", ""):
        return ApprovalDecision(approved=False, reason="cancel")
    values = {}
    try:
        for field in fields:
            values[field.name] = await ask_field(field, out, read)
    except EOFError:
        return ApprovalDecision(approved=False, reason="cancel")
    return ApprovalDecision(approved=True, input={**data, "content": content_of(fields, values)})


def field_question(field: Any) -> str:
    """The question for one field: its title, whether it is required, its description, the choices, the
    default (Enter takes it)."""
    from workspace.mcp.forms import start_value

    head = field.label + (" (required)" if field.required else "")
    parts = [head]
    if field.description:
        parts.append(f" — {printable(field.description)}")
    if field.hint and field.kind != "choices":
        parts.append(f" ({field.hint})")
    text = "".join(parts)
    if field.kind in ("choice", "choices"):
        listing = "  ".join(f"{n}) {label}" for n, (_, label) in enumerate(field.options, start=1))
        how = "numbers separated by commas" + (f", {field.hint}" if field.hint else "") if field.kind == "choices" \
            else "its number"
        text += f"\n  {listing}\n  ({how})"
    default = start_value(field)
    if field.kind == "boolean":
        text += " [Y/n]" if default else " [y/N]"
    elif default not in (None, "", []):
        text += f" [{field.shown(default)}]"
    return text + ": "


async def ask_field(field: Any, out: TextIO, read: Read) -> Any:
    """Ask for one field until the answer fits (Enter takes the default)."""
    from workspace.mcp.forms import check, parse_text, start_value

    question = field_question(field)
    while True:
        text = await read(question)
        try:
            value = parse_text(field, text)
        except ValueError as exc:
            out.write(f"  {exc}\n")
            continue
        if value is None or value == []:
            value = start_value(field) if field.kind != "boolean" or not text.strip() else value
        problem = check(field, value)
        if problem is None:
            return value
        out.write(f"  {problem}\n")


__all__ = ["ask_server_request", "describe_sampling", "field_question", "is_server_request"]
