"""Change sets: review per hunk, atomic apply, conflicts, checkpoints, undo/redo, the outcome for the model."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path
from typing import Any

import pytest

from workspace import events as ev
from workspace.changes import (
    ChangeError,
    ChangeHistory,
    ChangeSet,
    CheckpointStore,
    ReadOnlyError,
    compare_texts,
    compose_user_message,
    fileio,
    format_outcome,
    split_user_message,
)
from workspace.diffing import diff_lines, inline_spans, merge3, sniff, split_lines, unified_diff

TEN = "".join(f"line {n}\n" for n in range(1, 11))


def lines_with(replacements: dict[int, str], base: str = TEN) -> str:
    rows = base.splitlines(keepends=True)
    for n, text in replacements.items():
        rows[n - 1] = text
    return "".join(rows)


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            out[path.relative_to(folder).as_posix()] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def no_temp_files(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if p.name.endswith(".robotlab-tmp")]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


# -- partial acceptance ------------------------------------------------------------------------------


def test_multi_file_partial_acceptance_writes_exactly_the_merge(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    (folder / "b.txt").write_text(TEN)
    (folder / "c.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({2: "LINE 2\n", 6: "LINE 6\n", 9: "LINE 9\n"}).encode())
    cs.propose("b.txt", lines_with({1: "first\n", 10: "last\n"}).encode())
    cs.propose("c.txt", lines_with({5: "five\n"}).encode())
    cs.propose("new/d.txt", b"brand new\n")
    a, b, _c, d = cs.files
    assert [len(f.hunks) for f in cs.files] == [3, 2, 1, 1]
    assert d.action == "create"
    cs.accept(a.hunks[0].id, a.hunks[2].id)
    cs.reject(a.hunks[1].id, reason="keep line 6")
    cs.accept(b.hunks[1].id)  # b.hunks[0] left undecided: not applied
    cs.reject_file("c.txt", reason="not this file")
    cs.accept_file("new/d.txt")
    result = cs.apply()
    assert result.ok, result.error
    assert (folder / "a.txt").read_text() == lines_with({2: "LINE 2\n", 9: "LINE 9\n"})
    assert (folder / "b.txt").read_text() == lines_with({10: "last\n"})
    assert (folder / "c.txt").read_text() == TEN
    assert (folder / "new" / "d.txt").read_text() == "brand new\n"
    assert [f.state for f in cs.files] == ["applied", "applied", "rejected", "applied"]
    assert {f.path for f in result.applied} == {"a.txt", "b.txt", "new/d.txt"}
    assert [f.path for f in result.rejected] == ["c.txt"]
    assert no_temp_files(folder)
    outcome = {o["path"]: o for o in result.outcome}
    assert outcome["a.txt"]["accepted"] == [0, 2] and outcome["a.txt"]["rejected"] == [1]
    assert outcome["a.txt"]["reason"] == "keep line 6"
    assert outcome["b.txt"]["hunks"][0]["reviewed"] is False


def test_reject_leaves_the_file_byte_identical_and_untouched(folder: Path) -> None:
    original = b"keep\r\nme\r\nexactly" + "é".encode("latin-1")
    path = folder / "keep.txt"
    path.write_bytes(original)
    os.chmod(path, 0o640)
    before = os.stat(path)
    cs = ChangeSet(folder)
    cs.propose("keep.txt", b"something else\n")
    cs.propose("other.txt", b"new\n")
    cs.reject_all(reason="no")
    result = cs.apply()
    assert result.ok and result.checkpoint_id is None  # nothing to write, nothing checkpointed
    after = os.stat(path)
    assert path.read_bytes() == original
    assert (after.st_ino, after.st_mtime_ns, stat.S_IMODE(after.st_mode)) == (
        before.st_ino, before.st_mtime_ns, 0o640)
    assert not (folder / "other.txt").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt"]


def test_pending_hunks_are_not_applied_and_accept_pending_applies_them(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({3: "three\n"}).encode())
    assert cs.apply().rejected and (folder / "a.txt").read_text() == TEN
    cs2 = ChangeSet(folder)
    cs2.propose("a.txt", lines_with({3: "three\n"}).encode())
    assert cs2.apply(accept_pending=True).applied
    assert (folder / "a.txt").read_text() == lines_with({3: "three\n"})


def test_permissions_are_kept(folder: Path) -> None:
    script = folder / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    os.chmod(script, 0o755)
    cs = ChangeSet(folder)
    cs.propose("run.sh", b"#!/bin/sh\necho hello\n")
    cs.accept_all()
    assert cs.apply().ok
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert script.read_text() == "#!/bin/sh\necho hello\n"


# -- composing proposals --------------------------------------------------------------------------------


def test_edits_to_the_same_file_compose_and_keep_decisions(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    first = lines_with({2: "two\n"})
    cs.propose("a.txt", first.encode())
    fc = cs.file("a.txt")
    hunk_id = fc.hunks[0].id
    cs.reject(hunk_id, reason="no")
    assert cs.read_bytes("a.txt") == first.encode()
    second = lines_with({2: "two\n", 8: "eight\n"})
    assert cs.propose("a.txt", second.encode()) is fc
    assert len(cs.files) == 1 and fc.before == TEN.encode() and fc.after == second.encode()
    assert fc.hunks[0].id == hunk_id
    assert fc.hunks[0].status == "rejected" and fc.hunks[1].status == "pending"


def test_revert_create_delete_and_rename_compose(folder: Path) -> None:
    (folder / "a.txt").write_text("a\n")
    cs = ChangeSet(folder)
    cs.propose("a.txt", b"b\n")
    assert cs.propose("a.txt", b"a\n") is None  # back to the original: nothing left to review
    assert cs.files == []
    cs.propose("tmp.txt", b"x\n", create=True)
    assert cs.propose("tmp.txt", None) is None  # created then deleted
    assert cs.files == []
    with pytest.raises(ChangeError, match="already exists"):
        cs.propose("a.txt", b"new\n", create=True)
    fc = cs.propose_rename("a.txt", "moved/a2.txt")
    assert fc is not None and fc.action == "rename"
    assert cs.read_bytes("a.txt") is None and cs.read_bytes("moved/a2.txt") == b"a\n"
    assert cs.propose("moved/a2.txt", b"a changed\n") is fc  # edit after rename: same change
    fc2 = cs.propose_rename("moved/a2.txt", "final.txt")
    assert fc2 is fc and fc.path == "a.txt" and fc.new_path == "final.txt"
    assert [h.kind for h in fc.hunks] == ["rename", "lines"]
    with pytest.raises(ChangeError, match="renamed"):
        cs.propose("a.txt", b"reuse\n")
    cs.accept_all()
    assert cs.apply().ok
    assert not (folder / "a.txt").exists()
    assert (folder / "final.txt").read_text() == "a changed\n"
    assert not (folder / "moved").exists()


def test_rename_rejected_but_edit_accepted_edits_in_place(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose_rename("a.txt", "b.txt")
    fc = cs.propose("b.txt", lines_with({4: "four\n"}).encode())
    assert fc is not None
    rename, edit = fc.hunks
    cs.reject(rename.id, reason="keep the name")
    cs.accept(edit.id)
    assert cs.apply().ok
    assert (folder / "a.txt").read_text() == lines_with({4: "four\n"})
    assert not (folder / "b.txt").exists()


# -- bytes survive --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "edited_index"),
    [
        ("crlf.txt", b"one\r\ntwo\r\nthree\r\nfour\r\nfive\r\n", 1),
        ("nofinal.txt", b"one\ntwo\nthree\nfour\nfive", 1),
        ("latin1.txt", "caf\xe9\nna\xefve\ntwo\nthree\nd\xe9j\xe0 vu".encode("latin-1"), 2),
        ("cp1252.txt", "\u201cquoted\u201d\ntwo\nthree\nfour \u20ac\n".encode("cp1252"), 1),
        ("bom.txt", "\ufeffone\r\ntwo\r\nthree\r\nfour".encode(), 1),
        ("utf16.txt", "one\r\ntwo\r\nthree\r\nfour\r\n".encode("utf-16"), 1),
        ("mixed.txt", b"one\r\ntwo\nthree\rfour\n", 1),
    ],
)
def test_untouched_bytes_survive_partial_edits(folder: Path, name: str, data: bytes, edited_index: int) -> None:
    (folder / name).write_bytes(data)
    fmt = sniff(data)
    assert fmt is not None
    rows = split_lines(fmt.decode(data))
    new_rows = list(rows)
    new_rows[edited_index] = "EDITED" + rows[edited_index][len(rows[edited_index].rstrip("\r\n")):]
    new_rows[-1] = "LAST" + rows[-1][len(rows[-1].rstrip("\r\n")):]
    cs = ChangeSet(folder)
    fc = cs.propose(name, fmt.encode("".join(new_rows)))
    assert fc is not None and len(fc.hunks) == 2
    cs.accept(fc.hunks[0].id)
    cs.reject(fc.hunks[1].id)
    assert cs.apply().ok
    expected_rows = list(rows)
    expected_rows[edited_index] = new_rows[edited_index]
    assert (folder / name).read_bytes() == fmt.encode("".join(expected_rows))
    # Undo gives back the exact original bytes.
    assert cs.history.undo().ok
    assert (folder / name).read_bytes() == data


def test_binary_files_are_whole_file_changes(folder: Path) -> None:
    blob = bytes(range(256)) * 4
    (folder / "image.bin").write_bytes(blob)
    cs = ChangeSet(folder)
    fc = cs.propose_rename("image.bin", "assets/image.bin")
    assert fc is not None and fc.binary and [h.kind for h in fc.hunks] == ["rename"]
    gone = cs.propose("other.bin", b"\x00\x01\x02", create=True)
    assert gone is not None and [h.kind for h in gone.hunks] == ["file"]
    with pytest.raises(ChangeError, match="binary"):
        cs.edit_hunk(gone.hunks[0].id, "text")
    cs.accept_all()
    assert cs.apply().ok
    assert (folder / "assets" / "image.bin").read_bytes() == blob
    assert (folder / "other.bin").read_bytes() == b"\x00\x01\x02"
    assert cs.history.undo().ok
    assert (folder / "image.bin").read_bytes() == blob
    assert not (folder / "assets").exists() and not (folder / "other.bin").exists()


def test_empty_files_can_be_created_and_deleted(folder: Path) -> None:
    (folder / "empty.txt").write_bytes(b"")
    cs = ChangeSet(folder)
    a = cs.propose("new-empty.txt", b"", create=True)
    b = cs.propose("empty.txt", None)
    assert a is not None and b is not None
    assert [h.kind for h in a.hunks] == ["file"] and [h.kind for h in b.hunks] == ["file"]
    cs.accept_all()
    assert cs.apply().ok
    assert (folder / "new-empty.txt").read_bytes() == b"" and not (folder / "empty.txt").exists()


# -- editing before accepting ---------------------------------------------------------------------


def test_edit_a_hunk_before_accepting_and_the_model_is_told(folder: Path) -> None:
    (folder / "a.txt").write_bytes(TEN.replace("\n", "\r\n").encode())
    cs = ChangeSet(folder)
    fc = cs.propose("a.txt", lines_with({3: "three\n", 7: "seven\n"}).replace("\n", "\r\n").encode())
    assert fc is not None
    cs.edit_hunk(fc.hunks[0].id, "line three (user's wording)\nand one more\n")
    cs.reject(fc.hunks[1].id, reason="keep 7")
    assert fc.hunks[0].status == "accepted" and fc.hunks[0].edited
    assert cs.apply().ok
    expected = lines_with({3: "line three (user's wording)\nand one more\n"}).replace("\n", "\r\n")
    assert (folder / "a.txt").read_bytes() == expected.encode()
    message = cs.take_outcome_message()
    assert message is not None
    assert "hunk 1 (line 3) accepted with the user's edits" in message
    assert "line three (user's wording)" in message
    assert 'hunk 2 (line 7) rejected (reason: "keep 7")' in message
    assert cs.take_outcome_message() is None  # delivered once


def test_edit_the_whole_proposed_file(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({1: "one\n"}).encode())
    cs.set_file_text("a.txt", lines_with({1: "uno\n", 10: "diez\n"}))
    assert cs.counts().accepted == 2
    assert cs.apply().ok
    assert (folder / "a.txt").read_text() == lines_with({1: "uno\n", 10: "diez\n"})
    assert "rewrote the proposed content" in (cs.outcome_message() or "")


def test_edit_refuses_characters_the_encoding_cannot_hold(folder: Path) -> None:
    (folder / "l.txt").write_bytes("caf\xe9\n\x81x\n".encode("latin-1"))
    cs = ChangeSet(folder)
    fc = cs.propose("l.txt", "caf\xe9!\n\x81x\n".encode("latin-1"))
    assert fc is not None and fc.format is not None and fc.format.encoding == "latin-1"
    with pytest.raises(ChangeError, match="cannot hold"):
        cs.edit_hunk(fc.hunks[0].id, "caf\u20ac\n")


# -- navigation and counts ------------------------------------------------------------------------


def test_navigation_order_and_counts(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    (folder / "b.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({1: "line one\n", 5: "y\n"}).encode())
    cs.propose("b.txt", lines_with({9: "z\n"}).encode())
    order = [h.id for h in cs.hunks()]
    assert order == ["f1.h1", "f1.h2", "f2.h1"]
    assert cs.next_hunk().id == "f1.h1"  # type: ignore[union-attr]
    assert cs.next_hunk("f2.h1").id == "f1.h1"  # type: ignore[union-attr]  # wraps
    assert cs.prev_hunk("f1.h1").id == "f2.h1"  # type: ignore[union-attr]
    cs.accept("f1.h2")
    assert cs.next_hunk("f1.h1", undecided=True).id == "f2.h1"  # type: ignore[union-attr]
    counts = cs.counts()
    assert (counts.files, counts.hunks, counts.accepted, counts.pending, counts.added, counts.removed) == (
        2, 3, 1, 2, 3, 3)
    pairs = cs.hunk("f1.h1").inline()
    assert pairs and pairs[0].old_spans == ((5, 6),) and pairs[0].new_spans == ((5, 8),)
    assert cs.hunk("f1.h2").inline() == []  # "line 5" -> "y": too different to pair
    fc = cs.file("a.txt")
    before, after = fc.context(cs.hunk("f1.h2"))
    assert before == ["line 2\n", "line 3\n", "line 4\n"] and after == ["line 6\n", "line 7\n", "line 8\n"]


def test_listeners_hear_proposals_and_decisions(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    heard: list[str] = []
    remove = cs.subscribe(lambda what, _cs, _detail: heard.append(what))
    fc = cs.propose("a.txt", lines_with({1: "x\n"}).encode())
    assert fc is not None
    cs.accept(fc.hunks[0].id)
    cs.apply()
    remove()
    cs2_fc = cs.propose("a.txt", b"again\n")
    assert cs2_fc is not None
    assert heard == ["proposed", "decided", "applied"]


def test_snapshot_survives_a_restart(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder, thread_id="t")
    cs.propose("a.txt", lines_with({2: "two\n", 8: "eight\n"}).encode(), run_id="r", robot="helper")
    cs.propose("b.txt", b"new\n", create=True)
    first, second = cs.file("a.txt").hunks
    cs.edit_hunk(first.id, "TWO\n")
    cs.reject(second.id, reason="no")
    import json

    data = json.loads(json.dumps(cs.snapshot()))
    again = ChangeSet.from_snapshot(data)
    assert again.id == cs.id and again.robot == "helper" and [f.path for f in again.files] == ["a.txt", "b.txt"]
    assert [(h.id, h.status, h.reason) for h in again.hunks()] == [(h.id, h.status, h.reason) for h in cs.hunks()]
    again.accept_file("b.txt")
    assert again.apply().ok
    assert (folder / "a.txt").read_text() == lines_with({2: "TWO\n"})
    assert (folder / "b.txt").read_text() == "new\n"
    assert again.propose("c.txt", b"c\n") is not None and again.files[-1].id == "f3"


# -- conflicts ----------------------------------------------------------------------------------------


def test_conflict_when_the_file_changed_on_disk(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    (folder / "b.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({2: "proposed 2\n"}).encode())
    cs.propose("b.txt", lines_with({2: "b2\n"}).encode())
    cs.accept_all()
    (folder / "a.txt").write_text(lines_with({9: "user 9\n"}))  # the user edits meanwhile
    result = cs.apply()
    assert not result.ok and result.error and "changed on disk" in result.error
    (conflict,) = result.conflicts
    assert conflict.path == "a.txt"
    assert conflict.base == TEN.encode()
    assert conflict.disk == lines_with({9: "user 9\n"}).encode()
    assert conflict.proposed == lines_with({2: "proposed 2\n"}).encode()
    # Nothing was written, to any file of the set.
    assert (folder / "a.txt").read_text() == lines_with({9: "user 9\n"})
    assert (folder / "b.txt").read_text() == TEN
    assert all(f.state == "pending" for f in cs.files)
    # Rebase: a three-way merge keeps both changes.
    cs.rebase("a.txt")
    result = cs.apply()
    assert result.ok
    assert (folder / "a.txt").read_text() == lines_with({2: "proposed 2\n", 9: "user 9\n"})
    assert (folder / "b.txt").read_text() == lines_with({2: "b2\n"})


def test_conflict_on_the_same_lines_needs_overwrite_or_skip(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    (folder / "b.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({2: "robot\n"}).encode())
    cs.propose("b.txt", lines_with({3: "b3\n"}).encode())
    cs.accept_all()
    (folder / "a.txt").write_text(lines_with({2: "human\n"}))
    assert cs.apply().conflicts
    with pytest.raises(ChangeError, match="same lines"):
        cs.rebase("a.txt")
    result = cs.apply(on_conflict="skip")
    assert result.ok and [f.path for f in result.skipped] == ["a.txt"]
    assert (folder / "a.txt").read_text() == lines_with({2: "human\n"})
    assert (folder / "b.txt").read_text() == lines_with({3: "b3\n"})
    message = cs.outcome_message() or ""
    assert "a.txt: NOT applied" in message and "changed on disk" in message


def test_overwrite_after_conflict(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({2: "robot\n"}).encode())
    cs.accept_all()
    (folder / "a.txt").write_text(lines_with({2: "human\n"}))
    assert cs.apply().conflicts
    cs.rebase("a.txt", overwrite=True)
    assert cs.apply().ok
    assert (folder / "a.txt").read_text() == lines_with({2: "robot\n"})


def test_create_conflicts_when_the_path_appeared(folder: Path) -> None:
    cs = ChangeSet(folder)
    cs.propose("new.txt", b"robot\n", create=True)
    cs.accept_all()
    (folder / "new.txt").write_text("human\n")
    result = cs.apply()
    assert result.conflicts and "was created" in result.conflicts[0].message
    assert (folder / "new.txt").read_text() == "human\n"


# -- crash safety -----------------------------------------------------------------------------------


def _fail_on_nth_replace_into(folder: Path, n: int, exc: BaseException,
                              monkeypatch: pytest.MonkeyPatch) -> list[str]:
    real_replace = os.replace
    calls: list[str] = []

    def flaky(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        # Writes into the folder rename relative to a folder handle (dst_dir_fd); the app's own
        # files (checkpoints, history) by path.
        into = kwargs.get("dst_dir_fd") is not None or Path(dst).resolve().is_relative_to(folder.resolve())
        if into:
            calls.append(str(dst))
            if len(calls) == n:
                raise exc
        real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(fileio.os, "replace", flaky)
    return calls


def test_a_failure_between_two_files_rolls_back_the_first(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "a.txt").write_text(TEN)
    (folder / "b.txt").write_text(TEN)
    new_a, new_b = lines_with({1: "A\n"}), lines_with({1: "B\n"})
    cs = ChangeSet(folder)
    cs.propose("a.txt", new_a.encode())
    cs.propose("b.txt", new_b.encode())
    cs.accept_all()
    with monkeypatch.context() as patched:
        calls = _fail_on_nth_replace_into(folder, 2, OSError("disk full"), patched)
        result = cs.apply()
    assert not result.ok and result.error and "disk full" in result.error
    assert len(calls) >= 2
    # Each file is old (the first was restored), nothing half-written, no temp files.
    assert (folder / "a.txt").read_text() == TEN
    assert (folder / "b.txt").read_text() == TEN
    assert no_temp_files(folder)
    assert all(f.state == "pending" for f in cs.files)
    assert cs.apply().ok  # the set can still be applied afterwards
    assert (folder / "a.txt").read_text() == new_a and (folder / "b.txt").read_text() == new_b


class Crash(BaseException):
    """Stands for the process dying (no except clause runs cleanup logic for it)."""


def test_a_crash_between_two_files_leaves_each_old_or_new(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = "".join(f"row {n} " + "x" * 80 + "\n" for n in range(5000))
    (folder / "a.txt").write_text(big)
    (folder / "b.txt").write_text(big)
    new_a = big.replace("row 10 ", "ROW 10 ")
    new_b = big.replace("row 20 ", "ROW 20 ")
    cs = ChangeSet(folder, thread_id="crash-thread")
    cs.propose("a.txt", new_a.encode())
    cs.propose("b.txt", new_b.encode())
    cs.accept_all()
    with monkeypatch.context() as patched, pytest.raises(Crash):
        _fail_on_nth_replace_into(folder, 2, Crash(), patched)
        cs.apply()
    a, b = (folder / "a.txt").read_text(), (folder / "b.txt").read_text()
    assert a in (big, new_a) and b in (big, new_b)
    assert (a, b) == (new_a, big)
    assert no_temp_files(folder)
    # The "before" checkpoint was durable before the first write: the interrupted set can be undone.
    history = ChangeHistory(folder, "crash-thread")
    entry = history.undoable()
    assert entry is not None and entry.state == "applying"
    assert history.undo().ok
    assert (folder / "a.txt").read_text() == big and (folder / "b.txt").read_text() == big


# -- checkpoints, undo, redo ---------------------------------------------------------------------------


def test_undo_redo_round_trips_are_byte_identical(folder: Path) -> None:
    (folder / "keep.bin").write_bytes(b"\x00\xffbinary")
    (folder / "crlf.txt").write_bytes(b"a\r\nb\r\nc")
    (folder / "gone.txt").write_bytes(b"delete me\n")
    (folder / "old-name.txt").write_bytes(b"move me\n")
    os.chmod(folder / "crlf.txt", 0o600)
    original = snapshot(folder)
    cs = ChangeSet(folder, thread_id="t1")
    cs.propose("crlf.txt", b"a\r\nB\r\nc")
    cs.propose("gone.txt", None)
    cs.propose_rename("old-name.txt", "dir/new-name.txt")
    cs.propose("dir/sub/created.txt", b"hello\n", create=True)
    cs.accept_all()
    result = cs.apply()
    assert result.ok and result.checkpoint_id and result.after_checkpoint_id
    applied = snapshot(folder)
    assert applied["crlf.txt"] == (b"a\r\nB\r\nc", 0o600)
    history = cs.history
    for _ in range(3):
        undo = history.undo()
        assert undo.ok, undo.message
        assert snapshot(folder) == original
        assert not (folder / "dir").exists()
        assert history.can_redo and not history.can_undo
        redo = history.redo()
        assert redo.ok, redo.message
        assert snapshot(folder) == applied
    assert history.entry(result.entry_id or "").state == "applied"


def test_undo_stack_across_change_sets_and_redo_cleared_by_new_changes(folder: Path) -> None:
    (folder / "a.txt").write_text("v0\n")
    store = CheckpointStore()
    for version in ("v1\n", "v2\n"):
        cs = ChangeSet(folder, thread_id="t", store=store)
        cs.propose("a.txt", version.encode())
        cs.accept_all()
        assert cs.apply().ok
    history = ChangeHistory(folder, "t", store=store)
    assert history.undo().ok and (folder / "a.txt").read_text() == "v1\n"
    assert history.undo().ok and (folder / "a.txt").read_text() == "v0\n"
    assert not history.undo().ok
    assert history.redo().ok and (folder / "a.txt").read_text() == "v1\n"
    cs = ChangeSet(folder, thread_id="t", store=store)
    cs.propose("a.txt", b"v3\n")
    cs.accept_all()
    assert cs.apply().ok
    assert not history.can_redo  # a new change ends the redo chain
    assert history.undo().ok and (folder / "a.txt").read_text() == "v1\n"


def test_undo_refuses_to_overwrite_later_edits_unless_forced(folder: Path) -> None:
    (folder / "a.txt").write_text("v0\n")
    cs = ChangeSet(folder, thread_id="t")
    cs.propose("a.txt", b"v1\n")
    cs.accept_all()
    assert cs.apply().ok
    (folder / "a.txt").write_text("edited by hand\n")
    refused = cs.history.undo()
    assert not refused.ok and refused.conflicts[0].disk == b"edited by hand\n"
    assert (folder / "a.txt").read_text() == "edited by hand\n"
    forced = cs.history.undo(force=True)
    assert forced.ok and forced.saved_checkpoint_id
    assert (folder / "a.txt").read_text() == "v0\n"
    # The overwritten hand edit is not lost: restore it from the saved checkpoint (itself undoable).
    restored = cs.history.restore(forced.saved_checkpoint_id)
    assert restored.ok and (folder / "a.txt").read_text() == "edited by hand\n"
    assert cs.history.undo().ok and (folder / "a.txt").read_text() == "v0\n"


def test_net_diff_of_a_thread(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    (folder / "b.txt").write_text("b\n")
    for step in ({2: "two\n"}, {9: "nine\n"}):
        cs = ChangeSet(folder, thread_id="net")
        current = (folder / "a.txt").read_text()
        cs.propose("a.txt", lines_with(step, current).encode())
        cs.accept_all()
        assert cs.apply().ok
    cs = ChangeSet(folder, thread_id="net")
    cs.propose("b.txt", None)
    cs.propose("c.txt", b"c\n")
    cs.accept_all()
    assert cs.apply().ok
    net = {fc.path: fc for fc in cs.history.net_changes()}
    assert set(net) == {"a.txt", "b.txt", "c.txt"}
    assert net["a.txt"].before == TEN.encode()
    assert net["a.txt"].after == lines_with({2: "two\n", 9: "nine\n"}).encode()
    assert len(net["a.txt"].hunks) == 2
    assert net["b.txt"].action == "delete" and net["c.txt"].action == "create"
    diff = cs.history.net_diff()
    assert "-line 2\n+two\n" in diff and "+++ /dev/null" in diff and "--- /dev/null" in diff


def test_checkpoint_store_deduplicates_and_detects_damage(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store")
    a = store.put(b"same")
    b = store.put(b"same")
    assert a == b and store.get(a) == b"same"
    blob = tmp_path / "store" / "blobs" / a[:2] / a[2:]
    blob.write_bytes(b"tampered")
    with pytest.raises(ChangeError, match="damaged"):
        store.get(a)
    digests = store.put_many([b"one", b"two", b"one", b"same"])
    assert digests[0] == digests[2] and digests[3] == a
    packs = sorted((tmp_path / "store" / "packs").glob("*.pack"))
    assert len(packs) == 1 and packs[0].read_bytes() == b"onetwo"  # only new contents, once
    store.put_many([b"one", b"two"])
    assert len(list((tmp_path / "store" / "packs").glob("*.pack"))) == 1
    fresh = CheckpointStore(tmp_path / "store")  # the index is read back from disk
    assert fresh.get(digests[1]) == b"two"
    checkpoint = fresh.record(tmp_path, {"x": (b"two", 0o644), "gone": (None, None)}, kind="before")
    assert fresh.load(checkpoint.id).files == {"x": checkpoint.files["x"], "gone": None}
    with pytest.raises(KeyError):
        fresh.load("../../etc/passwd")


# -- modes -------------------------------------------------------------------------------------------


def test_auto_mode_applies_each_proposal_with_a_checkpoint(folder: Path) -> None:
    (folder / "a.txt").write_text("v0\n")
    cs = ChangeSet(folder, mode="auto", thread_id="auto")
    fc = cs.propose("a.txt", b"v1\n")
    assert fc is not None and fc.state == "applied"
    assert (folder / "a.txt").read_text() == "v1\n"
    fc2 = cs.propose("a.txt", b"v2\n")
    assert fc2 is not None and fc2 is not fc and fc2.before == b"v1\n"
    assert (folder / "a.txt").read_text() == "v2\n"
    assert cs.history.undo().ok and (folder / "a.txt").read_text() == "v1\n"


def test_auto_mode_failure_is_settled_and_reported(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "a.txt").write_text("v0\n")
    cs = ChangeSet(folder, mode="auto")
    with monkeypatch.context() as patched:
        _fail_on_nth_replace_into(folder, 1, OSError("read-only file system"), patched)
        fc = cs.propose("a.txt", b"v1\n")
    assert fc is not None and fc.state == "failed" and "read-only file system" in (fc.reason or "")
    assert (folder / "a.txt").read_text() == "v0\n" and no_temp_files(folder)
    assert cs.pending_files == []
    assert cs.take_outcome_message() is None  # auto mode tells the model in the tool result
    fc2 = cs.propose("a.txt", b"v2\n")
    assert fc2 is not None and fc2.state == "applied" and fc2.before == b"v0\n"
    assert "NOT applied — Nothing was applied" in (cs.outcome_message() or "")


def test_readonly_mode_refuses(folder: Path) -> None:
    cs = ChangeSet(folder, mode="readonly")
    with pytest.raises(ReadOnlyError, match="read-only"):
        cs.propose("a.txt", b"x")
    with pytest.raises(ValueError, match="review mode"):
        ChangeSet(folder, mode="yolo")


# -- the outcome --------------------------------------------------------------------------------------


def test_outcome_message_and_event(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    (folder / "b.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({1: "x\n"}).encode(), run_id="run-1", robot="helper", tool_id="call-1")
    cs.propose("b.txt", None)
    cs.accept_all()
    cs.reject_file("b.txt", reason="we still need it")
    result = cs.apply()
    event = cs.decided_event()
    assert isinstance(event, ev.ChangeDecided) and event.run_id == "run-1" and event.robot == "helper"
    assert event.checkpoint_id == result.checkpoint_id
    assert [o["path"] for o in event.outcome] == ["a.txt", "b.txt"]
    assert event.outcome[1]["status"] == "rejected" and event.outcome[1]["reason"] == "we still need it"
    assert cs.files[0].tool_ids == ["call-1"]
    message = format_outcome(event.outcome, change_set_id=cs.id)
    assert message == cs.outcome_message()
    assert "- a.txt: edit accepted and written." in message
    assert '- b.txt: deletion rejected — reason: "we still need it". The file is unchanged.' in message
    composed = compose_user_message(cs.take_outcome_message(), "What next?")
    assert composed.startswith("<change-review>\n") and composed.endswith("</change-review>\n\nWhat next?")
    assert compose_user_message(None, "hi") == "hi"
    assert split_user_message(composed) == (message, "What next?")
    assert split_user_message("plain") == (None, "plain")


def test_compare_any_two_texts() -> None:
    view = compare_texts('{"a": 1,\n "b": 2}\n', '{"a": 1,\n "b": 3}\n', name="tool results")
    (hunk,) = view.hunks
    assert hunk.old_lines == [' "b": 2}\n'] and hunk.new_lines == [' "b": 3}\n']
    assert hunk.inline()[0].new_spans == ((6, 7),)
    assert "-" + ' "b": 2}' in view.unified_diff()


# -- the diff engine --------------------------------------------------------------------------------------


def test_diff_lines_reconstructs_and_is_minimal_enough() -> None:
    rng = random.Random(7)
    for _ in range(500):
        a = [rng.choice("abcdef") + "\n" for _ in range(rng.randint(0, 30))]
        b = [rng.choice("abcdef") + "\n" for _ in range(rng.randint(0, 30))]
        ops = diff_lines(a, b)
        rebuilt: list[str] = []
        i = j = 0
        for tag, i1, i2, j1, j2 in ops:
            assert (i1, j1) == (i, j)
            if tag == "equal":
                assert a[i1:i2] == b[j1:j2]
            rebuilt += b[j1:j2]
            i, j = i2, j2
        assert rebuilt == b and (i, j) == (len(a), len(b))
    a = [f"{n}\n" for n in range(100)]
    b = list(a)
    b[50] = "changed\n"
    assert [op for op in diff_lines(a, b) if op[0] != "equal"] == [("replace", 50, 51, 50, 51)]


def test_merge3_and_inline_spans() -> None:
    base = [f"{n}\n" for n in range(10)]
    ours = list(base)
    ours[1] = "ours\n"
    theirs = list(base)
    theirs[8] = "theirs\n"
    merged = merge3(base, ours, theirs)
    assert merged is not None and merged[1] == "ours\n" and merged[8] == "theirs\n"
    clash = list(base)
    clash[1] = "clash\n"
    assert merge3(base, ours, clash) is None
    assert merge3(base, ours, ours) == ours
    old_spans, new_spans = inline_spans("value = compute(1, 2)\n", "value = calc(1, 3)\n")
    assert "value = compute(1, 2)"[slice(*old_spans[0])] == "compute"
    assert "value = calc(1, 3)"[slice(*new_spans[-1])] == "3"


def test_unified_diff_marks_missing_final_newline() -> None:
    text = unified_diff(["a\n", "b"], ["a\n", "b\n"])
    assert text.endswith("-b\n\\ No newline at end of file\n+b\n")


def test_an_undo_of_an_earlier_set_is_told_and_a_redo_before_the_next_message_cancels_it(tmp_path: Path) -> None:
    from workspace.changes import ChangeSet

    changes = ChangeSet(tmp_path)
    changes.record_restore("undo", ["a.txt", "b.txt"], change_set_id="earlier")
    note = changes.take_outcome_message()
    assert note is not None and "a.txt: the user undid your earlier change" in note and "b.txt" in note
    changes.record_restore("undo", ["a.txt"], change_set_id="earlier")
    changes.record_restore("redo", ["a.txt"], change_set_id="earlier")
    assert not changes.has_undelivered_outcome and changes.take_outcome_message() is None
    changes.record_restore("redo", ["a.txt"], change_set_id="earlier")
    note = changes.take_outcome_message()
    assert note is not None and "the user redid your earlier change" in note
