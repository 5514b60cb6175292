"""workspace.secrets: which values count as secrets, and redact() (env names, keyring, registered)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from workspace import secrets
from workspace.secrets import forget_secrets, is_secret_name, redact, register_secret

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def no_registered_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("OPENAI_API_KEY", "sk-abc", True),
        ("my_service_api_key", "abcdef", True),  # case-insensitive
        ("APIKEY", "abcdefgh", True),
        ("STRIPE_KEY", "sk_live_123456789", True),  # *_KEY, long enough
        ("SORT_KEY", "name_asc", False),  # *_KEY, short: not a secret
        ("GITHUB_TOKEN", "x", True),
        ("SLACK_BOT_TOKEN", "xoxb", True),
        ("CLIENT_SECRET_VALUE", "x", True),
        ("DB_PASSWORD", "x", True),
        ("PGPASSWORD", "x", True),
        ("SMTP_PASS", "x", True),
        ("BYPASS", "something", False),
        ("HOME", "/home/someone", False),
        ("KEYBOARD_LAYOUT", "us-international", False),
        ("TOKENIZERS_PARALLELISM", "false", False),
    ],
)
def test_secret_looking_names(name: str, value: str, secret: bool) -> None:
    assert is_secret_name(name, value) is secret


def test_a_names_patterns_are_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A recorded request asks of every key of its new messages (``role``, ``content``...) for every call:
    the name is matched against the secret names' patterns once, its value's length checked every time."""
    searched: list[str] = []

    class Counted:
        def __init__(self, pattern: object) -> None:
            self.pattern = pattern

        def search(self, name: str) -> object:
            searched.append(name)
            return self.pattern.search(name)  # type: ignore[attr-defined]

    monkeypatch.setattr(secrets, "_SECRET_NAME", Counted(secrets._SECRET_NAME))
    monkeypatch.setattr(secrets, "_KEY_NAME", Counted(secrets._KEY_NAME))
    names = ["a-key-never-asked-before", "ROLE_NEVER_ASKED_BEFORE_KEY"]
    for _ in range(3):
        assert is_secret_name(names[0], "x") is False
        assert is_secret_name(names[1], "short") is False
        assert is_secret_name(names[1], "long enough to be one") is True
    assert searched == [names[0], names[0], names[1], names[1]]  # each name's two patterns, once


def test_values_of_secret_looking_environment_variables_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_SERVICE_TOKEN", "acme-token-0123456789")
    monkeypatch.setenv("WIDGET_API_KEY", "widget-key-42")
    monkeypatch.setenv("DEPLOY_KEY", "deploykey-0123456789")
    monkeypatch.setenv("SHORT_KEY", "abcdefgh")  # *_KEY shorter than 12: left alone
    monkeypatch.setenv("db_password", "hunter2-but-longer")
    monkeypatch.setenv("FTP_PASS", "ftp-pass-value")
    monkeypatch.setenv("MY_SECRET_THING", "the-secret-thing")
    monkeypatch.setenv("TINY_TOKEN", "abc12")  # under 6 characters: never redacted
    monkeypatch.setenv("EDITOR_NAME", "vim-but-long-name")  # not a secret name
    text = ("acme-token-0123456789 widget-key-42 deploykey-0123456789 abcdefgh hunter2-but-longer "
            "ftp-pass-value the-secret-thing abc12 vim-but-long-name")
    assert redact(text) == ("<ACME_SERVICE_TOKEN> <WIDGET_API_KEY> <DEPLOY_KEY> abcdefgh <db_password> "
                            "<FTP_PASS> <MY_SECRET_THING> abc12 vim-but-long-name")


def test_a_changed_environment_is_seen_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert redact("value-one-123 value-two-456") == "value-one-123 value-two-456"
    monkeypatch.setenv("FIRST_TOKEN", "value-one-123")
    assert redact("value-one-123 value-two-456") == "<FIRST_TOKEN> value-two-456"
    monkeypatch.setenv("FIRST_TOKEN", "value-two-456")
    assert redact("value-one-123 value-two-456") == "value-one-123 <FIRST_TOKEN>"
    monkeypatch.delenv("FIRST_TOKEN")
    assert redact("value-one-123 value-two-456") == "value-one-123 value-two-456"


def test_registered_values_are_redacted_longest_first() -> None:
    register_secret("abcdef123456", name="SHORT")
    register_secret("abcdef123456-and-more", name="LONG")
    register_secret("tiny")  # too short to register
    register_secret("")
    register_secret(None)
    assert redact("x abcdef123456-and-more y abcdef123456 tiny") == "x <LONG> y <SHORT> tiny"
    register_secret("  padded-secret-value\n", name="PADDED")  # keyring entries often end in a newline
    assert redact("is padded-secret-value.") == "is <PADDED>."
    register_secret("no-name-secret")
    assert redact("no-name-secret") == "<secret>"
    forget_secrets(["no-name-secret"])
    assert redact("no-name-secret") == "no-name-secret"


def test_regex_special_characters_in_secrets_are_literal() -> None:
    register_secret("a.b*c+d?(e)[f]|g\\h", name="ODD")
    assert redact("x a.b*c+d?(e)[f]|g\\h y aXbbc") == "x <ODD> y aXbbc"


def test_the_pattern_is_rebuilt_only_when_the_secrets_change(monkeypatch: pytest.MonkeyPatch) -> None:
    register_secret("first-secret-1", name="A")
    redact("warm up")
    state = secrets._redactor.current()
    redact("first-secret-1")
    assert secrets._redactor.current() is state  # nothing changed: the same compiled pattern
    register_secret("first-secret-1", name="A")  # already known
    assert secrets._redactor.current() is state
    monkeypatch.setenv("UNRELATED_SETTING", "on")  # the environment changed, the secrets did not
    assert secrets._redactor.current()[2] is state[2]
    register_secret("second-secret-2", name="B")
    assert secrets._redactor.current()[2] is not state[2]
    assert redact("first-secret-1 second-secret-2") == "<A> <B>"


# -- the keyring --------------------------------------------------------------------------------------
class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(before)


def test_keyring_values_are_redacted_once_read_or_stored(memory_keyring: MemoryKeyring) -> None:
    memory_keyring.items[("robotlab", "SERVICE_CREDENTIAL")] = "stored-elsewhere-value"
    assert redact("stored-elsewhere-value") == "stored-elsewhere-value"  # not known yet
    assert secrets.get_key("SERVICE_CREDENTIAL") == "stored-elsewhere-value"
    assert redact("got stored-elsewhere-value") == "got <SERVICE_CREDENTIAL>"
    assert secrets.store_key("ANTHROPIC_API_KEY", "typed-in-the-desktop-123")
    assert redact("typed-in-the-desktop-123") == "<ANTHROPIC_API_KEY>"


def test_a_key_typed_without_a_keyring_is_still_redacted() -> None:
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        assert not secrets.keyring_available()
        assert not secrets.store_key("OPENAI_API_KEY", "typed-but-not-stored-1")
    finally:
        keyring.set_keyring(before)
    assert redact("typed-but-not-stored-1") == "<OPENAI_API_KEY>"


# -- logging ------------------------------------------------------------------------------------------
def test_the_log_filter_redacts_messages_arguments_and_tracebacks() -> None:
    register_secret("log-secret-value-1", name="LOGGED")
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Collect()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("tests.redaction.child")
    root = logging.getLogger("tests.redaction")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        secrets.install_log_redaction(root)
        secrets.install_log_redaction(root)  # twice: one filter
        assert sum(isinstance(f, secrets.RedactFilter) for f in handler.filters) == 1
        logger.info("calling with %s", "log-secret-value-1")  # propagated from a child logger
        try:
            raise ValueError("bad key log-secret-value-1")
        except ValueError:
            logger.exception("failed")
    finally:
        root.removeHandler(handler)
    assert records[0] == "calling with <LOGGED>"
    assert "ValueError: bad key <LOGGED>" in records[1]
    assert not any("log-secret-value-1" in r for r in records)


# -- credentials recognised by their shape ------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Incorrect API key provided: Bearer sk-proj-abc123def456. You can find your key",
         "Incorrect API key provided: Bearer <redacted>. You can find your key"),
        ('{"headers": {"Authorization": "Bearer sk-abc123456"}}', '{"headers": {"Authorization": "Bearer <redacted>"}}'),
        ("{'x-api-key': 'sk-ant-0123456789'}", "{'x-api-key': '<redacted>'}"),
        ("api-key: 0123456789abcdef", "api-key: <redacted>"),
        ("X-Auth-Token: abcdef12345", "X-Auth-Token: <redacted>"),
        ("AUTHORIZATION: BEARER ABCDEFGH12", "AUTHORIZATION: BEARER <redacted>"),
        ("http://user:PASS@127.0.0.1:8080/v1?api-key=QKEY123&model=x",
         "http://user:<redacted>@127.0.0.1:8080/v1?api-key=<redacted>&model=x"),
        ("https://generativelanguage.googleapis.com/v1/models?key=AIzaSyD-abc&alt=sse",
         "https://generativelanguage.googleapis.com/v1/models?key=<redacted>&alt=sse"),
        ("wss://host/stream?token=t0k3n", "wss://host/stream?token=<redacted>"),
        ("postgres://u:p@h/db", "postgres://u:<redacted>@h/db"),
        # Words, references and masks are left alone.
        ("Bearer authentication failed", "Bearer authentication failed"),
        ("Authorization: Bearer ${GITHUB_TOKEN}", "Authorization: Bearer ${GITHUB_TOKEN}"),
        ("x-api-key: ${API_KEY}", "x-api-key: ${API_KEY}"),
        ("Authorization: ***", "Authorization: ***"),
        ("api_key=None, api-key: required", "api_key=None, api-key: required"),
        ("the server at http://localhost:11434 did not answer at 12:30:45",
         "the server at http://localhost:11434 did not answer at 12:30:45"),
    ],
)
def test_credentials_are_redacted_by_their_shape(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected  # redacting twice changes nothing more


def test_redacted_json_stays_json() -> None:
    import json

    text = json.dumps({"error": 'Incorrect key: "Authorization: Bearer sk-1234567890"\n', "url": "http://a:b@h/"})
    assert json.loads(redact(text)) == {"error": 'Incorrect key: "Authorization: Bearer <redacted>"\n',
                                        "url": "http://a:<redacted>@h/"}


def test_the_credentials_of_an_api_base_are_known_from_then_on() -> None:
    import base64

    secrets.register_url_secrets("http://robot:s3cret-pass@models.internal/v1?api-key=query-key-123&model=x")
    basic = base64.b64encode(b"robot:s3cret-pass").decode()
    assert redact(f"said s3cret-pass, query-key-123 and Basic {basic}") == (
        "said <api_base password>, <api_base api-key> and Basic <api_base password>")
    secrets.register_url_secrets("${MODEL_URL}")  # a reference: nothing to learn
    secrets.register_url_secrets(None)


# -- the process's output -----------------------------------------------------------------------------
def test_the_redacting_stream_passes_whole_lines_on() -> None:
    import io

    register_secret("stream-secret-value", name="STREAMED")
    sink = io.StringIO()
    stream = secrets.RedactingStream(sink)
    print("key:", "stream-", file=stream, end="")  # a key written in pieces...
    assert sink.getvalue() == ""  # ...is held until the line ends
    print("secret-value and Bearer", "sk-0123456789", file=stream)
    assert sink.getvalue() == "key: <STREAMED> and Bearer <redacted>\n"
    stream.write("a prompt: ")
    stream.flush()  # a flush passes on what is held (prompts, streamed text)
    assert sink.getvalue().endswith("a prompt: ")
    assert stream.isatty() is False and stream.encoding


def test_uncaught_exceptions_and_the_standard_streams_are_redacted(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "crash.py"
    script.write_text(
        "import sys\n"
        "from workspace.secrets import install_output_redaction\n"
        "install_output_redaction()\n"
        "print('stdout has sk-live-0123456789abcdef')\n"
        "print('http://me:hunter2hunter2@host/', file=sys.stderr)\n"
        "raise RuntimeError('401: Incorrect API key provided: Bearer sk-live-0123456789abcdef')\n"
    )
    env = {**os.environ, "PLANTED_API_KEY": "sk-live-0123456789abcdef", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1
    assert "sk-live-0123456789abcdef" not in proc.stdout + proc.stderr
    assert "hunter2hunter2" not in proc.stderr
    assert "stdout has <PLANTED_API_KEY>" in proc.stdout
    assert "RuntimeError: 401: Incorrect API key provided: Bearer <PLANTED_API_KEY>" in proc.stderr


_READ_PARENT = """
import asyncio, ctypes, sys
from pathlib import Path
from workspace.isolation.unsandboxed import run_unsandboxed
result = asyncio.run(run_unsandboxed("tr '\\\\0' '\\\\n' < /proc/$PPID/environ; echo done", Path({folder!r})))
print(result.output.text)
print("dumpable", ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="a /proc file system (Linux)")
def test_a_command_run_without_the_sandbox_cannot_read_our_environment(tmp_path: Path) -> None:
    """A command run without the sandbox gets a reduced environment (no keys), and ours, with the keys, is not
    readable from it as /proc/$PPID/environ either: the process is made not dumpable (it was readable, keys and all,
    to a command of the same user; root reads it whatever, so as root the flag itself is checked)."""
    import subprocess
    import sys

    key = "sk-proctest-0123456789abcdefghij"
    folder = tmp_path / "project"
    folder.mkdir()
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "OPENAI_API_KEY": key, "PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", _READ_PARENT.format(folder=str(folder))], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "done" in done.stdout  # the command ran
    assert done.stdout.rstrip().endswith("dumpable 0")
    if os.geteuid() != 0:
        assert key not in done.stdout and "OPENAI_API_KEY" not in done.stdout


def test_a_scripts_help_read_without_a_sandbox_gets_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder's script tool is described by its --help; with no sandbox on this machine that ran in this
    process's whole environment, keys and all: it runs with a command's environment (no keys), as a command run
    without the sandbox does."""
    from workspace.isolation import SandboxUnavailable
    from workspace.tools import commands
    from workspace.tools import script as script_module

    def no_sandbox() -> None:
        raise SandboxUnavailable("no sandbox here (test)")

    monkeypatch.setattr(commands, "_sandbox", no_sandbox)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripthelp-0123456789abcdefghij")
    tool = tmp_path / "show-env"
    tool.write_text('#!/bin/sh\nif [ "$1" = "--help" ]; then echo "usage: show-env"; env; fi\n')
    tool.chmod(0o755)
    shown = script_module._help_text(tool)
    assert shown is not None and shown.startswith("usage: show-env")
    assert "sk-scripthelp" not in shown and "OPENAI_API_KEY" not in shown
