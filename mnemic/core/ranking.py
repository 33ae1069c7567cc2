"""Hybrid recall scoring: how well a record answers a query, on a scale that means the same in every recall.

A record's own relevance blends two views of the query, each on an absolute 0..1 scale: the
cosine of the embeddings, and coverage (the idf-weighted share of the query's words the record
contains: it rewards answering the whole question). No signal is normalised against the other
candidates, so a weak best match is reported as weak and "nothing relevant" can be said. bm25
(saturated to 0..1) is a third view, weighted 0 by default: it helped the tuning half of LoCoMo
and hurt the held-out half (see `RecallWeights.lexical`). It still stands in for coverage where a
caller has none (notes).

Records from a conversation (session_id and turn set) share relevance with their surroundings:
a question is usually asked in one turn and answered in the next, or told across a few turns, so
a turn gains a share of its neighbours' relevance ("context") and of the best turn of its session.
A query that names a time ("in May 2023", "on 8 May, 2023") favours records made then: people
tell of an event at or shortly after it, so the window reaches a week past what the query names.

The weights were tuned on 5 of the 10 LoCoMo conversations and checked on the other 5
(bench/tune_locomo.py --ablate): a signal stays only if it helps both halves, and each part's
worth there is noted where it is used.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .links import Link
from .records import ScoreBreakdown
from .validation import model_from_fields


class RecallWeights(BaseModel):
    """How much each signal counts. The relevance weights (semantic, lexical, coverage) sum to 1,
    so own relevance is 0..1; a perfect standalone match scores about 1.55 with its session share,
    plus time, recency and importance. A record related to the query by nothing scores 0."""

    model_config = ConfigDict(frozen=True)

    semantic: float = Field(0.5, ge=0)
    # bm25 on top of coverage: 0, dropped by the rule that a signal must help both halves of
    # LoCoMo. At 0.2 (semantic and coverage 0.4) it added 0.6 points of recall@10 on the tuning
    # conversations, took 0.7 from the held-out ones, and cost 0.2-0.4 points of recall@5 on both.
    lexical: float = Field(0.0, ge=0)
    # When a caller supplies no coverage, its weight goes to saturated bm25 (the scale stays the
    # same). It is recall's only word signal: without it LoCoMo recall@10 drops ~20 points.
    coverage: float = Field(0.5, ge=0)
    # A record saying a query word in other words ("children" for "kids", see related_words.py)
    # earns this share of the word's coverage, times the words' similarity. Worth (LoCoMo R@5/R@10,
    # tuning / held-out half) +0.1/+0.1 and +0.7/+0.5, most on open-domain questions.
    related: float = Field(0.5, ge=0, le=1)
    # LoCoMo cannot judge these two (its turns are years old, so recency is ~0 for all of them, and
    # all share one importance): they are kept for stores where they differ, untuned.
    recency: float = Field(0.05, ge=0)
    importance: float = Field(0.05, ge=0)
    # Shares of a neighbouring turn's own relevance: the turn just before or after, two away.
    # Worth (each alone, LoCoMo recall@10, tuning / held-out half): context 1.9 / 1.5, of which
    # context_far 0.6 / 0.9; session 1.2 / 0.9.
    context: float = Field(0.45, ge=0)
    context_far: float = Field(0.25, ge=0)
    # Share of the relevance of the best turn in the same session (a session keeps to a few topics).
    # A record outside any conversation counts as a session of one: its semantic and lexical
    # parts are scaled by 1 + session.
    session: float = Field(0.55, ge=0)
    # Added to records made within a time the query names (~2 points on LoCoMo, where 12% of the
    # questions name one); reported as part of recency.
    temporal: float = Field(0.25, ge=0)
    # Share of the relevance of a strong match that a record is linked to by a rare word they
    # share (see links.py): evidence told over turns that share a name but not the question's words.
    # Worth 0.6 / 0.3 points of LoCoMo recall@10 (tuning / held-out half), 0.8 / 2.2 on multi-hop.
    links: float = Field(0.2, ge=0)
    temporal_after_days: float = Field(7.0, ge=0)
    temporal_fade_days: float = Field(14.0, gt=0)
    half_life_days: float = Field(30.0, gt=0)
    # bm25 is unbounded; b / (b + k) maps it to 0..1, reaching one half at b = k. FTS5's bm25 of
    # one matching distinctive word in a short text is about 4-8.
    lexical_saturation: float = Field(16.0, gt=0)
    # Below this cosine, and with no shared word, a record is not relevant at all.
    min_similarity: float = Field(0.2, ge=-1, le=1)


def check_weights(value: Any) -> RecallWeights:
    """`weights=` as given to Memory: None (the tuned defaults), RecallWeights or a dict of its
    fields. Checked when the Memory is opened: a wrong value used to fail at the first recall."""
    if value is None:
        return RecallWeights()
    if isinstance(value, RecallWeights):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"weights must be a RecallWeights (or a dict of its fields), got {type(value).__name__} "
                        f"{value!r:.60}; e.g. weights=RecallWeights(recency=0.1), or leave it out for the defaults")
    return model_from_fields(RecallWeights, value, name="weights")


class Rankable(Protocol):
    """What fusion reads from a record. Memory records have it all; knowledge chunks have no
    conversation (session_id and turn are None) and a fixed importance."""

    @property
    def id(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def importance(self) -> float: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def turn(self) -> int | None: ...


R = TypeVar("R", bound=Rankable)


@dataclass
class Candidate(Generic[R]):
    record: R
    cosine: float | None = None
    bm25: float | None = None
    matched_terms: list[str] = field(default_factory=list)
    # 0..1 from `LexicalIndex.coverage`; None when the caller did not compute it.
    coverage: float | None = None
    # (query word, the related word the record holds instead) that lent it coverage
    related_words: list[tuple[str, str]] = field(default_factory=list)


def recency_factor(created: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now - created).total_seconds() / 86400.0)
    return math.pow(0.5, age_days / half_life_days)


# -- time named in a query ----------------------------------------------------------------------

_MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_MONTHS = {name.lower()[:3]: number for number, name in enumerate(calendar.month_name) if name}
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I)
# "in October" with no year: October of any year. The preposition keeps "may" the verb out.
_MONTH_ONLY = re.compile(rf"\b(?:in|during|since|by|of|last|this|early|late|mid)\s+{_MONTH}\b(?!\s*\d)", re.I)
_YEAR = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d{2})\b", re.I)


@dataclass(frozen=True)
class TimeWindow:
    """A time a query names: [start, end), or a month of any year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None


def _day(year: int, month: int, day: int) -> TimeWindow | None:
    try:
        start = datetime(year, month, day, tzinfo=timezone.utc)
    except ValueError:
        return None
    return TimeWindow(start, start + timedelta(days=1))


def query_time_window(text: str) -> TimeWindow | None:
    """The first explicit date, month or year a query names, if any. Relative times ("last
    week") are left alone: which "now" they mean is the caller's to say."""
    if m := _ISO_DATE.search(text):
        found = _day(int(m[1]), int(m[2]), int(m[3]))
        if found:
            return found
    if m := _DAY_MONTH_YEAR.search(text):
        found = _day(int(m[3]), _MONTHS[m[2].lower()[:3]], int(m[1]))
        if found:
            return found
    if m := _MONTH_DAY_YEAR.search(text):
        found = _day(int(m[3]), _MONTHS[m[1].lower()[:3]], int(m[2]))
        if found:
            return found
    if m := _MONTH_YEAR.search(text):
        year, month = int(m[2]), _MONTHS[m[1].lower()[:3]]
        start = datetime(year, month, 1, tzinfo=timezone.utc)
        return TimeWindow(start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=timezone.utc))
    if m := _MONTH_ONLY.search(text):
        return TimeWindow(month=_MONTHS[m[1].lower()[:3]])
    if m := _YEAR.search(text):
        year = int(m[1])
        return TimeWindow(datetime(year, 1, 1, tzinfo=timezone.utc), datetime(year + 1, 1, 1, tzinfo=timezone.utc))
    return None


def temporal_factor(created: datetime, window: TimeWindow | None, weights: RecallWeights) -> float:
    """1 inside the window (stretched by `temporal_after_days`), fading to 0 over `temporal_fade_days`."""
    if window is None:
        return 0.0
    if window.month is not None:
        return 1.0 if created.month == window.month else 0.0
    assert window.start is not None and window.end is not None
    end = window.end + timedelta(days=weights.temporal_after_days)
    if window.start <= created < end:
        return 1.0
    gap = (window.start - created) if created < window.start else (created - end)
    return max(0.0, 1.0 - gap.total_seconds() / 86400.0 / weights.temporal_fade_days)


# -- fusion -------------------------------------------------------------------------------------


def is_relevant(candidate: Candidate[R], weights: RecallWeights) -> bool:
    """Whether a record is related to the query on its own (shares a word, or is close enough)."""
    return ((candidate.bm25 is not None and candidate.bm25 > 0)
            or (candidate.coverage is not None and candidate.coverage > 0)
            or (candidate.cosine is not None and candidate.cosine >= weights.min_similarity))


def _parts(candidate: Candidate[R], weights: RecallWeights) -> tuple[float, float]:
    semantic = max(0.0, candidate.cosine) if candidate.cosine is not None else 0.0
    bm25 = candidate.bm25 if candidate.bm25 is not None and candidate.bm25 > 0 else 0.0
    saturated = bm25 / (bm25 + weights.lexical_saturation)
    if candidate.coverage is None:
        lexical = (weights.lexical + weights.coverage) * saturated
    else:
        lexical = weights.lexical * saturated + weights.coverage * candidate.coverage
    return weights.semantic * semantic, lexical


def own_relevance(candidate: Candidate[R], weights: RecallWeights) -> float:
    """A record's relevance before context, time, recency and importance (0 if not relevant)."""
    if not is_relevant(candidate, weights):
        return 0.0
    return sum(_parts(candidate, weights))


def _snippet(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _strongest_link(links: Sequence[Link], own_by_id: Mapping[str, float]) -> tuple[float, Link | None]:
    best, through = 0.0, None
    for link in links:
        score = own_by_id.get(link.via, 0.0) * link.specificity
        if score > best:
            best, through = score, link
    return best, through


def fuse(
    candidates: Sequence[Candidate[R]], weights: RecallWeights, now: datetime, *,
    window: TimeWindow | None = None, links: Mapping[str, Sequence[Link]] | None = None,
) -> list[tuple[float, Candidate[R], ScoreBreakdown]]:
    """Score and sort candidates, best first. A candidate that is not relevant on its own is
    kept only when a neighbouring turn is (it may hold the answer to what that turn asked), or
    when it is linked to a relevant candidate by a rare word they share (`links`: record id ->
    its links to other candidates)."""
    if not candidates:
        return []
    own = [own_relevance(c, weights) for c in candidates]
    own_by_id = {c.record.id: score for score, c in zip(own, candidates, strict=True)}
    text_of = {c.record.id: getattr(c.record, "text", c.record.id) for c in candidates}

    by_turn: dict[tuple[str, int], float] = {}
    # A session's best turn: its relevance, and which record it is.
    by_session: dict[str, tuple[float, str]] = {}
    for score, candidate in zip(own, candidates, strict=True):
        record = candidate.record
        if score > 0 and record.session_id is not None and record.turn is not None:
            key = (record.session_id, record.turn)
            by_turn[key] = max(by_turn.get(key, 0.0), score)
            if score > by_session.get(record.session_id, (0.0, ""))[0]:
                by_session[record.session_id] = (score, record.id)

    fused = []
    for score, candidate in zip(own, candidates, strict=True):
        record = candidate.record
        context = 0.0
        strength, link = _strongest_link((links or {}).get(record.id, ()), own_by_id)
        linked = weights.links * strength
        if record.session_id is not None and record.turn is not None:
            session, turn = record.session_id, record.turn
            near = max(by_turn.get((session, turn - 1), 0.0), by_turn.get((session, turn + 1), 0.0))
            far = max(by_turn.get((session, turn - 2), 0.0), by_turn.get((session, turn + 2), 0.0))
            context = weights.context * near + weights.context_far * far
            if score <= 0 and context <= 0 and linked <= 0:
                continue
            semantic, lexical = _parts(candidate, weights) if score > 0 else (0.0, 0.0)
            best, best_id = by_session.get(session, (0.0, ""))
            if best_id == record.id:
                # Its session's best turn is itself: that share is its own relevance, not context
                # (the same sum a record outside any conversation gets, said truthfully).
                semantic, lexical = semantic * (1.0 + weights.session), lexical * (1.0 + weights.session)
            else:
                context += weights.session * best
        elif score <= 0 and linked <= 0:
            continue
        else:
            # A record outside any conversation is a session of one, and its own best turn: it
            # gets the session share of its own relevance, so it ranks level with a turn of equal
            # relevance instead of below every turn of a matching session.
            semantic, lexical = (part * (1.0 + weights.session) for part in _parts(candidate, weights))
        breakdown = ScoreBreakdown(
            semantic=semantic,
            lexical=lexical,
            recency=weights.recency * recency_factor(record.created_at, now, weights.half_life_days)
            + weights.temporal * temporal_factor(record.created_at, window, weights),
            importance=weights.importance * record.importance,
            context=context,
            linked=linked,
            linked_via=link.term if link is not None and linked > 0 else None,
            linked_to=link.via if link is not None and linked > 0 else None,
            linked_to_text=_snippet(text_of[link.via]) if link is not None and linked > 0 else None,
            cosine=candidate.cosine,
            bm25=candidate.bm25,
            matched_terms=candidate.matched_terms,
            related_words=[f"{held} for {asked}" for asked, held in candidate.related_words],
        )
        total = (breakdown.semantic + breakdown.lexical + breakdown.recency + breakdown.importance
                 + breakdown.context + breakdown.linked)
        fused.append((total, candidate, breakdown))
    fused.sort(key=lambda item: (-item[0], item[1].record.id))
    return fused


# Candidate pools of recall (each at least twice the limit). Reading a record from Chroma costs
# far more than scoring it (~0.25 ms with mnemic's metadata), so recall reads the DENSE_POOL
# nearest records, the LEXICAL_PROBES most promising word matches (of every record sharing a query
# word), then in one read the turns within NEIGHBOUR_REACH of its NEIGHBOUR_SEEDS best matches, so
# that context reaches turns neither side brought, and the records linked to its LINK_SEEDS best.
# On LoCoMo, pools of 60/40 instead of 20/20 moved recall@10 by 0.4 points; without the neighbour
# fetch it lost ~3 points.
DENSE_POOL = 20
LEXICAL_PROBES = 20
NEIGHBOUR_SEEDS = 10
NEIGHBOUR_REACH = 2
# Links are followed from this many of the best matches, and the LINK_READS records the strongest
# links reach are read.
LINK_SEEDS = 5
LINK_READS = 20
