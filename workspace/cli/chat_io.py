"""Reading what people type in ``robotlab chat``: prompt_toolkit on a terminal, plain lines otherwise.

On a terminal (:class:`TerminalInput`): line editing, multi-line messages (Enter sends; Alt+Enter,
Esc Enter or Ctrl+J starts a new line), the input history kept in the data folder (↑/↓, secrets
redacted before they are written), a toolbar that says so, and Tab completion of the slash commands.
Ctrl-C clears what is typed, or at an empty prompt quits; Ctrl-D at an empty prompt quits.

With standard input not a terminal (a pipe, a file), :class:`LineInput` reads one message per line,
so a chat can be scripted (``printf 'hi\\n/exit\\n' | robotlab chat``).

prompt_toolkit is imported only here, and only when a chat starts on a terminal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Protocol

TOOLBAR = " Enter: send · Alt+Enter or Esc Enter: new line · ↑↓: history · Ctrl-C: stop the run / quit · /help"


class ChatInput(Protocol):
    """Where a chat's messages and answers come from."""

    async def message(self, prompt: str) -> str:
        """The next message (EOFError: quit; KeyboardInterrupt: quit, the prompt was empty)."""
        ...

    async def answer(self, question: str) -> str:
        """A one-line answer (approvals, the review); EOFError when there is none (Ctrl-D, end of
        input), KeyboardInterrupt for Ctrl-C."""
        ...


def history_file() -> Path:
    """Where the chat keeps what was typed (``robotlab paths`` shows the data folder)."""
    from workspace import paths

    return paths.data_dir() / "chat-history"


def stdio_is_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError, OSError):
        return False


class LineInput:
    """One message per line of standard input (not a terminal); end of input ends the chat."""

    async def message(self, prompt: str) -> str:
        from workspace.cli.review import read_terminal_line

        return await read_terminal_line(prompt)

    async def answer(self, question: str) -> str:
        from workspace.cli.review import read_terminal_line

        return await read_terminal_line(question)


class TerminalInput:
    """prompt_toolkit's prompt, set up for chatting (see the module's docstring)."""

    def __init__(self, commands: list[str], *, history: Path | None = None) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.key_binding import KeyBindings

        class RedactedHistory(FileHistory):
            """The history file, with the secrets of the environment replaced (as in the database)."""

            def store_string(self, string: str) -> None:
                from workspace.secrets import redact

                super().store_string(redact(string))

        path = history or history_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = KeyBindings()

        @keys.add("enter")
        def _send(event: Any) -> None:
            event.current_buffer.validate_and_handle()

        @keys.add("escape", "enter")
        @keys.add("c-j")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("c-c")
        def _clear_or_quit(event: Any) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
            else:
                event.app.exit(exception=KeyboardInterrupt())

        self._session: Any = PromptSession(
            history=RedactedHistory(str(path)), multiline=True, key_bindings=keys,
            bottom_toolbar=TOOLBAR, prompt_continuation=lambda width, line, wrap: "·".rjust(width - 1) + " ",
            completer=WordCompleter(commands, sentence=True), complete_while_typing=False,
        )
        self._answers: Any = None

    async def message(self, prompt: str) -> str:
        text: str = await self._session.prompt_async(prompt, handle_sigint=False)
        return text

    async def answer(self, question: str) -> str:
        from prompt_toolkit import PromptSession

        if self._answers is None:
            self._answers = PromptSession()
        # handle_sigint=False: the run's own Ctrl-C handler stays (a key press here is Ctrl-C as a key,
        # raised as KeyboardInterrupt).
        text: str = await self._answers.prompt_async(question, handle_sigint=False)
        return text
