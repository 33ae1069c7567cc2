"""The only package that talks to chromadb. `chroma` holds memory records, history and settings."""

from .chroma import (
    MEMORY_COLLECTION_INFIX,
    ChromaStore,
    EmbedderMismatchError,
    StoredRow,
    make_persistent_client,
    namespace_slug,
    owner_key,
)
from .knowledge import KNOWLEDGE_COLLECTION_SUFFIX, KnowledgeCollection

__all__ = [
    "KNOWLEDGE_COLLECTION_SUFFIX",
    "MEMORY_COLLECTION_INFIX",
    "ChromaStore",
    "EmbedderMismatchError",
    "KnowledgeCollection",
    "StoredRow",
    "make_persistent_client",
    "namespace_slug",
    "owner_key",
]
