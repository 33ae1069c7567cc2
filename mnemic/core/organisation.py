"""How a namespace's records are organised, for operators and agents that browse: the scopes under
a path, the categories in use, a tree of scopes with counts, and a summary (`info`).

All of it is derived from `list` (the operator's view of records), so it needs nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .embeddings import Embedder
from .records import MemoryRecord, utcnow
from .scopes import ROOT, ancestors, normalise_scope
from .serving import WALK_LIMIT

ListRecords = Callable[..., list[MemoryRecord]]


class Organisation:
    def __init__(self, list_records: ListRecords, *, namespace: str, mode: str,
                 embedder: Callable[[], Embedder]) -> None:
        self._list = list_records
        self._namespace = namespace
        self._mode = mode
        self._embedder = embedder

    def list_scopes(self, parent: str = ROOT, *, user_id: str | None = None) -> list[str]:
        base = normalise_scope(parent)
        depth = len(ancestors(base))
        children = set()
        for record in self._list(user_id=user_id, scope=base, include_invalid=True, limit=WALK_LIMIT):
            chain = ancestors(record.scope)
            if len(chain) > depth:
                children.add(chain[depth])
        return sorted(children)

    def list_categories(self, *, user_id: str | None = None, scope: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self._list(user_id=user_id, scope=scope, limit=WALK_LIMIT):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return dict(sorted(counts.items()))

    def tree(self, *, user_id: str | None = None, scope: str | None = None) -> dict[str, Any]:
        base = normalise_scope(scope)
        root: dict[str, Any] = {"count": 0, "children": {}}
        for record in self._list(user_id=user_id, scope=base, include_invalid=True, limit=WALK_LIMIT):
            node = root
            node["count"] += 1
            for part in ancestors(record.scope)[len(ancestors(base)):]:
                name = part.rsplit("/", 1)[-1]
                node = node["children"].setdefault(name, {"count": 0, "children": {}})
                node["count"] += 1
        return root

    def info(self, scope: str | None = None, *, user_id: str | None = None) -> dict[str, Any]:
        records = self._list(user_id=user_id, scope=scope, include_invalid=True, include_expired=True,
                             limit=WALK_LIMIT)
        now = utcnow()
        by_state = {"valid": 0, "pending": 0, "invalid": 0, "expired": 0}
        by_kind: dict[str, int] = {}
        for record in records:
            by_state["expired" if record.is_expired(now) else record.state] += 1
            by_kind[record.kind] = by_kind.get(record.kind, 0) + 1
        return {
            "namespace": self._namespace,
            "scope": normalise_scope(scope),
            "records": len(records),
            "states": by_state,
            "kinds": by_kind,
            "users": len({r.user_id for r in records}),
            "categories": self.list_categories(user_id=user_id, scope=scope),
            "oldest": min((r.created_at for r in records), default=None),
            "newest": max((r.created_at for r in records), default=None),
            "embedder": self._embedder().name,
            "mode": self._mode,
        }
