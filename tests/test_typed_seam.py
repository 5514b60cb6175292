"""The Qt↔core seam stays typed: the window's session model (``ui/controller.py`` and its parts) and the path of a message from
it to the provider carry no ``Any``, so mypy follows a message from the message box to ``Provider.stream``.

(``mypy`` checks that the types are right; this checks that they are there: an ``Any`` would make mypy stop
checking silently.) Run options (``**options``: template variables of any kind) stay ``Any`` by design.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _mentions_any(node: ast.AST | None) -> bool:
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id == "Any") or (isinstance(n, ast.Attribute) and n.attr == "Any")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and re.search(r"\bAny\b", n.value) is not None)
        for n in ast.walk(node))


def _tree(relative: str) -> ast.Module:
    return ast.parse((ROOT / relative).read_text(encoding="utf-8"))


def _method(relative: str, cls: str, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in ast.walk(_tree(relative)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
                    return item
    raise AssertionError(f"{relative}: {cls}.{name} is gone; update this test to the new path of a message")


#: The session model: ui/controller.py and the chain of classes it is made of.
SESSION_MODEL = ["ui/controller.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ui" / "controller_parts").glob("*.py"))]


def test_the_session_model_has_no_any() -> None:
    assert len(SESSION_MODEL) > 5, SESSION_MODEL  # the parts are found
    found = []
    for relative in SESSION_MODEL:
        for node in ast.walk(_tree(relative)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                found += [f"{relative}: {node.name}({a.arg})" for a in args if _mentions_any(a.annotation)]
                if _mentions_any(node.returns):
                    found.append(f"{relative}: {node.name} -> ...")
            elif isinstance(node, ast.AnnAssign) and _mentions_any(node.annotation):
                found.append(f"{relative}: line {node.lineno}: {ast.unparse(node.target)}")
    assert found == [], f"the session model is the typed seam: give these a real type: {found}"


#: (file, class, method, the parameters a message goes through)
MESSAGE_PATH = [
    ("ui/controller.py", "Controller", "send", {"text", "attachments"}),
    ("workspace/session/thread.py", "ThreadSession", "send", {"text", "attachments"}),
    ("workspace/robot.py", "Robot", "stream", {"message"}),
    ("workspace/context/manager.py", "ContextManager", "begin", {"provider", "system", "history", "tools"}),
]


def test_a_message_goes_to_the_provider_through_typed_parameters() -> None:
    untyped = []
    for relative, cls, name, params in MESSAGE_PATH:
        method = _method(relative, cls, name)
        args = {a.arg: a for a in method.args.posonlyargs + method.args.args + method.args.kwonlyargs}
        for param in sorted(params):
            assert param in args, f"{relative}: {cls}.{name} has no parameter {param!r}; update MESSAGE_PATH"
            annotation = args[param].annotation
            if annotation is None or _mentions_any(annotation):
                untyped.append(f"{relative}: {cls}.{name}({param})")
    assert untyped == [], f"these parameters on a message's way to the provider need a real type: {untyped}"


def test_the_check_sees_any() -> None:
    """The checks above would see an ``Any`` (they are not vacuous)."""
    source = "def send(self, text: str, *, attachments: list[Any] | None = None, x: 'Any' = 1) -> None: ...\n"
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert [a.arg for a in fn.args.args + fn.args.kwonlyargs if _mentions_any(a.annotation)] == ["attachments", "x"]
    assert not _mentions_any(fn.args.args[1].annotation)
