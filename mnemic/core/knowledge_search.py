"""Knowledge search: the hybrid ranking of a namespace's knowledge chunks.

Kept apart from the knowledge store's writes because it needs only reads: the chunk collection,
the shared lexical index and the Memory's embedder and weights. Ranking is memory recall's
(`ranking.fuse`: dense + bm25 + coverage), with everything about time held constant, because
knowledge does not age: it holds until an operator removes it.

A search kept to some sources asks Chroma for the nearest chunks of those sources only (a
`where`), so a source's own chunk is found however many chunks of other sources rank higher.
The same passage stored under two sources is two chunks: a search returns it once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .embeddings import Embedder
from .knowledge_chunks import KnowledgeHit, from_row
from .knowledge_identity import text_identity
from .lexical import LexicalIndex, matched_terms
from .ranking import Candidate, RecallWeights, fuse
from .records import utcnow
from .store import StoredRow
from .store.knowledge import KnowledgeCollection

# The lexical index is shared with memory and keyed by owner. Every user id is stripped of
# surrounding whitespace before use, so an owner with a leading space can never be a user's.
KNOWLEDGE_OWNER = " mnemic:knowledge"
KNOWLEDGE_IMPORTANCE = 0.5


@dataclass(frozen=True)
class _Ranked:
    """What fusion needs of a chunk before its text is fetched (see ranking.Rankable)."""

    id: str
    created_at: datetime
    importance: float = KNOWLEDGE_IMPORTANCE
    session_id: str | None = None
    turn: int | None = None


class KnowledgeRanker:
    """Finds and explains the chunks most relevant to a query (inputs already checked)."""

    def __init__(self, collection: KnowledgeCollection, lexical: LexicalIndex,
                 embedder: Callable[[], Embedder], weights: Callable[[], RecallWeights]) -> None:
        self._collection = collection
        self._lexical = lexical
        self._embedder = embedder
        self._weights = weights

    def search(self, query_text: str, *, limit: int, sources: frozenset[str] | None,
               min_score: float) -> list[KnowledgeHit]:
        now = utcnow()
        pool = max(limit * 4, 40)
        vector = self._embedder().embed([query_text])[0]
        names = sorted(sources) if sources else None
        cosines = {rid: 1.0 - distance
                   for rid, distance in self._collection.query(vector, n_results=pool, sources=names)}
        # The keyword index knows no sources: its pool is widened, then kept to the sources below.
        # Words are weighed within this namespace's knowledge (FTS5's own bm25 would weigh them by
        # the whole table: every namespace's records, whose words must not move these scores).
        words = self._lexical.word_scores(query_text, user_id=KNOWLEDGE_OWNER)
        weights = self._weights()
        promising = words.most_promising(pool * (4 if sources else 1), lexical=weights.lexical,
                                         saturation=weights.lexical_saturation, coverage=weights.coverage)
        bm25 = {rid: match.bm25 for rid, match in words.of(promising).items() if match.bm25 is not None}
        missing = [rid for rid in bm25 if rid not in cosines]
        if missing:
            vectors = self._collection.embeddings(missing)
            stale = [rid for rid in missing if rid not in vectors]
            if stale:
                self._lexical.delete(self._collection.name, stale)
                for rid in stale:
                    del bm25[rid]
            for rid, stored in vectors.items():
                cosines[rid] = float(np.dot(stored, vector))
        ids = list(dict.fromkeys([*cosines, *bm25]))
        rows: dict[str, StoredRow] = {}
        if sources:
            rows = {row.id: row for row in self._collection.get(ids)}
            ids = [rid for rid in ids if rid in rows and rows[rid].metadata.get("source") in sources]
        shares = {rid: match.coverage for rid, match in words.of(ids).items()}
        # Knowledge does not age: it holds until an operator removes it, so every chunk gets full
        # recency, no time window applies, and ranking rests on relevance alone.
        candidates = [Candidate(record=_Ranked(rid, now), cosine=cosines.get(rid), bm25=bm25.get(rid),
                                coverage=shares.get(rid, 0.0))
                      for rid in ids]
        fused = [(score, c, b) for score, c, b in fuse(candidates, self._weights(), now) if score >= min_score]
        results: list[KnowledgeHit] = []
        shown: set[str] = set()
        start = 0
        # Rows are fetched a batch at a time: a few spares per batch, for a winner another process
        # deleted since it was ranked, or a passage already shown under another source.
        while start < len(fused) and len(results) < limit:
            batch = fused[start:start + limit + 4]
            start += len(batch)
            missing = [c.record.id for _, c, _ in batch if c.record.id not in rows]
            rows.update({row.id: row for row in self._collection.get(missing)} if missing else {})
            for score, candidate, breakdown in batch:
                row = rows.get(candidate.record.id)
                if row is None or text_identity(row.document) in shown:
                    continue
                shown.add(text_identity(row.document))
                chunk = from_row(row)
                if candidate.bm25 is not None:
                    breakdown = breakdown.model_copy(update={"matched_terms": matched_terms(query_text, chunk.text)})
                results.append(KnowledgeHit(chunk=chunk, score=round(score, 6), breakdown=breakdown))
                if len(results) >= limit:
                    break
        return results
