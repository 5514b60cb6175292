"""Editing the ``mcpServers`` entries of a configuration file (the Settings page, ``mcp import``).

:class:`ServersFile` reads a YAML configuration file with ruamel.yaml's round-trip loader and
edits only the ``mcpServers`` mapping: comments, key order, quoting and every other section of
the file stay as the user wrote them. :meth:`ServersFile.save` writes atomically (a temporary file
in the same folder, then ``os.replace``), keeping the file's permissions, and refuses to overwrite
a file that changed on disk since it was read (the user edited it in another program meanwhile).

Secrets never go into the file: :func:`store_secrets` moves the values of env entries and headers
marked secret to the OS keyring (service ``robotlab``) and leaves ``${keyring:NAME}`` in the
entry, which :func:`workspace.mcp.variables.interpolate` fills in when the server starts.

Nothing here imports the MCP SDK.
"""

from __future__ import annotations

import copy
import io
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workspace.errors import ConfigurationError
from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

_KEYRING_REF = re.compile(r"^\$\{keyring:([^}]+)\}$")


def keyring_name(server: str, section: str, key: str) -> str:
    """The keyring entry (user name, service ``robotlab``) for ``server``'s env entry or header ``key``."""
    def part(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper() or "X"

    return f"MCP_{part(server)}_{'ENV' if section == 'env' else 'HEADER'}_{part(key)}"


def is_keyring_ref(value: Any) -> bool:
    return isinstance(value, str) and bool(_KEYRING_REF.match(value.strip()))


def store_secrets(server: str, entry: Mapping[str, Any], secret: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """``entry`` with the values of ``secret`` (``{"env": [KEY, ...], "headers": [NAME, ...]}``) stored
    in the OS keyring and replaced by ``${keyring:NAME}`` references.

    Values that already are references stay as they are. Raises :class:`ConfigurationError` naming
    the fix when no keyring is available (nothing is stored, the file is not to be written).
    """
    from workspace import secrets

    out = dict(entry)
    pending: list[tuple[str, str, str, str]] = []
    for section in ("env", "headers"):
        keys = set(secret.get(section, ()))
        values = out.get(section)
        if not keys or not isinstance(values, Mapping):
            continue
        for key in keys:
            value = values.get(key)
            if not isinstance(value, str) or not value or "${" in value:
                continue
            pending.append((section, key, keyring_name(server, section, key), value))
    if not pending:
        return out
    if not secrets.keyring_available():
        names = ", ".join(f"{section}.{key}" for section, key, _, _ in pending)
        raise ConfigurationError(
            f"No OS keyring is available to keep the secret value(s) of {names} of MCP server '{server}' out of "
            "the configuration file. Install and unlock a keyring (GNOME Keyring, KWallet, macOS Keychain, "
            "Windows Credential Locker), or write the value as ${env:NAME} and set that variable"
        )
    for section, key, name, value in pending:
        if not secrets.store_key(name, value):
            raise ConfigurationError(f"Could not store {section}.{key} of MCP server '{server}' in the keyring; "
                                     "check that it is unlocked and try again")
        block = dict(out[section])
        block[key] = f"${{keyring:{name}}}"
        out[section] = block
    return out


def keep_secrets_out(servers: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """``servers`` with every literal ``env`` value and header value kept by :func:`workspace.secrets.save_key`
    (the OS keyring, else the user's 0600 keys file) and written as ``${keyring:MCP_<SERVER>_...}``; values that
    already are ``${...}`` references stay. Returns the entries and one line per value kept, for people."""
    from workspace import secrets

    out: dict[str, dict[str, Any]] = {}
    kept: list[str] = []
    for server, entry in servers.items():
        converted = dict(entry)
        for section in ("env", "headers"):
            values = entry.get(section)
            if not isinstance(values, Mapping):
                continue
            block: dict[str, Any] = {}
            for key, value in values.items():
                if isinstance(value, str) and value and "${" not in value:
                    name = keyring_name(server, section, str(key))
                    where = secrets.save_key(name, value)
                    block[str(key)] = f"${{keyring:{name}}}"
                    kept.append(f"{server}: {section}.{key} kept in {where} as {name}")
                else:
                    block[str(key)] = value
            converted[section] = block
        out[str(server)] = converted
    return out, kept


def secret_keys(entry: Mapping[str, Any]) -> dict[str, set[str]]:
    """The env entries and headers of ``entry`` whose values live in the keyring (``${keyring:...}``)."""
    out: dict[str, set[str]] = {"env": set(), "headers": set()}
    for section in out:
        values = entry.get(section)
        if isinstance(values, Mapping):
            out[section] = {str(k) for k, v in values.items() if is_keyring_ref(v)}
    return out


def forget_secrets(entry: Mapping[str, Any]) -> None:
    """Delete the keyring entries ``entry`` refers to (the server was removed)."""
    from workspace import secrets

    for section in ("env", "headers"):
        values = entry.get(section)
        if not isinstance(values, Mapping):
            continue
        for value in values.values():
            match = _KEYRING_REF.match(str(value).strip()) if isinstance(value, str) else None
            if match and match.group(1).startswith("MCP_"):
                secrets.delete_key(match.group(1))


def _yaml() -> Any:
    from workspace.yaml_limits import round_trip_yaml

    yaml = round_trip_yaml()
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _plain(value: Any) -> Any:
    """ruamel's commented containers as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


class ServersFile:
    """The ``mcpServers`` of one YAML configuration file, edited in place (see the module)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._stamp: tuple[float, int] | None = None
        self._text = ""
        self._data: Any = None
        self.reload()

    # -- reading ----------------------------------------------------------------------------------
    def _file_stamp(self) -> tuple[float, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime, st.st_size)

    def reload(self) -> None:
        """Read the file again (a missing file is an empty configuration)."""
        try:
            text = read_text_bounded(self.path, CONFIG_FILE_BYTES, "configuration file", encoding="utf-8-sig")
        except FileNotFoundError:
            text = ""
        except OSError as exc:
            raise ConfigurationError(f"{self.path}: cannot read the file ({exc.strerror or exc})") from exc
        yaml = _yaml()
        try:
            data = yaml.load(text) if text.strip() else None
        except Exception as exc:
            raise ConfigurationError(f"{self.path}: not valid YAML ({exc}); fix the file before editing its "
                                     "MCP servers here") from exc
        if data is None:
            from ruamel.yaml.comments import CommentedMap

            data = CommentedMap()
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{self.path}: expected a mapping of sections at the top")
        self._text, self._data, self._stamp = text, data, self._file_stamp()

    @property
    def key(self) -> str:
        """``mcpServers`` (or ``mcp_servers`` when the file uses that spelling only)."""
        data = self._data
        return "mcp_servers" if "mcp_servers" in data and "mcpServers" not in data else "mcpServers"

    def _servers(self, *, create: bool = False) -> Any:
        servers = self._data.get(self.key)
        if servers is None and create:
            from ruamel.yaml.comments import CommentedMap

            servers = CommentedMap()
            self._data[self.key] = servers
        if servers is not None and not isinstance(servers, Mapping):
            raise ConfigurationError(f"{self.path}: {self.key} must be a mapping of server names to settings")
        return servers

    def names(self) -> list[str]:
        servers = self._servers()
        return [str(k) for k in servers] if servers else []

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every entry as written (plain dicts)."""
        servers = self._servers()
        return {str(k): _plain(v) if isinstance(v, Mapping) else {} for k, v in (servers or {}).items()}

    def entry(self, name: str) -> dict[str, Any]:
        servers = self._servers()
        if not servers or name not in servers:
            raise KeyError(name)
        value = servers[name]
        return _plain(value) if isinstance(value, Mapping) else {}

    # -- editing ----------------------------------------------------------------------------------
    def set(self, name: str, entry: Mapping[str, Any], *, rename_from: str | None = None) -> None:
        """Add or replace the server ``name`` (keeping its place; ``rename_from``: the old name)."""
        name = name.strip()
        if not name:
            raise ConfigurationError("The server needs a name (its tools are called <name>__<tool>)")
        servers = self._servers(create=True)
        if rename_from is not None and rename_from != name:
            if name in servers:
                raise ConfigurationError(f"There is already an MCP server called '{name}'; choose another name")
            if rename_from in servers:
                position = list(servers).index(rename_from)
                old = servers[rename_from]
                del servers[rename_from]
                servers.insert(position, name, self._merged(old, entry))
                return
        old = servers.get(name)
        servers[name] = self._merged(old, entry)

    @staticmethod
    def _merged(old: Any, entry: Mapping[str, Any]) -> Any:
        """The new entry, reusing the old commented mapping so comments on kept keys survive."""
        from ruamel.yaml.comments import CommentedMap

        if not isinstance(old, CommentedMap):
            return CommentedMap(copy.deepcopy(dict(entry)))
        for key in [k for k in old if k not in entry]:
            del old[key]
        for key, value in entry.items():
            if _plain(old.get(key)) != _plain(value):
                old[key] = copy.deepcopy(value)
        return old

    def remove(self, name: str) -> dict[str, Any]:
        """Remove the server; returns its entry as it was."""
        servers = self._servers()
        if not servers or name not in servers:
            raise KeyError(name)
        entry = self.entry(name)
        del servers[name]
        return entry

    def duplicate(self, name: str) -> str:
        """Copy the server under a free name (``name-copy``, ``name-copy-2``, ...); returns the new name."""
        entry = self.entry(name)
        taken = set(self.names())
        new = f"{name}-copy"
        n = 2
        while new in taken:
            new = f"{name}-copy-{n}"
            n += 1
        self.set(new, entry)
        return new

    def set_disabled(self, name: str, disabled: bool) -> None:
        entry = self.entry(name)
        entry.pop("enabled", None)
        if disabled:
            entry["disabled"] = True
        else:
            entry.pop("disabled", None)
        self.set(name, entry)

    # -- writing ----------------------------------------------------------------------------------
    def text(self) -> str:
        stream = io.StringIO()
        _yaml().dump(self._data, stream)
        return stream.getvalue()

    def save(self, *, force: bool = False) -> None:
        """Write the file atomically. Raises :class:`ConfigurationError` when it changed on disk since
        it was read (unless ``force``): reload and make the change again."""
        if not force and self._file_stamp() != self._stamp:
            raise ConfigurationError(
                f"{self.path} was changed by another program since it was read; reload it and make the change again"
            )
        text = self.text()
        write_atomic(self.path, text)
        self._text, self._stamp = text, self._file_stamp()


def set_server_key(source: str, server: str, key: str, value: Any) -> str | None:
    """Set one setting of ``server`` in the YAML file ``source`` that defines it (comments kept, written
    atomically); returns the file, or None when ``source`` is not a YAML file defining ``server``
    (an inline server, the environment). Raises :class:`ConfigurationError` when it cannot be written."""
    if not source:
        return None
    path = Path(source)
    if path.suffix.lower() not in (".yaml", ".yml") or not path.is_file():
        return None
    servers = ServersFile(path)
    try:
        entry = servers.entry(server)
    except KeyError:
        return None
    if entry.get(key) != value:
        entry[key] = value
        servers.set(server, entry)
        servers.save()
    return str(path)


def write_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder (``os.replace``), keeping
    the file's permissions (a new file gets 0600: it may name keyring entries and commands), or with
    ``mode`` when given (the temporary file is 0600 from its first byte either way)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o777
        except OSError:
            mode = 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
