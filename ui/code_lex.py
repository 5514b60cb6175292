"""pygments' ``RegexLexer`` loop finding each token with one regular expression: the same tokens, faster (no Qt).

pygments tries a state's rules one after the other, a Python call each, until one matches where the text
is: most of a Python line's cost is the twenty-odd rules that do not match before the one that does. Here
the rules that can start with the character where the text is (read off each rule's parsed pattern; a
rule whose first character is not known for sure, or that can match nothing, is always among them) are
joined into one alternation, each rule a group of its own, in their order. The regular expression engine
tries the alternatives in order and takes the first that matches, as the loop does, so the rule found is
the one pygments finds (the group closed last, ``lastindex``, names it) and its match is the one the rule
alone gives. A rule's global flags (``(?s)`` at its start) become flags of its group; a rule that cannot be
joined as it is (a group referred to by its number) is tried alone, in its place.

Compiling an alternation of rules with large character classes (a Unicode identifier) takes up to tens of
ms, so it is never done on the window's thread: where a state meets a character it has no alternation
for yet, its rules are tried one by one, as pygments does, and a thread of its own compiles it for the
next time; the first time a lexer is used, that thread also builds its steps for a sample of common code
(:data:`SAMPLE_CODE`), so the steps an answer needs most are ready early.
"""

from __future__ import annotations

import queue
import re
import string
import threading
from collections import deque
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from ui.idle import IDLE

#: Global inline flags at the start of a rule's pattern, e.g. ``(?s)`` or ``(?ms)``.
_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")
#: What a joined alternation cannot keep meaning the same: a group referred to by number (the groups
#: before it shift), or a conditional on a group.
_NUMBERED = re.compile(r"\\[1-9]|\(\?\(")
#: The flags a group can scope, by letter.
_SCOPED = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_ASCII = frozenset(map(chr, range(128)))

#: An inline flag that makes a pattern (or a part of it) verbose: a ``(`` or ``[`` may be in a comment.
_VERBOSE_INLINE = re.compile(r"\(\?[aiLmsu-]*x")

#: Joined rules: the alternation's ``match``, and for each of its groups the rule it is (its index in
#: the state; None for a group inside a rule).
Joined = tuple[Any, list[int | None]]


def _alternative(pattern: re.Pattern[str], base: int) -> tuple[str, int] | None:
    """A rule's pattern as one alternative of the joined expression compiled with ``base`` flags: its
    text, and how many groups it captures inside its own (:func:`_uncaptured`)."""
    text = pattern.pattern
    while (m := _GLOBAL_FLAGS.match(text)) is not None:
        text = text[m.end():]
    extra = pattern.flags & ~base & ~re.UNICODE
    letters = "".join(k for k, flag in _SCOPED.items() if extra & flag)
    if extra & ~sum(_SCOPED.values()) or _NUMBERED.search(text):
        return None
    inner = pattern.groups
    if not pattern.flags & re.VERBOSE and not _VERBOSE_INLINE.search(text):
        text, inner = _uncaptured(text)
    if letters:
        text = f"(?{letters}:{text}{chr(10) if 'x' in letters else ''})"
    elif base & re.VERBOSE:
        text += "\n"  # a comment at the end stops at the line's end, not at the group's
    return f"({text})", inner


@lru_cache(maxsize=4096)
def _uncaptured(text: str) -> tuple[str, int]:
    """A rule's pattern with its groups not capturing (named ones kept: a reference by name needs its
    group), and how many it still captures. The joined expression's groups are one a rule, then: the loop
    reads no group inside a rule off its match (a callback matches the rule's own pattern again), and the
    regular expression engine saves and restores every group's marks at each alternative it tries (with
    a group a rule's inner ones, C++'s joined number rules, 32 groups, took 2.4 us to match ``12``, more
    than their rules one by one; 0.8 us with 5)."""
    out: list[str] = []
    named = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            out.append(text[i:i + 2])
            i += 2
            continue
        if ch == "[":  # a character class: a ( in it is a character
            j = i + 1
            if j < n and text[j] == "^":
                j += 1
            if j < n and text[j] == "]":
                j += 1
            while j < n and text[j] != "]":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            continue
        if ch == "(":
            if text.startswith("?#", i + 1):  # a comment, up to its )
                j = text.find(")", i)
                j = n - 1 if j < 0 else j
                out.append(text[i:j + 1])
                i = j + 1
                continue
            if text.startswith("?P<", i + 1):
                named += 1
            elif not text.startswith("?", i + 1):
                out.append("(?:")
                i += 1
                continue
        out.append(ch)
        i += 1
    return "".join(out), named


def _join(patterns: list[re.Pattern[str]], which: list[int]) -> Joined | None:
    """The rules ``which`` (indices into ``patterns``, in order) as one alternation (None: they cannot be
    joined, the loop tries them one by one)."""
    base = patterns[which[0]].flags
    for i in which:
        base &= patterns[i].flags  # the flags every rule has; a rule's own go on its group
    parts: list[str] = []
    owners: list[int | None] = [None]  # group 0: the whole match
    for i in which:
        part = _alternative(patterns[i], base)
        if part is None:
            return None
        parts.append(part[0])
        owners += [i] + [None] * part[1]
    joined = _compiled("|".join(parts), base)
    return (joined.match, owners) if joined is not None and joined.groups == len(owners) - 1 else None


@lru_cache(maxsize=4096)
def _compiled(text: str, flags: int) -> re.Pattern[str] | None:
    """An alternation compiled (states that include the same rules meet the same characters)."""
    try:
        return re.compile(text, flags)
    except (re.error, RecursionError, OverflowError):
        return None


def _category_chars() -> dict[Any, frozenset[str]]:
    from re import _constants as c  # type: ignore[attr-defined]

    classes = {"DIGIT": r"\d", "NOT_DIGIT": r"\D", "SPACE": r"\s", "NOT_SPACE": r"\S", "WORD": r"\w",
               "NOT_WORD": r"\W"}
    out: dict[Any, frozenset[str]] = {}
    for name, cls in classes.items():
        chars = frozenset(ch for ch in _ASCII if re.fullmatch(cls, ch))
        for prefix in ("CATEGORY_", "CATEGORY_UNI_"):
            out[getattr(c, prefix + name)] = chars
    return out


def _class_chars(items: list[tuple[Any, Any]], icase: bool) -> frozenset[str] | None:
    """The ASCII characters a character class (``[...]``) takes; None: not known for sure."""
    from re import _constants as c  # type: ignore[attr-defined]

    negate, chars = False, set()
    for op, av in items:
        if op is c.NEGATE:
            negate = True
        elif op is c.LITERAL and (av < 128 or not icase):
            chars.add(chr(av))
        elif op is c.RANGE and (av[1] < 128 or not icase):
            chars.update(chr(code) for code in range(av[0], min(av[1], 127) + 1))
        elif op is c.CATEGORY and av in _CATEGORIES:
            chars |= _CATEGORIES[av]
        else:
            return None  # a non-ASCII letter that folds to an ASCII one, a locale's class...
    if icase:
        if negate:
            return None
        chars |= {ch.swapcase() for ch in chars if ch in string.ascii_letters}
    return frozenset(_ASCII - chars if negate else chars) & _ASCII


def _first(items: Any, icase: bool) -> tuple[frozenset[str] | None, bool]:
    """The ASCII characters a parsed pattern's match can start with (None: any), and whether it can be
    empty (then what follows it can start the match as well)."""
    from re import _constants as c  # type: ignore[attr-defined]

    out: set[str] = set()
    for op, av in items:
        empty = False
        if op is c.LITERAL:
            ch = chr(av)
            if av >= 128 and icase:
                return None, True
            first: frozenset[str] | None = frozenset({ch, ch.swapcase()} if icase else {ch}) & _ASCII
        elif op is c.IN:
            first = _class_chars(av, icase)
        elif op is c.SUBPATTERN:
            _group, add, remove, inner = av
            if (add | remove) & ~(re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE):
                return None, True
            first, empty = _first(inner, (icase or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE)
        elif op is c.BRANCH:
            first, empty = frozenset(), False
            for branch in av[1]:
                got, got_empty = _first(branch, icase)
                if got is None:
                    return None, True
                first, empty = first | got, empty or got_empty
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)):
            first, empty = _first(av[2], icase)
            empty = empty or av[0] == 0
        elif op is getattr(c, "ATOMIC_GROUP", None):
            first, empty = _first(av, icase)
        elif op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            first, empty = frozenset(), True  # takes no character (what it asks of them is not read here)
        else:
            return None, True
        if first is None:
            return None, True
        out |= first
        if not empty:
            return frozenset(out), False
    return frozenset(out), True


def _starts(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """The ASCII characters a rule's match can start with; None: any, or it can match nothing."""
    return _starts_of(pattern.pattern, pattern.flags)


@lru_cache(maxsize=4096)
def _starts_of(text: str, flags: int) -> frozenset[str] | None:
    """:func:`_starts`, by pattern (a lexer's states include the same rules many times over)."""
    from re import _parser  # type: ignore[attr-defined]

    try:
        parsed = _parser.parse(text, flags)
        first, empty = _first(parsed.data, bool(parsed.state.flags & re.IGNORECASE))
    except Exception:  # an internal of the re module changed: no shortcut, same tokens
        return None
    return None if empty else first


#: A rule as the loop uses it: the token type it gives (None: its action is a callback, or it gives
#: none), its action, the state it goes to, and its own ``match``.
Rule = tuple[Any, Any, Any, Any]
#: A step of a state's search: an alternation and, for each of its groups, the rule it is (None: a group
#: inside a rule); or one rule tried alone, as pygments tries it, and that rule for each of its groups
#: (the loop reads the rule off the group closed last, ``lastindex``, 0 when there is none).
Step = tuple[Any, "list[Rule | None]"]


def _rule(rule: tuple[Any, Any, Any]) -> Rule:
    """A state's rule (``rexmatch, action, new_state``) as the loop uses it (:data:`Rule`)."""
    from pygments.token import _TokenType

    rexmatch, action, new_state = rule
    return (action if type(action) is _TokenType else None), action, new_state, rexmatch


def _steps(patterns: list[re.Pattern[str]], rules: list[Rule], which: list[int]) -> list[Step]:
    """The rules ``which`` in order, as few steps as can be: runs of rules that join, and the others alone."""
    steps: list[Step] = []
    run: list[int] = []

    def alone(i: int) -> Step:
        return rules[i][3], [rules[i]] * (patterns[i].groups + 1)

    def close() -> None:
        if run:
            joined = _join(patterns, run)
            steps.extend([(joined[0], [None if i is None else rules[i] for i in joined[1]])] if joined is not None
                         else [alone(i) for i in run])
            run.clear()

    for i in which:
        if _alternative(patterns[i], patterns[i].flags) is None:
            close()
            steps.append(alone(i))
        else:
            run.append(i)
    close()
    return steps


class _State:
    """A state's rules, and for each ASCII character met, the steps that try the rules that can start
    with it (built once, by :func:`prepare` or the compiling thread; shared by the characters that have
    the same rules)."""

    __slots__ = ("by_char", "by_rules", "loop_only", "resolved", "rules", "starts")

    def __init__(self, rules: list[tuple[Any, Any, Any]]) -> None:
        self.rules = rules
        #: The rules as the loop uses them, in order (tried one by one where no steps are built).
        self.resolved = [_rule(rule) for rule in rules]
        #: The rules are not all compiled patterns (nothing to read them from): pygments' loop, always.
        self.loop_only = not all(isinstance(getattr(r[0], "__self__", None), re.Pattern) for r in rules)
        self.starts: list[frozenset[str] | None] | None = None
        self.by_char: dict[str, list[Step]] = {}
        self.by_rules: dict[tuple[int, ...], list[Step]] = {}

    def at(self, ch: str) -> list[Step]:
        """Build the steps for an ASCII character (the rules are compiled patterns)."""
        patterns = [rexmatch.__self__ for rexmatch, _action, _new in self.rules]
        if self.starts is None:
            self.starts = [_starts(p) for p in patterns]
        which = tuple(i for i, first in enumerate(self.starts) if first is None or ch in first)
        steps = self.by_rules.get(which)
        if steps is None:
            steps = self.by_rules[which] = _steps(patterns, self.resolved, list(which))
        self.by_char[ch] = steps
        return steps


class _States(dict[str, _State]):
    """A lexer's states, read the first time the lexer enters them."""

    def __init__(self, tokendefs: dict[str, Any]) -> None:
        super().__init__()
        self.tokendefs = tokendefs

    def __missing__(self, state: str) -> _State:
        read = self[state] = _State(self.tokendefs[state])
        return read


#: Each lexer's states, by the id of its processed rules (kept with them, so the id stays theirs).
_LEXERS: dict[int, _States] = {}
_CATEGORIES = _category_chars()
#: The (state, character) pairs met with no steps yet, for the compiling thread.
_WANTED: set[tuple[int, str]] = set()
#: The compiling thread's work, in order: a state's steps for a character, or a new lexer to prepare.
_QUEUE: queue.SimpleQueue[tuple[_State, str] | Any] = queue.SimpleQueue()
#: The lexers to prepare put off while the window is busy (:func:`_yield_to_window`), in order.
_LATER: deque[Any] = deque()
#: How long (s) the compiling thread waits at a time for the window to be idle, taking the steps asked meanwhile.
_WAIT = 0.05
_THREAD: list[threading.Thread] = []
#: Whether the compiling thread is doing a job (see :func:`busy`).
_WORKING = [False]
#: The lexers (by their rules' id) :func:`tokens` has asked the compiling thread to prepare.
_PREPARING: set[int] = set()


def _states(tokendefs: dict[str, Any]) -> _States:
    """The states of a lexer's processed rules (``_tokens``: its class's, built once, or an instance's
    own table among a few, as C#'s by Unicode level)."""
    known = _LEXERS.get(id(tokendefs))
    if known is None or known.tokendefs is not tokendefs:
        known = _LEXERS[id(tokendefs)] = _States(tokendefs)
    return known


#: Code lexed, on the compiling thread, in each language the first time a code block in it is lexed, so
#: the states and characters an answer's code meets most have their one regular expression each ready
#: early (a Python, shell, JavaScript, diff and C++ mix: the other languages' lexers meet part of it).
SAMPLE_CODE = (
    '#!/bin/sh\n# comment\nimport os, sys  # c\nfrom a.b import (c as d)\n\n@decorator(1)\nclass Name(Base):\n'
    '    """Doc: it\'s <this> & that."""\n\n    def method_1(self, event, context=None, *args, **kw) -> int:\n'
    "        value_2 = compute(event, 3) * 2.5e-3 + 0x1F - 0o7 / 4 // 5 % 6 ** 7  # step <of> it\n"
    "        message = f\"{event['name']!r} took {elapsed:.2f} s ({i})\"; s = 'a' + r'\\d' + b\"x\"\n"
    "        if value_2 >= 1 and not x or y is None: return [True, False, {'k': [1, -2]}]\n"
    "        async with lock: await task; yield from gen; lambda: x\n"
    '\nconst f = (a, b) => { return `t ${a}` /* c */ }; let y = {k: "v", n: null}; // c\n'
    'echo "$HOME" | grep -v x > /dev/null && export V=$(ls) || exit 1\n'
    "--- a/file\n+++ b/file\n@@ -1,2 +1,2 @@\n-old line\n+new line\n context\n"
    '#include <vector>\n/* Block\n   comment. */\nstd::vector<int> handler_1(const std::string& name, int count) {\n'
    '    auto value_2 = compute(name, 3) * 2;  // step "of" it\n    return {};\n}\n'
)


def _want(state: _State, ch: str) -> None:
    """Have the compiling thread build a state's steps for a character (compiling an alternation of
    rules with large character classes takes up to tens of ms: never on the window's thread)."""
    key = (id(state), ch)
    if key in _WANTED:
        return
    _WANTED.add(key)
    _put((state, ch))


def _prepare_later(lexer: Any) -> None:
    """Have the compiling thread :func:`prepare` a lexer met for the first time with :data:`SAMPLE_CODE`."""
    key = id(lexer._tokens)
    if key in _PREPARING:
        return
    _PREPARING.add(key)
    _put(lexer)


def prepare_soon(lexers: list[Any]) -> None:
    """Have the compiling thread :func:`prepare` ``lexers`` (the common languages) with :data:`SAMPLE_CODE`, in
    order, after what it has to do now: returns at once. The window asks it a few seconds after its start-up, so
    the first code block of a common language is lexed at full speed from its first line (left to that block,
    it streamed while its steps were being built: 0.35 x prose's speed for Python, with stalls of ~60 ms)."""
    for lexer in lexers:
        if lexer is not None and handles(lexer):  # (JSON's lexer, say, is not a RegexLexer: nothing to build)
            _prepare_later(lexer)


def _put(job: tuple[_State, str] | Any) -> None:
    _QUEUE.put(job)
    if not _THREAD:
        thread = threading.Thread(target=_compile_wanted, name="robotlab-lexer-compile", daemon=True)
        _THREAD.append(thread)
        thread.start()


def _compile_wanted() -> None:
    while True:
        job = _LATER.popleft() if _LATER and _QUEUE.empty() else _QUEUE.get()
        _WORKING[0] = True
        try:
            _do(job)
        finally:
            _WORKING[0] = False


def _do(job: tuple[_State, str] | Any) -> None:
    if isinstance(job, tuple):
        state, ch = job
        if ch not in state.by_char:
            state.at(ch)
    else:
        _yield_to_window()
        prepare(job, SAMPLE_CODE)


def _yield_to_window() -> None:
    """On the compiling thread, before a lexer's preparation and each compile in it: wait while the window is busy
    (:data:`ui.idle.IDLE` clear), taking meanwhile the steps a code block on screen asks for (one compile each; a
    lexer to prepare asked meanwhile waits in :data:`_LATER`). Preparing holds the interpreter 300-400 ms, and the
    window's thread waited for it at each return from Qt: streaming stalled 50-108 ms (see :mod:`ui.idle`)."""
    if not _THREAD or threading.current_thread() is not _THREAD[0]:
        return
    while not IDLE.is_set():
        try:
            job = _QUEUE.get(timeout=_WAIT)
        except queue.Empty:
            continue
        if isinstance(job, tuple):
            _do(job)
        else:
            _LATER.append(job)


def asked(lexer: Any) -> bool:
    """Whether the compiling thread was asked to prepare ``lexer`` (see :func:`busy` for whether it is done)."""
    return id(lexer._tokens) in _PREPARING


def busy() -> bool:
    """Whether the compiling thread has work asked of it not done yet (a bench waits for it to be done, as a
    person who reads the window a moment before the first answer comes does)."""
    return _WORKING[0] or not _QUEUE.empty() or bool(_LATER)


def prepare(lexer: Any, sample: str) -> None:
    """Build the steps ``sample`` takes ``lexer`` through, now, on this thread (meant for a worker, as
    pygments' own first use is): the first answer in a common language is lexed at full speed at once."""
    from pygments.lexer import RegexLexer

    if isinstance(lexer, RegexLexer):
        lex_from(lexer, sample, ("root",), compile_now=True)


def handles(lexer: Any) -> bool:
    """Whether :func:`tokens` gives ``lexer``'s tokens (and a state carried from line to line means what
    it means to pygments): a ``RegexLexer`` without filters whose loop is pygments' own, or C's and C++'s
    (pygments' loop, then a name of a standard type made a type, as theirs does)."""
    from pygments.lexer import RegexLexer
    from pygments.lexers.c_cpp import CFamilyLexer

    own = type(lexer).get_tokens_unprocessed
    return isinstance(lexer, RegexLexer) and not lexer.filters and (
        own is RegexLexer.get_tokens_unprocessed or own is CFamilyLexer.get_tokens_unprocessed)


def _c_types(lexer: Any, found: Iterator[tuple[Any, str]]) -> Iterator[tuple[Any, str]]:
    """What C's and C++'s lexers make of their loop's tokens: a name of a standard type is a type
    (``CFamilyLexer.get_tokens_unprocessed``, its options included: the names it takes, read once)."""
    from pygments.token import Keyword, Name

    types = frozenset().union(*(names for option, names in (
        (lexer.stdlibhighlighting, lexer.stdlib_types), (lexer.c99highlighting, lexer.c99_types),
        (lexer.c11highlighting, lexer.c11_atomic_types), (lexer.platformhighlighting, lexer.linux_types)) if option))
    for kind, value in found:
        if kind is Name and value in types:
            kind = Keyword.Type
        yield kind, value


def lex_from(lexer: Any, text: str, stack: tuple[str, ...], *, compile_now: bool = False,
             stops: dict[int, tuple[str, ...]] | None = None) -> tuple[list[tuple[Any, str]], tuple[str, ...]]:
    """pygments' ``RegexLexer.get_tokens_unprocessed`` (its tokens, without their positions), started in
    state ``stack`` and giving back the state it ended in (the library's own drops it). Where a state
    meets a character it has no steps for yet, its rules are tried one by one (and the steps are built
    by a thread of their own; ``compile_now``: here, now). ``stops``: gets the state after each match,
    at the position it ends (where lexing a part of ``text`` can resume without lexing it again)."""
    ended: list[tuple[str, ...]] = []
    out = list(tokens(lexer, text, stack, ended=ended, compile_now=compile_now, stops=stops))
    return out, ended[0]


def tokens(lexer: Any, text: str, stack: tuple[str, ...] = ("root",), *, ended: list[tuple[str, ...]] | None = None,
           compile_now: bool = False, stops: dict[int, tuple[str, ...]] | None = None) -> Iterator[tuple[Any, str]]:
    """:func:`lex_from`'s tokens one at a time (a caller can stop between two); ``ended`` gets the state
    they end in (``stops``: see :func:`lex_from`). ``lexer``: one :func:`handles`."""
    from pygments.lexer import RegexLexer

    if not compile_now and id(lexer._tokens) not in _PREPARING:
        _prepare_later(lexer)
    found = _tokens(lexer, text, stack, ended, compile_now, stops)
    return found if type(lexer).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed else _c_types(lexer, found)


def _tokens(lexer: Any, text: str, stack: tuple[str, ...], ended: list[tuple[str, ...]] | None,
            compile_now: bool, stops: dict[int, tuple[str, ...]] | None = None) -> Iterator[tuple[Any, str]]:
    from pygments.token import Error, Whitespace

    pos = 0
    tokendefs = lexer._tokens
    states = _states(tokendefs)
    statestack = list(stack)
    state = states[statestack[-1]]
    by_char = state.by_char
    size = len(text)
    # Per token: a dict look-up, a match, the rule its group is (its type read off ahead), the token.
    while True:
        steps = by_char.get(text[pos]) if pos < size else None
        if steps is None and pos < size and (ch := text[pos]) < "\x80" and not state.loop_only:
            if compile_now:
                _yield_to_window()
                steps = state.at(ch)
            else:
                _want(state, ch)
        m = None
        if steps is not None:
            for match, rules in steps:
                m = match(text, pos)
                if m is not None:
                    kind, action, new_state, rexmatch = rules[m.lastindex or 0]  # type: ignore[misc]
                    break
        else:  # no steps built for this character (yet): the rules one by one, as pygments tries them
            for rule in state.resolved:
                m = rule[3](text, pos)
                if m:
                    kind, action, new_state, rexmatch = rule
                    break
            else:
                m = None
        if m is not None:
            if kind is not None:
                yield kind, m.group()
            elif action is not None:
                m = rexmatch(text, pos)  # the rule's own match: its groups as the action numbers them
                for _pos, got, value in action(lexer, m):
                    yield got, value
            pos = m.end()
            if new_state is not None:
                if isinstance(new_state, tuple):
                    for name in new_state:
                        if name == "#pop":
                            if len(statestack) > 1:
                                statestack.pop()
                        elif name == "#push":
                            statestack.append(statestack[-1])
                        else:
                            statestack.append(name)
                elif isinstance(new_state, int):
                    if abs(new_state) >= len(statestack):
                        del statestack[1:]
                    else:
                        del statestack[new_state:]
                elif new_state == "#push":
                    statestack.append(statestack[-1])
                state = states[statestack[-1]]
                by_char = state.by_char
            if stops is not None:
                stops[pos] = tuple(statestack)
            continue
        if pos >= size:
            break
        if text[pos] == "\n":  # at the end of a line, back to "root"
            statestack = ["root"]
            state = states["root"]
            by_char = state.by_char
            yield Whitespace, "\n"
        else:
            yield Error, text[pos]
        pos += 1
        if stops is not None:
            stops[pos] = tuple(statestack)
    if ended is not None:
        ended.append(tuple(statestack))
