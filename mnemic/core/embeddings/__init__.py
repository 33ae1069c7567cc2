"""Embedders: the numpy MiniLM default, a hashing test embedder, and adapters for other providers."""

from __future__ import annotations

import threading
from typing import Any

from .adapters import CallableEmbedder, ChromaEmbedder, LangChainEmbedder, LiteLLMEmbedder, is_langchain_embeddings
from .base import Embedder, EmbeddingError
from .hashing import HashEmbedder
from .minilm import MiniLM
from .weights import WeightsMismatchError, WeightsNotFoundError, fetch_weights, find_weights
from .whole_texts import WholeTexts, reading_whole_texts

__all__ = [
    "CallableEmbedder",
    "ChromaEmbedder",
    "Embedder",
    "EmbeddingError",
    "HashEmbedder",
    "LangChainEmbedder",
    "LiteLLMEmbedder",
    "MiniLM",
    "WeightsMismatchError",
    "WeightsNotFoundError",
    "WholeTexts",
    "default_embedder",
    "fetch_weights",
    "find_weights",
    "reading_whole_texts",
    "resolve_embedder",
]

_MINILM_ALIASES = {"minilm", "default", "all-minilm-l6-v2", MiniLM.name.lower()}
_default_lock = threading.Lock()
_default: MiniLM | None = None


def default_embedder() -> MiniLM:
    """The process-wide MiniLM, so several memories share one copy of the weights (~90 MB)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLM()
        return _default


def _is_chroma_function(spec: object) -> bool:
    try:
        from chromadb.api.types import EmbeddingFunction
    except ImportError:  # pragma: no cover - chromadb is a core dependency
        return False
    return isinstance(spec, EmbeddingFunction)


def resolve_embedder(spec: Any = None) -> Embedder:
    """Turn what a user passed as `embedder=` into an Embedder.

    None or "minilm" → the shared MiniLM; "hash" or "hash:<dim>" → HashEmbedder; any other string
    → a litellm model; an Embedder → itself; a Chroma embedding function → ChromaEmbedder; a
    LangChain `Embeddings` → LangChainEmbedder; any other callable → CallableEmbedder.
    """
    if spec is None:
        return default_embedder()
    if isinstance(spec, str):
        key = spec.strip()
        lowered = key.lower()
        if lowered in _MINILM_ALIASES:
            return default_embedder()
        if lowered == "hash":
            return HashEmbedder()
        if lowered.startswith(("hash:", "hash-")):
            try:
                return HashEmbedder(int(lowered[5:]))
            except ValueError:
                raise ValueError(
                    f"bad hash embedder spec {spec!r}: use 'hash' or 'hash:<dimension>'"
                ) from None
        if not key:
            raise ValueError("empty embedder spec")
        return LiteLLMEmbedder(key)
    if isinstance(spec, Embedder):
        return spec
    if _is_chroma_function(spec):
        return ChromaEmbedder(spec)
    if is_langchain_embeddings(spec):
        return LangChainEmbedder(spec)
    if callable(spec):
        name = getattr(spec, "__qualname__", None) or type(spec).__name__
        module = getattr(spec, "__module__", None)
        return CallableEmbedder(spec, name=f"callable/{module}.{name}" if module else f"callable/{name}")
    raise TypeError(
        f"cannot use {type(spec).__name__} as an embedder: pass None, 'minilm', 'hash', a litellm model "
        "string, an Embedder, a Chroma embedding function, a LangChain Embeddings or a callable"
    )
