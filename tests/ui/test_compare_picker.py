""""Compare with…": robots come before a hosted provider's long list of models, and typing filters the rows (a
checked row stays)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt


def test_robots_come_first_and_typing_filters_the_candidates(qapp_instance: Any) -> None:
    from ui.compare.picker import CompareDialog, choices

    models = [(f"openai/gpt-{i}", None) for i in range(80)] + [("openai/o3-mini", None)]
    options = choices("assistant", robots=["assistant", "file-helper", "reviewer"], models=models)
    texts = [text for text, _spec in options]
    assert texts[:3] == ["assistant again (its own model)", "file-helper (robot)", "reviewer (robot)"]
    assert texts[3] == "assistant with openai/gpt-0" and len(texts) == 3 + 81
    dialog = CompareDialog("assistant", options)
    dialog.list.item(1).setCheckState(Qt.CheckState.Checked)  # file-helper
    dialog.filter.setText("o3 MINI")
    shown = [dialog.list.item(r).text() for r in range(dialog.list.count()) if not dialog.list.item(r).isHidden()]
    assert shown == ["file-helper (robot)", "assistant with openai/o3-mini"]
    dialog.list.item(len(texts) - 1).setCheckState(Qt.CheckState.Checked)
    assert [(s.robot, s.model) for s in dialog.checked()] == [("file-helper", None), ("assistant", "openai/o3-mini")]
    assert dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()
    dialog.filter.clear()
    assert not any(dialog.list.item(r).isHidden() for r in range(dialog.list.count()))
    dialog.deleteLater()
