"""An eval's report for people (the pass-rate table, the failures) and for CI (JUnit XML)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workspace.evals.runner import EvalReport

__all__ = ["failures_text", "junit_xml", "table"]


def table(report: EvalReport) -> str:
    """Pass rates per robot (rows) and model (columns): ``3/4 (75%)``."""
    rates = report.pass_rates()
    robots = list(dict.fromkeys(robot for robot, _ in rates))
    models = list(dict.fromkeys(model for _, model in rates))
    cells = [["robot", *models]]
    for robot in robots:
        row = [robot]
        for model in models:
            passed, total = rates.get((robot, model), (0, 0))
            row.append(f"{passed}/{total} ({100 * passed // total}%)" if total else "-")
        cells.append(row)
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def failures_text(report: EvalReport) -> str:
    """Each failed case and why, one block per case (with the start of its thread's id when it was recorded:
    ``robotlab threads show ID``)."""
    blocks = []
    for r in report.results:
        if not r.passed:
            reasons = "\n".join(f"    - {why}" for why in r.failures)
            thread = f" (thread {r.thread_id[:8]})" if r.thread_id else ""
            blocks.append(f"FAIL {r.case} [{r.robot} × {r.model}]{thread}\n{reasons}")
    return "\n".join(blocks)


def junit_xml(report: EvalReport, *, name: str = "robotlab eval") -> str:
    """The report as JUnit XML: one ``testsuite`` per robot × model, one ``testcase`` per case in it; a failed
    case's ``failure`` message is its first failed assertion (all of them in the element's text)."""
    import xml.etree.ElementTree as ET

    suites = ET.Element("testsuites", name=name, tests=str(len(report.results)),
                        failures=str(sum(not r.passed for r in report.results)), time=f"{report.seconds:.3f}")
    groups: dict[tuple[str, str], list[int]] = {}
    for index, r in enumerate(report.results):
        groups.setdefault((r.robot, r.model), []).append(index)
    for (robot, model), indexes in groups.items():
        results = [report.results[i] for i in indexes]
        suite = ET.SubElement(suites, "testsuite", name=f"{robot} × {model}", tests=str(len(results)),
                              failures=str(sum(not r.passed for r in results)), errors="0", skipped="0",
                              time=f"{sum(r.outcome.seconds for r in results):.3f}")
        for r in results:
            case = ET.SubElement(suite, "testcase", name=r.case, classname=f"{robot}.{model}",
                                 time=f"{r.outcome.seconds:.3f}")
            if not r.passed:
                failure = ET.SubElement(case, "failure", message=r.failures[0], type="AssertionError")
                failure.text = "\n".join(r.failures)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
