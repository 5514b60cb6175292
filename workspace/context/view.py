"""What of a conversation the model is sent: the summary in place of the compacted messages, oversized
tool results cut (:mod:`workspace.context.results`), never two user messages in a row, and, under the
``"truncate"`` policy, the oldest whole turns left out.

:class:`RequestView` keeps what it made for the last request (each message's copy for the model, the
summary message, the view itself), so a request one turn longer than the last looks only at what was
added since: a long thread costs a lookup per message, not a copy of each. The history itself is never
changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from typing import Any

from workspace.context.compaction import Compaction, choose_cut, summary_message
from workspace.context.results import shorten_result_message
from workspace.context.tokens import TokenCounter
from workspace.messages import AlternatingView, Message, alternating, shared_prefix

__all__ = ["RequestView", "tool_params"]

log = logging.getLogger("workspace.context")


class RequestView:
    """One conversation's requests as the model is sent them (see the module docstring)."""

    def __init__(self) -> None:
        #: Per-message copies for the model (results cut to the limit).
        self._shortened: dict[int, tuple[Message, int, Message]] = {}
        #: The summary message, and the compaction and first kept message it was made for.
        self._summary: tuple[Compaction, Message | None, Message, bool] | None = None
        #: :func:`alternating` of the requests' views, each one folding only what was added since the last.
        self._alternate = AlternatingView()
        #: The last request's limit, tools' parameters, conversation and its messages as sent (:meth:`_all_shortened`).
        self._view: tuple[int, dict[str, Any], list[Message], list[Message]] | None = None

    def __call__(self, history: Sequence[Message], compaction: Compaction | None, limit: int | None,
                 params: Mapping[str, Any]) -> list[Message]:
        """What the model is sent: the summary for the compacted part, and never two user messages in a
        row (a run stopped or failed before its first word: :func:`workspace.messages.alternating`)."""
        return self._alternate(self._compacted_view(history, compaction, limit, params))

    def truncated(self, history: Sequence[Message], compaction: Compaction | None, *, counter: TokenCounter,
                  limit: int | None, params: Mapping[str, Any], room: int) -> list[Message] | None:
        """What the model is sent without the oldest whole turns (units within the latest turn if need be),
        so the messages take at most ``room`` tokens; None when nothing can be left out."""
        start = compaction.upto if compaction is not None else 0
        if compaction is not None:
            room -= counter.message(summary_message(compaction.summary, None)[0])
        cut = choose_cut(history, self.cost(counter, limit, params), start=start, keep_budget=max(room, 0))
        if cut is None:
            return None
        kept = [self.shortened(m, limit, params) for m in history[cut:]]
        if compaction is not None:
            message, merged = summary_message(compaction.summary, kept[0] if kept else None)
            kept = [message, *kept[1:]] if merged else [message, *kept]
        log.info("context: %d oldest message(s) left out of the request to fit the window", cut - start)
        return alternating(kept)

    def cost(self, counter: TokenCounter, limit: int | None, params: Mapping[str, Any]) -> Callable[[Message], int]:
        """The tokens of one message as the model is sent it (what a cut of the conversation weighs)."""
        return lambda m: counter.message(self.shortened(m, limit, params))

    def shortened(self, message: Message, limit: int | None, params: Mapping[str, Any]) -> Message:
        """``message`` as the model is sent it: a tool result cut to ``limit`` characters with a note."""
        if not limit or not message.is_tool_result:
            return message
        cache = self._shortened
        found = cache.get(id(message))
        if found is not None and found[0] is message and found[1] == limit:
            return found[2]
        names = params.get(message.tool.name, ())  # type: ignore[attr-defined]
        short = shorten_result_message(message, limit, params=names)  # type: ignore[arg-type]
        if len(cache) > 20_000:
            cache.clear()
        cache[id(message)] = (message, limit, short if short is not None else message)
        return short if short is not None else message

    def _compacted_view(self, history: Sequence[Message], compaction: Compaction | None, limit: int | None,
                        params: Mapping[str, Any]) -> Sequence[Message]:
        # Read only (the alternating view copies what it is given): the history, or the list of its messages as
        # sent kept for the next request, not a copy of either (20,000 messages at turn 10,000).
        source = self._all_shortened(history, limit, params) if limit else history
        if compaction is None:
            return source
        start = compaction.upto
        first = source[start] if start < len(source) else None
        cached = self._summary
        if cached is not None and cached[0] is compaction and cached[1] is first:
            message, merged = cached[2], cached[3]
        else:
            message, merged = summary_message(compaction.summary, first)
            self._summary = (compaction, first, message, merged)
        return [message, *islice(source, start + 1 if merged else start, None)]

    def _all_shortened(self, history: Sequence[Message], limit: int, params: Mapping[str, Any]) -> list[Message]:
        """Every message of ``history`` as the model is sent it (results cut to ``limit``), the list kept for
        the next request: only the messages after the part it shares with the last one are looked at."""
        cached = self._view
        if cached is not None and cached[0] == limit and cached[1] == params:
            inputs, out = cached[2], cached[3]
        else:
            inputs, out = [], []
        shared = shared_prefix(inputs, history)
        del inputs[shared:], out[shared:]
        for index in range(shared, len(history)):
            message = history[index]
            inputs.append(message)
            out.append(self.shortened(message, limit, params))
        self._view = (limit, dict(params), inputs, out)
        return out


def tool_params(tools: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    """The parameters of each tool by its name (a cut result names the ones that read on)."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in tools:
        parameters = getattr(spec, "parameters", None)
        props = parameters.get("properties") if isinstance(parameters, Mapping) else None
        out[str(getattr(spec, "name", ""))] = tuple(props) if isinstance(props, Mapping) else ()
    return out
