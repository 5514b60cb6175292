"""Tools for robots: :class:`Tool`, ``@tool``, :class:`ToolManifest` and selection levels."""

from __future__ import annotations

from workspace.tools.base import Tool, ToolContext, ToolOutput
from workspace.tools.decorator import function_tool, tool
from workspace.tools.manifest import ToolManifest

__all__ = ["Tool", "ToolContext", "ToolManifest", "ToolOutput", "function_tool", "tool"]
