"""RobotLab's ``Convergence``: whether two texts say the same, to skip work when robots already agree.

``Convergence.similarity(a, b)`` is the cosine of the two texts' stemmed word counts (0.0 to 1.0; 0.0 when
either is shorter than :attr:`Convergence.MIN_TEXT_LENGTH` characters); ``Convergence.detected(a, b,
threshold=0.85)`` says whether it reaches the threshold. ``Convergence.router("verifier_a", "verifier_b",
otherwise="reconciler")`` is a task router for a network: give it to both verifier tasks; when the second
of them finishes, the reconciler (an optional task) runs only if their answers differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from workspace.knowledge import similarity as _similarity
from workspace.result import RobotResult
from workspace.result import last_text as _last_text


class Convergence:
    """Term-frequency cosine similarity of two texts (see the module)."""

    #: The similarity at or above which two texts agree.
    DEFAULT_THRESHOLD = 0.85
    #: Texts shorter than this (stripped) are never similar: too short to judge.
    MIN_TEXT_LENGTH = 30

    @classmethod
    def similarity(cls, text_a: object, text_b: object) -> float:
        """The cosine of the stemmed word counts of the two texts (0.0 when one is under 30 characters)."""
        a, b = str(text_a or "").strip(), str(text_b or "").strip()
        if len(a) < cls.MIN_TEXT_LENGTH or len(b) < cls.MIN_TEXT_LENGTH:
            return 0.0
        return min(1.0, max(0.0, _similarity(a, b)))

    @classmethod
    def detected(cls, text_a: object, text_b: object, *, threshold: float = DEFAULT_THRESHOLD) -> bool:
        """RobotLab's ``detected?``: whether the texts are at least ``threshold`` similar (0 to 1)."""
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0.0, 1.0], got {threshold}")
        return cls.similarity(text_a, text_b) >= threshold

    @classmethod
    def router(cls, *tasks: str, otherwise: str | Sequence[str],
               threshold: float = DEFAULT_THRESHOLD) -> Callable[[RobotResult], list[str]]:
        """A task router for the tasks named ``tasks`` (two or more): once all have finished, nothing when
        every answer agrees with the first, else ``otherwise`` (the optional task(s) that reconcile).
        Until then it routes nothing, so give it to each of them: the last to finish decides."""
        if len(tasks) < 2:
            raise ValueError("Convergence.router compares the answers of two or more tasks: name them, e.g. "
                             "Convergence.router('verifier_a', 'verifier_b', otherwise='reconciler')")
        cls.detected("", "", threshold=threshold)  # the threshold checked now, not in the middle of a run
        targets = [otherwise] if isinstance(otherwise, str) else list(otherwise)

        def route(result: RobotResult) -> list[str]:
            from workspace.network.scheduler import current_results

            done = current_results(result)
            if not all(name in done for name in tasks):
                return []
            texts = [_last_text(done[name]) for name in tasks]
            agree = all(cls.detected(texts[0], text, threshold=threshold) for text in texts[1:])
            return [] if agree else list(targets)

        return route


def agree(results: Sequence[Any], *, threshold: float = Convergence.DEFAULT_THRESHOLD) -> bool:
    """Whether every result (a RobotResult or text) agrees with the first."""
    texts = [_last_text(r) if isinstance(r, RobotResult) else str(r) for r in results]
    return all(Convergence.detected(texts[0], text, threshold=threshold) for text in texts[1:])


__all__ = ["Convergence", "agree"]
