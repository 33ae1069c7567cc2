"""`MnemicStore`: LangGraph's `BaseStore` on mnemic, a drop-in for `compile(store=...)`.

How LangGraph's namespaces map onto mnemic
------------------------------------------
mnemic keeps every user's records in that user's own collection. A LangGraph namespace names its
user by position: with the default `user_position=1`, an item in `("memories", "alice")` (or in
`("memories", "alice", "prefs")`) belongs to user "alice", the same id the memory tools and hooks
read from `config["configurable"]["user_id"]`. So what a graph keeps in the store is alice's
memory: served by `search_memory` and profiles, listed by `mnemic list --user alice`, erased by
`memory.forget(user_id="alice")`, and never reachable from bob's collection. A namespace too short
to name a user (`("docs",)`) is owned by a pseudo-user derived from the whole namespace
(`langgraph-ns:["docs"]`), so it is shared with nobody's memory. `user_position=0` suits
`(user_id, "memories")`; `user_position=None` gives every namespace a pseudo-user of its own.

Each item is a record of kind "note" (see `mnemic.core.notes`): its id is derived from
(namespace, key), the value is kept as JSON in its metadata, the text it is found by is the
value's index fields (the store's `index["fields"]`, default the whole value as JSON, or the
`index=[...]` of a put), embedded with the Memory's embedder and keyword-indexed for hybrid search.
The namespace becomes a scope path (`/langgraph/memories/alice`), so a prefix search is a subtree
filter inside the owner's collection.

Where this store differs from `InMemoryStore` (the contract suite in `tests/store_contract.py`
shows each one): `put` keeps `created_at` and moves `updated_at`; values are JSON (a non-JSON value
is a TypeError) and never alias the caller's objects; ops in one batch apply in order (a get after
a put sees it); a namespace whose last item was deleted is no longer listed; search without a query
returns the newest first; search with a query ranks by mnemic's hybrid score (semantic + keyword +
recency) and returns every candidate, unindexed items last with score None; filters on a missing
field do not match (instead of raising); TTLs are supported (minutes, refreshed on read per
`refresh_ttl`) and expired items are never served, before `sweep_ttl()` removes them.

Memory rules apply: under policy mode `off` a put raises PolicyError (deletes always work), a value
holding a secret is refused with NoteRefusedError, and every put and delete is in the audit trail.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from ...core.identity import NAMESPACE_OWNER_PREFIX, namespace_owner_id
from ...core.notes import Note
from ...core.scopes import MAX_SCOPE_DEPTH, MAX_SCOPE_LENGTH
from ...core.validation import MAX_USER_ID_CHARS

if TYPE_CHECKING:
    from ...core.memory import Memory

log = logging.getLogger("mnemic.langgraph")

SCOPE_ROOT = "langgraph"
PSEUDO_USER_PREFIX = NAMESPACE_OWNER_PREFIX
FILTER_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_KEEP = re.compile(r"[\w@:+-]", re.UNICODE)
_MAX_SEGMENT = 128


def _segment(label: str) -> str:
    """A scope segment for a namespace label, one-to-one. Labels never contain '.', so '.' escapes
    every other character a scope segment cannot hold (as '.XX' per UTF-8 byte)."""
    out = []
    for char in label:
        if _KEEP.match(char):
            out.append(char)
        else:
            out.extend(f".{byte:02X}" for byte in char.encode("utf-8"))
    encoded = "".join(out)
    if len(encoded) > _MAX_SEGMENT:
        # '..' never occurs in an escaped label, so a digest cannot collide with one.
        encoded = "..h" + hashlib.sha256(label.encode("utf-8")).hexdigest()[:40]
    return encoded


def _compare(actual: Any, expected: Any) -> bool:
    """LangGraph's filter semantics: operators, nested-dict subsets, exact lists, plain equality."""
    if isinstance(expected, Mapping):
        if any(k.startswith("$") for k in expected):
            return all(_apply(actual, op, value) for op, value in expected.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(expected)
                and all(_compare(a, e) for a, e in zip(actual, expected, strict=True)))
    return bool(actual == expected)


def _orderable(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (isinstance(a, numbers) and isinstance(b, numbers)) or (isinstance(a, str) and isinstance(b, str))


def _apply(actual: Any, operator: str, value: Any) -> bool:
    if operator == "$eq":
        return bool(actual == value)
    if operator == "$ne":
        return bool(actual != value)
    if operator not in FILTER_OPERATORS:
        raise ValueError(f"unsupported filter operator {operator!r}; use one of {', '.join(FILTER_OPERATORS)}")
    if actual is None or not _orderable(actual, value):
        return False  # a missing or differently typed field does not match (InMemoryStore raises)
    if operator == "$gt":
        return bool(actual > value)
    if operator == "$gte":
        return bool(actual >= value)
    if operator == "$lt":
        return bool(actual < value)
    return bool(actual <= value)


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path, strict=False) if condition.match_type == "prefix" else \
        zip(reversed(namespace), reversed(path), strict=False)
    return all(p == "*" or n == p for n, p in pairs)


class MnemicStore(BaseStore):
    """A LangGraph `BaseStore` whose items are mnemic memory records (see the module docstring).

    `index={"fields": [...]}` chooses what each value is found by (default the whole value);
    embeddings always come from the Memory's embedder, so `index["embed"]` is refused (configure
    `Memory(embedder=...)` instead). `ttl={"default_ttl": minutes, "refresh_on_read": bool}` as
    LangGraph's `TTLConfig`. `screen_sensitive=True` applies the policy's sensitive-category
    exclusion to puts, for stores the model writes through (e.g. memory-managing tools).
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        user_position: int | None = 1,
        screen_sensitive: bool = False,
    ) -> None:
        if user_position is not None and (isinstance(user_position, bool) or not isinstance(user_position, int)
                                          or user_position < 0):
            raise ValueError(f"user_position must be a non-negative int or None, got {user_position!r}")
        config: dict[str, Any] = dict(index or {})
        if config.get("embed") is not None:
            raise ValueError(
                "MnemicStore embeds with its Memory's embedder; index['embed'] cannot replace it. "
                "Give the embedder to Memory(..., embedder=...) (a callable works) and pass only index['fields']."
            )
        dims = config.get("dims")
        if dims is not None and int(dims) != int(memory.embedder.dimension):
            raise ValueError(f"index['dims'] is {dims} but the Memory's embedder {memory.embedder.name!r} "
                             f"has {memory.embedder.dimension} dimensions; leave dims out")
        fields = config.get("fields") or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise ValueError(f"index['fields'] must be a list of field paths such as ['text'], got {fields!r}")
        self.memory = memory
        self.notes = memory.notes
        self.index_fields: list[str] = list(fields)
        self.ttl_config = ttl
        self.user_position = user_position
        self.screen_sensitive = screen_sensitive
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    def __repr__(self) -> str:
        return f"MnemicStore(namespace={self.memory.namespace!r}, user_position={self.user_position})"

    # -- the namespace mapping --------------------------------------------------------------------

    def user_for(self, namespace: Sequence[str]) -> str:
        """The mnemic user an item in `namespace` belongs to."""
        ns = tuple(namespace)
        if self.user_position is not None and len(ns) > self.user_position:
            owner = ns[self.user_position]
            if len(owner) > MAX_USER_ID_CHARS:
                raise InvalidNamespaceError(
                    f"namespace {ns} names user {owner[:40]!r}... at position {self.user_position}, longer "
                    f"than mnemic's {MAX_USER_ID_CHARS}-character limit for user ids")
            return owner
        raw = json.dumps(list(ns), ensure_ascii=False)
        if len(PSEUDO_USER_PREFIX) + len(raw) > MAX_USER_ID_CHARS:
            raw = hashlib.sha256(raw.encode("utf-8")).hexdigest()
        return namespace_owner_id(raw)

    def scope_for(self, namespace: Sequence[str]) -> str:
        """The scope path of a namespace (or of a prefix: its subtree holds exactly the prefix's items)."""
        segments = [SCOPE_ROOT, *(_segment(label) for label in namespace)]
        path = "/" + "/".join(segments)
        if len(segments) > MAX_SCOPE_DEPTH or len(path) > MAX_SCOPE_LENGTH:
            raise InvalidNamespaceError(
                f"namespace {tuple(namespace)} is too deep or too long for MnemicStore (at most "
                f"{MAX_SCOPE_DEPTH - 1} labels and about {MAX_SCOPE_LENGTH} characters in all)")
        return path

    def _users_for_prefix(self, prefix: tuple[str, ...]) -> list[str]:
        if self.user_position is not None and len(prefix) > self.user_position:
            return [prefix[self.user_position]]
        # The prefix does not pin a user: every user's collection may hold matching items.
        return self.memory.users()

    @staticmethod
    def _note_key(namespace: tuple[str, ...], key: str) -> str:
        return json.dumps([list(namespace), key], ensure_ascii=False)

    @staticmethod
    def _split_key(note: Note) -> tuple[tuple[str, ...], str] | None:
        try:
            raw_ns, key = json.loads(note.key)
        except (ValueError, TypeError):
            return None  # a note written by something other than this store
        if not isinstance(raw_ns, list) or not isinstance(key, str):
            return None
        return tuple(str(label) for label in raw_ns), key

    # -- batch ------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order (a read after a write in the same batch sees it); results in order."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # Chroma and SQLite calls block; a worker thread keeps the event loop free.
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations -------------------------------------------------------------------------------

    @staticmethod
    def _item(note: Note, namespace: tuple[str, ...], key: str) -> Item:
        return Item(value=note.data, key=key, namespace=namespace, created_at=note.created_at,
                    updated_at=note.updated_at)

    @staticmethod
    def _search_item(note: Note, namespace: tuple[str, ...], key: str, score: float | None) -> SearchItem:
        return SearchItem(namespace=namespace, key=key, value=note.data, created_at=note.created_at,
                          updated_at=note.updated_at, score=score)

    def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        if not namespace:
            return None
        found = self.notes.get([self._note_key(namespace, op.key)], user_id=self.user_for(namespace))
        note = next(iter(found.values()), None)
        if note is None:
            return None
        if op.refresh_ttl:
            self.notes.touch([note])
        return self._item(note, namespace, op.key)

    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if namespace[0] == "langgraph":
            raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
        owner = self.user_for(namespace)
        note_key = self._note_key(namespace, op.key)
        if op.value is None:
            self.notes.delete(note_key, user_id=owner, actor="langgraph-store")
            return
        if not isinstance(op.value, Mapping):
            raise TypeError(f"a store value must be a dict, got {type(op.value).__name__}")
        value = dict(op.value)
        indexed = op.index is not False
        fields = self.index_fields if op.index is None or op.index is False else list(op.index)
        text = self._text(value, fields) if indexed else ""
        if not text.strip():
            # Nothing at the index fields: the item is still findable by its whole value.
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        ttl_minutes = op.ttl
        self.notes.put(
            note_key, text, user_id=owner, data=value, scope=self.scope_for(namespace), indexed=indexed,
            ttl_seconds=float(ttl_minutes) * 60.0 if ttl_minutes else None,
            screen_sensitive=self.screen_sensitive, actor="langgraph-store",
        )

    @staticmethod
    def _text(value: Mapping[str, Any], fields: Sequence[str]) -> str:
        parts: list[str] = []
        for path in fields:
            parts.extend(get_text_at_path(value, path if path == "$" else tokenize_path(path)))
        return "\n".join(p for p in parts if p)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        scope = self.scope_for(prefix)
        query = op.query if isinstance(op.query, str) and op.query.strip() else None
        ranked: list[tuple[float | None, Note, tuple[str, ...], str]] = []
        unranked: list[tuple[Note, tuple[str, ...], str]] = []
        for owner in self._users_for_prefix(prefix):
            rows = self.notes.scan(user_id=owner, scope=scope, vectors=query is not None)
            keep: dict[str, tuple[tuple[str, ...], str]] = {}
            kept_rows = []
            for note, vector in rows:
                where = self._split_key(note)
                if where is None or where[0][:len(prefix)] != prefix:
                    continue
                if op.filter and not all(_compare(note.data.get(k) if isinstance(note.data, Mapping) else None, v)
                                         for k, v in op.filter.items()):
                    continue
                keep[note.record.id] = where
                kept_rows.append((note, vector))
            if query is None:
                unranked.extend((note, *keep[note.record.id]) for note, _ in kept_rows)
                continue
            scored = self.notes.rank(query, kept_rows, user_id=owner)
            scored_ids = {note.record.id for _, note in scored}
            ranked.extend((score, note, *keep[note.record.id]) for score, note in scored)
            unranked.extend((note, *keep[note.record.id]) for note, _ in kept_rows
                            if note.record.id not in scored_ids)
        unranked.sort(key=lambda row: (row[0].updated_at, row[0].record.id), reverse=True)
        # Stable: notes of equal score (the 0.0 tail) keep rank()'s nearest-first order.
        ranked.sort(key=lambda row: -(row[0] or 0.0))
        ordered = ranked + [(None, note, ns, key) for note, ns, key in unranked]
        page = ordered[op.offset:op.offset + op.limit] if op.offset >= 0 and op.limit >= 0 else []
        if op.refresh_ttl:
            self.notes.touch(note for _, note, _, _ in page)
        return [self._search_item(note, ns, key, score) for score, note, ns, key in page]

    def _namespaces(self, users: Iterable[str]) -> set[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        root = "/" + SCOPE_ROOT
        for owner in users:
            for note, _ in self.notes.scan(user_id=owner, scope=root):
                where = self._split_key(note)
                if where is not None:
                    found.add(where[0])
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefixes = [tuple(c.path) for c in conditions if c.match_type == "prefix" and "*" not in c.path]
        users = self._users_for_prefix(prefixes[0]) if prefixes else self.memory.users()
        namespaces = [ns for ns in self._namespaces(users) if all(_matches(ns, c) for c in conditions)]
        if op.max_depth is not None:
            namespaces = list({ns[:op.max_depth] for ns in namespaces})
        namespaces.sort()
        return namespaces[op.offset:op.offset + op.limit]

    # -- ttl --------------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete expired items now (they are never served meanwhile). Returns how many."""
        return self.notes.sweep(scope="/" + SCOPE_ROOT, actor="langgraph-store ttl")

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> threading.Thread:
        """Sweep expired items every `sweep_interval_minutes` (default: the ttl config's, else 5)
        on a daemon thread until `stop_ttl_sweeper()`."""
        if self._sweeper is not None and self._sweeper.is_alive():
            return self._sweeper
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        self._sweeper_stop.clear()

        def run() -> None:
            while not self._sweeper_stop.wait(float(interval) * 60.0):
                try:
                    self.sweep_ttl()
                except Exception:  # a failed sweep must not end the sweeper; the next one retries
                    log.exception("TTL sweep failed")

        self._sweeper = threading.Thread(target=run, name="mnemic-langgraph-ttl", daemon=True)
        self._sweeper.start()
        return self._sweeper

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it has stopped."""
        self._sweeper_stop.set()
        if self._sweeper is None:
            return True
        self._sweeper.join(timeout)
        return not self._sweeper.is_alive()


__all__ = ["MnemicStore"]
