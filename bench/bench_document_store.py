"""DocumentStore: how long a search takes over many documents, offline (the lexical measure) and with an
embedder served by the loopback server (``tests/fakes/llm_server.py``'s ``/v1/embeddings``, through litellm).

Documents: 2,000 paragraphs of about 60 words (generated, deterministic). Prints the time to store them
all, the first search (the lexical measure's word vectors, or every document embedded in one batch) and
the median of later searches. Targets: a later search under 50 ms for 2,000 documents offline; with an
embedder, a later search embeds the query alone (one request of one text).

    .venv/bin/python bench/bench_document_store.py
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

DOCUMENTS = 2_000
SEARCHES = 20
WORDS = [
    "revenue", "growth", "quarter", "customer", "market", "product", "release", "team", "hiring", "budget",
    "forecast", "report", "churn", "pricing", "launch", "region", "sales", "support", "latency", "outage",
    "deploy", "incident", "review", "design", "roadmap", "metric", "survey", "partner", "contract", "renewal",
    "invoice", "refund", "onboarding", "feature", "request", "backlog", "sprint",
]


def corpus() -> dict[str, str]:
    rng = random.Random(7)
    return {f"doc-{i}": " ".join(rng.choice(WORDS) for _ in range(60)) for i in range(DOCUMENTS)}


async def measure(label: str, store: object, queries: list[str]) -> None:
    from workspace.documents import DocumentStore

    assert isinstance(store, DocumentStore)
    documents = corpus()
    started = time.perf_counter()
    for key, text in documents.items():
        store.store(key, text)
    stored = time.perf_counter() - started
    started = time.perf_counter()
    await store.asearch(queries[0])
    first = time.perf_counter() - started
    later = []
    for query in queries[1:]:
        started = time.perf_counter()
        await store.asearch(query, limit=5)
        later.append(time.perf_counter() - started)
    print(f"{label:>9}: store {DOCUMENTS} documents {stored * 1000:7.1f} ms, first search {first * 1000:7.1f} ms, "
          f"later searches (median of {len(later)}) {statistics.median(later) * 1000:6.1f} ms")


async def main() -> None:
    from fakes.llm_server import FakeLLMServer

    from workspace.documents import DocumentStore
    from workspace.providers.embeddings import LiteLLMEmbedder

    rng = random.Random(11)
    queries = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(SEARCHES)]
    await measure("lexical", DocumentStore(), queries)
    with FakeLLMServer() as server:
        await measure("embedder", DocumentStore(embedder=LiteLLMEmbedder("openai/fake-embed",
                                                                         api_base=server.base_url + "/v1")), queries)
        sizes = [len(body["input"]) for body in server.embedded]
        print(f"embedding requests: {len(sizes)}; texts in the first {sizes[0]}, in each later one {max(sizes[1:])} "
              "(target: 1, the query alone)")
    print("target: a later offline search under 50 ms for 2,000 documents")


if __name__ == "__main__":
    asyncio.run(main())
