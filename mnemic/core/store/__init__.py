"""The only package that talks to chromadb. `chroma` holds memory records, history and settings;
`knowledge` the shared knowledge; `runs` what runs of agent teams produced; `naming` how all of
them are named, and whose each collection is."""

from .chroma import ChromaStore, EmbedderMismatchError, StoredRow, database_identity, make_persistent_client
from .knowledge import KNOWLEDGE_COLLECTION_SUFFIX, KnowledgeCollection
from .naming import MEMORY_COLLECTION_INFIX, NamespaceCollisionError, namespace_slug, owner_key
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
    "database_identity",
    "make_persistent_client",
    "namespace_slug",
    "owner_key",
]
