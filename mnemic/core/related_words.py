"""Related words: a question about "kids" should find the record that says "children".

Word relevance (coverage) counts the question's words a record holds, so a record telling the
answer in other words gets nothing from it, and only the embeddings' cosine can find it. This
table lends such a record part of a word's weight: each English word lists up to five words
MiniLM judges closest to it (cosine >= 0.6: kids -> children 0.88, family -> relatives 0.80,
painting -> artwork 0.72, job -> career 0.68). It ships with mnemic (`related_words.tsv.gz`, ~17,000
words, built by `bench/build_related_words.py` from MiniLM's vocabulary alone), so it costs no
model call and no write time, and holds nothing of any user.

A related word earns a share (`RecallWeights.related`, 0.5) of the query word's weight, times
their similarity, and only in records that lack the word itself. Measured on LoCoMo
(bench/tune_locomo.py, R@5/R@10): tuning half 70.7/78.4 -> 70.8/78.5, held-out half 67.9/76.6 ->
68.6/77.1, most of it on open-domain questions (held-out R@10 43.1 -> 48.8). Shares of 0.3-0.7
(thresholds 0.5-0.65, 3-10 words) all raised held-out R@5 by 0.5-1.1 and R@10 by 0.1-0.7 and
moved the tuning half within 0.4; a full share (1.0) lowered both halves.

Names are not expanded (the caller leaves out capitalised query words): MiniLM puts names near
other names ("melanie" -> "michelle"), and a question about one person is not about another.
"""

from __future__ import annotations

import functools
import gzip
import threading
from pathlib import Path

TABLE_PATH = Path(__file__).with_name("related_words.tsv.gz")

_lock = threading.Lock()
# word -> its relatives as written in the table; parsed when first asked for (recall asks for a
# few words; parsing all ~64,000 pairs up front took 4 times as long, 100 ms, and ~10 MB).
_table: dict[str, str] | None = None


def related_words(word: str) -> tuple[tuple[str, float], ...]:
    """The words closest in meaning to a lower-case word, with their similarity, closest first."""
    found = _load().get(word)
    return _parse(found) if found else ()


@functools.lru_cache(maxsize=4096)
def _parse(found: str) -> tuple[tuple[str, float], ...]:
    pairs = (item.rpartition(":") for item in found.split(" ") if item)
    return tuple((other, float(similarity)) for other, _, similarity in pairs)


def _load() -> dict[str, str]:
    global _table
    with _lock:
        if _table is None:
            with gzip.open(TABLE_PATH, "rt", encoding="utf-8") as lines:
                _table = dict(line.rstrip("\n").split("\t", 1) for line in lines)
        return _table
