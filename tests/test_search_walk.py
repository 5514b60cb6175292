"""search_files walks the folder as it searches: Stop ends its worker thread inside the listing of a folder of any
size (its flag was looked at only between folders, so a folder of 300,000 files was listed whole after a Stop),
and a search that has its matches lists no more of the tree (the whole tree's paths were listed first)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workspace.changes import ChangeSet
from workspace.tools import registry
from workspace.tools.base import ToolContext, ToolOutput

pytestmark = pytest.mark.timeout(120)  # bounds a hang: a walk of a few thousand files


async def _search(folder: Path, **args: Any) -> ToolOutput:
    tool = registry.get("search_files")
    assert tool is not None
    context = ToolContext(robot="helper", run_id="run-1", call_id="call-1", folder=folder, changes=ChangeSet(folder),
                          emit=lambda _event: None)
    return await tool.invoke(args, context)


class _Listing:
    """``os.scandir`` over the real folders, counting the entries it gives; in the folder ``held`` it stops after
    ``after`` entries until :attr:`go` is set (the walk caught in the middle of listing it)."""

    def __init__(self, held: Path | None = None, after: int = 10) -> None:
        self.real = os.scandir
        self.held, self.after = (os.fspath(held) if held else None), after
        self.reached, self.go = threading.Event(), threading.Event()
        self.listed: list[str] = []  # the folders listed
        self.given = 0  # entries given by all of them
        self.given_after_go = 0

    def __call__(self, path: Any = ".") -> Any:
        self.listed.append(os.fspath(path))
        return _Entries(self, self.real(path), os.fspath(path) == self.held)


class _Entries:
    def __init__(self, listing: _Listing, real: Any, held: bool) -> None:
        self.listing, self.real, self.held = listing, real, held
        self.entries = self._entries()

    def __enter__(self) -> _Entries:
        return self

    def __exit__(self, *exc: object) -> None:
        self.real.close()

    def close(self) -> None:
        self.real.close()

    def __iter__(self) -> _Entries:
        return self

    def __next__(self) -> Any:  # (os.walk calls next() on it)
        return next(self.entries)

    def _entries(self) -> Iterator[Any]:
        listing = self.listing
        for n, entry in enumerate(self.real):
            if self.held and n == listing.after:
                listing.reached.set()
                assert listing.go.wait(60)
            listing.given += 1
            listing.given_after_go += listing.go.is_set()
            yield entry


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """A folder whose ``many`` sub-folder holds 3,000 files (none matching), and a few folders beside it."""
    root = tmp_path / "project"
    (root / "many").mkdir(parents=True)
    for n in range(3000):
        (root / "many" / f"f{n:05}.txt").write_text("nothing here\n")
    for name in ("a", "z"):
        (root / name).mkdir()
        (root / name / "x.txt").write_text("needle\n")
    return root


async def test_stop_while_a_large_folder_is_listed_ends_the_worker_thread_there(
        big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workspace.tools import files

    listing = _Listing(big / "many")
    monkeypatch.setattr(os, "scandir", listing)
    ended = threading.Event()
    search = files._search_files

    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            return search(*args, **kwargs)
        finally:
            ended.set()

    monkeypatch.setattr(files, "_search_files", watched)
    task = asyncio.create_task(_search(big, query="needle"))
    assert await asyncio.to_thread(listing.reached.wait, 60), "the walk never reached the large folder"
    task.cancel()  # Stop
    with pytest.raises(asyncio.CancelledError):
        await task
    listing.go.set()  # the listing may go on: the thread sees its flag at the next entry
    assert await asyncio.to_thread(ended.wait, 60), "the search's thread never ended"
    assert listing.given_after_go <= 1, f"{listing.given_after_go} of 3,000 entries listed after the Stop"
    assert os.fspath(big / "z") not in listing.listed  # and no folder after it


async def test_a_search_with_its_matches_lists_no_more_of_the_tree(
        big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (big / "top.txt").write_text("a needle at the top\n")
    listing = _Listing()
    monkeypatch.setattr(os, "scandir", listing)
    out = await _search(big, query="needle", max_results=1)
    assert out.data["matches"] == [{"path": "top.txt", "line": 1, "text": "a needle at the top"}]
    assert listing.listed == [os.fspath(big)], listing.listed  # the top folder only, not the 3,000 files under it


async def test_the_walk_finds_what_it_found_before_in_the_same_order(big: Path) -> None:
    (big / "many" / "deep").mkdir()
    (big / "many" / "deep" / "y.txt").write_text("needle deep\n")
    (big / "node_modules").mkdir()
    (big / "node_modules" / "x.txt").write_text("needle skipped\n")
    (big / "b.txt").write_text("needle b\n")
    os.symlink(big.parent, big / "outside")
    out = await _search(big, query="needle")
    assert [m["path"] for m in out.data["matches"]] == ["b.txt", "a/x.txt", "many/deep/y.txt", "z/x.txt"]
    assert not out.data.get("truncated") and out.data["files_searched"] == 3004
