"""Irregular word forms: a question put in the base form ("What did they eat?") finds the memory
told in the past ("We ate ...") with the word's whole share, which the porter stemmer cannot give."""

from __future__ import annotations

import gzip
from pathlib import Path

from mnemic import HashEmbedder, Memory
from mnemic.core.ranking import RecallWeights
from mnemic.core.word_forms import LICENSE_PATH, TABLE_PATH, other_forms

# HashEmbedder knows no meaning: only the word side can tell these records apart. Related words
# off, so that only the forms can lend.
WORDS_ONLY = RecallWeights(context=0.0, context_far=0.0, session=0.0, related=0.0)


def test_the_shipped_table_joins_irregular_forms_both_ways_and_carries_its_license() -> None:
    assert "ate" in other_forms("eat") and "eat" in other_forms("ate")
    assert "went" in other_forms("go") and "bought" in other_forms("buy") and "mouse" in other_forms("mice")
    assert other_forms("walk") == ()  # regular forms are the stemmer's
    with gzip.open(TABLE_PATH, "rt", encoding="utf-8") as lines:
        rows = dict(line.rstrip("\n").split("\t") for line in lines)
    assert len(rows) > 500 and all(word not in forms.split() for word, forms in rows.items())
    assert "Princeton University" in LICENSE_PATH.read_text(encoding="utf-8")


def test_a_memory_in_another_form_of_the_question_word_gets_its_whole_share(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), weights=WORDS_ONLY) as memory:
        memory.remember_many([f"The harbour was windy on day {i}." for i in range(30)], user_id="ana")
        told = memory.remember("We ate grilled sardines at the harbour.", user_id="ana")
        assert told is not None
        (first, *_) = memory.recall("What did we eat at the harbour?", user_id="ana", limit=3)
        assert first.record.id == told.id
        assert first.breakdown.related_words == ["ate for eat"]
        same_word = memory.remember("We eat grilled sardines at the harbour.", user_id="ana")
        assert same_word is not None
        scores = {m.record.id: m.breakdown.lexical for m in memory.recall("What did we eat at the harbour?",
                                                                         user_id="ana", limit=3)}
        assert abs(scores[told.id] - scores[same_word.id]) < 1e-9  # a form is the word: the same share
