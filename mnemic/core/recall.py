"""Recall: gather a user's candidate records from three sources, then fuse and explain them.

1. Dense: the nearest records in the user's own Chroma collection. No `where` here: Chroma
   evaluates a metadata filter against every record in the database, not just this collection
   (~100 ms at 100k records), so the pool is over-fetched and filtered in Python, widening only
   when records that may not be served crowd the top.
2. Words: bm25 and coverage, with each word weighted by how well it singles records out among the
   user's own records, for every record sharing a query word (FTS5 finds them) or a word of like
   meaning (`related_words.py`); only the most promising records the dense side missed are read
   from Chroma (~0.2-0.4 ms of metadata each).
3. Related: the turns around the best matches, which often hold the answer to what those turns
   asked in words of their own (worth ~3 points of LoCoMo recall@10), and the records linked to
   the strongest matches by a rare word that is not a query word (`links.py`): evidence told
   over turns that share a name but not the question's words.

The words side needs no query vector, so it runs on a helper thread while the query is embedded
and the dense side queried: FTS5 and Chroma's reads release the GIL, and embedding one query keeps
BLAS to one core. The word matches are ranked by their lexical promise alone (the dense side only
adds the same bound to all of them), so the records read ahead are exactly the ones a sequential
recall would read, plus enough spares to stand in for those the dense side already found.

`Memory.recall` validates its arguments and hands over here; every record is checked with the
caller's `servable` predicate on data read back from Chroma before it can be scored.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from . import ranking
from .lexical import LexicalIndex, matched_terms, near_a_query_word
from .links import Link
from .ranking import Candidate, RecallWeights, fuse, own_relevance, query_time_window
from .records import MemoryMatch, MemoryRecord
from .store import ChromaStore, StoredRow
from .word_scores import WordMatch, WordScores

T = TypeVar("T")


@dataclass
class RecallRequest:
    query: str
    owner: str
    limit: int
    min_score: float
    now: datetime
    servable: Callable[[MemoryRecord], bool]


@dataclass
class _WordSide:
    scores: WordScores
    ranked: list[str]  # the records sharing a query word that were read ahead, most promising first
    requested: set[str] = field(default_factory=set)  # ids already asked of Chroma
    read: dict[str, tuple[StoredRow, MemoryRecord]] = field(default_factory=dict)

    def signals(self, record_ids: Iterable[str]) -> dict[str, WordMatch]:
        return self.scores.of(record_ids)


def _probe_count(limit: int) -> int:
    return max(limit * 2, ranking.LEXICAL_PROBES)


def _dense_pool(limit: int) -> int:
    return max(limit * 2, ranking.DENSE_POOL)


def _link_reads(limit: int) -> int:
    return max(limit * 2, ranking.LINK_READS)


def _read_ahead_count(limit: int) -> int:
    """The probes, plus one spare for each record the dense side may already hold."""
    return _probe_count(limit) + _dense_pool(limit)


class RecallPipeline:
    def __init__(self, store: ChromaStore, lexical: LexicalIndex, weights: Callable[[], RecallWeights],
                 record_of: Callable[[StoredRow], MemoryRecord], embed: Callable[[str], np.ndarray]) -> None:
        self.store = store
        self.lexical = lexical
        self._weights = weights  # read per recall: the owner may swap its weights at any time
        self.record_of = record_of
        self.embed = embed
        self._helper: ThreadPoolExecutor | None = None
        self._helper_lock = threading.Lock()

    @property
    def weights(self) -> RecallWeights:
        return self._weights()

    def close(self) -> None:
        with self._helper_lock:
            helper, self._helper = self._helper, None
        if helper is not None:
            helper.shutdown(wait=True)

    def run(self, request: RecallRequest) -> list[MemoryMatch]:
        """Thread-safe: everything one recall learns lives in its own locals."""
        weights = self.weights
        words_job = self._in_background(lambda: self._word_side(request, weights))
        vector = self.embed(request.query)
        candidates = self._dense(request, vector)
        words = self._outcome(words_job, lambda: self._word_side(request, weights))
        self._add_word_matches(request, vector, candidates, words, weights)
        links = self._add_related(request, vector, candidates, words, weights)
        for rid, match in words.signals(candidates).items():
            candidates[rid].related_words = match.related
        return self._ranked(request, candidates, weights, links)

    def _in_background(self, work: Callable[[], T]) -> Future[T]:
        with self._helper_lock:
            if self._helper is None:
                self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemic-recall")
            return self._helper.submit(work)

    @staticmethod
    def _outcome(job: Future[T], work: Callable[[], T]) -> T:
        # Under concurrent recalls the one helper may still be busy with another's words: do
        # them here rather than queue behind it.
        return work() if job.cancel() else job.result()

    def _candidate(self, row: StoredRow, record: MemoryRecord, request: RecallRequest, vector: np.ndarray,
                   **signals: Any) -> Candidate | None:
        if not request.servable(record):
            return None
        if "cosine" not in signals:
            signals["cosine"] = float(np.dot(row.embedding, vector)) if row.embedding is not None else None
        return Candidate(record=record, **signals)

    def _dense(self, request: RecallRequest, vector: np.ndarray) -> dict[str, Candidate]:
        pool = _dense_pool(request.limit)
        # A margin over the pool, so that a few records that may not be served (the facts a
        # correction retired sit right beside it) do not cost a second, wider query.
        fetch = pool + pool // 2
        while True:
            rows = self.store.query(request.owner, vector, n_results=fetch)
            candidates: dict[str, Candidate] = {}
            for row in rows:
                found = self._candidate(row, self.record_of(row), request, vector,
                                        cosine=1.0 - float(row.distance or 0.0))
                if found is not None:
                    candidates[found.record.id] = found
                    if len(candidates) == pool:
                        return candidates
            if len(rows) < fetch or fetch >= 20 * pool:
                return candidates
            fetch *= 4

    def _word_side(self, request: RecallRequest, weights: RecallWeights) -> _WordSide:
        # bm25 and coverage for every record sharing a word, weighted within the user's records: a
        # record that only context or a link lifts into the results still needs its own relevance.
        scores = self.lexical.word_scores(request.query, user_id=request.owner, related=weights.related)
        words = _WordSide(scores=scores, ranked=self._promising(scores, _read_ahead_count(request.limit), weights))
        self._read(request, words, words.ranked)
        return words

    @staticmethod
    def _promising(scores: WordScores, count: int, weights: RecallWeights) -> list[str]:
        return scores.most_promising(count, lexical=weights.lexical, saturation=weights.lexical_saturation,
                                     coverage=weights.coverage)

    def _read(self, request: RecallRequest, words: _WordSide, ids: list[str]) -> None:
        if not ids:
            return
        words.requested.update(ids)
        rows = self.store.get(request.owner, ids=ids, embeddings=True)
        stale = set(ids) - {row.id for row in rows}
        if stale:
            # The cache outlived a record (erased by another process, against a server): repair it
            # on the way, and scrub the file, whose old segments and WAL still hold its words.
            self.lexical.delete(self.store.collection_name(request.owner), sorted(stale))
            self.lexical.scrub()
        for row in rows:
            words.read[row.id] = (row, self.record_of(row))

    def _add_word_matches(self, request: RecallRequest, vector: np.ndarray, candidates: dict[str, Candidate],
                          words: _WordSide, weights: RecallWeights) -> None:
        for rid, match in words.signals(candidates).items():
            candidates[rid].bm25, candidates[rid].coverage = match.bm25, match.coverage
        probe_count = _probe_count(request.limit)
        probes = [rid for rid in words.ranked if rid not in candidates][:probe_count]
        if len(probes) < probe_count and len(words.ranked) == _read_ahead_count(request.limit):
            # The dense side widened past its pool and claimed more than the spares.
            ranked = self._promising(words.scores, probe_count + len(candidates), weights)
            probes = [rid for rid in ranked if rid not in candidates][:probe_count]
        self._read(request, words, [rid for rid in probes if rid not in words.requested])
        signals = words.signals(probes)
        for rid in probes:
            if rid not in words.read or rid not in signals:
                continue
            row, record = words.read[rid]
            found = self._candidate(row, record, request, vector, bm25=signals[rid].bm25,
                                    coverage=signals[rid].coverage)
            if found is not None:
                candidates[rid] = found

    def _add_related(self, request: RecallRequest, vector: np.ndarray, candidates: dict[str, Candidate],
                     words: _WordSide, weights: RecallWeights) -> dict[str, list[Link]]:
        """Add the turns around the best matches and the records linked to the strongest ones, in
        one read; returns the links found, by the record they reach."""
        ranked = sorted(candidates.values(), key=lambda c: own_relevance(c, weights), reverse=True)
        ids = self._neighbour_ids(request, candidates, ranked)
        links: dict[str, list[Link]] = {}
        if weights.links:
            own = {c.record.id: own_relevance(c, weights) for c in ranked[:ranking.LINK_SEEDS]}
            for link in self.lexical.linked([rid for rid, score in own.items() if score > 0],
                                            user_id=request.owner, records=words.scores.records):
                if near_a_query_word(request.query, link.term):
                    continue  # a query word: the records holding it are word matches already
                links.setdefault(link.record_id, []).append(link)
            # Only the records the strongest links reach are read (each read costs ~0.25 ms, and
            # five seeds reach ~50 records on LoCoMo): a weak link cannot lift a record far.
            reach = {rid: max(own[link.via] * link.specificity for link in found)
                     for rid, found in links.items() if rid not in candidates}
            ids += heapq.nlargest(_link_reads(request.limit), reach, key=lambda rid: (reach[rid], rid))
        ids = list(dict.fromkeys(ids))
        already_read = [words.read[rid] for rid in ids if rid in words.read]
        unread = [rid for rid in ids if rid not in words.read]
        fetched = self.store.get(request.owner, ids=unread, embeddings=True) if unread else []
        rows = already_read + [(row, self.record_of(row)) for row in fetched]
        signals = words.signals(row.id for row, _ in rows if row.id not in candidates)
        for row, record in rows:
            if row.id in candidates:
                continue
            match = signals.get(row.id)
            found = self._candidate(row, record, request, vector, bm25=match.bm25 if match else None,
                                    coverage=match.coverage if match else 0.0)
            if found is not None:
                candidates[found.record.id] = found
        return links

    def _neighbour_ids(self, request: RecallRequest, candidates: dict[str, Candidate],
                       ranked: list[Candidate]) -> list[str]:
        present = {(c.record.session_id, c.record.turn) for c in candidates.values()}
        in_turns = [c for c in ranked if c.record.session_id is not None and c.record.turn is not None]
        wanted: dict[str, set[int]] = {}
        for seed in in_turns[:ranking.NEIGHBOUR_SEEDS]:
            session, turn = seed.record.session_id, seed.record.turn
            assert session is not None and turn is not None
            for step in range(-ranking.NEIGHBOUR_REACH, ranking.NEIGHBOUR_REACH + 1):
                if step and (session, turn + step) not in present:
                    wanted.setdefault(session, set()).add(turn + step)
        if not wanted:
            return []
        # By id, through the lexical index's turn table: a `where` on session and turn would make
        # Chroma scan the metadata of every record in the database (~60 ms at 40k records).
        return self.lexical.turn_ids(self.store.collection_name(request.owner), wanted)

    def _ranked(self, request: RecallRequest, candidates: dict[str, Candidate], weights: RecallWeights,
                links: dict[str, list[Link]]) -> list[MemoryMatch]:
        matches: list[MemoryMatch] = []
        seen_hashes: set[str] = set()
        window = query_time_window(request.query)
        fused = fuse(list(candidates.values()), weights, request.now, window=window, links=links)
        for score, candidate, breakdown in fused:
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
