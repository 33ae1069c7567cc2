"""LangGraph's `index` config for `MnemicStore`: which fields of a value are embedded, with what.

`index={"dims": ..., "embed": ..., "fields": [...]}` means what it means for InMemoryStore and
SqliteStore. `embed` is a LangChain `Embeddings`, a callable `list[str] -> vectors` or a model
string (`"openai:text-embedding-3-small"`, through LangChain's `init_embeddings`): LangGraph's own
`ensure_embeddings` resolves it. Without `embed`, the Memory's embedder is used. Each text at each
field becomes its own vector, and with `scores="cosine"` an item scores as its best field, as in
LangGraph's stores. The record behind the item (what `memory.recall` finds) is always embedded
with the Memory's embedder; when `embed` is that same embedder and an item has one field text,
the record's vector doubles as the field's and nothing is embedded twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from langgraph.store.base import IndexConfig, get_text_at_path, tokenize_path
from langgraph.store.base.embed import ensure_embeddings

from ...core.embeddings import LangChainEmbedder
from ...core.embeddings.base import as_unit_matrix
from ...core.notes import FieldVectors

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ...core.memory import Memory


class StoreIndex:
    """A resolved index config: field paths, the embedder and its vector space's name."""

    def __init__(self, memory: Memory, index: IndexConfig | Mapping[str, Any] | None) -> None:
        config: dict[str, Any] = dict(index or {})
        fields = config.get("fields") or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise ValueError(f"index['fields'] must be a list of field paths such as ['text'], got {fields!r}")
        self.fields: list[str] = list(fields)
        self._memory = memory
        embed = config.get("embed")
        self.embeddings: Embeddings | None = ensure_embeddings(embed) if embed is not None else None
        mine = memory.embedder
        self.same_space = self.embeddings is None or (
            isinstance(mine, LangChainEmbedder) and mine.embeddings is self.embeddings)
        if self.same_space:
            self.space = mine.name
            self.embeddings = mine.embeddings if isinstance(mine, LangChainEmbedder) else None
            dims = config.get("dims")
            if dims is not None and int(dims) != int(mine.dimension):
                raise ValueError(f"index['dims'] is {dims} but the Memory's embedder {mine.name!r} has "
                                 f"{mine.dimension} dimensions; leave dims out or give the embedder that has them")
        else:
            if config.get("dims") is None:
                raise ValueError("index['dims'] is required with index['embed'] (the embedder's vector size)")
            cls = type(embed)
            self.space = f"index/{embed}" if isinstance(embed, str) else f"index/{cls.__module__}.{cls.__qualname__}"
        config.setdefault("fields", self.fields)
        config.setdefault("dims", int(mine.dimension) if self.same_space else config.get("dims"))
        config.setdefault("embed", embed if embed is not None else self.embed_texts)
        self.config: dict[str, Any] = config

    def texts(self, value: Mapping[str, Any], fields: Sequence[str] | None = None) -> list[str]:
        """The texts at the index fields (or at `fields`, a put's own), each one to embed alone."""
        found: list[str] = []
        for path in fields if fields is not None else self.fields:
            found.extend(t for t in get_text_at_path(value, path if path == "$" else tokenize_path(path)) if t)
        return found

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """The index embedder as LangGraph's `embed` callable (what `index_config["embed"]` holds
        when none was given)."""
        return self._matrix(list(texts)).tolist()

    def _matrix(self, texts: list[str]) -> np.ndarray:
        if self.same_space:
            return self._memory.embedder.embed(texts)
        assert self.embeddings is not None
        vectors = self.embeddings.embed_documents(texts)
        matrix = as_unit_matrix(vectors, expected_rows=len(texts), source=self.space)
        dims = self.config.get("dims")
        if dims is not None and matrix.shape[1] != int(dims):
            raise ValueError(f"the index embedder returned {matrix.shape[1]}-dimensional vectors; index['dims'] "
                             f"is {dims}")
        return matrix

    def field_vectors(self, texts: list[str], record_text: str) -> FieldVectors:
        """The vectors to keep with an item whose index fields hold `texts`."""
        if not texts:
            return FieldVectors(space=self.space, count=0)
        if self.same_space and len(texts) == 1 and texts[0] == record_text:
            return FieldVectors(space=self.space, count=1)  # the record's own vector is this field's
        return FieldVectors(space=self.space, count=len(texts), matrix=self._matrix(texts))

    def embed_query(self, query: str) -> np.ndarray:
        """A query vector in the index's space (through the model's query path where it has one)."""
        if self.embeddings is not None:
            vector = self.embeddings.embed_query(query)
            return as_unit_matrix([vector], expected_rows=1, source=self.space)[0]
        return self._memory.embedder.embed([query])[0]

    def score(self, query: np.ndarray, fields: FieldVectors | None, record_vector: np.ndarray | None) -> float | None:
        """Cosine similarity of the item's best field to the query; None when it has no field vector."""
        if fields is not None and fields.space == self.space and fields.matrix is not None:
            return float(np.max(fields.matrix @ query))
        if fields is not None and fields.count == 0:
            return None
        if self.same_space and record_vector is not None:
            return float(np.dot(record_vector, query))  # one field, stored as the record's vector
        return None


__all__ = ["StoreIndex"]
