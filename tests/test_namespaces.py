"""Namespaces that share one store path (and so one lexical index file) stay apart: a read, a
cleanup or a repair in one namespace never sees or removes another namespace's keyword rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

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


OLDER_INDEXES = {
    "before namespaced rows": "PRAGMA user_version = 1;",
    # Schema 2 held record texts in a porter-tokenized FTS5 column; schema 3 holds owner-tagged
    # stems: an old index must be rebuilt from Chroma, not read as if it held tagged words.
    "before owner-tagged words": """
        DROP TABLE lexical;
        CREATE VIRTUAL TABLE lexical USING fts5(body, owner, record_id UNINDEXED,
                                                tokenize = 'porter unicode61 remove_diacritics 2');
        PRAGMA user_version = 2;
    """,
}


@pytest.mark.parametrize("older", list(OLDER_INDEXES))
def test_an_index_an_older_mnemic_wrote_is_rebuilt_on_open(tmp_path: Path, older: str) -> None:
    path = tmp_path / "m"
    with Memory(path, embedder=HashEmbedder()) as memory:
        memory.remember(POLICY, user_id="u")
        memory.knowledge.add(HANDBOOK, verbatim=True)
    db = sqlite3.connect(path / "lexical.sqlite3")
    db.executescript(OLDER_INDEXES[older])  # as an older mnemic left it
    db.commit()
    db.close()
    with Memory(path, embedder=HashEmbedder()) as memory:
        assert POLICY in keyword_matched(memory, "refund window parcels", user_id="u")
        assert HANDBOOK in knowledge_keyword_matched(memory, "refunds warehouse team")


def _colliding_pair() -> tuple[str, str]:
    """Two namespaces with one storage name: an unsafe name becomes its safe form plus a hash
    suffix, and a second namespace can be spelled as exactly that."""
    import hashlib

    victim = "tenant a"
    return victim, "tenant_a_" + hashlib.sha256(victim.encode("utf-8")).hexdigest()[:8]


def test_a_namespace_whose_storage_name_is_taken_is_refused_and_the_owner_keeps_everything(tmp_path: Path) -> None:
    from mnemic import NamespaceCollisionError

    victim, attacker = _colliding_pair()
    path = tmp_path / "shared"
    with Memory(path, namespace=victim, embedder=HashEmbedder()) as owner:
        record = owner.remember("Alice banks with Northwind Savings.", user_id="alice")
        owner.runs.begin(group="crew", user_id="alice", inputs={"question": "alice's settlement"})
    with pytest.raises(NamespaceCollisionError, match="give this namespace another name"):
        Memory(path, namespace=attacker, embedder=HashEmbedder())
    with Memory(path, namespace=victim, embedder=HashEmbedder()) as owner:
        assert [r.text for r in owner.list(user_id="alice")] == ["Alice banks with Northwind Savings."]
        assert owner.get(record.id) is not None
        assert [r.inputs for r in owner.runs.runs(user_id="alice")] == [{"question": "alice's settlement"}]


def test_every_collection_of_another_namespace_is_refused_even_when_the_settings_name_no_owner(
        tmp_path: Path) -> None:
    """Stores from before the settings collection recorded its namespace pass the check on open;
    each user, run and knowledge collection still refuses the other namespace."""
    from mnemic import NamespaceCollisionError
    from mnemic.core.store import namespace_slug

    victim, attacker = _colliding_pair()
    client = make_persistent_client(tmp_path / "chroma")
    lexical = tmp_path / "lexical.sqlite3"
    owner = Memory(client=client, namespace=victim, embedder=HashEmbedder(), lexical_path=lexical)
    owner.remember("Alice banks with Northwind Savings.", user_id="alice")
    owner.runs.begin(group="crew", user_id="alice", inputs={"question": "alice's settlement"})
    owner.knowledge.add("The vault code policy changed in May.", verbatim=True)
    settings = client.get_collection(f"mnemic-{namespace_slug(victim)}-meta")
    kept = settings.get(include=["documents", "embeddings", "metadatas"])
    client.delete_collection(settings.name)
    client.create_collection(settings.name, metadata={"mnemic": "meta"}).add(
        ids=kept["ids"], documents=kept["documents"], embeddings=kept["embeddings"], metadatas=kept["metadatas"])

    other = Memory(client=client, namespace=attacker, embedder=HashEmbedder(), lexical_path=lexical)
    for read in (lambda: other.list(user_id="alice"),
                 lambda: other.recall("bank", user_id="alice"),
                 lambda: other.runs.runs(user_id="alice"),
                 lambda: other.knowledge.search("vault code policy"),
                 lambda: other.forget(user_id="alice")):
        with pytest.raises(NamespaceCollisionError):
            read()
    other.close()
    assert [r.text for r in owner.list(user_id="alice")] == ["Alice banks with Northwind Savings."]
    assert len(owner.runs.runs(user_id="alice")) == 1
    assert owner.knowledge.search("vault code policy")
    owner.close()
