"""How a query's words score a user's records: coverage and bm25, weighted within the user.

A name said in most of a user's records (their own, a speaker label) is worth almost nothing,
however rare it is among everyone else's; FTS5's own bm25 would weigh it by the whole table.
Coverage is the idf-weighted share of the query's words a record holds: near 1 for a record that
answers the whole question, near 0 for one sharing only a common word. A record holding a word
close in meaning to a query word instead of the word itself earns `related` times their
similarity of its share (`related_words.py`), another form of the word ("bought" for "buy") its
whole share (`word_forms.py`). Names, the words capitalised inside the query, lend nothing.

Records are scored by their FTS5 row, and named (record id, length) only when recall asks about
them: a common word is held by thousands of a large user's records, and reading each one's id and
text from the index cost three times what scoring it does (15 ms for 5,000 holders). bm25 adds how
long a record is (a word in a short record says more; lengths in characters, each word counted
once: turns rarely repeat a word) against the mean length of the query's most promising holders.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .related_words import related_words
from .word_forms import other_forms

MAX_RELATED_TERMS = 16
# Okapi bm25's usual constants (FTS5 uses the same).
BM25_K1 = 1.2
BM25_B = 0.75
# How many of the most promising holders set the mean length bm25 compares a record's with.
LENGTH_SAMPLE = 64
# Up to this many records reached, all are named at once: one read, and none to come.
NAME_ALL = 400


class Postings(Protocol):
    """What scoring needs of the keyword index (LexicalIndex)."""

    def holders(self, owner: str, word: str, cap: int) -> list[int]: ...

    def rows(self, owner: str, rowids: Sequence[int]) -> dict[int, tuple[str, int]]: ...

    def rows_of(self, owner: str, record_ids: Sequence[str]) -> dict[str, tuple[int, int]]: ...

    def records_holding(self, owner: str, word: str) -> int: ...

    def holder_count(self, owner: str, word: str) -> int: ...


@dataclass(frozen=True)
class WordMatch:
    bm25: float | None  # None: the record holds no query word itself
    coverage: float
    related: list[tuple[str, str]]  # (query word, the word the record holds instead)


@dataclass
class WordScores:
    """What a query's words say about one user's records (see `score_words`)."""

    records: int  # how many records the user has in the index
    owner: str = ""
    index: Postings | None = None
    held: dict[int, float] = field(default_factory=dict)  # row -> idf of the query words it holds
    coverage: dict[int, float] = field(default_factory=dict)  # row -> share of the query it holds
    related: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    _named: dict[int, tuple[str, int]] = field(default_factory=dict)  # row -> (record id, length)
    _rows: dict[str, int] = field(default_factory=dict)  # record id -> row, for those named
    _unreached: set[str] = field(default_factory=set)  # record ids asked about that hold no query word
    _all_named: bool = False
    _mean_length: float = 1.0
    _order: tuple[tuple[float, float, float], list[int]] | None = None  # (weights, rows by promise)

    def most_promising(self, count: int, *, lexical: float = 0.0, saturation: float = 1.0,
                       coverage: float = 1.0) -> list[str]:
        """The record ids of the `count` holders most worth reading, by coverage and (when
        `lexical` weighs bm25) by the idf of the words they hold; newer first among equals."""
        weights = (lexical, saturation, coverage)
        if self._order is None or self._order[0] != weights:
            # In numpy: a common word's holders number thousands, and a Python key per row held the
            # GIL for ~4 ms a recall, stalling the query embedding on the other thread.
            holders = np.fromiter(self.coverage, dtype=np.int64, count=len(self.coverage))
            promise = coverage * np.fromiter(self.coverage.values(), dtype=np.float64, count=len(holders))
            if lexical:
                held = np.fromiter((self.held.get(row, 0.0) for row in self.coverage), dtype=np.float64,
                                   count=len(holders))
                promise = lexical * held / (held + saturation) + promise
            self._order = (weights, _descending(promise, holders))
        rows = self._order[1][:count]
        self._name(rows)
        return [self._named[row][0] for row in rows if row in self._named]

    def of(self, record_ids: Iterable[str]) -> dict[str, WordMatch]:
        """The word signals of the user's records among `record_ids` that the query's words reach."""
        record_ids = list(dict.fromkeys(record_ids))
        wanted = [rid for rid in record_ids if rid not in self._rows and rid not in self._unreached]
        if wanted and self.index is not None and self.coverage and not self._all_named:
            for rid, (row, length) in self.index.rows_of(self.owner, wanted).items():
                if row in self.coverage:
                    self._named[row] = (rid, length)
                    self._rows[rid] = row
        self._unreached.update(rid for rid in wanted if rid not in self._rows)
        return {rid: self._match(self._rows[rid]) for rid in record_ids if rid in self._rows}

    def every(self) -> dict[str, WordMatch]:
        """Every record the query's words reach, by id: each one named, so this costs what the
        rows avoid for a common word in a large store (for small stores and inspection)."""
        return self.of(self.most_promising(len(self.coverage)))

    def settle(self) -> WordScores:
        """Once every row is scored: name the rows recall will ask about first (all of them, when
        few) and fix the mean length bm25 compares each record's with."""
        held = np.fromiter(self.held, dtype=np.int64, count=len(self.held))
        shares = np.fromiter((self.coverage[row] for row in self.held), dtype=np.float64, count=len(held))
        sample = _descending(shares, held)[:LENGTH_SAMPLE]
        if len(self.coverage) <= NAME_ALL:
            self._name(list(self.coverage))
            self._all_named = True
        else:
            self._name(sample)
        lengths = [self._named[row][1] for row in sample if row in self._named]
        self._mean_length = sum(lengths) / len(lengths) if lengths else 1.0
        return self

    def _name(self, rows: Sequence[int]) -> None:
        missing = [row for row in rows if row not in self._named]
        if missing and self.index is not None:
            for row, named in self.index.rows(self.owner, missing).items():
                self._named[row] = named
                self._rows[named[0]] = row

    def _match(self, row: int) -> WordMatch:
        held = self.held.get(row)
        bm25 = None
        if held is not None:
            length = self._named[row][1]
            norm = 1.0 - BM25_B + BM25_B * length / max(self._mean_length, 1.0)
            bm25 = held * (BM25_K1 + 1.0) / (1.0 + BM25_K1 * norm)
        return WordMatch(bm25=bm25, coverage=self.coverage.get(row, 0.0), related=self.related.get(row, []))


def score_words(index: Postings, owner: str, terms: Sequence[str], *, records: int, cap: int,
                related: float, names: set[str], postings: Sequence[list[int]]) -> WordScores:
    """Coverage and the idf held of every record holding a query word (`postings`: per term, the
    rows of its holders, at most `cap`, the newest when there are more). A word in more than `cap`
    records is common, its weight small: only its newest holders earn its share (listing every one
    cost ~7 ms per 5,000 at 100k records), and its weight comes from the user's word counts."""
    if records == 0:
        return WordScores(0)
    # Two forms of one word ("dance", "dancing") match the same records through their porter
    # stem: count them once. A word no record holds still counts: the records answer less of
    # the question.
    kept: list[tuple[str, frozenset[int], float]] = []
    for term, rows in zip(terms, postings, strict=True):
        found = frozenset(rows)
        if found and any(found == other and shared_prefix(term, word) >= 4 for word, other, _ in kept):
            continue
        # Past the cap the holders are not all listed (the newest are): the word is common, and
        # how common comes from the per-user word counts, or, for a word they miss (digits, short
        # words, other stems, accents), from counting its holders.
        df = len(found)
        if len(rows) >= cap:
            df = max(df, index.records_holding(owner, term))
            if df <= len(found):
                df = max(df, index.holder_count(owner, term))
        # Never more holders than records: a count from another source (word counts, a stale
        # row) must not turn the weight negative and void every word of the question.
        df = min(df, records)
        kept.append((term, found, math.log((records - df + 0.5) / (df + 0.5) + 1.0)))
    whole = sum(weight for _, _, weight in kept)
    scores = WordScores(records, owner, index)
    if whole <= 0:
        return scores
    held, shares = scores.held, scores.coverage
    # Summed in numpy, word by word in order (the sums a Python loop made, to the bit): a common
    # word's thousands of holders cost ~2 ms of GIL-held Python a recall.
    sizes = [len(found) for _, found, _ in kept]
    if sum(sizes):
        listed = np.fromiter(itertools.chain.from_iterable(found for _, found, _ in kept), dtype=np.int64,
                             count=sum(sizes))
        weights = np.repeat(np.array([weight for _, _, weight in kept], dtype=np.float64), sizes)
        holders, slot = np.unique(listed, return_inverse=True)
        rows_held = holders.tolist()
        held.update(zip(rows_held, np.bincount(slot, weights=weights).tolist(), strict=True))
        shares.update(zip(rows_held, np.bincount(slot, weights=weights / whole).tolist(), strict=True))
    # Each word costs a few more index reads: a long query (a pasted document) lends through its
    # most telling words only.
    for term, found, weight in heapq.nlargest(MAX_RELATED_TERMS, kept, key=lambda item: item[2]):
        if term in names or len(found) >= cap:
            # A name lends nothing; nor does a word past the cap: what it would lend is a share of
            # a small weight, and each lender costs a walk of the user's postings (~1 ms at 100k).
            continue
        # Another form of the word ("bought" for "buy") is the word: full credit. A related word
        # earns `related` times their similarity.
        lenders = [(form, 1.0) for form in other_forms(term)]
        if related > 0:
            lenders += [(word, related * similarity) for word, similarity in related_words(term)]
        for row, (credit, word) in _related_holders(index, owner, terms, found, cap, lenders).items():
            shares[row] = shares.get(row, 0.0) + weight / whole * credit
            scores.related.setdefault(row, []).append((term, word))
    return scores.settle()


def _related_holders(index: Postings, owner: str, terms: Sequence[str], holding: frozenset[int], cap: int,
                     lenders: Sequence[tuple[str, float]]) -> dict[int, tuple[float, str]]:
    """Records that lack a query word (hold none of `holding`) but hold one of its `lenders`
    (word, credit): row -> (the best credit, that word). A lender that is itself a query word (or
    a form of one) earns its own share instead."""
    found: dict[int, tuple[float, str]] = {}
    for word, credit in lenders:
        if any(shared_prefix(word, other) >= min(4, len(other)) for other in terms):
            continue
        for row in index.holders(owner, word, cap):
            if row not in holding and credit > found.get(row, (0.0, ""))[0]:
                found[row] = (credit, word)
    return found


def _descending(scores: np.ndarray, rows: np.ndarray) -> list[int]:
    """`rows` by score, highest first, the newer (higher) row first among equal scores."""
    ordered: list[int] = rows[np.lexsort((-rows, -scores))].tolist()
    return ordered


def rough_stem(word: str) -> str:
    """A word's beginning that its other forms share ("visit" for "visiting"): a crude stand-in
    for its porter stem (stems.py) that finds the word in a text without stemming the text."""
    return word[: max(4, len(word) - 3)] if len(word) > 5 else word


def shared_prefix(a: str, b: str) -> int:
    """How many leading characters two words share: a crude same-word test for stemmed matches."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count
