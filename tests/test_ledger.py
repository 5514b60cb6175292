"""``Ledger``: RobotLab's Budget::Ledger tests, ported, and the ledger shared by parallel callers."""

from __future__ import annotations

import math
import threading

import pytest

from workspace import BudgetExceeded, Ledger


def test_remaining_without_a_limit_is_infinite() -> None:
    assert Ledger(limits={}).remaining("tokens") == math.inf


def test_remaining_is_the_whole_limit_when_nothing_was_consumed() -> None:
    assert Ledger(limits={"tokens": 100}).remaining("tokens") == 100


def test_a_reservation_within_the_limit_holds_its_amount() -> None:
    ledger = Ledger(limits={"tokens": 100})
    ledger.reserve("tokens", 40)
    assert ledger.remaining("tokens") == 60
    assert ledger.reserved == {"tokens": 40}


def test_a_reservation_beyond_the_limit_raises_budget_exceeded_with_robotlabs_text() -> None:
    ledger = Ledger(limits={"tokens": 100})
    ledger.reserve("tokens", 100)
    with pytest.raises(BudgetExceeded, match=r"^budget exceeded for tokens: 101 > 100$"):
        ledger.reserve("tokens", 1)
    assert ledger.remaining("tokens") == 0  # the refused reservation holds nothing


def test_a_dimension_without_a_limit_never_refuses() -> None:
    ledger = Ledger(limits={"tokens": 100})
    ledger.reserve("cost", 1_000_000)
    assert ledger.remaining("cost") == math.inf
    assert ledger.reserved == {}


def test_reconcile_replaces_the_reservation_with_what_was_spent() -> None:
    ledger = Ledger(limits={"tokens": 100})
    ledger.reserve("tokens", 100)
    ledger.reconcile("tokens", reserved=100, actual=40)
    assert ledger.consumed["tokens"] == 40
    assert ledger.remaining("tokens") == 60


def test_an_overrun_is_recorded_and_then_even_a_zero_reservation_is_refused() -> None:
    ledger = Ledger(limits={"tokens": 100})
    ledger.reserve("tokens", 100)
    ledger.reconcile("tokens", reserved=100, actual=120)
    assert ledger.consumed["tokens"] == 120
    assert ledger.remaining("tokens") == 0
    with pytest.raises(BudgetExceeded):
        ledger.reserve("tokens", 0)


def test_release_gives_a_reservation_back_without_consuming() -> None:
    ledger = Ledger(limits={"tokens": 100})
    ledger.reserve("tokens", 60)
    ledger.release("tokens", 60)
    assert ledger.consumed["tokens"] == 0
    assert ledger.remaining("tokens") == 100


def test_release_and_reconcile_floor_the_reservation_at_zero() -> None:
    ledger = Ledger(limits={"tokens": 100})
    ledger.release("tokens", 60)
    assert ledger.remaining("tokens") == 100
    ledger.reconcile("tokens", reserved=30, actual=10)
    assert ledger.remaining("tokens") == 90


def test_what_was_consumed_before_counts() -> None:
    assert Ledger(limits={"tokens": 100}, consumed={"tokens": 30}).remaining("tokens") == 70


def test_dimensions_are_independent() -> None:
    ledger = Ledger(limits={"tokens": 100, "cost": 1.0})
    ledger.reserve("tokens", 100)
    ledger.reconcile("tokens", reserved=100, actual=100)
    assert ledger.remaining("tokens") == 0
    assert ledger.remaining("cost") == 1.0
    ledger.reserve("cost", 0.25)
    ledger.reconcile("cost", reserved=0.25, actual=0.125)
    assert ledger.remaining("cost") == pytest.approx(0.875)


@pytest.mark.parametrize(("call", "fix"), [
    (lambda: Ledger(limits={"tokens": -1}), "The limit of 'tokens' must be a number of 0 or more"),
    (lambda: Ledger(limits={"cost": "lots"}), "The limit of 'cost' must be a number"),
    (lambda: Ledger(limits={"tokens": 10}).reserve("tokens", -5), "The amount to reserve must be"),
    (lambda: Ledger().reconcile("tokens", reserved=1, actual=float("nan")), "The actual amount must be"),
])
def test_bad_amounts_are_refused_with_the_value_named(call: object, fix: str) -> None:
    with pytest.raises(ValueError, match=fix):
        call()  # type: ignore[operator]


def test_parallel_callers_never_reserve_more_than_the_limit_together() -> None:
    """Threads reserving at once: exactly the limit's worth of reservations succeed, the rest are refused."""
    ledger = Ledger(limits={"tokens": 1000})
    granted: list[int] = []
    refused: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        start.wait()
        for _ in range(50):
            try:
                ledger.reserve("tokens", 7)
            except BudgetExceeded:
                with lock:
                    refused.append(n)
            else:
                with lock:
                    granted.append(n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 1000 // 7
    assert len(granted) + len(refused) == 400
    assert ledger.remaining("tokens") == 1000 - 7 * (1000 // 7)


def test_a_reservation_holds_several_dimensions_all_or_none() -> None:
    ledger = Ledger(limits={"tokens": 100, "cost": 1.0})
    ledger.reserve("cost", 0.9)
    with pytest.raises(BudgetExceeded, match="budget exceeded for cost"):
        ledger.reservation(tokens=50, cost=0.5)
    assert ledger.remaining("tokens") == 100  # the tokens it had taken were given back
    with ledger.reservation(tokens=50, cost=0.05) as held:
        assert ledger.remaining("tokens") == 50
        held.settle(tokens=30)
    assert ledger.consumed == {"tokens": 30, "cost": 0}
    assert ledger.remaining("tokens") == 70 and ledger.remaining("cost") == pytest.approx(0.1)
    with pytest.raises(RuntimeError, match="already settled"):
        held.settle(tokens=1)
    with pytest.raises(ValueError, match=r"Nothing was reserved for cost \(reserved: tokens\)"):
        ledger.reservation(tokens=1).settle(cost=1)


def test_a_reservation_left_unsettled_is_given_back() -> None:
    ledger = Ledger(limits={"tokens": 100})
    with pytest.raises(ConnectionError), ledger.reservation(tokens=80):
        raise ConnectionError("the model call failed")
    assert ledger.remaining("tokens") == 100 and ledger.consumed == {"tokens": 0}


async def test_parallel_robot_runs_share_one_ledger() -> None:
    """Three robots start at once against a 250-token budget, each reserving 100 before its model call and
    settling from the usage the run reports: two run, the third is refused before it spends anything."""
    import asyncio

    from workspace import Robot
    from workspace.providers.testing import ScriptedProvider

    ledger = Ledger(limits={"tokens": 250})
    providers = [ScriptedProvider([f"answer {n}"]) for n in range(3)]
    robots = [Robot(f"r{n}", system_prompt="Answer.", provider=p) for n, p in enumerate(providers)]

    async def run(robot: Robot) -> str:
        with ledger.reservation(tokens=100) as held:
            result = await robot.arun("question")
            assert result.usage is not None
            held.settle(tokens=result.usage.input_tokens + result.usage.output_tokens)
            return str(result.last_text_content)

    outcomes = await asyncio.gather(*(run(r) for r in robots), return_exceptions=True)
    assert outcomes[:2] == ["answer 0", "answer 1"]
    assert isinstance(outcomes[2], BudgetExceeded)
    assert providers[2].history == []  # refused before the call
    spent = ledger.consumed["tokens"]
    assert 0 < spent <= 200 and ledger.reserved == {}
    assert ledger.remaining("tokens") == 250 - spent
