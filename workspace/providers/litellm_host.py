"""litellm's own process: the window's litellm calls, served over stdin and stdout.

Started by :mod:`workspace.providers.litellm_process` as ``python -m workspace.providers.litellm_host``.
Importing litellm takes seconds, much of it in C and Rust code that holds the interpreter lock for
40-50 ms at a time (its tokenizer, its pydantic types, its model map): in the window's process that
froze the window for three frames at a time. Here it runs beside the window, on another core.

Each request line (see :mod:`workspace.providers.wire`) runs as a task of this process's event loop,
so streams, counts and look-ups go on side by side; ``cancel`` cancels one. The providers are
:class:`~workspace.providers.litellm_provider.LiteLLMProvider` s, one per model, server, key and
options, kept for the process's life: retries, time limits, the one-at-a-time limit of a local server
and the failures' wording are theirs, unchanged. stdout carries only the protocol (file descriptor 1
is pointed at stderr, so a library's ``print`` cannot corrupt it); log records go to stderr, which
the window's process writes into its log. The process ends when stdin closes (the window quit).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import IO, Any

from workspace.messages import Message
from workspace.providers import wire
from workspace.providers.base import Chunk
from workspace.providers.litellm_provider import LiteLLMProvider, known_chat_models, preload_litellm
from workspace.providers.openai_format import MessageConverter

log = logging.getLogger("workspace.providers.litellm_host")

#: How a self-contained bundle (``sys.frozen``: no ``python -m``) is asked to be this process instead of the
#: app: its entry point (packaging/robotlab_entry.py) runs :func:`main` when it is the first argument.
BUNDLE_ARG = "--litellm-host"


class _Server:
    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._providers: dict[str, LiteLLMProvider] = {}

    # -- the pipe ----------------------------------------------------------------------------------
    def _send(self, message: Mapping[str, Any]) -> None:
        try:
            line = wire.encode(message)
        except (TypeError, ValueError) as exc:  # a chunk that is not JSON: say so instead of losing the request
            line = wire.encode({"id": message.get("id"), "error": wire.error_to_dict(
                TypeError(f"litellm's process could not send its answer: {exc}"))})
        self._out.write(line)
        self._out.flush()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()

        def read() -> None:  # a blocking read of stdin, off the loop
            for line in sys.stdin.buffer:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=read, name="robotlab-host-stdin", daemon=True).start()
        while (line := await lines.get()) is not None:
            try:
                rid, request = wire.decode(line)
            except ValueError as exc:
                log.warning("litellm's process got a line that is not a request: %s", exc)
                continue
            _follow_env(request.pop("env", None))
            if request.get("op") == "cancel":
                task = self._tasks.get(rid)
                if task is not None:
                    task.cancel()
                continue
            task = asyncio.create_task(self._handle(rid, request))
            self._tasks[rid] = task
            task.add_done_callback(functools.partial(self._done, rid))
        for task in list(self._tasks.values()):  # the window's process went away: stop everything
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    def _done(self, rid: int, _task: asyncio.Task[None]) -> None:
        self._tasks.pop(rid, None)

    # -- one request -------------------------------------------------------------------------------
    async def _handle(self, rid: int, request: Mapping[str, Any]) -> None:
        op = request.get("op")
        try:
            if op == "stream":
                await self._stream(rid, request)
                self._send({"id": rid, "done": True})
                return
            if op == "load":
                await preload_litellm()
                await _rehearse()
                result: Any = True
            elif op == "describe":
                result = await asyncio.to_thread(_describe, self._provider(request["provider"]))
            elif op == "known_chat_models":
                result = await asyncio.to_thread(known_chat_models, str(request["provider"]))
            elif op == "missing_keys":
                result = await asyncio.to_thread(self._provider(request["provider"]).missing_keys)
            elif op == "count":
                result = await asyncio.to_thread(_count, self._provider(request["provider"]), request["texts"])
            else:
                raise ValueError(f"litellm's process does not know the request {op!r}")
            self._send({"id": rid, "result": result})
        except asyncio.CancelledError:
            pass  # the window stopped waiting: nothing to answer
        except Exception as exc:
            log.debug("request %s (%s) failed: %s", rid, op, exc)
            self._send({"id": rid, "error": wire.error_to_dict(exc)})

    async def _stream(self, rid: int, request: Mapping[str, Any]) -> None:
        provider = self._provider(request["provider"])
        messages = [Message.from_dict(m) for m in request.get("messages") or []]
        tools = [wire.tool_from_dict(t) for t in request.get("tools") or []]
        reader = provider.chunk_reader()
        if reader is not None:  # each chunk sent as the reading hands it on (no generator stepping it)
            def send(chunk: Chunk) -> bool:
                self._send({"id": rid, "chunk": wire.chunk_to_dict(chunk)})
                return False

            await reader(system=request.get("system"), messages=messages, tools=tools,
                         settings=request.get("settings") or {}, see=send, sink=None)
            return
        chunks = provider.stream(system=request.get("system"), messages=messages, tools=tools,
                                 settings=request.get("settings") or {})
        try:
            async for chunk in chunks:
                self._send({"id": rid, "chunk": wire.chunk_to_dict(chunk)})
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]

    def _provider(self, spec: Mapping[str, Any]) -> LiteLLMProvider:
        key = json.dumps(spec, sort_keys=True)
        provider = self._providers.get(key)
        if provider is None:
            provider = LiteLLMProvider(str(spec["model_id"]), api_base=spec.get("api_base"),
                                       api_key=spec.get("api_key"), **dict(spec.get("options") or {}))
            # Every request's messages arrive as new objects (read from the pipe): nothing to reuse, nothing kept.
            provider.converter = MessageConverter(keep=0)
            self._providers[key] = provider
        return provider


_CANNED: list[dict[str, Any]] = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": {
        "name": "rehearsal", "arguments": "{}"}}]}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
]


async def _answer_rehearsal(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One streamed chat completion, always the same, to whatever was asked."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    await reader.readexactly(length)
    body = b"".join(b"data: " + json.dumps({"id": "rehearsal", "object": "chat.completion.chunk", "created": 0,
                                            "model": "rehearsal", **chunk}).encode() + b"\n\n" for chunk in _CANNED)
    body += b"data: [DONE]\n\n"
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    await writer.drain()
    writer.close()


async def _rehearse() -> None:
    """A streamed call with a tool, through litellm, to a server of this process on loopback: what a first
    call does once (litellm's async path, its stream handling, the HTTP client's) is done before the
    window's first message. Failures are only logged: the real call does the same work itself."""
    from workspace.messages import TextMessage
    from workspace.providers.base import ToolSpec

    server = await asyncio.start_server(_answer_rehearsal, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        provider = LiteLLMProvider("openai/rehearsal", api_base=f"http://127.0.0.1:{port}/v1",
                                   api_key="sk-rehearsal-not-a-key", max_retries=0, timeout=10.0)
        chunks = provider.stream(system="Rehearsal.", messages=[TextMessage(role="user", content="hi")],
                                 tools=[ToolSpec("rehearsal", "A rehearsal.")], settings={})
        async for _chunk in chunks:
            pass
    except Exception as exc:
        log.debug("the rehearsal call failed (harmless): %s", exc)
    finally:
        server.close()


def _follow_env(changed: Mapping[str, str | None] | None) -> None:
    """The window's environment as it is now (a key saved in Settings since this process started)."""
    for name, value in (changed or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _describe(provider: LiteLLMProvider) -> dict[str, Any]:
    """What the window's process asks of a model once: each answer None when it could not be found."""
    asks: dict[str, Callable[[], Any]] = {
        "context_window": provider.context_window,
        "supports_vision": provider.supports_vision,
        "supports_response_schema": lambda: provider.supports_response_schema,
        "tokenizer": lambda: provider.token_counter() is not None,
    }
    out: dict[str, Any] = {}
    for name, ask in asks.items():
        try:
            out[name] = ask()
        except Exception as exc:
            log.debug("%s: %s failed: %s", provider.model_id, name, exc)
            out[name] = None
    return out


def _count(provider: LiteLLMProvider, texts: list[str]) -> list[int] | None:
    """Tokens of each text by the model's tokenizer; None when it has none."""
    encode = provider.token_counter()
    if encode is None:
        return None
    return [int(encode(text)) for text in texts]


def main() -> int:
    out = os.fdopen(os.dup(1), "wb", buffering=0)  # the protocol's own copy of stdout
    os.dup2(2, 1)  # anything else printed goes to stderr, into the window's log
    sys.stdout = sys.stderr
    # Ctrl-C in the terminal reaches the whole process group: the window decides, and closes stdin when it ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    level = os.environ.get("ROBOTLAB_HOST_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level, logging.WARNING),
                        format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(_Server(out).serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
