"""Token tracking and a token budget (RobotLab 0.2.6's example 19), offline.

Each run's result says what its model calls used (``result.usage``); the robot's ``token_budget`` is a
:class:`~workspace.ledger.Ledger` (``robot.ledger``) that every model call of every run reserves from and
settles in. The run whose call passes the budget raises ``BudgetExceeded`` once that call is made; a run
on a spent budget raises before asking the model. Then three parallel tasks of a network share one ledger:
their model calls take turns, so together they pass it by at most one call. Runs offline (a scripted
model, whose usage is estimated from the text's length). For a real model, give the robots
``model="..."`` instead of ``provider=...``.

    python examples/token_budget.py
"""

from __future__ import annotations

import asyncio

from workspace import BudgetExceeded, Ledger, Network, Robot
from workspace.providers.testing import ScriptedProvider


def scripted() -> ScriptedProvider:
    return ScriptedProvider(default=["The capital of France is Paris, a city on the Seine."])


async def main() -> None:
    model = scripted()
    robot = Robot("geographer", system_prompt="You answer geography questions.", provider=model, token_budget=120)
    assert robot.ledger is not None
    for question in ("Capital of France?", "And its river?", "And its population?", "And its mayor?",
                     "And its museums?"):
        try:
            result = await robot.arun(question)
        except BudgetExceeded as exc:
            print(f"stopped: {exc} (model calls so far: {len(model.history)})")
            continue
        usage = result.usage
        print(f"{question} {usage.input_tokens} in + {usage.output_tokens} out; "
              f"the budget has {robot.ledger.remaining('tokens'):g} of {robot.ledger.limits['tokens']:g} left")

    # Three tasks at once on 20 tokens: one call is made, the next passes the budget, the third is refused.
    shared = Ledger(limits={"tokens": 20})
    network = Network("atlas", ledger=shared)
    for name in ("north", "south", "west"):
        network.task(name, Robot(name, system_prompt="You answer.", provider=scripted()), on_error="continue")
    outcome = await network.arun("Capital of France?")
    for answer in sorted(str(result.last_text_content) for result in outcome.results.values()):
        print(f"a task: {answer}")
    print(f"the network's tasks used {shared.consumed['tokens']:g} tokens of {shared.limits['tokens']:g}")


if __name__ == "__main__":
    asyncio.run(main())
