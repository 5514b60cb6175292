"""``/`` in the message box: the completion of /compact and the MCP prompts of the robot's
servers (real servers: server-everything and our Python server), driven with real key events; a prompt with
arguments opens a form, and its messages land in the message box to be read and sent."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import running_app, wait_until
from tests.fakes.mcp_servers import EVERYTHING, require_servers

DYNAMIC = Path(__file__).resolve().parent.parent / "fakes" / "mcp_dynamic_server.py"
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def app(robotlab_home: Path, provider: Any, db_path: Path) -> AsyncIterator[Any]:
    from workspace.mcp import set_default_manager

    require_servers()
    config = robotlab_home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "mcpServers:\n"
        f"  everything:\n    command: {EVERYTHING}\n"
        f"  dynamic:\n    command: {sys.executable}\n    args: [{DYNAMIC}]\n",
        encoding="utf-8",
    )
    set_default_manager(None)
    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        yield root
    set_default_manager(None)


async def stop_servers(root: Any) -> None:
    """Stop the MCP servers inside the test: on a qasync loop, a stdio server still connected when the test's
    task ends can lose its pipes and leave the loop's close waiting for the process."""
    await root.window.docks.mcp_pane.manager.aclose()


def rows(composer: Any) -> list[str]:
    return [entry.name for entry in composer.slash.entries]


async def open_completion(root: Any, text: str = "/") -> Any:
    from PySide6.QtTest import QTest

    composer = root.window.composer
    composer.edit.setFocus()
    composer.edit.clear()
    QTest.keyClicks(composer.edit, text)
    assert composer.slash.isVisible()
    # Both servers listed (none left starting when the test ends: the app's close would wait for it).
    await wait_until(lambda: root.window.slash._listing is not None and root.window.slash._listing.done(),
                     timeout=40, what="the MCP prompts")
    assert {n.split(":")[0] for n in rows(composer) if ":" in n} <= {"everything", "dynamic"}
    return composer


async def test_completion_keys_form_and_the_prompt_in_the_box(app: Any) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    root = app
    composer = await open_completion(root)
    names = rows(composer)
    assert names[0] == "compact"
    assert {"everything:args-prompt", "everything:simple-prompt", "dynamic:greet", "dynamic:chat"} <= set(names)
    assert "A prompt with two arguments" in composer.slash.item(names.index("everything:args-prompt")).text()
    # Filtering as one types; Up/Down move (and wrap); Esc closes without touching the text.
    QTest.keyClicks(composer.edit, "args")
    await wait_until(lambda: rows(composer) and rows(composer)[0] == "everything:args-prompt", what="the filter")
    assert composer.slash.currentRow() == 0
    QTest.keyClick(composer.edit, Qt.Key.Key_Down)
    QTest.keyClick(composer.edit, Qt.Key.Key_Up)
    assert composer.slash.current().name == "everything:args-prompt"
    QTest.keyClick(composer.edit, Qt.Key.Key_Escape)
    assert not composer.slash.isVisible() and composer.text() == "/args"
    assert composer.edit.hasFocus()
    # Enter chooses: the form asks for the arguments (city required, state optional).
    QTest.keyClick(composer.edit, Qt.Key.Key_Backspace)
    assert composer.slash.isVisible()
    QTest.keyClick(composer.edit, Qt.Key.Key_Return)
    await wait_until(lambda: root.window.slash.form is not None, what="the form")
    form = root.window.slash.form
    assert composer.text() == ""
    assert list(form.fields) == ["city", "state"] and form.required == {"city"}
    insert = form.buttons.buttons()[0] if form.buttons.buttons()[0].text() == "Insert" else form.buttons.buttons()[1]
    assert insert.text() == "Insert" and not insert.isEnabled()
    assert form.fields["city"].placeholderText() == "Name of the city"
    QTest.keyClicks(form.fields["city"], "Paris")
    assert insert.isEnabled()
    QTest.keyClick(form.fields["city"], Qt.Key.Key_Return)
    await wait_until(lambda: "Paris" in composer.text(), timeout=20, what="the prompt's text in the box")
    assert root.window.slash.form is None
    assert not root.controller.running  # put in the box, not sent
    await stop_servers(root)


async def test_tab_chooses_a_prompt_without_arguments_and_a_scripted_exchange(app: Any) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    root = app
    composer = await open_completion(root, "/simple")
    await wait_until(lambda: rows(composer)[:1] == ["everything:simple-prompt"], what="the filter")
    QTest.keyClick(composer.edit, Qt.Key.Key_Tab)
    await wait_until(lambda: composer.text().strip() != "", timeout=20, what="the simple prompt")
    assert "prompt without arguments" in composer.text()
    # A prompt with an assistant message goes in as one labelled exchange.
    composer = await open_completion(root, "/dynamic:chat")
    QTest.keyClick(composer.edit, Qt.Key.Key_Return)
    await wait_until(lambda: root.window.slash.form is not None, what="the form")
    form = root.window.slash.form
    QTest.keyClicks(form.fields["topic"], "owls")
    form.accept()
    await wait_until(lambda: "Assistant:" in composer.text(), timeout=20, what="the exchange")
    assert composer.text().startswith("User: Tell me about owls.")
    await stop_servers(root)


async def test_a_missing_argument_is_named(app: Any) -> None:
    root = app
    composer = await open_completion(root)
    item = next(e for e in composer.slash.entries if e.name == "dynamic:greet")
    root.window.slash.insert(item, {})  # past the form (which would not let it through)
    await wait_until(lambda: "needs 1 more argument: name" in root.window.banner.text, timeout=20,
                     what="the banner")
    await stop_servers(root)


async def test_slash_compact_summarises_the_thread(app: Any, provider: Any) -> None:
    from PySide6.QtTest import QTest

    root = app
    composer = root.window.composer
    composer.edit.setFocus()
    QTest.keyClicks(composer.edit, "/compact")
    composer.submit()  # a new thread: nothing to compact, nothing sent
    await wait_until(lambda: "Nothing to compact" in root.window.toast.label.text(), what="the toast")
    assert root.controller.session is None
    for text, reply in (("one", "first answer"), ("two", "second answer")):
        provider.enqueue(reply)
        composer.set_text(text)
        composer.submit()
        await wait_until(lambda: root.controller.idle, timeout=20, what="the run")
    provider.enqueue("The summary of the first exchange.")
    composer.set_text("/compact")
    composer.submit()
    await wait_until(lambda: "Conversation compacted on request" in root.window.toast.label.text(), timeout=20,
                     what="the compaction")
    assert composer.text() == "" and not root.window.banner.text
    assert "one" in str(provider.history[-1].messages)  # the model was asked to summarise the first exchange
    await wait_until(lambda: root.window.slash._listing is None or root.window.slash._listing.done(), timeout=40,
                     what="the prompt listing the / opened")
    await stop_servers(root)
