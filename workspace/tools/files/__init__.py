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
from workspace.tools.files.common import _write_in_thread
from workspace.tools.files.patch import _apply_patch
from workspace.tools.files.reading import _list_files, _read_file, _search_files
from workspace.tools.files.writing import _create_file, _delete_file, _edit_file, _rename_file, _write_file
from workspace.tools.registry import register


@tool(name="read_file", read_only=True)
def read_file(path: str, start_line: int | None = None, end_line: int | None = None,
              context: ToolContext | None = None) -> Any:
    """Read a text file of the opened folder, whole or a range of lines (at most 2000 lines per call).

    Shows the file as this run's pending proposals leave it ("pending" says so).

    Args:
        path: file path relative to the opened folder, e.g. "src/app.py"
        start_line: first line to return, counting from 1 (default: 1)
        end_line: last line to return, inclusive (default: the end of the file)
    """
    return _read_file(path, start_line, end_line, context=context)


@tool(name="list_files", read_only=True)
def list_files(path: str = ".", recursive: bool = False, pattern: str | None = None,
               context: ToolContext | None = None) -> Any:
    """List the files and folders in a folder of the opened folder (skips .git, node_modules, .venv, __pycache__).

    Args:
        path: folder relative to the opened folder (default: its top level ".")
        recursive: also list everything in sub-folders
        pattern: only names matching this glob, e.g. "*.py" or "src/*.md"
    """
    return _list_files(path, recursive, pattern, context=context)


@tool(name="search_files", read_only=True)
def search_files(query: str, path: str = ".", regex: bool = False, case_sensitive: bool | None = None,
                 pattern: str | None = None, max_results: int = 100, context: ToolContext | None = None) -> Any:
    """Search the text files of the opened folder for a string or regular expression; returns matching lines.

    Args:
        query: the text to find (or a Python regular expression with regex=true)
        path: a folder or file to search in, relative to the opened folder (default: everything)
        regex: treat query as a regular expression
        case_sensitive: match case exactly (default: only if the query has capital letters)
        pattern: only search files whose names match this glob, e.g. "*.py"
        max_results: stop after this many matching lines (at most 500)
    """
    return _search_files(query, path, regex, case_sensitive, pattern, max_results, context=context)


@tool(name="write_file", read_only=False, destructive=False)
async def write_file(path: str, content: str, context: ToolContext | None = None) -> Any:
    """Propose the whole content of a file (creating or replacing it). The user reviews it before it is written.

    Prefer edit_file for changing part of an existing file.

    Args:
        path: file path relative to the opened folder
        content: the complete new text of the file
    """
    return await _write_in_thread(_write_file, path, content, context=context)


@tool(name="edit_file", read_only=False, destructive=False)
async def edit_file(path: str, search: str, replace: str, replace_all: bool = False,
              context: ToolContext | None = None) -> Any:
    """Propose replacing an exact piece of text in a file. The user reviews it before it is written.

    search must match the file exactly (whitespace and indentation included) and only once, unless replace_all.

    Args:
        path: file path relative to the opened folder
        search: the exact text to replace, with enough surrounding lines to be unique
        replace: the text to put in its place
        replace_all: replace every occurrence instead of requiring exactly one
    """
    return await _write_in_thread(_edit_file, path, search, replace, replace_all, context=context)


@tool(name="apply_patch", read_only=False, destructive=False)
async def apply_patch(patch: str, context: ToolContext | None = None) -> Any:
    """Propose changes to one or more files as a unified diff. The user reviews them before they are written.

    Use '--- a/PATH' / '+++ b/PATH' headers ('/dev/null' to create or delete), hunks with 3 lines of context;
    git rename headers work too. The whole patch applies or nothing does.

    Args:
        patch: the unified diff text
    """
    return await _write_in_thread(_apply_patch, patch, context=context)


@tool(name="create_file", read_only=False, destructive=False)
async def create_file(path: str, content: str = "", context: ToolContext | None = None) -> Any:
    """Propose a new file (refused if it exists). The user reviews it before it is written.

    Args:
        path: the new file's path relative to the opened folder; missing folders are created
        content: the file's text
    """
    return await _write_in_thread(_create_file, path, content, context=context)


@tool(name="delete_file", read_only=False, destructive=True)
async def delete_file(path: str, context: ToolContext | None = None) -> Any:
    """Propose deleting a file. The user reviews it before anything is deleted.

    Args:
        path: file path relative to the opened folder
    """
    return await _write_in_thread(_delete_file, path, context=context)


@tool(name="rename_file", read_only=False, destructive=False)
async def rename_file(path: str, new_path: str, context: ToolContext | None = None) -> Any:
    """Propose moving or renaming a file. The user reviews it before anything moves.

    Args:
        path: the file's current path relative to the opened folder
        new_path: its new path (must not exist yet); missing folders are created
    """
    return await _write_in_thread(_rename_file, path, new_path, context=context)


FILE_TOOLS = [read_file, list_files, search_files, write_file, edit_file, apply_patch, create_file, delete_file,
              rename_file]
for _tool in FILE_TOOLS:
    register(_tool)
