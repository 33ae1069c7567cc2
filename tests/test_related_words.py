"""Related words: a record that says a query word in other words earns part of its coverage."""

from __future__ import annotations

import gzip
from pathlib import Path

from mnemic import HashEmbedder, Memory
from mnemic.core.lexical import LexicalIndex, capitalised_words
from mnemic.core.ranking import RecallWeights
from mnemic.core.related_words import TABLE_PATH, related_words

# HashEmbedder knows no meaning: only the word side can tell these records apart.
NO_CONTEXT = RecallWeights(context=0.0, context_far=0.0, session=0.0)


def _memory(path: Path) -> Memory:
    return Memory(path, embedder=HashEmbedder(), weights=NO_CONTEXT)


def test_the_shipped_table_knows_common_words_and_lists_no_word_as_its_own_relative() -> None:
    assert dict(related_words("kids"))["children"] > 0.8
    assert "career" in dict(related_words("job"))
    assert related_words("zzzz-not-a-word") == ()
    with gzip.open(TABLE_PATH, "rt", encoding="utf-8") as lines:
        rows = [line.rstrip("\n").split("\t") for line in lines]
    assert len(rows) > 10_000
    for word, found in rows[:2000]:
        pairs = [item.rpartition(":") for item in found.split(" ")]
        assert 1 <= len(pairs) <= 5
        assert all(other != word and 0.6 <= float(sim) <= 1.0 for other, _, sim in pairs)


def test_a_record_in_other_words_outranks_one_sharing_only_a_common_word(tmp_path: Path) -> None:
    with _memory(tmp_path / "m") as memory:
        memory.remember_many([f"Errand {i} on Saturday: groceries and the post office" for i in range(30)],
                             user_id="ana")
        told = memory.remember("We took the children to the aquarium", user_id="ana")
        assert told is not None
        matches = memory.recall("Where did the kids go on Saturday?", user_id="ana", limit=3)
        assert matches[0].record.id == told.id
        assert matches[0].breakdown.related_words == ["children for kids"]
        assert "related: children for kids" in matches[0].breakdown.explain()


def test_switched_off_related_words_lend_nothing(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(),
                weights=NO_CONTEXT.model_copy(update={"related": 0.0})) as memory:
        memory.remember("We took the children to the aquarium on Saturday", user_id="ana")
        for match in memory.recall("What did the kids do?", user_id="ana", limit=3):
            assert match.breakdown.related_words == []
            assert match.breakdown.lexical == 0.0


def test_a_record_holding_the_word_itself_still_ranks_above_one_holding_a_relative(tmp_path: Path) -> None:
    with _memory(tmp_path / "m") as memory:
        memory.remember_many([f"Errand {i}: groceries and the post office" for i in range(30)], user_id="ana")
        relative = memory.remember("The children painted all afternoon", user_id="ana")
        itself = memory.remember("The kids painted all afternoon", user_id="ana")
        assert relative is not None and itself is not None
        matches = memory.recall("What did the kids paint?", user_id="ana", limit=2)
        assert [m.record.id for m in matches] == [itself.id, relative.id]
        assert matches[0].breakdown.lexical > matches[1].breakdown.lexical > 0


def test_a_name_in_the_question_lends_nothing_to_other_names(tmp_path: Path) -> None:
    # MiniLM puts "melanie" beside "michelle": a question about one person is not about another.
    assert "michelle" in dict(related_words("melanie"))
    assert capitalised_words("What did Melanie paint? Sweden was cold.") == {"melanie"}
    with _memory(tmp_path / "m") as memory:
        memory.remember("Michelle went sailing last summer", user_id="ana")
        memory.remember_many([f"Errand {i}: groceries" for i in range(10)], user_id="ana")
        for match in memory.recall("Where did Melanie go?", user_id="ana", limit=5):
            # "went for go" may lend ("went" is a form of "go"); nothing stands in for the name.
            assert not [held for held in match.breakdown.related_words if held.endswith(" for melanie")]


def test_related_words_reach_only_the_asking_users_records() -> None:
    index = LexicalIndex(None)
    index.upsert([("a1", "c-ana", "ana", "We took the children to the aquarium", 1),
                  ("a2", "c-ana", "ana", "Groceries again", 1),
                  ("b1", "c-ben", "ben", "The children love the aquarium", 1)])
    scores = index.word_scores("kids aquarium", user_id="ana", related=0.5)
    assert set(scores.every()) == {"a1"}
    assert scores.every()["a1"].related == [("kids", "children")]
    assert "b1" not in index.word_scores("kids", user_id="ana", related=0.5).every()
    # Without a share, related words lend nothing (knowledge search asks for none).
    assert index.word_scores("kids", user_id="ana").every() == {}


def test_a_long_query_lends_through_its_most_telling_words_only(monkeypatch) -> None:
    filler = " ".join(f"{chr(97 + n % 26)}{chr(97 + n // 26)}zzq" for n in range(200))
    index = LexicalIndex(None)
    index.upsert([("a1", "c-ana", "ana", "We took the children to the aquarium", 1),
                  ("a2", "c-ana", "ana", filler, 1)])
    asked: list[str] = []
    import mnemic.core.word_scores as word_scores

    def spy(word: str) -> tuple[tuple[str, float], ...]:
        asked.append(word)
        return related_words(word)

    monkeypatch.setattr(word_scores, "related_words", spy)
    scores = index.word_scores(f"{filler} kids", user_id="ana", related=0.5)
    assert len(asked) == word_scores.MAX_RELATED_TERMS
    assert "kids" in asked  # said last, but no record holds it: it tells the most
    assert {rid: m.related for rid, m in scores.every().items() if m.related} == {"a1": [("kids", "children")]}


def test_a_word_past_the_cap_lends_nothing(monkeypatch) -> None:
    # It is common and weighs little; asking the index for its relatives' holders cost a walk of
    # the user's postings per relative, most of the word side of a 100k-record user's recall.
    index = LexicalIndex(None)
    index.upsert((f"r{i:02d}", "c-ana", "ana", f"Ana bought sweets for the kids, day {i}", 1) for i in range(30))
    index.upsert([("a1", "c-ana", "ana", "Ana's children love the zoo", 1)])
    asked: list[str] = []
    import mnemic.core.word_scores as word_scores

    def spy(word: str) -> tuple[tuple[str, float], ...]:
        asked.append(word)
        return related_words(word)

    monkeypatch.setattr(word_scores, "related_words", spy)
    assert "a1" in index.word_scores("kids zoo", user_id="ana", related=0.5).every()
    assert "kids" in asked
    asked.clear()
    index.word_scores("kids zoo", user_id="ana", related=0.5, cap=10)
    assert "kids" not in asked and "zoo" in asked
