"""litellm in a process of its own: what the window uses for every model litellm serves.

Importing litellm takes seconds, and parts of it (its tokenizer, its pydantic types, its model map)
run C and Rust code that holds the interpreter lock for 40-50 ms at a time: in the window's process
that froze the window for three frames at a time, however the import was threaded. So the window
(``llm.litellm_process``: ``auto`` there) runs litellm in a child process
(:mod:`workspace.providers.litellm_host`), started on first use (the warm-up after the first paint)
and kept for the window's life; the command line and the library keep litellm in their own process
(``auto`` there; ``separate`` or ``same`` choose).

:class:`SeparateLiteLLMProvider` is a :class:`LiteLLMProvider` whose calls go through the pipe: the
same chunks, the same failures (a context-length refusal is still a :class:`ContextOverflowError`),
the same answers about the model — asked once per model and remembered (``describe``). What must
never wait on the event loop does not: asked there before the answer is known, the window and the
vision check say "not known yet", and a text is counted by the safe estimate (the context manager
counts in a worker thread first, see :attr:`_Counter.blocking`).

:class:`LiteLLMProcess` owns the child: a writer thread, a reader thread (answers go to the future
or the event loop of whoever asked) and a thread logging its stderr. The child's environment follows
this one's: changed variables (a key saved in Settings) travel with the next request. A process that
dies fails what was waiting with a message saying so, and the next request starts a new one.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import itertools
import json
import logging
import os
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.attachments import has_images
from workspace.errors import ProviderError
from workspace.providers import wire
from workspace.providers.base import Chunk, StatusChunk, ToolSpec
from workspace.providers.litellm_provider import LiteLLMProvider
from workspace.providers.openai_format import BodyEncoder, estimate_tokens

if TYPE_CHECKING:
    from workspace.messages import Message

__all__ = ["ASK_TIMEOUT", "LiteLLMProcess", "RequestEncoder", "SeparateLiteLLMProvider", "host_command", "litellm_process",
           "shutdown"]

log = logging.getLogger("workspace.providers.litellm_process")

#: Seconds a blocking question (from a worker thread: the window, a count) waits for the process.
ASK_TIMEOUT = 120.0
#: Texts whose counts are kept per model (the system prompt, tool schemas: counted again each call).
COUNTS_KEPT = 4096
_RESTART_HINT = ("Send the message again to start a new one; if it keeps stopping, set llm.litellm_process to "
                 "'same' (litellm then runs in the window's own process) and look at the log")


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def host_command() -> list[str]:
    """The command that starts litellm's process: ``python -m workspace.providers.litellm_host``, or, in a
    self-contained bundle (no ``-m`` there), the bundle's executable asked to be that process."""
    if getattr(sys, "frozen", False):
        from workspace.providers.litellm_host import BUNDLE_ARG

        return [sys.executable, BUNDLE_ARG]
    return [sys.executable, "-m", "workspace.providers.litellm_host"]


class _Stream:
    """The answers of one stream request, for the event loop that reads them."""

    __slots__ = ("loop", "queue", "rid")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.rid = 0

    def put(self, message: dict[str, Any]) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, message)
        except RuntimeError:  # its event loop is closed: nobody reads the answer any more
            pass


_Waiter = concurrent.futures.Future[Any] | _Stream
#: What the writer thread writes: a line, or a line's pieces.
_Line = bytes | tuple[bytes | memoryview, ...]


class RequestEncoder(BodyEncoder):
    """A stream request as a line of the pipe, each message's JSON written once: a thread's messages are the
    same objects at every call, and the JSON of 20,000 of them again was most of a call's work on the event
    loop. ``messages`` are :class:`~workspace.messages.Message` objects, written as their ``to_dict()``; the
    bytes are :func:`wire.encode`'s of the fields with those dicts."""

    def write(self, value: Any) -> str:
        return wire.dumps(value)

    def write_message(self, message: Any) -> str:
        return wire.dumps(message.to_dict())


def encode_request(fields: Mapping[str, Any], encoder: RequestEncoder | None = None) -> bytes:
    """A request's fields as a line of the pipe (its id and environment are added when it is sent), by
    ``encoder`` when given (its ``messages`` are then Message objects). A request with an image is megabytes of
    JSON (25 ms for 5 MB): encode that one in a worker thread."""
    try:
        return encoder.encode(fields) + b"\n" if encoder is not None else wire.encode(fields)
    except (TypeError, ValueError) as exc:
        raise ProviderError(f"This request cannot be sent to litellm's process: {exc}. Set llm.litellm_process "
                            "to 'same' to run litellm in this process") from exc


class LiteLLMProcess:
    """The child process and the requests waiting for its answers (thread-safe)."""

    def __init__(self, argv: Sequence[str] | None = None) -> None:
        self._argv = list(argv) if argv else host_command()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._outbox: queue.SimpleQueue[_Line | None] = queue.SimpleQueue()
        self._waiting: dict[int, tuple[subprocess.Popen[bytes], _Waiter]] = {}
        self._ids = itertools.count(1)
        self._env: dict[str, str] = {}
        self._stderr: deque[str] = deque(maxlen=20)
        self._closing = False
        #: Processes started so far (one that stopped is replaced on the next request).
        self.started = 0

    @property
    def running(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None

    # -- asking ------------------------------------------------------------------------------------
    def call(self, op: str, **fields: Any) -> concurrent.futures.Future[Any]:
        """Send a request; its future gets the ``result`` (or the error)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._send({"op": op, **fields}, future)
        return future

    async def ask(self, op: str, **fields: Any) -> Any:
        """:meth:`call`, awaited."""
        return await asyncio.wrap_future(self.call(op, **fields))

    def ask_blocking(self, op: str, timeout: float = ASK_TIMEOUT, **fields: Any) -> Any:
        """:meth:`call`, waited for in this thread (never on an event loop: that raises RuntimeError).
        ``TimeoutError`` after ``timeout`` seconds; the request is then cancelled (its answer dropped)."""
        if _on_event_loop():
            raise RuntimeError(f"asking litellm's process for {op!r} would block the event loop")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        rid = self._send({"op": op, **fields}, future)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            self.cancel(rid)
            raise TimeoutError(f"litellm's process did not answer {op!r} within {timeout:g} s") from None

    def open(self, fields: Mapping[str, Any], *, body: bytes | None = None) -> _Stream:
        """Start a stream request; its answers arrive on the returned stream's queue. ``body``: ``fields``
        already encoded (:func:`encode_request`, in a worker thread for a large request)."""
        stream = _Stream(asyncio.get_running_loop())
        stream.rid = self._send(fields, stream, body=body)
        return stream

    def cancel(self, rid: int) -> None:
        """Stop request ``rid`` (its answers are dropped)."""
        with self._lock:
            entry = self._waiting.pop(rid, None)
            if entry is not None and entry[0] is self._proc:
                self._outbox.put(wire.encode({"id": rid, "op": "cancel"}))

    def _send(self, fields: Mapping[str, Any], waiter: _Waiter, *, body: bytes | None = None) -> int:
        if body is None:
            body = encode_request(fields)
        with self._lock:
            if self._closing:
                raise ProviderError("litellm's process was closed (the window is closing)")
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            assert self._proc is not None
            rid = next(self._ids)
            head: dict[str, Any] = {"id": rid}
            changed = self._changed_env()
            if changed:
                head["env"] = changed
            line = wire.joined_parts(head, body)
            self._env.update({k: v for k, v in changed.items() if v is not None})
            for name in [k for k, v in changed.items() if v is None]:
                self._env.pop(name, None)
            self._waiting[rid] = (self._proc, waiter)
            self._outbox.put(line)
            return rid

    def _changed_env(self) -> dict[str, str | None]:
        """This process's environment where the child's differs (None: unset since)."""
        now = os.environ
        changed: dict[str, str | None] = {k: v for k, v in now.items() if self._env.get(k) != v}
        changed.update({k: None for k in self._env if k not in now})
        return changed

    # -- the process -------------------------------------------------------------------------------
    def _start(self) -> None:
        """Start the child (the lock is held)."""
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        level = logging.getLogger("workspace").getEffectiveLevel()
        env["ROBOTLAB_HOST_LOG_LEVEL"] = logging.getLevelName(max(level, logging.DEBUG))
        proc = subprocess.Popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, close_fds=True)
        self._env = dict(os.environ)
        outbox: queue.SimpleQueue[_Line | None] = queue.SimpleQueue()
        self._outbox = outbox
        self._proc = proc
        self.started += 1
        threading.Thread(target=self._write, args=(proc, outbox), name="robotlab-litellm-write", daemon=True).start()
        threading.Thread(target=self._read, args=(proc,), name="robotlab-litellm-read", daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(proc,), name="robotlab-litellm-log", daemon=True).start()
        log.debug("litellm's process started (pid %s)", proc.pid)

    @staticmethod
    def _write(proc: subprocess.Popen[bytes], outbox: queue.SimpleQueue[_Line | None]) -> None:
        stdin = proc.stdin
        assert stdin is not None
        while (line := outbox.get()) is not None:
            try:
                if isinstance(line, bytes):
                    stdin.write(line)
                else:  # a request's pieces (wire.joined_parts): its body is not copied into one line
                    stdin.writelines(line)
                stdin.flush()
            except (OSError, ValueError):  # it stopped: the reader reports it
                return
        try:
            stdin.close()
        except OSError:
            pass

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                rid, message = wire.decode(line)
            except ValueError as exc:
                log.warning("litellm's process sent a line that is not an answer: %s", exc)
                continue
            self._deliver(rid, message)
        self._lost(proc, proc.wait())

    def _deliver(self, rid: int, message: dict[str, Any]) -> None:
        with self._lock:
            entry = self._waiting.get(rid)
            if entry is None:
                return  # cancelled meanwhile
            waiter = entry[1]
            if not isinstance(waiter, _Stream) or "chunk" not in message:
                del self._waiting[rid]  # the last answer
        if isinstance(waiter, _Stream):
            waiter.put(message)
        elif waiter.done():
            return  # the caller gave up waiting
        elif "error" in message:
            waiter.set_exception(wire.error_from_dict(message["error"]))
        else:
            waiter.set_result(message.get("result"))

    def _read_stderr(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if not line:
                continue
            self._stderr.append(line)
            word, _, rest = line.partition(" ")
            level = logging.getLevelName(word)
            if isinstance(level, int):
                log.log(level, "litellm's process: %s", rest)
            else:  # a print or a traceback
                log.info("litellm's process: %s", line)

    def _lost(self, proc: subprocess.Popen[bytes], code: int) -> None:
        with self._lock:
            lost = {rid: w for rid, (p, w) in self._waiting.items() if p is proc}
            for rid in lost:
                del self._waiting[rid]
            if self._proc is proc:
                self._proc = None
            closing = self._closing
        if closing:
            error = ProviderError("litellm's process was closed (the window is closing)")
        else:
            last = next((line for line in reversed(self._stderr) if line.strip()), "")
            said = f": {last}" if last else ""
            error = ProviderError(f"litellm's process stopped unexpectedly (exit code {code}){said}. {_RESTART_HINT}",
                                  reason="server_error")
            if lost or code:
                log.warning("litellm's process stopped (exit code %s) with %d request(s) waiting", code, len(lost))
        for waiter in lost.values():
            if isinstance(waiter, _Stream):
                waiter.put({"error": wire.error_to_dict(error)})
            elif not waiter.done():
                waiter.set_exception(error)

    def close(self, timeout: float = 2.0) -> None:
        """End the process: stdin closed (it then stops its requests and exits), killed if it does not."""
        with self._lock:
            self._closing = True
            proc = self._proc
            self._outbox.put(None)
        if proc is None:
            return
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)

    def kill(self) -> None:
        """Kill the process now, as a crash would (tests)."""
        proc = self._proc
        if proc is not None:
            proc.kill()
            proc.wait()


_process: LiteLLMProcess | None = None
_process_lock = threading.Lock()


def litellm_process() -> LiteLLMProcess:
    """This program's litellm process (started by its first request; closed at exit)."""
    global _process
    with _process_lock:
        if _process is None or _process._closing:
            _process = LiteLLMProcess()
            atexit.register(_process.close)
        return _process


def shutdown() -> None:
    """Close the litellm process, if one was started (the window calls it when it closes)."""
    global _process
    with _process_lock:
        process, _process = _process, None
    if process is not None:
        process.close()


# ------------------------------------------------------------------------------------------------
# The provider

#: What ``describe`` said of each model (model id, API base) — asked once per program.
_profiles: dict[tuple[str, str | None], dict[str, Any]] = {}
_counters: dict[tuple[str, str | None], _Counter] = {}


class _Counter:
    """The model's tokenizer, in litellm's process: a text's count is asked once and kept."""

    #: It waits for an answer: the context manager counts in a worker thread with it. On the event loop
    #: (a count nobody prepared) it answers with the safe estimate instead.
    blocking = True

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self._spec = spec
        self._kept: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self._kept.get(text)
        if found is not None:
            return found
        if _on_event_loop():
            return estimate_tokens(len(text))
        counts = litellm_process().ask_blocking("count", provider=self._spec, texts=[text])
        if not counts:
            raise ValueError(f"{self._spec.get('model_id')} has no tokenizer in litellm")
        if len(self._kept) >= COUNTS_KEPT:
            self._kept.clear()
        self._kept[text] = int(counts[0])
        return int(counts[0])


class SeparateLiteLLMProvider(LiteLLMProvider):
    """A :class:`LiteLLMProvider` whose litellm runs in :func:`litellm_process` (see the module docstring)."""

    def __init__(self, model_id: str, *, api_base: str | None = None, api_key: str | None = None,
                 **options: Any) -> None:
        super().__init__(model_id, api_base=api_base, api_key=api_key, **options)
        try:
            json.dumps(options)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Options of {model_id} cannot be sent to litellm's process ({exc}): set "
                             "llm.litellm_process to 'same' to run litellm in this process") from exc
        self._spec = {"model_id": self.model_id, "api_base": self.api_base, "api_key": api_key, "options": options}
        #: The request line, each message's JSON written once (:meth:`_encode`).
        self.encoder = RequestEncoder()
        self._encoding = threading.Lock()

    # -- what is asked of the model once ------------------------------------------------------------
    @property
    def _key(self) -> tuple[str, str | None]:
        return self.model_id, self.api_base

    def _profile(self, *, wait: bool) -> dict[str, Any] | None:
        found = _profiles.get(self._key)
        if found is not None or not wait or _on_event_loop():
            return found
        try:
            found = dict(litellm_process().ask_blocking("describe", provider=self._spec))
        except Exception as exc:
            log.debug("%s: describing the model in litellm's process failed: %s", self.model_id, exc)
            return None
        _profiles[self._key] = found
        return found

    def capabilities_known(self) -> bool:
        return self._profile(wait=False) is not None

    def context_window(self) -> int | None:
        profile = self._profile(wait=True)
        return profile.get("context_window") if profile else None

    def known_context_window(self) -> tuple[bool, int | None]:
        profile = self._profile(wait=False)
        return (True, profile.get("context_window")) if profile is not None else (False, None)

    def token_counter(self) -> _Counter | None:
        profile = self._profile(wait=True)
        return self._counter() if profile and profile.get("tokenizer") else None

    def known_token_counter(self) -> tuple[bool, _Counter | None]:
        profile = self._profile(wait=False)
        if profile is None:
            return False, None
        return True, self._counter() if profile.get("tokenizer") else None

    def _counter(self) -> _Counter:
        counter = _counters.get(self._key)
        if counter is None:
            counter = _counters[self._key] = _Counter(self._spec)
        return counter

    def supports_vision(self) -> bool | None:
        if self.vision is not None:
            return self.vision
        profile = self._profile(wait=True)
        return profile.get("supports_vision") if profile else None

    @property
    def supports_response_schema(self) -> bool:
        if self._response_schema is None:
            profile = self._profile(wait=True)
            if profile is None:
                return False  # not known (yet): the tool way works with every model
            self._response_schema = bool(profile.get("supports_response_schema"))
        return self._response_schema

    @supports_response_schema.setter
    def supports_response_schema(self, value: bool) -> None:
        self._response_schema = bool(value)

    def missing_keys(self) -> list[str]:
        if self.api_key:
            return []
        return list(litellm_process().ask_blocking("missing_keys", provider=self._spec) or [])

    async def check_environment(self) -> list[str]:
        if self.api_key:
            return []
        return list(await litellm_process().ask("missing_keys", provider=self._spec) or [])

    # -- the call -----------------------------------------------------------------------------------
    def _encode(self, fields: dict[str, Any]) -> bytes:
        """The request line of ``fields`` (their ``messages`` Message objects): by :attr:`encoder`, or, while
        another call of this provider is encoding (in a worker thread: an image), on its own."""
        if not self._encoding.acquire(blocking=False):
            return encode_request({**fields, "messages": [m.to_dict() for m in fields["messages"]]})
        try:
            return encode_request(fields, self.encoder)
        finally:
            self._encoding.release()

    async def stream(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     settings: Mapping[str, Any]) -> AsyncIterator[Chunk]:
        self.check_key()  # a missing key is said before litellm's process starts
        process = litellm_process()
        if not process.running:
            yield StatusChunk("loading", "starting litellm (it runs in a process of its own)", endpoint=self.endpoint)
        fields = {"op": "stream", "provider": self._spec, "system": system, "messages": list(messages),
                  "tools": [wire.tool_to_dict(t) for t in tools], "settings": dict(settings)}
        # An image is megabytes of base64: encoded in a worker thread, the window does not stall on it.
        body = await asyncio.to_thread(self._encode, fields) if has_images(messages) else self._encode(fields)
        stream = process.open(fields, body=body)
        finished = False
        try:
            while True:
                message = await stream.queue.get()
                if "chunk" in message:
                    yield wire.chunk_from_dict(message["chunk"])
                    continue
                finished = True
                if "error" in message:
                    raise wire.error_from_dict(message["error"])
                return
        finally:
            if not finished:  # Stop, a closed stream, an error of the loop: the process stops the request
                process.cancel(stream.rid)
