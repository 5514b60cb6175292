"""What the fault-matrix tests share: the recorded cases, the table, the MCP fault server."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FAULT_SERVER = Path(__file__).resolve().parent / "mcp_fault_server.py"


@dataclass
class Case:
    area: str
    name: str
    lost: int = 0
    what_lost: str = ""
    survived: bool | None = None
    note: str = ""


@dataclass
class Matrix:
    """What one test tried; :func:`pytest_runtest_makereport` marks the cases survived or not."""

    cases: list[Case] = field(default_factory=list)

    def case(self, area: str, name: str) -> Case:
        found = Case(area, name)
        self.cases.append(found)
        return found

    def lost(self, count: int, what: str) -> None:
        """Record what the latest case lost (0 when nothing was)."""
        self.cases[-1].lost += count
        self.cases[-1].what_lost = what


def fault_server(mode: str, *extra_args: str, **entry: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry for tests/faults/mcp_fault_server.py in ``mode``."""
    return {"command": sys.executable, "args": [str(FAULT_SERVER), mode, *extra_args], **entry}


def table(cases: list[Case]) -> str:
    """The fault matrix as text: one line per area, then the cases that did not survive."""
    areas: dict[str, list[Case]] = {}
    for case in cases:
        areas.setdefault(case.area, []).append(case)
    lines = [f"{'area':<34} {'tried':>5} {'survived':>8} {'lost':>5}"]
    for area, items in areas.items():
        lost = sum(c.lost for c in items)
        lines.append(f"{area:<34} {len(items):>5} {sum(1 for c in items if c.survived):>8} {lost:>5}")
    lines.append(f"{'total':<34} {len(cases):>5} {sum(1 for c in cases if c.survived):>8} "
                 f"{sum(c.lost for c in cases):>5}")
    for case in cases:
        if not case.survived or case.lost:
            lines.append(f"  {'LOST' if case.survived else 'FAILED'}: {case.area} / {case.name}: "
                         f"{case.lost} {case.what_lost} {case.note}".rstrip())
    return "\n".join(lines)
