"""Script tools' folders for the tests that run them in the real sandbox: executable scripts, skill folders with
their ``scripts/``, the module-level skip where this machine can make no sandbox, and an approval gate whose person
answers as told."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.isolation import SandboxUnavailable, sandbox_for_platform


def require_sandbox() -> None:
    """Skip the calling test module where no sandbox can be made (call it at the module's top level)."""
    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
        pytest.skip(f"no sandbox on this machine: {exc}", allow_module_level=True)


def executable(path: Path, text: str) -> Path:
    """``text`` written at ``path`` (its folders made) as an executable script."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def skill_folder(root: Path, name: str, description: str, scripts: dict[str, str], *, front: str = "",
                 body: str = "Use the script.\n") -> Path:
    """An agent skill's folder ``root/name``: its ``SKILL.md`` (``front`` is more front matter, each line ending in a
    newline) and each of ``scripts`` (file name → text) executable in its ``scripts/``."""
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{front}---\n{body}")
    for file, text in scripts.items():
        executable(folder / "scripts" / file, text)
    return folder


class Gate(ApprovalGate):
    """A policy, and a person who answers ``answer`` to what is asked (remembered in ``asked``)."""

    def __init__(self, rules: list[dict[str, str]] | None = None, *, answer: bool = True) -> None:
        self.asked: list[ApprovalRequest] = []

        async def ask(request: ApprovalRequest) -> ApprovalDecision:
            self.asked.append(request)
            return ApprovalDecision(approved=answer, reason=None if answer else "no")

        super().__init__(ApprovalPolicy.from_list(rules or []), ask)


__all__ = ["Gate", "executable", "require_sandbox", "skill_folder"]
