"""Embedding a text the model would cut: the mean of its passages' vectors, not its first 256 tokens.

MiniLM reads at most 256 tokens (about 190 English words) and ignores the rest, as
sentence-transformers does. A memory can be far longer (a crew's task output, an assistant's
answer, a pasted note: up to 16,000 characters), so whatever it says after its first paragraph
was invisible to the dense side of recall. `WholeTexts` wraps an embedder that can tell which
texts it would cut (`exceeds_window`): such a text is split at sentence ends into passages of at
most PASSAGE_WORDS words (MAX_PASSAGES of them at most, spread over the text), every passage is
embedded in the same call as the other texts, and the text's vector is the normalised mean of its
passages' vectors: one vector per record, in the same space, so stores, Chroma queries and every
caller stay as they are.

Measured with `python bench/bench_long_records.py` (LoCoMo's turns stored twelve to a record, 61%
of them past the window; the record holding the evidence must be found): recall@1/@3/@5 rose from
60.9/78.9/84.1 to 62.5/79.5/85.0 on the tuning conversations and from 56.5/77.1/83.6 to
58.6/79.0/84.2 on the held-out ones. Scoring by the best passage instead (a second vector per
passage, kept beside the record) did about as well in a first trial, and would need that storage
and its erasure; the mean needs neither. Texts within the window are embedded exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import Embedder, as_unit_matrix, check_texts

PASSAGE_WORDS = 90
# Characters per passage: ~90 English words; for scripts written without spaces (Chinese,
# Japanese), where a token is about a character, far fewer.
PASSAGE_CHARS = 600
UNSPACED_PASSAGE_CHARS = 200
# Reading costs what the text is long: at most this many passages are embedded, spread evenly
# from the first to the last (a 16,000-character memory took ~1.5 s whole, ~0.15 s cut; eight
# passages bound it near four times the cut cost and still span the whole text).
MAX_PASSAGES = 8
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？])")


def passages(text: str) -> list[str]:
    """`text` in consecutive passages of whole sentences, each at most PASSAGE_WORDS words and
    PASSAGE_CHARS characters (UNSPACED_PASSAGE_CHARS in a text with few spaces); a longer
    sentence is cut."""
    spaced = len(text.split()) * 12 >= len(text)
    max_chars = PASSAGE_CHARS if spaced else UNSPACED_PASSAGE_CHARS
    pieces: list[str] = []
    for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
        words = sentence.split()
        if len(words) > PASSAGE_WORDS:
            pieces += [" ".join(words[i:i + PASSAGE_WORDS]) for i in range(0, len(words), PASSAGE_WORDS)]
        elif len(sentence) > max_chars:
            pieces += [sentence[i:i + max_chars] for i in range(0, len(sentence), max_chars)]
        elif sentence:
            pieces.append(sentence)
    grouped: list[str] = []
    count = 0
    for piece in pieces:
        size = len(piece.split())
        if grouped and count + size <= PASSAGE_WORDS and len(grouped[-1]) + 1 + len(piece) <= max_chars:
            grouped[-1] += " " + piece
            count += size
        else:
            grouped.append(piece)
            count = size
    return grouped or [text]


def spread(items: list[str], most: int) -> list[str]:
    """At most `most` of `items`, evenly spaced, the first and the last among them."""
    if len(items) <= most:
        return items
    step = (len(items) - 1) / (most - 1)
    return [items[round(i * step)] for i in range(most)]


class WholeTexts:
    """`inner`, reading long texts whole (see the module docstring). Same name and dimension: the
    vectors are in the inner embedder's space."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension

    def __repr__(self) -> str:
        return f"WholeTexts({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # load(), close(), model_path, ... of the wrapped embedder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        cut = self.inner.exceeds_window(items) if items else []
        if not any(cut):
            return self.inner.embed(items)
        inputs: list[str] = []
        spans: list[tuple[int, int]] = []
        for text, too_long in zip(items, cut, strict=True):
            parts = spread(passages(text), MAX_PASSAGES) if too_long else [text]
            spans.append((len(inputs), len(inputs) + len(parts)))
            inputs += parts
        vectors = np.asarray(self.inner.embed(inputs), dtype=np.float32)
        pooled = np.stack([vectors[start:end].mean(axis=0) for start, end in spans])
        return as_unit_matrix(pooled, expected_rows=len(items), source=self.name)


def reading_whole_texts(embedder: Embedder) -> Embedder:
    """`embedder` wrapped in WholeTexts when it can tell which texts it would cut; else itself
    (an embedder behind an API reads thousands of tokens, or cuts where mnemic cannot see)."""
    if isinstance(embedder, WholeTexts) or not callable(getattr(embedder, "exceeds_window", None)):
        return embedder
    return WholeTexts(embedder)
