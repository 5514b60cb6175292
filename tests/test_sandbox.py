"""The sandbox: robot-supplied paths stay inside the opened folder, symlinks never lead out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workspace.changes import ChangeSet
from workspace.errors import SandboxError
from workspace.sandbox import Sandbox


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "project"
    outside = tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text("print('hi')\n")
    (folder / "README.md").write_text("# readme\n")
    (outside / "secret.txt").write_text("top secret\n")
    return folder, outside


def test_relative_and_absolute_inside_are_allowed(layout: tuple[Path, Path]) -> None:
    folder, _ = layout
    box = Sandbox(folder)
    assert box.resolve("src/app.py").rel == "src/app.py"
    assert box.resolve("./src/../README.md").rel == "README.md"
    assert box.resolve(str(folder / "src" / "app.py")).rel == "src/app.py"
    assert box.resolve("new/file.txt").rel == "new/file.txt"  # need not exist
    assert box.resolve(".").rel == ""


def test_folder_opened_through_a_symlink(layout: tuple[Path, Path], tmp_path: Path) -> None:
    folder, _ = layout
    alias = tmp_path / "alias"
    alias.symlink_to(folder, target_is_directory=True)
    box = Sandbox(alias)
    assert box.root == folder.resolve()
    assert box.resolve(str(alias / "README.md")).rel == "README.md"
    assert box.resolve(str(folder / "README.md")).rel == "README.md"


@pytest.mark.parametrize("path", ["../outside/secret.txt", "src/../../outside/secret.txt", "..", "../"])
def test_dotdot_escapes_are_refused(layout: tuple[Path, Path], path: str) -> None:
    folder, _ = layout
    with pytest.raises(SandboxError, match=r"climbs out of the opened folder"):
        Sandbox(folder).resolve(path)


def test_absolute_paths_outside_are_refused(layout: tuple[Path, Path]) -> None:
    folder, outside = layout
    box = Sandbox(folder)
    for path in ("/etc/passwd", str(outside / "secret.txt"), str(folder) + "-sibling/x"):
        with pytest.raises(SandboxError, match="outside the opened folder"):
            box.resolve(path)
    with pytest.raises(SandboxError, match="home folder"):
        box.resolve("~/.ssh/id_rsa")


def test_symlink_pointing_out_is_refused(layout: tuple[Path, Path]) -> None:
    folder, outside = layout
    (folder / "leak.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(SandboxError, match=r"symbolic link \('leak.txt' is a symlink"):
        Sandbox(folder).resolve("leak.txt")


def test_path_through_a_symlinked_directory_is_refused(layout: tuple[Path, Path]) -> None:
    folder, outside = layout
    (folder / "docs").symlink_to(outside, target_is_directory=True)
    box = Sandbox(folder)
    with pytest.raises(SandboxError, match="'docs' is a symlink"):
        box.resolve("docs/secret.txt")
    with pytest.raises(SandboxError):
        box.resolve("docs/new-file.txt", for_write=True)


def test_symlinks_inside_resolve_to_the_real_file(layout: tuple[Path, Path]) -> None:
    folder, _ = layout
    (folder / "alias.py").symlink_to(folder / "src" / "app.py")
    (folder / "code").symlink_to(folder / "src", target_is_directory=True)
    box = Sandbox(folder)
    assert box.resolve("alias.py").rel == "src/app.py"
    assert box.resolve("code/app.py").rel == "src/app.py"


def test_odd_paths_and_git_internals(layout: tuple[Path, Path]) -> None:
    folder, _ = layout
    box = Sandbox(folder)
    with pytest.raises(SandboxError, match="empty"):
        box.resolve("  ")
    with pytest.raises(SandboxError, match="NUL"):
        box.resolve("a\x00b")
    with pytest.raises(SandboxError, match=r"\.git"):
        box.resolve(".git/config", for_write=True)
    with pytest.raises(SandboxError, match="folder itself"):
        box.resolve(".", for_write=True)
    assert box.resolve(".git/config").rel == ".git/config"  # reading is fine
    assert box.resolve(".github/workflows/ci.yml", for_write=True).rel == ".github/workflows/ci.yml"


def test_long_names_loops_files_as_folders_and_windows_spellings_of_git(layout: tuple[Path, Path]) -> None:
    """Each gets its own message (never the raw OSError with the absolute path)."""
    folder, _ = layout
    (folder / "loop").symlink_to(folder / "loop")
    box = Sandbox(folder)
    with pytest.raises(SandboxError, match=r"holds a name of 300 bytes, longer than file systems allow \(255\)"):
        box.resolve("x" * 300)
    with pytest.raises(SandboxError, match="too long a path"):
        box.resolve("d/" * 2100 + "x", for_write=True)
    with pytest.raises(SandboxError, match="'loop' is a symbolic link that loops"):
        box.resolve("loop")
    with pytest.raises(SandboxError, match="goes through 'loop', a symbolic link that loops"):
        box.resolve("loop/x", for_write=True)
    with pytest.raises(SandboxError, match="treats 'README.md' as a folder, but it is a file"):
        box.resolve("README.md/x.txt", for_write=True)
    for name in (".git./config", ".GIT /hooks/pre-commit", ".Git../x"):
        with pytest.raises(SandboxError, match=r"internal '\.git' folder"):
            box.resolve(name, for_write=True)
    assert box.resolve(".gitignore", for_write=True).rel == ".gitignore"
    assert box.resolve(".github./x", for_write=True).rel == ".github./x"


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        Sandbox(tmp_path / "nope")


# The file tools' refusals of these escapes, end to end: tests/faults/test_fault_paths.py.


def test_symlink_swapped_in_after_the_proposal_is_not_followed(layout: tuple[Path, Path]) -> None:
    folder, outside = layout
    (folder / "sub").mkdir()
    (folder / "sub" / "notes.txt").write_text("old\n")
    changes = ChangeSet(folder)
    changes.propose("sub/notes.txt", b"new\n")
    changes.accept_all()
    # Between proposal and apply, someone replaces the folder with a symlink to outside.
    (folder / "sub" / "notes.txt").unlink()
    (folder / "sub").rmdir()
    os.symlink(outside, folder / "sub", target_is_directory=True)
    (outside / "notes.txt").write_text("old\n")
    result = changes.apply()
    assert not result.ok
    assert result.conflicts and "sub/notes.txt" in result.conflicts[0].path
    assert (outside / "notes.txt").read_text() == "old\n"
