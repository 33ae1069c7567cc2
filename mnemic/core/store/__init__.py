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

__all__ = [
    "MEMORY_COLLECTION_INFIX",
    "ChromaStore",
    "EmbedderMismatchError",
    "StoredRow",
    "make_persistent_client",
    "namespace_slug",
    "owner_key",
]
