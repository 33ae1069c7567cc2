"""Namespaces that share one store path (and so one lexical index file) stay apart: a read, a
cleanup or a repair in one namespace never sees or removes another namespace's keyword rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.store import make_persistent_client

POLICY = "The refund window for damaged parcels is thirty days."
HANDBOOK = "Refunds are processed by the warehouse team within five business days."


def keyword_matched(memory: Memory, query: str, *, user_id: str) -> set[str]:
    """Texts of the user's records that recall found through the keyword index."""
    return {m.record.text for m in memory.recall(query, user_id=user_id) if m.breakdown.bm25 is not None}


def knowledge_keyword_matched(memory: Memory, query: str) -> set[str]:
    return {h.text for h in memory.knowledge.search(query) if h.breakdown.bm25 is not None}


def test_reads_in_one_namespace_keep_the_other_namespaces_rows(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    with Memory(path, namespace="support", embedder=HashEmbedder()) as support:
        support.remember(POLICY, user_id="u")
        support.knowledge.add(HANDBOOK, verbatim=True)
    with Memory(path, namespace="sales", embedder=HashEmbedder()) as sales:
        sales.remember("The sales refund target is ten parcels a week.", user_id="u")
        assert POLICY not in {m.record.text for m in sales.recall("refund window parcels", user_id="u")}
        assert sales.knowledge.search("refunds warehouse team") == []
        # The same text in both namespaces is the same chunk id, yet two rows: removing sales's
        # leaves support's.
        chunk = sales.knowledge.add(HANDBOOK, verbatim=True).added[0]
        assert HANDBOOK in knowledge_keyword_matched(sales, "refunds warehouse team")
        sales.knowledge.delete(chunk.id)
    with Memory(path, namespace="support", embedder=HashEmbedder()) as support:
        assert HANDBOOK in knowledge_keyword_matched(support, "refunds warehouse team")
        assert POLICY in keyword_matched(support, "refund window parcels", user_id="u")
        assert support.knowledge.repair() == 0


def test_two_namespaces_open_at_once_on_one_lexical_file(tmp_path: Path) -> None:
    client = make_persistent_client(tmp_path / "chroma")
    lexical = tmp_path / "lexical.sqlite3"
    support = Memory(client=client, namespace="support", embedder=HashEmbedder(), lexical_path=lexical)
    sales = Memory(client=client, namespace="sales", embedder=HashEmbedder(), lexical_path=lexical)
    try:
        record = support.remember(POLICY, user_id="u")
        assert record is not None
        sales.remember("Sales closed a refund deal.", user_id="u")
        # A recall in sales meets support's row for the same user: it must neither serve nor drop it.
        assert [m.record.text for m in sales.recall("refund window parcels", user_id="u")] == [
            "Sales closed a refund deal."]
        assert sales.repair() == 0
        assert record.id in support._lexical.versions(support._store.collection_name("u"))
        assert POLICY in keyword_matched(support, "refund window parcels", user_id="u")
    finally:
        sales.close()
        support.close()


def test_an_index_from_before_namespaced_rows_is_rebuilt_on_open(tmp_path: Path) -> None:
    path = tmp_path / "m"
    with Memory(path, embedder=HashEmbedder()) as memory:
        memory.remember(POLICY, user_id="u")
        memory.knowledge.add(HANDBOOK, verbatim=True)
    db = sqlite3.connect(path / "lexical.sqlite3")
    db.execute("PRAGMA user_version = 1")  # as an older mnemic left it
    db.commit()
    db.close()
    with Memory(path, embedder=HashEmbedder()) as memory:
        assert POLICY in keyword_matched(memory, "refund window parcels", user_id="u")
        assert HANDBOOK in knowledge_keyword_matched(memory, "refunds warehouse team")
