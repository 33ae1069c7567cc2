"""Everything mnemic says to Chroma goes through this module.

Layout of a namespace `ns` in one Chroma database:

- `mnemic-<ns>-m-<owner>`: one collection per user holding that user's records (cosine space).
  A query can only ever reach the collection of the user it was made for, so isolation does not
  hang on a metadata filter, and a filtered HNSW search never walks other users' vectors (Chroma's
  filtered search cost grows with the whole collection: see bench/bench_chroma_layout.py).
- `mnemic-<ns>-history`: the audit trail, one entry per mutation.
- `mnemic-<ns>-meta`: namespace settings (the embedder the namespace was built with, policies).

The two bookkeeping collections hold no meaningful vectors: a constant 1-d embedding.
Collections are always created and fetched with `embedding_function=None`, so Chroma never tries
to download its default model.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

from .file_gate import gated_client
from .naming import (
    MEMORY_COLLECTION_INFIX,
    again_if_dropped,
    claim,
    namespace_slug,
    owner_key,
)
from .retry import retrying

T = TypeVar("T")

log = logging.getLogger("mnemic.store")

_PLACEHOLDER_VECTOR = [1.0]
# Result rows one query may ask of Chroma (see query_many): well under SQLite's variable limit.
MAX_RESULT_ROWS_PER_QUERY = 16_000
# Chroma keeps every write in its sqlite log until the collection's HNSW index is saved, which by
# default happens every 1,000 writes; a user collection rarely reaches that, so the log held nearly
# every record ever written, and each write grew slower with the whole database (a single upsert:
# 38 ms at 24k records across 40 collections, 12 ms with a threshold of 100, which lets the log be
# purged; ~180 ms at 59k records in bench/bench_memory_latency.py's store).
# Chroma's default graph (16 neighbours, ef_construction 100) leaves records that no query can reach
# when many are near-duplicates (10 of 72 "Fact i about zebra number i." with the hash embedder, 14
# of 400; none with 32 and 200). The number of neighbours is fixed when a collection is created:
# older collections are rebuilt by `Memory.repair()` when records are found unreachable.
USER_COLLECTION_CONFIGURATION = {"hnsw": {"space": "cosine", "sync_threshold": 100, "batch_size": 100,
                                          "max_neighbors": 32, "ef_construction": 200}}


def _upgrade_index_saving(collection: Any) -> None:
    """Give a user collection created before USER_COLLECTION_CONFIGURATION its index-saving
    threshold (once per process and collection; get_or_create does not change an existing one)."""
    wanted = USER_COLLECTION_CONFIGURATION["hnsw"]
    current = (getattr(collection, "configuration_json", None) or {}).get("hnsw") or {}
    if current.get("sync_threshold") == wanted["sync_threshold"]:
        return
    try:
        collection.modify(configuration={"hnsw": {"sync_threshold": wanted["sync_threshold"],
                                                  "batch_size": wanted["batch_size"]}})
    except Exception as exc:  # an older server may refuse: writes still work, only slower
        log.warning("could not set sync_threshold on %s: %s", getattr(collection, "name", "?"), exc)


# Settings of embedded stores, by (cache scope, namespace, key). While a process holds an embedded
# store's lock no other process can write it, so what this process wrote is what is stored, and the
# policy read before every write need not be a Chroma read. The scope is the lock's hold (a new one
# each time the process takes the OS lock): once the store was let go, another process may have
# changed a setting (`mnemic policy set --mode off` between two runs of an agent), and nothing read
# before may be trusted. Shared by every ChromaStore of the process (two Memory objects may open one
# namespace), and emptied for a namespace that is dropped.
_SETTINGS_CACHE: dict[tuple[str, str, str], str] = {}
_SETTINGS_GUARD = threading.Lock()


class EmbedderMismatchError(ValueError):
    """A namespace was built with one embedder and opened with another."""


def make_persistent_client(path: Path) -> Any:
    """An embedded Chroma client on `path`, whose calls never overlap mnemic's own work on the
    files there (file_gate.py)."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    return gated_client(client, path)


def database_identity(client: Any) -> Hashable:
    """What names the database a Chroma client reaches, so that two clients of one database (a
    PersistentClient per component, an HttpClient per worker) are known as one: its folder, or
    its server, tenant and database. A client that tells none of these is known by itself."""
    try:
        settings = client.get_settings()
        place: tuple[Any, ...] = (
            ("folder", str(Path(settings.persist_directory).resolve())) if settings.is_persistent
            else ("server", settings.chroma_server_host, settings.chroma_server_http_port))
        if place[0] == "server" and place[1] is None:
            return ("client", id(client))  # in memory: this client is the database
        return (*place, getattr(client, "tenant", None), getattr(client, "database", None))
    except Exception:  # a stand-in client, or one from another chromadb release
        return ("client", id(client))


@dataclass(frozen=True)
class StoredRow:
    id: str
    document: str
    metadata: dict[str, Any]
    embedding: np.ndarray | None = None
    distance: float | None = None


def write_rows(write: Callable[..., Any], rows: Sequence[StoredRow], step: int,
               written: list[str] | None = None) -> None:
    """Rows with their vectors through `write` (a collection's `add` or `upsert`), in calls of at
    most `step` rows (a server refuses larger ones); each call's ids join `written` once it landed."""
    for start in range(0, len(rows), step):
        chunk = rows[start:start + step]
        write(
            ids=[r.id for r in chunk],
            documents=[r.document for r in chunk],
            metadatas=[r.metadata for r in chunk],
            embeddings=np.stack([np.asarray(r.embedding, dtype=np.float32) for r in chunk]),
        )
        if written is not None:
            written.extend(r.id for r in chunk)


def _upsert(collection: Any, rows: Sequence[StoredRow], step: int) -> None:
    write_rows(collection.upsert, rows, step)


def _rows(result: Mapping[str, Any], *, query: int | None = None) -> list[StoredRow]:
    """Rows of a `get` result, or of the query at index `query` of a `query` result."""
    def first(key: str) -> Any:
        value = result.get(key)
        if value is None:
            return None
        return value[query] if query is not None else value

    ids = first("ids") or []
    documents = first("documents")
    metadatas = first("metadatas")
    embeddings = first("embeddings")
    distances = first("distances")
    rows = []
    for i, record_id in enumerate(ids):
        if (metadatas is not None and not (i < len(metadatas) and metadatas[i])) \
                or (embeddings is not None and i >= len(embeddings)):
            continue  # caught half-deleted by another thread's erasure: mnemic writes no row without them
        rows.append(
            StoredRow(
                id=record_id,
                document=(documents[i] if documents is not None else "") or "",
                metadata=dict(metadatas[i] or {}) if metadatas is not None else {},
                embedding=np.asarray(embeddings[i], dtype=np.float32) if embeddings is not None else None,
                distance=float(distances[i]) if distances is not None else None,
            )
        )
    return rows


class ChromaStore:
    """Per-user record collections plus the namespace's history and settings collections."""

    def __init__(self, client: Any, namespace: str, *, cache_scope: str | None = None) -> None:
        self.client = retrying(client)
        self._cache_scope = cache_scope  # only for a store no other process writes meanwhile
        self.namespace = namespace
        self.slug = namespace_slug(namespace)
        self.prefix = f"mnemic-{self.slug}"
        self._collections: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._history: Any | None = None
        self.meta = self._bookkeeping("meta")
        self._max_batch: int | None = None

    # -- collections ----------------------------------------------------------------------------

    def _bookkeeping(self, suffix: str) -> Any:
        return claim(self.client.get_or_create_collection(
            f"{self.prefix}-{suffix}", embedding_function=None,
            metadata={"mnemic": suffix, "namespace": self.namespace}), self.namespace)

    def history_collection(self, *, create: bool = True) -> Any | None:
        """The namespace's audit trail in Chroma (server mode; an embedded store keeps it locally
        and only reads this one to move an older store's entries out of it)."""
        with self._lock:
            if self._history is None:
                if create:
                    self._history = self._bookkeeping("history")
                else:
                    try:
                        history = self.client.get_collection(f"{self.prefix}-history", embedding_function=None)
                    except Exception:  # chromadb raises NotFoundError (or ValueError in older releases)
                        return None
                    self._history = claim(history, self.namespace)
            return self._history

    def drop_history(self) -> None:
        with self._lock:
            self._history = None
            with contextlib.suppress(Exception):  # absent already
                self.client.delete_collection(f"{self.prefix}-history")

    def collection_name(self, user_id: str) -> str:
        return f"{self.prefix}{MEMORY_COLLECTION_INFIX}{owner_key(user_id)}"

    def user_collection(self, user_id: str, *, create: bool) -> Any | None:
        name = self.collection_name(user_id)
        with self._lock:
            cached = self._collections.get(name)
            if cached is not None:
                return cached
            if create:
                collection = self.client.get_or_create_collection(
                    name,
                    embedding_function=None,
                    configuration=USER_COLLECTION_CONFIGURATION,
                    metadata={"mnemic": "memory", "user_id": user_id, "namespace": self.namespace},
                )
            else:
                try:
                    collection = self.client.get_collection(name, embedding_function=None)
                except Exception:  # chromadb raises NotFoundError (or ValueError in older releases)
                    return None
            claim(collection, self.namespace)
            _upgrade_index_saving(collection)
            self._collections[name] = collection
            return collection

    def _on_user(self, user_id: str, operation: Callable[[Any], T], *, create: bool, missing: T) -> T:
        """`operation` on the user's collection, or `missing` when there is none (see
        `naming.again_if_dropped`: another process may have dropped it)."""
        return again_if_dropped(lambda: self.user_collection(user_id, create=create), operation,
                                lambda: self.forget_handle(user_id), missing)

    def users(self) -> list[str]:
        """Every user with a collection in this namespace, from the collections' own metadata."""
        prefix = self.prefix + MEMORY_COLLECTION_INFIX
        found = []
        for collection in self.client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            if not name.startswith(prefix):
                continue
            handle = collection if not isinstance(collection, str) else self.client.get_collection(
                name, embedding_function=None)
            metadata = handle.metadata or {}
            user_id = metadata.get("user_id")
            # The prefix alone is not enough: namespace "a" is a prefix of namespace "a-m"'s
            # collections. Only a collection whose whole name is derived from this namespace and
            # its own recorded owner belongs here.
            if (isinstance(user_id, str) and metadata.get("namespace") == self.namespace
                    and name == self.collection_name(user_id)):
                found.append(user_id)
        return sorted(found)

    def forget_handle(self, user_id: str) -> None:
        """Drop the cached handle of the user's collection (it is being replaced)."""
        with self._lock:
            self._collections.pop(self.collection_name(user_id), None)

    def drop_user(self, user_id: str) -> None:
        name = self.collection_name(user_id)
        with self._lock:
            self._collections.pop(name, None)
            try:
                self.client.delete_collection(name)
            except Exception:  # already gone: erasure is idempotent
                return

    def drop_namespace(self) -> None:
        for user_id in self.users():
            self.drop_user(user_id)
        self.drop_history()
        with contextlib.suppress(Exception):  # absent already
            self.client.delete_collection(f"{self.prefix}-meta")
        if self._cache_scope is not None:
            with _SETTINGS_GUARD:
                for cached in [k for k in _SETTINGS_CACHE if k[:2] == (self._cache_scope, self.prefix)]:
                    del _SETTINGS_CACHE[cached]
        self.meta = self._bookkeeping("meta")

    # -- records --------------------------------------------------------------------------------

    def add(self, user_id: str, rows: Sequence[StoredRow]) -> None:
        if not rows:
            return
        step = self.batch_size()

        self._on_user(user_id, lambda collection: _upsert(collection, rows, step), create=True, missing=None)

    def replace_metadata(self, user_id: str, rows: Sequence[StoredRow]) -> None:
        """Write records' documents and metadata (and embeddings when given) in place."""
        if not rows:
            return
        step = self.batch_size()
        with_vectors = [r for r in rows if r.embedding is not None]
        without = [r for r in rows if r.embedding is None]

        def write(collection: Any) -> None:
            _upsert(collection, with_vectors, step)
            for start in range(0, len(without), step):
                # Same text, so no document is sent (Chroma would try to re-embed it). update merges
                # metadata; keys that must disappear are passed as None by the caller.
                chunk = without[start:start + step]
                collection.update(ids=[r.id for r in chunk], metadatas=[r.metadata for r in chunk])

        self._on_user(user_id, write, create=True, missing=None)

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        step = self.batch_size()

        def remove(collection: Any) -> None:
            for start in range(0, len(ids), step):
                collection.delete(ids=list(ids[start:start + step]))

        self._on_user(user_id, remove, create=False, missing=None)

    def get(
        self,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        embeddings: bool = False,
    ) -> list[StoredRow]:
        include = ["documents", "metadatas"] + (["embeddings"] if embeddings else [])
        return self._on_user(user_id, lambda collection: _rows(collection.get(
            ids=list(ids) if ids is not None else None,
            where=dict(where) if where else None,
            limit=limit,
            offset=offset,
            include=include,
        )), create=False, missing=[])

    def iterate(self, user_id: str, *, where: Mapping[str, Any] | None = None,
                page: int = 1000) -> Iterator[StoredRow]:
        offset = 0
        while True:
            rows = self.get(user_id, where=where, limit=page, offset=offset)
            yield from rows
            if len(rows) < page:
                return
            offset += page

    def query(
        self,
        user_id: str,
        vector: np.ndarray,
        *,
        n_results: int,
        where: Mapping[str, Any] | None = None,
    ) -> list[StoredRow]:
        return self.query_many(user_id, [vector], n_results=n_results, where=where)[0]

    def query_many(
        self,
        user_id: str,
        vectors: Sequence[np.ndarray],
        *,
        n_results: int,
        where: Mapping[str, Any] | None = None,
    ) -> list[list[StoredRow]]:
        """The nearest rows for each vector, in one round trip (a batch of new facts reconciles
        against the store with one query, not one per fact)."""
        if not len(vectors):
            return []
        return self._on_user(user_id, lambda collection: self._query_groups(collection, vectors, n_results, where),
                             create=False, missing=[[] for _ in vectors])

    @staticmethod
    def _query_groups(collection: Any, vectors: Sequence[np.ndarray], n_results: int,
                      where: Mapping[str, Any] | None) -> list[list[StoredRow]]:
        # No count() first: Chroma answers a request for more results than it holds with what it
        # has, and the extra round trip cost recall ~4 ms.
        # Chroma reads every result row of one query in one SQL statement, one variable per row:
        # past SQLite's 32,766 variables the whole query fails, so large batches go in groups.
        per_query = max(1, MAX_RESULT_ROWS_PER_QUERY // max(1, n_results))
        rows: list[list[StoredRow]] = []
        for start in range(0, len(vectors), per_query):
            group = list(vectors[start:start + per_query])
            result = collection.query(
                query_embeddings=group,
                n_results=n_results,
                where=dict(where) if where else None,
                include=["documents", "metadatas", "distances"],
            )
            rows.extend(_rows(result, query=i) for i in range(len(group)))
        return rows

    def get_in(self, collection_name: str, record_id: str) -> StoredRow | None:
        """A record from a named collection of this namespace (the lexical index knows which)."""
        if not collection_name.startswith(self.prefix + MEMORY_COLLECTION_INFIX):
            return None
        if len(collection_name) != len(self.prefix + MEMORY_COLLECTION_INFIX) + 32:
            return None  # another namespace's collection that merely shares our prefix
        with self._lock:
            collection = self._collections.get(collection_name)
        if collection is None:
            try:
                collection = self.client.get_collection(collection_name, embedding_function=None)
            except Exception:
                return None
        claim(collection, self.namespace)
        rows = _rows(collection.get(ids=[record_id], include=["documents", "metadatas"]))
        return rows[0] if rows else None

    def existing_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        return self._on_user(user_id, lambda c: set(c.get(ids=list(ids), include=[]).get("ids") or []),
                             create=False, missing=set())

    def count(self, user_id: str) -> int:
        return self._on_user(user_id, lambda collection: int(collection.count()), create=False, missing=0)

    def batch_size(self) -> int:
        """The most rows one write may carry (a Chroma server refuses more, ~5,461 by default)."""
        # Asked once: on a server every call is a round trip.
        if self._max_batch is None:
            try:
                self._max_batch = max(1, min(int(self.client.get_max_batch_size()), 5000))
            except Exception:
                self._max_batch = 1000
        return self._max_batch

    # -- history and settings -------------------------------------------------------------------

    def _setting_key(self, key: str) -> tuple[str, str, str] | None:
        return (self._cache_scope, self.prefix, key) if self._cache_scope is not None else None

    def _on_meta(self, operation: Callable[[Any], T]) -> T:
        """`operation` on the settings collection, opened again if it was dropped meanwhile (another
        Memory object of this namespace ran `reset()`)."""

        def reopen() -> None:
            self.meta = self._bookkeeping("meta")

        return again_if_dropped(lambda: self.meta, operation, reopen, missing=cast(T, None))

    def get_setting(self, key: str) -> Any | None:
        cache_key = self._setting_key(key)
        if cache_key is not None:
            with _SETTINGS_GUARD:
                cached = _SETTINGS_CACHE.get(cache_key)
            if cached is not None:
                return json.loads(cached)
        result = self._on_meta(lambda meta: meta.get(ids=[key], include=["documents"]))
        documents = result.get("documents") or []
        document = documents[0] if documents else "null"  # absent is cached too: "no policy stored"
        if cache_key is not None:
            with _SETTINGS_GUARD:
                _SETTINGS_CACHE[cache_key] = document
        return json.loads(document)

    def put_setting(self, key: str, value: Any) -> None:
        document = json.dumps(value)
        cache_key = self._setting_key(key)
        if cache_key is not None:
            with _SETTINGS_GUARD:
                _SETTINGS_CACHE.pop(cache_key, None)
        self._on_meta(lambda meta: meta.upsert(ids=[key], documents=[document], embeddings=[_PLACEHOLDER_VECTOR],
                                               metadatas=[{"key": key}]))
        if cache_key is not None:
            with _SETTINGS_GUARD:
                _SETTINGS_CACHE[cache_key] = document

    def settings(self, prefix: str) -> dict[str, Any]:
        """Every setting whose key starts with `prefix` (the meta collection is small)."""
        result = self._on_meta(lambda meta: meta.get(include=["documents"]))
        return {key: json.loads(doc) for key, doc in zip(result.get("ids") or [], result.get("documents") or [],
                                                          strict=False) if key.startswith(prefix)}

    def delete_setting(self, key: str) -> None:
        cache_key = self._setting_key(key)
        if cache_key is not None:
            with _SETTINGS_GUARD:
                _SETTINGS_CACHE.pop(cache_key, None)
        self._on_meta(lambda meta: meta.delete(ids=[key]))

    def check_embedder(self, name: str, dimension: int) -> None:
        """Remember the namespace's embedder on first use; refuse a different one afterwards."""
        stored = self.get_setting("embedder")
        if stored is None:
            self.put_setting("embedder", {"name": name, "dimension": dimension})
            return
        if stored.get("name") != name or int(stored.get("dimension", -1)) != dimension:
            raise EmbedderMismatchError(
                f"namespace {self.namespace!r} was built with embedder {stored.get('name')!r} "
                f"({stored.get('dimension')} dimensions) but was opened with {name!r} ({dimension} "
                "dimensions). Vectors from different models cannot be compared. Open it with the "
                f"original embedder, or use another namespace (Memory(..., namespace='...'))."
            )
