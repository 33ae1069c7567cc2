"""Recall: gather a user's candidate records from three sources, then fuse and explain them.

1. Dense: the nearest records in the user's own Chroma collection. No `where` here: Chroma
   evaluates a metadata filter against every record in the database, not just this collection
   (~100 ms at 100k records), so the pool is over-fetched and filtered in Python, widening only
   when records that may not be served crowd the top.
2. Words: FTS5 bm25 and coverage for every record sharing a query word; only the most promising
   records the dense side missed are read from Chroma (a read costs ~0.2-0.4 ms of metadata).
3. Conversation: the turns around the best matches, which often hold the answer to what those
   turns asked in words of their own (worth ~3 points of LoCoMo recall@10).

`Memory.recall` validates its arguments and hands over here; every record is checked with the
caller's `servable` predicate on data read back from Chroma before it can be scored.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from . import ranking
from .lexical import LexicalIndex, matched_terms
from .ranking import Candidate, RecallWeights, fuse, own_relevance, query_time_window
from .records import MemoryMatch, MemoryRecord
from .store import ChromaStore, StoredRow


@dataclass
class RecallRequest:
    query: str
    vector: np.ndarray
    owner: str
    limit: int
    min_score: float
    now: datetime
    servable: Callable[[MemoryRecord], bool]


@dataclass
class _WordSignals:
    bm25: dict[str, float]
    coverage: dict[str, float]


class RecallPipeline:
    def __init__(self, store: ChromaStore, lexical: LexicalIndex, weights: Callable[[], RecallWeights],
                 record_of: Callable[[StoredRow], MemoryRecord]) -> None:
        self.store = store
        self.lexical = lexical
        self._weights = weights  # read per recall: the owner may swap its weights at any time
        self.record_of = record_of

    @property
    def weights(self) -> RecallWeights:
        return self._weights()

    def run(self, request: RecallRequest) -> list[MemoryMatch]:
        """Thread-safe: everything one recall learns lives in its own locals."""
        candidates, exhausted = self._dense(request)
        # bm25 for every record sharing a word (FTS5 scores them all to sort anyway): a record that
        # only context lifts into the results still needs its own lexical relevance.
        hits = self.lexical.search(request.query, user_id=request.owner, limit=ranking.LEXICAL_HITS)
        words = _WordSignals(bm25={h.record_id: h.bm25 for h in hits},
                             coverage=self.lexical.coverage(request.query, user_id=request.owner))
        self._add_word_matches(request, candidates, words, exhausted)
        self._add_neighbours(request, candidates, words)
        return self._ranked(request, candidates)

    def _candidate(self, row: StoredRow, request: RecallRequest, **signals: Any) -> Candidate | None:
        record = self.record_of(row)
        if not request.servable(record):
            return None
        if "cosine" not in signals:
            signals["cosine"] = float(np.dot(row.embedding, request.vector)) if row.embedding is not None else None
        return Candidate(record=record, **signals)

    def _dense(self, request: RecallRequest) -> tuple[dict[str, Candidate], bool]:
        pool = max(request.limit * 2, ranking.DENSE_POOL)
        fetch = pool
        while True:
            rows = self.store.query(request.owner, request.vector, n_results=fetch)
            candidates: dict[str, Candidate] = {}
            for row in rows:
                found = self._candidate(row, request, cosine=1.0 - float(row.distance or 0.0))
                if found is not None:
                    candidates[found.record.id] = found
            if len(candidates) >= pool or len(rows) < fetch or fetch >= 20 * pool:
                return candidates, len(rows) < fetch
            fetch *= 4

    def _add_word_matches(self, request: RecallRequest, candidates: dict[str, Candidate], words: _WordSignals,
                          exhausted: bool) -> None:
        bm25, shares = words.bm25, words.coverage
        for candidate in candidates.values():
            candidate.bm25 = bm25.get(candidate.record.id)
            candidate.coverage = shares.get(candidate.record.id, 0.0)
        # A record found by words only has a cosine at most the weakest dense candidate's (when
        # the dense side did not return everything), which bounds its score.
        weakest = min((c.cosine for c in candidates.values() if c.cosine is not None), default=1.0)
        bound = 0.0 if exhausted else weakest
        weights = self.weights

        def promise(record_id: str) -> float:
            bm = bm25.get(record_id) or 0.0
            return (weights.semantic * max(0.0, bound)
                    + weights.lexical * bm / (bm + weights.lexical_saturation)
                    + weights.coverage * shares.get(record_id, 0.0))

        others = [rid for rid in dict.fromkeys([*bm25, *shares]) if rid not in candidates]
        probes = heapq.nlargest(max(request.limit * 2, ranking.LEXICAL_PROBES), others, key=promise)
        if not probes:
            return
        rows = self.store.get(request.owner, ids=probes, embeddings=True)
        stale = set(probes) - {row.id for row in rows}
        if stale:
            self.lexical.delete(sorted(stale))  # the cache outlived a record: repair it on the way
        for row in rows:
            found = self._candidate(row, request, bm25=bm25.get(row.id), coverage=shares.get(row.id, 0.0))
            if found is not None:
                candidates[found.record.id] = found

    def _add_neighbours(self, request: RecallRequest, candidates: dict[str, Candidate], words: _WordSignals) -> None:
        present = {(c.record.session_id, c.record.turn) for c in candidates.values()}
        in_turns = [c for c in candidates.values() if c.record.session_id is not None and c.record.turn is not None]
        seeds = heapq.nlargest(ranking.NEIGHBOUR_SEEDS, in_turns, key=lambda c: own_relevance(c, self.weights))
        wanted: dict[str, set[int]] = {}
        for seed in seeds:
            session, turn = seed.record.session_id, seed.record.turn
            assert session is not None and turn is not None
            for step in range(-ranking.NEIGHBOUR_REACH, ranking.NEIGHBOUR_REACH + 1):
                if step and (session, turn + step) not in present:
                    wanted.setdefault(session, set()).add(turn + step)
        if not wanted:
            return
        # By id, through the lexical index's turn table: a `where` on session and turn would make
        # Chroma scan the metadata of every record in the database (~60 ms at 40k records).
        ids = self.lexical.turn_ids(self.store.collection_name(request.owner), wanted)
        if not ids:
            return
        for row in self.store.get(request.owner, ids=ids, embeddings=True):
            if row.id in candidates:
                continue
            found = self._candidate(row, request, bm25=words.bm25.get(row.id), coverage=words.coverage.get(row.id, 0.0))
            if found is not None:
                candidates[found.record.id] = found

    def _ranked(self, request: RecallRequest, candidates: dict[str, Candidate]) -> list[MemoryMatch]:
        matches: list[MemoryMatch] = []
        seen_hashes: set[str] = set()
        window = query_time_window(request.query)
        for score, candidate, breakdown in fuse(list(candidates.values()), self.weights, request.now, window=window):
            if score < request.min_score or candidate.record.hash in seen_hashes:
                continue
            seen_hashes.add(candidate.record.hash)
            if breakdown.lexical > 0:
                breakdown = breakdown.model_copy(update={"matched_terms": matched_terms(request.query,
                                                                                        candidate.record.text)})
            matches.append(MemoryMatch(record=candidate.record, score=round(score, 6), breakdown=breakdown))
            if len(matches) >= request.limit:
                break
        return matches
