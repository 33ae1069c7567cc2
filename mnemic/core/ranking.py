"""Hybrid recall scoring: dense similarity fused with lexical relevance, recency and importance.

Each signal is on an absolute 0..1 scale (cosine; saturated bm25), so a score means the same
in every recall and a weak best match is reported as weak. Turns of one
conversation that sit next to a strong match share a little of its relevance ("context"): a
question is often answered across a pair of turns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from .records import MemoryRecord, ScoreBreakdown


class RecallWeights(BaseModel):
    """How much each signal counts. They need not sum to 1; scores are comparable within a recall."""

    model_config = ConfigDict(frozen=True)

    semantic: float = Field(0.5, ge=0)
    lexical: float = Field(0.35, ge=0)
    recency: float = Field(0.05, ge=0)
    importance: float = Field(0.05, ge=0)
    context: float = Field(0.15, ge=0)
    half_life_days: float = Field(30.0, gt=0)
    # bm25 is unbounded; b / (b + k) maps it to 0..1, reaching one half at b = k.
    lexical_saturation: float = Field(4.0, gt=0)
    # Below this cosine, and with no shared word, a record is not relevant at all.
    min_similarity: float = Field(0.2, ge=-1, le=1)


@dataclass
class Candidate:
    record: MemoryRecord
    cosine: float | None = None
    bm25: float | None = None
    matched_terms: list[str] = field(default_factory=list)


def recency_factor(created: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now - created).total_seconds() / 86400.0)
    return math.pow(0.5, age_days / half_life_days)


def fuse(candidates: Sequence[Candidate], weights: RecallWeights, now: datetime) -> list[tuple[float, Candidate, ScoreBreakdown]]:
    if not candidates:
        return []
    # Absolute scales, not min-max within the candidates: a weak best match must stay weak, or
    # recall would always return something and "nothing relevant" could never be said.
    candidates = [c for c in candidates
                  if (c.bm25 is not None and c.bm25 > 0)
                  or (c.cosine is not None and c.cosine >= weights.min_similarity)]
    if not candidates:
        return []
    semantic = [max(0.0, c.cosine) if c.cosine is not None else 0.0 for c in candidates]
    lexical = [c.bm25 / (c.bm25 + weights.lexical_saturation) if c.bm25 is not None and c.bm25 > 0 else 0.0
               for c in candidates]
    base = [weights.semantic * s + weights.lexical * lx for s, lx in zip(semantic, lexical, strict=True)]

    by_turn: dict[tuple[str, int], float] = {}
    for score, candidate in zip(base, candidates, strict=True):
        record = candidate.record
        if record.session_id is not None and record.turn is not None:
            key = (record.session_id, record.turn)
            by_turn[key] = max(by_turn.get(key, 0.0), score)

    fused = []
    for i, candidate in enumerate(candidates):
        record = candidate.record
        context = 0.0
        if record.session_id is not None and record.turn is not None:
            neighbour = max(by_turn.get((record.session_id, record.turn - 1), 0.0),
                            by_turn.get((record.session_id, record.turn + 1), 0.0))
            context = weights.context * neighbour
        breakdown = ScoreBreakdown(
            semantic=weights.semantic * semantic[i],
            lexical=weights.lexical * lexical[i],
            recency=weights.recency * recency_factor(record.created_at, now, weights.half_life_days),
            importance=weights.importance * record.importance,
            context=context,
            cosine=candidate.cosine,
            bm25=candidate.bm25,
            matched_terms=candidate.matched_terms,
        )
        total = (breakdown.semantic + breakdown.lexical + breakdown.recency + breakdown.importance
                 + breakdown.context)
        fused.append((total, candidate, breakdown))
    fused.sort(key=lambda item: (-item[0], item[1].record.id))
    return fused
