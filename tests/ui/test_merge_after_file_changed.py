"""A merge written in the combined review, then the file changed on disk before Apply (the person edited it in
their editor): Apply writes nothing, says the file changed since the proposal, and the person's edit stays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.candidates import BASE
from fakes.compare_window import compared
from fakes.llm_server import FakeLLMServer

from tests.fakes.app_window import wait_until

pytestmark = pytest.mark.timeout(180)  # bounds a hang: three scripted candidates on a loaded machine


async def test_a_merge_over_a_file_changed_since_is_not_written(compare_app: Any, server: FakeLLMServer,
                                                                folder: Path) -> None:
    from PySide6.QtWidgets import QPushButton

    comparisons = await compared(compare_app, server)
    review = comparisons.review
    assert review is not None
    for hunk_id in ("c0.f1.h1", "c1.f1.h1"):  # A and B both change line 2
        review.set_accepted(hunk_id)
    review.overlap_panes[0].findChild(QPushButton, "merge-c0.f1.h1").click()
    dialog = review.merge_dialog
    assert dialog is not None
    dialog.editor.setPlainText("A and B two")
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    assert review.apply_button.isEnabled()
    mine = BASE.replace("line 1\n", "my own line 1\n")
    (folder / "app.py").write_text(mine)  # the person's editor saved the file meanwhile
    review.apply()
    await wait_until(lambda: not review.status.text().startswith("Applying"), timeout=60,
                     what="the apply's answer")
    assert review.result is None, review.status.text()
    assert "app.py" in review.status.text() and "Nothing was applied" in review.status.text()
    assert (folder / "app.py").read_text() == mine  # the person's edit stays; nothing of the merge written
