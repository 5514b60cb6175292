"""Reviewing proposed changes in a terminal: per hunk, quitting, --apply never/auto, a conflict rebased."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workspace.changes import ChangeSet
from workspace.cli.review import settle_in_terminal

TEN = "".join(f"line {n}\n" for n in range(1, 11))


def lines_with(replacements: dict[int, str], base: str = TEN) -> str:
    rows = base.splitlines(keepends=True)
    for n, text in replacements.items():
        rows[n - 1] = text
    return "".join(rows)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


class Printer:
    def __init__(self) -> None:
        from io import StringIO

        self.out = StringIO()
        self.json_lines = False

    def __call__(self, event: Any) -> None:
        self.out.write(f"EVENT {type(event).__name__}\n")


def scripted(*answers: str) -> Any:
    queue = list(answers)

    async def ask(prompt: str) -> str:
        if not queue:
            raise EOFError
        return queue.pop(0)

    return ask


async def test_terminal_review_per_hunk(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    (folder / "b.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({1: "one\n", 5: "five\n", 9: "nine\n"}).encode())
    cs.propose("b.txt", lines_with({2: "two\n"}).encode())
    printer = Printer()
    result = await settle_in_terminal(cs, mode="review", printer=printer,
                                      ask=scripted("y", "n", "too loud", "e", "NINE!", ".", "y"))
    assert result is not None and result.ok
    assert (folder / "a.txt").read_text() == lines_with({1: "one\n", 9: "NINE!\n"})
    assert (folder / "b.txt").read_text() == lines_with({2: "two\n"})
    text = printer.out.getvalue()
    assert "-line 5" in text and "+five" in text
    assert 'rejected (reason: "too loud")' in text


async def test_terminal_quit_applies_only_what_was_accepted(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({1: "one\n", 5: "five\n"}).encode())
    result = await settle_in_terminal(cs, mode="review", printer=Printer(), ask=scripted("y", "q"))
    assert result is not None and result.ok
    assert (folder / "a.txt").read_text() == lines_with({1: "one\n"})
    assert "not accepted" in (cs.outcome_message() or "")


async def test_terminal_never_and_auto(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({1: "one\n"}).encode())
    printer = Printer()
    await settle_in_terminal(cs, mode="never", printer=printer)
    assert (folder / "a.txt").read_text() == TEN
    assert "+one" in printer.out.getvalue() and "NOT applied" in printer.out.getvalue()
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({1: "one\n"}).encode())
    await settle_in_terminal(cs, mode="auto", printer=printer)
    assert (folder / "a.txt").read_text() == lines_with({1: "one\n"})


async def test_terminal_conflict_rebase(folder: Path) -> None:
    (folder / "a.txt").write_text(TEN)
    cs = ChangeSet(folder)
    cs.propose("a.txt", lines_with({1: "one\n"}).encode())

    answers = ["y"]

    async def ask(prompt: str) -> str:
        if prompt.startswith("Hunk"):
            (folder / "a.txt").write_text(lines_with({10: "ten\n"}))  # edited while reviewing
            return answers.pop(0)
        return "r"

    result = await settle_in_terminal(cs, mode="review", printer=Printer(), ask=ask)
    assert result is not None and result.ok
    assert (folder / "a.txt").read_text() == lines_with({1: "one\n", 10: "ten\n"})
