"""Built-in file tools: read, list and search the opened folder; propose writes for review.

Reading tools (``read_file``, ``list_files``, ``search_files``) are read-only. Writing
tools (``write_file``, ``edit_file``, ``apply_patch``, ``create_file``, ``delete_file``,
``rename_file``) never touch disk: they add to the run's :class:`~workspace.changes.ChangeSet`
and tell the model the change awaits the user's review (or was applied, in auto mode;
or was refused, in read-only mode).

**What reads see.** Reads show the folder *as this run's pending proposals leave it*:
a file the robot edited earlier in the run reads back with the edit (and the result
says so in ``pending``), a file it proposed to delete is reported missing, a proposed
new file is listed. That keeps multi-step edits coherent (the second ``edit_file``
matches the text after the first) while the result makes clear nothing is on disk yet.

**Bytes survive.** Files are decoded with their own encoding and edited line-exactly:
CRLF endings, a missing final newline, BOMs and Windows-1252/Latin-1 text stay as they
were outside the edited text; new text adopts the file's newline style. Binary files
are never edited (delete or rename them whole).

**Parallel calls.** Writing tools do their work in a worker thread while holding the
change set's lock (read, compute, propose), so several edits of one file in the same
turn compose; their events are emitted afterwards on the event loop.

Paths are relative to the opened folder (absolute paths inside it work too); anything
outside it is refused (:mod:`workspace.sandbox`), and so are names with control, format or
bidirectional characters for writes. Messages show names through
:func:`~workspace.sandbox.display_path`. The temp files of atomic writes (``*.robotlab-tmp``)
never appear in listings, searches or reads. Errors say how to fix the call.
"""

from __future__ import annotations

from typing import Any

from workspace.tools.base import ToolContext
from workspace.tools.decorator import tool
from workspace.tools.files.common import _stoppable_in_thread, _write_in_thread
from workspace.tools.files.patch import _apply_patch
from workspace.tools.files.reading import _list_files, _read_file, _search_files
from workspace.tools.files.writing import _create_file, _delete_file, _edit_file, _rename_file, _write_file
from workspace.tools.registry import register


@tool(name="read_file", read_only=True)
def read_file(path: str, start_line: int | None = None, end_line: int | None = None,
              context: ToolContext | None = None) -> Any:
    """Read a text file (at most 2000 lines per call), as pending proposals leave it.

    Args:
        path: relative to the opened folder
        start_line: first line, from 1
        end_line: last line, inclusive
    """
    return _read_file(path, start_line, end_line, context=context)


@tool(name="list_files", read_only=True)
def list_files(path: str = ".", recursive: bool = False, pattern: str | None = None,
               context: ToolContext | None = None) -> Any:
    """List files and folders (skips .git, node_modules, .venv, __pycache__).

    Args:
        path: folder relative to the opened folder
        recursive: include sub-folders
        pattern: glob, e.g. "*.py"
    """
    return _list_files(path, recursive, pattern, context=context)


@tool(name="search_files", read_only=True)
async def search_files(query: str, path: str = ".", regex: bool = False, case_sensitive: bool | None = None,
                 pattern: str | None = None, max_results: int = 100, context: ToolContext | None = None) -> Any:
    """Find lines matching a text or regular expression in the opened folder's files.

    Args:
        query: text, or a Python regex with regex=true
        path: folder or file to search
        regex: query is a regular expression
        case_sensitive: default: only if the query has capitals
        pattern: file name glob, e.g. "*.py"
        max_results: at most 500
    """
    return await _stoppable_in_thread(_search_files, query, path, regex, case_sensitive, pattern, max_results,
                                      context=context)


@tool(name="write_file", read_only=False, destructive=False)
async def write_file(path: str, content: str, context: ToolContext | None = None) -> Any:
    """Propose a file's whole new content (the user reviews it). For part of a file use edit_file.

    Args:
        path: relative to the opened folder
        content: the complete text
    """
    return await _write_in_thread(_write_file, path, content, context=context)


@tool(name="edit_file", read_only=False, destructive=False)
async def edit_file(path: str, search: str, replace: str, replace_all: bool = False,
              context: ToolContext | None = None) -> Any:
    """Propose replacing text in a file (the user reviews it).

    Args:
        path: relative to the opened folder
        search: exact text, whitespace included, found once (add lines to make it unique)
        replace: the new text
        replace_all: replace every occurrence
    """
    return await _write_in_thread(_edit_file, path, search, replace, replace_all, context=context)


@tool(name="apply_patch", read_only=False, destructive=False)
async def apply_patch(patch: str, context: ToolContext | None = None) -> Any:
    """Propose a unified diff of one or more files (the user reviews it); all of it applies or none.

    Args:
        patch: '--- a/PATH' / '+++ b/PATH' headers (/dev/null: create or delete), 3 lines of context
    """
    return await _write_in_thread(_apply_patch, patch, context=context)


@tool(name="create_file", read_only=False, destructive=False)
async def create_file(path: str, content: str = "", context: ToolContext | None = None) -> Any:
    """Propose a new file (refused if it exists; the user reviews it).

    Args:
        path: relative to the opened folder
        content: its text
    """
    return await _write_in_thread(_create_file, path, content, context=context)


@tool(name="delete_file", read_only=False, destructive=True)
async def delete_file(path: str, context: ToolContext | None = None) -> Any:
    """Propose deleting a file (the user reviews it).

    Args:
        path: relative to the opened folder
    """
    return await _write_in_thread(_delete_file, path, context=context)


@tool(name="rename_file", read_only=False, destructive=False)
async def rename_file(path: str, new_path: str, context: ToolContext | None = None) -> Any:
    """Propose moving or renaming a file (the user reviews it).

    Args:
        path: relative to the opened folder
        new_path: must not exist yet
    """
    return await _write_in_thread(_rename_file, path, new_path, context=context)


FILE_TOOLS = [read_file, list_files, search_files, write_file, edit_file, apply_patch, create_file, delete_file,
              rename_file]
for _tool in FILE_TOOLS:
    register(_tool)
