"""Attachments in the window: the paper-clip button, files dropped on the window,
pasted images and file URLs, ``@`` completion with real key events, chips under the box and on the sent
message (the same when the thread is opened again), opening a chip, and an MCP resource attached through
the composer's slot."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fakes.images import png
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QGuiApplication, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.fakes.app_window import running_app, turns_made, wait_until
from tests.ui.a11y import unnamed_controls
from tests.ui.chat_dump import dump_state, dump_widgets
from workspace.attachments import Attachment
from workspace.messages import Message
from workspace.providers.testing import AgentInfo, FunctionProvider


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "notes.md").write_text("# Notes\nThe answer is 42.\n", encoding="utf-8")
    (root / "src" / "notebook.py").write_text("print('hi')\n", encoding="utf-8")
    (root / "cat.png").write_bytes(png())
    (root / ".git").mkdir()
    (root / ".git" / "notes-in-git").write_text("hidden")
    return root


class Recorder:
    """The model: records what it was sent, answers in a few words."""

    def __init__(self) -> None:
        self.seen: list[list[Message]] = []

    def __call__(self, messages: list[Message], info: AgentInfo) -> Any:
        self.seen.append(list(messages))
        return "Seen."


@pytest.fixture
def model() -> Recorder:
    return Recorder()


async def _app(model: Recorder, db_path: Path, folder: Path) -> Any:
    return running_app(provider=FunctionProvider(model), db_path=db_path, theme_name="light", folder=folder,
                       size=(1200, 800))


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


def _last_user_parts(model: Recorder) -> list[dict[str, Any]]:
    users = [m for m in model.seen[-1] if m.is_user]
    content = users[-1].content
    assert isinstance(content, list), content
    return content


async def test_at_completes_the_folders_files_with_the_keyboard(model: Recorder, db_path: Path, folder: Path) -> None:
    async with await _app(model, db_path, folder) as root:
        composer = root.window.composer
        edit = composer.edit
        edit.setFocus()
        QTest.keyClicks(edit, "look at @note")
        completer = edit.mentions
        await wait_until(lambda: completer.active, what="the file list")
        popup = completer.popup
        items = [popup.item(i).text() for i in range(popup.count())]
        assert items == ["notes.md", "src/notebook.py"]  # the name's start first; nothing from .git
        QTest.keyClick(edit, Qt.Key.Key_Down)
        assert popup.currentItem().text() == "src/notebook.py"
        QTest.keyClick(edit, Qt.Key.Key_Up)
        QTest.keyClick(edit, Qt.Key.Key_Return)
        assert not completer.active
        assert edit.toPlainText() == "look at @notes.md "  # the file named in the text, no newline either
        assert composer.chips.names() == ["notes.md"]
        # Tab chooses too; Esc closes without choosing; a space ends the completion.
        QTest.keyClicks(edit, "and @bo")
        await wait_until(lambda: completer.active, what="the file list again")
        QTest.keyClick(edit, Qt.Key.Key_Tab)
        assert composer.chips.names() == ["notes.md", "notebook.py"]
        QTest.keyClicks(edit, "@ca")
        await wait_until(lambda: completer.active, what="the list for @ca")
        QTest.keyClick(edit, Qt.Key.Key_Escape)
        assert not completer.active and edit.toPlainText().endswith("@ca")
        assert not root.controller.running
        QTest.keyClicks(edit, " x")
        assert not completer.active
        # Ctrl+Enter sends the message with its attachments; the chips move to the message.
        QTest.keyClick(edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        await _idle(root)
        parts = _last_user_parts(model)
        assert parts[0]["text"] == "look at @notes.md and @src/notebook.py @ca x"
        assert "Attached file notes.md" in parts[1]["text"] and "Attached file src/notebook.py" in parts[2]["text"]
        assert composer.chips.names() == [] and not composer.chips.isVisible()
        message = root.window.chat.user_messages()[-1]
        assert message.chips is not None and message.chips.names() == ["notes.md", "notebook.py"]


async def test_button_drop_and_paste_add_chips_and_a_reopened_thread_shows_them(
        model: Recorder, db_path: Path, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from PySide6.QtWidgets import QFileDialog

    async with await _app(model, db_path, folder) as root:
        window, composer = root.window, root.window.composer
        # The paper-clip: a file dialog opened in the folder.
        asked: list[str] = []

        def dialog(parent: Any, caption: str, start: str, filters: str) -> tuple[list[str], str]:
            asked.append(start)
            return [str(folder / "notes.md")], ""

        monkeypatch.setattr(QFileDialog, "getOpenFileNames", staticmethod(dialog))
        composer.attach_button.click()
        assert asked == [str(folder)] and composer.chips.names() == ["notes.md"]
        # A file dropped on the window.
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(folder / "cat.png"))])
        enter = QDragEnterEvent(QPoint(300, 300), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(window, enter)
        assert enter.isAccepted()
        drop = QDropEvent(QPointF(300, 300), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                          Qt.KeyboardModifier.NoModifier)
        # Qt delivers a Drop only during a real drag (a platform one): the window's drop handler gets it directly.
        assert window.attachments.drops.eventFilter(window, drop) and drop.isAccepted()
        assert composer.chips.names() == ["notes.md", "cat.png"]
        # A file outside the folder is refused with the sandbox's words; nothing else changes.
        (tmp_path / "outside.txt").write_text("no")
        problems: list[str] = []
        composer.attachment_problem.connect(problems.append)
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(tmp_path / "outside.txt"))])
        composer.edit.insertFromMimeData(mime)
        assert problems and "outside the opened folder" in problems[0]
        assert composer.chips.names() == ["notes.md", "cat.png"]
        # Pasted image data becomes a PNG; pasted text stays text.
        clipboard = QGuiApplication.clipboard()
        clipboard.setImage(QImage.fromData(png(4, 4, seed=9)))
        composer.edit.setFocus()
        composer.edit.paste()
        assert composer.chips.names() == ["notes.md", "cat.png", "pasted-image.png"]
        clipboard.setText("some words")
        composer.edit.paste()
        assert composer.edit.toPlainText() == "some words"
        # × removes a chip.
        composer.chips.chips[2].remove_button.click()
        assert composer.chips.names() == ["notes.md", "cat.png"]
        composer.edit.setPlainText("What is this?")
        composer.submit()
        await _idle(root)
        parts = _last_user_parts(model)
        assert [p["type"] for p in parts] == ["text", "text", "text", "image_url"]
        live = dump_state(window.chat.presenter.state)
        assert "attachments=" in live and "image cat.png image/png 75B cat.png" in live
        widgets = dump_widgets(window.chat)
        assert "chips=['notes.md', 'cat.png']" in widgets
        # Clicking a sent chip opens it: the image from the thread's database.
        message = window.chat.user_messages()[-1]
        message.chips.chips[1].button.click()
        viewer = window.attachments.viewer
        assert viewer is not None and viewer.image_label is not None and viewer.image_label.pixmap().width() == 2
        viewer.close()
        message.chips.chips[0].button.click()
        assert "The answer is 42." in window.attachments.viewer.text_view.toPlainText()
        window.attachments.viewer.close()
        # The thread opened again: the same chips, from the run_started event.
        thread_id = root.controller.thread_id
        window.threads.new()
        await asyncio.sleep(0.05)
        window.threads.open(thread_id)
        await asyncio.sleep(0.05)
        assert dump_state(window.chat.presenter.state) == live
        assert dump_widgets(window.chat) == widgets
        # The next message sends them again with the conversation.
        window.runs.send("And now?")
        await _idle(root)
        first_user = next(m for m in model.seen[-1] if m.is_user)
        assert isinstance(first_user.content, list) and first_user.content[-1]["type"] == "image_url"


async def test_an_mcp_resource_attaches_through_the_composers_slot(model: Recorder, db_path: Path,
                                                                   folder: Path) -> None:
    async with await _app(model, db_path, folder) as root:
        composer = root.window.composer
        read: list[tuple[str, str]] = []

        async def reader(server: str, uri: str) -> Attachment:
            read.append((server, uri))
            return Attachment.from_resource(server, uri, [{"uri": uri, "mimeType": "text/plain", "text": "Hello"}])

        composer.resource_reader = reader
        # The MCP dock's "Attach to message" (its button shows because the window listens).
        pane = root.window.docks.mcp_pane
        assert pane is not None and pane._attach_connected()
        pane.attach_requested.emit("everything", "test://static/resource/1")
        await wait_until(lambda: composer.chips.names() == ["1"], what="the resource's chip")
        assert read == [("everything", "test://static/resource/1")]
        problems: list[str] = []
        composer.attachment_problem.connect(problems.append)

        async def broken(server: str, uri: str) -> Attachment:
            raise RuntimeError("the server is not running")

        composer.resource_reader = broken
        composer.add_resource_attachment("gone", "x://y")
        await wait_until(lambda: bool(problems), what="the problem")
        assert problems == ["the server is not running"] and composer.chips.names() == ["1"]
        composer.edit.setPlainText("Use it")
        composer.submit()
        await _idle(root)
        assert "Attached MCP resource test://static/resource/1 from MCP server 'everything'" in \
            _last_user_parts(model)[1]["text"]
        state = dump_state(root.window.chat.presenter.state)
        assert "resource 1 text/plain 5B everything:test://static/resource/1" in state


def _chip(chips: Any, name: str) -> Any:
    return next(chip for chip in chips.chips if chip.item.name == name)


async def test_edit_and_resend_shows_the_attachments_as_removable_chips(model: Recorder, db_path: Path,
                                                                        folder: Path) -> None:
    async with await _app(model, db_path, folder) as root:
        window, composer = root.window, root.window.composer
        composer.add_paths(["notes.md", "cat.png"])
        composer.edit.setPlainText("What is this?")
        composer.submit()
        await _idle(root)
        message = window.chat.user_messages()[-1]
        assert message.chips is not None and message.chips.names() == ["notes.md", "cat.png"]
        # The editor shows the message's attachments as the composer's chips: × on each, read from the database.
        message.begin_edit()
        editor = message.editor
        assert editor is not None and editor.chips.isVisibleTo(window)
        assert editor.chips.names() == ["notes.md", "cat.png"] and not message.chips.isVisibleTo(window)
        assert all(chip.remove_button is not None for chip in editor.chips.chips)
        assert editor.attachments()[1].data == png()  # the content, not only the reference
        assert unnamed_controls(editor) == []
        # Esc: nothing is sent, the message shows its chips again.
        QTest.keyClick(message._edit_box, Qt.Key.Key_Escape)
        assert message.editor is None and message.chips.isVisibleTo(window) and len(model.seen) == 1
        # Again: drop the image, add a file by pasting its URL and another with @, then Ctrl+Enter.
        message.begin_edit()
        editor = message.editor
        box = message._edit_box
        _chip(editor.chips, "cat.png").remove_button.click()
        assert editor.chips.names() == ["notes.md"]
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(folder / "src" / "notebook.py"))])
        box.insertFromMimeData(mime)
        assert editor.chips.names() == ["notes.md", "notebook.py"]
        box.selectAll()
        QTest.keyClicks(box, "Compare them @cat")
        await wait_until(lambda: box.mentions.active, what="the file list in the editor")
        QTest.keyClick(box, Qt.Key.Key_Escape)  # closes the list, not the editor
        assert message.editor is editor and box.toPlainText() == "Compare them @cat"
        for _ in "@cat":
            QTest.keyClick(box, Qt.Key.Key_Backspace)
        QTest.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        await _idle(root)
        parts = _last_user_parts(model)
        assert [p["type"] for p in parts] == ["text", "text", "text"]  # no image: exactly what the chips showed
        assert parts[0]["text"] == "Compare them"
        assert "Attached file notes.md" in parts[1]["text"] and "Attached file src/notebook.py" in parts[2]["text"]
        users = window.chat.user_messages()
        assert [u.text for u in users] == ["Compare them"] and (users[0].sibling_index, users[0].sibling_count) == (1, 2)
        assert users[0].chips is not None and users[0].chips.names() == ["notes.md", "notebook.py"]
        # Every chip removed: the message goes alone.
        users[0].begin_edit()
        editor = users[0].editor
        while editor.chips.chips:
            editor.chips.chips[0].remove_button.click()
        assert not editor.chips.isVisibleTo(window)
        users[0]._edit_finish(True)
        await _idle(root)
        last = [m for m in model.seen[-1] if m.is_user][-1]
        assert last.content == "Compare them"
        assert window.chat.user_messages()[-1].chips is None
        # Each branch keeps what it was sent with, in the window and when the thread opens again.
        controller = root.controller
        controller.switch_branch(window.chat.user_messages()[-1].turn_id, -1)
        await asyncio.sleep(0.05)
        assert window.chat.user_messages()[-1].chips.names() == ["notes.md", "notebook.py"]
        assert "attachments=" in dump_state(window.chat.presenter.state)
        controller.switch_branch(window.chat.user_messages()[-1].turn_id, -1)
        await asyncio.sleep(0.05)
        assert window.chat.user_messages()[-1].chips.names() == ["notes.md", "cat.png"]
        thread_id = controller.thread_id
        window.threads.new()
        await asyncio.sleep(0.05)
        window.threads.open(thread_id)
        await turns_made(window.chat)  # (a thread shown makes its turns' widgets in the steps after it)
        assert window.chat.user_messages()[-1].chips.names() == ["notes.md", "cat.png"]


async def test_an_edit_whose_image_the_model_cannot_see_stays_open(model: Recorder, db_path: Path, folder: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    async with await _app(model, db_path, folder) as root:
        window = root.window
        window.runs.send("Hello")
        await _idle(root)
        message = window.chat.user_messages()[-1]
        message.begin_edit()
        editor = message.editor
        editor.add_paths(["cat.png"])
        monkeypatch.setattr(root.controller, "attachment_problem",
                            lambda attachments: "the model does not take images" if attachments else None)
        message._edit_finish(True)
        assert message.editor is editor and window.banner.isVisibleTo(window)
        assert "the model does not take images" in window.banner.text and len(model.seen) == 1
        _chip(editor.chips, "cat.png").remove_button.click()
        message._edit_finish(True)
        await _idle(root)
        assert len(model.seen) == 2 and window.chat.user_messages()[-1].sibling_count == 2


async def test_the_window_honours_the_configured_limits(model: Recorder, db_path: Path, folder: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "log.txt").write_text("x" * 2000)
    (folder / "big.png").write_bytes(png() + b"\x00" * 2000)
    monkeypatch.setenv("ROBOT_LAB_ATTACHMENTS__MAX_TEXT_BYTES", "1024")
    monkeypatch.setenv("ROBOT_LAB_ATTACHMENTS__MAX_IMAGE_BYTES", "1024")
    async with await _app(model, db_path, folder) as root:
        composer = root.window.composer
        problems = composer.add_paths(["log.txt", "big.png", "notes.md"])
        assert composer.chips.names() == ["notes.md"]
        assert "log.txt is 2.0 KB of text; attachments are sent whole up to 1.0 KB" in problems[0]
        assert "attachments.max_text_bytes in the configuration" in problems[0]
        assert "big.png is an image of 2.0 KB; images are sent up to 1.0 KB" in problems[1]
        assert "attachments.max_image_bytes in the configuration" in problems[1]
        # A pasted image too.
        said: list[str] = []
        composer.attachment_problem.connect(said.append)
        image = QImage(400, 400, QImage.Format.Format_RGB32)
        for y in range(400):
            for x in range(0, 400, 7):
                image.setPixel(x, y, (x * 7919 + y * 104729) & 0xFFFFFF)
        QGuiApplication.clipboard().setImage(image)
        composer.edit.setFocus()
        composer.edit.paste()
        assert said and "images are sent up to 1.0 KB" in said[0] and composer.chips.names() == ["notes.md"]


def test_a_chip_marks_its_kind_with_an_icon_not_an_emoji(qapp_instance: Any) -> None:
    """An emoji is a blank box where no emoji font is installed: the kind is a themed icon."""
    from ui.chat.composer.attachments import AttachmentChip, chip_icon

    image = Attachment.from_bytes(png(), name="cat.png")
    text = Attachment.from_text("hello", name="notes.md")
    assert (chip_icon(image), chip_icon(text)) == ("image", "file")
    chip = AttachmentChip(image)
    assert chip.button.text() == f"cat.png · {image.size} B" and not chip.button.icon().isNull()


def test_a_chips_icons_follow_a_switch_of_theme(qapp_instance: Any) -> None:
    """A chip waiting in the message box when the theme changes draws its icons in the new colours."""
    from ui import theme
    from ui.chat.composer.attachments import AttachmentChip

    theme.apply_theme(qapp_instance, "light")
    chip = AttachmentChip(Attachment.from_text("hello", name="notes.md"), removable=True)
    assert chip.remove_button is not None
    try:
        theme.apply_theme(qapp_instance, "dark")
        qapp_instance.processEvents()
        dark = theme.colors().muted
        assert chip.button.icon().cacheKey() == theme.icon("file", dark, 14).cacheKey()
        assert chip.remove_button.icon().cacheKey() == theme.icon("close", dark, 12).cacheKey()
    finally:
        theme.apply_theme(qapp_instance, "light")


async def test_a_file_whose_name_has_spaces_is_named_in_quotes(model: Recorder, db_path: Path,
                                                               folder: Path) -> None:
    """``@"my notes.md"``: the mention stays one token in the text, the file is attached."""
    (folder / "my notes.md").write_text("spaced\n", encoding="utf-8")
    async with await _app(model, db_path, folder) as root:
        composer = root.window.composer
        edit = composer.edit
        edit.setFocus()
        QTest.keyClicks(edit, "read @my")
        completer = edit.mentions
        await wait_until(lambda: completer.active, what="the file list")
        QTest.keyClick(edit, Qt.Key.Key_Return)
        assert edit.toPlainText() == 'read @"my notes.md" ' and composer.chips.names() == ["my notes.md"]
        assert not completer.active
