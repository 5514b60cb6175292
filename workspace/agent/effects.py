"""What a built-in file tool's call would do, for the approval policy (:class:`~workspace.approval.FileEffect`).

The approval gate decides by effect, not by tool name: a patch whose target is ``/dev/null`` deletes a file
as ``delete_file`` does, an ``edit_file`` changes one as ``write_file`` does. :func:`file_effects` works the
effects out before the call runs, from its arguments and the folder as the run's pending proposals leave
it. It never refuses anything itself: a call it cannot make sense of (a bad patch, a path outside the
folder) gets what can be told of it, and the tool's own refusal follows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.approval import FileEffect

if TYPE_CHECKING:
    from workspace.changes import ChangeSet

#: The built-in tools whose calls have effects on files.
FILE_WRITING_TOOLS = frozenset({"write_file", "edit_file", "apply_patch", "create_file", "delete_file",
                                "rename_file"})
#: The built-in tools whose calls have effects the policy decides by: the file tools, and ``run_command``
#: (its effect: it runs a command, in the sandbox).
EFFECT_TOOLS = FILE_WRITING_TOOLS | {"run_command"}


class _Folder:
    """Paths and contents as a file tool would see them (best effort: None when unknown)."""

    def __init__(self, folder: Path | None, changes: ChangeSet | None) -> None:
        from workspace.sandbox import Sandbox

        if folder is None and changes is not None:
            folder = changes.folder
        self.changes = changes
        self.sandbox: Sandbox | None = None
        if changes is not None and folder is not None and Path(folder).resolve() == changes.folder:
            self.sandbox = changes.sandbox
        elif folder is not None:
            try:
                self.sandbox = Sandbox(folder)
            except Exception:  # the tool says what is wrong with the folder
                self.sandbox = None

    def rel(self, path: Any) -> str:
        text = str(path)
        if self.sandbox is None:
            return text
        try:
            return self.sandbox.resolve(text, for_write=True).rel
        except Exception:  # outside the folder, a bad name: the tool refuses it
            return text

    def read(self, rel: str) -> bytes | None:
        if self.sandbox is None:
            return None
        if self.changes is not None:
            try:
                return self.changes.read_bytes(rel)
            except Exception:
                return None
        from workspace.changes.fileio import disk_state

        try:
            return disk_state(self.sandbox, rel)[0]
        except Exception:
            return None


def _runs_without_sandbox(folder: Path | None) -> bool:
    """True when a command would run without a sandbox in ``folder``: the person allowed it there (asked every
    time) and no sandbox can be made on this system."""
    if folder is None:
        return False
    from workspace import trust

    if not trust.runs_without_sandbox(folder):
        return False
    from workspace.isolation import SandboxUnavailable
    from workspace.tools.commands import _sandbox

    try:
        _sandbox()
    except SandboxUnavailable:
        return True
    return False


def file_effects(tool: str, arguments: Any, *, folder: Path | None = None,
                 changes: ChangeSet | None = None) -> tuple[FileEffect, ...]:
    """The effects of calling the built-in file tool ``tool`` with ``arguments`` (() for other tools);
    ``run_command``'s is the command it runs."""
    if tool == "run_command" and isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
        return (FileEffect(kind="run", path=".", command=arguments["command"].strip(),
                           unsandboxed=_runs_without_sandbox(folder)),)
    if tool not in FILE_WRITING_TOOLS or not isinstance(arguments, dict):
        return ()
    where = _Folder(folder, changes)
    if changes is not None:
        with changes.lock:
            return _effects(tool, arguments, where)
    return _effects(tool, arguments, where)


def _emptied(before: bytes | None, after_text: str) -> bool:
    """Whether a file that had content is left with none (unknown contents count as having some)."""
    return after_text == "" and before != b""


def _effects(tool: str, args: dict[str, Any], where: _Folder) -> tuple[FileEffect, ...]:
    if tool == "apply_patch":
        return _patch_effects(str(args.get("patch", "")), where)
    path = where.rel(args.get("path", ""))
    if tool == "delete_file":
        return (FileEffect(kind="delete", path=path),)
    if tool == "rename_file":
        return (FileEffect(kind="rename", path=path, new_path=where.rel(args.get("new_path", ""))),)
    if tool == "create_file":
        return (FileEffect(kind="create", path=path),)
    before = where.read(path)
    if tool == "write_file":
        if before is None and where.sandbox is not None:
            return (FileEffect(kind="create", path=path),)
        return (FileEffect(kind="modify", path=path, emptied=_emptied(before, str(args.get("content", "")))),)
    # edit_file
    emptied = False
    if before is not None:
        from workspace.diffing import sniff

        fmt = sniff(before)
        if fmt is not None:
            text = fmt.decode(before)
            search, replacement = str(args.get("search", "")), str(args.get("replace", ""))
            if search:
                after = text.replace(search, replacement) if args.get("replace_all") else \
                    text.replace(search, replacement, 1)
                emptied = _emptied(before, after) and after != text
    return (FileEffect(kind="modify", path=path, emptied=emptied),)


def _patch_effects(patch: str, where: _Folder) -> tuple[FileEffect, ...]:
    from workspace.tools.files.common import Refused
    from workspace.tools.files.patch import parse_patch

    try:
        files = parse_patch(patch)
    except Refused:
        return ()  # nothing applies: the tool says why
    out: list[FileEffect] = []
    for fp in files:
        source, target = fp.source, fp.target
        if fp.new_file or source is None:
            if target is not None:
                out.append(FileEffect(kind="create", path=where.rel(target)))
            continue
        src = where.rel(source)
        if fp.deleted or target is None:
            out.append(FileEffect(kind="delete", path=src))
            continue
        dst = where.rel(target)
        lines = [tag for hunk in fp.hunks for tag, _text, _nl in hunk.lines]
        emptied = bool(lines) and all(tag == "-" for tag in lines)
        if dst != src:
            out.append(FileEffect(kind="rename", path=src, new_path=dst))
            if fp.hunks:
                out.append(FileEffect(kind="modify", path=dst, emptied=emptied))
        else:
            out.append(FileEffect(kind="modify", path=src, emptied=emptied))
    return tuple(out)
