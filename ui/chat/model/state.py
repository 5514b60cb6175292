"""The chat's view state: what the conversation column shows, as plain data.

A :class:`ChatState` is a list of :class:`TurnState` (a user message and what answered it).
A turn holds *items* in the order they show: :class:`HeaderItem` (the robot's name above its
work), :class:`ReasoningItem` (the model's thinking, above its answer), :class:`TextItem`,
tool calls (:class:`~ui.chat.model.tool_calls.ToolCallItem`, in :mod:`ui.chat.model.tool_calls`),
:class:`ChangeItem`, :class:`NoticeItem`, :class:`ErrorItem`, and for a network run a
:class:`NetworkItem` followed by one :class:`LaneItem` per task, whose own ``items`` hold the
task robot's text and cards. A robot used as a tool shows as a :class:`CallLaneItem` inside its
call's card (``ToolCallItem.inner``), holding that robot's text and cards the same way. Every run
of the turn is a :class:`RunState` (usage, how it ended, whether its footer shows). The presenter
(:mod:`ui.chat.model.presenter`, through its reducers) is the only writer; the chat widget reads.

Items compare by identity (``eq=False``) so they can key the widgets that show them.

Why this module holds what it holds: it is the conversation's structure — the containers (chat,
turns, runs, lanes), the :class:`Item` base whose ``parent`` is a turn or a lane, and the simple
items — plain dataclasses that refer to each other, read together by the presenter and the
widgets. The tool-call vocabulary (calls, MCP requests shown as calls, approvals, progress) is
:mod:`ui.chat.model.tool_calls`, which builds on this module; this one names its classes only for type
checking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from workspace.result import STOP_NOTES, Usage

if TYPE_CHECKING:
    from ui.chat.model.tool_calls import ToolCallItem
    from workspace import events as ev

#: How a run ended. "interrupted": the app closed before the run finished (a stored turn).
RunOutcome: TypeAlias = Literal["finished", "failed", "cancelled", "interrupted"]
#: A network task's state in its lane.
LaneStatus: TypeAlias = Literal["waiting", "running", "done", "failed", "skipped", "cancelled"]

STOPPED_BY_USER = "stopped by the user"
INTERRUPTED = "interrupted: the app closed before the run finished"


# -- the user's message ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class AttachmentChip:
    """A file, image or MCP resource sent with a message, as its chip shows it (from the ``run_started``
    event's reference: the content stays in the thread's database, found by ``sha256``)."""

    kind: str
    name: str
    mime: str
    size: int
    sha256: str
    path: str | None = None
    server: str | None = None
    uri: str | None = None
    note: str | None = None

    @classmethod
    def from_ref(cls, ref: Mapping[str, Any]) -> AttachmentChip:
        return cls(kind=str(ref.get("kind") or "file"), name=str(ref.get("name") or "attachment"),
                   mime=str(ref.get("mime") or ""), size=int(ref.get("size") or 0), sha256=str(ref.get("sha256") or ""),
                   path=ref.get("path"), server=ref.get("server"), uri=ref.get("uri"), note=ref.get("note"))

    def ref(self) -> dict[str, Any]:
        """The reference again (for :meth:`workspace.persistence.Store.load_attachments`)."""
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "mime": self.mime, "size": self.size,
                               "sha256": self.sha256}
        for key in ("path", "server", "uri", "note"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out

    @property
    def is_image(self) -> bool:
        return self.mime.startswith("image/")


@dataclass(eq=False, kw_only=True)
class UserState:
    """A user's message: the text shown, the review note sent in front of it, its stored turn, what was
    attached to it."""

    text: str
    note: str | None = None
    turn_id: str | None = None
    sibling_index: int = 0
    sibling_count: int = 1
    attachments: list[AttachmentChip] = field(default_factory=list)


# -- items ------------------------------------------------------------------------------------------
@dataclass(eq=False, kw_only=True)
class Item:
    """Something shown in a turn (``parent`` is the turn) or in a network task's lane."""

    parent: TurnState | Lane
    run: RunState | None = None

    @property
    def turn(self) -> TurnState:
        parent = self.parent
        return parent if isinstance(parent, TurnState) else parent.turn


@dataclass(eq=False, kw_only=True)
class HeaderItem(Item):
    """The robot's name above its work (outside lanes: a lane's header names the robot)."""

    robot: str


@dataclass(eq=False, kw_only=True)
class TextItem(Item):
    """One stretch of the robot's Markdown (a model turn's text); grows while it streams."""

    text: str = ""


@dataclass(eq=False, kw_only=True)
class ReasoningItem(Item):
    """The model's thinking in one model turn (never sent back to it): open while it streams, folded
    once the answer starts (unless the person opened or closed it)."""

    text: str = ""
    #: The thinking is complete (the answer began, or the model turn ended).
    done: bool = False
    collapsed: bool = False
    #: The person opened or closed it: automatic folding leaves it alone.
    user_toggled: bool = False

    @property
    def title(self) -> str:
        """The block's header line."""
        if not self.done:
            return "Thinking…"
        words = len(self.text.split())
        return f"Thinking ({words:,} word{'s' if words != 1 else ''})"


#: How a notice in the conversation looks: a muted line, a warning, or an error.
NoticeLevel: TypeAlias = Literal["info", "warning", "error"]
#: What a notice's button does: "continue" asks the model to go on with an answer cut off at the token limit.
NoticeAction: TypeAlias = Literal["continue"]
#: The button's label of each action.
NOTICE_ACTIONS: dict[str, str] = {"continue": "Continue"}


@dataclass(eq=False, kw_only=True)
class NoticeItem(Item):
    """A line the run adds to the conversation about how it went (MCP servers still starting or
    failed, a fallback model, a tool call written as text, a compaction, an answer cut off at the
    token limit): ``text`` always shows, ``details`` (when given) expand under it, ``action`` (when
    given) is a button beside it."""

    text: str = ""
    level: NoticeLevel = "info"
    details: str | None = None
    action: NoticeAction | None = None


#: Words a fix starts with, in error messages that name their fix ("…: set OPENAI_API_KEY or open Settings").
_FIX_VERBS = ("set", "open", "install", "check", "start", "run", "pick", "choose", "try", "use", "give", "add",
              "remove", "raise", "lower", "make", "connect", "pass", "export", "wait", "restart", "update", "sign",
              "log", "create", "put", "increase", "reduce", "fix", "see", "ask", "select", "turn", "enable",
              "disable", "point", "change", "rename", "delete", "type", "send", "stop", "reload", "upgrade")


def split_fix(message: str) -> tuple[str, str]:
    """An error message as (what went wrong, how to fix it): the fix is the part from the first sentence
    (or clause after ": ", "; " or " — ") that starts with an imperative verb ("Set …", "open Settings");
    ("message", "") when the message names no fix."""
    import re

    text = message.strip()
    for m in re.finditer(r"(?:(?<=[.!?])\s+|[:;]\s+|\s+[—–-]\s+|\n+)", text):
        rest = text[m.end():]
        word = re.match(r"[A-Za-z]+", rest)
        if word and word.group(0).lower() in _FIX_VERBS and m.start() > 0:
            head = text[: m.start()].rstrip(" :;—–-")
            fix = rest.strip()
            return (head + ("" if head.endswith((".", "!", "?")) else "."), fix[:1].upper() + fix[1:])
    return text, ""


@dataclass(eq=False, kw_only=True)
class ErrorItem(Item):
    """A run that failed: what went wrong and the fix the message names (a card across the column, with
    Retry)."""

    message: str
    fix: str = ""
    error_type: str = ""


@dataclass(eq=False, kw_only=True)
class ChangeItem(Item):
    """File changes a robot proposed: the files, then what the person decided."""

    change_set_id: str
    robot: str
    files: list[dict[str, Any]] = field(default_factory=list)
    #: "pending" until a ``change_decided`` arrives, then "decided".
    status: Literal["pending", "decided"] = "pending"
    #: The decision per file path (the latest for each path).
    outcome: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The checkpoint taken before the changes were written (what Undo restores).
    checkpoint_id: str | None = None
    #: The written changes were undone (from the card or the Changes dock).
    undone: bool = False

    @property
    def accepted(self) -> int:
        return sum(len(f.get("accepted") or []) for f in self.outcome.values())

    @property
    def rejected(self) -> int:
        return sum(len(f.get("rejected") or []) for f in self.outcome.values())

    @property
    def written(self) -> bool:
        return any(f.get("status") == "applied" for f in self.outcome.values())

    @property
    def can_undo(self) -> bool:
        """Undo (or Redo) shows: something was written and there is a checkpoint to go back to."""
        if self.undone:
            return self.checkpoint_id is not None
        return self.status == "decided" and self.written and self.checkpoint_id is not None

    def merge_files(self, files: list[dict[str, Any]]) -> None:
        """Another proposal of the same change set: a file again replaces its row."""
        by_path = {str(f.get("path")): i for i, f in enumerate(self.files)}
        for f in files:
            key = str(f.get("path"))
            if key in by_path:
                self.files[by_path[key]] = f
            else:
                by_path[key] = len(self.files)
                self.files.append(f)


@dataclass(eq=False, kw_only=True)
class NetworkItem(Item):
    """The first row of a network run (its name and a summary of its tasks); its lanes follow."""

    network: str
    run_id: str
    lanes: dict[str, LaneItem] = field(default_factory=dict)
    #: Task names in the order their lanes appeared.
    order: list[str] = field(default_factory=list)
    #: Done tasks in the order they finished (the last one is the network's answer).
    done: list[str] = field(default_factory=list)
    ended: bool = False
    #: "4 tasks · 2 done · 2 skipped" once the run ended.
    summary: str = ""

    def running(self) -> list[LaneItem]:
        return [lane for lane in self.lanes.values() if lane.status == "running"]

    @property
    def answer_lane(self) -> LaneItem | None:
        return self.lanes.get(self.done[-1]) if self.done else None

    def lane_for_robot(self, robot: str) -> LaneItem | None:
        """The running lane of ``robot`` (for a run whose task is not known)."""
        for task in reversed(self.order):
            lane = self.lanes[task]
            if lane.robot == robot and lane.status == "running":
                return lane
        return None


@dataclass(eq=False, kw_only=True)
class Lane(Item):
    """What a lane shows: a run's state and its robot's work (``items``), folded or open."""

    robot: str
    status: LaneStatus = "waiting"
    #: Why it failed, was skipped or stopped.
    reason: str | None = None
    message: str | None = None
    started: float | None = None
    finished: float | None = None
    collapsed: bool = False
    #: The person opened or closed the lane: automatic folding leaves it alone.
    user_toggled: bool = False
    usage: Usage = field(default_factory=Usage)
    items: list[Item] = field(default_factory=list)

    @property
    def duration(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return max(0.0, self.finished - self.started)

    @property
    def text(self) -> str:
        """The lane's text (every text item, joined)."""
        return "\n\n".join(i.text for i in self.items if isinstance(i, TextItem) and i.text)

    @property
    def summary(self) -> str:
        """One line for the folded lane: the answer's first line, else why it did not finish."""
        texts = [i.text for i in self.items if isinstance(i, TextItem) and i.text.strip()]
        text = first_line(texts[-1]) if texts else ""
        if self.status == "skipped":
            return self.reason or "not run"
        if self.status in ("failed", "cancelled") and self.reason and not text:
            return self.reason
        return text


@dataclass(eq=False, kw_only=True)
class LaneItem(Lane):
    """One task of a network run: its state and the task robot's work (``items``)."""

    group: NetworkItem
    task: str


@dataclass(eq=False, kw_only=True)
class CallLaneItem(Lane):
    """The run of a robot used as a tool, inside its call's card (``call``): its state and work."""

    call: ToolCallItem
    run_id: str

    @property
    def task(self) -> str:
        """What the lane's header names: the robot."""
        return self.robot


def first_line(text: str, limit: int = 160) -> str:
    """The first line of Markdown with a character of text, without its markup."""
    for line in text.splitlines():
        line = line.strip().lstrip("#>*-_ ").strip()
        if line:
            line = line.replace("**", "").replace("`", "")
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


# -- runs and turns -----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class RunEnd:
    """How a run ended, and the figures its footer shows."""

    outcome: RunOutcome
    #: The error (failed) or the reason (cancelled, interrupted).
    message: str | None = None
    #: The run stopped at the turn limit (a finished robot run that wanted to go on).
    max_turns: bool = False
    duration: float | None = None
    #: Why a finished robot run stopped (its result's ``stop_reason``: stop, length, max_cost, ...).
    stop_reason: str | None = None

    @property
    def status_text(self) -> str:
        """The footer's status line ("" for a run that simply finished)."""
        if self.outcome in ("cancelled", "interrupted"):
            reason = self.message or STOPPED_BY_USER
            return "■ Stopped by you" if reason == STOPPED_BY_USER else f"■ Stopped — {reason}"
        if self.outcome == "failed":
            return f"Failed — {self.message}"
        if self.max_turns:
            return ("■ Stopped at the turn limit — the robot wanted to go on (raise agent.max_turns in "
                    "config.yaml, or send “continue” to let it go on)")
        if self.stop_reason in ("max_cost", "max_total_tokens", "context_full"):  # the run's budget, the window
            return f"■ {STOP_NOTES[self.stop_reason]}"
        return ""


@dataclass(eq=False, kw_only=True)
class RunState:
    """One run in a turn: the robot's own, a network's, or a network task robot's (``lane`` set)."""

    run_id: str
    robot: str
    turn: TurnState
    #: The lane of the task this run works for (a network's task), else None.
    lane: LaneItem | None = None
    #: The lane of a robot used as a tool (this run), inside the call's card; else None.
    inner: CallLaneItem | None = None
    #: A network run's row and lanes.
    network: NetworkItem | None = None
    #: The text item still growing (None after a tool call, a change or a complete text).
    text: TextItem | None = None
    texts: list[TextItem] = field(default_factory=list)
    calls: dict[str, ToolCallItem] = field(default_factory=dict)
    #: The robot whose header was shown last (a header shows again when another robot speaks).
    last_robot: str | None = None
    #: The run's own running totals (from its ``usage`` events).
    usage: Usage = field(default_factory=Usage)
    #: Its model calls (one ``usage`` event each), for the footer's tooltip.
    model_calls: list[ev.Usage] = field(default_factory=list)
    #: Task runs of this network run.
    children: list[RunState] = field(default_factory=list)
    #: When its ``run_started`` came (a duration when the result has none).
    started: float | None = None
    #: The usage the terminal event's result reports (used when no ``usage`` event came).
    result_usage: Usage | None = None
    end: RunEnd | None = None
    #: The footer (usage, status, copy, regenerate) shows: after the first usage, a wait, or the end.
    footer: bool = False
    #: When the run's first token (text or thinking) came: the time to first token is this less ``started``.
    first_token: float | None = None
    #: When the current model call's first token came (None before it, and after its ``usage``).
    call_first_token: float | None = None
    #: The output tokens of the model calls that streamed, and the seconds they streamed (from each
    #: call's first token to its ``usage``): the answer's tokens per second.
    streamed_tokens: int = 0
    streamed_seconds: float = 0.0
    #: The thinking still growing (None once the answer began or the model turn ended).
    reasoning: ReasoningItem | None = None
    #: False for the offline demo (no language model): its cost is not "unknown", there is none.
    language_model: bool = True
    #: What the run is doing while nothing else shows it ("Waiting for the model…", "Connecting to …",
    #: "Retrying…"); None once text or a card shows, and after the end. A live hint, not part of the
    #: stored conversation: a reopened thread never has one.
    activity: str | None = None
    #: When ``activity`` started (its time shows next to it).
    activity_since: float | None = None

    @property
    def time_to_first_token(self) -> float | None:
        """Seconds from the run's start to its first token (text or thinking; a network's: its first task's);
        None before it."""
        firsts = [run.first_token for run in (self, *self.children) if run.first_token is not None]
        if not firsts or self.started is None:
            return None
        return max(0.0, min(firsts) - self.started)

    @property
    def tokens_per_second(self) -> float | None:
        """The answer's output tokens per second while the model streamed (a network's: its tasks' together);
        None when unknown."""
        runs = (self, *self.children)
        tokens, seconds = sum(r.streamed_tokens for r in runs), sum(r.streamed_seconds for r in runs)
        if tokens <= 0 or seconds < 0.01:
            return None
        return tokens / seconds

    @property
    def totals(self) -> Usage:
        """Tokens and cost of this run and its task runs (what the turn spent on it)."""
        total = self.usage
        for child in self.children:
            total = total + child.totals
        if not (total.input_tokens or total.output_tokens) and self.result_usage is not None:
            return self.result_usage
        return total

    @property
    def answer_text(self) -> str:
        """The run's text, for Copy."""
        return "\n\n".join(t.text for t in self.texts)


@dataclass(eq=False, kw_only=True)
class TurnState:
    """A user message and everything that answered it."""

    user: UserState | None = None
    items: list[Item] = field(default_factory=list)
    #: Every run of the turn, in the order they started (task runs included).
    runs: list[RunState] = field(default_factory=list)
    #: The stored turn's status ("finished", "interrupted"...; None for a live turn).
    status: str | None = None

    @property
    def turn_id(self) -> str | None:
        return self.user.turn_id if self.user is not None else None

    @property
    def top_runs(self) -> list[RunState]:
        """The runs with a footer of their own (not a network's task runs, nor robots used as tools:
        their usage is in the run that called them)."""
        return [r for r in self.runs if r.lane is None and r.inner is None]

    @property
    def totals(self) -> Usage:
        total = Usage()
        for run in self.top_runs:
            total = total + run.totals
        return total


@dataclass(eq=False, kw_only=True)
class ChatState:
    """The whole column: the turns shown, oldest first, and the earlier turns not loaded yet."""

    turns: list[TurnState] = field(default_factory=list)
    #: Stored turns (``TurnInfo``) older than the first one shown, oldest first.
    hidden: Sequence[Any] = field(default_factory=list)

    @property
    def totals(self) -> Usage:
        """Tokens and cost of every turn on the branch shown (hidden turns from their stored totals)."""
        total = Usage()
        for info in self.hidden:
            total = total + Usage(int(info.input_tokens or 0), int(info.output_tokens or 0), info.cost)
        for turn in self.turns:
            total = total + turn.totals
        return total


__all__ = [
    "INTERRUPTED",
    "NOTICE_ACTIONS",
    "STOPPED_BY_USER",
    "CallLaneItem",
    "ChangeItem",
    "ChatState",
    "ErrorItem",
    "HeaderItem",
    "Item",
    "Lane",
    "LaneItem",
    "LaneStatus",
    "NetworkItem",
    "NoticeAction",
    "NoticeItem",
    "NoticeLevel",
    "ReasoningItem",
    "RunEnd",
    "RunOutcome",
    "RunState",
    "TextItem",
    "TurnState",
    "UserState",
    "first_line",
    "split_fix",
]
