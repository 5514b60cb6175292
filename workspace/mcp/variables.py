"""``${VAR}`` interpolation in ``mcpServers`` entries: the environment, defaults and the OS keyring.

``${VAR}``, ``${env:VAR}`` and ``${VAR:-default}`` read the environment (then the keyring, service
``robotlab``); ``${keyring:NAME}`` reads the keyring. A variable that is not set is an error naming
where it is used and how to set it. :func:`interpolate` reports what it filled in, so that
:mod:`workspace.mcp.masking` can tell :mod:`workspace.secrets` which values are secrets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from workspace.errors import ConfigurationError

#: A ``${...}`` reference.
VAR = re.compile(r"\$\{([^}]*)\}")


def _env_lookup(name: str) -> str | None:
    value = os.environ.get(name)
    if value is not None:
        return value
    try:
        from workspace.secrets import get_key

        return get_key(name)
    except Exception:  # pragma: no cover - a broken keyring is the same as a missing value
        return None


def _keyring_lookup(name: str) -> str | None:
    try:
        from workspace.secrets import get_key

        return get_key(name)
    except Exception:  # pragma: no cover
        return None


#: One replacement :func:`interpolate` made: (kind "env" or "keyring", the name, the value put in).
Filled = tuple[str, str, str]


def interpolate(
    text: str, *, where: str, environ: Mapping[str, str] | None = None, filled: list[Filled] | None = None
) -> str:
    """Replace ``${VAR}``, ``${env:VAR}``, ``${VAR:-default}`` and ``${keyring:NAME}`` in ``text``.

    Each value looked up (defaults are not) is appended to ``filled`` when given.
    """
    if "${" not in text:
        return text

    def lookup(name: str) -> str | None:
        if environ is not None:
            return environ.get(name)
        return _env_lookup(name)

    def replace(match: re.Match[str]) -> str:
        expr = match.group(1).strip()
        default: str | None = None
        if ":-" in expr:
            expr, default = expr.split(":-", 1)
        kind, _, name = expr.partition(":") if ":" in expr else ("env", "", expr)
        kind, name = kind.strip(), name.strip()
        if not name:
            raise ConfigurationError(f"{where}: empty variable reference {match.group(0)!r}; write ${{NAME}}")
        if kind == "env":
            value = lookup(name)
        elif kind == "keyring":
            value = _keyring_lookup(name) if environ is None else environ.get(name)
        else:
            raise ConfigurationError(
                f"{where}: {match.group(0)!r} is not something we can fill in; use ${{VAR}}, ${{env:VAR}} "
                "or ${keyring:NAME}"
                + (" (VS Code inputs are converted by `robotlab mcp import`)" if kind == "input" else "")
            )
        if value is None:
            if default is not None:
                return default
            if kind == "keyring":
                raise ConfigurationError(
                    f"{where} uses {match.group(0)}, but the keyring has no entry '{name}' (service robotlab). "
                    f"Store it with `keyring set robotlab {name}`, or set the environment variable {name}"
                )
            raise ConfigurationError(
                f"{where} uses {match.group(0)}, but the environment variable {name} is not set. "
                f"Set it (export {name}=...), store it in the keyring (`keyring set robotlab {name}`), "
                "or write the value in the file"
            )
        if filled is not None:
            filled.append((kind, name, value))
        return value

    return VAR.sub(replace, text)

