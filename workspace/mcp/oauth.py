"""Signing in to remote MCP servers with OAuth 2.1 (the SDK's ``OAuthClientProvider``).

A streamable HTTP (or SSE) server that answers 401 wants a bearer token. The SDK's OAuth client
does the protocol: protected resource metadata, authorization server metadata, dynamic client
registration, PKCE, the token exchange, refresh. Here is what a desktop client adds around it:

* **When the person is asked.** A connection started by a run, the dock or ``mcp call`` never
  opens a browser by itself: with no valid token it fails with :class:`SignInRequired` ("sign in"
  the first time, "sign in again" once a sign-in was revoked or expired), and the MCP dock shows
  a *Sign in* button on the server (``robotlab mcp login NAME`` on the command line). Only
  :meth:`workspace.mcp.manager.MCPManager.sign_in` starts an interactive sign-in.
* **The browser and the redirect.** The sign-in page opens in the system browser (the window:
  ``QDesktopServices``; the command line: :mod:`webbrowser`), its address is also shown so it can
  be copied; the authorization server redirects to :class:`LoopbackCallback`, a one-shot HTTP
  listener on ``127.0.0.1`` (the port the client registered with, when it is free; else a free
  one and a new registration: servers compare redirect URIs exactly). Five minutes to finish.
* **Tokens.** :class:`TokenStore` keeps the tokens (with when they expire) and the registered
  client in the OS keyring (service ``robotlab``, user ``MCP_OAUTH_<SERVER>_<hash of the URL>``).
  Without a keyring a sign-in is refused with a message naming the fix, unless the server's
  ``oauth.tokenStore: file`` asks for a file only the user can read (a warning says it is less safe).
* **Refresh.** An expired access token is refreshed before the request (the SDK); a 401 with a
  refresh token in hand is answered by a refresh first (here), and only a refused refresh means
  signing in again.

A server entry may say ``oauth: false`` (never sign in), or ``oauth: {scope, clientName, clientId,
clientSecret, callbackPort, tokenStore}``. A server given an ``Authorization`` header is not signed
in to. Imported on use by :mod:`workspace.mcp.actor` (it imports the SDK).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import html
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from workspace.errors import ConfigurationError, MCPError

log = logging.getLogger("workspace.mcp")

#: How long the person has to finish signing in in the browser.
SIGN_IN_TIMEOUT = 300.0
CALLBACK_PATH = "/callback"
CLIENT_NAME = "RobotLab Workspace"

#: What a connection's sign-in state is (ServerStatus.auth): no sign-in involved (None), signed in,
#: never signed in, signed in once but the sign-in was revoked or expired, and waiting for the browser.
SIGNED_IN = "signed-in"
SIGN_IN = "sign-in"
SIGN_IN_AGAIN = "sign-in-again"
SIGNING_IN = "signing-in"


def sign_in_message(server: str, *, again: bool) -> str:
    how = f"press Sign in on it in the MCP dock, or run `robotlab mcp login {server}`"
    if again:
        return (f"MCP server '{server}' needs you to sign in again (its sign-in was revoked or has expired): "
                f"{how}")
    return f"MCP server '{server}' needs you to sign in: {how}"


class SignInRequired(MCPError):
    """No valid token, and nobody asked to sign in now (see the module)."""

    def __init__(self, server: str, *, again: bool) -> None:
        self.server = server
        self.again = again
        super().__init__(sign_in_message(server, again=again))


class SignInFailed(MCPError):
    """The interactive sign-in did not finish: the server refused, the time ran out, no keyring."""


# -- settings -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class OAuthOptions:
    """A server entry's ``oauth`` settings."""

    scope: str | None = None
    client_name: str = CLIENT_NAME
    client_id: str | None = None
    client_secret: str | None = None
    callback_port: int | None = None
    #: "keyring" (the default) or "file".
    token_store: str = "keyring"


def oauth_options(spec: Any) -> OAuthOptions | None:
    """The server's sign-in settings; None when it is never signed in to (stdio, ``oauth: false``, or an
    ``Authorization`` header of its own)."""
    if getattr(spec, "transport", "stdio") == "stdio":
        return None
    raw = (getattr(spec, "raw", None) or {}).get("oauth")
    if raw is False or (isinstance(raw, str) and raw.strip().lower() in ("false", "off", "no", "none")):
        return None
    if isinstance(raw, Mapping) and raw.get("enabled") is False:
        return None
    if any(str(name).lower() == "authorization" for name in (getattr(spec, "headers", None) or {})):
        return None
    if not isinstance(raw, Mapping):
        return OAuthOptions()
    scope = raw.get("scope", raw.get("scopes"))
    if isinstance(scope, list):
        scope = " ".join(str(s) for s in scope)
    port = raw.get("callbackPort", raw.get("redirectPort"))
    store = str(raw.get("tokenStore") or "keyring").strip().lower()
    secret = raw.get("clientSecret")
    if secret:  # ${keyring:NAME} or ${VAR}, as env values and headers are written
        from workspace.mcp.variables import interpolate

        secret = interpolate(str(secret), where=f"mcpServers.{getattr(spec, 'name', '')}.oauth.clientSecret")
    return OAuthOptions(
        scope=str(scope) if scope else None, client_name=str(raw.get("clientName") or CLIENT_NAME),
        client_id=str(raw["clientId"]) if raw.get("clientId") else None,
        client_secret=str(secret) if secret else None,
        callback_port=int(port) if isinstance(port, int) and 0 < port < 65536 else None,
        token_store="file" if store == "file" else "keyring",
    )


# -- where tokens are kept ------------------------------------------------------------------------------------
def storage_key(server: str, url: str) -> str:
    """The keyring entry of ``server`` at ``url`` (a new address is a new sign-in)."""
    part = re.sub(r"[^A-Za-z0-9]+", "_", server).strip("_").upper() or "X"
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:10]
    return f"MCP_OAUTH_{part}_{digest}"


class TokenStore:
    """The SDK's ``TokenStorage`` for one server: its tokens (with their expiry time) and registered client,
    as one JSON value in the OS keyring (or, asked for, a 0600 file). Tokens are written when they come (a
    sign-in, a refresh); a registration only once :attr:`persist` is set (an interactive sign-in): one made
    by a connection that cannot sign in stays in memory."""

    def __init__(self, server: str, url: str, *, token_store: str = "keyring") -> None:
        self.server = server
        self.key = storage_key(server, url)
        self.token_store = token_store
        self.persist = False
        self._memory: dict[str, Any] = {}

    # -- the value ----------------------------------------------------------------------------------
    def _file(self) -> Path:
        from workspace import paths

        return paths.config_dir() / "mcp-oauth" / f"{self.key}.json"

    def _read(self) -> dict[str, Any]:
        text: str | None = None
        where = "the keyring"
        try:
            if self.token_store == "file":  # bounded: a FIFO or a /dev/zero link there neither waits nor fills memory
                from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

                where = str(self._file())
                with contextlib.suppress(FileNotFoundError):
                    text = read_text_bounded(self._file(), CONFIG_FILE_BYTES, "MCP sign-in file")
            else:
                from workspace import secrets

                text = secrets.get_key(self.key) if secrets.keyring_available() else None
            data = json.loads(text) if text else {}
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError, ConfigurationError) as exc:
            log.warning("MCP server '%s': its sign-in kept in %s cannot be read (%s); it is ignored: sign in again "
                        "(that replaces it) or sign out", self.server, where, exc)
            data = {}
        return data

    def _write(self, data: dict[str, Any]) -> None:
        from workspace import secrets

        text = json.dumps(data, sort_keys=True)
        if self.token_store == "file":
            path = self._file()
            path.parent.mkdir(parents=True, exist_ok=True)
            from workspace.mcp.edit import write_atomic

            if not path.exists():
                log.warning("MCP server '%s': its sign-in is kept in %s (oauth.tokenStore: file), readable by your "
                            "user only; the OS keyring is safer", self.server, path)
            write_atomic(path, text)
            os.chmod(path, 0o600)
            return
        # A keyring that takes the value without keeping it (the "null" backend) is no keyring either.
        if not secrets.keyring_available() or not secrets.store_key(self.key, text) or \
                secrets.get_key(self.key) != text:
            raise SignInFailed(
                f"No OS keyring is available to keep the sign-in of MCP server '{self.server}'. Install and unlock "
                "one (GNOME Keyring, KWallet, macOS Keychain, Windows Credential Locker), or set "
                f"mcpServers.{self.server}.oauth.tokenStore: file to keep it in a file only you can read (less safe)")

    def _update(self, *, persist: bool, **changes: Any) -> None:
        self._memory.update(changes)
        if persist:
            data = self._read()
            data.update(changes)
            self._write(data)

    def _get(self, name: str) -> Any:
        if name in self._memory:
            return self._memory[name]
        return self._read().get(name)

    # -- TokenStorage ----------------------------------------------------------------------------------
    async def get_tokens(self) -> OAuthToken | None:
        raw = await asyncio.to_thread(self._get, "tokens")
        if not isinstance(raw, dict):
            return None
        expires_at = raw.pop("expires_at", None)
        try:
            tokens = OAuthToken.model_validate(raw)
        except ValueError:
            return None
        if isinstance(expires_at, int | float):  # what is left of its lifetime
            tokens.expires_in = max(0, int(expires_at - time.time()))
        _register(tokens.access_token, tokens.refresh_token)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = tokens.model_dump(mode="json", exclude_none=True)
        if tokens.expires_in is not None:
            data["expires_at"] = time.time() + tokens.expires_in
        _register(tokens.access_token, tokens.refresh_token)
        await asyncio.to_thread(self._update, persist=True, tokens=data, lost_at=None)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = await asyncio.to_thread(self._get, "client")
        if not isinstance(raw, dict):
            return None
        try:
            client = OAuthClientInformationFull.model_validate(raw)
        except ValueError:
            return None
        _register(client.client_secret)
        return client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        _register(client_info.client_secret)
        await asyncio.to_thread(self._update, persist=self.persist,
                                client=client_info.model_dump(mode="json", exclude_none=True))

    # -- ours ------------------------------------------------------------------------------------------
    def signed_in_before(self) -> bool:
        """Whether there is (or was, until it was revoked or expired) a sign-in: "sign in again"."""
        data = {**self._read(), **self._memory}
        return isinstance(data.get("tokens"), dict) or bool(data.get("lost_at"))

    def forget_tokens(self) -> None:
        """The tokens are no good (revoked): drop them, keep the registration and that there was a sign-in."""
        self._memory.pop("tokens", None)
        self._memory["lost_at"] = time.time()
        data = self._read()
        if "tokens" in data:
            data.pop("tokens")
            data["lost_at"] = time.time()
            with contextlib.suppress(MCPError):
                self._write(data)

    def forget_client(self) -> None:
        self._memory.pop("client", None)
        if self.persist:
            data = self._read()
            data.pop("client", None)
            self._write(data)

    def clear(self) -> None:
        """Sign out: the tokens and the registration go."""
        from workspace import secrets

        self._memory.clear()
        if self.token_store == "file":
            with contextlib.suppress(OSError):
                self._file().unlink()
        else:
            secrets.delete_key(self.key)


def _register(*values: str | None) -> None:
    from workspace import secrets

    for value in values:
        if value:
            secrets.register_secret(value, name="MCP_OAUTH_TOKEN")


# -- the redirect -------------------------------------------------------------------------------------------
class LoopbackCallback:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization server's redirect (RFC 8252 §7.3)."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.port = 0
        self._listener: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def start(self, port: int = 0) -> str:
        """Listen on ``port`` (0: a free one); returns the redirect URI. Raises OSError when the port is taken."""
        self._result = asyncio.get_running_loop().create_future()
        self._listener = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = int(self._listener.sockets[0].getsockname()[1])
        return self.redirect_uri

    async def wait(self, timeout: float = SIGN_IN_TIMEOUT) -> AuthorizationCodeResult:
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise SignInFailed(f"Signing in to MCP server '{self.server}' did not finish within {timeout / 60:g} "
                               "minutes; press Sign in to try again") from None

    async def aclose(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(listener.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split(" ")
            target = parts[1] if len(parts) >= 2 else "/"
            url = urlsplit(target)
            status, body = "404 Not Found", "Not found."
            if parts[0] == "GET" and url.path == CALLBACK_PATH:
                status, body = self._answer({k: v[0] for k, v in parse_qs(url.query).items()})
            page = (f"<!doctype html><meta charset='utf-8'><title>RobotLab</title>"
                    f"<body style='font-family:sans-serif;margin:3em'><h2>RobotLab</h2><p>{html.escape(body)}</p>")
            data = page.encode("utf-8")
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
                         f"{len(data)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n".encode("ascii") + data)
            await writer.drain()
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, query: dict[str, str]) -> tuple[str, str]:
        result = self._result
        if result is None or result.done():
            return "200 OK", "This sign-in is already finished; you can close this tab."
        if query.get("error"):
            why = query.get("error_description") or query["error"]
            result.set_exception(SignInFailed(f"The sign-in to MCP server '{self.server}' was refused: {why}"))
            return "200 OK", f"Signing in to {self.server} failed: {why}. You can close this tab."
        if not query.get("code"):
            return "400 Bad Request", "The sign-in answer has no authorization code."
        result.set_result(AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss")))
        return "200 OK", f"You are signed in to {self.server}. You can close this tab and go back to RobotLab."


# -- the SDK's provider, with our rules ---------------------------------------------------------------------
Opener = Callable[[str, str], Any]


class ServerAuth(OAuthClientProvider):
    """``OAuthClientProvider`` for one connection: interactive only when a sign-in was asked for, a refresh
    before giving up on a 401, and the state reported to the connection (see the module)."""

    def __init__(self, server: str, url: str, options: OAuthOptions, store: TokenStore, *, redirect_uri: str,
                 interactive: bool, callback: LoopbackCallback | None, opener: Opener | None,
                 on_state: Callable[[str, str | None], None]) -> None:
        metadata = OAuthClientMetadata(redirect_uris=[redirect_uri], client_name=options.client_name,
                                       grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                       scope=options.scope)
        super().__init__(url, metadata, store, redirect_handler=self._open, callback_handler=self._callback)
        self.server = server
        self.store = store
        self.interactive = interactive
        self.callback = callback
        self.opener = opener
        self.on_state = on_state
        self.had_tokens = False
        self._refreshing = False

    # -- the hooks ------------------------------------------------------------------------------------
    async def _initialize(self) -> None:
        await super()._initialize()
        tokens = self.context.current_tokens
        self.had_tokens = self.had_tokens or tokens is not None or await asyncio.to_thread(self.store.signed_in_before)
        if tokens is not None and tokens.expires_in is not None:
            self.context.update_token_expiry(tokens)  # the store counts expires_in down: refresh when due

    async def _perform_authorization(self) -> httpx2.Request:
        if not self.interactive and self.context.can_refresh_token():
            self._refreshing = True  # a 401 with a refresh token in hand: refresh before giving up
            return await self._refresh_token()
        if not self.interactive:
            self.store.forget_tokens()
            self.on_state(SIGN_IN_AGAIN if self.had_tokens else SIGN_IN, None)
            raise SignInRequired(self.server, again=self.had_tokens)
        return await super()._perform_authorization()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        if self._refreshing:
            self._refreshing = False
            if response.status_code != 200:
                self.context.clear_tokens()
                self.store.forget_tokens()
                self.on_state(SIGN_IN_AGAIN, None)
                raise SignInRequired(self.server, again=True)
        await super()._handle_token_response(response)

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        ok = await super()._handle_refresh_response(response)
        if not ok:
            self.store.forget_tokens()
        return ok

    # -- the browser and the redirect ----------------------------------------------------------------------
    async def _open(self, url: str) -> None:
        self.on_state(SIGNING_IN, url)
        if self.opener is None:
            return
        try:
            outcome = self.opener(self.server, url)
            if asyncio.iscoroutine(outcome):
                await outcome
        except Exception as exc:  # the address is shown: the person can open it by hand
            log.warning("could not open the browser for MCP server '%s': %s", self.server, exc)

    async def _callback(self) -> AuthorizationCodeResult:
        if self.callback is None:
            raise SignInRequired(self.server, again=self.had_tokens)
        return await self.callback.wait()

    @property
    def signed_in(self) -> bool:
        return self.context.current_tokens is not None

    async def signed_in_now(self) -> None:
        """The connection is up: from now on a lost sign-in is reported, not asked for (the listener closes)."""
        self.interactive = False
        callback, self.callback = self.callback, None
        if callback is not None:
            await callback.aclose()

    async def aclose(self) -> None:
        if self.callback is not None:
            await self.callback.aclose()


async def create_auth(server: str, url: str, options: OAuthOptions, *, interactive: bool, opener: Opener | None,
                      on_state: Callable[[str, str | None], None]) -> ServerAuth:
    """The auth of a connection's HTTP client (see :class:`ServerAuth`). An interactive one listens for the
    redirect already: on the registered client's port when it is free, else on a free port (and registers
    again, since servers compare redirect URIs exactly)."""
    store = TokenStore(server, url, token_store=options.token_store)
    callback: LoopbackCallback | None = None
    redirect_uri = f"http://127.0.0.1{CALLBACK_PATH}"  # not listened on: a connection that does not sign in
    if options.client_id:
        await store.set_client_info(OAuthClientInformationFull(
            client_id=options.client_id, client_secret=options.client_secret,
            redirect_uris=[f"http://127.0.0.1:{options.callback_port or 0}{CALLBACK_PATH}"],
            token_endpoint_auth_method="client_secret_post" if options.client_secret else "none"))
    if interactive:
        store.persist = True
        callback = LoopbackCallback(server)
        registered = await store.get_client_info()
        wanted = options.callback_port or _port_of(registered)
        try:
            redirect_uri = await callback.start(wanted or 0)
        except OSError:
            if options.client_id:
                raise SignInFailed(f"Port {wanted} for the sign-in of MCP server '{server}' is in use; free it or "
                                   f"change mcpServers.{server}.oauth.callbackPort") from None
            redirect_uri = await callback.start(0)
        registered_uri = str(registered.redirect_uris[0]) if registered is not None and registered.redirect_uris else ""
        if registered is not None and not options.client_id and registered_uri != redirect_uri:
            store.forget_client()  # registered for another redirect: register again
    return ServerAuth(server, url, options, store, redirect_uri=redirect_uri, interactive=interactive,
                      callback=callback, opener=opener, on_state=on_state)


def _port_of(client: OAuthClientInformationFull | None) -> int | None:
    if client is None or not client.redirect_uris:
        return None
    parts = urlsplit(str(client.redirect_uris[0]))
    return parts.port if parts.hostname == "127.0.0.1" else None


def sign_out(server: str, url: str, options: OAuthOptions) -> None:
    """Forget the server's tokens and registration."""
    TokenStore(server, url, token_store=options.token_store).clear()


__all__ = [
    "SIGNED_IN", "SIGNING_IN", "SIGN_IN", "SIGN_IN_AGAIN", "LoopbackCallback", "OAuthOptions", "ServerAuth",
    "SignInFailed", "SignInRequired", "TokenStore", "create_auth", "oauth_options", "sign_in_message", "sign_out",
    "storage_key",
]
