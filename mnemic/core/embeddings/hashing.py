"""A fast deterministic embedder for tests and for machines without model weights.

It has lexical, not semantic, similarity: texts sharing words and word pieces land close.
It is never chosen silently as the default; callers ask for it by name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from .base import as_unit_matrix, check_texts

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Feature hashing of words and character trigrams into `dimension` buckets."""

    def __init__(self, dimension: int = 256) -> None:
        if dimension < 8:
            raise ValueError("HashEmbedder dimension must be at least 8")
        self.dimension = dimension
        self.name = f"mnemic/hash-{dimension}"

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        features = [f"w:{w}" for w in words]
        for word in words:
            padded = f"#{word}#"
            features.extend(f"c:{padded[i:i + 3]}" for i in range(max(1, len(padded) - 2)))
        return features or ["<empty>"]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        matrix = np.zeros((len(items), self.dimension), dtype=np.float32)
        for row, text in enumerate(items):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dimension
                sign = 1.0 if digest[4] & 1 else -1.0
                weight = 2.0 if feature.startswith("w:") else 1.0
                matrix[row, bucket] += sign * weight
        return as_unit_matrix(matrix, expected_rows=len(items), source=self.name)
