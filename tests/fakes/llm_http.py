"""The loopback server's HTTP side: a :class:`http.server.ThreadingHTTPServer` and its request handler
(routes, recorded requests, errors, streams written in chunks with their cuts, stalls and delays). What
it answers comes from its :class:`~fakes.llm_server.FakeLLMServer` (the ``owner``)."""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from .embeddings import embeddings_response
from .llm_replies import Reply
from .llm_streams import anthropic_answer, openai_answer
from .llm_tokens import tokenize

if TYPE_CHECKING:
    from .llm_server import FakeLLMServer


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    #: Header names in lower case.
    headers: dict[str, str]
    body: Any


class _Cut(Exception):
    """Raised inside the handler to drop the connection mid-stream."""


class _Gone(Exception):
    """The client went away (or the server is stopping)."""

class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    #: The listen backlog. socketserver's default, 5, drops the SYNs of a burst of new connections (many
    #: concurrent clients; litellm and the plain openai SDK open one per streamed request: they close the response
    #: at ``[DONE]``, before the chunked body's end) and each dropped one waits the kernel's 1 s retransmit: 32
    #: cases at once ran slower than 8. Real servers keep a deep backlog (uvicorn, which vLLM uses: 2048).
    request_queue_size = 1024

    owner: FakeLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up (cancel tests) and cut streams are expected; stay quiet.
        return

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: Server
    #: Set when another request arrived on a server that interrupts (``interrupt_on_new_request``).
    interrupted = False

    def log_message(self, format: str, *args: Any) -> None:
        return

    # -- plumbing -----------------------------------------------------------------------------
    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.owner._track(self.connection, add=False)

    def _sleep(self, seconds: float) -> None:
        """Wait, but notice a client that hangs up (counted in ``disconnects``) or a stop."""
        owner = self.server.owner
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if owner._stopping.wait(min(left, 0.02)):
                raise _Gone
            if self._client_gone():
                owner._note_disconnect()
                raise _Gone

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError as exc:
            raise _Gone from exc

    def _end_stream(self) -> None:
        with contextlib.suppress(OSError):
            self.wfile.write(b"0\r\n\r\n")

    def _events(self, reply: Reply, events: Iterator[bytes]) -> None:
        """Write SSE events, applying the reply's cut / stall / delay faults."""
        self._start_stream()
        for count, event in enumerate(events):
            if self.interrupted:
                raise _Cut  # llama-cpp-python: a new request stops the stream in progress
            if reply.stall_after is not None and count == reply.stall_after:
                self._sleep(reply.stall_seconds)  # (before a cut at the same count: the chunks sent are read first)
            if reply.cut_after is not None and count >= reply.cut_after:
                if reply.cut_clean:
                    self._end_stream()
                    self.close_connection = True
                    return
                raise _Cut
            if count and reply.chunk_delay:
                self._sleep(reply.chunk_delay)
            self._write_chunk(event)
        self._end_stream()

    # -- HTTP verbs ------------------------------------------------------------------------
    def do_GET(self) -> None:
        owner = self.server.owner
        owner._record(RecordedRequest("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None))
        window = owner.context_window if owner.report_window else None
        if owner.list_status is not None and self.path.rstrip("/").endswith(("/models", "/api/tags")):
            self._send_json(owner.list_status, {"error": {"message": "listing refused", "type": "refused"}})
        elif self.path.rstrip("/").endswith("/models"):
            listed: list[dict[str, Any]] = []
            for name in owner.models:
                model: dict[str, Any] = {"id": name, "object": "model", "owned_by": "fake-llm-server"}
                if window:
                    model["max_model_len"] = window
                listed.append(model)
            self._send_json(200, {"object": "list", "data": listed})
        elif self.path.rstrip("/") == "/api/tags" and owner.ollama:
            self._send_json(200, {"models": [{"name": name if ":" in name else f"{name}:latest", "model": name,
                                              "size": 4_000_000_000, "details": {"format": "gguf"}}
                                             for name in owner.models]})
        elif self.path.rstrip("/") == "/props" and window:
            self._send_json(200, {"default_generation_settings": {"n_ctx": window}, "total_slots": 1})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else {}
        except ValueError:
            body = raw.decode(errors="replace")
        if self.path.rstrip("/") == "/tokenize":  # llama.cpp's; counted, not recorded: ``requests`` are the model's
            if not (owner.tokenize and isinstance(body, dict)):
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            with owner._lock:
                owner._tokenized += 1
            self._send_json(200, {"tokens": tokenize(str(body.get("content") or ""))})
            return
        if re.sub(r"\?.*", "", self.path).rstrip("/").endswith("/embeddings"):  # counted, not in ``requests``
            with owner._lock:
                owner.embedded.append(body)
                owner.embedded_auth.append(self.headers.get("Authorization") or "")
            self._send_json(*embeddings_response(body))
            return
        owner._record(RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        # A query may sit inside the path (a client that appended its route to an api_base with a
        # query: "/v1?api-key=K/chat/completions"): route on the path without it.
        path = re.sub(r"\?[^/]*", "", self.path).rstrip("/")
        anthropic = path.endswith("/messages")
        if not (anthropic or path.endswith("/chat/completions")):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        request = body if isinstance(body, dict) else {}
        if not anthropic and owner._overflowing(request):
            self._overflow(owner, request)
            return
        reply = owner._next_reply(request)
        owner._new_request(self)
        try:
            self._sleep(reply.stall_before)
            if reply.status is not None:
                self._error(reply, anthropic)
            elif reply.html is not None or reply.empty or reply.garbage is not None:
                self._not_a_stream(reply)
            elif anthropic:
                self._anthropic(reply, request)
            else:
                self._openai(reply, request)
        except _Cut:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        except (_Gone, OSError):
            self.close_connection = True
        finally:
            owner._stream_done(self)

    def _not_a_stream(self, reply: Reply) -> None:
        if reply.html is not None:
            data = reply.html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self._start_stream()
        if reply.garbage is not None:
            for line in reply.garbage.splitlines() or [reply.garbage]:
                self._write_chunk(b"data: " + line.encode() + b"\n\n")
        self._end_stream()

    def _error(self, reply: Reply, anthropic: bool) -> None:
        status = reply.status or 500
        if reply.echo_key:
            sent = self.headers.get("Authorization") or self.headers.get("x-api-key") or ""
            reply = reply.but(error_message=f"{reply.error_message or 'Incorrect API key provided'}: {sent}")
        message = reply.error_message or {
            400: "Bad request (fake server)",
            401: "Incorrect API key provided (fake server)",
            403: "Permission denied (fake server)",
            404: "Model not found (fake server)",
            429: "Rate limit reached (fake server)",
            500: "Internal server error (fake server)",
            503: "Service unavailable (fake server)",
        }.get(status, f"HTTP {status} (fake server)")
        if "{" in message:  # echo what the client sent, as real servers do: "{authorization}", "{x-api-key}", "{url}"
            fields = {k.lower(): v for k, v in self.headers.items()}
            fields["url"] = self.path
            message = re.sub(r"\{([a-z0-9-]+)\}", lambda m: fields.get(m.group(1), m.group(0)), message)
        kind = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}.get(
                    status, "api_error")
        headers: dict[str, str] = {}
        if reply.retry_after is not None:
            headers["Retry-After"] = f"{reply.retry_after:g}"
        if anthropic:
            payload: Any = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            payload = {"error": {"message": message, "type": kind, "param": None, "code": status}}
        self._send_json(status, payload, headers)

    def _overflow(self, owner: FakeLLMServer, request: dict[str, Any]) -> None:
        """Refuse a prompt longer than the window, as vLLM/OpenAI (400) or llama-cpp-python (empty 200) do."""
        if owner.overflow == "empty" and request.get("stream"):
            self._start_stream()
            self._end_stream()
            return
        tokens = owner.prompt_tokens(request)
        message = (f"This model's maximum context length is {owner.context_window} tokens. However, you requested "
                   f"{tokens} tokens in the messages. Please reduce the length of the messages.")
        self._send_json(400, {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                                        "code": "context_length_exceeded"}})

    # -- the two APIs ------------------------------------------------------------------------
    def _openai(self, reply: Reply, request: dict[str, Any]) -> None:
        owner = self.server.owner
        if reply.loops:
            reply = owner._looped(reply, request)
        self._answer(reply, openai_answer(reply, request, prompt_tokens=owner.prompt_tokens,
                                          stream_usage=owner.stream_usage))

    def _anthropic(self, reply: Reply, request: dict[str, Any]) -> None:
        self._answer(reply, anthropic_answer(reply, request))

    def _answer(self, reply: Reply, answer: dict[str, Any] | Iterator[bytes]) -> None:
        if isinstance(answer, dict):
            self._send_json(200, answer)
        else:
            self._events(reply, answer)
