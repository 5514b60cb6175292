"""The keys file (``keys.json``, where keys are kept without an OS keyring) and an MCP server's sign-in file
(``oauth.tokenStore: file``) are read bounded: a FIFO put there does not make every key lookup wait forever, a
huge file is not read whole, and a keys file that cannot be read is never written over (saving a key used to
replace it with that one key: every other key was lost without a word). Real files, FIFOs and sparse files."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.bounded_reads import bounded, huge

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


@pytest.fixture(autouse=True)
def no_keyring() -> Iterator[None]:
    """A bare Linux desktop or a container: no keyring backend, keys go to the keys file."""
    import keyring
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(before)


def _keys_file() -> Path:
    from workspace import secrets

    path = Path(secrets.keys_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_a_keys_file_that_is_not_json_is_not_written_over_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    from workspace import secrets

    path = _keys_file()
    damaged = '{"OPENAI_API_KEY": "sk-one-0123456789", "ANTHROPIC_API_KEY": "sk-two-01234\n'  # cut short
    path.write_text(damaged, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="workspace.secrets"):
        assert secrets.get_key("OPENAI_API_KEY") is None
    assert any(str(path) in r.getMessage() and "move it away" in r.getMessage() for r in caplog.records)
    with pytest.raises(secrets.KeysFileError) as caught:
        secrets.save_key("GEMINI_API_KEY", "sk-three-0123456789")
    assert str(path) in str(caught.value) and "Nothing was written over it" in str(caught.value)
    assert path.read_text(encoding="utf-8") == damaged  # the two keys in it are still there to recover
    secrets.delete_key("OPENAI_API_KEY")  # nothing to delete from: not written either
    assert path.read_text(encoding="utf-8") == damaged


def test_a_fifo_keys_file_neither_waits_nor_is_replaced() -> None:
    from workspace import secrets

    path = _keys_file()
    os.mkfifo(path)
    found, _ = bounded(lambda: secrets.get_key("OPENAI_API_KEY"))
    assert found is None
    with pytest.raises(secrets.KeysFileError, match=r"not a regular file \(a FIFO\)"):
        bounded(lambda: secrets.save_key("OPENAI_API_KEY", "sk-one-0123456789"))
    assert path.is_fifo()


def test_a_huge_keys_file_is_not_read_whole() -> None:
    from workspace import secrets

    path = huge(_keys_file())
    secrets.get_key("OPENAI_API_KEY")  # imports what it imports before memory is measured
    found, peak = bounded(lambda: secrets.get_key("OPENAI_API_KEY"))
    assert found is None
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"
    with pytest.raises(secrets.KeysFileError, match=r"more than the 1\.0 MB"):
        secrets.save_key("OPENAI_API_KEY", "sk-one-0123456789")
    assert path.stat().st_size == 64 * 2**20


def test_a_sign_in_file_that_is_a_fifo_or_huge_is_ignored_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    from workspace.mcp.oauth import TokenStore

    store = TokenStore("files", "https://example.invalid/mcp", token_store="file")
    path = store._file()
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with caplog.at_level(logging.WARNING, logger="workspace.mcp"):
        tokens, _ = bounded(lambda: asyncio.run(store.get_tokens()))
    assert tokens is None
    assert any("files" in r.getMessage() and "not a regular file (a FIFO)" in r.getMessage() and
               "sign in again" in r.getMessage() for r in caplog.records)
    path.unlink()
    huge(path)
    tokens, peak = bounded(lambda: asyncio.run(store.get_tokens()))
    assert tokens is None
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"
