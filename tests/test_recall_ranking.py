"""Recall ranking: coverage, times named in a query, conversation context and absolute scores."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from mnemic import HashEmbedder, Memory
from mnemic.core.lexical import LexicalIndex
from mnemic.core.ranking import Candidate, RecallWeights, TimeWindow, fuse, query_time_window
from mnemic.core.records import MemoryRecord, text_hash

UTC = timezone.utc


@pytest.mark.parametrize(("query", "window"), [
    ("What did she do on 8 May, 2023?", TimeWindow(datetime(2023, 5, 8, tzinfo=UTC), datetime(2023, 5, 9, tzinfo=UTC))),
    ("as of May 8th 2023", TimeWindow(datetime(2023, 5, 8, tzinfo=UTC), datetime(2023, 5, 9, tzinfo=UTC))),
    ("plans for 2024-02-29", TimeWindow(datetime(2024, 2, 29, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC))),
    ("trips in December 2022", TimeWindow(datetime(2022, 12, 1, tzinfo=UTC), datetime(2023, 1, 1, tzinfo=UTC))),
    ("what did I paint in October?", TimeWindow(month=10)),
    ("books read in 2021", TimeWindow(datetime(2021, 1, 1, tzinfo=UTC), datetime(2022, 1, 1, tzinfo=UTC))),
    # No such day: the month it names still holds.
    ("on 31 February, 2023", TimeWindow(datetime(2023, 2, 1, tzinfo=UTC), datetime(2023, 3, 1, tzinfo=UTC))),
])
def test_query_time_window_reads_explicit_dates(query: str, window: TimeWindow) -> None:
    assert query_time_window(query) == window


@pytest.mark.parametrize("query", ["May I ask what we chose?", "what happened last week", "since 1850 or so"])
def test_query_time_window_ignores_what_names_no_date(query: str) -> None:
    assert query_time_window(query) is None


def test_coverage_is_the_idf_weighted_share_of_query_words_per_user() -> None:
    index = LexicalIndex(None)
    rows = [("a", "Ana: I adopted a puppy named Toby"), ("b", "Ana: thanks, see you soon"),
            ("c", "Ana: the puppy sleeps a lot"), ("d", "Ana: work was busy")]
    index.upsert((rid, "c1", "ana", text, 1) for rid, text in rows)
    # Another user's records must not change what is rare for Ana.
    index.upsert((f"o{i}", "c2", "ben", "Ben adopted adopted adopted", 1) for i in range(20))
    shares = index.coverage("When did Ana adopt Toby the puppy? The puppies!", user_id="ana")
    assert shares["a"] > 0.9
    assert shares["c"] < shares["a"]
    assert shares["b"] < 0.05  # only the name every turn carries
    assert set(shares) == {"a", "b", "c", "d"}
    assert index.coverage("zebra", user_id="ana") == {}


def _record(rid: str, *, session: str | None = None, turn: int | None = None,
            created: datetime = datetime(2024, 1, 1, tzinfo=UTC)) -> MemoryRecord:
    return MemoryRecord(id=rid, text=rid, hash=text_hash(rid), user_id="u", session_id=session, turn=turn,
                        created_at=created, updated_at=created)


def test_fuse_keeps_scores_absolute_and_weak_matches_weak() -> None:
    now = datetime(2024, 1, 2, tzinfo=UTC)
    weak = [Candidate(record=_record("x"), cosine=0.25, bm25=None, coverage=0.0)]
    strong = [Candidate(record=_record("x"), cosine=0.8, bm25=12.0, coverage=0.9)]
    (weak_score, _, _), = fuse(weak, RecallWeights(), now)
    (strong_score, _, _), = fuse(strong, RecallWeights(), now)
    assert weak_score < 0.3 < 1.0 < strong_score
    assert fuse([Candidate(record=_record("y"), cosine=0.1, coverage=0.0)], RecallWeights(), now) == []

def test_by_default_word_relevance_is_how_much_of_the_question_a_record_holds() -> None:
    # bm25 is weighted 0 (it helped one half of LoCoMo and hurt the other): two records holding
    # the same share of the query's words get the same word relevance however their bm25 differs
    # (one short record, one long), and the explanation reports exactly that share.
    now = datetime(2024, 1, 2, tzinfo=UTC)
    short = Candidate(record=_record("short"), cosine=0.5, bm25=9.0, coverage=0.6)
    long = Candidate(record=_record("long"), cosine=0.5, bm25=2.0, coverage=0.6)
    weights = RecallWeights()
    fused = {c.record.id: (score, breakdown) for score, c, breakdown in fuse([short, long], weights, now)}
    assert fused["short"][0] == pytest.approx(fused["long"][0])
    assert fused["short"][1].lexical == pytest.approx(fused["long"][1].lexical)
    assert fused["short"][1].lexical == pytest.approx(weights.coverage * 0.6 * (1 + weights.session))
    assert weights.semantic + weights.lexical + weights.coverage == pytest.approx(1.0)



def test_fuse_lets_the_turn_after_a_strong_match_share_its_relevance() -> None:
    now = datetime(2024, 1, 2, tzinfo=UTC)
    question = Candidate(record=_record("q", session="s", turn=4), cosine=0.8, bm25=10.0, coverage=0.9)
    answer = Candidate(record=_record("a", session="s", turn=5), cosine=0.1, coverage=0.0)
    unrelated = Candidate(record=_record("z", session="t", turn=9), cosine=0.3, coverage=0.1)
    ranked = [c.record.id for _, c, _ in fuse([question, answer, unrelated], RecallWeights(), now)]
    assert ranked == ["q", "a", "z"]


def test_fuse_favours_records_made_in_the_time_the_query_names() -> None:
    now = datetime(2024, 6, 1, tzinfo=UTC)
    may = Candidate(record=_record("may", created=datetime(2023, 5, 10, tzinfo=UTC)), cosine=0.5, coverage=0.3)
    june = Candidate(record=_record("june", created=datetime(2023, 6, 20, tzinfo=UTC)), cosine=0.55, coverage=0.3)
    window = query_time_window("what happened in May 2023")
    assert [c.record.id for _, c, _ in fuse([may, june], RecallWeights(), now)] == ["june", "may"]
    assert [c.record.id for _, c, _ in fuse([may, june], RecallWeights(), now, window=window)] == ["may", "june"]


def test_recall_fetches_the_answer_turn_that_shares_no_word_with_the_query(memory: Memory) -> None:
    turns = ["Bo: Did you hear about the lighthouse renovation downtown?",
             "Cy: What colour did they paint the lighthouse in the end?",
             "Bo: Bright red with white stripes, it looks great.",
             "Cy: Nice. My cat knocked a plant off the shelf today."]
    turns += [f"Bo: filler line number {i} about nothing much." for i in range(60)]
    for i, text in enumerate(turns, start=1):
        memory.remember(text, user_id="cy", session_id="cy-s1", turn=i)
    matches = memory.recall("what colour is the lighthouse painted", user_id="cy", limit=3)
    texts = [m.record.text for m in matches]
    assert texts[0].startswith("Cy: What colour")
    assert "Bo: Bright red with white stripes, it looks great." in texts
    answer = next(m for m in matches if m.record.text.startswith("Bo: Bright red"))
    assert answer.breakdown.context > 0
    assert answer.score == pytest.approx(sum((answer.breakdown.semantic, answer.breakdown.lexical,
                                              answer.breakdown.recency, answer.breakdown.importance,
                                              answer.breakdown.context)), abs=1e-5)


LIGHTHOUSE = ["Bo: Did you hear about the lighthouse renovation downtown?",
              "Cy: What colour did they paint the lighthouse in the end?",
              "Bo: Bright red with white stripes, it looks great.",
              "Cy: Nice. My cat knocked a plant off the shelf today."]


def test_a_lexical_index_from_before_turn_placement_is_rebuilt_on_open(tmp_path: Path) -> None:
    import sqlite3

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        for i, text in enumerate([*LIGHTHOUSE, *(f"Bo: filler line number {i} about nothing." for i in range(200))]):
            memory.remember_many([text], user_id="cy", session_id="cy-s1", turn=i + 1)
    # The index as an older mnemic left it: no turn columns.
    db = sqlite3.connect(tmp_path / "m" / "lexical.sqlite3")
    db.execute("DROP INDEX indexed_by_turn")
    db.execute("ALTER TABLE indexed DROP COLUMN session_id")
    db.execute("ALTER TABLE indexed DROP COLUMN turn")
    db.commit()
    db.close()
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        texts = [m.record.text for m in memory.recall("what colour is the lighthouse painted", user_id="cy", limit=3)]
        assert "Bo: Bright red with white stripes, it looks great." in texts
        found = memory.recall("filler line", user_id="cy", limit=250)
        assert sum("filler" in m.breakdown.matched_terms for m in found) == 200  # every record indexed again


def test_neighbouring_turns_come_only_from_the_askers_own_sessions(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        for i, text in enumerate(LIGHTHOUSE):
            memory.remember(text, user_id="cy", session_id="shared-session-name", turn=i + 1)
        memory.remember("Eve: The lighthouse code is 4471.", user_id="eve", session_id="shared-session-name", turn=3)
        memory.remember("Eve: What colour did they paint the lighthouse?", user_id="eve",
                        session_id="shared-session-name", turn=2)
        for match in memory.recall("what colour is the lighthouse painted", user_id="cy", limit=10):
            assert match.record.user_id == "cy"


def test_a_name_in_most_of_a_users_records_does_not_dominate_word_relevance(tmp_path: Path) -> None:
    # Ana's name is in every one of her records (a speaker label), and rare among everyone else's;
    # "pottery" is rare among hers and common among everyone else's. Within her records the name
    # says nothing, so a record holding only the name (three times, in few words) must not
    # outrank the one that holds the word that singles it out.
    weights = RecallWeights(semantic=0.0, coverage=0.0, lexical=1.0, context=0.0, context_far=0.0, session=0.0)
    with Memory(tmp_path / "m", embedder=HashEmbedder(), weights=weights) as memory:
        memory.remember_many([f"Pottery note {i}: glaze, kiln and pottery wheel" for i in range(60)], user_id="ben")
        memory.remember_many([f"Cy says: errand {i} done" for i in range(200)], user_id="cy")
        memory.remember_many([f"Ana: day {i} was fine, nothing special" for i in range(12)], user_id="ana")
        memory.remember("Ana: Ana, Ana!", user_id="ana")
        memory.remember("Ana: I signed up for a pottery class at the community centre near the station",
                        user_id="ana")
        best = memory.recall("Ana pottery", user_id="ana", limit=3)[0]
        assert "pottery class" in best.record.text


def test_a_users_record_count_follows_writes_through_any_connection(tmp_path: Path) -> None:
    # The count behind every word's weight is kept between recalls (counting walks the user's
    # whole posting list); a write through this index or another one on the file renews it.
    path = tmp_path / "lexical.sqlite3"
    index, other = LexicalIndex(path), LexicalIndex(path)
    index.upsert([("a", "c1", "ana", "Ana adopted a puppy", 1)])
    assert index.word_scores("puppy", user_id="ana").records == 1
    other.upsert([(f"o{i}", "c1", "ana", f"Ana walked the dog {i}", 1) for i in range(4)])
    assert index.word_scores("puppy", user_id="ana").records == 5
    index.delete("c1", ["o0", "o1"])
    assert index.word_scores("puppy", user_id="ana").records == 3
    assert other.word_scores("puppy", user_id="ana").records == 3


def test_a_word_in_more_records_than_the_cap_counts_in_the_newest(tmp_path: Path) -> None:
    index = LexicalIndex(None)
    index.upsert((f"r{i:02d}", "c1", "ana", f"Ana went hiking, entry {i}", 1) for i in range(30))
    shares = index.coverage("hiking", user_id="ana", cap=10)
    assert set(shares) == {f"r{i:02d}" for i in range(20, 30)}


def test_a_word_past_the_cap_weighs_what_its_count_says_not_what_was_listed() -> None:
    # Only the newest holders of a common word are listed; its weight must still be that of a
    # word held by all of them, or it would crowd out the rare words of the question.
    index = LexicalIndex(None)
    index.upsert((f"r{i:02d}", "c1", "ana", f"Ana went hiking, entry {i}", 1) for i in range(30))
    index.upsert([("z1", "c1", "ana", "Ana saw a zebra", 1)])
    listed = index.coverage("zebra hiking", user_id="ana", cap=10)
    whole = index.coverage("zebra hiking", user_id="ana", cap=1000)
    assert listed["z1"] == pytest.approx(whole["z1"], rel=0.02)
    assert listed["z1"] > 0.7  # the rare word carries the question


@pytest.mark.parametrize("word", ["tv", "2024", "café"])
def test_a_word_the_word_counts_miss_still_counts_in_its_newest_holders(word: str) -> None:
    # The counts that decide which end to list from leave out digits, short words and accented
    # spellings: the oldest holders got the word's share and its weight was that of the cap.
    index = LexicalIndex(None)
    index.upsert((f"r{i:02d}", "c1", "ana", f"Ana and the {word}, entry {i}", 1) for i in range(30))
    index.upsert([("z1", "c1", "ana", "Ana saw a zebra", 1)])
    listed = index.coverage(f"zebra {word}", user_id="ana", cap=10)
    whole = index.coverage(f"zebra {word}", user_id="ana", cap=1000)
    assert {rid for rid in listed if rid != "z1"} == {f"r{i:02d}" for i in range(20, 30)}
    assert listed["z1"] == pytest.approx(whole["z1"], rel=0.02)


@pytest.mark.parametrize(("said", "asked"), [
    ("Ana opened a café downtown", "cafe"),
    ("Ana opened a cafe downtown", "Café"),
    ("Ana opened a cafe downtown", "ｃａｆｅ"),  # full-width letters, as an IME types them
    ("Ana went hiking on Sunday", "hikes"),
    ("Ana bought an e_reader", "e_reader"),
])
def test_a_word_is_found_whatever_its_accents_width_or_form(said: str, asked: str) -> None:
    index = LexicalIndex(None)
    index.upsert([("a", "c1", "ana", said, 1), ("b", "c1", "ana", "Ana stayed home", 1)])
    assert set(index.coverage(asked, user_id="ana")) == {"a"}


def test_one_users_words_are_not_found_through_another_users_identical_words() -> None:
    # Each owner's words are held behind their own tag: the same word said by two users is two
    # index terms, and neither user's look-up lists the other's rows.
    index = LexicalIndex(None)
    index.upsert([("a", "c1", "ana", "Ana keeps bees", 1), ("b", "c2", "ben", "Ben keeps bees", 1)])
    ana, ben = index.owner("ana"), index.owner("ben")
    assert len(index.holders(ana, "bees", 10)) == len(index.holders(ben, "bees", 10)) == 1
    assert index.holders(ana, "bees", 10) != index.holders(ben, "bees", 10)
    assert index.holder_count(ana, "bees") == 1


@pytest.mark.parametrize("joint", ["\u19b0", "\u1cf2", "_", "-", "\u0301"])
def test_a_word_written_to_split_into_another_users_term_reaches_nothing_of_theirs(joint: str) -> None:
    # Found by an attack: FTS5's Unicode 6.1 tables split words at characters Python's count as
    # letters, so mallory's word "x<U+19B0><alice's tag>zanzibar" put the bare term of alice's
    # "zanzibar" among mallory's rows: alice's holders grew, the word's weight went negative and
    # every keyword score of alice's was voided.
    index = LexicalIndex(None)
    index.upsert([("a1", "c1", "alice", "We stayed in Zanzibar for the honeymoon", 1),
                  ("a2", "c1", "alice", "The honeymoon photos are printed", 1)])
    before = index.coverage("Zanzibar honeymoon", user_id="alice")
    tag = index.owner("alice")[1:17]
    crafted = " ".join(f"x{joint}{tag}{form}zanzibar note" for form in ("", "a", "u"))
    index.upsert((f"m{i}", "c2", "mallory", crafted, 1) for i in range(30))
    assert index.holder_count(index.owner("alice"), "zanzibar") == 1
    assert index.coverage("Zanzibar honeymoon", user_id="alice") == before


@pytest.mark.parametrize(("said", "asked", "found"), [
    ("मेरे दोस्त का नाम अर्जुन है", "अर्जुन", True),  # a virama or vowel sign is part of its word
    ("আমার বন্ধুর নাম অর্জুন", "অর্জুন", True),
    ("ガス料金を払った", "ガス料金を払った", True),
    ("カス", "ガス", False),  # a kana voicing mark is no accent: gas is not dregs
])
def test_words_of_other_scripts_are_found_whole_and_not_folded_into_others(said: str, asked: str,
                                                                           found: bool) -> None:
    index = LexicalIndex(None)
    index.upsert([("a", "c1", "ana", said, 1), ("b", "c1", "ana", "Ana stayed home", 1)])
    assert (set(index.coverage(asked, user_id="ana")) == {"a"}) is found


@pytest.mark.parametrize(("query", "text", "matched"), [
    ("news delivery", "The newspaper delivery was late", ["delivery"]),  # "news" did not score
    ("hike", "We went hiking", ["hike"]),
    ("cafe", "Café Luna opened", ["cafe"]),
    ("ｐｏｓｔｇｒｅｓｑｌ", "We run PostgreSQL", ["postgresql"]),
])
def test_an_explanation_names_the_query_words_that_scored(query: str, text: str, matched: list[str]) -> None:
    from mnemic.core.lexical import matched_terms

    assert matched_terms(query, text) == matched


def test_conversation_context_is_only_what_other_turns_lend(memory: Memory) -> None:
    """A turn alone in its session scores what the same record outside any conversation scores,
    with nothing called context; a turn whose session holds a better match is lent its share."""
    memory.remember("Rex the beagle loves the beach.", user_id="alice", session_id="s1", turn=1)
    memory.remember("Rex the beagle loves the beach.", user_id="bob")
    (alone,) = memory.recall("beagle beach", user_id="alice")
    (outside,) = memory.recall("beagle beach", user_id="bob")
    assert alone.score == pytest.approx(outside.score)
    assert alone.breakdown.context == 0.0 and "context" not in alone.explanation

    memory.remember("We walk Rex the beagle on the beach at dawn.", user_id="carol", session_id="s2", turn=1)
    memory.remember("The beach was windy.", user_id="carol", session_id="s2", turn=5)
    best, lent = memory.recall("Rex the beagle beach dawn", user_id="carol")
    assert best.breakdown.context == 0.0
    assert lent.breakdown.context > 0 and "conversation context" in lent.explanation
