"""Linux's sandbox: bubblewrap (``bwrap``) over an overlay of the folder, in user namespaces.

One command runs through this chain (each step ``exec``\\ s the next, so stopping the first
process's group stops it all):

1. ``unshare --user --map-root-user --mount --pid --fork``: a user namespace where the
   caller is root over nothing but itself, with its own mounts and process numbers;
2. ``sh -c SETUP``: sets the process count (``RLIMIT_NPROC``), memory (``RLIMIT_AS``) and file size
   (``RLIMIT_FSIZE``) limits (the shell's ``ulimit``: no process of its own), caps the namespace's
   process numbers (``kernel.pid_max``, per pid namespace since Linux 6.14: the process limit that
   holds even for the host's root, whom ``RLIMIT_NPROC`` spares), and mounts overlayfs: the folder
   (bound to a plain path first when its own holds a character the mount options cannot: ``:``, ``,``
   or a backslash), the pending-changes layer, and an empty upper
   directory for the command's writes (overlayfs never writes to its lower layers). bubblewrap 0.8,
   Debian 12's, has no overlay options of its own: ``--overlay`` came with 0.9;
3. ``bwrap``: a second user namespace, new pid, network (loopback only: the host's loopback servers
   are unreachable), IPC, UTS and cgroup namespaces; the system's directories read-only, a private
   ``/tmp`` and home, no host home at all, the overlay at the folder's own path, everything else
   read-only; ``--die-with-parent`` and ``--new-session``. The command gets no capabilities
   (``--cap-drop ALL``): bwrap runs as the first namespace's root, and would otherwise hand the command
   a root's powers over its mounts (unmount the overlay, remount the system's directories writable).
   With bubblewrap 0.8 or newer it cannot make user namespaces of its own either (``--disable-userns``);
4. ``/bin/sh -c COMMAND`` in the folder, stderr merged into stdout, with a reduced environment
   (:func:`safe_environment`).

After the command the upper directory holds exactly what it wrote: read back as changes
(:mod:`workspace.isolation.layers`), split by the folder's ``.gitignore`` (:mod:`workspace.isolation.ignore`).
The user's folder is a read-only lower layer: nothing the command does reaches it.

This module checks the machine and starts the chain; the running command (its output, limits, stop and
writes) is :mod:`workspace.isolation.bubblewrap_command`, its run directory (the layers, kept for the next
command) :mod:`workspace.isolation.bubblewrap_runs`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workspace.isolation.base import (
    CommandResult,
    Grant,
    IsolationError,
    Limits,
    OutputCallback,
    PendingChanges,
    SandboxUnavailable,
)
from workspace.isolation.bubblewrap_command import STOP_GRACE_S as STOP_GRACE_S
from workspace.isolation.bubblewrap_command import BubblewrapCommand
from workspace.isolation.bubblewrap_runs import MAX_SPARE_RUNS as MAX_SPARE_RUNS
from workspace.isolation.bubblewrap_runs import RUN_FOLDERS as RUN_FOLDERS
from workspace.isolation.bubblewrap_runs import _spare_runs as _spare_runs
from workspace.isolation.bubblewrap_runs import remove_tree, take_run
from workspace.secrets import is_secret_name, keep_environment_private
from workspace.subprocess_fix import install as _install_subprocess_fix

_install_subprocess_fix()  # a process whose start is cancelled must not hang (see the module)

#: Environment variables a command keeps from the caller's environment (when set there).
SAFE_VARIABLES = ("LANG", "LANGUAGE", "TERM", "TZ", "COLORTERM", "NO_COLOR", "FORCE_COLOR")
#: The command's PATH: the system's directories (the host's PATH may name folders the sandbox hides).
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The command's home: an empty folder in its private /tmp.
SANDBOX_HOME = "/tmp/home"
#: The system's directories the sandbox shows, read-only (those that exist; a symbolic link, as
#: ``/bin`` -> ``usr/bin`` on merged-/usr systems, is made the same link).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/gnu")
#: The smallest ``kernel.pid_max`` Linux accepts.
MIN_PID_MAX = 301

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install "
    "bubblewrap; Arch: sudo pacman -S bubblewrap)"
)
USERNS_HINT = (
    "enable unprivileged user namespaces (sudo sysctl kernel.unprivileged_userns_clone=1; on Ubuntu "
    "24.04 and later also sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor "
    "profile that allows bwrap and unshare)"
)

_SETUP = r"""
set -e
run="$1"; pid_max="$2"; folder="$3"; nproc="$4"; memory_kb="$5"; file_blocks="$6"; shift 6
ulimit -u "$nproc" 2>/dev/null || ulimit -p "$nproc"  # bash's -u, dash's -p
if [ "$memory_kb" != - ]; then ulimit -v "$memory_kb"; fi
if [ "$file_blocks" != - ]; then ulimit -f "$file_blocks"; fi
if [ "$pid_max" != 0 ]; then
  if echo "$pid_max" > /proc/sys/kernel/pid_max 2>/dev/null; then :; else echo "robotlab-sandbox: no pid_max" >&2; fi
fi
lower="$folder"
case "$folder" in
  *[:,\\]*) mount -n -i --bind "$folder" "$run/real"; lower="$run/real" ;;
esac
mount -n -i -t overlay robotlab-sandbox \
  -o "userxattr,lowerdir=$run/pending:$lower,upperdir=$run/upper,workdir=$run/work" "$run/merged"
exec "$@"
"""


def safe_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command gets: locale and terminal variables of this process, a system
    PATH, an empty home, and ``extra`` (which may not hold secrets: no keys, no tokens). Ours, which holds them, is
    made unreadable to the programs this process starts (:func:`workspace.secrets.keep_environment_private`: a
    command run outside the sandbox could read it as ``/proc/$PPID/environ``)."""
    keep_environment_private()
    env = {name: os.environ[name] for name in SAFE_VARIABLES if name in os.environ}
    env.update({name: value for name, value in os.environ.items() if name.startswith("LC_")})
    env.update(
        PATH=SANDBOX_PATH,
        HOME=SANDBOX_HOME,
        TMPDIR="/tmp",
        USER="sandbox",
        LOGNAME="sandbox",
        SHELL="/bin/sh",
    )
    for name, value in (extra or {}).items():
        if is_secret_name(name, value):
            raise IsolationError(
                f"{name} looks like a secret: a sandboxed command gets no keys or tokens; "
                "leave it out of the command's environment"
            )
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise IsolationError(f"{name!r} is not a valid environment variable name or value")
        env[name] = value
    return env


@dataclass(frozen=True)
class Capabilities:
    """What this machine's sandbox can do (from :func:`check`)."""

    bwrap: str
    version: str
    #: How the process limit holds: "pid namespace" (kernel.pid_max per namespace and RLIMIT_NPROC),
    #: "rlimit" (RLIMIT_NPROC alone: not enforced for the host's root).
    process_limit: Literal["pid namespace", "rlimit"]


_checked: dict[str, Capabilities] = {}


_tools: dict[str, str] = {}


def _tool(name: str, package: str) -> str:
    """The path of a command the chain runs, looked up once per process."""
    if name in _tools:
        return _tools[name]
    found = shutil.which(name, path=os.environ.get("PATH", "") + os.pathsep + SANDBOX_PATH)
    if not found:
        raise SandboxUnavailable(f"No sandbox: the {name} command is missing; install {package}.")
    _tools[name] = found
    return found


def check(bwrap: str | None = None) -> Capabilities:
    """Whether a sandbox can be made here (once per bwrap path): raises :class:`SandboxUnavailable`
    saying why and what to install or enable."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            f"No sandbox on this system ({sys.platform}): commands run only in Linux's bubblewrap "
            "sandbox for now (macOS's Seatbelt and Windows' AppContainer are not supported yet)."
        )
    path = bwrap or shutil.which("bwrap") or "bwrap"
    if path in _checked:
        return _checked[path]
    resolved = shutil.which(path)
    if not resolved:
        raise SandboxUnavailable(f"No sandbox: bubblewrap ({path}) is not installed; {INSTALL_HINT}.")
    for name in ("unshare", "mount"):
        _tool(name, "util-linux (sudo apt-get install util-linux)")
    import subprocess

    try:
        version = subprocess.run(
            [resolved, "--version"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(
            f"No sandbox: bubblewrap ({resolved}) does not run: {exc}; {INSTALL_HINT}."
        ) from exc
    caps = Capabilities(bwrap=resolved, version=version or "bubblewrap", process_limit="rlimit")
    from concurrent.futures import ThreadPoolExecutor

    # The probe runs a command in a loop of its own, in a thread: check() may be called from a loop.
    with ThreadPoolExecutor(1) as pool:
        caps = pool.submit(asyncio.run, _probe(caps)).result()
    _checked[path] = caps
    return caps


async def _probe(caps: Capabilities) -> Capabilities:
    """Runs one command in a sandbox: the namespaces, the overlay, a pending file and a pending
    deletion; says whether the per-namespace process limit holds."""
    with tempfile.TemporaryDirectory(prefix="robotlab-sandbox-check-") as tmp:
        folder = Path(tmp, "folder")
        folder.mkdir()
        (folder / "probe").write_text("lower\n")
        (folder / "probe-gone").write_text("gone\n")
        sandbox = BubblewrapSandbox(bwrap=caps.bwrap, limits=Limits(timeout_s=20), _caps=caps)
        try:
            result = await sandbox.run(
                "cat probe pending && ! test -e probe-gone",
                folder,
                pending={"pending": b"upper\n", "probe-gone": None},
            )
        except IsolationError as exc:
            raise SandboxUnavailable(f"No sandbox: {exc}; {USERNS_HINT}.") from exc
    if result.exit_code != 0 or "lower\nupper\n" not in result.output.text:
        raise SandboxUnavailable(
            f"No sandbox: the overlay of the folder did not work (exit {result.exit_code}: "
            f"{result.output.text.strip()[:300]}); Linux 5.11 or newer mounts overlayfs in a user namespace."
        )
    if any("pid_max" in note for note in result.notes):
        return caps
    return Capabilities(bwrap=caps.bwrap, version=caps.version, process_limit="pid namespace")


def _disables_userns(version: str) -> bool:
    """Whether this bubblewrap (its ``--version``: "bubblewrap 0.8.0") has ``--disable-userns`` (0.8 or newer)."""
    numbers = [int(part) for part in version.rpartition(" ")[2].split(".")[:2] if part.isdigit()]
    return len(numbers) == 2 and (numbers[0], numbers[1]) >= (0, 8)


@functools.cache
def _system_binds() -> tuple[str, ...]:
    """bwrap's arguments for the system's directories (they do not change while RobotLab runs)."""
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        if os.path.islink(directory):
            args += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            args += ["--ro-bind", directory, directory]
    return tuple(args)



class BubblewrapSandbox:
    """Runs shell commands on a folder in bubblewrap: see the module's description."""

    def __init__(
        self, *, bwrap: str | None = None, limits: Limits | None = None, _caps: Capabilities | None = None
    ) -> None:
        self.bwrap = bwrap
        self.limits = limits or Limits()
        self._caps = _caps

    @property
    def capabilities(self) -> Capabilities:
        if self._caps is None:
            self._caps = check(self.bwrap)
        return self._caps

    async def start(
        self,
        command: str,
        folder: Path,
        *,
        pending: PendingChanges | None = None,
        on_output: OutputCallback | None = None,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        grant: Grant | None = None,
    ) -> BubblewrapCommand:
        """Starts ``command`` (run by ``/bin/sh -c``) on ``folder`` seen through ``pending`` (``grant``: only what
        it names of the folder, and the network only when it says so: :mod:`workspace.isolation.grants`)."""
        if self._caps is None:
            self._caps = await asyncio.to_thread(check, self.bwrap)
        if not isinstance(command, str) or not command.strip():
            raise IsolationError("the command is empty: give a shell command such as 'pytest -q'")
        if "\0" in command:
            raise IsolationError("the command holds a NUL character, which no shell command can")
        folder = Path(folder).resolve()
        if not folder.is_dir():
            raise IsolationError(
                f"the folder {folder} does not exist or is not a folder; open an existing folder"
            )
        home = Path.home().resolve()
        if folder == home or folder in home.parents:
            raise IsolationError(
                f"the folder {folder} is your home folder or holds it: a command would see ~/.ssh, your "
                "keyring and your settings; open a project folder instead"
            )
        timeout = self.limits.timeout_s if timeout_s is None else timeout_s
        if not timeout > 0:
            raise IsolationError(f"timeout_s must be a positive number of seconds, not {timeout!r}")
        environment = safe_environment(env)
        workdir = str(folder)
        if cwd:
            inside = (folder / cwd).resolve()
            if inside != folder and folder not in inside.parents:
                raise IsolationError(
                    f"the working folder {cwd!r} is outside the folder; give a path inside it"
                )
            workdir = str(inside)
        run = take_run()
        try:
            if pending:
                from workspace.isolation.layers import write_pending_layer

                await asyncio.to_thread(write_pending_layer, run / "pending", pending)
            if grant is not None:
                from workspace.isolation.grants import make_writable_dirs

                await asyncio.to_thread(make_writable_dirs, run / "pending", folder, grant)
            status_read, status_write = os.pipe()
            argv = self._argv(run, folder, workdir, command, status_write, grant)
            try:
                process = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env=environment,
                    cwd="/",
                    start_new_session=True,
                    pass_fds=(status_write,),
                )
            except BaseException:
                os.close(status_read)
                raise
            finally:
                os.close(status_write)
        except BaseException:
            remove_tree(run)
            raise
        return BubblewrapCommand(
            command=command,
            process=process,
            run=run,
            folder=folder,
            pending=dict(pending or {}),
            limits=self.limits,
            timeout_s=timeout,
            on_output=on_output,
            status_fd=status_read,
        )

    async def run(
        self,
        command: str,
        folder: Path,
        *,
        pending: PendingChanges | None = None,
        on_output: OutputCallback | None = None,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        grant: Grant | None = None,
    ) -> CommandResult:
        """Runs ``command`` to its end (see :meth:`start`); cancelling stops it."""
        running = await self.start(
            command, folder, pending=pending, on_output=on_output, timeout_s=timeout_s, env=env, cwd=cwd, grant=grant
        )
        return await running.result()

    def _argv(self, run: Path, folder: Path, workdir: str, command: str, status_fd: int,
              grant: Grant | None = None) -> list[str]:
        from workspace.isolation.grants import folder_binds

        limits = self.limits
        caps = self.capabilities
        # The shell's ulimit takes memory in KiB and file sizes in 512-byte blocks (POSIX): rounded up.
        memory_kb = "-" if limits.max_memory_bytes is None else str(-(-limits.max_memory_bytes // 1024))
        file_blocks = "-" if limits.max_file_bytes is None else str(-(-limits.max_file_bytes // 512))
        # The namespace's own processes (unshare's child, bwrap and its reaper) come on top.
        pid_max = max(MIN_PID_MAX, limits.max_processes + 8)
        bwrap = [
            caps.bwrap,
            "--unshare-user", "--unshare-ipc", "--unshare-pid",
            *(() if grant is not None and grant.network else ("--unshare-net",)), "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session",
            # bwrap runs as this namespace's root: without these the command would keep a root's powers over
            # its mounts (unmount the overlay and write the folder beneath, remount /usr or /etc writable).
            "--cap-drop", "ALL", *(("--disable-userns",) if _disables_userns(caps.version) else ()),
            "--hostname", "sandbox",
            "--json-status-fd", str(status_fd),
            *_system_binds(),
            "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--dir", SANDBOX_HOME,
            "--dir", "/var", "--tmpfs", "/var/tmp",
            *folder_binds(grant, run / "merged", folder),
            "--remount-ro", "/",
            "--chdir", workdir,
            "--", "/bin/sh", "-c", 'exec 2>&1; exec /bin/sh -c "$0"', command,
        ]  # fmt: skip
        return [
            _tool("unshare", "util-linux"), "--user", "--map-root-user", "--mount", "--pid", "--fork",
            "/bin/sh", "-c", _SETUP, "robotlab-sandbox-setup", str(run), str(pid_max), str(folder),
            str(limits.max_processes), memory_kb, file_blocks,
            *bwrap,
        ]  # fmt: skip

