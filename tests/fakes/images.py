"""Images for the tests of attachments: small valid PNG files made in memory."""

from __future__ import annotations

import struct
import zlib


def png(width: int = 2, height: int = 2, *, seed: int = 0) -> bytes:
    """A valid PNG image (RGB, ``seed`` varies its pixels)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes((x * 40 + seed) % 256 for x in range(width * 3)) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
