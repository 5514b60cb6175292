"""The JSON Schemas of the files people write, for editors (``robotlab schema``, ``resources/schemas/``).

Each kind names the function that builds its schema; they are imported on use (pydantic, and
the network loader for ``network``).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "json_schema", "schema_text", "shipped_dir"]

#: kind -> "module:function" returning the JSON Schema of that kind of file.
KINDS: dict[str, str] = {
    "robot": "workspace.schemas.robot:robot_json_schema",
    "config": "workspace.schemas.config:config_json_schema",
    "mcp": "workspace.schemas.mcp:mcp_json_schema",
    "network": "workspace.network.schema:network_json_schema",
    "eval": "workspace.evals.spec:eval_json_schema",
}


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind`` (a key of :data:`KINDS`)."""
    target = KINDS.get(kind)
    if target is None:
        raise ValueError(f"Unknown schema {kind!r}; one of: {', '.join(KINDS)}")
    module, _, function = target.partition(":")
    schema: dict[str, Any] = getattr(importlib.import_module(module), function)()
    return schema


def schema_text(kind: str) -> str:
    """The JSON Schema of ``kind`` as the text of its file (``resources/schemas/<kind>.json``)."""
    return json.dumps(json_schema(kind), indent=2, ensure_ascii=False) + "\n"


def shipped_dir() -> Path:
    """Where the schemas ship: ``resources/schemas/``."""
    from workspace import paths

    return paths.resources_dir() / "schemas"
