"""Which of a command's changes the folder ignores: its ``.gitignore`` files, as git reads them.

The ``.gitignore`` files are read as the command saw them (the pending changes over the folder),
from the folder's root and every folder on the way to a changed path; a deeper file's patterns
decide over a shallower one's (a ``!negation`` below re-includes). ``.git/`` is always ignored.
Matching is pathspec's ``GitIgnoreSpec`` (imported on use).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from workspace.readlimits import IGNORE_FILE_BYTES

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


def ignore_matcher(read: Callable[[str, int], bytes | None]) -> Callable[[str], bool]:
    """Whether the folder ignores a path; ``read(path, limit)`` gives a file's content as the command saw it,
    None when there is none or it is larger than ``limit`` (a ``.gitignore`` over :data:`IGNORE_FILE_BYTES`
    counts as absent: its changes are proposed, the side that loses nothing)."""
    from pathspec import GitIgnoreSpec

    specs: dict[str, GitIgnoreSpec | None] = {}

    def spec_of(directory: str) -> GitIgnoreSpec | None:
        if directory not in specs:
            data = read(f"{directory}/.gitignore" if directory else ".gitignore", IGNORE_FILE_BYTES)
            lines = data.decode("utf-8", errors="replace").splitlines() if data else []
            specs[directory] = GitIgnoreSpec.from_lines(lines) if lines else None
        return specs[directory]

    def ignored(path: str) -> bool:
        parts = path.split("/")
        if ".git" in parts[:-1] or parts[0] == ".git":
            return True
        verdict = False
        for depth in range(len(parts)):
            spec = spec_of("/".join(parts[:depth]))
            if spec is None:
                continue
            # The path relative to that folder, and each of its parent folders: an ignored folder
            # ignores everything below it (git never looks inside it).
            rel_parts = parts[depth:]
            for end in range(1, len(rel_parts) + 1):
                rel = "/".join(rel_parts[:end]) + ("/" if end < len(rel_parts) else "")
                result = spec.check_file(rel)
                if result.include is not None:
                    verdict = result.include
                    if verdict and end < len(rel_parts):
                        return True
        return verdict

    return ignored
