"""Learning and knowledge (RobotLab 0.2): learn kept across runs and robots, the learn hooks, the knowledge
tools and their confidence, memory writes proposed for review, search_history, template skills."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from workspace import Hook, KnowledgeStore, PendingMemoryWrite, Robot, ScriptedProvider, ToolError, tool
from workspace.errors import ConfigurationError
from workspace.knowledge import KnowledgeEntry
from workspace.messages import ToolResultMessage
from workspace.providers.testing import ToolCall


def bot(name: str, provider: ScriptedProvider, store: KnowledgeStore, **kw: Any) -> Robot:
    return Robot(name, system_prompt=f"You are {name}.", provider=provider, knowledge_store=store, **kw)


def results_sent(provider: ScriptedProvider, call: int) -> list[Any]:
    return [m.content for m in provider.history[call].messages if isinstance(m, ToolResultMessage)]


@pytest.fixture
def store(tmp_path: Path) -> KnowledgeStore:
    return KnowledgeStore(tmp_path / "knowledge.db")


# -- learn (robot_test.rb's learn tests, example 21) ----------------------------------------------------------
def test_learn_deduplicates_by_two_way_substring(store: KnowledgeStore) -> None:
    robot = bot("r", ScriptedProvider(default="ok"), store)
    robot.learn("Paris is a capital").learn("Paris is a capital of France").learn("capital of France")
    robot.learn("   ")
    assert robot.learnings == ["Paris is a capital of France"]
    assert robot.memory.get("learnings") == ["Paris is a capital of France"]


def test_learnings_outlive_the_robot_and_reach_later_runs_system_prompt(store: KnowledgeStore) -> None:
    bot("helper", ScriptedProvider(default="ok"), store).learn("The user writes British English")
    provider = ScriptedProvider(default="ok")
    later = bot("helper", provider, store)  # a new object, a new process: the same store
    later.run("hello")
    assert provider.history[0].system == ("You are helper.\n\nLEARNINGS FROM PREVIOUS RUNS:\n"
                                          "- The user writes British English")
    assert provider.history[0].messages[-1].content == "hello"  # the message stays as typed


def test_learnings_are_per_robot_name_and_folder(store: KnowledgeStore, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bot("r", ScriptedProvider(default="ok"), store, folder=tmp_path / "a").learn("A's fact")
    assert bot("r", ScriptedProvider(default="ok"), store, folder=tmp_path / "b").learnings == []
    assert bot("other", ScriptedProvider(default="ok"), store, folder=tmp_path / "a").learnings == []
    assert bot("r", ScriptedProvider(default="ok"), store, folder=tmp_path / "a").learnings == ["A's fact"]


def test_the_default_store_is_in_the_data_folder() -> None:  # conftest gives each test its own ROBOTLAB_HOME
    Robot("r", system_prompt="x", provider=ScriptedProvider(default="ok")).learn("kept")
    assert Robot("r", system_prompt="x", provider=ScriptedProvider(default="ok")).learnings == ["kept"]
    no_store = Robot("r", system_prompt="x", provider=ScriptedProvider(default="ok"), knowledge_store=False)
    assert no_store.learnings == [] and no_store.knowledge_store is None


def test_secrets_never_reach_the_knowledge_file(store: KnowledgeStore) -> None:
    from workspace.secrets import register_secret

    register_secret("sk-test-0123456789abcdef", name="OPENAI_API_KEY")
    robot = bot("r", ScriptedProvider(default="ok"), store)
    robot.learn("the key is sk-test-0123456789abcdef")
    store.record(KnowledgeEntry("use sk-test-0123456789abcdef", reasoning="sk-test-0123456789abcdef"), robot="r")
    store.close()
    raw = b"".join(p.read_bytes() for p in store.path.parent.glob("knowledge.db*"))
    assert b"sk-test-0123456789abcdef" not in raw
    assert store.learnings(robot="r") == ["the key is <OPENAI_API_KEY>"]


def test_learn_hooks_fire_around_it_with_stored(store: KnowledgeStore) -> None:
    seen: list[tuple[str, str, bool, tuple[str, ...]]] = []

    class Watch(Hook):
        @classmethod
        def before_learn(cls, ctx: Any) -> None:
            seen.append(("before", ctx.text, ctx.stored, ctx.learnings_before))

        @classmethod
        async def around_learn(cls, ctx: Any, call_next: Any) -> Any:
            seen.append(("around", ctx.text, ctx.stored, ()))
            return await call_next()

        @classmethod
        def on_learn(cls, ctx: Any) -> None:
            seen.append(("on", ctx.text, ctx.stored, ()))

        @classmethod
        async def after_learn(cls, ctx: Any) -> None:
            seen.append(("after", ctx.text, ctx.stored, ()))

    robot = bot("r", ScriptedProvider(default="ok"), store).on(Watch)
    robot.learn("one").learn("on").learn("")
    assert seen == [("before", "one", False, ()), ("around", "one", False, ()), ("on", "one", True, ()),
                    ("after", "one", True, ()),
                    ("before", "on", False, ("one",)), ("around", "on", False, ()), ("on", "on", False, ()),
                    ("after", "on", False, ())]  # "one" says it already: on_learn still fires, stored False


async def test_learn_inside_a_loop_needs_await(store: KnowledgeStore) -> None:
    robot = bot("r", ScriptedProvider(default="ok"), store)
    with pytest.raises(RuntimeError, match=r"await robot.alearn"):
        robot.learn("x")
    assert (await robot.alearn("x")) is robot and robot.learnings == ["x"]


# -- durable knowledge: the tools and the confidence ---------------------------------------------------------
async def test_the_knowledge_tools_record_then_recall_with_rising_confidence(store: KnowledgeStore) -> None:
    provider = ScriptedProvider([
        [ToolCall("record_knowledge", {"content": "The user prefers short answers", "reasoning": "asked twice",
                                       "category": "preference"})],
        "noted",
        [ToolCall("recall_knowledge", {"query": "how long should answers be? short or long"})],
        "short it is",
    ])
    robot = bot("r", provider, store, learn=True, learn_domain="style")
    await robot.arun("remember I like it short")
    assert {s.name for s in provider.history[0].tools} >= {"recall_knowledge", "record_knowledge"}
    assert results_sent(provider, 1) == [{"data": "Recorded: The user prefers short answers"}]
    assert robot.learnings == ["The user prefers short answers (style)"]
    await robot.arun("how long?")
    assert results_sent(provider, 3)[-1] == {"data": "Relevant past knowledge:\n[preference/conf:0.1] The user "
                                                     "prefers short answers — asked twice"}
    [entry] = store.entries(robot="r")
    assert (entry.confidence, entry.use_count) == (0.2, 1)  # recalling confirmed it
    robot.recall_knowledge("short answers")
    assert store.entries(robot="r")[0].confidence == pytest.approx(0.3)


def test_recording_the_same_content_again_confirms_it(store: KnowledgeStore) -> None:
    store.record(KnowledgeEntry("Tabs, not spaces", domain="Code Style"), robot="r")
    store.record(KnowledgeEntry("tabs, NOT spaces", domain="code  style"), robot="r")
    [entry] = store.entries(robot="r")
    assert (entry.content, entry.confidence, entry.use_count) == ("Tabs, not spaces", 0.2, 1)
    assert store.recall("no", robot="r") == []  # words under 3 letters do not match
    assert store.recall("style guide", robot="r") == [entry]  # the domain matches too
    for _ in range(12):
        entry = store.confirm(entry, robot="r")
    assert entry.confidence == 1.0


async def test_without_learn_the_tools_are_not_offered(store: KnowledgeStore) -> None:
    provider = ScriptedProvider(default="ok")
    await bot("r", provider, store).arun("hi")
    assert not {"recall_knowledge", "record_knowledge"} & {s.name for s in provider.history[0].tools}
    with pytest.raises(ValueError, match="category must be one of fact, preference, pattern, correction"):
        await bot("r", provider, store).record_knowledge("x", category="opinion")


# -- review.memory: ask ---------------------------------------------------------------------------------
async def test_a_proposed_knowledge_write_rejected_is_not_stored_and_the_robot_is_told(store: KnowledgeStore) -> None:
    proposals: list[PendingMemoryWrite] = []

    def review(pending: PendingMemoryWrite) -> None:
        proposals.append(pending)
        pending.reject("that is not true")

    provider = ScriptedProvider([[ToolCall("record_knowledge", {"content": "The moon is cheese", "reasoning": "r",
                                                                "category": "fact"})], "ok"])
    robot = bot("r", provider, store, learn=True, review_memory="ask", on_memory_write=review)
    await robot.arun("remember this")
    assert results_sent(provider, 1) == [{"data": "Not recorded: the person reviewing memory rejected it: that is "
                                                  "not true"}]
    assert [(p.kind, p.text, p.status) for p in proposals] == [("knowledge", "The moon is cheese", "rejected")]
    assert store.entries(robot="r") == [] and robot.learnings == []


async def test_a_proposed_write_accepted_edited_is_stored_as_edited(store: KnowledgeStore) -> None:
    provider = ScriptedProvider([[ToolCall("record_knowledge", {"content": "Deploys are on Fridya", "reasoning": "r",
                                                                "category": "fact", "domain": "ops"})], "ok"])
    robot = bot("r", provider, store, learn=True, review_memory="ask",
                on_memory_write=lambda pending: pending.accept("Deploys are on Friday"))
    await robot.arun("remember this")
    assert results_sent(provider, 1) == [{"data": "Recorded: Deploys are on Friday"}]
    assert [e.content for e in store.entries(robot="r")] == ["Deploys are on Friday"]
    assert robot.learnings == ["Deploys are on Friday (ops)"]


async def test_learn_with_review_ask_waits_in_pending_until_accepted(store: KnowledgeStore) -> None:
    robot = bot("r", ScriptedProvider(default="ok"), store, review_memory="ask")
    await robot.alearn("a proposal")
    [pending] = robot.pending_memory_writes
    assert robot.learnings == [] and pending.outcome().startswith("Proposed for review")
    pending.accept()
    assert robot.learnings == ["a proposal"] and robot.pending_memory_writes == []
    assert await pending.wait(timeout=5) == "accepted"
    with pytest.raises(RuntimeError, match="already accepted"):
        pending.reject()


def test_review_memory_comes_from_the_configuration(store: KnowledgeStore, tmp_path: Path) -> None:
    from workspace.config import load_config

    (tmp_path / "config.yaml").write_text("review:\n  memory: ask\n", encoding="utf-8")
    config = load_config(None, user_file=tmp_path / "config.yaml")
    robot = Robot("r", system_prompt="x", config=config, knowledge_store=store)
    assert robot.review_memory == "ask"
    with pytest.raises(ConfigurationError, match="review_memory must be one of auto, ask"):
        Robot("r", system_prompt="x", review_memory="sometimes", knowledge_store=store)


# -- search_history (example 25) ----------------------------------------------------------------------------
async def test_search_history_finds_the_messages_most_like_the_query(store: KnowledgeStore) -> None:
    provider = ScriptedProvider(["Quarterly revenue grew by twelve percent.", "The office cat is called Tom.", "ok"])
    robot = bot("r", provider, store)
    await robot.arun("What happened to our quarterly revenue this year?")
    await robot.arun("Tell me about the office cat and its name")
    await robot.arun("hi")
    found = robot.search_history("quarterly revenue", limit=2)
    assert {(r.role, r.text, r.index) for r in found} == {
        ("assistant", "Quarterly revenue grew by twelve percent.", 1),
        ("user", "What happened to our quarterly revenue this year?", 0)}
    assert found[0].score >= found[1].score > 0
    assert robot.search_history("hi") == []  # under 20 characters: not searched
    assert robot.search_history("zebra") == []


# -- ToolError(retryable=) ------------------------------------------------------------------------------------
async def test_a_retryable_tool_error_says_so_to_the_model(store: KnowledgeStore) -> None:
    @tool
    def flaky() -> str:
        """Sometimes down."""
        raise ToolError("the service is busy", retryable=True)

    @tool
    def broken() -> str:
        """Always down."""
        raise ToolError("bad input")

    provider = ScriptedProvider([[ToolCall("flaky"), ToolCall("broken")], "done"])
    await bot("r", provider, store, tools=[flaky, broken]).arun("go")
    assert results_sent(provider, 1) == [{"error": "Error (flaky): the service is busy (retryable)"},
                                         {"error": "Error (broken): bad input"}]


def test_retryable_follows_robotlab() -> None:
    from workspace.errors import InferenceError, MCPError, ProviderError, ToolLoopError, retryable

    assert retryable(ToolError("x", retryable=True)) and not retryable(ToolError("x"))
    assert retryable(MCPError("x", retryable=True)) and not retryable(MCPError("x"))
    assert retryable(InferenceError("x")) and not retryable(ToolLoopError("x"))
    assert not retryable(ProviderError("x", status_code=400)) and retryable(ProviderError("x", retryable=True))
    assert not retryable(ValueError("x")) and not retryable(None)


# -- template skills (example 17, template_rendering.rb) -------------------------------------------------------
@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    root = tmp_path / "templates"
    (root / "skills").mkdir(parents=True)
    (root / "skills" / "reviewer.md").write_text("---\nskills: [tone, citations]\n---\nReview the code.")
    (root / "tone.md").write_text("---\nskills: [base]\n---\nBe kind, {{ who }}.")
    (root / "citations.md").write_text("---\nskills: [base, reviewer]\n---\nCite sources.")
    (root / "base.md").write_text("You are careful.")
    (root / "main.md").write_text("---\nskills: [reviewer]\n---\nYou are the main robot.")
    return root


def test_skills_expand_depth_first_diamonds_once_cycles_skipped_with_robotlab_warning(
        skills_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        robot = Robot("r", system_prompt="Finally this.", skills=["reviewer"], template_dirs=[skills_dir],
                      provider=ScriptedProvider(default="ok"), knowledge_store=False)
    assert [t.name for t in robot.skill_templates] == ["base", "tone", "citations", "reviewer"]
    assert robot.render_system({"who": "Ann"}) == ("You are careful.\n\nBe kind, Ann.\n\nCite sources.\n\n"
                                                   "Review the code.\n\nFinally this.")
    assert [r.getMessage() for r in caplog.records] == [
        "Robot 'r': skill cycle detected at 'base', skipping",
        "Robot 'r': skill cycle detected at 'reviewer', skipping"]


def test_skills_from_front_matter_come_before_the_template_and_cannot_pull_it_in(skills_dir: Path) -> None:
    (skills_dir / "loop.md").write_text("---\nskills: [main]\n---\nLoop.")
    robot = Robot("r", template="main", skills="loop", template_dirs=[skills_dir],
                  provider=ScriptedProvider(default="ok"), knowledge_store=False)
    assert robot.skills == ["loop", "reviewer"]
    assert robot.render_system({"who": "Bo"}).split("\n\n") == [
        "Loop.", "You are careful.", "Be kind, Bo.", "Cite sources.", "Review the code.", "You are the main robot."]
    assert robot.to_dict()["skills"] == ["loop", "reviewer"]


async def test_a_run_sends_the_skills_text(skills_dir: Path) -> None:
    provider = ScriptedProvider(default="ok")
    await Robot("r", system_prompt="Go.", skills=["base"], template_dirs=[skills_dir], provider=provider,
                knowledge_store=False).arun("hi")
    assert provider.history[0].system == "You are careful.\n\nGo."


def test_a_missing_skill_names_the_folders_and_the_fix(skills_dir: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"Robot 'r': skill 'nope' not found: .*put nope.md in one of those"):
        Robot("r", system_prompt="x", skills=["nope"], template_dirs=[skills_dir], knowledge_store=False)


# -- compress_history (history_compressor_test.rb, example 22) --------------------------------------------------
def conversation() -> list[Any]:
    from workspace.messages import TextMessage, ToolCallMessage, ToolResultMessage

    return [
        TextMessage("system", "You are a travel planner."),
        TextMessage("user", "Tell me about the weather in Lisbon during spring."),                   # unlike: dropped
        TextMessage("assistant", "Lisbon springs are mild, sunny and pleasant for walking."),        # unlike
        TextMessage("user", "ok"),                                                                    # short: kept
        ToolCallMessage(tools=[{"id": "c1", "name": "lookup", "input": {}}]),                         # pinned
        ToolResultMessage(tool={"id": "c1", "name": "lookup"}, content={"data": "x"}),                # pinned
        TextMessage("user", "Which hotels near the Porto river have rooms for families?"),           # like: kept
        TextMessage("assistant", "Two Porto river hotels have family rooms with river views."),
        TextMessage("user", "Book the Porto river hotel with family rooms for two nights please."),
    ]


def test_compress_history_keeps_recent_and_like_drops_unlike_and_pins_tools(store: KnowledgeStore) -> None:
    robot = bot("r", ScriptedProvider(default="ok"), store)
    robot.history.extend(conversation())
    before = list(robot.history)
    assert robot.compress_history(recent_turns=1) is robot
    kept = [before.index(m) for m in robot.history]
    assert kept == [0, 3, 4, 5, 6, 7, 8]  # the Lisbon pair is gone; system, short, tool messages stay


def test_compress_history_summarises_the_middle_band(store: KnowledgeStore) -> None:
    robot = bot("r", ScriptedProvider(default="ok"), store)
    robot.history.extend(conversation())
    seen: list[str] = []

    def summarize(text: str) -> str:
        seen.append(text)
        return f"(short) {text[:12]}"

    robot.compress_history(recent_turns=1, keep_threshold=0.99, drop_threshold=0.0001, summarizer=summarize)
    assert "Which hotels near the Porto river have rooms for families?" in seen
    summary = next(m for m in robot.history if str(m.content).startswith("(short) Which hotels"))
    assert summary.role == "user"
    assert len(robot.history) == len(conversation()) - 2  # the Lisbon pair shares no word: under the drop threshold


def test_compress_history_with_few_messages_changes_nothing_and_checks_thresholds(store: KnowledgeStore) -> None:
    robot = bot("r", ScriptedProvider(default="ok"), store)
    robot.history.extend(conversation()[:3])
    robot.compress_history()
    assert len(robot.history) == 3
    with pytest.raises(ValueError, match=r"keep_threshold \(0.2\) must be greater than drop_threshold \(0.5\)"):
        robot.compress_history(keep_threshold=0.2, drop_threshold=0.5)


async def test_an_async_summarizer_needs_acompress_history(store: KnowledgeStore) -> None:
    summarizer_robot = bot("summary", ScriptedProvider(default="A short summary of it."), store)
    robot = bot("r", ScriptedProvider(default="ok"), store)
    robot.history.extend(conversation())

    async def summarize(text: str) -> Any:
        return await summarizer_robot.arun(f"One sentence: {text}")

    with pytest.raises(TypeError, match=r"await robot.acompress_history"):
        robot.compress_history(recent_turns=1, keep_threshold=0.99, drop_threshold=0.0001, summarizer=summarize)
    await robot.acompress_history(recent_turns=1, keep_threshold=0.99, drop_threshold=0.0001, summarizer=summarize)
    assert "A short summary of it." in [m.content for m in robot.history]


async def test_a_robot_that_never_learns_creates_no_knowledge_file(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path / "sub" / "knowledge.db")
    robot = bot("r", ScriptedProvider(default="ok"), store)
    await robot.arun("hi")
    assert robot.learnings == [] and robot.recall_knowledge("anything") == []
    assert not store.path.parent.exists()
    await robot.alearn("now it does")
    assert store.path.exists()


async def test_with_nobody_to_review_the_run_does_not_wait(store: KnowledgeStore) -> None:
    provider = ScriptedProvider([[ToolCall("record_knowledge", {"content": "Tea at four", "reasoning": "r",
                                                                "category": "fact"})], "ok"])
    robot = bot("r", provider, store, learn=True, review_memory="ask")  # no on_memory_write
    await robot.arun("remember")
    assert results_sent(provider, 1) == [{"data": "Proposed for review (not stored yet): Tea at four"}]
    [pending] = robot.pending_memory_writes
    pending.accept()  # decided later, by whoever shows the proposals
    assert [e.content for e in store.entries(robot="r")] == ["Tea at four"]


def test_skills_front_matter_cascades_under_the_template_and_the_constructor(skills_dir: Path) -> None:
    (skills_dir / "terse.md").write_text("---\ntemperature: 0.1\nmax_tokens: 50\ndescription: Terse\n"
                                         "tools: [read_file]\n---\nBe terse.")
    (skills_dir / "warm.md").write_text("---\ntemperature: 0.9\n---\nBe warm.")
    (skills_dir / "host.md").write_text("---\nskills: [terse, warm]\nmax_tokens: 80\n---\nHost.")
    robot = Robot("r", template="host", template_dirs=[skills_dir], provider=ScriptedProvider(default="ok"),
                  knowledge_store=False)
    assert robot.settings == {"temperature": 0.9, "max_tokens": 80}  # the later skill, then the template, win
    assert robot.description == "Terse" and robot.tools_config == ["read_file"]
    own = Robot("r", template="host", template_dirs=[skills_dir], provider=ScriptedProvider(default="ok"),
                knowledge_store=False, temperature=0.5, description="Mine", tools=["list_files"])
    assert own.settings["temperature"] == 0.5 and own.description == "Mine" and own.tools_config == ["list_files"]


def test_robotlab_names_for_the_store_and_compaction(tmp_path: Path) -> None:
    robot = Robot("r", system_prompt="x", provider=ScriptedProvider(default="ok"), store_path=str(tmp_path / "kb"))
    robot.learn("kept where RobotLab's store_path says")
    assert robot.knowledge_store is not None and robot.knowledge_store.path == tmp_path / "kb" / "knowledge.db"
    for key, value in (("auto_compact", "context_window"), ("compact_threshold", 0.8)):
        with pytest.raises(ConfigurationError, match=rf"Robot 'r': {key} is RobotLab's; here a conversation nearing "
                                                     r"the model's window is compacted by default: context_policy="):
            Robot("r", system_prompt="x", knowledge_store=False, **{key: value})


def test_the_store_lists_what_each_robot_learnt_and_forgets_one(store: KnowledgeStore, tmp_path: Path) -> None:
    assert store.learnt() == {}
    bot("alice", ScriptedProvider(default="ok"), store).learn("a1").learn("a2")
    bot("bob", ScriptedProvider(default="ok"), store).learn("b1")
    bot("carol", ScriptedProvider(default="ok"), store, folder=tmp_path).learn("elsewhere")
    assert store.learnt() == {"alice": ["a1", "a2"], "bob": ["b1"]}
    assert store.forget_learning("a1", robot="alice") and not store.forget_learning("a1", robot="alice")
    assert bot("alice", ScriptedProvider(default="ok"), store).learnings == ["a2"]
    robot = bot("bob", ScriptedProvider(default="ok"), store)
    assert robot.forget_learning("b1") and robot.learnings == []
    assert store.learnt() == {"alice": ["a2"]}


async def test_a_learning_recorded_in_a_run_reaches_that_runs_hooks(store: KnowledgeStore) -> None:
    seen: list[tuple[str, bool]] = []

    class PerRun(Hook):
        @classmethod
        def on_learn(cls, ctx: Any) -> None:
            seen.append((ctx.text, ctx.stored))

    provider = ScriptedProvider([[ToolCall("record_knowledge", {"content": "Ship on Tuesdays", "reasoning": "r",
                                                                "category": "fact", "domain": "release"})], "ok"])
    robot = bot("r", provider, store, learn=True)
    await robot.arun("remember", hooks=[PerRun])
    assert seen == [("Ship on Tuesdays (release)", True)]
    await robot.alearn("outside the run")  # the per-run hook is not the robot's
    assert len(seen) == 1


async def test_the_next_run_is_told_what_became_of_a_proposed_learning(store: KnowledgeStore) -> None:
    provider = ScriptedProvider(default="ok")
    robot = bot("r", provider, store, review_memory="ask")
    await robot.alearn("the boss likes pie charts")
    await robot.alearn("reports go out on Mondays")
    first, second = robot.pending_memory_writes
    first.reject("a guess")
    second.accept("reports go out on Monday mornings")
    await robot.arun("hi")
    assert provider.history[0].system == (
        "You are r.\n\nLEARNINGS FROM PREVIOUS RUNS:\n- reports go out on Monday mornings\n\n"
        "WHAT YOU PROPOSED TO REMEMBER WAS REVIEWED:\n"
        "- \"the boss likes pie charts\": Not recorded: the person reviewing memory rejected it: a guess\n"
        "- Learnt: reports go out on Monday mornings (proposed: reports go out on Mondays)")
    await robot.arun("again")
    assert "REVIEWED" not in provider.history[1].system  # told once


async def test_the_reflector_promotes_learnings_to_knowledge_after_each_run(store: KnowledgeStore) -> None:
    provider = ScriptedProvider([[ToolCall("record_knowledge", {"content": "Invoices are due in 30 days",
                                                                "reasoning": "policy", "category": "fact"})], "ok",
                                 "ok"])
    robot = bot("r", provider, store, learn=True, learn_domain="billing")
    await robot.alearn("Customers prefer email")
    await robot.arun("remember the policy")
    entries = {e.content: e for e in store.entries(robot="r")}
    assert set(entries) == {"Invoices are due in 30 days", "Customers prefer email"}  # no "(billing)" duplicate
    promoted = entries["Customers prefer email"]
    assert (promoted.category, promoted.domain, promoted.confidence) == ("pattern", "billing", 0.1)
    assert promoted.reasoning == "Observed during session (auto-promoted by Reflector)"
    await robot.arun("again")
    assert len(store.entries(robot="r")) == 2  # promoted once
    plain = bot("plain", ScriptedProvider(default="ok"), store)
    await plain.alearn("not durable knowledge")
    await plain.arun("hi")
    assert store.entries(robot="plain") == []  # without learn=True nothing is promoted
