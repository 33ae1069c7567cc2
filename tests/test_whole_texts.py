"""A memory longer than MiniLM's 256-token window is read whole: what it says after its first
paragraph reaches the dense side of recall (MiniLM alone ignores it, as sentence-transformers does)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnemic import Memory
from mnemic.core.embeddings import MiniLM, WholeTexts, default_embedder, reading_whole_texts
from mnemic.core.embeddings.whole_texts import MAX_PASSAGES, PASSAGE_WORDS, UNSPACED_PASSAGE_CHARS, passages, spread

pytestmark = pytest.mark.minilm

OPENING = " ".join(f"On day {i} of the trip we walked along the river and looked at old bridges." for i in range(25))
TAIL = "Before leaving, Maya hid the spare house key inside the ceramic frog on the back porch."
QUESTION = "Where can I find the extra key to the house?"  # shares no word but "house" and "key"


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return default_embedder()


def test_a_fact_past_the_window_reaches_the_texts_vector(model: MiniLM) -> None:
    long_text = f"{OPENING} {TAIL}"
    assert model.exceeds_window([long_text, TAIL]) == [True, False]
    whole, tail, question = reading_whole_texts(model).embed([long_text, TAIL, QUESTION])
    cut = model.embed([long_text])[0]
    assert float(cut @ tail) < float(whole @ tail)  # the cut vector never saw the tail
    assert float(cut @ question) + 0.1 < float(whole @ question)


def test_texts_within_the_window_are_embedded_exactly_as_before(model: MiniLM) -> None:
    texts = ["Alice likes green tea.", "", "日本語のテキスト", OPENING[:600]]
    assert np.array_equal(reading_whole_texts(model).embed(texts), model.embed(texts))


def test_only_embedders_that_can_tell_a_cut_are_wrapped(model: MiniLM) -> None:
    from mnemic.core.embeddings import HashEmbedder

    assert isinstance(reading_whole_texts(model), WholeTexts)
    assert isinstance(reading_whole_texts(HashEmbedder()), HashEmbedder)
    wrapped = reading_whole_texts(model)
    assert reading_whole_texts(wrapped) is wrapped and wrapped.name == model.name


def test_passages_keep_whole_sentences_within_bounds() -> None:
    parts = passages(f"{OPENING} {TAIL}")
    assert parts[-1].endswith(TAIL) and all(len(p.split()) <= PASSAGE_WORDS for p in parts)
    assert " ".join(parts) == f"{OPENING} {TAIL}"
    assert all(len(p) <= UNSPACED_PASSAGE_CHARS for p in passages("旅行の記録。" * 300))
    # A very long text is read through at most MAX_PASSAGES passages, from its first to its last.
    many = passages(" ".join([OPENING] * 12 + [TAIL]))
    chosen = spread(many, MAX_PASSAGES)
    assert len(many) > MAX_PASSAGES and len(chosen) == MAX_PASSAGES
    assert chosen[0] == many[0] and chosen[-1] == many[-1]


def test_recall_finds_a_long_memory_by_what_it_says_at_the_end(tmp_path: Path, model: MiniLM) -> None:
    # The others share the question's words too, so only what the texts mean tells them apart.
    with Memory(tmp_path / "m") as memory:
        target = memory.remember(f"{OPENING} {TAIL}", user_id="maya")
        for i in range(30):
            memory.remember(f"{OPENING} On evening {i} we ate dumplings near the house with the key-shaped "
                            "sign in the old town.", user_id="maya")
        assert target is not None
        assert memory.recall(QUESTION, user_id="maya", limit=1)[0].record.id == target.id
