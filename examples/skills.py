"""Skills, learning and knowledge (RobotLab 0.2's examples 17, 21 and 34, and its durable knowledge).

Template skills are templates a robot's prompt is built from: ``skills:`` in a robot file or
``Robot(skills=[...])``; each skill's own skills come first, a skill shared by two comes once, a cycle is
skipped with a warning. A robot then learns a fact (kept in its knowledge store and given to every later
run), and with ``learn=True`` records and recalls knowledge itself through two tools, each recall raising
the knowledge's confidence. With ``review_memory="ask"`` what it would record is proposed to you first.
Runs offline (a scripted model); the templates are written to a temporary folder. For a real model,
give the robots ``model="..."`` instead of ``provider=...``.

    python examples/skills.py
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from workspace import KnowledgeStore, PendingMemoryWrite, Robot
from workspace.providers.testing import ScriptedProvider, ToolCall

SKILLS = {
    "careful.md": "You check every number twice.",
    "friendly.md": "---\nskills: [careful]\n---\nYou are warm and brief.",
    "citations.md": "---\nskills: [careful]\n---\nYou name the source of every figure.",
    "analyst.md": "---\nskills: [friendly, citations]\n---\nYou are {{ company }}'s financial analyst.",
}


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "skills").mkdir()
        for name, text in SKILLS.items():
            (folder / "skills" / name).write_text(text, encoding="utf-8")
        store = KnowledgeStore(folder / "knowledge.db")

        # -- template skills: depth-first, "careful" once although two skills ask for it -------------------
        provider = ScriptedProvider(default="Revenue grew 12% (source: Q3 report).")
        analyst = Robot("analyst", system_prompt="Answer in one sentence.", skills=["analyst"],
                        template_dirs=[folder], provider=provider, knowledge_store=store)
        print("skills:", " -> ".join(t.name for t in analyst.skill_templates))
        await analyst.arun("How did revenue do?", company="Acme")
        print("system prompt:", provider.history[0].system.replace("\n\n", " | "))

        # -- learn: kept across runs and robots ---------------------------------------------------------------
        await analyst.alearn("Acme's fiscal year starts in April")
        later_provider = ScriptedProvider(default="Q1 runs April to June.")
        later = Robot("analyst", system_prompt="Answer in one sentence.", provider=later_provider,
                      knowledge_store=store)  # a new robot object: the same name, the same store
        await later.arun("When is Q1?")
        print("learnt, seen by a later run:", later_provider.history[0].system.splitlines()[-1])

        # -- knowledge the robot records and recalls itself (learn=True) ----------------------------------------
        scripted = ScriptedProvider([
            [ToolCall("record_knowledge", {"content": "The CFO wants figures in euros", "reasoning": "she said so",
                                           "category": "preference", "domain": "reports"})],
            "Noted.",
            [ToolCall("recall_knowledge", {"query": "figures currency"})],
            "In euros: 1.2 M EUR.",
        ])
        keeper = Robot("keeper", system_prompt="You keep notes.", provider=scripted, knowledge_store=store,
                       learn=True, learn_domain="reports")
        await keeper.arun("The CFO wants euros, remember that.")
        answer = await keeper.arun("Give me the revenue.")
        print("answer:", answer.last_text_content)
        for entry in store.entries(robot="keeper"):
            print(f"knowledge: {entry.content} (confidence {entry.confidence:.1f}, used {entry.use_count}x)")

        # -- review.memory: ask: the write is proposed; you decide ---------------------------------------------
        def review(pending: PendingMemoryWrite) -> None:
            print(f"proposed: {pending.kind} {pending.text!r}")
            pending.reject("we do not store guesses")

        careful = Robot("careful", system_prompt="You keep notes.", knowledge_store=store, learn=True,
                        review_memory="ask", on_memory_write=review, provider=ScriptedProvider([
                            [ToolCall("record_knowledge", {"content": "The CEO likes pie charts", "reasoning": "a guess",
                                                           "category": "preference"})],
                            "Understood."]))
        await careful.arun("Remember the CEO's taste.")
        told = [m.content for m in careful.history if m.is_tool_result]
        print("the robot was told:", told[0]["data"] if isinstance(told[0], dict) else told[0])
        print("stored for careful:", store.entries(robot="careful"))
        store.close()


asyncio.run(main())
