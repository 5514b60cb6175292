"""``mcpServers`` entries shown without their secrets, and their secrets handed to :mod:`workspace.secrets`.

:meth:`ServerSpec.describe <workspace.mcp.config.ServerSpec.describe>` (``robotlab mcp list``, the
MCP dock) and :func:`masked_entry` (``robotlab config show``) show an entry as written, so
``${VAR}`` references appear as references and never as their values; URL passwords,
secret-looking query parameters and literal values of secret-looking flags are masked.
:func:`register_secrets` tells :mod:`workspace.secrets` which values of a parsed entry are
secrets, so logs, exports and the database redact them; :func:`filled_values` are the values a
server's stderr view masks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from workspace.mcp.variables import VAR, Filled


def quote(part: str) -> str:
    return f'"{part}"' if (not part or any(c.isspace() for c in part)) else part


#: Names (of query parameters, flags, headers, env entries) whose values are secrets.
_SECRETISH = re.compile(
    r"TOKEN|SECRET|PASS(?:WORD|WD|PHRASE)?(?:$|[_-])|API[_-]?KEY|(?:^|[_-])KEY$|AUTH(?!OR)|CREDENTIAL|COOKIE"
    r"|PRIVATE|(?:^|[_-])PAT$|(?:^|[_-])PW$|SIGNATURE|^SIG$|(?:^|[_-])JWT$",
    re.I,
)
#: Env entry names holding secrets beyond :func:`workspace.secrets.is_secret_name`'s.
_SECRET_ENV = re.compile(r"(?:^|_)(?:PAT|APIKEY|AUTH|CREDENTIALS?|COOKIE)$", re.I)
#: A value that is a path (not a secret).
_PATH = re.compile(r"^(?:[/~.]|[A-Za-z]:[\\/])")
#: Header names that never carry a secret.
_PLAIN_HEADERS = frozenset({
    "accept", "accept-language", "accept-encoding", "content-type", "user-agent", "mcp-protocol-version",
    "cache-control", "connection", "origin", "referer",
})
#: Variables that are not secrets even when used in env or headers (paths, the user's name, ...).
_PLAIN_VARS = re.compile(
    r"^(?:HOME|USER|USERNAME|LOGNAME|PATH|PWD|SHELL|TMPDIR|TEMP|TMP|LANG|LANGUAGE|TERM|DISPLAY|HOSTNAME|"
    r"USERPROFILE|APPDATA|LOCALAPPDATA|PROGRAMFILES|SYSTEMROOT|NODE_ENV|LC_\w+|XDG_\w+)$",
    re.I,
)


def is_secret_name(name: str) -> bool:
    """Whether a query parameter, flag, header or env entry called ``name`` holds a secret."""
    return bool(_SECRETISH.search(name.strip().lstrip("-")))


def mask_url(url: str) -> str:
    """``url`` with any password and every query value replaced by ``***``."""
    return _mask_url(url, every_query_value=True)


def mask_written_url(url: str) -> str:
    """``url`` as written in a file, with the password and the secret-looking query values masked."""
    return _mask_url(url, every_query_value=False)


def _mask_url(url: str, *, every_query_value: bool) -> str:
    """``url`` with the password (and a long bare user name, often a token) masked, and query values
    masked: all of them, or those whose names look secret (a written template shows the rest)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        if not colon and "${" not in user and len(user) >= 16:
            user = "***"
        netloc = f"{user}:***@{host}" if colon else f"{user}@{host}"
    query = parts.query
    if query:
        if every_query_value:
            query = urlencode([(k, "***") for k, _ in parse_qsl(query, keep_blank_values=True)], safe="*")
        else:
            query = "&".join(
                f"{k}=***" if sep and is_secret_name(unquote(k)) else f"{k}{sep}{v}"
                for k, sep, v in (item.partition("=") for item in query.split("&"))
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


_FLAG_VALUE = re.compile(r"^(--?[A-Za-z][\w.-]*)=(.*)$", re.S)
_HEADER_ARG = re.compile(r"^([A-Za-z][\w-]*)\s*:\s*(.+)$", re.S)


def mask_args(args: tuple[str, ...]) -> list[str]:
    """Args as written, with literal values of secret-looking flags, headers and URLs masked."""
    out: list[str] = []
    mask_next = False
    for arg in args:
        if mask_next and not arg.startswith("-"):
            out.append(arg if VAR.fullmatch(arg) else "***")
            mask_next = False
            continue
        mask_next = False
        flag = _FLAG_VALUE.match(arg)
        header = _HEADER_ARG.match(arg)
        if flag:
            name, value = flag.groups()
            out.append(f"{name}={value if VAR.fullmatch(value) or not is_secret_name(name) else '***'}")
        elif re.match(r"^--?[A-Za-z]", arg):
            out.append(arg)
            mask_next = is_secret_name(arg)
        elif header and not re.match(r"^[a-z][a-z0-9+.-]*://", arg, re.I) and (
            is_secret_name(header.group(1)) or header.group(1).lower() == "authorization"
        ):
            out.append(f"{header.group(1)}: {header.group(2) if VAR.fullmatch(header.group(2)) else '***'}")
        elif re.match(r"^https?://", arg, re.I):
            out.append(_mask_url(arg, every_query_value=False))
        else:
            out.append(arg)
    return out


def masked_entry(entry: Any) -> Any:
    """An ``mcpServers`` entry as written, safe to print (``robotlab config show``), masked the way
    :meth:`ServerSpec.describe` (``robotlab mcp list -v``) masks it: env and header values are
    ``***`` unless they are ``${VAR}`` references (shown as written, never their values), URL
    passwords and secret-looking query values, and literal values of secret-looking flags in
    ``args`` are masked; ``${NAME:-default}`` defaults of secret-looking names too."""
    if not isinstance(entry, Mapping):
        return entry
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if key in ("env", "headers") and isinstance(value, Mapping):
            out[key] = {k: v if isinstance(v, str) and VAR.fullmatch(v.strip()) else "***" for k, v in value.items()}
        elif key == "args" and isinstance(value, list | tuple):
            out[key] = mask_args(tuple(str(a) for a in value))
        elif key in ("url", "serverUrl") and isinstance(value, str):
            out[key] = _mask_url(value, every_query_value=False)
        elif key == "transport" and isinstance(value, Mapping):
            out[key] = masked_entry(value)
        elif isinstance(value, str):
            out[key] = mask_defaults(value)
        else:
            out[key] = value
    return out


def mask_defaults(text: str) -> str:
    """``${NAME:-default}`` with the default masked when the name looks secret."""

    def replace(match: re.Match[str]) -> str:
        expr = match.group(1)
        if ":-" not in expr:
            return match.group(0)
        name, default = expr.split(":-", 1)
        return f"${{{name}:-***}}" if default and is_secret_name(name.rpartition(":")[2]) else match.group(0)

    return VAR.sub(replace, text)


def register_secrets(
    found: Mapping[str, list[Filled]], *, args: tuple[str, ...], env: Mapping[str, str],
    headers: Mapping[str, str], url: str | None,
) -> None:
    """Tell :mod:`workspace.secrets` which values of this entry are secrets, so that logs, exports
    and the database redact them:

    * every value filled in from the keyring or from a secret-looking variable (any key);
    * every value filled in from a variable into env or headers (the usual way to pass a key),
      except plain variables such as ``HOME`` or ``USER`` and paths (for URLs: their passwords);
    * literal env values under secret-looking names, and literal header values except plain
      headers (``Accept``, ``Content-Type``, ...); for ``Bearer <token>`` the token;
    * the URL's password and its secret-looking query values;
    * literal values of secret-looking flags in args (``--token X``, ``--api-key=X``).

    Values still holding a ``${...}`` reference (a checking environment echoes them) are skipped.
    """
    from workspace import secrets

    def register(value: str | None, name: str | None = None) -> None:
        if value and "${" not in value:
            secrets.register_secret(value, name=name)

    def register_url(url: str) -> None:
        try:
            parts = urlsplit(url)
        except ValueError:
            return
        register(parts.password, "password")
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if is_secret_name(name):
                register(value, name)

    for key, items in found.items():
        in_env_or_headers = key.startswith(("env.", "headers."))
        for kind, name, value in items:
            if kind == "keyring" or secrets.is_secret_name(name, value):
                register(value, name)
            elif in_env_or_headers and not _PLAIN_VARS.match(name):
                # A path is not a secret; a URL (DATABASE_URL=postgres://u:pw@h/db) may hold one.
                if re.match(r"^[a-z][a-z0-9+.-]*://", value, re.I):
                    register_url(value)
                elif not _PATH.match(value):
                    register(value, name)
    for key, value in env.items():
        if secrets.is_secret_name(key, value) or _SECRET_ENV.search(key):
            register(value, key)
    for key, value in headers.items():
        if key.strip().lower() in _PLAIN_HEADERS:
            continue
        scheme, _, credential = value.strip().partition(" ")
        # "Bearer <token>": the token (which also covers the whole value); else the whole value.
        register(credential.strip() if credential and scheme.isalpha() else value, key)
    if url:
        register_url(url)
    for i, arg in enumerate(args):
        flag = _FLAG_VALUE.match(arg)
        if flag:
            name, value = flag.groups()
        elif arg.startswith("-") and i + 1 < len(args) and not args[i + 1].startswith("-"):
            name, value = arg, args[i + 1]
        else:
            continue
        if secrets.is_secret_name(name.lstrip("-").replace("-", "_"), value):
            register(value, name.lstrip("-"))


def filled_values(found: Mapping[str, list[Filled]]) -> tuple[str, ...]:
    """The values :func:`~workspace.mcp.variables.interpolate` filled in that a server's stderr view masks
    (paths and plain variables such as ``HOME`` left out)."""
    return tuple(dict.fromkeys(
        value for items in found.values() for _, name, value in items
        if len(value) >= 6 and "${" not in value and not _PLAIN_VARS.match(name) and not _PATH.match(value)
    ))
