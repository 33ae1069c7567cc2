"""Linked memories: records joined by the rare words they share, per user, erased with their record,
followed by recall from its strongest matches and explained."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mnemic import HashEmbedder, Memory
from mnemic.core.lexical import LexicalIndex, owner_token
from mnemic.core.links import MAX_LINK_DF, TABLES
from mnemic.core.ranking import RecallWeights


def _index(rows: list[tuple[str, str, str]]) -> LexicalIndex:
    index = LexicalIndex(None)
    for rid, user, text in rows:
        index.upsert([(rid, f"c-{user}", user, text, 1)])
    return index


def _links_of(index: LexicalIndex, rid: str, user: str) -> set[tuple[str, str]]:
    return {(link.record_id, link.term) for link in index.linked([rid], user_id=user)}


def test_records_sharing_a_rare_word_are_linked_both_ways_and_only_within_their_user() -> None:
    index = _index([
        ("a1", "ana", "Ana: my dog Rex chewed a slipper"),
        ("a2", "ana", "Ana: took Rex to the vet, all fine"),
        ("a3", "ana", "Ana: work was busy today"),
        ("b1", "ben", "Ben: Rex is the name of my turtle"),
        ("b2", "ben", "Ben: slipper sale at the mall"),
    ])
    assert _links_of(index, "a1", "ana") == {("a2", "rex")}
    assert _links_of(index, "a2", "ana") == {("a1", "rex")}
    assert _links_of(index, "a3", "ana") == set()
    assert _links_of(index, "b1", "ben") == set()  # Ana's Rex is not Ben's
    # Asking with another user's id reaches nothing, even for a record that has links.
    assert _links_of(index, "a1", "ben") == set()


def test_a_word_in_many_of_a_users_records_links_nothing() -> None:
    # "Ana" is said in every record (a speaker label): it carries no information for her.
    rows = [(f"a{i}", "ana", f"Ana: note number {i} about topic{i}") for i in range(MAX_LINK_DF + 4)]
    rows.append(("k1", "ana", "Ana: the kayak trip was cold"))
    rows.append(("k2", "ana", "Ana: I repaired the kayak"))
    index = _index(rows)
    terms = {term for rid, _, _ in rows for _, term in _links_of(index, rid, "ana")}
    assert terms == {"kayak"}
    # A word that was rare when the first records came and is common now links nothing either.
    assert "note" not in terms and "number" not in terms


def test_links_are_erased_with_their_record() -> None:
    index = _index([
        ("a1", "ana", "Ana: my dog Rex chewed a slipper"),
        ("a2", "ana", "Ana: took Rex to the vet"),
        ("a3", "ana", "Ana: Rex loves the vet"),
        *((f"f{i}", "ana", f"Ana: errand {i}") for i in range(6)),
    ])
    index.delete("c-ana", ["a2"])
    assert _links_of(index, "a1", "ana") == {("a3", "rex")}
    # Re-indexing a record with new text replaces its links.
    index.upsert([("a3", "c-ana", "ana", "Ana: a quiet evening", 2)])
    assert _links_of(index, "a1", "ana") == set()
    assert _links_of(index, "a3", "ana") == set()


def _link_rows(path: Path, user: str, table: str | None = None) -> int:
    """Rows of a link table held for the user; without a table, the user's links (one per
    direction: two records listed under one rare word)."""
    db = sqlite3.connect(path / "lexical.sqlite3")
    try:
        if table is not None:
            query = f"SELECT count(*) FROM {table} WHERE owner = ?"
        else:
            query = ("SELECT count(*) FROM link_postings a JOIN link_postings b ON a.owner = b.owner "
                     "AND a.term = b.term AND a.record_id <> b.record_id WHERE a.owner = ?")
        return int(db.execute(query, (owner_token("default", user),)).fetchone()[0])
    finally:
        db.close()


def _terms(path: Path, user: str) -> dict[str, int]:
    db = sqlite3.connect(path / "lexical.sqlite3")
    try:
        return dict(db.execute("SELECT term, df FROM link_terms WHERE owner = ?",
                               (owner_token("default", user),)).fetchall())
    finally:
        db.close()


def test_delete_and_forget_erase_a_users_links(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        first = memory.remember("My dog Rex chewed a slipper", user_id="ana")
        memory.remember("Took Rex to the vet", user_id="ana")
        memory.remember("Rex is my turtle", user_id="ben")
        memory.remember("Rex the turtle sleeps", user_id="ben")
        assert _link_rows(tmp_path / "m", "ana") == 2
        memory.delete(first.id)
        assert _link_rows(tmp_path / "m", "ana") == 0
        # The deleted record's words are counted out: none of them stays in the index.
        assert _terms(tmp_path / "m", "ana") == {"took": 1, "rex": 1, "vet": 1}
        memory.remember("Rex barked at the mailman", user_id="ana")
        assert _link_rows(tmp_path / "m", "ana") == 2
        memory.forget(user_id="ana")
        for table in TABLES:  # nothing of Ana's words stays behind, not even a count
            assert _link_rows(tmp_path / "m", "ana", table) == 0
        assert _link_rows(tmp_path / "m", "ben") == 4  # rex, turtle: both directions


def test_links_are_rebuilt_by_repair_for_an_index_from_before_them(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.remember("My dog Rex chewed a slipper", user_id="ana")
        memory.remember("Took Rex to the vet", user_id="ana")
    db = sqlite3.connect(tmp_path / "m" / "lexical.sqlite3")
    for table in TABLES:
        db.execute(f"DROP TABLE {table}")
    db.commit()
    db.close()
    with Memory(tmp_path / "m", embedder=HashEmbedder()):
        pass
    assert _link_rows(tmp_path / "m", "ana") == 2


STORY = [
    "We finally adopted a dog from the shelter, his name is Rex",
    "Rex broke a leg chasing a squirrel in the park",
]


def _told(memory: Memory) -> None:
    for i in range(40):
        memory.remember(f"Filler entry {i}: groceries, errands and laundry number {i}", user_id="ana")
    for i, text in enumerate(STORY):
        memory.remember(text, user_id="ana", session_id=f"s{i}", turn=1)
    memory.remember("Rex is also the name of Ben's turtle", user_id="ben")


@pytest.mark.parametrize("links", [0.0, RecallWeights().links])
def test_recall_reaches_a_linked_record_that_shares_no_word_with_the_query(tmp_path: Path, links: float) -> None:
    weights = RecallWeights(links=links)
    with Memory(tmp_path / "m", embedder=HashEmbedder(), weights=weights) as memory:
        _told(memory)
        matches = memory.recall("what happened with the dog we adopted", user_id="ana", limit=5)
        assert matches[0].record.text == STORY[0]
        assert all(m.record.user_id == "ana" for m in matches)
        reached = [m for m in matches if m.record.text == STORY[1]]
        if not links:
            assert not reached or reached[0].breakdown.linked == 0
            return
        (leg,) = reached
        assert leg.breakdown.linked > 0
        assert leg.breakdown.linked_via == "rex"
        assert leg.breakdown.linked_to == matches[0].record.id
        assert "linked 0." in leg.explanation and "via 'rex' to 'We finally adopted" in leg.explanation
        assert leg.score == pytest.approx(sum((leg.breakdown.semantic, leg.breakdown.lexical, leg.breakdown.recency,
                                               leg.breakdown.importance, leg.breakdown.context,
                                               leg.breakdown.linked)), abs=1e-5)
