"""DocumentStore (RobotLab's): the offline lexical ranking, the collection API and its bounds, threads, vectors
that cannot be compared, the memory helpers, and embeddings served by the loopback server through litellm."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fakes.embeddings import embed_text
from fakes.llm_server import FakeLLMServer

from workspace import DocumentStore, Memory
from workspace.config import load_config
from workspace.providers.embeddings import LiteLLMEmbedder, embedder_for
from workspace.similarity import lexical_similarity

REPORTS = {
    "q4": "Q4 revenue came in at 4.2M, up 18% year on year, the best quarter of revenue so far.",
    "q3": "Q3 showed 15% growth, driven by new customers in APAC.",
    "hiring": "We hired two engineers and a designer for the mobile team.",
}


def reports(store: DocumentStore) -> DocumentStore:
    for key, text in REPORTS.items():
        assert store.store(key, text) is store
    return store


def test_the_lexical_fallback_ranks_by_shared_words_and_needs_no_key() -> None:
    store = reports(DocumentStore())
    found = store.search("quarterly revenue report", limit=2)
    assert [r["key"] for r in found] == ["q4", "q3"]
    assert found[0]["text"] == REPORTS["q4"]
    assert found[0]["score"] == pytest.approx(lexical_similarity("quarterly revenue report", REPORTS["q4"]))
    assert found[0]["score"] > 0.25 and found[1]["score"] == 0.0  # the first limit, whatever their score (RobotLab's)
    assert [r["key"] for r in store.search("growth of customers")] == ["q3", "q4", "hiring"]
    assert [r["key"] for r in store.search("hiring engineers", limit=1)] == ["hiring"]
    assert store.search("revenue", limit=0) == []
    assert DocumentStore().search("anything") == []


def test_the_collection_replaces_deletes_and_clears() -> None:
    store = reports(DocumentStore())
    assert (store.size, store.keys, store.is_empty, store.empty, len(store)) == (3, ["q4", "q3", "hiring"], False,
                                                                                  False, 3)
    store.store("q3", "Nothing about money here.")
    assert store.keys == ["q4", "q3", "hiring"] and store.get("q3") == "Nothing about money here."
    assert [r["key"] for r in store.search("growth APAC customers")][:1] != ["q3"]
    assert store.delete("q3") is store and "q3" not in store and store.delete("q3").size == 2
    assert store.clear() is store and store.is_empty and store.keys == []
    store.store(42, "a number as a key")
    assert store.keys == ["42"]
    with pytest.raises(ValueError, match="non-empty string"):
        store.store("  ", "no key")
    with pytest.raises(TypeError, match="must be a string"):
        store.store("k", b"bytes")  # type: ignore[arg-type]


def test_the_store_is_bounded_with_errors_that_say_what_to_do() -> None:
    store = DocumentStore(max_documents=2, max_chars=20)
    store.store("a", "one").store("b", "two")
    store.store("a", "replacing is fine")
    with pytest.raises(ValueError, match=r"full \(2 documents\): delete\(\) or clear\(\) .*max_documents"):
        store.store("c", "three")
    with pytest.raises(ValueError, match=r"'long' has 21 characters.*split it.*max_chars"):
        store.store("long", "x" * 21)
    assert store.keys == ["a", "b"]
    with pytest.raises(ValueError, match="max_documents"):
        DocumentStore(max_documents=0)
    with pytest.raises(TypeError, match="embed"):
        DocumentStore(embedder="bge-small")  # type: ignore[arg-type]


def test_many_threads_store_and_search_at_once() -> None:
    store = DocumentStore()

    def work(n: int) -> None:
        for i in range(50):
            store.store(f"{n}-{i}", f"note {i} of writer {n} about revenue")
            store.search("revenue", limit=3)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert store.size == 400 and len(set(store.keys)) == 400


def test_missing_or_mismatched_vectors_score_zero() -> None:
    def embedder(texts: Sequence[str]) -> list[list[float] | None]:
        out: list[list[float] | None] = []
        for text in texts:
            if text.startswith("none"):
                out.append(None)
            elif text.startswith("short"):
                out.append([1.0, 0.0])
            else:
                out.append([1.0, 0.0, 0.0])
        return out

    store = DocumentStore(embedder=embedder).store("ok", "fine").store("n", "none here").store("s", "short one")
    assert [(r["key"], r["score"]) for r in store.search("query")] == [("ok", 1.0), ("n", 0.0), ("s", 0.0)]


def test_the_memory_helpers_keep_documents_per_memory() -> None:
    memory = Memory()
    assert memory.store_document("readme", "Configure redis with the REDIS_URL variable.") is memory
    memory.store_document("faq", "Robots answer questions.")
    assert memory.search_documents("how to configure redis", limit=1)[0]["key"] == "readme"
    assert memory.copy().documents.is_empty  # copies do not share the store
    memory.documents = DocumentStore()
    assert memory.search_documents("redis") == []


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


async def test_an_embedder_served_by_the_loopback_server_ranks_by_its_vectors(server: FakeLLMServer) -> None:
    embedder = embedder_for(load_config(env={}, overrides={"llm": {
        "embedding_model": "openai/fake-embed", "embedding_api_base": server.base_url + "/v1"}}))
    assert isinstance(embedder, LiteLLMEmbedder)
    store = reports(DocumentStore(embedder=embedder))
    assert server.embedded == []  # storing embeds nothing: the first search embeds in one batch
    found = await store.asearch("new customers in APAC", limit=3)
    assert found[0]["key"] == "q3"
    expected = embed_text("new customers in APAC")
    q3 = embed_text(REPORTS["q3"])
    assert found[0]["score"] == pytest.approx(sum(a * b for a, b in zip(expected, q3, strict=True)))
    assert [body["input"] for body in server.embedded] == [["new customers in APAC", *REPORTS.values()]]
    assert server.embedded[0]["model"] == "fake-embed"
    store.store("q3", "Q3 was quiet.")
    await store.asearch("revenue")
    assert server.embedded[1]["input"] == ["revenue", "Q3 was quiet."]  # only what changed is embedded again
    with pytest.raises(RuntimeError, match="await store.asearch"):
        store.search("revenue")


def test_a_sync_search_with_the_async_embedder_outside_an_event_loop(server: FakeLLMServer) -> None:
    store = reports(DocumentStore(embedder=LiteLLMEmbedder("openai/fake-embed", api_base=server.base_url + "/v1")))
    assert store.search("engineers designer mobile team", limit=1)[0]["key"] == "hiring"


async def test_an_embedder_that_cannot_be_reached_falls_back_to_words(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = reports(DocumentStore(embedder=LiteLLMEmbedder("openai/fake-embed", api_base=f"http://127.0.0.1:{port}/v1",
                                                           timeout=10)))
    found = await asyncio.wait_for(store.asearch("quarterly revenue", limit=1), timeout=60)  # bounds a hang only
    assert found[0]["key"] == "q4"
    assert "embedding failed" in caplog.text and "searching by words instead" in caplog.text
    assert embedder_for(load_config(env={}, overrides={})) is None


async def test_the_users_key_goes_only_to_an_embeddings_address_they_configured(
        server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An opened folder's .robotlab/config.yaml naming an embeddings server gets no key of the user's: a cloned
    # repository could otherwise send OPENAI_API_KEY anywhere. The same address configured by the user gets it.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-embed-user-secret")
    base = server.base_url + "/v1"
    folder = tmp_path / "repo"
    (folder / ".robotlab").mkdir(parents=True)
    (folder / ".robotlab" / "config.yaml").write_text(
        f"llm:\n  embedding_model: openai/fake-embed\n  embedding_api_base: {base}\n", encoding="utf-8")
    from_folder = embedder_for(load_config(folder, env={}))
    assert isinstance(from_folder, LiteLLMEmbedder) and not from_folder.user_key
    await DocumentStore(embedder=from_folder).store("a", "alpha").asearch("alpha")
    mine = embedder_for(load_config(env={}, overrides={"llm": {"embedding_model": "openai/fake-embed",
                                                               "embedding_api_base": base}}))
    assert isinstance(mine, LiteLLMEmbedder) and mine.user_key
    await DocumentStore(embedder=mine).store("a", "alpha").asearch("alpha")
    assert len(server.embedded_auth) == 2
    assert "sk-embed-user-secret" not in server.embedded_auth[0]
    assert server.embedded_auth[1] == "Bearer sk-embed-user-secret"
