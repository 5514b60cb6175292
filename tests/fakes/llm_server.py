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
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .embeddings import embeddings_response

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "ReplyLike", "ToolCall"]

_ids = itertools.count(1)


@dataclass(frozen=True)
class ToolCall:
    """One tool call the fake model makes.

    ``arguments`` is a dict (sent as JSON) or a raw string sent as-is, which is how tests
    produce malformed JSON arguments.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One scripted answer (or fault) of the fake model.

    Content: ``text`` and/or ``tool_calls``. Faults: ``status`` (an HTTP error with
    ``error_message`` and optional ``retry_after`` seconds), ``cut_after`` (close the socket
    after that many stream chunks; ``cut_clean`` ends the HTTP body properly instead, so the
    stream simply stops without a finish), ``stall_before`` (seconds to wait before answering),
    ``stall_after``/``stall_seconds`` (wait that long after that many chunks). ``times`` is
    how many requests this reply answers before the next queued one is used. An
    ``error_message`` may echo the request as some servers do: ``{authorization}`` (any request
    header, lower-case) and ``{url}`` are filled in (``Reply.error(401, "Incorrect API key
    provided: {authorization}")``).
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    status: int | None = None
    error_message: str | None = None
    retry_after: float | None = None
    times: int = 1
    cut_after: int | None = None
    cut_clean: bool = False
    stall_before: float = 0.0
    stall_after: int | None = None
    stall_seconds: float = 0.0
    #: Seconds between stream chunks (a slow model).
    chunk_delay: float = 0.0
    #: Text is streamed in pieces of this many characters (None: one piece per word).
    chunk_size: int | None = None
    #: Tool-call arguments are streamed in this many fragments (at least 2 when long enough).
    fragments: int = 3
    #: Overrides the finish reason ("stop"/"tool_calls", or Anthropic's "end_turn"/"tool_use").
    finish_reason: str | None = None
    #: (prompt_tokens, completion_tokens); estimated from the sizes when None; False: no usage is sent at all.
    usage: tuple[int, int] | bool | None = None
    #: Thinking streamed before the text (OpenAI: ``delta.<reasoning_field>``; Anthropic: a thinking block).
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    #: HTTP 200 with an event-stream content type and no data at all (a prompt over llama.cpp's context).
    empty: bool = False
    #: HTTP 200 with this HTML page instead of an event stream (a wrong api_base: a web app's page).
    html: str | None = None
    #: HTTP 200 event stream whose data lines are this text, not JSON.
    garbage: str | None = None
    #: A 401's message ends with the Authorization header the server received (as some servers do).
    echo_key: bool = False
    #: A looping model: ``text`` written again and again until the request's ``max_tokens`` (finish "length")
    #: or, without one, until the context window is full (finish "length", as llama.cpp stops), counted with
    #: the fake tokenizer (a server with ``context_window``).
    loops: bool = False

    # -- builders ---------------------------------------------------------------------------
    @classmethod
    def say(cls, text: str, **options: Any) -> Reply:
        """A text answer."""
        return cls(text=text, **options)

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | str | None = None, *,
             id: str | None = None, **options: Any) -> Reply:
        """One tool call (``arguments`` a dict, or a raw string for malformed JSON)."""
        return cls(tool_calls=(ToolCall(name, {} if arguments is None else arguments, id),), **options)

    @classmethod
    def tools(cls, *calls: ToolCall | tuple[str, dict[str, Any] | str], text: str = "",
              **options: Any) -> Reply:
        """Several tool calls in one turn, optionally after some text."""
        built = tuple(c if isinstance(c, ToolCall) else ToolCall(c[0], c[1]) for c in calls)
        return cls(text=text, tool_calls=built, **options)

    @classmethod
    def error(cls, status: int, message: str | None = None, *, times: int = 1,
              retry_after: float | None = None, **options: Any) -> Reply:
        """An HTTP error answered to the next ``times`` requests."""
        return cls(status=status, error_message=message, times=times, retry_after=retry_after, **options)

    def but(self, **changes: Any) -> Reply:
        """A copy with some fields changed (``Reply.say("x").but(cut_after=2)``)."""
        return replace(self, **changes)


ReplyLike = Reply | str | ToolCall | Sequence[ToolCall]
ReplyFn = Callable[[dict[str, Any]], "ReplyLike | None"]


def _as_reply(value: ReplyLike) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(text=value)
    if isinstance(value, ToolCall):
        return Reply(tool_calls=(value,))
    return Reply(tool_calls=tuple(value))


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


def _split_text(text: str, size: int | None) -> list[str]:
    if not text:
        return []
    if size:
        return [text[i:i + size] for i in range(0, len(text), size)]
    pieces: list[str] = []
    current = ""
    for ch in text:
        current += ch
        if ch == " ":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def _split_args(args: str, fragments: int) -> list[str]:
    if not args:
        return [""]
    n = max(1, min(fragments, len(args)))
    step = -(-len(args) // n)
    return [args[i:i + step] for i in range(0, len(args), step)]


def _estimate_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


#: The fake tokenizer's pieces: a word (with the space before it) in pieces of up to 6 letters, up to 3
#: digits, one mark of punctuation, a run of other white space: about what a BPE tokenizer of a local model
#: (Llama, Qwen) counts for English prose and code.
_TOKEN = re.compile(r" ?[A-Za-z]{1,6}| ?\d{1,3}|\s+|[^\sA-Za-z\d]")
#: Tokens the fake chat template adds per message (``<|im_start|>role\n`` ... ``<|im_end|>\n``).
TEMPLATE_TOKENS = 5


def tokenize(text: str) -> list[int]:
    """The fake server's deterministic tokenizer (what ``POST /tokenize`` answers): token ids of ``text``."""
    return [sum(piece.encode()) % 32_000 for piece in _TOKEN.findall(text)]


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return json.dumps(message)
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content else ""
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {} if isinstance(call, dict) else {}
        text += f"\n{function.get('name', '')} {function.get('arguments', '')}"
    return text


def template_tokens(request: dict[str, Any]) -> int:
    """The prompt's tokens by the fake tokenizer, as a llama.cpp server counts them: each message's text
    and its template tokens, the tool schemas' JSON, and the assistant's header."""
    tokens = sum(len(tokenize(_message_text(m))) + TEMPLATE_TOKENS for m in request.get("messages") or ())
    if request.get("tools"):
        tokens += len(tokenize(json.dumps(request["tools"], separators=(",", ":"))))
    return tokens + 3


class _Server(ThreadingHTTPServer):
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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server
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
            if reply.cut_after is not None and count >= reply.cut_after:
                if reply.cut_clean:
                    self._end_stream()
                    self.close_connection = True
                    return
                raise _Cut
            if reply.stall_after is not None and count == reply.stall_after:
                self._sleep(reply.stall_seconds)
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

    # -- OpenAI ----------------------------------------------------------------------------
    def _openai(self, reply: Reply, request: dict[str, Any]) -> None:
        if reply.loops:
            reply = self.server.owner._looped(reply, request)
        model = str(request.get("model") or "fake")
        rid = f"chatcmpl-fake{next(_ids)}"
        created = int(time.time())
        calls = [(c.id or f"call_fake{next(_ids)}", c) for c in reply.tool_calls]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        prompt, completion = reply.usage if isinstance(reply.usage, tuple) else (
            self.server.owner.prompt_tokens(request),
            max(1, (len(reply.text) + len(reply.reasoning)
                    + sum(len(c.arguments_json()) + len(c.name) for _, c in calls)) // 4))
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        if reply.reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": max(1, len(reply.reasoning) // 4)}
        if not request.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if calls:
                message["tool_calls"] = [
                    {"id": cid, "type": "function",
                     "function": {"name": c.name, "arguments": c.arguments_json()}} for cid, c in calls]
            self._send_json(200, {
                "id": rid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage})
            return
        include_usage = (bool((request.get("stream_options") or {}).get("include_usage")) and reply.usage is not False
                         and self.server.owner.stream_usage)

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            payload = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason,
                                    "logprobs": None}]}
            return b"data: " + json.dumps(payload).encode() + b"\n\n"

        def events() -> Iterator[bytes]:
            yield chunk({"role": "assistant", "content": ""})
            for piece in _split_text(reply.reasoning, reply.chunk_size):
                yield chunk({reply.reasoning_field: piece})
            for piece in _split_text(reply.text, reply.chunk_size):
                yield chunk({"content": piece})
            for index, (cid, call) in enumerate(calls):
                yield chunk({"tool_calls": [{"index": index, "id": cid, "type": "function",
                                             "function": {"name": call.name, "arguments": ""}}]})
                for fragment in _split_args(call.arguments_json(), reply.fragments):
                    yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            yield chunk({}, finish)
            if include_usage:
                payload = {"id": rid, "object": "chat.completion.chunk", "created": created,
                           "model": model, "choices": [], "usage": usage}
                yield b"data: " + json.dumps(payload).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"

        self._events(reply, events())

    # -- Anthropic -------------------------------------------------------------------------
    def _anthropic(self, reply: Reply, request: dict[str, Any]) -> None:
        model = str(request.get("model") or "claude-fake")
        mid = f"msg_fake{next(_ids)}"
        calls = [(c.id or f"toolu_fake{next(_ids)}", c) for c in reply.tool_calls]
        stop = reply.finish_reason or ("tool_use" if calls else "end_turn")
        prompt, completion = reply.usage if isinstance(reply.usage, tuple) else (
            _estimate_tokens([request.get("system"), request.get("messages", [])]),
            max(1, (len(reply.text) + sum(len(c.arguments_json()) + len(c.name) for _, c in calls)) // 4))
        if not request.get("stream"):
            content: list[dict[str, Any]] = []
            if reply.text:
                content.append({"type": "text", "text": reply.text})
            for cid, call in calls:
                try:
                    parsed: Any = json.loads(call.arguments_json() or "{}")
                except ValueError:
                    parsed = {}
                content.append({"type": "tool_use", "id": cid, "name": call.name, "input": parsed})
            self._send_json(200, {
                "id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": prompt, "output_tokens": completion}})
            return

        def event(name: str, payload: dict[str, Any]) -> bytes:
            return b"event: " + name.encode() + b"\ndata: " + json.dumps(payload).encode() + b"\n\n"

        def events() -> Iterator[bytes]:
            yield event("message_start", {"type": "message_start", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": prompt, "output_tokens": 1}}})
            index = 0
            if reply.reasoning:
                yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "thinking", "thinking": ""}})
                for piece in _split_text(reply.reasoning, reply.chunk_size):
                    yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                        "delta": {"type": "thinking_delta", "thinking": piece}})
                yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "signature_delta", "signature": "sig"}})
                yield event("content_block_stop", {"type": "content_block_stop", "index": index})
                index += 1
            if reply.text:
                yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "text", "text": ""}})
                for piece in _split_text(reply.text, reply.chunk_size):
                    yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                        "delta": {"type": "text_delta", "text": piece}})
                yield event("content_block_stop", {"type": "content_block_stop", "index": index})
                index += 1
            for cid, call in calls:
                yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "tool_use", "id": cid,
                                                                      "name": call.name, "input": {}}})
                for fragment in _split_args(call.arguments_json(), reply.fragments):
                    yield event("content_block_delta", {
                        "type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": fragment}})
                yield event("content_block_stop", {"type": "content_block_stop", "index": index})
                index += 1
            yield event("message_delta", {"type": "message_delta",
                                          "delta": {"stop_reason": stop, "stop_sequence": None},
                                          "usage": {"output_tokens": completion}})
            yield event("message_stop", {"type": "message_stop"})

        self._events(reply, events())


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
        self._active: set[_Handler] = set()
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
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _Server((self._host, self._port), _Handler)
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
                reply = _as_reply(value)
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
        tokens = _estimate_tokens(request.get("messages", []))
        if self.context_window and request.get("tools"):
            tokens += _estimate_tokens(request["tools"])
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
        pieces = _TOKEN.findall(reply.text or "and again ")
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
    def _new_request(self, handler: _Handler) -> None:
        with self._lock:
            if self.interrupt_on_new_request:
                for other in self._active:
                    if not other.interrupted:
                        other.interrupted = True
                        self._interrupted_streams += 1
            handler.interrupted = False
            self._active.add(handler)
            self._max_active = max(self._max_active, len(self._active))

    def _stream_done(self, handler: _Handler) -> None:
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
                return _as_reply(value)
        return Reply(text=self.default_text)
