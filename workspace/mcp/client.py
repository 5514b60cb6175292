"""What the client asks of one MCP server: tools, prompts, resources, subscriptions, roots.

:class:`Connection` is a :class:`~workspace.mcp.actor.ConnectionActor` (the task that owns the
SDK's transport and session, and starts the server on first use) plus the requests. They come
from any task of the same event loop and use the session directly (the session's dispatcher
correlates requests and responses), so a call costs what the SDK's own
``ClientSession.call_tool`` costs. Errors of the connection are :class:`MCPError` naming the fix;
a tool's own error is a result.

Cancellation: when the task awaiting :meth:`Connection.call_tool` is cancelled (the
user stopped the run), the SDK's dispatcher sends ``notifications/cancelled`` for the
request before the cancellation propagates (``cancel_on_abandon``, the default for
every request but ``initialize``), and the connection stays usable. A per-call time
limit (``timeout``) is the SDK's request timeout, which sends the same notification.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import mcp.types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError as SDKError

from workspace.errors import MCPError
from workspace.mcp.actor import ConnectionActor
from workspace.mcp.status import ServerState
from workspace.mcp.transport import CONNECTION_CLOSED, REQUEST_TIMEOUT

log = logging.getLogger("workspace.mcp")


class Connection(ConnectionActor):
    """A server connection (see :class:`~workspace.mcp.actor.ConnectionActor`) and the requests of the client."""

    def _call_error(self, exc: SDKError, what: str, timeout: float | None) -> MCPError:
        where = f"mcpServers.{self.name}"
        if exc.code == REQUEST_TIMEOUT:
            return MCPError(
                f"MCP server '{self.name}' did not answer {what} within {timeout or self.spec.timeout:g} s; the "
                f"request was cancelled. Raise {where}.timeout if the tool is just slow"
            )
        if exc.code == CONNECTION_CLOSED and self.needs_sign_in:
            from workspace.mcp.oauth import sign_in_message

            return MCPError(sign_in_message(self.name, again=self.auth_state == "sign-in-again"))
        if exc.code == CONNECTION_CLOSED:
            reason = self._close_reason or self.reason or "the connection closed"
            if reason == "the server exited":
                reason = "the server exited (it may have crashed)"
            return MCPError(self._with_stderr(
                f"MCP server '{self.name}' stopped during {what}: {reason}. It is started again on the next call"
            ))
        return MCPError(f"MCP server '{self.name}' answered {what} with an error: {exc.message} (code {exc.code})")

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout: float | None = None,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
    ) -> types.CallToolResult:
        """Call a tool; errors of the connection raise MCPError (a tool's own error is a result)."""
        session = self._session
        if session is None or self.state is not ServerState.READY:
            session = await self.ensure_ready()
        limit = timeout if timeout is not None else self.spec.timeout
        try:
            return await session.call_tool(name, arguments, read_timeout_seconds=limit,
                                           progress_callback=_progress_fn(progress))
        except SDKError as exc:
            raise self._call_error(exc, f"'{name}'", limit) from None
        except RuntimeError as exc:  # invalid structured content, an unexpected result shape
            raise MCPError(f"MCP server '{self.name}' returned an unusable result for '{name}': {exc}") from None

    async def _request(self, what: str, fn: Callable[[ClientSession], Any]) -> Any:
        session = await self.ensure_ready()
        try:
            return await fn(session)
        except SDKError as exc:
            raise self._call_error(exc, what, None) from None

    async def list_tools(self, *, refresh: bool = False) -> list[types.Tool]:
        session = await self.ensure_ready()
        if refresh:
            try:
                self.tools = await self._list_tools(session)
            except SDKError as exc:
                raise self._call_error(exc, "tools/list", None) from None
            self._changed()
        return list(self.tools)

    async def list_prompts(self) -> list[types.Prompt]:
        await self.ensure_ready()
        if self.capabilities is None or self.capabilities.prompts is None:
            return []

        async def fetch(session: ClientSession) -> list[types.Prompt]:
            return await _paginate(session.list_prompts, "prompts")

        result: list[types.Prompt] = await self._request("prompts/list", fetch)
        return result

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> types.GetPromptResult:
        async def fetch(session: ClientSession) -> types.GetPromptResult:
            return await session.get_prompt(name, arguments)

        result: types.GetPromptResult = await self._request(f"prompt '{name}'", fetch)
        return result

    async def list_resources(self) -> list[types.Resource]:
        await self.ensure_ready()
        if self.capabilities is None or self.capabilities.resources is None:
            return []

        async def fetch(session: ClientSession) -> list[types.Resource]:
            return await _paginate(session.list_resources, "resources")

        result: list[types.Resource] = await self._request("resources/list", fetch)
        return result

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        await self.ensure_ready()
        if self.capabilities is None or self.capabilities.resources is None:
            return []

        async def fetch(session: ClientSession) -> list[types.ResourceTemplate]:
            return await _paginate(session.list_resource_templates, "resource_templates")

        result: list[types.ResourceTemplate] = await self._request("resources/templates/list", fetch)
        return result

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        async def fetch(session: ClientSession) -> types.ReadResourceResult:
            return await session.read_resource(uri)

        result: types.ReadResourceResult = await self._request(f"resource '{uri}'", fetch)
        if self.subscriptions.get(uri):
            self.subscriptions[uri] = False  # read since it changed
            self._changed()
        return result

    async def roots_changed(self) -> None:
        """Tell the server the client's roots changed (``notifications/roots/list_changed``)."""
        session = self.session
        if session is None:
            return
        try:
            with warnings.catch_warnings():  # roots are deprecated by the 2026 drafts; servers still use them
                warnings.simplefilter("ignore")
                await session.send_roots_list_changed()
        except Exception as exc:
            self.note(f"could not tell the server the roots changed: {exc}")

    async def subscribe(self, uri: str, *, on: bool = True) -> None:
        """Subscribe to (or unsubscribe from) a resource's updates (``resources/subscribe``)."""
        await self.ensure_ready()
        if self.capabilities is None or self.capabilities.resources is None or \
                not self.capabilities.resources.subscribe:
            raise MCPError(f"MCP server '{self.name}' does not offer resource subscriptions (it did not announce "
                           "resources.subscribe): watch it by reading the resource again")

        async def send(session: ClientSession) -> Any:
            with warnings.catch_warnings():  # deprecated by the 2026 drafts; servers still offer it
                warnings.simplefilter("ignore")
                return await (session.subscribe_resource(uri) if on else session.unsubscribe_resource(uri))

        await self._request(f"resources/{'subscribe' if on else 'unsubscribe'} '{uri}'", send)
        if on:
            self.subscriptions.setdefault(uri, False)
        else:
            self.subscriptions.pop(uri, None)
            self.changed_at.pop(uri, None)
        self._changed()


async def _paginate(method: Callable[..., Any], attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        result = await method(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        items.extend(getattr(result, attr))
        cursor = result.next_cursor
        if not cursor:
            break
    return items


def _progress_fn(progress: Callable[[float, float | None, str | None], Any] | None) -> Any:
    if progress is None:
        return None

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        try:
            outcome = progress(value, total, message)
            if asyncio.iscoroutine(outcome):
                await outcome
        except Exception:
            log.debug("progress callback failed", exc_info=True)

    return on_progress



def dump_all(items: Iterable[Any]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]
