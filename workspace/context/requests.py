"""The model request as sent: one :class:`~workspace.events.ModelRequest` per model call.

The context manager records the payload the provider sends (:func:`request_body`: the provider's own
``build_request`` when it has one, the OpenAI chat payload litellm and every OpenAI-compatible server
take otherwise) just before the call, through :class:`RequestRecorder`, which keeps only what changed
since the conversation's previous request: a 200-turn thread sends its history again on every call, and
copying it each time would grow the store with the square of the thread's length
(``bench/bench_model_requests.py`` measures both). What is recorded never holds an API key or a header
(those keys are dropped), image data (a note of its size instead), a string past
:data:`MAX_STRING_CHARS` (cut, with a note) or a secret :mod:`workspace.secrets` knows (masked).

:func:`resolve` puts whole requests back together from the recorded events, in order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workspace import events as ev
from workspace.messages import Message, shared_prefix
from workspace.providers.base import Provider, ToolSpec
from workspace.providers.openai_format import MessageConverter, to_openai_tools, tool_choice_value
from workspace.secrets import is_secret_name, redactor

__all__ = ["MAX_STRING_CHARS", "RequestRecorder", "request_body", "resolve"]

#: Keys of a payload never recorded (credentials and headers), whatever their value.
_DROPPED = frozenset({"api_key", "extra_headers", "headers", "default_headers", "authorization",
                      "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "vertex_credentials",
                      "azure_ad_token", "client_secret", "timeout", "num_retries", "drop_params"})
#: A recorded string past this many characters is cut (a tool result of megabytes is in the thread already).
MAX_STRING_CHARS = 100_000


def request_body(provider: Provider, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                 settings: Mapping[str, Any], converter: MessageConverter | None = None) -> dict[str, Any]:
    """The payload ``provider`` sends for this call: its own ``build_request`` (the OpenAI-compatible and
    litellm providers, which convert each message once), else the OpenAI chat payload of the same messages,
    tools and settings (through ``converter`` when given: the conversation's, each message converted once)."""
    # The provider's body built once for the call (the one it then sends), else its own build.
    build = getattr(provider, "prepared_request", None) or getattr(provider, "build_request", None)
    if callable(build):
        try:
            body = build(system=system, messages=messages, tools=tools, settings=settings)
        except Exception:  # a provider's own check (a key, a setting) fails the call itself, not its record
            body = None
        if isinstance(body, dict):
            return body
    body = {k: v for k, v in settings.items() if v is not None and k != "tool_choice"}
    body["model"] = provider.model_id
    body["messages"] = (converter or MessageConverter(keep=0)).convert(system, messages)
    if tools:
        body["tools"] = to_openai_tools(tools)
        choice = tool_choice_value(settings.get("tool_choice"), tools)
        if choice is not None:
            body["tool_choice"] = choice
    return body


def _clean(value: Any, mask: Any) -> Any:
    """``value`` as it may be recorded: credentials' keys dropped, image data and very long strings cut,
    secrets masked."""
    if isinstance(value, str):
        if value.startswith("data:") and ";base64," in value[:80]:
            # The media type only: not even the encoding's name, so a recorded request holds no part of the data.
            return f"{value[:value.index(';')]}… ({len(value):,} characters of data, not recorded)"
        if len(value) > MAX_STRING_CHARS:
            value = value[:MAX_STRING_CHARS] + f"… ({len(value) - MAX_STRING_CHARS:,} more characters, not recorded)"
        return mask(value)
    # A plain dict, list or number by its exact type first: the ABC check a Mapping takes costs more than the
    # rest of a small value's cleaning, and a request's body is mostly those (recorded on every model call).
    kind = type(value)
    if kind is dict or isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = k if type(k) is str else str(k)
            if key.lower() not in _DROPPED and not (isinstance(v, str) and is_secret_name(key, v)):
                out[key] = _clean(v, mask)
        return out
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        return [_clean(v, mask) for v in value]
    if kind is int or kind is float or kind is bool or value is None or isinstance(value, int | float):
        return value
    return mask(json.dumps(value, ensure_ascii=False, default=str))


class RequestRecorder:
    """The requests of one conversation (one context manager's): each recorded as what changed since the
    previous one."""

    def __init__(self) -> None:
        self._last_id: str | None = None
        self._last_messages: list[Any] = []
        self._last_rest: dict[str, Any] = {}
        #: The conversation's messages in OpenAI's form for a provider without its own ``build_request``.
        self.converter = MessageConverter()

    def skip(self) -> None:
        """A request went unrecorded (nobody could read its record): the next one is recorded whole."""
        self._last_id, self._last_messages, self._last_rest = None, [], {}

    def record(self, provider: Provider, *, system: str | None, messages: Sequence[Message],
               tools: Sequence[ToolSpec], settings: Mapping[str, Any]) -> ev.ModelRequest:
        """The :class:`~workspace.events.ModelRequest` of this call (not stamped yet)."""
        body = dict(request_body(provider, system=system, messages=messages, tools=tools, settings=settings,
                                 converter=self.converter))
        sent = body.pop("messages", [])
        # Kept for the next call's comparison as it is when it is a list: the body's own, made for this call (a
        # converter's fresh list) and never changed after; a copy of 20,000 messages at every call cost more at
        # turn 10,000 than the rest of the record.
        sent = sent if type(sent) is list else list(sent) if isinstance(sent, tuple) else []
        shared = 0
        if self._last_id is not None:
            # By identity first (the providers reuse a message's dict while it is sent: the same objects up to
            # the newest turn, found by :func:`shared_prefix` without a walk of the whole thread), then by value
            # from the first one that is not.
            shared = shared_prefix(self._last_messages, sent)
            for before, now in zip(self._last_messages[shared:], sent[shared:], strict=False):
                if before != now:
                    break
                shared += 1
        reused_keys = sorted(k for k, v in body.items()
                             if self._last_id is not None and k in self._last_rest and self._last_rest[k] == v)
        mask = redactor()
        event = ev.ModelRequest(
            request_id=os.urandom(8).hex(), model=str(body.get("model") or provider.model_id or "") or None,
            body=_clean({k: v for k, v in body.items() if k not in reused_keys}, mask),
            messages=_clean(sent[shared:], mask),
            reused_from=self._last_id if shared or reused_keys else None,
            reused_messages=shared, reused_keys=reused_keys)
        self._last_id, self._last_messages, self._last_rest = event.request_id, sent, body
        return event


def resolve(events: Iterable[ev.Event]) -> dict[str, dict[str, Any]]:
    """Every recorded request of ``events`` put back together, by its ``request_id``: the payload with all
    its messages. A request whose earlier one is not among ``events`` (a trimmed trace) gets what is known,
    and ``"missing_messages"``: how many of its first messages are not."""
    out: dict[str, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, ev.ModelRequest):
            out[event.request_id] = whole(event, out)
    return out


def whole(event: ev.ModelRequest, earlier: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Request ``event`` with what it reused from ``earlier`` (the requests put together before it)."""
    before = earlier.get(event.reused_from or "")
    body: dict[str, Any] = {}
    messages: list[Any] = []
    if before is not None:
        body.update({k: before[k] for k in event.reused_keys if k in before})
        messages = list(before.get("messages", [])[: event.reused_messages])
    body.update(event.body)
    missing = event.reused_messages - len(messages)
    body["messages"] = messages + list(event.messages)
    if missing > 0:
        body["missing_messages"] = missing
    return body
