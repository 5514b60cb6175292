"""Many robots at once, the library: ``workspace.acompare`` runs scripted candidates on the loopback model server
(each model answering its own way), each in its own change set; the combined review takes hunks across them.

What a caller sees: every event carries its candidate; each candidate read only its own proposal; nothing is
written before the take; taking hunk 1 of A and hunk 2 of B writes exactly those bytes, as one apply that one
undo restores; overlapping hunks are refused, named, with nothing written; verify runs on the combined set
first; and each robot is told which hunks of whose were taken."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.candidates import BASE, EDITS, edited, project
from fakes.llm_server import FakeLLMServer, Reply

from workspace import Candidate, Robot, acompare, load_config
from workspace import events as ev
from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.changes import ChangeHistory
from workspace.changes.combine import OverlapError, find_overlaps
from workspace.isolation import SandboxUnavailable, sandbox_for_platform
from workspace.session.compare import Comparison, labels
from workspace.session.verify import VerifyFailed

pytestmark = pytest.mark.timeout(120)  # bounds a hang: three short scripted runs and a sandboxed command


def tool_results(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]


def answer(body: dict[str, Any]) -> Reply:
    """Each model: writes app.py its way, reads it back, then says what it read."""
    model = body["model"]
    seen = tool_results(body)
    if not seen:
        return Reply.tool("write_file", {"path": "app.py", "content": edited(model)})
    if len(seen) == 1:
        return Reply.tool("read_file", {"path": "app.py"})
    return Reply.say(f"{model} read: {seen[-1]}")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=answer) as srv:
        yield srv


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return project(tmp_path)


def robot(server: FakeLLMServer, model: str, *, tools: tuple[str, ...] = ("write_file", "read_file")) -> Robot:
    return Robot("coder", system_prompt="You edit files.", model=f"openai/{model}", tools=list(tools),
                 api_base=server.base_url + "/v1", config=load_config(env={}, overrides={"llm": {"max_retries": 1}}))


async def three(server: FakeLLMServer, folder: Path, events: list[ev.Event] | None = None) -> Comparison:
    robots = [robot(server, m) for m in EDITS]
    return await acompare("Edit app.py", robots, folder=folder, on_event=events.append if events is not None else None)


async def test_candidates_run_in_their_own_change_sets_and_events_carry_the_candidate(
        server: FakeLLMServer, folder: Path) -> None:
    events: list[ev.Event] = []
    comparison = await three(server, folder, events)
    assert [(c.index, c.label, c.status) for c in comparison.candidates] == [
        (0, "openai/model-a", "finished"), (1, "openai/model-b", "finished"), (2, "openai/model-c", "finished")]
    # Every event says whose it is, and each candidate's run is one run.
    assert {e.candidate for e in events} == {0, 1, 2}
    for index in range(3):
        mine = [e for e in events if e.candidate == index]
        assert len({e.run_id for e in mine}) == 1
        assert sum(e.terminal for e in mine) == 1 and isinstance(mine[-1], ev.RunFinished)
        assert json.loads(ev.to_json(mine[0]))["candidate"] == index
    # Each read its own proposal back, never another's: the change sets are apart.
    for c, model in zip(comparison.candidates, EDITS, strict=True):
        others = [text for m, e in EDITS.items() if m != model for text in e.values()]
        assert all(text.strip() in c.text for text in EDITS[model].values()), c.text
        assert not any(text.strip() in c.text for text in others), c.text
        assert c.changes is not None and c.changes.read_bytes("app.py") == edited(model).encode()
        assert c.usage.output_tokens > 0 and c.ttft is not None and c.duration >= c.ttft
    # Nothing was written before the take.
    assert (folder / "app.py").read_text() == BASE
    assert [h.id for h in comparison.hunks()] == ["c0.f1.h1", "c0.f1.h2", "c1.f1.h1", "c1.f1.h2", "c2.f1.h1",
                                                  "c2.f1.h2"]


async def test_taking_hunk_1_of_a_and_hunk_2_of_b_writes_exactly_those_and_undo_restores(
        server: FakeLLMServer, folder: Path) -> None:
    comparison = await three(server, folder)
    done = await comparison.take(["c0.f1.h1", "c1.f1.h2"], thread_id="kept-thread")
    assert done.ok, done.result.error
    expected = BASE.replace("line 2\n", "A two\n").replace("line 9\n", "B nine\n")
    assert (folder / "app.py").read_bytes() == expected.encode()
    # One apply in the kept thread's history: one undo restores the folder byte for byte.
    history = ChangeHistory(folder, "kept-thread")
    assert len(history.entries()) == 1
    assert history.undo().ok
    assert (folder / "app.py").read_bytes() == BASE.encode()
    # Every candidate is told which hunks of whose were taken.
    notes = [c.changes.take_outcome_message() for c in comparison.candidates if c.changes is not None]
    assert "Taken — yours: app.py hunk 1 (line 2); from candidate 1 (openai/model-b): app.py hunk 2 (line 9)" \
        in str(notes[0])
    assert "Taken — yours: app.py hunk 2 (line 9); from candidate 0 (openai/model-a): app.py hunk 1 (line 2)" \
        in str(notes[1])
    assert "Taken — none of yours; from candidate 0" in str(notes[2]) and "none of your hunks was taken" in str(notes[2])
    # Their own sets are settled, nothing pending.
    assert not any(c.changes.pending_files for c in comparison.candidates if c.changes is not None)


async def test_overlapping_hunks_are_refused_by_name_and_nothing_is_written(server: FakeLLMServer,
                                                                            folder: Path) -> None:
    comparison = await three(server, folder)
    with pytest.raises(OverlapError) as caught:
        await comparison.take(["c0.f1.h1", "c1.f1.h1", "c2.f1.h2"])
    assert "c0.f1.h1 and c1.f1.h1 both change app.py (line 2 / line 2)" in str(caught.value)
    assert [(a.id, b.id) for a, b in caught.value.pairs] == [("c0.f1.h1", "c1.f1.h1")]
    assert (folder / "app.py").read_text() == BASE
    assert all(c.changes is not None and c.changes.pending_files for c in comparison.candidates)
    with pytest.raises(Exception, match=r"No pending hunk 'c7.f1.h1'"):
        await comparison.take(["c7.f1.h1"])


async def test_adjacent_and_insertion_hunks_overlap_only_where_they_meet(folder: Path) -> None:
    """The overlap rule itself, on change sets proposed directly: ranges that share a line overlap, ranges
    that touch do not; two insertions at one place do (their order is unknown)."""
    from workspace.changes import ChangeSet
    from workspace.changes.combine import CandidateChanges, pending_hunks

    a, b = ChangeSet(folder), ChangeSet(folder)
    a.propose("app.py", BASE.replace("line 3\nline 4\n", "three\nfour\n").replace("line 7\n", "line 7\nnew A\n")
              .encode())
    b.propose("app.py", BASE.replace("line 5\n", "five\n").replace("line 7\n", "line 7\nnew B\n").encode())
    hunks = {h.id: h for h in pending_hunks([CandidateChanges(0, "a", a), CandidateChanges(1, "b", b)])}
    pairs = [(x.id, y.id) for x, y in find_overlaps(list(hunks.values()))]
    assert pairs == [("c0.f1.h2", "c1.f1.h2")]  # lines 3-4 and line 5 touch, not overlap; both insert after 7


async def test_verify_runs_on_the_combined_set_before_apply(server: FakeLLMServer, folder: Path) -> None:
    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
        pytest.skip(f"no sandbox on this machine: {exc}")
    comparison = await three(server, folder)
    # Passes only on a file with A's line 2 and B's line 9 together: the combined set, not either candidate's.
    command = "grep -q '^A two$' app.py && grep -q '^B nine$' app.py && ! grep -q '^A eight$' app.py"
    with pytest.raises(VerifyFailed):
        await comparison.take(["c0.f1.h1", "c0.f1.h2"], verify=command)
    assert (folder / "app.py").read_text() == BASE
    done = await comparison.take(["c0.f1.h1", "c1.f1.h2"], verify=command)
    assert done.ok and done.verify is not None and done.verify.passed
    assert "A two" in (folder / "app.py").read_text()


async def test_a_candidates_commands_see_only_its_own_layer(server: FakeLLMServer, folder: Path) -> None:
    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover
        pytest.skip(f"no sandbox on this machine: {exc}")

    def with_command(body: dict[str, Any]) -> Reply:
        seen = tool_results(body)
        if not seen:
            return Reply.tool("write_file", {"path": "app.py", "content": edited(body["model"])})
        if len(seen) == 1:
            return Reply.tool("run_command", {"command": "cat app.py"})
        return Reply.say(f"{body['model']} ran: {seen[-1]}")

    server.reply_fn = with_command

    async def allow(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True)

    gate = ApprovalGate(ApprovalPolicy.from_list([{"tool": "run_command", "action": "allow"}]), allow)
    robots = [robot(server, m, tools=("write_file", "run_command")) for m in ("model-a", "model-b")]
    comparison = await acompare("Edit and check", robots, folder=folder, approval=gate)
    a, b = comparison.candidates
    assert "A eight" in a.text and "B nine" not in a.text, a.text
    assert "B nine" in b.text and "A eight" not in b.text, b.text
    assert (folder / "app.py").read_text() == BASE


async def test_a_comparison_takes_two_to_four_candidates(server: FakeLLMServer, folder: Path) -> None:
    with pytest.raises(ValueError, match="2 to 4 candidates, not 1"):
        await acompare("x", [robot(server, "model-a")], folder=folder)
    one = robot(server, "model-a")
    with pytest.raises(ValueError, match="given twice"):
        await acompare("x", [one, one], folder=folder)
    with pytest.raises(ValueError, match="by name or file"):
        await acompare("x", [Candidate(one, model="other"), robot(server, "model-b")], folder=folder)
    assert labels(["coder", "coder", "helper"]) == ["coder #1", "coder #2", "helper"]


async def test_whole_proposals_of_different_files_combine_deletions_and_creations_too(folder: Path) -> None:
    """Every hunk of a file taken from one candidate is its proposal as it is: a deletion deletes, a creation
    creates, beside another candidate's edit of another file; the undo brings all of it back."""
    from workspace.changes import ChangeSet
    from workspace.changes.combine import CandidateChanges, pending_hunks
    from workspace.session.compare import apply_hunks

    (folder / "old.py").write_text("gone soon\n")
    a, b = ChangeSet(folder), ChangeSet(folder)
    a.propose("old.py", None)
    a.propose("new.py", b"made by A\n")
    b.propose("app.py", BASE.replace("line 1\n", "first\n").encode())
    sources = [CandidateChanges(0, "a", a), CandidateChanges(1, "b", b)]
    done = await apply_hunks(sources, [h.id for h in pending_hunks(sources)], thread_id="t")
    assert done.ok, done.result.error
    assert not (folder / "old.py").exists()
    assert (folder / "new.py").read_bytes() == b"made by A\n"
    assert (folder / "app.py").read_text().startswith("first\nline 2\n")
    assert ChangeHistory(folder, "t").undo().ok
    assert (folder / "old.py").read_text() == "gone soon\n" and not (folder / "new.py").exists()
    assert (folder / "app.py").read_text() == BASE


async def test_hunks_proposed_on_different_versions_of_a_file_are_refused_saying_so(folder: Path) -> None:
    from workspace.changes import ChangeSet
    from workspace.changes.combine import CandidateChanges, combine

    a = ChangeSet(folder)
    a.propose("app.py", BASE.replace("line 1\n", "one\n").encode())
    (folder / "app.py").write_text(BASE + "line 11\n")  # the file changed before the second proposal
    b = ChangeSet(folder)
    b.propose("app.py", (BASE + "line 11\n").replace("line 9\n", "nine\n").encode())
    with pytest.raises(OverlapError, match=r"c0.f1.h1 and c1.f1.h1 were proposed on different versions of app.py"):
        combine([CandidateChanges(0, "a", a), CandidateChanges(1, "b", b)], ["c0.f1.h1", "c1.f1.h1"])


async def test_one_failing_candidate_does_not_stop_the_others(server: FakeLLMServer, folder: Path) -> None:
    def one_fails(body: dict[str, Any]) -> Reply:
        if body["model"] == "model-b":
            return Reply.error(400, "model-b does not exist on this server")
        return answer(body)

    server.reply_fn = one_fails
    events: list[ev.Event] = []
    comparison = await acompare("Edit app.py", [robot(server, "model-a"), robot(server, "model-b")], folder=folder,
                                on_event=events.append)
    a, b = comparison.candidates
    assert a.status == "finished" and "A two" in a.text
    assert b.status == "failed" and b.result is None and "model-b does not exist" in str(b.error)
    assert [e.candidate for e in events if isinstance(e, ev.RunFailed)] == [1]
    assert [h.id for h in comparison.hunks()] == ["c0.f1.h1", "c0.f1.h2"]


def test_compare_from_synchronous_code(folder: Path) -> None:
    from workspace import ScriptedProvider, ToolCall, compare

    def coder(name: str, text: str) -> Robot:
        return Robot(name, system_prompt="x", tools=["write_file"], provider=ScriptedProvider(
            [ToolCall("write_file", {"path": "app.py", "content": BASE.replace("line 3\n", text)}), f"{name} done"]))

    comparison = compare("Edit", [coder("one", "3!\n"), coder("two", "three\n"), coder("three", "III\n")],
                         folder=folder)
    assert [(c.label, c.text) for c in comparison.candidates] == [("one", "one done"), ("two", "two done"),
                                                                  ("three", "three done")]
    assert [h.hunk.final_lines for h in comparison.hunks()] == [["3!\n"], ["three\n"], ["III\n"]]
    assert (folder / "app.py").read_text() == BASE


def two_overlapping(folder: Path) -> list[Any]:
    """Two candidates' sets over app.py: both change line 2 (overlapping), A also line 8, B also line 3."""
    from workspace.changes import ChangeSet
    from workspace.changes.combine import CandidateChanges

    a, b = ChangeSet(folder), ChangeSet(folder)
    a.propose("app.py", BASE.replace("line 2\n", "A two\n").replace("line 8\n", "A eight\n").encode())
    b.propose("app.py", BASE.replace("line 2\nline 3\n", "B two\nB three\n").encode())
    return [CandidateChanges(0, "a", a), CandidateChanges(1, "b", b)]


async def test_a_merge_of_overlapping_hunks_applies_the_persons_lines_as_one_undoable_set(folder: Path) -> None:
    from workspace.changes import ChangeError
    from workspace.changes.combine import merge_groups, pending_hunks
    from workspace.session.compare import apply_hunks

    sources = two_overlapping(folder)
    hunks = pending_hunks(sources)
    assert [h.id for h in hunks] == ["c0.f1.h1", "c0.f1.h2", "c1.f1.h1"]
    (group,) = merge_groups(hunks[:1] + hunks[2:], {"c0.f1.h1": ""})
    assert (group.start, group.end, group.ids) == (1, 3, ["c0.f1.h1", "c1.f1.h1"])  # lines 2-3: both hunks
    with pytest.raises(OverlapError):
        await apply_hunks(sources, ["c0.f1.h1", "c1.f1.h1"])
    with pytest.raises(ChangeError, match="not a hunk taken"):
        merge_groups(hunks[:1], {"c7.f1.h1": "x"})
    # The merge's text (no final newline given) replaces lines 2-3; A's other hunk goes with it; one apply.
    done = await apply_hunks(sources, ["c1.f1.h1", "c0.f1.h2"], merges={"c0.f1.h1": "merged two\nmerged three"},
                             thread_id="kept")
    assert done.ok, done.result.error
    expected = BASE.replace("line 2\nline 3\n", "merged two\nmerged three\n").replace("line 8\n", "A eight\n")
    assert (folder / "app.py").read_text() == expected
    assert sorted(t.id for t in done.taken) == ["c0.f1.h1", "c0.f1.h2", "c1.f1.h1"]
    assert ChangeHistory(folder, "kept").undo().ok
    assert (folder / "app.py").read_text() == BASE


async def test_verify_runs_on_the_combined_set_with_the_merge(folder: Path) -> None:
    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
        pytest.skip(f"no sandbox on this machine: {exc}")
    from workspace.session.compare import apply_hunks

    sources = two_overlapping(folder)
    command = "grep -q '^merged$' app.py && grep -q '^A eight$' app.py"
    with pytest.raises(VerifyFailed):
        await apply_hunks(sources, ["c0.f1.h1", "c0.f1.h2", "c1.f1.h1"], merges={"c1.f1.h1": "other\n"},
                          verify=command)
    assert (folder / "app.py").read_text() == BASE
    done = await apply_hunks(sources, ["c0.f1.h1", "c0.f1.h2", "c1.f1.h1"], merges={"c1.f1.h1": "merged\n"},
                             verify=command)
    assert done.ok and done.verify is not None and done.verify.passed
    assert (folder / "app.py").read_text() == BASE.replace("line 2\nline 3\n", "merged\n").replace(
        "line 8\n", "A eight\n")


async def test_the_same_hunk_from_two_candidates_agrees_and_is_applied_once(folder: Path) -> None:
    """Two candidates proposing the same change (the same lines made the same) do not conflict: taken together
    it is written once; taking one settles the other's as accepted too (its change was applied)."""
    from workspace.changes import ChangeSet
    from workspace.changes.combine import CandidateChanges, find_agreements, pending_hunks
    from workspace.session.compare import apply_hunks

    same = BASE.replace("line 2\n", "two\n")
    a, b, c = ChangeSet(folder), ChangeSet(folder), ChangeSet(folder)
    a.propose("app.py", same.replace("line 8\n", "A eight\n").encode())
    b.propose("app.py", same.encode())
    c.propose("app.py", BASE.replace("line 2\n", "C two\n").encode())
    sources = [CandidateChanges(0, "a", a), CandidateChanges(1, "b", b), CandidateChanges(2, "c", c)]
    hunks = pending_hunks(sources)
    assert [(x.id, y.id) for x, y in find_overlaps(hunks)] == [("c0.f1.h1", "c2.f1.h1"), ("c1.f1.h1", "c2.f1.h1")]
    assert find_agreements(hunks) == {"c0.f1.h1": ["c1.f1.h1"], "c1.f1.h1": ["c0.f1.h1"]}
    done = await apply_hunks(sources[:2], ["c0.f1.h1", "c1.f1.h1", "c0.f1.h2"], thread_id="t")
    assert done.ok, done.result.error
    assert (folder / "app.py").read_text() == same.replace("line 8\n", "A eight\n")  # line 2 once


async def test_taking_one_of_two_agreeing_hunks_settles_both_as_applied(folder: Path) -> None:
    from workspace.changes import ChangeSet
    from workspace.changes.combine import CandidateChanges, pending_hunks
    from workspace.session.compare import apply_hunks

    a, b = ChangeSet(folder), ChangeSet(folder)
    a.propose("app.py", BASE.replace("line 2\n", "two\n").encode())
    b.propose("app.py", BASE.replace("line 2\n", "two\n").replace("line 9\n", "B nine\n").encode())
    sources = [CandidateChanges(0, "a", a), CandidateChanges(1, "b", b)]
    theirs = {h.id: h.hunk for h in pending_hunks(sources)}
    done = await apply_hunks(sources, ["c0.f1.h1"], thread_id="t")
    assert done.ok, done.result.error
    assert (folder / "app.py").read_text() == BASE.replace("line 2\n", "two\n")
    assert [theirs[i].status for i in ("c0.f1.h1", "c1.f1.h1", "c1.f1.h2")] == ["accepted", "accepted", "rejected"]
