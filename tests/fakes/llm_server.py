"""A real HTTP server on loopback that speaks the OpenAI and Anthropic chat APIs.

Tests (and benchmarks) start it in-process, point a provider at ``server.base_url``
and script what the "model" answers::

    with FakeLLMServer() as server:
        server.enqueue("Hello there")                              # streamed text
        server.enqueue(Reply.tool("get_weather", {"city": "Oslo"}))  # one tool call
        server.enqueue(Reply.error(429, times=2, retry_after=0.01))  # two 429s, then ...
        server.enqueue(Reply.say("done", cut_after=2))               # a stream cut after 2 chunks
        ...
        assert server.requests[0]["messages"][0]["role"] == "system"

Endpoints:

- ``POST /v1/chat/completions`` (OpenAI): streaming (SSE ``data: {...}`` chunks ending with
  ``data: [DONE]``; tool-call id and name in a first delta, the JSON arguments in several
  fragments; usage in a last chunk with empty ``choices`` when ``stream_options.include_usage``)
  and non-streaming.
- ``POST /v1/messages`` (Anthropic): streaming (``message_start``, ``content_block_start`` /
  ``content_block_delta`` (``text_delta``, ``input_json_delta``) / ``content_block_stop``,
  ``message_delta`` with usage, ``message_stop``) and non-streaming.
- ``POST /v1/embeddings``: deterministic word-hash vectors (``fakes.embeddings``); the bodies are kept in
  :attr:`FakeLLMServer.embedded`, not in ``requests``.
- ``GET /v1/models``: the ``models`` it was given (default: one, ``fake``; with ``max_model_len``, as vLLM
  says it, when the server has a ``context_window``); with ``ollama=True`` also Ollama's ``GET /api/tags``
  (names with ``:latest``, sizes); ``list_status=401`` refuses both; ``GET /props``: llama.cpp's ``n_ctx``,
  when it has one.

A server with ``context_window=N`` plays a model with an N-token window: a request whose prompt
(messages and tool schemas, about 4 characters a token) is longer is refused like OpenAI and vLLM do
(HTTP 400, "This model's maximum context length is N tokens...") or, with ``overflow="empty"``, like
llama-cpp-python's streaming server (HTTP 200 with an empty stream); :attr:`FakeLLMServer.overflows`
counts them. ``report_window=False`` keeps the window to itself (as llama-cpp-python does).
``tokenizer=True`` counts prompts (the usage it reports, the window) with a deterministic tokenizer and chat
template (:func:`tokenize`, :func:`template_tokens`) as llama.cpp counts them; ``tokenize=True`` also offers
llama.cpp's ``POST /tokenize`` (``{"content": ...}`` -> ``{"tokens": [...]}``).

When the queue is empty, ``reply_fn(body)`` computes the reply if set (return ``None`` for the
default), else the server answers :attr:`FakeLLMServer.default_text` (``"ok"``).

What real local servers do, on demand: no usage in streams (``Reply(usage=False)``, or
``FakeLLMServer(stream_usage=False)`` for every reply), an empty HTTP 200 when the prompt overflows the
context (``Reply(empty=True)``), ``finish_reason: length`` (``Reply.say(..., finish_reason="length")``),
thinking as ``reasoning_content`` (``Reply(reasoning=...)``; ``reasoning_field="reasoning"`` for
OpenRouter/Ollama's name; Anthropic thinking blocks), ``<think>`` text and tool calls written as text
(they are just text), 429 with ``Retry-After``, a 401 that echoes the key it was sent
(``Reply.error(401, echo_key=True)``), stalls before the first token (``stall_before``: before the
headers; ``stall_after=0``: after them) and mid-stream, an HTML page with status 200
(``Reply(html=...)``), an event stream of garbage (``Reply(garbage=...)``), and llama-cpp-python's way
with a second request: ``FakeLLMServer(interrupt_on_new_request=True)`` cuts the stream in progress.

The server is a :class:`http.server.ThreadingHTTPServer` (HTTP/1.1, keep-alive, chunked
transfer encoding for streams) running in a daemon thread, so it needs no event loop and works
from a plain script as well as from sync or async tests.

Its parts: :mod:`fakes.llm_replies` (the scripts: :class:`Reply`, :class:`ToolCall`), :mod:`fakes.llm_http` (the
HTTP server, its routes and its faults), :mod:`fakes.llm_streams` (the answers as each API writes them, whole or
streamed), :mod:`fakes.llm_tokens` (the token counts and the fake tokenizer); this module holds the server a test
starts and scripts.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .llm_http import Handler, RecordedRequest, Server
from .llm_replies import Reply, ReplyFn, ReplyLike, ToolCall, as_reply
from .llm_tokens import TEMPLATE_TOKENS, TOKEN_PIECES, estimate_tokens, template_tokens, tokenize

__all__ = ["TEMPLATE_TOKENS", "FakeLLMServer", "RecordedRequest", "Reply", "ReplyLike", "ToolCall", "template_tokens",
           "tokenize"]


class FakeLLMServer:
    """The fake model server; see the module docstring for the script API."""

    def __init__(self, *, default_text: str = "ok", reply_fn: ReplyFn | None = None,
                 host: str = "127.0.0.1", port: int = 0, stream_usage: bool = True,
                 interrupt_on_new_request: bool = False, context_window: int | None = None,
                 overflow: str = "error", report_window: bool = True, models: Sequence[str] = ("fake",),
                 ollama: bool = False, list_status: int | None = None, tokenizer: bool = False,
                 tokenize: bool = False) -> None:
        self.default_text = default_text
        #: True: the prompt's tokens (usage, the window) are counted with the fake tokenizer and template
        #: (:func:`template_tokens`), as a llama.cpp server counts them; False: about 4 characters a token.
        self.tokenizer = tokenizer or tokenize
        #: True: llama.cpp's ``POST /tokenize`` {"content": ...} -> {"tokens": [...]} is offered.
        self.tokenize = tokenize
        self._tokenized = 0
        #: The bodies of the ``POST /v1/embeddings`` requests (see ``fakes.embeddings``), in order.
        self.embedded: list[Any] = []
        #: Their Authorization headers ("" when none was sent), in the same order.
        self.embedded_auth: list[str] = []
        self.reply_fn = reply_fn
        #: False: no usage chunk in any stream, whatever the client asks (many local servers).
        self.stream_usage = stream_usage
        #: True: a new request cuts the stream in progress (llama-cpp-python's default).
        self.interrupt_on_new_request = interrupt_on_new_request
        self._active: set[Handler] = set()
        self._interrupted_streams = 0
        #: The model's window in tokens (None: any prompt is answered).
        self.context_window = context_window
        #: How a prompt over the window is refused: "error" (HTTP 400) or "empty" (HTTP 200, empty stream).
        self.overflow = overflow
        #: Whether ``/v1/models`` and ``/props`` say the window.
        self.report_window = report_window
        #: The models ``GET /v1/models`` (and, with ``ollama``, ``GET /api/tags``) list.
        self.models = list(models)
        #: True: also answer Ollama's ``GET /api/tags`` (an Ollama server's list).
        self.ollama = ollama
        #: An HTTP status both lists answer instead (401: a server that wants a key).
        self.list_status = list_status
        self._overflows = 0
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._queue: deque[list[Any]] = deque()  # [Reply, remaining uses]
        self._log: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._accepted = 0
        self._disconnects = 0
        self._stopping = threading.Event()
        self._httpd: Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = Server((self._host, self._port), Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-llm-server:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not running; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (append ``/v1`` for OpenAI-style clients)."""
        return f"http://{self._host}:{self.port}"

    # -- script API ---------------------------------------------------------------------------
    def enqueue(self, *replies: ReplyLike) -> FakeLLMServer:
        """Queue answers: text, a :class:`ToolCall` (or a list of them), or a :class:`Reply`."""
        with self._lock:
            for value in replies:
                reply = as_reply(value)
                self._queue.append([reply, max(1, reply.times)])
        return self

    def clear(self) -> None:
        """Forget queued replies and recorded requests."""
        with self._lock:
            self._queue.clear()
            self._log.clear()

    @property
    def pending(self) -> int:
        """How many queued replies are still unused."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[Any]:
        """The parsed JSON body of every POST, in arrival order."""
        with self._lock:
            return [r.body for r in self._log if r.method == "POST"]

    @property
    def request_log(self) -> list[RecordedRequest]:
        """Every request with its method, path and headers."""
        with self._lock:
            return list(self._log)

    @property
    def accepted(self) -> int:
        """TCP connections accepted so far (a client that reuses its connection opens one for many requests)."""
        with self._lock:
            return self._accepted

    @property
    def overflows(self) -> int:
        """How many requests were refused as longer than the window."""
        with self._lock:
            return self._overflows

    def prompt_tokens(self, request: dict[str, Any]) -> int:
        """The prompt's tokens as this server counts them: the messages (and, with a window, the tool
        schemas), about 4 characters a token; with ``tokenizer``, by the fake tokenizer and chat template."""
        if self.tokenizer:
            return template_tokens(request)
        tokens = estimate_tokens(request.get("messages", []))
        if self.context_window and request.get("tools"):
            tokens += estimate_tokens(request["tools"])
        return tokens

    def _overflowing(self, request: dict[str, Any]) -> bool:
        if not self.context_window or self.prompt_tokens(request) <= self.context_window:
            return False
        with self._lock:
            self._overflows += 1
        return True

    def _looped(self, reply: Reply, request: dict[str, Any]) -> Reply:
        """What a looping model writes for ``request``: its text repeated up to ``max_tokens``, else up to the
        window, with the usage the fake tokenizer counts."""
        prompt = self.prompt_tokens(request)
        limit = request.get("max_tokens") or request.get("max_completion_tokens")
        room = max(1, (self.context_window or 4096) - prompt)
        wanted = min(int(limit), room) if isinstance(limit, int) and limit > 0 else room
        pieces = TOKEN_PIECES.findall(reply.text or "and again ")
        text = "".join(pieces[i % len(pieces)] for i in range(wanted))
        return replace(reply, text=text, loops=False, finish_reason="length", usage=(prompt, wanted))

    @property
    def tokenized(self) -> int:
        """How many ``POST /tokenize`` requests were answered."""
        return self._tokenized

    @property
    def disconnects(self) -> int:
        """How many clients hung up while the server was stalling (a cancelled stream closes)."""
        with self._lock:
            return self._disconnects

    def wait_for_disconnects(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` clients hung up during a stall."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while self._disconnects < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
        return True

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` POSTs arrived (from another thread than the client's loop)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while sum(1 for r in self._log if r.method == "POST") < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
        return True

    @property
    def interrupted_streams(self) -> int:
        """How many streams a new request cut (``interrupt_on_new_request``)."""
        with self._lock:
            return self._interrupted_streams

    @property
    def max_concurrent(self) -> int:
        """The most requests this server had in progress at once."""
        with self._lock:
            return self._max_active

    _max_active = 0

    # -- used by the handler ----------------------------------------------------------------
    def _new_request(self, handler: Handler) -> None:
        with self._lock:
            if self.interrupt_on_new_request:
                for other in self._active:
                    if not other.interrupted:
                        other.interrupted = True
                        self._interrupted_streams += 1
            handler.interrupted = False
            self._active.add(handler)
            self._max_active = max(self._max_active, len(self._active))

    def _stream_done(self, handler: Handler) -> None:
        with self._lock:
            self._active.discard(handler)

    def _record(self, request: RecordedRequest) -> None:
        with self._arrived:
            self._log.append(request)
            self._arrived.notify_all()

    def _note_disconnect(self) -> None:
        with self._arrived:
            self._disconnects += 1
            self._arrived.notify_all()

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
                self._accepted += 1
            else:
                self._connections.discard(conn)

    def _next_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                entry = self._queue[0]
                entry[1] -= 1
                if entry[1] <= 0:
                    self._queue.popleft()
                return entry[0]
        fn = self.reply_fn
        if fn is not None:
            value = fn(request)
            if value is not None:
                return as_reply(value)
        return Reply(text=self.default_text)
