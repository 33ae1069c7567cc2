"""Repairs Chroma cannot make itself: a vector index that lost records, and bytes an erasure left.

- After a SIGKILL, Chroma's HNSW index can come back from disk missing records its SQLite side
  still holds (`count()` says 72, a query for every record returns 69; which ones depends on the
  open). `unreachable_ids` finds them with one query for the whole collection; `rebuild_user`
  writes the collection anew (fresh index and fresh write log) and puts it in place of the old one.
- An embedded store's `chroma.sqlite3` keeps a deleted row's bytes in free pages and inside the
  pages it shared with other rows (Chroma's connection does not set `secure_delete`), and its
  write log holds every write its index has not saved yet (up to `sync_threshold` per collection).
  Dropping a collection drops its log; `vacuum` rewrites the file without the free space.

A rebuild never leaves a moment where the user's records exist nowhere: the new collection is
complete (under a temporary name) before the old one is dropped, and `finish_interrupted_rebuilds`
completes or discards a rebuild a crash interrupted, on the next open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .chroma import USER_COLLECTION_CONFIGURATION, ChromaStore
from .file_gate import gate_for

log = logging.getLogger("mnemic.store")

REBUILD_SUFFIX = "-rebuild"
CHROMA_DATABASE = "chroma.sqlite3"
_PAGE = 5000


def _all_ids(collection: Any) -> list[str]:
    ids: list[str] = []
    while True:
        page = collection.get(limit=_PAGE, offset=len(ids), include=[]).get("ids") or []
        ids += page
        if len(page) < _PAGE:
            return ids


def unreachable_ids(store: ChromaStore, user_id: str, dimension: int) -> list[str]:
    """Records of the user that a vector query cannot return (missing from the HNSW index)."""
    collection = store.user_collection(user_id, create=False)
    if collection is None:
        return []
    ids = _all_ids(collection)
    if not ids:
        return []
    probe = np.zeros(dimension, dtype=np.float32)
    probe[0] = 1.0
    found = set(collection.query(query_embeddings=[probe], n_results=len(ids), include=[])["ids"][0])
    return [record_id for record_id in ids if record_id not in found]


def _read_all(collection: Any, embed: Callable[[Sequence[str]], np.ndarray]) -> dict[str, Any]:
    rows: dict[str, Any] = {"ids": [], "documents": [], "metadatas": [], "embeddings": []}
    while True:
        page = collection.get(limit=_PAGE, offset=len(rows["ids"]), include=["documents", "metadatas"])
        ids = page.get("ids") or []
        if not ids:
            break
        documents = [d or "" for d in page.get("documents") or [""] * len(ids)]
        try:  # the index may be what is broken: vectors it cannot give back are computed again
            vectors = collection.get(ids=ids, include=["embeddings"])
            by_id = dict(zip(vectors["ids"], vectors["embeddings"], strict=True))
            embeddings = np.stack([np.asarray(by_id[i], dtype=np.float32) for i in ids])
        except Exception as exc:
            log.warning("re-embedding %d records for a rebuild (%s)", len(ids), exc)
            embeddings = np.asarray(embed(documents), dtype=np.float32)
        rows["ids"] += ids
        rows["documents"] += documents
        rows["metadatas"] += page.get("metadatas") or [None] * len(ids)
        rows["embeddings"] += list(embeddings)
        if len(ids) < _PAGE:
            break
    return rows


def rebuild_user(store: ChromaStore, user_id: str, embed: Callable[[Sequence[str]], np.ndarray]) -> int:
    """Write the user's records into a fresh collection that replaces the old one; returns how many."""
    old = store.user_collection(user_id, create=False)
    if old is None:
        return 0
    store.forget_handle(user_id)
    return rebuild_collection(store.client, old, store.collection_name(user_id), embed,
                              configuration=USER_COLLECTION_CONFIGURATION)


def rebuild_collection(client: Any, old: Any, name: str, embed: Callable[[Sequence[str]], np.ndarray], *,
                       configuration: dict[str, Any] | None = None) -> int:
    """Copy a collection into a fresh one under a temporary name, drop the old one and give the
    fresh one its name. The fresh one has a new index and a new write log; `configuration` (when
    given) replaces the old one's, which is how an index built with too few neighbours is upgraded."""
    rows = _read_all(old, embed)
    temporary = name + REBUILD_SUFFIX
    with contextlib.suppress(Exception):  # left by an earlier attempt
        client.delete_collection(temporary)
    kept = configuration
    if kept is None:
        space = ((getattr(old, "configuration_json", None) or {}).get("hnsw") or {}).get("space")
        kept = {"hnsw": {"space": space}} if space else None
    fresh = client.create_collection(temporary, embedding_function=None, configuration=kept,
                                     metadata=dict(old.metadata or {}) or None)
    for start in range(0, len(rows["ids"]), _PAGE):
        end = start + _PAGE
        fresh.add(ids=rows["ids"][start:end], documents=rows["documents"][start:end],
                  metadatas=[m or None for m in rows["metadatas"][start:end]],
                  embeddings=np.stack(rows["embeddings"][start:end]))
    client.delete_collection(name)
    fresh.modify(name=name)
    return len(rows["ids"])


@contextlib.contextmanager
def _write_log(chroma_path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to Chroma's SQLite file, with no Chroma call of this process running
    meanwhile (file_gate.py). Its tables are not a public interface: callers decide what an error
    means."""
    with gate_for(chroma_path).exclusive():
        connection = sqlite3.connect(f"file:{chroma_path / CHROMA_DATABASE}?mode=ro", uri=True, timeout=30)
        try:
            yield connection
        finally:
            connection.close()


def log_holds(chroma_path: Path, collection: Any, ids: Sequence[str]) -> bool:
    """Whether the collection's write log still holds a write of any of `ids` (Chroma keeps a write
    there until the collection's index is saved); yes when the log cannot be read."""
    if not ids:
        return False
    try:
        with _write_log(chroma_path) as connection:
            for start in range(0, len(ids), 500):
                chunk = list(ids[start:start + 500])
                found = connection.execute(
                    f"SELECT 1 FROM embeddings_queue WHERE topic LIKE ? AND id IN ({','.join('?' * len(chunk))}) "
                    "LIMIT 1", (f"%{collection.id}", *chunk)).fetchone()
                if found:
                    return True
            return False
    except Exception as exc:
        log.warning("could not read Chroma's write log (%s); assuming it holds erased records", exc)
        return True


_DELETE = 3  # Chroma's code for a delete in its write log (ADD 0, UPDATE 1, UPSERT 2)


def logged_deletions(chroma_path: Path) -> set[str]:
    """Ids of the collections whose write log holds a delete, and so maybe the deleted record's
    text (the write that stored it is still there until the index is saved); none when the log
    cannot be read."""
    try:
        with _write_log(chroma_path) as connection:
            topics = connection.execute("SELECT DISTINCT topic FROM embeddings_queue WHERE operation = ?",
                                        (_DELETE,)).fetchall()
    except Exception as exc:
        log.warning("could not read Chroma's write log (%s)", exc)
        return set()
    return {str(topic).rsplit("/", 1)[-1] for (topic,) in topics}


def finish_interrupted_rebuilds(store: ChromaStore) -> None:
    """Complete a rebuild a crash interrupted after the old collection was dropped; discard one
    interrupted before (the old collection is still whole)."""
    prefix = store.prefix + "-"
    names = {c if isinstance(c, str) else c.name for c in store.client.list_collections()}
    for name in names:
        if not (name.startswith(prefix) and name.endswith(REBUILD_SUFFIX)):
            continue
        canonical = name[:-len(REBUILD_SUFFIX)]
        rebuilt = store.client.get_collection(name, embedding_function=None)
        if (rebuilt.metadata or {}).get("namespace", store.namespace) != store.namespace:
            continue  # another namespace's, whose name reduces to ours: its own store finishes it
        if canonical in names:
            store.client.delete_collection(name)
        else:
            rebuilt.modify(name=canonical)
            log.warning("finished rebuilding %s after an interrupted repair", canonical)


_HNSW_HEADER = struct.Struct("<iQQQQQQiiQQQdQ")  # hnswlib's saved header, as Chroma 1.x writes it (version 1)


def zero_unused_index_space(chroma_path: Path) -> int:
    """Zero the parts of saved HNSW files that hold no element: hnswlib allocates room for
    `max_elements` without clearing it and saves all of it, so the files of any collection carry
    whatever the process's heap held there (seen here: another collection's texts in a user's
    `length.bin`). Only files whose header and sizes agree are touched; returns how many were."""
    cleaned = 0
    for header_path in chroma_path.glob("*/header.bin"):
        folder = header_path.parent
        try:
            header = header_path.read_bytes()
            if len(header) != _HNSW_HEADER.size:
                continue
            fields = _HNSW_HEADER.unpack(header)
            version, max_elements, count, per_element = fields[0], fields[2], fields[3], fields[4]
            if version != 1 or not 0 <= count <= max_elements:
                continue
            for name, width in (("data_level0.bin", per_element), ("length.bin", 4)):
                path = folder / name
                if not path.exists() or path.stat().st_size != max_elements * width:
                    continue
                used = count * width
                with open(path, "r+b") as handle:
                    handle.seek(used)
                    tail = handle.read()
                    if tail.strip(b"\x00"):
                        handle.seek(used)
                        handle.write(b"\x00" * len(tail))
                        handle.flush()
                        os.fsync(handle.fileno())
                        cleaned += 1
        except OSError as exc:  # a collection dropped meanwhile: nothing left to clean there
            log.debug("could not clean %s: %s", folder, exc)
    return cleaned


def scrub_files(chroma_path: Path) -> None:
    """What an erasure leaves in an embedded store's files, removed: `vacuum`, then
    `zero_unused_index_space`, with no Chroma call of this process running meanwhile."""
    with gate_for(chroma_path).exclusive():
        vacuum(chroma_path)
        zero_unused_index_space(chroma_path)


def vacuum(chroma_path: Path) -> None:
    """Rewrite an embedded store's `chroma.sqlite3` without free space, so deleted rows' bytes are
    gone from the file. Chroma's own `chroma vacuum` does the same; VACUUM keeps every explicit
    rowid, which is how Chroma's tables refer to each other. Only under the path's gate held
    exclusively (see `scrub_files`): Chroma's own SQLite must not be in the file meanwhile."""
    database = chroma_path / CHROMA_DATABASE
    if not database.exists():
        return
    connection = sqlite3.connect(database, timeout=30, isolation_level=None)
    try:
        connection.execute("PRAGMA busy_timeout = 30000")
        _merge_full_text_segments(connection)
        connection.execute("VACUUM")
    finally:
        connection.close()


# Chroma's trigram index of every document: a deleted document's trigrams stay in its older FTS5
# segments ("zqx" of "Zqxdenver" outlived the record's delete) until the segments are merged.
_FULL_TEXT_TABLE = "embedding_fulltext_search"


def _merge_full_text_segments(connection: sqlite3.Connection) -> None:
    present = connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                 (_FULL_TEXT_TABLE,)).fetchone()
    if present is None:
        return
    try:
        connection.execute(f"INSERT INTO {_FULL_TEXT_TABLE}({_FULL_TEXT_TABLE}) VALUES ('optimize')")
    except sqlite3.OperationalError as exc:  # an SQLite without FTS5's trigram tokenizer cannot open it
        log.warning("could not merge Chroma's full-text index, so an erased text's trigrams may stay in "
                    "chroma.sqlite3 until Chroma merges it: %s", exc)
