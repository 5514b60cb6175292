"""An MCP server that requires OAuth 2.1 sign-in, on loopback, for the tests (no network).

The SDK's ``MCPServer`` with its auth settings plays both parts: the authorization server (metadata,
dynamic client registration, ``/authorize``, ``/token``, ``/revoke``) through
:class:`MemoryAuthProvider`, and the protected MCP resource (``/mcp``, protected resource metadata, a
401 with ``WWW-Authenticate`` without a valid bearer token). ``/authorize`` signs "ada" in at once
(no login page): the test's "browser" is an HTTP client that follows the redirect to the client's
loopback listener. The test reaches into the provider to expire or revoke tokens::

    with OAuthServer(token_lifetime=3600) as server:
        server.url                      # http://127.0.0.1:PORT/mcp
        server.provider.expire_access() # the next call must refresh
        server.provider.revoke_all()    # the next call must sign in again

``python mcp_oauth_server.py PORT`` serves until killed (for a subprocess or a person trying it).
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPE = "mcp:tools"


class MemoryAuthProvider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Clients, codes and tokens in memory; every authorization is granted to the user "ada"."""

    def __init__(self, *, token_lifetime: int = 3600) -> None:
        self.token_lifetime = token_lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        #: access token -> its refresh token (revoking one revokes both)
        self.pairs: dict[str, str] = {}
        self.registrations = 0
        self.authorizations = 0
        self.refreshes = 0
        self.lock = threading.Lock()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        with self.lock:
            assert client_info.client_id is not None
            self.clients[client_info.client_id] = client_info
            self.registrations += 1

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        with self.lock:
            assert client.client_id is not None
            self.codes[code] = AuthorizationCode(
                code=code, scopes=params.scopes or [SCOPE], expires_at=time.time() + 300,
                client_id=client.client_id, code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
                subject="ada")
            self.authorizations += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        with self.lock:
            self.codes.pop(authorization_code.code, None)
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        with self.lock:
            self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                              expires_at=int(time.time()) + self.token_lifetime, resource=resource,
                                              subject="ada")
            self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource,
                                                 subject="ada")
            self.pairs[access] = refresh
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.token_lifetime,
                          refresh_token=refresh, scope=" ".join(scopes))

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        with self.lock:
            self.refresh.pop(refresh_token.token, None)
            for access, refresh in list(self.pairs.items()):
                if refresh == refresh_token.token:
                    self.access.pop(access, None)
                    self.pairs.pop(access, None)
            self.refreshes += 1
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        with self.lock:
            refresh = self.pairs.pop(token.token, None) if isinstance(token, AccessToken) else token.token
            self.access.pop(token.token, None)
            if refresh is not None:
                self.refresh.pop(refresh, None)

    # -- what the tests do to the server ------------------------------------------------------------
    def expire_access(self) -> None:
        """Every access token expires now (their refresh tokens still work)."""
        with self.lock:
            for token in self.access.values():
                token.expires_at = int(time.time()) - 10

    def revoke_all(self) -> None:
        """Every token is revoked (the user signed this client out at the server)."""
        with self.lock:
            self.access.clear()
            self.refresh.clear()
            self.pairs.clear()


def build(port: int, provider: MemoryAuthProvider) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "oauth-test-server", auth_server_provider=provider, log_level="WARNING",
        auth=AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False,
                          client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE],
                                                                                default_scopes=[SCOPE]),
                          revocation_options=RevocationOptions(enabled=True), required_scopes=[SCOPE]),
    )

    @server.tool()
    def whoami() -> str:
        """Who is signed in."""
        return "signed in as ada"

    return server


class OAuthServer:
    """The server in a thread of its own (its own event loop), on a free loopback port."""

    def __init__(self, *, token_lifetime: int = 3600, port: int | None = None) -> None:
        from tests.fakes.mcp_servers import free_port

        self.port = port or free_port()
        self.provider = MemoryAuthProvider(token_lifetime=token_lifetime)
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._running: Any = None

    def __enter__(self) -> OAuthServer:
        from tests.fakes.mcp_servers import app_in_thread

        app = build(self.port, self.provider).streamable_http_app(host="127.0.0.1")
        self._running = app_in_thread(app, self.port)
        self._running.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._running is not None:
            self._running.__exit__(None, None, None)


if __name__ == "__main__":
    with OAuthServer(port=int(sys.argv[1]) if len(sys.argv) > 1 else None) as running:
        print(running.url, flush=True)
        while True:
            time.sleep(3600)
