"""A server-sent event is read up to a bound: a server sending one line that never ends had the SDK gather it,
copying it again with every piece (an audit: 281 MiB and a whole core for the 60 s of the first-token wait; a
faster server fills the memory). Real loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from fakes.redirecting import serving

from workspace.errors import ProviderError
from workspace.messages import TextMessage
from workspace.providers import openai_provider

pytestmark = pytest.mark.timeout(120)  # bounds a hang only


class _EndlessLine(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        piece = b"data: " + b"x" * 65_536
        try:
            for _ in range(400):  # 26 MB, never a newline
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                piece = b"x" * 65_536
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client gave up, as it should
            pass

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endless() -> Iterator[str]:
    with serving(_EndlessLine) as address:
        yield f"{address}/v1"


async def test_an_event_that_never_ends_is_refused_at_the_bound(endless: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_provider, "MAX_EVENT_BYTES", 1 << 20)
    provider = openai_provider.OpenAICompatibleProvider("openai/m", api_base=endless, api_key="sk-test",
                                                        max_retries=0)
    seen: list[Any] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(system=None, messages=[TextMessage("user", "hi")], tools=[], settings={}):
            seen.append(chunk)
    message = str(info.value)
    assert "an event longer than 1 MiB without ending it" in message and "check the API base" in message
    assert "EventTooLongError" not in message and info.value.reason == "not_a_stream" and not info.value.retryable
