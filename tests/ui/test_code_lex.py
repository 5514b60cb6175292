"""A streamed code block's lexer loop (:mod:`ui.code_lex`) gives pygments' own tokens, whatever the language,
the text and how far its rules are joined yet; and it finds a token with one regular expression, not by
trying the state's rules one after the other."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pygments.lexers import get_lexer_by_name

from ui import markdown
from ui.chat.view.code_lines import CodeLines

#: Pieces of code of many languages (strings, comments, numbers, tags, escapes, non-ASCII text, tabs).
SNIPPETS = (
    "def f(x):\n    return x * 2  # c\n", '"""doc\nmore"""\n', "s = f'{a!r} {b:.2f}'\n", "int main() { return 0; }\n",
    "/* c\n */\n", '<a href="x">t</a>\n', '{"k": [1, 2.5, null, true]}\n', 'echo "$HOME" | grep -v x # c\n',
    "x = `ls`; y = 'q'\n", "#include <v>\n", "SELECT * FROM t WHERE a = 1;\n", "  - key: value\n",
    "@decorator\nclass A(B):\n    pass\n", "\t\\n\\x00 \\\\ \n", "r'''raw\n'''\n", "fn main() -> i32 { let x = 1u8; }\n",
    "ünï 日本 \u2028 <tag> & ;\n", "$x = ${y}; @a{b}\n", "0x1F 0o7 1_000.5e-3j\n", "]]>{{}}((\n",
)
LANGUAGES = ("python", "bash", "javascript", "typescript", "rust", "go", "java", "html", "css", "sql", "toml",
             "kotlin", "csharp", "diff", "ini", "xml", "markdown", "dockerfile", "c", "cpp")


def text_for(seed: int) -> str:
    rng = random.Random(seed)
    text = "".join(rng.choice(SNIPPETS) for _ in range(rng.randint(10, 40)))
    if seed % 3 == 0:  # a soup of the same characters: states entered and left anywhere
        text = "".join(rng.choice(text) for _ in range(len(text)))
    return text


def pygments_tokens(lexer: Any, text: str) -> list[tuple[Any, str]]:
    return [(kind, value) for _pos, kind, value in lexer.get_tokens_unprocessed(text)]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_the_tokens_are_pygments_own(language: str, seed: int) -> None:
    from ui import code_lex

    lexer = get_lexer_by_name(language, stripnl=False, ensurenl=False)
    assert code_lex.handles(lexer)
    text = text_for(seed)
    expected = pygments_tokens(lexer, text)
    # Rules tried one by one where no joined ones are ready, then joined (built on this thread, now).
    assert code_lex.lex_from(lexer, text, ("root",))[0] == expected
    assert code_lex.lex_from(lexer, text, ("root",), compile_now=True)[0] == expected
    # Started in a state mid-text, it ends in pygments' state (a line lexed at a time carries it on).
    lines = text.splitlines(keepends=True)
    stack: tuple[str, ...] = ("root",)
    got: list[tuple[Any, str]] = []
    for line in lines:
        tokens, stack = code_lex.lex_from(lexer, line, stack, compile_now=True)
        got += tokens
    assert "".join(value for _kind, value in got) == text


def test_a_streamed_python_line_is_lexed_with_about_one_regular_expression_a_token() -> None:
    """pygments tries a Python state's rules one after the other, each a call of its regular expression's
    match: twenty-odd a token. Joined, a token is one match (once the rules are joined, by the compiling
    thread: the first use of a lexer has it build the steps of a sample of common code)."""
    markdown.load_libraries()
    text = "".join(f"    value_{i} = compute(event, {i}) * 2.5  # step {i} <of> it\n" for i in range(60))
    matches = 0

    def count(_frame: Any, event: str, arg: Any) -> None:
        nonlocal matches
        if event == "c_call" and getattr(arg, "__name__", "") == "match" and isinstance(
                getattr(arg, "__self__", None), re.Pattern):
            matches += 1

    tokens = pygments_tokens(markdown.code_lexer("python"), text)
    per_token = float("inf")
    deadline = time.monotonic() + 30  # bounds a hang: the compiling thread joins what the first passes met
    while per_token > 2 and time.monotonic() < deadline:
        lines = CodeLines("python")
        matches = 0
        sys.setprofile(count)
        try:
            shown = lines.finished(text)
        finally:
            sys.setprofile(None)
        assert len(shown) == 60 and matches > 0
        per_token = matches / len(tokens)
        time.sleep(0.01)
    assert per_token <= 2, f"{per_token:.1f} regular expression matches a token"


def test_a_token_is_a_look_up_a_match_and_its_text() -> None:
    """Once a state's steps are built, the loop's C-level calls per token are the steps' look-up for the
    character, the match, the token's text and its end: the rule a group is, and the token type it gives,
    were read off when the steps were built (not an ``isinstance`` and a look-up in the state's rules per
    token). Counted, not timed: about 4 a token (5 when each token looked its rule up)."""
    from ui import code_lex

    text = "".join(f"    value_{i} = compute(event, {i}) * 2.5  # step {i} <of> it\n" for i in range(60))
    lexer = markdown.code_lexer("python")
    code_lex.prepare(lexer, text)  # the steps this text takes, built now
    calls = 0

    def count(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal calls
        if event == "c_call":
            calls += 1

    sys.setprofile(count)
    try:
        tokens = code_lex.lex_from(lexer, text, ("root",))[0]
    finally:
        sys.setprofile(None)
    assert tokens == pygments_tokens(lexer, text)
    assert calls / len(tokens) < 4.5, f"{calls / len(tokens):.2f} C-level calls a token"


@pytest.mark.parametrize("language", ["python", "cpp", "javascript"])
def test_a_joined_expression_captures_a_group_a_rule(language: str) -> None:
    """The regular expression engine saves and restores every group's marks at each alternative it tries, so
    the joined expression captures one group a rule (the one naming it), not the rules' own groups (a named
    one stays: a reference by name needs it). Read off the steps built, not timed."""
    from ui import code_lex

    lexer = markdown.code_lexer(language)
    code_lex.prepare(lexer, code_lex.SAMPLE_CODE)
    joined = 0
    for state in code_lex._states(lexer._tokens).values():
        for steps in state.by_rules.values():
            for match, rules in steps:
                if rules[0] is not None:
                    continue  # a rule tried alone, as it is
                joined += 1
                pattern = match.__self__
                assert pattern.groups == len(rules) - 1
                inner = sum(rule is None for rule in rules[1:])
                assert inner == pattern.pattern.count("(?P<"), f"{inner} groups inside rules in {pattern.pattern[:200]!r}"
    assert joined > 10


def test_the_windows_start_leaves_the_joined_rules_to_the_first_code_block() -> None:
    """Compiling the joined rules takes a few hundred ms of the interpreter: the start-up worker
    (load_libraries) does not do it; the first code block in a language has the compiling thread do it, and so
    does prepare_lexers (the window calls it a few seconds after start-up) for the common languages.
    (In a process of its own: the other tests here have built rules already.)"""
    script = (
        "from ui import code_lex, markdown\n"
        "markdown.load_libraries()\n"
        "print(len(code_lex._LEXERS), len(code_lex._THREAD))\n"
        "lexer = markdown.code_lexer('python')\n"
        "list(code_lex.tokens(lexer, 'x = 1\\n'))\n"
        "code_lex._THREAD[0].join(0.0)\n"
        "print(len(code_lex._THREAD), code_lex.asked(lexer))\n"
        "import time\n"
        "cpp = markdown.code_lexer('cpp')\n"
        "markdown.prepare_lexers()\n"
        "deadline = time.monotonic() + 60\n"
        "while (code_lex.busy() or not code_lex.asked(cpp)) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "states = code_lex._LEXERS[id(cpp._tokens)]\n"
        "print(code_lex.busy(), bool(states['root'].by_char))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=str(Path(__file__).resolve().parents[2]))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["0 0", "1 True", "False True"]


def test_the_compiling_thread_prepares_lexers_only_while_the_window_is_idle() -> None:
    """Preparing a lexer holds the interpreter for hundreds of ms, and the window's thread waits for it at each
    return from Qt (streaming stalled 50-108 ms): the compiling thread prepares only while ``ui.idle.IDLE`` is set,
    and meanwhile still builds the steps a code block on screen asks for. (In a process of its own: fresh lexers.)"""
    script = (
        "import time\n"
        "from ui import code_lex, idle, markdown\n"
        "markdown.load_libraries()\n"
        "idle.IDLE.clear()\n"  # the window busy (a stream)
        "cpp, py = markdown.code_lexer('cpp'), markdown.code_lexer('python')\n"
        "code_lex.prepare_soon([cpp])\n"
        "list(code_lex.tokens(py, 'x = 1\\n'))\n"  # a code block on screen: its steps wanted, its lexer to prepare
        "def root(lexer):\n"
        "    states = code_lex._LEXERS.get(id(lexer._tokens))\n"
        "    return states['root'].by_char if states is not None and 'root' in states else {}\n"
        "deadline = time.monotonic() + 60\n"
        "while 'x' not in root(py) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "time.sleep(0.5)\n"  # (unheld, the compiling thread prepares C++ within this)
        "print('x' in root(py), len(root(py)), bool(root(cpp)), code_lex.busy())\n"
        "idle.IDLE.set()\n"
        "while code_lex.busy() and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print(bool(root(cpp)), len(root(py)) > 1, code_lex.busy())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=str(Path(__file__).resolve().parents[2]))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    # Busy: the steps asked for are built (the 5 characters of 'x = 1\n'), neither lexer prepared; idle: both are.
    assert lines[:2] == ["True 5 False True", "True True False"], done.stdout
