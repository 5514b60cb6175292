"""A tool call's view state: the card of a call a run makes, and the MCP requests shown as calls.

A :class:`ToolCallItem` is one call in a turn (or in a lane): its arguments, its status
(:data:`CallStatus`; :data:`FAILED_CALL` are the failed ones), its result or error
(:func:`result_error` finds the error a result carries), the approval asked for it
(:class:`ApprovalState`), its progress (:class:`ProgressState`), and for a robot used as a tool
the lane of that robot's run inside the card (``inner``, a :class:`~ui.chat.model.state.CallLaneItem`).
An MCP server's requests are call items with cards of their own: :class:`SamplingItem`
(``sampling/createMessage``) and :class:`ElicitationItem` (``elicitation/create``);
:func:`call_item_class` picks the class for a tool's name.

These are items of :mod:`ui.chat.model.state` (the turns, runs and lanes they show in): this module
imports that one; that one names these classes only for type checking, so the two never import
each other at run time.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ui.ansi import PLAIN, AnsiParser, Style
from ui.chat.model.state import CallLaneItem, Item
from ui.formatting import FAILED_CALL

#: A tool call's state: what its card's status pill says.
CallStatus: TypeAlias = Literal["running", "approval", "ok", "error", "denied", "stopped"]
#: What an approval's card calls the scope it was given for.
SCOPE_LABELS = {"once": "once", "thread": "this thread", "always": "always", "policy": "policy",
                "server": "always for this server"}


@dataclass(eq=False, kw_only=True)
class ApprovalState:
    """Whether a person had to approve a call, and what was decided."""

    #: "asking" (waiting for a person), "approved", "denied", or "stopped" (the run ended first).
    state: Literal["asking", "approved", "denied", "stopped"] = "asking"
    scope: str | None = None
    reason: str | None = None
    #: The call runs with arguments the person edited.
    edited: bool = False

    @property
    def note(self) -> str:
        """What the card says about the decision ("" while asking)."""
        if self.state == "approved":
            edited = " with edited arguments" if self.edited else ""
            return f"Approved{edited} ({SCOPE_LABELS.get(self.scope or 'once', self.scope)})."
        if self.state == "denied":
            return "Denied" + (f": {self.reason}" if self.reason else "") + "."
        if self.state == "stopped":
            return "Stopped before anyone decided."
        return ""


@dataclass(kw_only=True)
class ProgressState:
    """How far a running tool is: ``value`` of ``total`` (None: unknown total), and its message;
    ``cancelled`` once the run was stopped and the server was told (notifications/cancelled)."""

    value: float = 0.0
    total: float | None = None
    message: str = ""
    cancelled: bool = False

    @property
    def fraction(self) -> float | None:
        return min(1.0, max(0.0, self.value / self.total)) if self.total else None

    @property
    def text(self) -> str:
        if self.cancelled:
            return "Stopped: the server was told to cancel the call"
        of = f" of {self.total:g}" if self.total is not None else ""
        return f"{self.value:g}{of}" + (f" · {self.message}" if self.message else "")


#: Characters of a running command's output a card keeps (the start is cut beyond: the card says how much).
OUTPUT_KEEP = 200_000
def cut_note(cut: int) -> str:
    """What a card says of ``cut`` characters of output it does not show ("" for none)."""
    return f"… {cut:,} earlier characters not shown (the whole output is in the Tool calls inspector)" if cut else ""


@dataclass(eq=False, kw_only=True)
class OutputState:
    """What a running tool printed (``tool_output`` chunks): its last :data:`OUTPUT_KEEP` characters as plain
    text (``cut`` characters before them were left out) and where their ANSI colours change (``run_starts``,
    ``run_styles``); other escape sequences are dropped."""

    text: str = ""
    cut: int = 0
    #: Where the style changes: the offsets in the whole output, in order, and the style from each (two lists,
    #: not a tuple per change: few objects for the garbage collector); ``text`` starts at offset ``cut``, and a
    #: change at ``cut`` holds the style its first character has. None: all plain.
    run_starts: list[int] = field(default_factory=list)
    run_styles: list[Style] = field(default_factory=list)
    _parser: AnsiParser = field(default_factory=AnsiParser, repr=False)

    @property
    def pending(self) -> str:
        """The start of an escape sequence a chunk ended in (the next chunk completes it)."""
        return self._parser.pending

    def append(self, chunk: str) -> str:
        """Add a chunk; the text it added (what a view appends; :meth:`styled` has its colours)."""
        starts, styles = self.run_starts, self.run_styles
        joined = self._parser.feed_runs(chunk, self.cut + len(self.text), starts, styles)
        self.text += joined  # once per chunk: the kept text is long
        if len(self.text) > OUTPUT_KEEP:
            cut = len(self.text) - OUTPUT_KEEP
            newline = self.text.find("\n", cut, cut + 200)  # start at a line's start when one is near
            cut = newline + 1 if newline >= 0 else cut
            self.text = self.text[cut:]
            self.cut += cut
            index = bisect_right(starts, self.cut)  # the changes before the kept text go
            if index:
                first = styles[index - 1]
                del starts[:index]
                del styles[:index]
                if first != PLAIN:
                    starts.insert(0, self.cut)
                    styles.insert(0, first)
        return joined

    def _style_at(self, offset: int) -> Style:
        """The style of the kept text's character at ``offset`` (of the next one, at the end)."""
        index = bisect_right(self.run_starts, self.cut + offset)
        return self.run_styles[index - 1] if index else PLAIN

    def styled(self, start: int = 0) -> list[tuple[str, Style]]:
        """``text[start:]`` as (text, style) spans, in order."""
        start = max(0, min(start, len(self.text)))
        spans: list[tuple[str, Style]] = []
        style = self._style_at(start)
        position = start
        base = self.cut
        first = bisect_right(self.run_starts, base + start)
        for offset, run_style in zip(self.run_starts[first:], self.run_styles[first:], strict=True):
            offset -= base
            if offset > position:
                spans.append((self.text[position:offset], style))
            position, style = offset, run_style
        if position < len(self.text):
            spans.append((self.text[position:], style))
        return spans

    @property
    def note(self) -> str:
        """What the card says of the output left out ("" when nothing was)."""
        return cut_note(self.cut)

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (0 if self.text.endswith("\n") or not self.text else 1)


@dataclass(eq=False, kw_only=True)
class ToolCallItem(Item):
    """A tool call: its arguments, then its result or error; the approval asked for it."""

    call_id: str
    tool: str
    robot: str
    server: str | None = None
    #: The arguments the call runs with (edited ones once approved so).
    arguments: Any = None
    status: CallStatus = "running"
    #: The ``tool_result`` payload (also kept when it carries an error).
    result: Any = None
    error: Any = None
    duration: float | None = None
    approval: ApprovalState | None = None
    task: str | None = None
    #: The tool's last progress report (an MCP server's notifications/progress), while it runs.
    progress: ProgressState | None = None
    #: The run of a robot used as this tool: a lane inside the card.
    inner: CallLaneItem | None = None
    #: When the call was made (its ``tool_use``): a running card shows the time since.
    started: float | None = None
    #: The model wrote the call in its text (``tool_use.from_text``): the card says so.
    from_text: bool = False
    #: What the tool printed while it ran (``tool_output``: a command's output); None: nothing.
    output: OutputState | None = None

    @property
    def failed(self) -> bool:
        return self.status in FAILED_CALL

    @property
    def result_value(self) -> Any:
        """The value the Result section shows: the payload's ``data`` when that is all it has."""
        payload = self.result
        return payload["data"] if isinstance(payload, dict) and set(payload) == {"data"} else payload

    @property
    def error_label(self) -> str:
        """The word in front of the error: Denied, Stopped or Error."""
        return {"denied": "Denied", "stopped": "Stopped"}.get(self.status, "Error")


@dataclass(eq=False, kw_only=True)
class SamplingItem(ToolCallItem):
    """An MCP server asks for a completion (``sampling/createMessage``): the messages it wants sent, the
    model that answers (the thread's), the person's decision, and the answer the server got.

    A call item (``tool`` is the method name, ``arguments`` the request as shown and, once approved,
    as edited): the approval, progress and ending rules of calls apply; its own card shows it."""

    @property
    def request(self) -> dict[str, Any]:
        return self.arguments if isinstance(self.arguments, dict) else {}

    @property
    def messages(self) -> list[dict[str, str]]:
        raw = self.request.get("messages")
        out = []
        for m in raw if isinstance(raw, list) else []:
            if isinstance(m, dict):
                out.append({"role": str(m.get("role") or "user"), "text": str(m.get("text") or "")})
        return out

    @property
    def model(self) -> str:
        return str(self.request.get("model") or "the thread's model")

    @property
    def system_prompt(self) -> str:
        return str(self.request.get("systemPrompt") or "")

    @property
    def max_tokens(self) -> int | None:
        value = self.request.get("maxTokens")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def answer(self) -> str | None:
        """The model's answer the server got (once it came)."""
        return None if self.status != "ok" or self.result_value is None else str(self.result_value)

    @property
    def outcome(self) -> str:
        """What was decided, in words ("" while asking or before anything was decided)."""
        approval = self.approval
        if approval is None:
            return "Allowed without asking (this server's sampling setting)." if self.status in ("ok", "running") \
                else ""
        if approval.state == "approved":
            edited = " with edited messages" if approval.edited else ""
            if approval.scope == "server":
                return f"Approved{edited}; this server may sample without asking from now on."
            return f"Approved{edited}."
        return approval.note


#: What an elicitation came to: waiting for the person, the three answers MCP knows, a stop, an error.
ElicitationAction: TypeAlias = Literal["asking", "accept", "decline", "cancel", "stopped", "error"]


@dataclass(eq=False, kw_only=True)
class ElicitationItem(ToolCallItem):
    """An MCP server asks the person for input (``elicitation/create``): its message, the form its JSON
    schema describes, and the answer (accept with the values, decline or cancel).

    A call item like :class:`SamplingItem`: ``arguments`` hold ``message``, ``requestedSchema`` and
    ``content`` (the values: the defaults while asking, what was sent once accepted)."""

    @property
    def request(self) -> dict[str, Any]:
        return self.arguments if isinstance(self.arguments, dict) else {}

    @property
    def message(self) -> str:
        return str(self.request.get("message") or "")

    @property
    def schema(self) -> dict[str, Any]:
        schema = self.request.get("requestedSchema")
        return schema if isinstance(schema, dict) else {}

    @property
    def content(self) -> dict[str, Any]:
        content = self.request.get("content")
        return content if isinstance(content, dict) else {}

    @property
    def action(self) -> ElicitationAction:
        approval = self.approval
        if self.status == "error":
            return "error"
        if approval is None:
            return "asking" if self.status in ("running", "approval") else "accept"
        if approval.state == "asking":
            return "asking"
        if approval.state == "stopped":
            return "stopped"
        if approval.state == "approved":
            return "accept"
        return "cancel" if approval.reason == "cancel" else "decline"

    @property
    def outcome(self) -> str:
        return {"accept": "Accepted: these values were sent.", "decline": "Declined: nothing was sent.",
                "cancel": "Cancelled: nothing was sent.", "stopped": "Stopped before anyone answered.",
                "asking": "", "error": ""}[self.action]


@dataclass(eq=False, kw_only=True)
class AskUserItem(ToolCallItem):
    """A robot asks the person a question (its ``ask_user`` tool), or a network waits for a person's answer
    (a person's task): the question, its choices and default, the time limit, then the answer.

    ``arguments`` hold ``question``, ``choices``, ``default`` (and ``timeout``, ``person`` for a person's
    task); the answer is the call's result."""

    @property
    def request(self) -> dict[str, Any]:
        return self.arguments if isinstance(self.arguments, dict) else {}

    @property
    def question(self) -> str:
        return str(self.request.get("question") or "")

    @property
    def choices(self) -> list[str]:
        raw = self.request.get("choices")
        return [str(c) for c in raw] if isinstance(raw, list) else []

    @property
    def default(self) -> str | None:
        value = self.request.get("default")
        return None if value is None or value == "" else str(value)

    @property
    def timeout(self) -> float | None:
        value = self.request.get("timeout")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None

    @property
    def person(self) -> bool:
        """A person's task in a network (not a robot's question)."""
        return bool(self.request.get("person"))

    @property
    def answer(self) -> str | None:
        """What the person answered (once they did)."""
        return None if self.status != "ok" or self.result_value is None else str(self.result_value)

    @property
    def outcome(self) -> str:
        """What the card says once the question is over ("" while it waits)."""
        if self.answer is not None:
            return f"Answered: {self.answer}"
        if self.status == "stopped":
            return "Stopped before anyone answered."
        if self.status in ("error", "denied"):
            error = self.error.get("message", self.error) if isinstance(self.error, dict) else self.error
            return f"Not answered — {error}" if error else "Not answered."
        return ""


def call_item_class(tool: str) -> type[ToolCallItem]:
    """The item that shows a call of ``tool``: an MCP server's request and a question to the person have their own."""
    from workspace.ask_user import QUESTION
    from workspace.mcp.requests import ELICITATION, SAMPLING

    return {SAMPLING: SamplingItem, ELICITATION: ElicitationItem, QUESTION: AskUserItem}.get(tool, ToolCallItem)


__all__ = [
    "OUTPUT_KEEP",
    "ApprovalState",
    "AskUserItem",
    "CallStatus",
    "ElicitationItem",
    "OutputState",
    "SamplingItem",
    "ToolCallItem",
    "call_item_class",
    "cut_note",
]
