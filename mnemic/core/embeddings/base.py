"""The contract every embedder meets, and the checks mnemic applies to what an embedder returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of a fixed dimension.

    `name` identifies the vector space: a store remembers it and refuses an embedder whose
    name or dimension differs, because mixing spaces silently ruins recall.
    """

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class EmbeddingError(RuntimeError):
    """An embedder failed or returned something unusable."""


def as_unit_matrix(vectors: object, *, expected_rows: int, source: str) -> np.ndarray:
    """Validate an embedder's output and return it as an L2-normalised float32 (n, d) array."""
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned something that is not a numeric matrix: {exc}") from exc
    if matrix.ndim == 1 and expected_rows == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2 or matrix.shape[0] != expected_rows:
        raise EmbeddingError(
            f"{source} returned shape {matrix.shape}, expected ({expected_rows}, dimension)"
        )
    if not np.all(np.isfinite(matrix)):
        raise EmbeddingError(f"{source} returned NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of strings, not a single string: wrap it in a list")
    items = list(texts)
    for index, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"embed() item {index} is {type(text).__name__}, expected str")
    return items
