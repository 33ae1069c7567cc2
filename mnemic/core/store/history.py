"""The audit trail in Chroma (`mnemic-<ns>-history`), for stores that a Chroma server shares.

Several processes write one server, and each must see the others' entries, so the trail lives in
the server as a collection of JSON documents with a constant placeholder vector. An embedded
store keeps its trail in its local database instead (`core/local_history.py`); the entries
written here by an older embedded store are read once, by `ChromaHistory.all_entries`, to move them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..history import Action, redacted, without_reason
from .chroma import ChromaStore

_PLACEHOLDER_VECTOR = [1.0]
_CHUNK = 500


class ChromaHistory:
    def __init__(self, store: ChromaStore) -> None:
        self._store = store

    def _collection(self) -> Any:
        return self._store.history_collection()

    def add(self, entries: Sequence[dict[str, Any]]) -> None:
        # In writes a server accepts: one remember_many or forget of thousands of records used to
        # fail whole on "Batch size 6000 exceeds maximum batch size 5461".
        step = self._store.batch_size()
        for start in range(0, len(entries), step):
            chunk = entries[start:start + step]
            self._collection().upsert(
                ids=[e["entry_id"] for e in chunk],
                documents=[json.dumps(e, default=str) for e in chunk],
                metadatas=[
                    {"record_id": e["record_id"], "user_id": e["user_id"], "action": e["action"],
                     "at": float(e["at_ts"]), "version": int(e["version"])}
                    for e in chunk
                ],
                embeddings=[_PLACEHOLDER_VECTOR] * len(chunk),
            )

    def for_record(self, record_id: str) -> list[dict[str, Any]]:
        result = self._collection().get(where={"record_id": record_id}, include=["documents"])
        entries = [json.loads(doc) for doc in result.get("documents") or []]
        return sorted(entries, key=lambda e: (e["at_ts"], e["version"]))

    def _get(self, record_ids: Sequence[str], include: list[str], *,
             actions: Sequence[str] = ()) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for start in range(0, len(record_ids), _CHUNK):
            chunk = list(record_ids[start:start + _CHUNK])
            where: dict[str, Any] = {"record_id": chunk[0]} if len(chunk) == 1 else {"record_id": {"$in": chunk}}
            if actions:
                where = {"$and": [where, {"action": {"$in": list(actions)}}]}
            found.append(self._collection().get(where=where, include=include))
        return found

    def ids_for_records(self, record_ids: Sequence[str]) -> list[str]:
        return [entry_id for result in self._get(record_ids, []) for entry_id in result.get("ids") or []]

    def removed(self, record_ids: Sequence[str]) -> set[str]:
        return {str(meta["record_id"])
                for result in self._get(record_ids, ["metadatas"], actions=("delete", "forget"))
                for meta in result.get("metadatas") or [] if meta}

    def delete(self, entry_ids: Sequence[str]) -> None:
        step = self._store.batch_size()
        for start in range(0, len(entry_ids), step):
            self._collection().delete(ids=list(entry_ids[start:start + step]))

    def redact(self, record_ids: Sequence[str]) -> None:
        """Keep the records' entries (who did what, when) without anything the records said."""
        for result in self._get(record_ids, ["documents"]):
            entries = [redacted(json.loads(doc)) for doc in result.get("documents") or []]
            self.add(entries)

    def drop_reasons(self, record_ids: Sequence[str], action: Action) -> None:
        for result in self._get(record_ids, ["documents"], actions=(action,)):
            self.add([without_reason(json.loads(doc)) for doc in result.get("documents") or []])

    def clear(self) -> None:
        self._store.drop_history()

    def all_entries(self) -> list[dict[str, Any]]:
        """Every entry, for moving an embedded store's trail out of Chroma."""
        collection = self._store.history_collection(create=False)
        if collection is None:
            return []
        entries: list[dict[str, Any]] = []
        offset = 0
        while True:
            page = collection.get(limit=5000, offset=offset, include=["documents"]).get("documents") or []
            entries += [json.loads(doc) for doc in page]
            if len(page) < 5000:
                return entries
            offset += 5000
