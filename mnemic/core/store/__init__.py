"""The only package that talks to chromadb. `chroma` holds memory records, history and settings;
`knowledge` the shared knowledge; `runs` what runs of agent teams produced."""

from .chroma import (
    MEMORY_COLLECTION_INFIX,
    ChromaStore,
    EmbedderMismatchError,
    NamespaceCollisionError,
    StoredRow,
    make_persistent_client,
    namespace_slug,
    owner_key,
)
from .knowledge import KNOWLEDGE_COLLECTION_SUFFIX, KnowledgeCollection
from .runs import RUNS_COLLECTION_SUFFIX, RunCollection

__all__ = [
    "KNOWLEDGE_COLLECTION_SUFFIX",
    "MEMORY_COLLECTION_INFIX",
    "RUNS_COLLECTION_SUFFIX",
    "ChromaStore",
    "EmbedderMismatchError",
    "KnowledgeCollection",
    "NamespaceCollisionError",
    "RunCollection",
    "StoredRow",
    "make_persistent_client",
    "namespace_slug",
    "owner_key",
]
