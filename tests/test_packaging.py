"""Packaging: what a person who is not a Python developer installs.

Fast (no mark): the sdist and the wheel, built from a copy of the source tree, carry every
shipped resource and the console script; the application icon is rendered at every size.

Slow (``@pytest.mark.slow``; the test command and CI run them):
- the wheel installed into a new virtual environment that sees only the wheel's declared
  dependencies (no source tree, no dev tools) answers ``robotlab --version`` and starts offscreen;
- ``scripts/package.sh`` builds the PyInstaller bundle, its .tar.gz and the .deb from scratch
  (nothing cached: PyInstaller's cache goes to a temporary folder); the bundle starts offscreen
  with no Python on its environment, keeps user data where the platform expects it, reaches a
  model through litellm, serves and calls MCP tools, and carries what is loaded dynamically;
  the .deb, unpacked with ``dpkg -x``, has a valid desktop entry and AppStream metadata
  (desktop-file-validate, appstreamcli validate --no-net), icons and the launcher.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
APP_ID = "io.github.robotlab.Workspace"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
PACKAGES = ("workspace", "ui", "resources")
SLOW_TIMEOUT = 900  # a cold PyInstaller build takes about 1.5 minutes on 2 cores

sys.path.insert(0, str(ROOT / "packaging"))
import make_icons  # noqa: E402


def _ignored(name: str) -> bool:
    return name == "__pycache__" or name.endswith((".pyc", ".pyo"))


def _source_files(package: str) -> set[str]:
    """Files of a package in the source tree, as wheel paths ("resources/robots/assistant.md")."""
    base = ROOT / package
    return {
        p.relative_to(ROOT).as_posix()
        for p in base.rglob("*")
        if p.is_file() and not any(_ignored(part) for part in p.relative_to(ROOT).parts)
    }


def _run(cmd: list[str], *, timeout: float = 120, **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **options)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def _build_requirements_met() -> bool:
    """Whether the build-system requirements are installed here (then the build needs no index)."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement

    for spec in PYPROJECT["build-system"]["requires"]:
        req = Requirement(spec)
        try:
            if not req.specifier.contains(version(req.name), prereleases=True):
                return False
        except PackageNotFoundError:
            return False
    return True


# --------------------------------------------------------------------------------------------
# The sdist and the wheel


@dataclass(frozen=True)
class Dists:
    wheel: Path
    sdist: Path
    source: Path


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """sdist, then the wheel from the sdist (python -m build), from a copy of the source tree.

    A copy keeps concurrent runs apart and the work tree free of build/ and *.egg-info. A stale
    bytecode file is planted in resources/ to see whether package data lets it through. Offline
    (--no-isolation) when the build requirements (setuptools>=77, wheel) are installed in this
    environment, else in build's isolated environment (fetched from the package index).
    """
    src = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE", "LICENSE.txt", "MANIFEST.in", "setup.cfg"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=lambda _d, names: [n for n in names if _ignored(n)])
    (src / "resources" / "__pycache__").mkdir(exist_ok=True)
    (src / "resources" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"stale")
    out = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "build", "--outdir", str(out), str(src)]
    if _build_requirements_met():
        cmd.insert(3, "--no-isolation")
    result = _run(cmd, timeout=300)
    assert result.returncode == 0, f"python -m build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    wheels = list(out.glob("*.whl"))
    sdists = list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return Dists(wheel=wheels[0], sdist=sdists[0], source=src)


def test_the_wheel_carries_every_resource_and_module(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
        dist_info = f"robotlab_workspace-{VERSION}.dist-info"
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
    for package in PACKAGES:
        missing = _source_files(package) - names
        assert not missing, f"not in the wheel: {sorted(missing)[:20]}"
    # What the app loads at run time through importlib.resources.
    for folder in ("robots", "styles", "icons", "networks", "mcp"):
        assert any(n.startswith(f"resources/{folder}/") for n in names), f"resources/{folder} is empty in the wheel"
    assert "resources/icons/app.svg" in names
    assert {f"resources/icons/app-{s}.png" for s in ICON_SIZES} <= names
    assert "robotlab = ui.main:main" in entry_points
    assert "Requires-Dist: PySide6-Essentials" in metadata
    assert not any(n.startswith(("tests/", "packaging/", "bench/", "scripts/", "docs/")) for n in names)


def test_the_sdist_carries_every_resource_and_module(dists: Dists) -> None:
    prefix = f"robotlab_workspace-{VERSION}/"
    with tarfile.open(dists.sdist) as sdist:
        names = {m.name.removeprefix(prefix) for m in sdist.getmembers() if m.isfile()}
    for package in PACKAGES:
        missing = _source_files(package) - names
        assert not missing, f"not in the sdist: {sorted(missing)[:20]}"
    assert {"pyproject.toml", "README.md"} <= names


def test_the_wheel_carries_no_bytecode(dists: Dists) -> None:
    if "exclude-package-data" not in PYPROJECT.get("tool", {}).get("setuptools", {}):
        pytest.xfail("pyproject.toml lets __pycache__ through resources' package data "
                     "(needs [tool.setuptools.exclude-package-data] '*' = ['__pycache__/*', '*.pyc'])")
    with zipfile.ZipFile(dists.wheel) as wheel:
        stale = [n for n in wheel.namelist() if "__pycache__" in n or n.endswith(".pyc")]
    assert not stale, stale


def test_the_application_icon_is_rendered_at_every_size() -> None:
    assert make_icons.SIZES == ICON_SIZES
    assert make_icons.problems() == []
    for size in ICON_SIZES:
        assert make_icons.png_size(ROOT / "resources" / "icons" / f"app-{size}.png") == (size, size)


def test_the_desktop_files_name_the_same_application() -> None:
    desktop = (ROOT / "packaging" / "linux" / f"{APP_ID}.desktop").read_text(encoding="utf-8")
    metainfo = (ROOT / "packaging" / "linux" / f"{APP_ID}.metainfo.xml").read_text(encoding="utf-8")
    assert f"Icon={APP_ID}\n" in desktop
    assert "Exec=robotlab\n" in desktop
    assert f"<id>{APP_ID}</id>" in metainfo
    assert f'<launchable type="desktop-id">{APP_ID}.desktop</launchable>' in metainfo
    assert "/docs/screenshot.png</image>" in metainfo
    assert f'<release version="{VERSION}"' in metainfo


# --------------------------------------------------------------------------------------------
# The wheel in a new virtual environment


def _dependency_closure(requirements: list[str]) -> dict[str, Any]:
    """The installed distributions that ``requirements`` need, following markers and extras."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, Any] = {}
    done: set[tuple[str, str]] = set()
    stack = [(Requirement(r), "") for r in requirements]
    while stack:
        req, extra = stack.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            pytest.fail(f"{req} (a dependency of the wheel) is not installed in {sys.prefix}")
        found[name] = dist
        for wanted in ("", *req.extras):
            if (name, wanted) not in done:
                done.add((name, wanted))
                stack.extend((Requirement(r), wanted) for r in dist.requires or [])
    return found


def _expose_only(requirements: list[str], shadow: Path) -> list[str]:
    """Symlink the top-level modules of the dependency closure into ``shadow``."""
    shadow.mkdir()
    dists = _dependency_closure(requirements)
    for dist in dists.values():
        files = dist.files
        assert files, f"{dist.metadata['Name']} has no RECORD: cannot tell its files"
        for top in {f.parts[0] for f in files if f.parts and f.parts[0] not in ("..", "__pycache__")}:
            target = Path(dist.locate_file(top))
            link = shadow / top
            if target.exists() and not link.exists():
                link.symlink_to(target)
    return sorted(dists)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_installs_into_a_new_venv_and_starts(dists: Dists, tmp_path: Path) -> None:
    """pip install of the wheel into a venv with only the wheel's declared dependencies.

    The dependencies come from this environment (symlinked, only those the wheel's
    Requires-Dist reaches, so a dependency missing from pyproject.toml shows up as an import
    error), the app itself from the installed wheel, run outside the source tree.
    """
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    vpy = venv / "bin" / "python"
    result = _run([sys.executable, "-m", "pip", "--python", str(vpy), "install", "--no-deps", "--no-index",
                   "--no-cache-dir", "--disable-pip-version-check", "-q", str(dists.wheel)], timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    with zipfile.ZipFile(dists.wheel) as wheel:
        metadata = wheel.read(f"robotlab_workspace-{VERSION}.dist-info/METADATA").decode()
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    exposed = _expose_only(requires, tmp_path / "deps")
    assert {"pyside6-essentials", "litellm", "mcp", "qasync"} <= set(exposed)
    assert "pytest" not in exposed and "robotlab-workspace" not in exposed
    site = Path(_run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "robotlab-test-deps.pth").write_text(f"{tmp_path / 'deps'}\n")

    robotlab = str(venv / "bin" / "robotlab")
    cwd = tmp_path  # not the source tree
    env = _clean_env(QT_QPA_PLATFORM="offscreen")
    hidden = _run([str(vpy), "-c", "import pytest"], cwd=cwd, env=env)
    assert hidden.returncode != 0, "the new venv sees the development environment's packages"
    result = _run([robotlab, "--version"], cwd=cwd, env=env)
    assert result.returncode == 0 and result.stdout.strip() == f"robotlab-workspace {VERSION}", result.stderr
    where = _run([str(vpy), "-c", "import workspace, ui, resources; print(workspace.__file__, ui.__file__, "
                  "resources.__file__)"], cwd=cwd, env=env)
    assert all(Path(p).resolve().is_relative_to(venv.resolve()) for p in where.stdout.split()), where.stdout
    paths = _run([robotlab, "paths"], cwd=cwd, env=env)
    resources = next(line.split(None, 1)[1] for line in paths.stdout.splitlines() if line.startswith("resources"))
    assert Path(resources).resolve().is_relative_to(venv.resolve()), paths.stdout
    robots = _run([robotlab, "robots", "list"], cwd=cwd, env=env)
    assert robots.returncode == 0 and "assistant" in robots.stdout, robots.stdout + robots.stderr
    smoke = _run([robotlab, "--offscreen-smoke"], cwd=cwd, env=env, timeout=60)
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "main window shown" in smoke.stdout


# --------------------------------------------------------------------------------------------
# The bundle, its archive and the .deb


@dataclass(frozen=True)
class Packaged:
    bundle: Path
    archive: Path
    deb: Path
    log: str

    @property
    def exe(self) -> Path:
        return self.bundle / "robotlab"


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Packaged]:
    """scripts/package.sh from scratch: the bundle, its smoke start, the archive, the .deb and
    its validation (which installs desktop-file-utils and appstream when missing)."""
    if not sys.platform.startswith("linux") or shutil.which("dpkg-deb") is None:
        pytest.skip("the bundle and .deb tests need Linux with dpkg")
    base = tmp_path_factory.mktemp("package")
    env = _clean_env(
        OUT=str(base / "out"), WORK=str(base / "work"), VENV=sys.prefix,
        STEPS="bundle smoke archive deb validate",
        DEB_COMPRESSION="zstd",  # the package's contents are what is tested; xz takes a minute longer
        PYINSTALLER_CONFIG_DIR=str(base / "pyinstaller-cache"),  # nothing cached between runs
    )
    result = _run(["bash", str(ROOT / "scripts" / "package.sh")], cwd=ROOT, env=env, timeout=SLOW_TIMEOUT - 60)
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"scripts/package.sh failed:\n{log[-6000:]}"
    yield Packaged(
        bundle=base / "work" / "dist" / "robotlab",
        archive=base / "out" / f"robotlab-workspace-{VERSION}-linux-{os.uname().machine}.tar.gz",
        deb=next((base / "out").glob("robotlab-workspace_*.deb")),
        log=log,
    )


def _bare_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment with no Python in it: no PYTHON* variables, no venv or pyenv on PATH."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "QT_QPA_PLATFORM": "offscreen",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
    env.update(extra)
    return env


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
def test_the_bundle_starts_offscreen_without_python(packaged: Packaged, tmp_path: Path) -> None:
    env = _bare_env(tmp_path, ROBOTLAB_HOME=str(tmp_path / "robotlab"))
    result = _run([str(packaged.exe), "--offscreen-smoke"], cwd=tmp_path, env=env, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "main window shown" in result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    version = _run([str(packaged.exe), "--version"], cwd=tmp_path, env=env)
    assert version.stdout.strip() == f"robotlab-workspace {VERSION}"
    assert (packaged.bundle / "_internal" / f"libpython{sys.version_info.major}.{sys.version_info.minor}.so.1.0").exists()


def _missing_libraries(binary: Path) -> list[str]:
    out = _run(["ldd", str(binary)]).stdout
    return [line.split()[0] for line in out.splitlines() if "not found" in line]


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
def test_the_bundle_starts_on_x11(packaged: Packaged, tmp_path: Path) -> None:
    """The xcb platform plugin on a virtual X server (when xvfb is installed)."""
    plugin = packaged.bundle / "_internal" / "PySide6" / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (apt-get install xvfb xauth)")
    if missing := _missing_libraries(plugin):
        pytest.skip(f"the system lacks what the .deb depends on: {missing}")
    env = _bare_env(tmp_path, ROBOTLAB_HOME=str(tmp_path / "robotlab"), QT_QPA_PLATFORM="xcb")
    result = _run(["xvfb-run", "-a", str(packaged.exe), "--offscreen-smoke"], cwd=tmp_path, env=env, timeout=90)
    assert result.returncode == 0 and "main window shown" in result.stdout, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
def test_the_bundle_starts_on_wayland(packaged: Packaged, tmp_path: Path) -> None:
    """The wayland platform plugin on a headless Weston compositor (when weston is installed)."""
    plugin = packaged.bundle / "_internal" / "PySide6" / "Qt" / "plugins" / "platforms" / "libqwayland.so"
    if shutil.which("weston") is None:
        pytest.skip("weston is not installed (apt-get install weston)")
    if missing := _missing_libraries(plugin):
        pytest.skip(f"the system lacks what the .deb depends on: {missing}")
    runtime = tmp_path / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    env = _bare_env(tmp_path, XDG_RUNTIME_DIR=str(runtime))
    weston = subprocess.Popen(["weston", "--backend=headless-backend.so", "--socket=robotlab-test", "--idle-time=0"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if (runtime / "robotlab-test").exists():
                break
            assert weston.poll() is None, "weston did not start"
            time.sleep(0.1)
        env.update(WAYLAND_DISPLAY="robotlab-test", QT_QPA_PLATFORM="wayland",
                   ROBOTLAB_HOME=str(tmp_path / "robotlab"))
        result = _run([str(packaged.exe), "--offscreen-smoke"], cwd=tmp_path, env=env, timeout=90)
    finally:
        weston.terminate()
        try:
            weston.wait(timeout=10)
        except subprocess.TimeoutExpired:
            weston.kill()
            weston.wait()
    assert result.returncode == 0 and "main window shown" in result.stdout, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
def test_the_bundle_keeps_user_data_where_the_platform_expects(packaged: Packaged, tmp_path: Path) -> None:
    def paths(env: dict[str, str]) -> dict[str, Path]:
        result = _run([str(packaged.exe), "paths"], cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        rows = [line.rsplit(None, 1) for line in result.stdout.splitlines() if line.strip()]
        return {name.strip(): Path(value) for name, value in rows}

    home = tmp_path / "home"
    found = paths(_bare_env(home))  # XDG defaults
    assert found["config"] == home / ".config" / "robotlab"
    assert found["config file"] == home / ".config" / "robotlab" / "config.yaml"
    assert found["data"] == home / ".local" / "share" / "robotlab"
    assert found["database"] == home / ".local" / "share" / "robotlab" / "workspace.db"
    assert found["logs"] == home / ".local" / "state" / "robotlab" / "log"
    assert found["cache"] == home / ".cache" / "robotlab"
    assert found["resources"].resolve().is_relative_to(packaged.bundle.resolve())
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"),
           "XDG_STATE_HOME": str(tmp_path / "s"), "XDG_CACHE_HOME": str(tmp_path / "k")}
    found = paths(_bare_env(home, **xdg))
    assert found["config"] == tmp_path / "c" / "robotlab"
    assert found["data"] == tmp_path / "d" / "robotlab"
    assert found["logs"] == tmp_path / "s" / "robotlab" / "log"
    assert found["cache"] == tmp_path / "k" / "robotlab"


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_the_bundle_reaches_a_model_through_litellm(packaged: Packaged, tmp_path: Path, style: str) -> None:
    """litellm's lazily imported provider modules and data files are in the bundle."""
    from fakes.llm_server import FakeLLMServer

    with FakeLLMServer(default_text="Hello from the fake model") as server:
        model, base = (("openai/fake", server.base_url + "/v1") if style == "openai"
                       else ("anthropic/claude-fake", server.base_url))
        env = _bare_env(tmp_path, ROBOTLAB_HOME=str(tmp_path / "robotlab"), OPENAI_API_KEY="sk-test",
                        ANTHROPIC_API_KEY="sk-test")
        result = _run([str(packaged.exe), "run", "assistant", "hi", "--json", "--model", model, "--api-base", base],
                      cwd=tmp_path, env=env, timeout=120)
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    print(f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}")  # whole in the report
    assert events and events[-1]["kind"] == "run_finished", "the run did not finish: its output is under 'Captured stdout'"
    assert any(e["kind"] == "text" and e["text"] == "Hello from the fake model" for e in events)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
def test_the_bundle_serves_and_calls_mcp_tools(packaged: Packaged, tmp_path: Path) -> None:
    """The bundle as an MCP client of itself (robotlab mcp serve over stdio): the mcp SDK works frozen."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "hello.txt").write_text("hi\n")
    home = tmp_path / "robotlab"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.yaml").write_text(
        "mcpServers:\n  self:\n"
        f"    command: {json.dumps(str(packaged.exe))}\n"
        f"    args: [mcp, serve, --folder, {json.dumps(str(folder))}, --no-robots]\n"
    )
    env = _bare_env(tmp_path, ROBOTLAB_HOME=str(home))
    result = _run([str(packaged.exe), "mcp", "call", "self", "list_files", "{}"], cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hello.txt" in result.stdout


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
def test_the_bundle_carries_what_is_loaded_dynamically_and_nothing_unused(packaged: Packaged) -> None:
    from PyInstaller.archive.readers import CArchiveReader

    modules = set(CArchiveReader(str(packaged.exe)).open_embedded_archive("PYZ.pyz").toc)
    for name in ("ui.app", "ui.main_window", "workspace.cli.run", "workspace.mcp.server", "resources",
                 "pygments.lexers.python", "pygments.lexers.data", "pygments.styles.monokai",
                 "pygments.styles.friendly", "markdown_it.presets.commonmark", "mdit_py_plugins.gfm_autolink",
                 "litellm.llms.anthropic.chat.handler",
                 "litellm.llms.openai.openai", "litellm.llms.ollama.completion.transformation",
                 "mcp.client.stdio", "mcp.client.streamable_http", "tiktoken_ext.openai_public",
                 "keyring.backends.SecretService", "jsonschema", "qasync", "platformdirs.unix"):
        assert name in modules, f"{name} is not in the bundle"
    for name in ("tkinter", "pytest", "_pytest", "PyInstaller", "mypy", "numpy", "pip", "setuptools"):
        assert not any(m == name or m.startswith(name + ".") for m in modules), f"{name} is in the bundle"

    internal = packaged.bundle / "_internal"
    for data in ("resources/robots/assistant.md", "resources/styles/light.qss", "resources/icons/app.svg",
                 "resources/networks", "resources/mcp/example-config.yaml",
                 "litellm/model_prices_and_context_window_backup.json",
                 "litellm/litellm_core_utils/tokenizers/anthropic_tokenizer.json",
                 "jsonschema_specifications/schemas", "certifi/cacert.pem"):
        assert (internal / data).exists(), f"{data} is not in the bundle"
    qt = internal / "PySide6" / "Qt"
    platforms = {p.name for p in (qt / "plugins" / "platforms").iterdir()}
    assert {"libqoffscreen.so", "libqxcb.so", "libqwayland.so"} <= platforms
    assert not platforms & {"libqeglfs.so", "libqlinuxfb.so", "libqvnc.so", "libqvkkhrdisplay.so"}
    assert (qt / "plugins" / "imageformats" / "libqsvg.so").exists()
    assert (qt / "plugins" / "wayland-shell-integration" / "libxdg-shell.so").exists()
    libs = {p.name.split(".so")[0] for p in (qt / "lib").iterdir()}
    assert {"libQt6Core", "libQt6Gui", "libQt6Widgets", "libQt6Svg", "libQt6XcbQpa", "libQt6WaylandClient"} <= libs
    unused = {"libQt6Qml", "libQt6Quick", "libQt6Network", "libQt6Pdf", "libQt6Designer", "libQt6Multimedia",
              "libQt6WebEngineCore", "libQt6Sql", "libQt6Test"}
    assert not libs & unused, libs & unused
    assert not (internal / "litellm" / "proxy" / "_experimental" / "out").exists()  # the proxy's web UI
    assert not (internal / "PySide6" / "Qt" / "translations").exists()


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
def test_the_archive_holds_the_bundle(packaged: Packaged) -> None:
    top = f"robotlab-workspace-{VERSION}"
    with tarfile.open(packaged.archive) as archive:
        members = {m.name: m for m in archive.getmembers()}
    assert f"{top}/robotlab" in members and members[f"{top}/robotlab"].mode & 0o111
    assert f"{top}/_internal/resources/robots/assistant.md" in members
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
def test_the_deb_installs_the_app_and_its_desktop_integration(packaged: Packaged, tmp_path: Path) -> None:
    root = tmp_path / "root"
    result = _run(["dpkg", "-x", str(packaged.deb), str(root)], timeout=120)
    assert result.returncode == 0, result.stderr
    fields = {name: _run(["dpkg-deb", "-f", str(packaged.deb), name]).stdout.strip()
              for name in ("Package", "Version", "Architecture", "Depends", "Installed-Size")}
    assert fields["Package"] == "robotlab-workspace" and fields["Version"] == VERSION
    assert "libgl1" in fields["Depends"] and "libxcb-icccm4" in fields["Depends"]
    assert int(fields["Installed-Size"]) > 10_000

    desktop = root / "usr" / "share" / "applications" / f"{APP_ID}.desktop"
    metainfo = root / "usr" / "share" / "metainfo" / f"{APP_ID}.metainfo.xml"
    validate = _run(["desktop-file-validate", str(desktop)])
    assert validate.returncode == 0 and not validate.stdout.strip(), validate.stdout + validate.stderr
    appstream = _run(["appstreamcli", "validate", "--no-net", str(metainfo)])
    assert appstream.returncode == 0, appstream.stdout + appstream.stderr

    launcher = root / "usr" / "bin" / "robotlab"
    assert launcher.is_symlink() and os.readlink(launcher) == "/opt/robotlab-workspace/robotlab"
    exe = root / "opt" / "robotlab-workspace" / "robotlab"
    assert exe.stat().st_mode & 0o755 == 0o755
    hicolor = root / "usr" / "share" / "icons" / "hicolor"
    for size in ICON_SIZES:
        assert make_icons.png_size(hicolor / f"{size}x{size}" / "apps" / f"{APP_ID}.png") == (size, size)
    assert (hicolor / "scalable" / "apps" / f"{APP_ID}.svg").read_bytes() == (
        ROOT / "resources" / "icons" / "app.svg").read_bytes()
    assert (root / "usr" / "share" / "doc" / "robotlab-workspace" / "copyright").exists()

    # The unpacked copy runs from its new place.
    env = _bare_env(tmp_path, ROBOTLAB_HOME=str(tmp_path / "robotlab"))
    smoke = _run([str(exe), "--offscreen-smoke"], cwd=tmp_path, env=env, timeout=60)
    assert smoke.returncode == 0 and "main window shown" in smoke.stdout, smoke.stdout + smoke.stderr
