"""Embedders backed by something else: a Chroma embedding function, a litellm model, a LangChain
`Embeddings` object, any callable.

Every output passes through `as_unit_matrix`, so a provider returning the wrong shape, NaN, or a
vector of a different length than before is an `EmbeddingError` naming the source, not a
corrupted store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .base import EmbeddingError, as_unit_matrix, check_texts

_PROBE_TEXT = "dimension probe"


class CallableEmbedder:
    """Wraps `fn(list[str]) -> vectors`; the dimension is learnt from the first call when not given."""

    def __init__(self, fn: Callable[[list[str]], Any], *, name: str, dimension: int | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"{fn!r} is not callable")
        if not name:
            raise ValueError("CallableEmbedder needs a name identifying its vector space")
        if dimension is not None and dimension < 1:
            raise ValueError("dimension must be positive")
        self.name = name
        self._fn = fn
        self._dimension = dimension

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dimension={self._dimension})"

    @property
    def dimension(self) -> int:
        # Asking before any embed costs one probe call; stores need the number up front.
        if self._dimension is None:
            self.embed([_PROBE_TEXT])
        assert self._dimension is not None
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        # Settable so adapters satisfy the Embedder protocol's plain attribute; only a declaration.
        if value < 1:
            raise ValueError("dimension must be positive")
        self._dimension = int(value)

    def _call(self, items: list[str]) -> Any:
        try:
            return self._fn(items)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self.name} failed: {type(exc).__name__}: {exc}") from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        matrix = as_unit_matrix(self._call(items), expected_rows=len(items), source=self.name)
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise EmbeddingError(
                f"{self.name} returned {matrix.shape[1]}-dimensional vectors, expected {self._dimension}"
            )
        return matrix


class ChromaEmbedder(CallableEmbedder):
    """Wraps a Chroma embedding function (`fn(list[str]) -> list of vectors`)."""

    def __init__(
        self, fn: Callable[[list[str]], Any], name: str | None = None, *, dimension: int | None = None
    ) -> None:
        super().__init__(fn, name=name or _chroma_name(fn), dimension=dimension)
        self.function = fn

    @classmethod
    def onnx_default(cls) -> ChromaEmbedder:
        """Chroma's bundled ONNX all-MiniLM-L6-v2, only if its model is already on disk.

        Chroma would otherwise download ~80 MB on first use (and fail offline mid-way through a
        write); mnemic never lets it.
        """
        from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

        if not onnx_model_cached():
            folder = Path(ONNXMiniLM_L6_V2.DOWNLOAD_PATH)
            raise EmbeddingError(
                f"Chroma's ONNX all-MiniLM-L6-v2 is not cached under {folder} and mnemic will not "
                "download it; use the default MiniLM embedder (`mnemic models fetch`) instead"
            )
        return cls(ONNXMiniLM_L6_V2(), name="chroma/onnx-all-MiniLM-L6-v2", dimension=384)


def onnx_model_cached() -> bool:
    """True when Chroma's ONNX function can run without downloading."""
    try:
        from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2
    except ImportError:
        return False
    root = Path(ONNXMiniLM_L6_V2.DOWNLOAD_PATH)
    folder = root / ONNXMiniLM_L6_V2.EXTRACTED_FOLDER_NAME
    needed = (
        "config.json",
        "model.onnx",
        "special_tokens_map.json",
        "tokenizer_config.json",
        "tokenizer.json",
        "vocab.txt",
    )
    if all((folder / name).is_file() for name in needed):
        return True
    # An intact archive is extracted locally by Chroma; a corrupt one would trigger a download.
    archive = root / ONNXMiniLM_L6_V2.ARCHIVE_FILENAME
    if archive.is_file():
        import hashlib

        digest = hashlib.sha256()
        with archive.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest() == getattr(ONNXMiniLM_L6_V2, "_MODEL_SHA256", None)
    return False


def _chroma_name(fn: object) -> str:
    name_attr = getattr(fn, "name", None)
    if callable(name_attr):
        try:
            value = name_attr()
        except Exception:
            value = None
        if isinstance(value, str) and value:
            return f"chroma/{value}"
    return f"chroma/{type(fn).__name__}"


class LangChainEmbedder(CallableEmbedder):
    """Wraps a LangChain `Embeddings` object (anything with `embed_documents` and `embed_query`),
    the embedder LangGraph stores and LangChain vector stores take. Recognised by those two
    methods, so core never imports LangChain.

    The vector space is named after the object's class and model (its `model` or `model_name`
    attribute), so a namespace refuses a different model later, as with every embedder.
    """

    def __init__(self, embeddings: Any, *, name: str | None = None, dimension: int | None = None) -> None:
        if not is_langchain_embeddings(embeddings):
            raise TypeError(f"{embeddings!r} is not a LangChain Embeddings (needs embed_documents and embed_query)")
        self.embeddings = embeddings
        super().__init__(lambda texts: embeddings.embed_documents(list(texts)),
                         name=name or _langchain_name(embeddings), dimension=dimension)

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector through the model's query path (some models embed queries differently)."""
        items = check_texts([text])
        try:
            raw = self.embeddings.embed_query(items[0])
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self.name} failed: {type(exc).__name__}: {exc}") from exc
        return as_unit_matrix([raw], expected_rows=1, source=self.name)[0]


def is_langchain_embeddings(value: object) -> bool:
    return callable(getattr(value, "embed_documents", None)) and callable(getattr(value, "embed_query", None))


def _langchain_name(embeddings: object) -> str:
    cls = type(embeddings)
    name = f"langchain/{cls.__module__}.{cls.__qualname__}"
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    return f"{name}:{model}" if isinstance(model, str) and model else name


class LiteLLMEmbedder(CallableEmbedder):
    """A litellm embedding model string ("openai/text-embedding-3-small", "ollama/nomic-embed-text").

    Extra keyword arguments (api_base, api_key, dimensions, ...) go to litellm unchanged.
    """

    def __init__(
        self, model: str, *, dimension: int | None = None, batch_size: int = 128, **kwargs: Any
    ) -> None:
        if not model:
            raise ValueError("LiteLLMEmbedder needs a model string")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model = model
        self.batch_size = batch_size
        self._kwargs = kwargs
        super().__init__(self._embed_batches, name=model, dimension=dimension)

    def _embed_batches(self, items: list[str]) -> list[list[float]]:
        from mnemic.core import llm

        vectors: list[list[float]] = []
        for start in range(0, len(items), self.batch_size):
            vectors.extend(
                llm.embed_texts(self.model, items[start : start + self.batch_size], **self._kwargs)
            )
        return vectors
