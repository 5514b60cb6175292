"""A loopback HTTP server that answers every request with 307 to the same path on another address: what a
redirect may carry (a key, a probe) is seen by that address's own server."""

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
def redirecting_to(target: str) -> Iterator[str]:
    """The address (``http://127.0.0.1:PORT``) of a server redirecting every request to ``target``."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
    httpd.target = target  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
