"""Similarity of texts, offline: the lexical measure agent skills, tool search, history search, knowledge and
the :class:`~workspace.documents.DocumentStore` use when no embedder is given (RobotLab's "TF cosine": the
cosine of stemmed, stop-word-filtered word counts, L2-normalised, no IDF), and the cosine of two vectors.

It needs no key and no download; it matches words, not meanings (``car`` and ``automobile`` score 0).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset([
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did",
    "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have",
    "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into",
    "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of",
    "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "please",
    "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until",
    "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
    "with", "would", "you", "your", "yours", "yourself", "yourselves", "use", "used", "using",
])
_SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "ies", "ied", "ed", "er", "ly", "s")


def _stem(word: str) -> str:
    """A light stemmer: ``reviews``, ``reviewers``, ``reviewing`` -> ``review``; ``queries`` -> ``query``;
    ``codes``, ``code`` -> ``cod`` (a final ``e`` goes, so ``optimize``/``optimizes``/``optimized`` meet)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not (suffix == "s" and word.endswith("ss")):
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def term_vector(text: str) -> dict[str, float]:
    """The L2-normalised counts of the stemmed words of ``text`` that are not stop words."""
    counts = Counter(_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1)
    norm = math.sqrt(sum(c * c for c in counts.values()))
    return {word: count / norm for word, count in counts.items()} if norm else {}


def lexical_similarity(a: str, b: str) -> float:
    """The cosine of the two texts' :func:`term_vector` (0.0 when either has no words)."""
    va, vb = term_vector(a), term_vector(b)
    return sum(weight * vb.get(word, 0.0) for word, weight in va.items())


def cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float:
    """The cosine of two vectors; 0.0 when either is None or empty, or their lengths differ."""
    if not a or not b or len(a) != len(b):
        return 0.0
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb) if na and nb else 0.0


__all__ = ["cosine", "lexical_similarity", "term_vector"]
