"""Recall's words side runs beside the query embedding: results must not depend on that."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mnemic import HashEmbedder, Memory
from mnemic.core import ranking, recall

WORDS = ("lighthouse kayak paddle river pottery workshop lasagna recipe marathon training budget review "
         "garden fence guitar lesson concert ticket dentist appointment hiking route library card").split()
QUERIES = ["what colour is the lighthouse", "kayak paddle on the river", "pottery workshop schedule",
           "marathon training budget", "guitar lesson and concert", "dentist appointment time"]


def _fill(memory: Memory, user: str, seed: int) -> None:
    rng = random.Random(seed)
    for session in range(4):
        for turn in range(1, 31):
            text = f"{user.title()}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
            memory.remember_many([text], user_id=user, session_id=f"{user}-s{session}", turn=turn)
    memory.remember_many([f"{user} fact {' '.join(rng.sample(WORDS, 4))}" for _ in range(80)], user_id=user)
    memory.drain_writes()


def _answers(memory: Memory, user: str, limit: int = 10) -> list[list[str]]:
    # Ids in rank order: scores themselves drift in the last digits as recency ages between calls.
    return [[m.record.id for m in memory.recall(q, user_id=user, limit=limit)] for q in QUERIES]


@pytest.fixture()
def filled(tmp_path: Path) -> Memory:
    memory = Memory(tmp_path / "m", embedder=HashEmbedder())
    _fill(memory, "ana", 1)
    _fill(memory, "ben", 2)
    yield memory
    memory.close()


def test_reading_word_matches_ahead_never_changes_what_recall_returns(
        filled: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Small pools make the dense side claim most of what was read ahead, so the probes past the
    # spares must be read afterwards; with no read-ahead at all, every probe is.
    monkeypatch.setattr(ranking, "DENSE_POOL", 4)
    monkeypatch.setattr(ranking, "LEXICAL_PROBES", 4)
    expected = {limit: _answers(filled, "ana", limit) for limit in (1, 2, 10)}
    assert all(any(answer) for answer in expected[10])
    monkeypatch.setattr(recall, "_read_ahead_count", lambda limit: 0)
    assert {limit: _answers(filled, "ana", limit) for limit in (1, 2, 10)} == expected
    monkeypatch.setattr(recall, "_read_ahead_count", lambda limit: 10_000)
    assert {limit: _answers(filled, "ana", limit) for limit in (1, 2, 10)} == expected


def test_concurrent_recalls_for_two_users_match_sequential_ones(filled: Memory) -> None:
    expected = {user: _answers(filled, user) for user in ("ana", "ben")}
    assert all(any(answer) for answers in expected.values() for answer in answers)

    def run(user: str) -> tuple[str, list[list[str]]]:
        return user, _answers(filled, user)

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(run, ["ana", "ben"] * 8))
    for user, answers in outcomes:
        assert answers == expected[user]
        assert all(filled.get(rid).user_id == user for answer in answers for rid in answer)


def test_closing_the_memory_stops_recalls_helper_thread(tmp_path: Path) -> None:
    def helpers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("mnemic-recall")]

    before = len(helpers())
    memory = Memory(tmp_path / "m", embedder=HashEmbedder())
    memory.remember("The lighthouse is painted red.", user_id="ana")
    assert memory.recall("lighthouse colour", user_id="ana")
    assert len(helpers()) > before
    memory.close()
    assert len(helpers()) == before
