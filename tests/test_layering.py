"""The core stays Qt-free and cheap to import; litellm and mcp stay behind their one door."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKSPACE = ROOT / "workspace"

BLOCKER = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'qasync', 'shiboken6', 'ui'):
            raise ImportError('blocked: ' + name)
        return None
sys.meta_path.insert(0, Block())
"""


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_workspace_imports_with_qt_blocked_and_without_litellm() -> None:
    code = BLOCKER + """
import pkgutil, importlib, workspace
assert 'litellm' not in sys.modules, 'import workspace imported litellm'
assert 'mcp' not in sys.modules, 'import workspace imported the mcp SDK'
import workspace.robot, workspace.config, workspace.templates, workspace.providers
assert 'pydantic' not in sys.modules, 'import workspace (or its robot, config, templates) imported pydantic'
for info in pkgutil.walk_packages(workspace.__path__, 'workspace.'):
    if info.name.endswith('__main__'):
        continue
    importlib.import_module(info.name)
bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'qasync', 'ui')]
assert not bad, bad
assert 'litellm' not in sys.modules, 'a workspace module imported litellm at import time'
print('ok')
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_one_module_imports_litellm_and_only_workspace_mcp_imports_the_sdk() -> None:
    for path in WORKSPACE.rglob("*.py"):
        imported = _imports(path)
        rel = path.relative_to(ROOT).as_posix()
        assert not imported & {"PySide6", "qasync", "ui"}, rel
        if "litellm" in imported:
            assert rel.startswith("workspace/providers/litellm_provider/"), rel
        if "mcp" in imported:
            assert rel.startswith("workspace/mcp/"), rel


def test_the_command_line_does_not_import_qt() -> None:
    code = BLOCKER.replace("'ui'", "'never'") + """
from ui.main import main
assert main(['paths']) == 0
assert not [m for m in sys.modules if m.startswith(('PySide6', 'qasync'))]
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
