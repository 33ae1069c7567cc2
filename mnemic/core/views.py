"""Views on a Memory confined to scope subtrees: `memory.scope("/project/alpha")` and
`memory.slice([...])`.

Paths given to a view are relative to its base and can never climb out of it; records outside
the view do not exist for it (KeyError), and a read-only view refuses every write, including
forget and reset, with PermissionError.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from .history import HistoryEntry
from .records import MemoryMatch, MemoryRecord
from .scopes import ROOT, is_within, join_scope, normalise_scope


class ViewedMemory(Protocol):
    """What a view needs of the memory it confines: the calls it passes on, scope paths rewritten.
    (`*args, **kwargs` members accept any signature: the view forwards the caller's arguments.)"""

    @property
    def namespace(self) -> str: ...
    def get(self, record_id: str) -> MemoryRecord: ...
    def history(self, record_id: str) -> builtins.list[HistoryEntry]: ...
    def recall(self, *args: Any, **kwargs: Any) -> builtins.list[MemoryMatch]: ...
    def list(self, *args: Any, **kwargs: Any) -> builtins.list[MemoryRecord]: ...
    def tree(self, *args: Any, **kwargs: Any) -> dict[str, Any]: ...
    def info(self, *args: Any, **kwargs: Any) -> dict[str, Any]: ...
    def list_scopes(self, *args: Any, **kwargs: Any) -> builtins.list[str]: ...
    def list_categories(self, *args: Any, **kwargs: Any) -> dict[str, int]: ...
    def drain_writes(self, timeout: float | None = None) -> None: ...
    def remember(self, *args: Any, **kwargs: Any) -> MemoryRecord | None: ...
    def remember_many(self, *args: Any, **kwargs: Any) -> builtins.list[str]: ...
    def update(self, *args: Any, **kwargs: Any) -> MemoryRecord: ...
    def invalidate(self, *args: Any, **kwargs: Any) -> MemoryRecord: ...
    def confirm(self, *args: Any, **kwargs: Any) -> MemoryRecord: ...
    def delete(self, *args: Any, **kwargs: Any) -> None: ...
    def forget(self, *args: Any, **kwargs: Any) -> int: ...
    def effective_policy(self, *args: Any, **kwargs: Any) -> Any: ...
    @property
    def max_text_chars(self) -> int: ...
    @property
    def knowledge(self) -> Any: ...


class MemoryView:
    def __init__(self, memory: ViewedMemory, paths: Sequence[str], *, read_only: bool) -> None:
        self.memory = memory
        self.paths = list(dict.fromkeys(normalise_scope(p) for p in paths))
        self.read_only = read_only

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"MemoryView({self.paths}, {mode}, namespace={self.memory.namespace!r})"

    # -- what memory's tools read (tools/core.py), so a view can be handed to them ---------------

    def effective_policy(self, *args: Any, **kwargs: Any) -> Any:
        return self.memory.effective_policy(*args, **kwargs)

    @property
    def max_text_chars(self) -> int:
        return self.memory.max_text_chars

    @property
    def knowledge(self) -> Any:
        """The namespace's shared knowledge; through a read-only view, for searching only."""
        if self.read_only:
            return _SearchOnlyKnowledge(self.memory.knowledge, deny=self._deny_writes)
        return self.memory.knowledge

    # -- confinement --------------------------------------------------------------------------

    def _deny_writes(self, action: str) -> None:
        if self.read_only:
            raise PermissionError(
                f"this memory view of {', '.join(self.paths)} is read-only: {action} is not allowed. "
                "Use memory.slice(paths, read_only=False) or the Memory itself to write."
            )

    def _inside(self, relative: str | Sequence[str] | None) -> builtins.list[str]:
        if relative is not None and not isinstance(relative, str):
            # Several scopes, as Memory.recall and Memory.list take them: each one inside the view
            # (none at all is the whole view: an empty list must not widen to the whole namespace).
            inside = dict.fromkeys(path for one in relative for path in self._inside(one))
            return list(inside) or list(self.paths)
        if relative is None or normalise_scope(relative) == ROOT:
            return list(self.paths)
        return [join_scope(base, relative) for base in self.paths]

    def _write_scope(self, relative: str | None) -> str:
        return join_scope(self.paths[0], relative)

    def _contains(self, record: MemoryRecord) -> bool:
        return any(is_within(record.scope, base) for base in self.paths)

    def _own(self, record_id: str) -> MemoryRecord:
        record = self.memory.get(record_id)
        if not self._contains(record):
            raise KeyError(f"no memory with id {record_id!r} in {', '.join(self.paths)}")
        return record

    # -- reads --------------------------------------------------------------------------------

    def recall(self, query: str, *, user_id: str | None, scope: str | Sequence[str] | None = None,
               **options: Any) -> builtins.list[MemoryMatch]:
        return self.memory.recall(query, user_id=user_id, scope=self._inside(scope), **options)

    def list(self, *, scope: str | Sequence[str] | None = None, **options: Any) -> builtins.list[MemoryRecord]:
        return self.memory.list(scope=self._inside(scope), **options)

    def get(self, record_id: str) -> MemoryRecord:
        return self._own(record_id)

    def history(self, record_id: str) -> builtins.list[HistoryEntry]:
        self._own(record_id)
        return self.memory.history(record_id)

    def tree(self, *, user_id: str | None = None) -> dict[str, Any]:
        return {base: self.memory.tree(user_id=user_id, scope=base) for base in self.paths}

    def info(self, scope: str | None = None, *, user_id: str | None = None) -> dict[str, Any]:
        return {path: self.memory.info(path, user_id=user_id) for path in self._inside(scope)}

    def list_scopes(self, parent: str | None = None, *, user_id: str | None = None) -> builtins.list[str]:
        found: builtins.list[str] = []
        for path in self._inside(parent):
            found.extend(self.memory.list_scopes(path, user_id=user_id))
        return sorted(set(found))

    def list_categories(self, *, user_id: str | None = None) -> dict[str, int]:
        totals: dict[str, int] = {}
        for path in self.paths:
            for name, count in self.memory.list_categories(user_id=user_id, scope=path).items():
                totals[name] = totals.get(name, 0) + count
        return dict(sorted(totals.items()))

    def scope(self, path: str) -> MemoryView:
        return MemoryView(self.memory, self._inside(path), read_only=self.read_only)

    def drain_writes(self, timeout: float | None = None) -> None:
        self.memory.drain_writes(timeout)

    # -- writes -------------------------------------------------------------------------------

    def remember(self, text: str, *, user_id: str | None, scope: str | None = None, **options: Any
                 ) -> MemoryRecord | None:
        self._deny_writes("remember")
        return self.memory.remember(text, user_id=user_id, scope=self._write_scope(scope), **options)

    def remember_many(self, texts: Iterable[str], *, scope: str | None = None, **options: Any) -> builtins.list[str]:
        self._deny_writes("remember_many")
        return self.memory.remember_many(texts, scope=self._write_scope(scope), **options)

    def update(self, record_id: str, **changes: Any) -> MemoryRecord:
        self._deny_writes("update")
        self._own(record_id)
        if changes.get("scope") is not None:
            changes["scope"] = self._write_scope(changes["scope"])
        return self.memory.update(record_id, **changes)

    def invalidate(self, record_id: str, **options: Any) -> MemoryRecord:
        self._deny_writes("invalidate")
        self._own(record_id)
        return self.memory.invalidate(record_id, **options)

    def confirm(self, record_id: str, **options: Any) -> MemoryRecord:
        self._deny_writes("confirm")
        self._own(record_id)
        return self.memory.confirm(record_id, **options)

    def delete(self, record_id: str, **options: Any) -> None:
        self._deny_writes("delete")
        self._own(record_id)
        self.memory.delete(record_id, **options)

    def forget(self, *, scope: str | None = None, **criteria: Any) -> int:
        self._deny_writes("forget")
        return sum(self.memory.forget(scope=path, **criteria) for path in self._inside(scope))

    def reset(self) -> None:
        """Erase everything inside the view, for every user."""
        self._deny_writes("reset")
        for path in self.paths:
            self.memory.forget(scope=path)


class _SearchOnlyKnowledge:
    """Knowledge as a read-only view offers it: its reads, and a PermissionError for each write
    (the same refusal as the view's own writes, not an AttributeError)."""

    _READS = frozenset({"search", "get", "list", "history", "sources", "count", "enabled_for_agents",
                        "collection_name"})

    def __init__(self, knowledge: Any, *, deny: Any) -> None:
        self._knowledge = knowledge
        self._deny = deny

    def __getattr__(self, name: str) -> Any:
        if name in self._READS:
            return getattr(self._knowledge, name)
        if name.startswith("_") or not callable(getattr(self._knowledge, name, None)):
            raise AttributeError(name)

        def refused(*args: Any, **kwargs: Any) -> Any:
            self._deny(f"knowledge.{name}")

        return refused
