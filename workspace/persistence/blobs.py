"""Large payloads stored once: compressed, content-addressed blobs referenced from the event rows.

A tool that returns 10 MB reaches an event row three times (the ``tool_result`` payload, its raw
MCP content blocks, and the run's result in ``run_finished``). Before a row is written, every
string of at least :data:`BLOB_THRESHOLD` characters in it (and every list or object still that
large after its strings were taken out) is replaced by a reference ``"\\u0000blob:<sha256>"``
(``"\\u0000blobjson:<sha256>"`` for a list or object, stored as its JSON); the content goes into the
``blobs`` table (migration ``m005_blobs``) once, keyed by the SHA-256 of its text and
zlib-compressed. The event log stays small, the three copies cost one, and a payload written
again (the same file read twice) costs nothing more.

Reading puts the content back (:func:`resolve`), sharing one string object per blob, so a thread
read from the database holds each large payload once in memory too. The secrets of the content
are redacted before it is hashed (nothing secret reaches the file, and equal contents still
meet). A stored string that happens to begin with the marker is always stored as a blob, so a
reference is never ambiguous. The ``events.blobs`` column lists each row's blobs, so purging
threads can remove the blobs nothing refers to any more (:func:`unreferenced`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import zlib
from collections.abc import Callable
from typing import Any

log = logging.getLogger("workspace.persistence")

#: Strings (and lists/objects, as JSON) at least this long are stored as blobs.
BLOB_THRESHOLD = 32 * 1024
#: The start of a reference to a stored string; ``MARK_JSON`` for a stored list or object.
MARK = "\x00blob:"
MARK_JSON = "\x00blobjson:"
#: How a reference looks inside a row's JSON text (json.dumps writes NUL as ``\u0000``).
MARK_IN_JSON = "\\u0000blob"
#: zlib level: 1 compresses a 10 MB log 100 times and prose twice, at 40 MB/s (level 6 is half as fast).
LEVEL = 1
CODEC = "zlib"

#: ``(hash) -> (codec, data)`` of a stored blob, or None when it is missing.
Fetch = Callable[[str], "tuple[str, bytes] | None"]
#: Whether a blob with this hash is stored already (the content need not be compressed again).
Exists = Callable[[str], bool]


class Externalizer:
    """Takes the large strings out of one row's value; collects the blob rows to insert."""

    def __init__(self, *, redact: Callable[[str], str], exists: Exists, threshold: int = BLOB_THRESHOLD) -> None:
        self.redact = redact
        self.exists = exists
        self.threshold = threshold
        #: ``(hash, size, codec, data)`` rows for the ``blobs`` table (``INSERT OR IGNORE``).
        self.rows: list[tuple[str, int, str, bytes]] = []
        #: Every blob the value refers to (for the row's ``blobs`` column).
        self.hashes: list[str] = []
        self._seen: dict[int, str] = {}  # id(string) -> reference, for this row (the same object twice)
        self._keep: list[str] = []  # keeps those strings alive while their ids are used

    def value(self, value: Any) -> Any:
        """``value`` (JSON-ready) with its large parts replaced by references."""
        out, _size = self._walk(value)
        return out

    def _walk(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, str):
            if len(value) >= self.threshold or value.startswith("\x00blob"):
                return self._store(value, MARK), 80
            return value, len(value) + 2
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            size = 2
            for key, item in value.items():
                out[key], item_size = self._walk(item)
                size += item_size + len(str(key)) + 4
            if size >= self.threshold:
                return self._store(json.dumps(out, ensure_ascii=False, separators=(",", ":"), default=str),
                                   MARK_JSON), 80
            return out, size
        if isinstance(value, list | tuple):
            items = []
            size = 2
            for item in value:
                walked, item_size = self._walk(item)
                items.append(walked)
                size += item_size + 1
            if size >= self.threshold:
                return self._store(json.dumps(items, ensure_ascii=False, separators=(",", ":"), default=str),
                                   MARK_JSON), 80
            return items, size
        return value, 8

    def _store(self, text: str, mark: str) -> str:
        known = self._seen.get(id(text))
        if known is not None:
            return known
        clean = self.redact(text)
        data = clean.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self.hashes:
            self.hashes.append(digest)
            if not any(row[0] == digest for row in self.rows) and not self.exists(digest):
                self.rows.append((digest, len(data), CODEC, zlib.compress(data, LEVEL)))
        reference = mark + digest
        self._seen[id(text)] = reference
        self._keep.append(text)
        return reference


class Resolver:
    """Puts the blobs back into values read from rows; one string object per blob and resolver.

    A blob the database does not hold (the file was edited or damaged) reads as a note saying so,
    logged once: the rest of the thread still opens.
    """

    def __init__(self, fetch: Fetch) -> None:
        self.fetch = fetch
        self._cache: dict[str, Any] = {}

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith("\x00blob"):
                return self._load(value)
            return value
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def _load(self, reference: str) -> Any:
        cached = self._cache.get(reference)
        if cached is not None:
            return cached
        is_json = reference.startswith(MARK_JSON)
        digest = reference[len(MARK_JSON if is_json else MARK):]
        found = self.fetch(digest)
        loaded: Any
        try:
            if found is None:
                raise ValueError("it is missing from the database")
            codec, data = found
            if codec != CODEC:
                raise ValueError(f"it uses an unknown codec {codec!r} (written by a newer version?)")
            text = zlib.decompress(data).decode("utf-8", "surrogatepass")
            loaded = self.value(json.loads(text)) if is_json else text
        except (ValueError, zlib.error) as exc:
            log.warning("a stored payload (%s) could not be read: %s", digest[:12], exc)
            loaded = f"[this payload could not be read from the database: {exc}]"
        self._cache[reference] = loaded
        return loaded


def has_references(row_text: str) -> bool:
    """Whether a row's JSON text refers to blobs (a fast test before parsing it)."""
    return MARK_IN_JSON in row_text


def unreferenced_sql() -> str:
    """The statement that removes blobs no event row lists any more (after purging threads)."""
    return ("DELETE FROM blobs WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.blobs IS NOT NULL "
            "AND instr(e.blobs, blobs.hash) > 0)")
