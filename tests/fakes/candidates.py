"""Three scripted candidates of a comparison and the file they all edit: ``app.py`` of ten lines, which each
model rewrites with two hunks of its own, the first of all three on line 2 (so they overlap there)."""

from __future__ import annotations

BASE = "".join(f"line {n}\n" for n in range(1, 11))
#: What each model writes into app.py: two hunks each, the first of all three on line 2.
EDITS = {
    "model-a": {2: "A two\n", 8: "A eight\n"},
    "model-b": {2: "B two\n", 9: "B nine\n"},
    "model-c": {2: "C two\n", 5: "C five\n"},
}


def edited(model: str) -> str:
    """``BASE`` as ``model`` rewrites it."""
    rows = BASE.splitlines(keepends=True)
    for number, text in EDITS[model].items():
        rows[number - 1] = text
    return "".join(rows)
