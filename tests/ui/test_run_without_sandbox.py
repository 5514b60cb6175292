"""Where no sandbox can be made, in the window: the command is refused until the person turns on the folder's
"run without a sandbox" in Settings; then every command is asked about (an allow rule does not skip it, the
question offers no "always"), says plainly what it can do, and its card says "Ran without a sandbox" in red.
The machine's missing sandbox is simulated as the core's tests do: a PATH without bubblewrap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import running_app, wait_until
from workspace.providers.testing import ToolCall
from workspace.tools import commands

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n", encoding="utf-8")
    return root


@pytest.fixture
def no_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(commands, "_box", None)


def _card(root: Any, call_id: str) -> Any:
    return next(c for c in root.window.chat.tool_cards() if c.call_id == call_id)


async def test_refused_until_settings_turns_it_on_then_asked_every_time_and_the_card_says_so(
        provider: Any, db_path: Path, folder: Path, no_sandbox: None) -> None:
    from workspace import trust
    from workspace.config import load_config

    config = load_config(folder, overrides={"review": {"mode": "review"}})
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config,
                           size=(1280, 720)) as root:
        window, chat = root.window, root.window.chat
        root.controller.set_robot("file-helper")
        root.controller.workspace.approval.policy.set_rule("allow", tool="run_command")  # an "always" rule
        provider.enqueue([ToolCall("run_command", {"command": "echo hi > out.txt"}, id="c1")], "It was refused.")
        window.runs.send("write out.txt")
        await wait_until(lambda: root.controller.idle, timeout=60, what="the run to end")
        refused = _card(root, "c1")
        assert refused.status == "error" and "--run-without-sandbox on" in str(refused.error)
        assert refused.unsandboxed_label is None and not (folder / "out.txt").exists()

        # the refusal's button opens Settings, where the folder's switch is (off by default)
        assert refused._sandbox_button is not None and refused._sandbox_button.isVisible()
        refused._sandbox_button.click()
        dialog = window.settings_flow.dialog
        assert dialog is not None and dialog.isVisible()
        assert dialog.without_sandbox.isEnabled() and not dialog.without_sandbox.isChecked()
        dialog.without_sandbox.setChecked(True)
        dialog.save()
        assert trust.runs_without_sandbox(folder)

        for n, command in ((2, "echo hi > out.txt"), (3, "echo again >> out.txt")):
            provider.enqueue([ToolCall("run_command", {"command": command}, id=f"c{n}")], "Done.")
            window.runs.send("try again")
            await wait_until(lambda: chat.pending_approval() is not None, timeout=30,
                             what="the question, despite the allow rule")
            panel = chat.pending_approval()
            assert panel.unsandboxed and not panel.scope.isVisible()  # this call only
            warning = panel.findChild(type(panel.problem), "UnsandboxedWarning")
            assert warning is not None and "reach the network" in warning.text()
            panel.approve()
            await wait_until(lambda: root.controller.idle, timeout=60, what="the command to run")
            card = _card(root, f"c{n}")
            assert card.status == "ok" and card.unsandboxed_label is not None and card.unsandboxed_label.isVisible()
            assert card.unsandboxed_label.text() == "Ran without a sandbox"
        assert (folder / "out.txt").read_text(encoding="utf-8") == "hi\nagain\n"  # on disk: no sandbox
        trust.set_run_without_sandbox(folder, False)
