"""The command sandbox (workspace/isolation): real bubblewrap, real processes, real overlays.

What a command sees (the pending changes over the folder), what comes back (its writes, split by
.gitignore), and that the user's folder is never written.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import time
from pathlib import Path

import pytest

from workspace.isolation import IsolationError, Limits, SandboxUnavailable, sandbox_for_platform
from workspace.isolation.base import OutputCollector
from workspace.isolation.bubblewrap import BubblewrapSandbox, check, safe_environment


def _sandbox_or_reason() -> tuple[BubblewrapSandbox | None, str]:
    try:
        box = sandbox_for_platform()
    except SandboxUnavailable as exc:
        return None, str(exc)
    assert isinstance(box, BubblewrapSandbox)
    return box, ""


_BOX, _WHY = _sandbox_or_reason()
needs_sandbox = pytest.mark.skipif(_BOX is None, reason=f"bubblewrap cannot run here: {_WHY}")


def sandbox(**limits: object) -> BubblewrapSandbox:
    assert _BOX is not None
    return BubblewrapSandbox(bwrap=_BOX.bwrap, limits=Limits(**limits), _caps=_BOX.capabilities)  # type: ignore[arg-type]


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder`` with its content (files) or target (links)."""
    seen: dict[str, bytes | str] = {}
    for root, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = Path(root, name)
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                seen[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                seen[rel] = path.read_bytes()
            else:
                seen[rel] = "dir"
    return seen


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text("print('on disk')\n")
    (folder / "README.md").write_text("# readme\n")
    (folder / "old.txt").write_text("old\n")
    (folder / "docs").mkdir()
    (folder / "docs" / "a.md").write_text("a\n")
    (folder / "docs" / "b.md").write_text("b\n")
    (folder / ".gitignore").write_text("build/\n*.pyc\n!keep.pyc\n")
    return folder


@needs_sandbox
async def test_the_command_sees_the_pending_changes_and_the_folder_is_never_written(folder: Path) -> None:
    before = snapshot(folder)
    result = await sandbox().run(
        "cat src/app.py; cat new.txt; test -e old.txt && echo old-still-there; ls docs; ls",
        folder,
        pending={
            "src/app.py": b"print('proposed')\n",
            "new.txt": b"pending new\n",
            "old.txt": None,
            "docs": None,
        },
    )
    assert result.exit_code == 0, result.output.text
    assert result.output.text == (
        "print('proposed')\npending new\nls: cannot access 'docs': No such file or directory\nREADME.md\nnew.txt\nsrc\n"
    )
    assert "old-still-there" not in result.output.text  # the pending deletion is a whiteout
    assert result.changes.proposed == () and result.changes.ignored == ()
    assert snapshot(folder) == before


@needs_sandbox
async def test_writes_come_back_as_changes_split_by_gitignore_and_nothing_lands_on_disk(folder: Path) -> None:
    (folder / "pkg").mkdir()
    (folder / "pkg" / ".gitignore").write_text("*.log\n")
    (folder / "pkg" / "x.txt").write_text("x\n")
    before = snapshot(folder)
    script = "; ".join(
        [
            "echo more >> src/app.py",
            "echo created > notes.txt",
            "rm old.txt",
            "rm -r docs && mkdir docs && echo fresh > docs/c.md",  # an opaque folder in the upper layer
            "mkdir -p build && echo out > build/out.bin",
            "echo cache > a.pyc && echo kept > keep.pyc",
            "echo log > pkg/run.log && echo y > pkg/y.txt",
            "printf 'a\\000b' > blob.dat",
            "touch README.md",  # the same bytes: no change
            "ln -s src/app.py link",
            "mkdir -p .git && echo ref > .git/HEAD",
            "cat pending.txt",
        ]
    )
    result = await sandbox().run(script, folder, pending={"pending.txt": b"p\n", "src/app.py": b"proposed\n"})
    assert result.exit_code == 0, result.output.text
    proposed = {c.path: c for c in result.changes.proposed}
    ignored = {c.path: c for c in result.changes.ignored}
    assert sorted(proposed) == [
        "blob.dat", "docs/a.md", "docs/b.md", "docs/c.md", "keep.pyc", "link", "notes.txt", "old.txt",
        "pkg/y.txt", "src/app.py",
    ]  # fmt: skip
    assert sorted(ignored) == [".git/HEAD", "a.pyc", "build/out.bin", "pkg/run.log"]
    assert ignored["build/out.bin"].content is None and ignored["build/out.bin"].size == 4  # never read
    assert proposed["src/app.py"].kind == "changed"
    assert proposed["src/app.py"].text == "proposed\nmore\n"  # on top of the pending content
    assert proposed["notes.txt"].kind == "created" and proposed["notes.txt"].text == "created\n"
    assert proposed["old.txt"].kind == "deleted" and proposed["old.txt"].content is None
    assert proposed["docs/a.md"].kind == proposed["docs/b.md"].kind == "deleted"
    assert proposed["docs/c.md"].text == "fresh\n"
    assert (
        proposed["blob.dat"].binary
        and proposed["blob.dat"].content == b"a\0b"
        and proposed["blob.dat"].text is None
    )
    assert proposed["link"].link == "src/app.py" and proposed["link"].content is None
    assert snapshot(folder) == before


@needs_sandbox
async def test_a_gitignore_over_its_limit_is_not_read_and_its_changes_are_proposed(folder: Path) -> None:
    """A .gitignore is read bounded (workspace.readlimits.IGNORE_FILE_BYTES): one larger is not read and counts as
    absent (what it would ignore is proposed, the side that loses nothing); a pending one likewise."""
    from workspace.readlimits import IGNORE_FILE_BYTES

    padding = "# padding\n" * (IGNORE_FILE_BYTES // 10 + 1)
    (folder / ".gitignore").write_text("build/\n" + padding)
    (folder / "pkg").mkdir()
    script = "mkdir -p build pkg/out && echo out > build/out.bin && echo log > pkg/out/run.log"
    result = await sandbox().run(script, folder, pending={"pkg/.gitignore": ("out/\n" + padding).encode()})
    assert result.exit_code == 0, result.output.text
    assert sorted(c.path for c in result.changes.proposed) == ["build/out.bin", "pkg/out/run.log"]
    assert result.changes.ignored == ()
    (folder / ".gitignore").write_text("build/\n")  # within the limit: read as before
    result = await sandbox().run(script, folder, pending={"pkg/.gitignore": b"out/\n"})
    assert sorted(c.path for c in result.changes.ignored) == ["build/out.bin", "pkg/out/run.log"]


@needs_sandbox
async def test_a_folder_whose_path_the_mount_options_cannot_hold(tmp_path: Path) -> None:
    folder = tmp_path / "odd: name, with\\ marks"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    result = await sandbox().run("cat a.txt b.txt; pwd; echo c > c.txt", folder, pending={"b.txt": b"b\n"})
    assert result.output.text == f"a\nb\n{folder}\n"
    assert [(c.path, c.text) for c in result.changes.proposed] == [("c.txt", "c\n")]
    assert sorted(os.listdir(folder)) == ["a.txt"]


@needs_sandbox
async def test_large_files_and_many_changes_are_bounded(folder: Path) -> None:
    result = await sandbox(max_change_bytes=1000, max_changes=5).run(
        "head -c 5000 /dev/zero > big.bin; for i in 1 2 3 4 5 6 7 8; do echo $i > f$i.txt; done", folder
    )
    changes = {c.path: c for c in result.changes.proposed}
    assert (
        changes["big.bin"].too_large
        and changes["big.bin"].content is None
        and changes["big.bin"].size == 5000
    )
    assert len(changes) == 5 and result.changes.truncated


@needs_sandbox
async def test_a_fork_bomb_is_contained_and_killed(folder: Path) -> None:
    marker = f"bomb{os.getpid()}x{time.monotonic_ns()}"
    box = sandbox(max_processes=64, timeout_s=4)
    peak = 0

    async def count() -> None:
        nonlocal peak
        while True:
            peak = max(peak, len(_processes_with(marker)))
            await asyncio.sleep(0.05)

    counter = asyncio.ensure_future(count())
    try:
        result = await box.run(f"{marker}() {{ {marker} | {marker} & }}; {marker}; sleep 10", folder)
    finally:
        counter.cancel()
    # Either the time limit kills it, or the command's own shell cannot fork its `sleep` and ends,
    # which ends the sandbox's pid namespace and every process of the bomb with it.
    if result.stopped_by == "timeout":
        assert result.exit_code is None and any("time limit" in note for note in result.notes)
    else:
        assert result.exit_code not in (None, 0) and result.duration_s < 4
    # The per-namespace pid_max (301 at least) or RLIMIT_NPROC holds the bomb; the host never sees more.
    limit = 64 if box.capabilities.process_limit == "rlimit" else 320
    assert 0 < peak <= limit, peak
    assert "fork" in result.output.text.lower() or "resource" in result.output.text.lower()
    assert _processes_with(marker) == []


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path("/proc", entry, "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


@needs_sandbox
async def test_endless_output_is_stopped_and_kept_as_head_and_tail(folder: Path) -> None:
    chunks: list[str] = []
    result = await sandbox(max_output_bytes=1_000_000, keep_chars=1000).run(
        "yes", folder, on_output=chunks.append
    )
    assert result.stopped_by == "output" and result.exit_code is None
    assert sum(len(c) for c in chunks) == 1_000_000
    assert result.output.total_chars == 1_000_000
    assert result.output.head == "y\n" * 500 and result.output.tail == "y\n" * 500
    assert result.output.left_out == 998_000
    assert "998,000 characters of output left out" in result.output.text
    assert any("more than 1,000,000 bytes of output" in note for note in result.notes)


@needs_sandbox
async def test_sleep_forever_stops_within_a_second_with_everything_it_started(folder: Path) -> None:
    marker = f"98{os.getpid()}"
    running = await sandbox().start(
        f"sleep {marker} & (sleep {marker} &) ; echo started; sleep {marker}", folder
    )
    chunks: list[str] = []
    running._on_output = chunks.append
    waiter = asyncio.ensure_future(running.result())
    for _ in range(100):
        if len(_processes_with(f"sleep\0{marker}")) >= 3:
            break
        await asyncio.sleep(0.05)
    assert len(_processes_with(f"sleep\0{marker}")) == 3
    start = time.monotonic()
    running.stop("Esc")
    result = await waiter
    assert time.monotonic() - start < 1.0
    assert result.stopped_by == "stop" and result.exit_code is None
    assert result.notes[0].startswith("Stopped (Esc)")
    assert _processes_with(f"sleep\0{marker}") == []


@needs_sandbox
async def test_the_time_limit_and_a_cancelled_task_kill_the_tree(folder: Path) -> None:
    marker = f"97{os.getpid()}"
    result = await sandbox().run(f"sleep {marker}", folder, timeout_s=0.5)
    assert result.timed_out and result.duration_s < 2
    assert _processes_with(f"sleep\0{marker}") == []

    task = asyncio.ensure_future(sandbox().run(f"sleep {marker} & sleep {marker}", folder))
    for _ in range(100):
        if len(_processes_with(f"sleep\0{marker}")) == 2:
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _processes_with(f"sleep\0{marker}") == []


@needs_sandbox
async def test_a_symbolic_link_pointing_outside_leads_nowhere(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (folder / "link").symlink_to(outside / "secret.txt")
    (folder / "dirlink").symlink_to(outside)
    result = await sandbox().run(
        "cat link; ls dirlink/; echo pwned > link; echo pwned > dirlink/new.txt; cat link", folder
    )
    assert "top secret" not in result.output.text
    assert "No such file or directory" in result.output.text
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert os.readlink(folder / "link") == str(outside / "secret.txt")
    assert result.changes.proposed == ()


@needs_sandbox
async def test_writing_outside_the_folder_fails_and_changes_nothing(folder: Path, tmp_path: Path) -> None:
    parent_before = sorted(os.listdir(tmp_path))
    result = await sandbox().run(
        f"touch /etc/robotlab-x; touch /usr/robotlab-x; touch /robotlab-x; touch {tmp_path}/robotlab-x; "
        "touch ../robotlab-x; echo private > /tmp/x && cat /tmp/x; echo h > ~/h && cat ~/h",
        folder,
    )
    text = result.output.text
    for path in ("/etc/robotlab-x", "/usr/robotlab-x", "/robotlab-x"):
        assert f"cannot touch '{path}': Read-only file system" in text, text
    assert "private\nh\n" in text  # a private /tmp and home (the folder's parents, if any, are in it)
    assert sorted(os.listdir(tmp_path)) == parent_before
    assert not Path("/etc/robotlab-x").exists() and not Path("/usr/robotlab-x").exists()
    assert not Path("/tmp/x").exists() or Path("/tmp/x").read_text() != "private\n"
    assert result.changes.proposed == ()


@needs_sandbox
async def test_the_home_folder_and_its_keys_are_not_there(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    monkeypatch.setenv("HOME", str(home))
    real_home = os.path.expanduser("~root") if os.geteuid() == 0 else os.path.expanduser("~")
    result = await sandbox().run(
        f'echo "home=$HOME"; ls -A ~; cat {home}/.ssh/id_ed25519; ls {real_home}/.ssh; ls /home', folder
    )
    text = result.output.text
    assert "home=/tmp/home\n" in text
    assert "PRIVATE KEY" not in text
    assert text.count("No such file or directory") >= 2, text


@needs_sandbox
async def test_the_environment_has_no_keys_or_tokens(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-1234567890abcdef")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_test1234567890")
    monkeypatch.setenv("ROBOTLAB_DB_PASSWORD", "hunter2hunter2")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result = await sandbox().run("env", folder, env={"PYTHONDONTWRITEBYTECODE": "1"})
    names = {line.split("=", 1)[0] for line in result.output.text.splitlines()}
    assert not any(v in result.output.text for v in ("sk-test", "ghp_test", "hunter2"))
    assert {"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE"} <= names
    assert not names & {"OPENAI_API_KEY", "GITHUB_TOKEN", "ROBOTLAB_DB_PASSWORD", "ROBOTLAB_HOME"}
    with pytest.raises(IsolationError, match="OPENAI_API_KEY looks like a secret"):
        safe_environment({"OPENAI_API_KEY": "sk-test-1234567890abcdef"})


@needs_sandbox
async def test_a_loopback_server_on_the_host_is_unreachable(folder: Path) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello from the host\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # reachable from here
        assert await reader.readline() == b"hello from the host\n"
        writer.close()
        probe = (
            "import socket\n"
            "try:\n"
            f"    print(socket.create_connection(('127.0.0.1', {port}), timeout=3).recv(100))\n"
            "except OSError as exc:\n"
            "    print('unreachable', type(exc).__name__)\n"
            "try:\n"
            "    socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
            "except OSError as exc:\n"
            "    print('no network', type(exc).__name__)\n"
        )
        Path(folder, "probe.py").write_text(probe)
        result = await sandbox().run("python3 probe.py", folder)
    finally:
        server.close()
        await server.wait_closed()
    assert "unreachable ConnectionRefusedError" in result.output.text, result.output.text
    assert "no network" in result.output.text
    assert "hello from the host" not in result.output.text


@needs_sandbox
async def test_memory_is_limited(folder: Path) -> None:
    result = await sandbox(max_memory_bytes=256 << 20).run(
        "python3 -c 'x = bytearray(1 << 30); print(len(x))'", folder
    )
    assert result.exit_code != 0
    assert "MemoryError" in result.output.text


@needs_sandbox
async def test_the_limits_reach_the_command_and_a_file_over_its_size_is_cut(folder: Path) -> None:
    # The chain sets them with the set-up shell's ulimit: processes, address space (KiB), file size
    # (512-byte blocks: 10,000 bytes is rounded up to 10,240).
    result = await sandbox(max_processes=77, max_memory_bytes=300 << 20, max_file_bytes=10_000).run(
        "grep -E 'Max (processes|address space|file size)' /proc/self/limits; "
        "head -c 50000 /dev/zero > big.bin; echo head=$?",
        folder,
    )
    text = result.output.text
    assert re.search(r"Max processes\s+77\s+77\s", text), text
    assert re.search(rf"Max address space\s+{300 << 20}\s+{300 << 20}\s", text), text
    assert re.search(r"Max file size\s+10240\s+10240\s", text), text
    assert "head=0" not in text  # killed by SIGXFSZ at the limit
    assert [(c.path, c.size) for c in result.changes.proposed] == [("big.bin", 10240)]
    assert not (folder / "big.bin").exists()


@needs_sandbox
async def test_output_streams_in_order_while_the_command_runs(folder: Path) -> None:
    seen: list[tuple[float, str]] = []
    result = await sandbox(keep_chars=100_000).run(
        "echo first; sleep 0.5; for i in $(seq 1 3000); do echo out $i; echo err $i >&2; done",
        folder,
        on_output=lambda chunk: seen.append((time.monotonic(), chunk)),
    )
    expected = "first\n" + "".join(f"out {i}\nerr {i}\n" for i in range(1, 3001))
    assert "".join(chunk for _, chunk in seen) == expected
    assert result.output.text == expected
    assert seen[0][1] == "first\n" and seen[-1][0] - seen[0][0] >= 0.4  # the first line came before the rest

    async def slow(chunk: str) -> None:  # an async callback is awaited, in order
        await asyncio.sleep(0)
        got.append(chunk)

    got: list[str] = []
    await sandbox().run("seq 1 500", folder, on_output=slow)
    assert "".join(got) == "".join(f"{i}\n" for i in range(1, 501))


@needs_sandbox
async def test_bad_input_is_refused_with_the_fix(folder: Path) -> None:
    box = sandbox()
    with pytest.raises(IsolationError, match="the command is empty"):
        await box.run("  ", folder)
    with pytest.raises(IsolationError, match="outside the folder"):
        await box.run("true", folder, cwd="../..")
    with pytest.raises(IsolationError, match="does not exist"):
        await box.run("true", folder / "missing")
    with pytest.raises(IsolationError, match="plain folder-relative path"):
        await box.run("true", folder, pending={"../escape": b"x"})
    with pytest.raises(IsolationError, match="timeout_s must be a positive"):
        Limits(timeout_s=0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(folder / "src"))
        for home_or_above in (folder / "src", folder):
            with pytest.raises(
                IsolationError, match="is your home folder or holds it.*open a project folder"
            ):
                await box.run("true", home_or_above)
    with pytest.raises(IsolationError, match="could not start the command: bwrap: Can't chdir"):
        await box.run("true", folder, cwd="no-such-dir")
    result = await box.run("pwd", folder, cwd="src")
    assert result.output.text == f"{folder}/src\n"


def test_a_missing_bwrap_is_refused_with_what_to_install(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-bwrap")
    with pytest.raises(
        SandboxUnavailable, match=r"bubblewrap .* is not installed; install bubblewrap \(Debian"
    ):
        check(missing)
    with pytest.raises(SandboxUnavailable, match="sudo apt-get install bubblewrap"):
        sandbox_for_platform(bwrap=missing)


async def test_a_missing_bwrap_refuses_a_command_too(tmp_path: Path) -> None:
    box = BubblewrapSandbox(bwrap=str(tmp_path / "no-such-bwrap"))
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        await box.run("true", tmp_path)


def test_a_bwrap_that_cannot_make_namespaces_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    if shutil.which("unshare") is None:
        pytest.skip("util-linux's unshare is missing")
    with pytest.raises(
        SandboxUnavailable, match="No permissions to create new namespace.*unprivileged user namespaces"
    ):
        check(str(fake))


def test_the_output_collector_keeps_head_and_tail_and_whole_characters() -> None:
    collector = OutputCollector(keep_chars=4)
    data = "héllo wörld, ünïcode".encode()
    texts = [collector.feed(data[i : i + 1]) for i in range(len(data))]
    texts.append(collector.feed(b"", final=True))
    assert "".join(texts) == "héllo wörld, ünïcode"
    kept = collector.result()
    assert (kept.head, kept.tail, kept.left_out) == ("héll", "code", 12)
    assert kept.text == "héll\n[… 12 characters of output left out …]\ncode"
    short = OutputCollector(keep_chars=100)
    short.feed(b"\xff ok", final=True)
    assert short.result().text == "\ufffd ok"


def test_other_systems_are_refused_until_their_sandbox_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    for platform in ("darwin", "win32"):
        monkeypatch.setattr("sys.platform", platform)
        with pytest.raises(
            SandboxUnavailable, match=rf"No sandbox on this system \({platform}\).*Linux's bubblewrap"
        ):
            sandbox_for_platform()
        with pytest.raises(SandboxUnavailable, match=rf"\({platform}\)"):
            check()


@needs_sandbox
async def test_whatever_the_command_does_the_folder_stays_as_it_was(folder: Path) -> None:
    before = snapshot(folder)
    result = await sandbox().run(
        "find . -exec touch {} +; chmod -R 000 src; rm -rf -- * .gitignore; echo gone > README.md", folder
    )
    assert result.exit_code == 0, result.output.text
    assert snapshot(folder) == before
    kinds = {c.path: c.kind for c in (*result.changes.proposed, *result.changes.ignored)}
    # The command has no capabilities: like any user's, its rm cannot enter the folder it made unreadable.
    assert kinds == {
        ".gitignore": "deleted", "README.md": "changed", "docs/a.md": "deleted", "docs/b.md": "deleted",
        "old.txt": "deleted",
    }  # fmt: skip


@needs_sandbox
async def test_the_command_has_no_capabilities_to_undo_its_mounts(folder: Path) -> None:
    """bwrap runs as its namespace's root: without ``--cap-drop ALL`` the command kept a root's powers over its
    mounts, unmounted the overlay and remounted the system's directories writable (a folder under /opt was
    then written for real, and /usr, /etc and /opt could be written on the host)."""
    before = snapshot(folder)
    box = sandbox()
    result = await box.run(
        'grep CapEff /proc/self/status; d="$PWD"; cd /; umount -l "$d" && echo UNMOUNTED; '
        "mount -o remount,bind,rw /usr && echo REMOUNTED; unshare -U true && echo NESTED; "
        'echo written > "$d/README.md"; cat "$d/README.md"',
        folder,
    )
    text = result.output.text
    assert re.search(r"^CapEff:\s*0+$", text, re.MULTILINE), text
    assert "UNMOUNTED" not in text and "REMOUNTED" not in text, text
    if tuple(int(n) for n in re.findall(r"\d+", box.capabilities.version)[:2]) >= (0, 8):
        assert "NESTED" not in text, text  # --disable-userns
    assert "written\n" in text
    assert snapshot(folder) == before
    assert [(c.path, c.kind) for c in result.changes.proposed] == [("README.md", "changed")]


@needs_sandbox
async def test_commands_on_one_folder_at_the_same_time_keep_their_own_writes(folder: Path) -> None:
    box = sandbox()
    results = await asyncio.gather(
        *(
            box.run(f"echo {i} >> README.md; cat README.md", folder, pending={"n.txt": f"{i}\n".encode()})
            for i in range(3)
        )
    )
    for i, result in enumerate(results):
        assert result.output.text == f"# readme\n{i}\n"
        assert [(c.path, c.text) for c in result.changes.proposed] == [("README.md", f"# readme\n{i}\n")]
    assert (folder / "README.md").read_text() == "# readme\n"


def test_the_pending_layer_holds_files_folders_and_whiteouts(tmp_path: Path) -> None:
    from workspace.isolation.layers import write_pending_layer

    layer = tmp_path / "pending"
    layer.mkdir()
    write_pending_layer(layer, {"src/deep/a.py": b"a\n", "src/b.py": b"b" * 70_000, "gone.txt": None, "top": b""})
    assert (layer / "src" / "deep" / "a.py").read_bytes() == b"a\n"
    assert (layer / "src" / "b.py").read_bytes() == b"b" * 70_000
    assert (layer / "top").read_bytes() == b""
    gone = os.lstat(layer / "gone.txt")
    assert stat.S_ISCHR(gone.st_mode) and gone.st_rdev == 0
    for clash in ({"a": b"file", "a/b": b"below it"}, {"a": None, "a/b": b"below a deletion"}):
        fresh = tmp_path / f"clash{len(os.listdir(tmp_path))}"
        fresh.mkdir()
        with pytest.raises(IsolationError, match="'a/b' and its parent folder conflict: one is a file"):
            write_pending_layer(fresh, clash)


@needs_sandbox
async def test_a_command_never_sees_what_the_one_before_it_wrote_or_had_pending(folder: Path) -> None:
    from workspace.isolation import bubblewrap

    box = sandbox()
    first = await box.run(
        "echo made > made.txt; mkdir -p out/deep && echo x > out/deep/x; rm README.md; cat pending.txt",
        folder,
        pending={"pending.txt": b"pending\n", "docs/a.md": None},
    )
    assert first.output.text == "pending\n"
    assert sorted(c.path for c in first.changes.proposed) == ["README.md", "made.txt", "out/deep/x"]
    spare = list(bubblewrap._spare_runs)
    assert spare and all(not any(os.scandir(run / "upper")) for run in spare)  # kept for the next, emptied
    second = await box.run(
        "ls; test -e made.txt || echo no-made; test -e pending.txt || echo no-pending; cat docs/a.md", folder
    )
    assert "no-made\nno-pending\na\n" in second.output.text and "README.md" in second.output.text
    assert second.changes.proposed == () and second.changes.ignored == ()
    # at the same time: each command its own run directory, and only a few are kept
    results = await asyncio.gather(*(box.run(f"echo {i} > mine.txt", folder) for i in range(8)))
    assert [r.changes.proposed[0].content for r in results] == [f"{i}\n".encode() for i in range(8)]
    assert len(bubblewrap._spare_runs) <= bubblewrap.MAX_SPARE_RUNS
    # a command that was stopped leaves no run directory behind: it is removed, not kept
    before = set(bubblewrap._spare_runs)
    running = await box.start("echo started > s.txt; sleep 30", folder)
    await asyncio.sleep(0.3)
    run = running._run  # type: ignore[attr-defined]
    running.stop()
    assert (await running.result()).stopped_by == "stop"
    assert not run.exists() and set(bubblewrap._spare_runs) <= before


def test_a_written_file_too_large_to_propose_is_never_read_into_memory(tmp_path: Path) -> None:
    """A command that appends a byte to a huge file: its change is "too large" (or ignored) by its size, and
    its content is compared a block at a time when the sizes are equal; before, the whole old file was read
    first (a 400 MiB file took the app from 33 to 436 MiB)."""
    import tracemalloc

    from workspace.isolation.layers import FolderView, Written, load_change

    folder, upper = tmp_path / "folder", tmp_path / "upper"
    folder.mkdir()
    upper.mkdir()
    big = 64 << 20
    for where, last in ((folder, b"a"), (upper, b"b")):
        with open(where / "data.bin", "wb") as handle:  # sparse: no disk taken
            handle.truncate(big - 1)
            handle.seek(big - 1)
            handle.write(last)
    same = upper / "same.bin"
    shutil.copyfile(folder / "data.bin", same)
    view = FolderView(folder, {})
    tracemalloc.start()
    try:
        changed = load_change(Written("data.bin", source=str(upper / "data.bin"), size=big), view,
                              max_change_bytes=1 << 20, content=True)
        ignored = load_change(Written("data.bin", source=str(upper / "data.bin"), size=big), view,
                              max_change_bytes=1 << 20, content=False)
        touched = load_change(Written("data.bin", source=str(same), size=big), view, max_change_bytes=1 << 20,
                              content=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert changed is not None and changed.kind == "changed" and changed.too_large and changed.size == big
    assert ignored is not None and ignored.kind == "changed" and not ignored.too_large
    assert touched is None  # the same bytes: no change
    assert peak < 8 << 20, peak  # a few blocks, never the file
