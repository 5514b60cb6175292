"""``robotlab skills list`` and ``robotlab skills match MESSAGE``: the agent skills (SKILL.md folders) found
where robot templates are, and which of them a message would select."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    skills = sub.add_parser("skills", help="list the agent skills (SKILL.md folders) robots can use")
    ssub = skills.add_subparsers(dest="skills_command", metavar="ACTION")
    lst = ssub.add_parser("list", help="list the skills: the folder's, yours and the shipped ones")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=cmd_skills_list)
    match = ssub.add_parser("match", help="show which skills a message selects (offline lexical measure)")
    match.add_argument("message")
    match.add_argument("--json", action="store_true")
    match.set_defaults(func=cmd_skills_match)
    skills.set_defaults(func=cmd_skills_list, json=False)


def _catalog(args: argparse.Namespace) -> Any:
    from workspace.agent_skills import AgentSkillCatalog

    folder = Path(args.folder).resolve() if getattr(args, "folder", None) else None
    return AgentSkillCatalog(folder=folder)


def _report_problems(catalog: Any) -> None:
    for problem in catalog.problems:  # a broken SKILL.md is named, not left out in silence
        print(f"robotlab: not listed: {problem}", file=sys.stderr)


def cmd_skills_list(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    skills = catalog.all()
    _report_problems(catalog)
    if getattr(args, "json", False):
        print(json.dumps([{"name": s.name, "description": s.description, "path": str(s.path),
                           "scripts": [p.name for p in s.scripts]} for s in skills], indent=2))
        return 0
    if not skills:
        where = ", ".join(str(d / "skills") for d in catalog.dirs)
        print(f"No agent skills found. A skill is a folder with a SKILL.md (front matter: name, description) "
              f"in one of: {where}")
        return 0
    width = max(len(s.name) for s in skills)
    for s in skills:
        print(f"{s.name:<{width}}  {s.description}")
    return 0


def cmd_skills_match(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    scores = asyncio.run(catalog.scores(args.message))
    chosen = [s.name for s in asyncio.run(catalog.select(args.message))]
    _report_problems(catalog)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    if args.json:
        print(json.dumps({"selected": chosen, "scores": dict(ranked)}, indent=2))
        return 0
    width = max((len(name) for name, _ in ranked), default=4)
    for name, score in ranked:
        mark = "selected" if name in chosen else ""
        print(f"{name:<{width}}  {score:.2f}  {mark}".rstrip())
    if not chosen:
        print("No skill selected for this message.")
    return 0
