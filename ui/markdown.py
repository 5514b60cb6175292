"""Markdown (the subset chat models write) to the HTML subset Qt's rich text understands.

Code blocks and JSON are highlighted by pygments with inline styles. ``split_stable``
finds the end of the last complete block of a growing text, so a streaming view can
freeze what is finished and re-render only the tail: nothing above the tail moves.
"""

from __future__ import annotations

import html
import json
import re
from functools import lru_cache
from typing import Any

from ui import theme

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)([-*+])\s+(.*)$")
_ORDERED = re.compile(r"^(\s*)(\d{1,9})[.)]\s+(.*)$")
_HR = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_AUTOLINK = re.compile(r"(?<![\"'=>])\b(https?://[^\s<]+[^\s<.,;:!?)\]'\"])")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")


def split_stable(text: str) -> int:
    """Index just past the last complete block of ``text`` (0 when none is complete).

    A block is complete when a blank line follows it outside a code fence, or when its
    closing fence has arrived. The rest (the tail) may still change as text streams in.
    """
    pos = 0
    stable = 0
    in_fence: str | None = None
    prev_blank = True
    for line in text.splitlines(keepends=True):
        end = pos + len(line)
        complete_line = line.endswith("\n")
        stripped = line.strip()
        m = _FENCE.match(line)
        if in_fence is not None:
            if complete_line and stripped.startswith(in_fence) and stripped.strip("`~") == "":
                in_fence = None
                stable = end
        elif m and complete_line:
            in_fence = m.group(1)[:3]
            if not prev_blank:
                stable = pos  # the paragraph above the fence is finished
        elif complete_line and not stripped:
            stable = end
        prev_blank = not stripped
        pos = end
    return stable


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def inline(text: str) -> str:
    """Inline Markdown (code, links, bold, italic, strike) to HTML; everything else escaped."""
    c = theme.colors()
    held: list[str] = []

    def hold(html_text: str) -> str:
        held.append(html_text)
        return f"\x00{len(held) - 1}\x00"

    def keep_code(m: re.Match[str]) -> str:
        code = m.group(2).strip() or m.group(2)
        return hold(f'<code style="font-family:{theme.mono_family()}; background-color:{c.inline_code_bg};">'
                    f"&#8201;{_esc(code)}&#8201;</code>")

    def keep_link(m: re.Match[str]) -> str:
        label, url = m.group(1), m.group(2)
        return hold(f'<a href="{html.escape(url)}" style="color:{c.accent}; text-decoration:none;">'
                    f"{_emphasis(_esc(label))}</a>")

    text = _INLINE_CODE.sub(keep_code, text)
    text = _LINK.sub(keep_link, text)
    text = _esc(text)
    text = _AUTOLINK.sub(lambda m: f'<a href="{m.group(1)}" style="color:{c.accent}; text-decoration:none;">'
                         f"{m.group(1)}</a>", text)
    text = _emphasis(text)
    while "\x00" in text:
        new = re.sub("\x00(\\d+)\x00", lambda m: held[int(m.group(1))], text)
        if new == text:
            break
        text = new
    return text


def _emphasis(text: str) -> str:
    text = _BOLD.sub(r"<b>\2</b>", text)
    text = _ITALIC.sub(r"<i>\2</i>", text)
    return _STRIKE.sub(r"<s>\1</s>", text)


@lru_cache(maxsize=64)
def _formatter(style: str) -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(noclasses=True, nowrap=True, style=style)


def highlight(code: str, language: str | None) -> str:
    """``code`` as highlighted HTML spans (no wrapper); plain escaped text when unknown."""
    from pygments import highlight as _highlight

    lang = (language or "").strip().lower()
    if not lang or len(code) > 200_000:
        return _esc(code)
    lexer = _lexer(lang)
    if lexer is None:
        return _esc(code)
    result = _highlight(code, lexer, _formatter(theme.colors().pygments_style))
    # pygments styles may set a background on whole spans; the block has its own.
    result = re.sub(r"background-color: #[0-9a-fA-F]{3,6};?\s*", "", result)
    return result[:-1] if result.endswith("\n") else result


@lru_cache(maxsize=128)
def _lexer(lang: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def warm_up() -> None:
    """Import pygments and build the common lexers now (at idle time), not in the middle of a stream."""
    for lang in ("python", "json", "diff", "bash", "javascript"):
        highlight("x = 1\n", lang)


def code_block(code: str, language: str | None, *, label: bool = True) -> str:
    c = theme.colors()
    body = highlight(code.rstrip("\n"), language)
    tag = ""
    if label and language:
        tag = (f'<div style="color:{c.muted}; font-size:small; margin-bottom:4px;">{_esc(language)}</div>')
    return (
        f'<table width="100%" cellspacing="0" cellpadding="10" style="margin-top:4px; margin-bottom:10px; '
        f'background-color:{c.code_bg}; border: 1px solid {c.border};"><tr><td>{tag}'
        f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">{body}</pre>'
        "</td></tr></table>"
    )


def to_json_text(value: Any, *, indent: int = 2) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, TypeError):
            return value
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def json_html(value: Any, *, max_chars: int = 60_000) -> str:
    """Pretty, highlighted JSON as a ``<pre>`` block (long values cut with a note)."""
    text = to_json_text(value)
    note = ""
    if len(text) > max_chars:
        note = f"\n… {len(text) - max_chars:,} more characters (open Raw to see everything)"
        text = text[:max_chars]
    return (f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">'
            f"{highlight(text, 'json')}{_esc(note)}</pre>")


def render(text: str) -> str:
    """Markdown to Qt rich-text HTML."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    para: list[str] = []
    c = theme.colors()

    def flush_para() -> None:
        if para:
            joined = "<br>".join(inline(p.strip()) for p in para if p.strip()) if any(
                p.endswith("  ") for p in para) else inline(" ".join(p.strip() for p in para))
            out.append(f'<p style="margin-top:0; margin-bottom:10px;">{joined}</p>')
            para.clear()

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush_para()
            marker = fence.group(1)[:3]
            lang = fence.group(2)
            body: list[str] = []
            i += 1
            while i < len(lines) and not (lines[i].strip().startswith(marker) and lines[i].strip().strip("`~") == ""):
                body.append(lines[i])
                i += 1
            i += 1  # closing fence (or end of text while streaming)
            out.append(code_block("\n".join(body), lang))
            continue
        stripped = line.strip()
        if not stripped:
            flush_para()
            i += 1
            continue
        heading = _HEADING.match(stripped)
        if heading:
            flush_para()
            level = len(heading.group(1))
            size = {1: "x-large", 2: "large", 3: "medium"}.get(level, "medium")
            out.append(f'<p style="margin-top:8px; margin-bottom:6px; font-size:{size}; font-weight:600;">'
                       f"{inline(heading.group(2))}</p>")
            i += 1
            continue
        if _HR.match(line):
            flush_para()
            out.append("<hr>")
            i += 1
            continue
        if stripped.startswith(">"):
            flush_para()
            quote: list[str] = []
            while i < len(lines) and lines[i].strip().startswith(">"):
                quote.append(lines[i].strip()[1:].lstrip())
                i += 1
            out.append(f'<table cellspacing="0" cellpadding="0" style="margin-bottom:10px;"><tr>'
                       f'<td width="3" style="background-color:{c.border};"></td><td width="10"></td>'
                       f'<td style="color:{c.muted};">{render(chr(10).join(quote))}</td></tr></table>')
            continue
        if _BULLET.match(line) or _ORDERED.match(line):
            flush_para()
            i = _list(lines, i, out)
            continue
        if "|" in stripped and i + 1 < len(lines) and _TABLE_SEP.match(lines[i + 1]):
            flush_para()
            i = _table(lines, i, out)
            continue
        para.append(line)
        i += 1
    flush_para()
    return "".join(out)


def _list(lines: list[str], i: int, out: list[str]) -> int:
    first = _BULLET.match(lines[i]) or _ORDERED.match(lines[i])
    assert first is not None
    base = len(first.group(1))
    ordered = _ORDERED.match(lines[i]) is not None and _BULLET.match(lines[i]) is None
    tag = "ol" if ordered else "ul"
    items: list[list[str]] = []
    while i < len(lines):
        line = lines[i]
        m = _BULLET.match(line) or _ORDERED.match(line)
        if m and len(m.group(1)) == base:
            items.append([m.group(3)])
        elif m and len(m.group(1)) > base and items:
            items[-1].append(line[base + 2:] if len(line) > base + 2 else line.strip())
        elif line.strip() and items and (line.startswith(" " * (base + 2)) or line.startswith("\t")):
            items[-1].append(line.strip())
        elif not line.strip() and i + 1 < len(lines) and (
            _BULLET.match(lines[i + 1]) or _ORDERED.match(lines[i + 1])
        ):
            pass
        else:
            break
        i += 1
    parts = []
    for item in items:
        head, rest = item[0], item[1:]
        nested = render("\n".join(r for r in rest)) if rest and any(
            _BULLET.match(r) or _ORDERED.match(r) for r in rest) else ""
        text = inline(head if nested else " ".join([head, *rest]))
        parts.append(f'<li style="margin-bottom:3px;">{text}{nested}</li>')
    style = "margin-top:0; margin-bottom:10px; -qt-list-indent:1;"
    out.append(f'<{tag} style="{style}">{"".join(parts)}</{tag}>')
    return i


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [cell.strip() for cell in s.split("|")]


def _table(lines: list[str], i: int, out: list[str]) -> int:
    c = theme.colors()
    header = _cells(lines[i])
    i += 2
    rows: list[list[str]] = []
    while i < len(lines) and "|" in lines[i] and lines[i].strip():
        rows.append(_cells(lines[i]))
        i += 1
    head = "".join(f'<th align="left" style="background-color:{c.card_header};">{inline(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{inline(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    out.append(f'<table cellspacing="0" cellpadding="6" border="1" style="border-color:{c.border}; '
               f'border-style:solid; margin-bottom:10px;"><tr>{head}</tr>{body}</table>')
    return i
