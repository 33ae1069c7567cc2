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

LangGraph's index config is accepted as InMemoryStore and SqliteStore take it (`store_index.py`):
`index={"dims": ..., "embed": ..., "fields": [...]}`, each field text embedded on its own.

Scores. By default (`scores="hybrid"`) a search with a query ranks by mnemic's hybrid score
(semantic + keyword + recency, the score `memory.recall` gives, on a 0..1 scale, not a cosine).
`scores="cosine"` gives LangGraph's semantics: an item's score is the cosine similarity of its
best-matching field to the query, as InMemoryStore, SqliteStore and PostgresStore report it.
Either way every candidate is returned, unindexed items last with score None.

Where this store differs from `InMemoryStore` (the contract suite in `tests/store_contract.py`
and LangGraph's own store tests in `tests/langgraph_store_suite/` show each one): `put` keeps
`created_at` and moves `updated_at`; values are JSON (a non-JSON value is a TypeError naming the
field) and never alias the caller's objects; ops in one batch apply in order (a get after a put
sees it); a namespace whose last item was deleted is no longer listed; search without a query
returns the newest first; filters take dotted paths into nested values, and a comparison on a
missing field does not match (instead of raising); TTLs are supported (minutes, refreshed on read
per `refresh_ttl`) and expired items are never served, before `sweep_ttl()` removes them.
Namespaces under the root label "langgraph" are refused by `put()` (BaseStore's rule) but, like
InMemoryStore and SqliteStore, accepted through `batch()`, which is how LangGraph itself writes
the namespaces it reserves.

Memory rules apply, without crashing the graph that calls the store: under policy mode `off` the
store is read-only, and a value holding a secret (or, with `screen_sensitive=True`, a category the
policy excludes) is not stored. With the default `on_refused="skip"` such a put writes nothing,
leaves what the key held before, logs a warning (the first of each kind per store; later ones at
debug level) and is counted in `store.refused`; `on_refused="raise"` raises PolicyError or
NoteRefusedError instead. Deletes always work, and every put and delete is in the audit trail.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from ...core.identity import NAMESPACE_OWNER_PREFIX, namespace_owner_id
from ...core.notes import Note, NoteRefusedError
from ...core.policy import PolicyError
from ...core.safety import check_nesting
from ...core.scopes import MAX_SCOPE_DEPTH, MAX_SCOPE_LENGTH
from ...core.validation import MAX_USER_ID_CHARS
from ...tools.langchain import IdentityError, run_identity
from .store_filters import matches_filter, matches_namespace
from .store_index import StoreIndex

if TYPE_CHECKING:
    from ...core.memory import Memory

log = logging.getLogger("mnemic.langgraph")

SCOPE_ROOT = "langgraph"
PSEUDO_USER_PREFIX = NAMESPACE_OWNER_PREFIX
SCORES = ("hybrid", "cosine")
ON_REFUSED = ("skip", "raise")
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


def _check_json(value: Mapping[str, Any], namespace: tuple[str, ...], key: str) -> None:
    """A clear error for a value JSON cannot hold (the store keeps values as JSON, as SqliteStore does)."""
    check_nesting(value, what=f"the value put under {key!r} in {namespace}")
    try:
        json.dumps(value, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"MnemicStore keeps values as JSON, and the value put under {key!r} in {namespace} is not: {exc}. "
            "Convert it first (e.g. a datetime with .isoformat(), a set with list(), a model with .model_dump())."
        ) from None


def _check_namespace_shape(op: Op) -> None:
    """A namespace given as one string ("memories") passes LangGraph's label checks as the tuple of
    its letters: with `user_position=1` every user's items were filed under the user "e"."""
    if isinstance(op, ListNamespacesOp):
        # A condition's path given as one string is read as one label (store_filters): it only
        # narrows a listing, where a namespace decides whose an item is.
        given = [("a match condition's path", condition.path) for condition in op.match_conditions or ()
                 if not isinstance(condition.path, str)]
    else:
        given = [("namespace_prefix" if isinstance(op, SearchOp) else "namespace",
                  op.namespace_prefix if isinstance(op, SearchOp) else op.namespace)]
    for name, value in given:
        if isinstance(value, (str, Mapping)):
            raise InvalidNamespaceError(
                f"{name} must be a tuple of labels such as ('memories', user_id), got the {type(value).__name__} "
                f"{value!r:.60}: going through it label by label would give {tuple(value)[:4]!r:.60}... Pass a "
                f"tuple" + (f", e.g. ({value!r:.40},) for a namespace of one label" if isinstance(value, str) else ""))


def _check_op_arguments(op: Op) -> None:
    """Arguments the operations would otherwise misread: a limit of "3" failed deep in Python's
    comparison, -1 answered with nothing, an index of 5 with "'int' object is not iterable"."""
    if isinstance(op, (SearchOp, ListNamespacesOp)):
        for name in ("limit", "offset"):
            value = getattr(op, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
            if value < 0:
                raise ValueError(f"{name} must be 0 or more, got {value}")
    if isinstance(op, PutOp) and op.index not in (None, False) and (
            isinstance(op.index, str) or not isinstance(op.index, (list, tuple))
            or not all(isinstance(path, str) for path in op.index)):
        raise TypeError(f"index must be False, None or a list of field paths such as ['text'], got {op.index!r}")


class MnemicStore(BaseStore):
    """A LangGraph `BaseStore` whose items are mnemic memory records (see the module docstring).

    `index` is LangGraph's `IndexConfig` (`dims`, `embed`, `fields`; default: the whole value,
    embedded with the Memory's embedder); `index_config` shows it resolved. `scores` is "hybrid"
    (mnemic's recall score, the default) or "cosine" (LangGraph's). `ttl={"default_ttl": minutes,
    "refresh_on_read": bool}` as LangGraph's `TTLConfig`. `screen_sensitive=True` applies the
    policy's sensitive-category exclusion to puts, for stores the model writes through.
    `on_refused` says what a put the memory policy refuses does: "skip" (default) or "raise".
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
        scores: Literal["hybrid", "cosine"] = "hybrid",
        on_refused: Literal["skip", "raise"] = "skip",
    ) -> None:
        if user_position is not None and (isinstance(user_position, bool) or not isinstance(user_position, int)
                                          or user_position < 0):
            raise ValueError(f"user_position must be a non-negative int or None, got {user_position!r}")
        if scores not in SCORES:
            raise ValueError(f"scores must be one of {', '.join(SCORES)}, got {scores!r}")
        if on_refused not in ON_REFUSED:
            raise ValueError(f"on_refused must be one of {', '.join(ON_REFUSED)}, got {on_refused!r}")
        self.memory = memory
        self.notes = memory.notes
        self.index = StoreIndex(memory, index)
        self.index_config: dict[str, Any] = self.index.config
        self.embeddings = self.index.embeddings
        self.scores = scores
        self.on_refused = on_refused
        self.refused: Counter[str] = Counter()
        self.ttl_config = ttl
        self.user_position = user_position
        self.screen_sensitive = screen_sensitive
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    @property
    def index_fields(self) -> list[str]:
        """The value fields items are found by (LangGraph's `index["fields"]`)."""
        return list(self.index.fields)

    def __repr__(self) -> str:
        return f"MnemicStore(namespace={self.memory.namespace!r}, user_position={self.user_position})"

    # -- the namespace mapping --------------------------------------------------------------------

    def user_for(self, namespace: Sequence[str]) -> str:
        """The mnemic user an item in `namespace` belongs to."""
        ns = tuple(namespace)
        if self.user_position is not None and len(ns) > self.user_position:
            owner = self._positioned_user(ns)
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

    def _positioned_user(self, ns: tuple[str, ...]) -> str:
        """The label at `user_position`, unless the graph run calling the store has its user
        somewhere else in the namespace: then the layout is the other one (LangGraph's docs use
        both `("memories", user_id)` and `(user_id, "memories")`), and filing the item under the
        label at the position would give every user's items to one owner ("memories")."""
        assert self.user_position is not None
        owner = ns[self.user_position]
        running = _run_user()
        if running is not None and owner != running and running in ns:
            raise InvalidNamespaceError(
                f"namespace {ns} names user {owner[:40]!r} at position {self.user_position}, but this run's user "
                f"{running[:40]!r} is at position {ns.index(running)}: the item would belong to {owner[:40]!r}. "
                f"Create the store with MnemicStore(memory, user_position={ns.index(running)}) for this layout.")
        return owner

    def _users_for_prefix(self, prefix: tuple[str, ...]) -> list[str]:
        if self.user_position is not None and len(prefix) > self.user_position:
            return [self._positioned_user(prefix)]
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
            _check_namespace_shape(op)
            validate_op_namespace(op)
            _check_op_arguments(op)
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
        owner = self.user_for(namespace)
        note_key = self._note_key(namespace, op.key)
        if op.value is None:
            self.notes.delete(note_key, user_id=owner, actor="langgraph-store")
            return
        if not isinstance(op.value, Mapping):
            raise TypeError(f"a store value must be a dict, got {type(op.value).__name__}")
        value = dict(op.value)
        _check_json(value, namespace, op.key)
        indexed = op.index is not False
        texts = self.index.texts(value, None if op.index is None or op.index is False else list(op.index))
        text = "\n".join(texts) if indexed else ""
        if not text.strip():
            # Nothing at the index fields: the record is still found by recall through its whole value.
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        ttl_minutes = op.ttl
        try:
            self.notes.put(
                note_key, text, user_id=owner, data=value, scope=self.scope_for(namespace), indexed=indexed,
                ttl_seconds=float(ttl_minutes) * 60.0 if ttl_minutes else None,
                screen_sensitive=self.screen_sensitive, actor="langgraph-store",
                fields=self.index.field_vectors(texts, text) if indexed else None,
            )
        except (PolicyError, NoteRefusedError) as exc:
            if self.on_refused == "raise":
                raise
            self._refuse(exc, namespace, op.key)

    def _refuse(self, exc: Exception, namespace: tuple[str, ...], key: str) -> None:
        reason = "policy" if isinstance(exc, PolicyError) else "refused value"
        self.refused[reason] += 1
        level = logging.WARNING if self.refused[reason] == 1 else logging.DEBUG
        # Neither the key nor the namespace is quoted: a namespace holds a user id, and either may
        # be the very credential the put was refused for.
        log.log(level, "MnemicStore did not store an item (a namespace of %d labels): %s (further puts refused for "
                "this reason are logged at debug level; on_refused='raise' raises instead)", len(namespace), exc)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        scope = self.scope_for(prefix)
        query = op.query if isinstance(op.query, str) and op.query.strip() else None
        query_vector = self.index.embed_query(query) if query is not None and self.scores == "cosine" else None
        ranked: list[tuple[float | None, Note, tuple[str, ...], str]] = []
        unranked: list[tuple[Note, tuple[str, ...], str]] = []
        for owner in self._users_for_prefix(prefix):
            rows = self.notes.scan(user_id=owner, scope=scope, vectors=query is not None)
            keep: dict[str, tuple[tuple[str, ...], str]] = {}
            kept_rows = []
            for note, vector in rows:
                where = self._split_key(note)
                if where is None or where[0][:len(prefix)] != prefix or not matches_filter(note.data, op.filter):
                    continue
                keep[note.record.id] = where
                kept_rows.append((note, vector))
            if query is None:
                unranked.extend((note, *keep[note.record.id]) for note, _ in kept_rows)
                continue
            if query_vector is not None:
                scored = [(score, note) for note, vector in kept_rows if note.indexed
                          and (score := self.index.score(query_vector, note.fields, vector)) is not None]
            else:
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
        namespaces = [ns for ns in self._namespaces(users) if all(matches_namespace(ns, c) for c in conditions)]
        if op.max_depth is not None:
            namespaces = list({ns[:op.max_depth] for ns in namespaces})
        namespaces.sort()
        return namespaces[op.offset:op.offset + op.limit]

    # -- ttl --------------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete expired items now (they are never served meanwhile). Returns how many."""
        return self.notes.sweep(scope="/" + SCOPE_ROOT, actor="langgraph-store ttl")

    async def asweep_ttl(self) -> int:
        """`sweep_ttl` on a worker thread."""
        return await asyncio.to_thread(self.sweep_ttl)

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


def _run_user() -> str | None:
    """The user of the LangGraph run this call is made in (its config's user id), if any."""
    try:
        from langgraph.config import get_config

        return run_identity(get_config()).user_id
    except (RuntimeError, IdentityError):  # not inside a run, or a run naming two users
        return None
