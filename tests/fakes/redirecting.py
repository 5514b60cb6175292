"""Loopback HTTP servers of a few lines (:func:`serving`), and one that answers every request with 307 to the same
path on another address: what a redirect may carry (a key, a probe) is seen by that address's own server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Redirecting(BaseHTTPRequestHandler):
    """Answers every request with 307 to the same path on ``self.server.target``."""

    def do_POST(self) -> None:
        self.send_response(307)
        self.send_header("Location", f"{self.server.target}{self.path}")  # type: ignore[attr-defined]
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], **attributes: Any) -> Iterator[str]:
    """The address (``http://127.0.0.1:PORT``) of a loopback server answering with ``handler`` (``attributes`` set on
    the server, where the handler finds them as ``self.server.NAME``), in a thread, until the block ends."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    for name, value in attributes.items():
        setattr(httpd, name, value)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@contextmanager
def redirecting_to(target: str) -> Iterator[str]:
    """The address of a server redirecting every request to ``target``."""
    with serving(_Redirecting, target=target) as address:
        yield address
