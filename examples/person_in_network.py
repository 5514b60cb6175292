"""A person in the network (RobotLab's cyborg): a task whose worker is you.

A writer robot drafts release notes, a person approves them, a publisher robot announces them. The
network waits for the person's answer, with a time limit; here a function answers for them (a window or a
chat bot would ask a real person; without ``ask=``, the terminal asks). A second run shows the time running
out: the approval falls back to its default answer. Then two verifiers check an invoice and a reconciler
runs only when they disagree (``Convergence``). Runs offline (scripted models). For real models, give the
robots ``model="..."`` instead of ``provider=...``.

    python examples/person_in_network.py
"""

from __future__ import annotations

import asyncio

from workspace import Convergence, Network, Person, Robot
from workspace.ask_user import AskFn
from workspace.providers.testing import ScriptedProvider


def robot(name: str, *answers: str) -> Robot:
    return Robot(name, system_prompt=f"You are the {name}.", provider=ScriptedProvider(list(answers)),
                 knowledge_store=False)


async def approver_answers(question: str, choices: list[str] | None, default: str | None) -> str:
    print(f"person asked: {question.splitlines()[-1]}")
    print(f"person chooses from: {choices}")
    return "1"  # as typed in a terminal: the first choice


async def approver_is_away(question: str, choices: list[str] | None, default: str | None) -> str:
    await asyncio.sleep(3600)
    return "never"


def release(ask: AskFn, timeout: float) -> Network:
    network = Network("release")
    network.task("draft", robot("writer", "v1.0: startup is twice as fast."))
    network.task("approve", Person("approver", ask=ask, timeout=timeout, choices=["approved", "rejected"],
                                   default="approved (nobody answered)"), depends_on=["draft"])
    network.task("publish", robot("publisher", "Announced: v1.0 is out."), depends_on=["approve"])
    return network


async def main() -> None:
    result = await release(approver_answers, timeout=600).arun("Release v1.0")
    print("approval:", result.results["approve"].last_text_content)
    print("publisher:", result.results["publish"].last_text_content)

    result = await release(approver_is_away, timeout=0.2).arun("Release v1.1")
    print("approval when time ran out:", result.results["approve"].last_text_content)

    for second in ("The invoice total is wrong: tax was added twice to the order.",
                   "The invoice is correct; the totals match the order exactly."):
        route = Convergence.router("verifier_a", "verifier_b", otherwise="reconciler")
        check = Network("invoice-check")
        check.task("verifier_a", robot("verifier A", "The invoice total is wrong: tax was added twice to the order."),
                   router=route)
        check.task("verifier_b", robot("verifier B", second), router=route)
        check.task("reconciler", robot("reconciler", "Tax was added twice; the invoice is wrong."),
                   depends_on="optional")
        outcome = await check.arun("Is invoice 42 right?")
        print(f"verifiers agree: {outcome.tasks['reconciler'].status == 'skipped'}; "
              f"reconciler {outcome.tasks['reconciler'].status}")


asyncio.run(main())
