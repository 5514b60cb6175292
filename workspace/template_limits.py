"""The Jinja2 sandbox robot templates render in, with limits on time and size.

Jinja2's :class:`~jinja2.sandbox.SandboxedEnvironment` refuses attribute tricks and ranges over
100,000 items, but a template can still nest loops for hours, or build a string of gigabytes with
``'x' * 300000000``, ``s ~ s`` doubled in a loop, ``'%0300000000d' % 1`` or ``|center(300000000)``.
:class:`LimitedEnvironment` adds:

- a deadline (:data:`RENDER_SECONDS`), checked at every loop iteration (each ``{% for %}`` iterates
  through a checking filter), every call (macros, methods, ``range``) and every operator it intercepts;
- a size (:data:`MAX_CHARS` characters) no text or list built by ``*``, ``+``, ``~``, ``%``, a method
  of a text or the filters that take a width or join may pass, and that the whole output may not pass (:func:`render_limited` renders chunk
  by chunk).

Past a limit the render raises :class:`RenderLimitError` (a ``jinja2.TemplateError``) saying which
limit and what to do. This module imports Jinja2: import it inside functions.
"""

from __future__ import annotations

import contextvars
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from jinja2 import nodes, pass_context
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment, SecurityError

__all__ = ["MAX_CHARS", "RENDER_SECONDS", "LimitedEnvironment", "RenderLimitError", "render_limited"]

#: How long one render may take (seconds).
RENDER_SECONDS = 3.0
#: How many characters the output, and any text or list built while rendering, may have.
MAX_CHARS = 4_000_000
#: How many bits a number built by ``*`` or ``**`` may have.
MAX_BITS = 100_000

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("robotlab_template_deadline", default=None)
_NUMBER = re.compile(r"\d+")
_TIMED = "robotlab_timed"


class RenderLimitError(SecurityError):
    """A render past :data:`RENDER_SECONDS` or :data:`MAX_CHARS`."""


def _check_time() -> None:
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise RenderLimitError(f"it took more than {RENDER_SECONDS:g} seconds to render (a loop that does not end, or "
                               "loops nested too deep?); make the loops smaller")


def _too_big(size: int) -> RenderLimitError:
    return RenderLimitError(f"it builds a text or list of {size:,} items, more than the {MAX_CHARS:,} a template may; "
                            "make it smaller")


def _check_size(value: Any) -> Any:
    if isinstance(value, str | list | tuple | bytes) and len(value) > MAX_CHARS:
        raise _too_big(len(value))
    return value


def _check_widths(text: Any) -> None:
    """A format string (``'%0300000000d'``, ``'{:>300000000}'``) whose widths would build a huge text."""
    if isinstance(text, str):
        for number in _NUMBER.findall(text):
            if len(number) > 7 or int(number) > MAX_CHARS:
                raise _too_big(int(number))


def _check_counts(*values: Any) -> None:
    """Widths and counts given to a method or filter (``center(300000000)``, ``ljust``, ``zfill``…)."""
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_CHARS:
            raise _too_big(abs(value))


@pass_context
def _timed(context: Context, iterable: Any) -> Iterator[Any]:
    """Every ``{% for %}``'s iterable goes through this: the deadline is checked as it iterates."""
    for count, item in enumerate(iterable):
        if not count & 0xFF:
            _check_time()
        yield item


def _limited_filter(name: str, original: Any) -> Any:
    skip = 1 if hasattr(original, "jinja_pass_arg") else 0  # the environment or context Jinja passes first

    def limited(*args: Any, **kwargs: Any) -> Any:
        _check_time()
        values = args[skip:]
        _check_counts(*values[1:], *kwargs.values())
        if name == "format" and values:
            _check_widths(values[0])
        if name == "join" and values:
            _check_join(values[1] if len(values) > 1 else kwargs.get("d", ""), values[0])
        if name == "replace" and len(values) >= 3 and isinstance(values[0], str):
            _check_replace(values[0], values[1], values[2])
        return _check_size(original(*args, **kwargs))

    limited.__name__ = original.__name__
    if skip:
        limited.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
    return limited


def _check_replace(text: str, old: Any, new: Any) -> None:
    if isinstance(old, str) and isinstance(new, str) and len(new) > len(old):
        grows = (text.count(old) if old else len(text) + 1) * (len(new) - len(old))
        if len(text) + grows > MAX_CHARS:
            raise _too_big(len(text) + grows)


def _check_join(separator: Any, items: Any) -> None:
    if isinstance(items, list | tuple):
        size = sum(len(x) for x in items if isinstance(x, str)) + len(str(separator or "")) * len(items)
        if size > MAX_CHARS:
            raise _too_big(size)


class _LimitedCodeGenerator(CodeGenerator):
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        """``a ~ b`` joins through :meth:`LimitedEnvironment.concat`, which checks the size first."""
        self.write("environment.limited_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class LimitedEnvironment(SandboxedEnvironment):
    """The sandbox with a deadline and a size limit (see the module)."""

    code_generator_class = _LimitedCodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        for name in ("center", "indent", "format", "replace", "join"):
            if name in self.filters:
                self.filters[name] = _limited_filter(name, self.filters[name])
        self.filters[_TIMED] = _timed

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Filter(loop.iter, _TIMED, [], [], None, None, lineno=loop.iter.lineno)
        return tree

    def limited_concat(self, values: Iterable[Any]) -> str:
        _check_time()
        parts = [str(v) for v in values]
        size = sum(len(p) for p in parts)
        if size > MAX_CHARS:
            raise _too_big(size)
        return "".join(parts)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _check_time()
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(n, int) and len(seq) * n > MAX_CHARS:
                    raise _too_big(len(seq) * n)
            if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_BITS:
                raise RenderLimitError(f"it builds a number of more than {MAX_BITS:,} bits; use smaller numbers")
        elif operator == "**":
            if (isinstance(left, int) and isinstance(right, int) and abs(left) > 1
                    and right * left.bit_length() > MAX_BITS):
                raise RenderLimitError(f"{left} ** {right} has more than {MAX_BITS:,} bits; use smaller numbers")
        elif operator == "+":
            if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple) \
                    and len(left) + len(right) > MAX_CHARS:
                raise _too_big(len(left) + len(right))
        elif operator == "%":
            _check_widths(left)
        return _check_size(super().call_binop(context, operator, left, right))

    def wrap_str_format(self, value: Any) -> Any:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            _check_widths(value.__self__)  # '{:>300000000}'.format(1)
        return wrapped

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        _check_time()
        if isinstance(getattr(obj, "__self__", None), str):  # a method of a text: its widths and counts
            _check_counts(*args, *kwargs.values())
            if getattr(obj, "__name__", "") == "join" and args:
                _check_join(obj.__self__, args[0])
            if getattr(obj, "__name__", "") == "replace" and len(args) >= 2:
                _check_replace(obj.__self__, args[0], args[1])
        return _check_size(super().call(context, obj, *args, **kwargs))


def render_limited(template: Any, values: Mapping[str, Any]) -> str:
    """``template.render(**values)`` within :data:`RENDER_SECONDS` and :data:`MAX_CHARS`."""
    token = _deadline.set(time.monotonic() + RENDER_SECONDS)
    try:
        parts: list[str] = []
        size = 0
        for chunk in template.generate(**values):
            size += len(chunk)
            if size > MAX_CHARS:
                raise _too_big(size)
            parts.append(chunk)
        _check_time()
        return "".join(parts)
    finally:
        _deadline.reset(token)
