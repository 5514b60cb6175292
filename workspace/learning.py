"""The learning half of a robot (RobotLab 0.2), mixed into :class:`~workspace.robot.Robot`.

* ``robot.learn(text)`` / ``await robot.alearn(text)``: a learning kept across runs, durable in the robot's
  :class:`~workspace.knowledge.KnowledgeStore` (per robot name and folder), deduplicated by RobotLab's
  two-way substring rule, inside the ``learn`` hooks. Every later run's system prompt ends with
  ``LEARNINGS FROM PREVIOUS RUNS:`` and the list. ``robot.learnings`` lists them; ``forget_learning`` drops one.
* ``Robot(learn=True, learn_domain=...)``: the robot also gets the ``recall_knowledge`` and
  ``record_knowledge`` tools over its knowledge entries (with a confidence raised each time one is recalled
  or recorded again).
* ``review_memory="ask"`` (or the configuration's ``review.memory: ask``): a learning or a knowledge entry
  is proposed, not stored: a :class:`~workspace.knowledge.PendingMemoryWrite` in
  ``robot.pending_memory_writes``, handed to ``on_memory_write`` when given. ``record_knowledge`` waits
  for the decision and tells the model the outcome; accepted, it is stored (edited, if it was).
* ``robot.search_history(query, limit=5)``: the conversation's messages most like the query.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from workspace.knowledge import (
    CATEGORIES,
    KnowledgeEntry,
    KnowledgeStore,
    PendingMemoryWrite,
    check_category,
    learnings_block,
    merge_learning,
    similarity,
)
from workspace.tools.base import Tool

if TYPE_CHECKING:
    from workspace.hooks import HookRegistry
    from workspace.memory import Memory
    from workspace.messages import Message

log = logging.getLogger(__name__)

#: Messages shorter than this are not searched (RobotLab's ``MIN_SCORE_LENGTH``).
MIN_SEARCH_LENGTH = 20
REVIEW_MEMORY_MODES = ("auto", "ask")
#: Why an entry the Reflector made is there (RobotLab's text).
REFLECTOR_REASONING = "Observed during session (auto-promoted by Reflector)"
MemoryWriteCallback = Callable[[PendingMemoryWrite], Any]


@dataclass(frozen=True, slots=True)
class HistoryResult:
    """One message found by ``search_history``: its ``text``, ``role``, ``score`` and ``index`` in the history."""

    text: str
    role: str
    score: float
    index: int


class _LearningState:
    __slots__ = ("domain", "enabled", "learnings", "on_write", "pending", "review", "store")

    def __init__(self) -> None:
        self.store: KnowledgeStore | None = None
        self.learnings: list[str] | None = None  # loaded from the store on first use
        self.enabled = False
        self.domain = "general"
        self.review: str | None = None
        self.on_write: MemoryWriteCallback | None = None
        self.pending: list[PendingMemoryWrite] = []


class RobotLearning:
    """What a robot learns and knows (see the module)."""

    name: str
    folder: Path | None
    memory: Memory
    hooks: HookRegistry
    history: list[Message]

    def _config_value(self, key: str, default: Any) -> Any:
        """The configuration's ``key`` (``default`` for a robot given only a provider; see Robot.config)."""
        raise NotImplementedError

    @property
    def _learning(self) -> _LearningState:
        state: _LearningState | None = self.__dict__.get("_learning_state")
        if state is None:
            state = self.__dict__["_learning_state"] = _LearningState()
        return state

    def _setup_learning(self, *, learn: bool | None, learn_domain: str | None,
                        knowledge_store: KnowledgeStore | str | Path | bool | None,
                        review_memory: str | None, on_memory_write: MemoryWriteCallback | None) -> None:
        state = self._learning
        state.enabled = bool(learn)
        state.domain = str(learn_domain).strip() if learn_domain else "general"
        if knowledge_store is False:
            state.store, state.learnings = None, []
        elif isinstance(knowledge_store, KnowledgeStore):
            state.store = knowledge_store
        elif knowledge_store is not None and knowledge_store is not True:
            state.store = KnowledgeStore(knowledge_store)
        else:
            state.store = KnowledgeStore()
        if review_memory is not None and review_memory not in REVIEW_MEMORY_MODES:
            from workspace.errors import ConfigurationError

            raise ConfigurationError(f"Robot '{self.name}': review_memory must be one of "
                                     f"{', '.join(REVIEW_MEMORY_MODES)} (got {review_memory!r})")
        state.review = review_memory
        state.on_write = on_memory_write

    # -- what is kept ----------------------------------------------------------------------------------
    @property
    def knowledge_store(self) -> KnowledgeStore | None:
        """Where learnings and knowledge are kept (None: in this object only, ``knowledge_store=False``)."""
        return self._learning.store

    @property
    def learn_enabled(self) -> bool:
        """Whether runs get the ``recall_knowledge`` / ``record_knowledge`` tools (``learn=True``)."""
        return self._learning.enabled

    @property
    def learn_domain(self) -> str:
        return self._learning.domain

    def _learnings_list(self) -> list[str]:
        state = self._learning
        if state.learnings is None:
            state.learnings = state.store.learnings(robot=self.name, folder=self.folder) if state.store else []
        return state.learnings

    @property
    def learnings(self) -> list[str]:
        """What this robot has learnt (a copy), oldest first."""
        return list(self._learnings_list())

    def learnings_prompt(self) -> str:
        """The block later runs get at the end of their system prompt (empty when nothing was learnt), and once
        the outcome of each memory write reviewed since the robot was last told (a proposed ``learn``)."""
        block = learnings_block(self._learnings_list())
        state = self._learning
        decided = [p for p in state.pending if not p.pending]
        state.pending = [p for p in state.pending if p.pending]
        told = [f'- "{p.proposed}": {p.outcome()}' if p.status == "rejected" else
                f"- {p.outcome()} (proposed: {p.proposed})" if p.text != p.proposed else f"- {p.outcome()}"
                for p in decided if not p.told]
        if told:
            block = "\n\n".join(filter(None, [block, "WHAT YOU PROPOSED TO REMEMBER WAS REVIEWED:\n" + "\n".join(told)]))
        return block

    @property
    def review_memory(self) -> Literal["auto", "ask"]:
        """``ask``: durable writes are proposed, not stored; ``auto``: stored at once. The robot's
        ``review_memory=``, else the configuration's ``review.memory``."""
        if self._learning.review is not None:
            return "ask" if self._learning.review == "ask" else "auto"
        return "ask" if self._config_value("review.memory", "auto") == "ask" else "auto"

    def watch_memory_writes(self, callback: MemoryWriteCallback) -> None:
        """Hand proposed memory writes to ``callback`` (a front end's review: the window's Changes dock) when
        the robot has no ``on_memory_write`` of its own."""
        if self._learning.on_write is None:
            self._learning.on_write = callback

    @property
    def pending_memory_writes(self) -> list[PendingMemoryWrite]:
        """The durable writes proposed and not decided yet (``review_memory="ask"``)."""
        return [p for p in self._learning.pending if p.pending]

    def _store_learning(self, text: str) -> bool:
        learnings = self._learnings_list()
        added = merge_learning(learnings, text)
        if added:
            state = self._learning
            if state.store is not None:
                state.store.save_learnings(learnings, robot=self.name, folder=self.folder)
            self.memory.set("learnings", list(learnings))
        return added

    def forget_learning(self, text: str) -> bool:
        """Forget the learning ``text``; True when it was there."""
        learnings = self._learnings_list()
        if text not in learnings:
            return False
        learnings.remove(text)
        if self._learning.store is not None:
            self._learning.store.save_learnings(learnings, robot=self.name, folder=self.folder)
        self.memory.set("learnings", list(learnings))
        return True

    async def _propose(self, pending: PendingMemoryWrite) -> PendingMemoryWrite:
        self._learning.pending.append(pending)
        callback = self._learning.on_write
        if callback is not None:
            value = callback(pending)
            if inspect.isawaitable(value):
                await value
        return pending

    # -- learn -----------------------------------------------------------------------------------------
    async def alearn(self, text: object) -> Self:
        """Learn ``text`` (RobotLab's ``learn``): kept across runs and given to later runs. Blank text is
        ignored (no hooks). Runs inside the ``learn`` hooks (``ctx.stored``: whether it was added, False
        when an existing learning already said it or it was proposed for review)."""
        clean = str(text).strip()
        if not clean:
            return self
        from workspace import hooks

        # Inside this robot's run (record_knowledge): the run's hooks (global, network, robot, per run); else the
        # global and the robot's.
        registrations = hooks.current_scope() if hooks.current_robot() is self else \
            hooks.collect(hooks.GLOBAL, self.hooks)
        ctx = hooks.LearnHookContext(robot=self, text=clean, learnings_before=tuple(self._learnings_list()))

        async def core() -> bool:
            if self.review_memory == "ask":
                pending = PendingMemoryWrite("learn", self.name, ctx.text,
                                             _apply=lambda p: self._accepted_learning(p.text))
                await self._propose(pending)
                ctx.stored = False
            else:
                ctx.stored = self._store_learning(ctx.text)
            await hooks.call_each(registrations, "on_learn", ctx)
            return ctx.stored

        await hooks.dispatch("learn", ctx, registrations, core)
        return self

    def _accepted_learning(self, text: str) -> None:
        self._store_learning(text)

    def learn(self, text: object) -> Self:
        """:meth:`alearn` for scripts (outside a running event loop; inside one, ``await robot.alearn``)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.alearn(text))
        raise RuntimeError("Robot.learn() cannot be called from a running event loop; use 'await robot.alearn(...)'")

    # -- knowledge -------------------------------------------------------------------------------------
    def recall_knowledge(self, query: str, *, domain: str | None = None, min_confidence: float = 0.0
                         ) -> list[KnowledgeEntry]:
        """The knowledge entries matching ``query`` (RobotLab's recall), most confident first, as they were; each
        is confirmed in the store (its confidence rises), as when the robot recalls it."""
        store = self._learning.store
        if store is None:
            return []
        found = store.recall(query, robot=self.name, folder=self.folder, domain=domain, min_confidence=min_confidence)
        for entry in found:
            store.confirm(entry, robot=self.name, folder=self.folder)
        return found

    async def record_knowledge(self, content: str, *, reasoning: str = "", category: str = "fact",
                               domain: str | None = None, wait: bool = True) -> str:
        """Record a piece of knowledge (and learn ``"<content> (<domain>)"``); returns what the robot is told.
        With ``review_memory="ask"`` it is proposed; ``wait``: wait for the decision when an ``on_memory_write``
        callback is there to take it (else, or without one, the robot is told it waits for review)."""
        store = self._learning.store
        if store is None:
            return "No durable store configured on this robot."
        text = str(content).strip()
        if not text:
            raise ValueError("record_knowledge needs the knowledge to record: give content= one clear statement")
        entry = KnowledgeEntry(text, reasoning=str(reasoning or "").strip(), category=check_category(category),
                               domain=str(domain or self.learn_domain).strip() or "general")
        if self.review_memory != "ask":
            store.record(entry, robot=self.name, folder=self.folder)
            await self.alearn(f"{entry.content} ({entry.domain})")  # RobotLab's: inside the learn hooks
            return f"Recorded: {text}"
        pending = PendingMemoryWrite("knowledge", self.name, text, entry=entry,
                                     _apply=lambda p: self._record(p.entry or entry))
        await self._propose(pending)
        if wait and self._learning.on_write is not None:  # nobody to decide now: the run does not wait
            await pending.wait()
            pending.told = True  # the tool's result says it
        return pending.outcome()

    def _record(self, entry: KnowledgeEntry) -> None:
        """An accepted proposal stored (``accept`` is a plain call: the learn hooks do not fire for it)."""
        store = self._learning.store
        assert store is not None
        store.record(entry, robot=self.name, folder=self.folder)
        self._store_learning(f"{entry.content} ({entry.domain})")

    def reflect(self) -> list[KnowledgeEntry]:
        """RobotLab's ``Reflector``, run at the end of each run of a robot with ``learn=True``: each learning
        not yet a knowledge entry of its domain becomes one (category ``pattern``, confidence 0.1). A learning
        ``record_knowledge`` made (``"<content> (<domain>)"``) is its entry already. Returns the new entries."""
        store = self._learning.store
        if store is None:
            return []
        entries = store.entries(robot=self.name, folder=self.folder)
        known = {e.content.lower() for e in entries} | {f"{e.content} ({e.domain})".lower() for e in entries}
        added = []
        for text in self._learnings_list():
            if text.lower() not in known:
                added.append(store.record(KnowledgeEntry(
                    text, reasoning=REFLECTOR_REASONING, category="pattern", domain=self.learn_domain),
                    robot=self.name, folder=self.folder))
                known.add(text.lower())
        return added

    def knowledge_tools(self) -> list[Tool]:
        """The ``recall_knowledge`` and ``record_knowledge`` tools over this robot's knowledge."""
        return [self._recall_tool(), self._record_tool()]

    def _recall_tool(self) -> Tool:
        def recall(arguments: dict[str, Any]) -> str:
            query = str(arguments.get("query") or "")
            entries = self.recall_knowledge(query, domain=arguments.get("domain") or None)
            if not entries:
                return f"No relevant past knowledge found for: {query}. When in doubt, skip."
            return "Relevant past knowledge:\n" + "\n".join(entry.line() for entry in entries)

        return Tool("recall_knowledge", (
            "Recall relevant knowledge from past sessions before making a decision. Use this when uncertain, or "
            "to check whether you have seen a similar situation before. When in doubt and nothing relevant is "
            "found, skip the action."), {
            "type": "object", "properties": {
                "query": {"type": "string", "description": "The decision you are about to make, in plain words"},
                "domain": {"type": "string", "description": "The topic area to search (optional)"}},
            "required": ["query"]}, recall)

    def _record_tool(self) -> Tool:
        async def record(arguments: dict[str, Any]) -> str:
            return await self.record_knowledge(
                str(arguments.get("content") or ""), reasoning=str(arguments.get("reasoning") or ""),
                category=str(arguments.get("category") or "fact"), domain=arguments.get("domain") or None)

        return Tool("record_knowledge", (
            "Record a piece of knowledge learned during this session: a user preference, a reliable pattern, or "
            "a factual insight worth remembering. Recorded knowledge persists across future sessions."), {
            "type": "object", "properties": {
                "content": {"type": "string", "description": "The knowledge, in plain language (one clear statement)"},
                "reasoning": {"type": "string", "description": "Why this is worth remembering"},
                "category": {"type": "string", "enum": list(CATEGORIES)},
                "domain": {"type": "string", "description": "The topic area it applies to"}},
            "required": ["content", "reasoning", "category"]}, record)

    # -- the conversation ------------------------------------------------------------------------------
    def compress_history(self, *, recent_turns: int = 3, keep_threshold: float = 0.6, drop_threshold: float = 0.2,
                         summarizer: Callable[[str], str] | None = None) -> Self:
        """RobotLab's ``compress_history``: older messages unlike the recent ones leave the conversation
        (:func:`compress_messages`); those in between are replaced by ``summarizer(text)`` when given (a
        summary keeps the message's role). Returns the robot. An async summarizer: ``acompress_history``."""
        compressed = compress_messages(self.history, recent_turns=recent_turns, keep_threshold=keep_threshold,
                                       drop_threshold=drop_threshold, summarizer=summarizer)
        if any(isinstance(item, tuple) and inspect.isawaitable(item[1]) for item in compressed):
            for item in compressed:
                if isinstance(item, tuple) and inspect.iscoroutine(item[1]):
                    item[1].close()
            raise TypeError("The summarizer returned an awaitable: use 'await robot.acompress_history(...)'")
        self._replace_history([_summarised(item) for item in compressed])
        return self

    async def acompress_history(self, *, recent_turns: int = 3, keep_threshold: float = 0.6,
                                drop_threshold: float = 0.2, summarizer: Callable[[str], Any] | None = None) -> Self:
        """:meth:`compress_history` with a summarizer that may be ``async`` (another robot's ``arun``)."""
        compressed = compress_messages(self.history, recent_turns=recent_turns, keep_threshold=keep_threshold,
                                       drop_threshold=drop_threshold, summarizer=summarizer)
        done = []
        for item in compressed:
            if isinstance(item, tuple) and inspect.isawaitable(item[1]):
                item = (item[0], await item[1])
            done.append(_summarised(item))
        self._replace_history(done)
        return self

    def _replace_history(self, items: list[Message | None]) -> None:
        self.history[:] = [m for m in items if m is not None]
        manager = self.__dict__.get("_context_manager")
        if manager is not None:  # its summary counted messages by position: they moved
            manager.reset()

    def search_history(self, query: str, *, limit: int = 5) -> list[HistoryResult]:
        """The messages of the conversation most like ``query`` (RobotLab's ``search_history``): by the
        cosine of their stemmed word counts, best first, at most ``limit``; messages under 20 characters and
        those sharing no word are left out."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1 (got {limit!r})")
        found = []
        for index, message in enumerate(self.history):
            text = _text_of(message)
            if text is None or len(text.strip()) < MIN_SEARCH_LENGTH:
                continue
            score = similarity(query, text)
            if score > 0:
                found.append(HistoryResult(text=text, role=message.role, score=score, index=index))
        found.sort(key=lambda r: -r.score)
        return found[:limit]


def compress_messages(messages: list[Message], *, recent_turns: int = 3, keep_threshold: float = 0.6,
                      drop_threshold: float = 0.2, summarizer: Callable[[str], Any] | None = None) -> list[Any]:
    """RobotLab's ``HistoryCompressor``: the older text messages scored against the recent ones; what is
    like them is kept, what is not is dropped, what is in between is summarised (``summarizer(text)``; may
    return an awaitable, which the caller awaits) or dropped. System messages, tool calls and their results
    are never touched; the last ``recent_turns`` pairs are kept. Returns the new list, in order, where an
    item to summarise is a ``(message, pending summary)`` pair."""
    from workspace.similarity import term_vector

    if not keep_threshold > drop_threshold:
        raise ValueError(f"keep_threshold ({keep_threshold}) must be greater than drop_threshold ({drop_threshold})")
    if recent_turns < 0:
        raise ValueError(f"recent_turns must be 0 or more (got {recent_turns})")

    def pinned(message: Message) -> bool:
        return not message.is_text or message.role == "system" or not (_text_of(message) or "").strip()

    free = [i for i, m in enumerate(messages) if not pinned(m)]
    keep_last = recent_turns * 2
    if len(free) <= keep_last:
        return list(messages)
    recent = free[len(free) - keep_last:] if keep_last else []
    reference: dict[str, float] = {}
    vectors = [term_vector(_text_of(messages[i]) or "") for i in recent
               if len((_text_of(messages[i]) or "").strip()) >= MIN_SEARCH_LENGTH]
    for vector in vectors:
        for word, weight in vector.items():
            reference[word] = reference.get(word, 0.0) + weight / len(vectors)
    if not reference:
        return list(messages)
    norm = sum(w * w for w in reference.values()) ** 0.5
    older = set(free[: len(free) - keep_last])
    out: list[Any] = []
    for index, message in enumerate(messages):
        text = _text_of(message) or ""
        if index not in older or len(text.strip()) < MIN_SEARCH_LENGTH:
            out.append(message)
            continue
        vector = term_vector(text)
        score = sum(weight * vector.get(word, 0.0) for word, weight in reference.items()) / norm if norm else 0.0
        if score >= keep_threshold:
            out.append(message)
        elif score >= drop_threshold and summarizer is not None:
            out.append((message, summarizer(text)))
    return out


def _summarised(item: Any) -> Message | None:
    """A kept message, or the summary of one (None when the summary is empty: the message is dropped)."""
    if not isinstance(item, tuple):
        return item
    message, summary = item
    text = getattr(summary, "last_text_content", summary)
    if not str(text or "").strip():
        return None
    from workspace.messages import TextMessage

    return TextMessage(role=message.role, content=str(text).strip(), stop_reason="stop")


def _text_of(message: Message) -> str | None:
    content = message.content
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(p.get("text")) for p in content if isinstance(p, dict) and p.get("text")]
        return " ".join(parts) if parts else None
    return None


__all__ = ["HistoryResult", "RobotLearning"]
