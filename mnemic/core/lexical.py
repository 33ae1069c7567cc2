"""Keyword relevance with SQLite FTS5 and bm25(): the lexical half of hybrid recall.

Chroma has no local BM25, so this index lives beside it. It is a cache, never the truth: every
hit is re-read from Chroma and filtered there (owner, state, expiry, scope) before it is served,
so a stale entry can cost a candidate but can never serve a wrong record. After a crash the
index is repaired from Chroma (see `LexicalIndex.sync`).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path

from . import links as link_table
from .links import Link
from .local_db import LocalDatabase
from .related_words import related_words
from .word_forms import other_forms

_TOKEN = re.compile(r"\w+", re.UNICODE)
_SENTENCE_START = re.compile(r"(?:^|[.!?])\W*?(\w+)", re.UNICODE)
COVERAGE_CAP = 5000
MAX_RELATED_TERMS = 16
# Okapi bm25's usual constants (FTS5 uses the same).
BM25_K1 = 1.2
BM25_B = 0.75

# Function words that carry no topic: leaving them in an OR query makes every record a hit.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves also ever did does got get gets
    s t d ll m re ve y""".split()
)


# 2: rows keyed by (collection, record id); owner tokens carry the namespace.
SCHEMA_VERSION = 2


def owner_token(namespace: str, user_id: str) -> str:
    """An opaque token for a user of a namespace, so FTS5 can intersect their postings with the query's."""
    raw = json.dumps([namespace, user_id], ensure_ascii=False)
    return "u" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def query_terms(text: str) -> list[str]:
    """The words of a query worth matching, lower-cased, without stopwords, in order, unique."""
    seen: dict[str, None] = {}
    for word in _TOKEN.findall(text.casefold()):
        if (word not in STOPWORDS and len(word) > 1) or word.isdigit():
            seen.setdefault(word, None)
    return list(seen)


@dataclass(frozen=True)
class WordScores:
    """What a query's words say about a user's records (see `LexicalIndex.word_scores`)."""

    bm25: dict[str, float]
    coverage: dict[str, float]
    records: int  # how many records the user has in the index
    # record id -> (query word, the related word the record holds instead), for explanations
    related: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class LexicalHit:
    record_id: str
    bm25: float  # higher is better (FTS5's rank negated)


class LexicalIndex:
    """An FTS5 table of record texts, one row per (collection, record id), owner-tagged.

    One file may serve several namespaces (they share a store path): rows are keyed by collection
    (whose name carries the namespace) and tagged with an owner token derived from namespace and
    user, so a search, a stale-row cleanup or a repair in one namespace never sees or touches
    another's rows.
    """

    def __init__(self, database: LocalDatabase | str | Path | None, *, namespace: str = "default") -> None:
        # Given a LocalDatabase, the index shares its connection (and transactions) with the audit
        # trail and the write journal; given a path (or None: in memory) it opens its own.
        self.namespace = namespace
        self._owns_database = not isinstance(database, LocalDatabase)
        self._local = database if isinstance(database, LocalDatabase) else LocalDatabase(database)
        self._lock = self._local.lock
        self._db = self._local.connection
        self._upgrade_schema()
        self._db.executescript(
            """
            CREATE VIRTUAL TABLE IF NOT EXISTS lexical USING fts5(
                body, owner, record_id UNINDEXED,
                tokenize = 'porter unicode61 remove_diacritics 2'
            );
            CREATE TABLE IF NOT EXISTS indexed (
                record_id TEXT NOT NULL,
                fts_rowid INTEGER NOT NULL,
                collection TEXT NOT NULL,
                version INTEGER NOT NULL,
                session_id TEXT,
                turn INTEGER,
                PRIMARY KEY (collection, record_id)
            );
            CREATE INDEX IF NOT EXISTS indexed_by_record ON indexed(record_id);
            CREATE TABLE IF NOT EXISTS sync_state (collection TEXT PRIMARY KEY, watermark REAL NOT NULL);
            """
        )
        self._add_turn_columns()
        self._db.execute("CREATE INDEX IF NOT EXISTS indexed_by_turn ON indexed(collection, session_id, turn)")
        self._add_links_table()

    def _upgrade_schema(self) -> None:
        """An index written before rows were keyed per namespace is dropped: it is a cache, and
        each namespace's repair on open indexes its own records again."""
        with self._lock:
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            if version >= SCHEMA_VERSION:
                return
            with self._local.transaction():
                for table in ("lexical", "indexed", "sync_state", *link_table.TABLES):
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def owner(self, user_id: str) -> str:
        return owner_token(self.namespace, user_id)

    def _add_turn_columns(self) -> None:
        """Where each conversation turn sits, so recall can fetch a match's neighbouring turns by id
        (a Chroma `where` on session and turn scans the metadata of the whole database)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(indexed)")}
        if "session_id" not in columns:
            self._migrate_and_rebuild([
                "ALTER TABLE indexed ADD COLUMN session_id TEXT",
                "ALTER TABLE indexed ADD COLUMN turn INTEGER",
                "CREATE INDEX IF NOT EXISTS indexed_by_turn ON indexed(collection, session_id, turn)",
            ])

    def _add_links_table(self) -> None:
        """Links between a user's records (see `links.py`)."""
        exists = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (link_table.TABLES[0],)).fetchone()
        if not exists:
            self._migrate_and_rebuild([*(f"DROP TABLE IF EXISTS {t}" for t in link_table.TABLES), *link_table.SCHEMA])

    def _migrate_and_rebuild(self, statements: Sequence[str]) -> None:
        """Change the schema, and empty the index: what an index from before the change holds lacks
        what the change adds (turn places, links), so its watermarks are forgotten and the repair
        on open reads every record again."""
        with self._local.transaction():
            for statement in statements:
                self._db.execute(statement)
            self._db.execute("DELETE FROM lexical")
            self._db.execute("DELETE FROM indexed")
            self._db.execute("DELETE FROM sync_state")

    # -- writes -------------------------------------------------------------------------------

    def upsert(self, rows: Iterable[tuple[str, str, str, str, int]],
               turns: Mapping[str, tuple[str, int]] | None = None) -> None:
        """Rows of (record_id, collection, user_id, text, version); `turns` places the records that
        are conversation turns: record_id -> (session_id, turn)."""
        turns = turns or {}
        with self._local.transaction():
            for record_id, collection, user_id, text, version in rows:
                self._delete_one(collection, record_id)
                owner = self.owner(user_id)
                cursor = self._db.execute(
                    "INSERT INTO lexical(body, owner, record_id) VALUES (?, ?, ?)", (text, owner, record_id),
                )
                link_table.add_links(self._db, owner=owner, record_id=record_id,
                                     words=link_table.link_words(text, STOPWORDS))
                session, turn = turns.get(record_id, (None, None))
                self._db.execute(
                    "INSERT INTO indexed(record_id, fts_rowid, collection, version, session_id, turn) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (record_id, cursor.lastrowid, collection, version, session, turn),
                )

    def delete(self, collection: str, record_ids: Iterable[str]) -> None:
        """Drop the rows of `record_ids` in one collection (the same id elsewhere is another row)."""
        with self._local.transaction():
            for record_id in record_ids:
                self._delete_one(collection, record_id)

    def _delete_one(self, collection: str, record_id: str) -> None:
        row = self._db.execute("SELECT fts_rowid FROM indexed WHERE collection = ? AND record_id = ?",
                               (collection, record_id)).fetchone()
        if row is None:
            return
        indexed = self._db.execute("SELECT body, owner FROM lexical WHERE rowid = ?", (row[0],)).fetchone()
        if indexed is not None:
            body, owner = indexed
            link_table.drop_links(self._db, owner=owner, record_id=record_id,
                                  words=link_table.link_words(body, STOPWORDS))
        self._db.execute("DELETE FROM lexical WHERE rowid = ?", (row[0],))
        self._db.execute("DELETE FROM indexed WHERE collection = ? AND record_id = ?", (collection, record_id))

    def drop_collection(self, collection: str) -> None:
        with self._lock:
            ids = [r[0] for r in self._db.execute(
                "SELECT record_id FROM indexed WHERE collection = ?", (collection,))]
            self.delete(collection, ids)
            self._db.execute("DELETE FROM sync_state WHERE collection = ?", (collection,))

    # -- reads --------------------------------------------------------------------------------

    def search(self, query: str, *, user_id: str, limit: int) -> list[LexicalHit]:
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        # Every term is quoted, so nothing in a query can act as FTS5 syntax.
        match = "owner : " + self.owner(user_id) + " AND body : (" + " OR ".join(
            '"' + t.replace('"', '""') + '"' for t in terms
        ) + ")"
        with self._lock:
            try:
                rows = self._db.execute(
                    "SELECT record_id, bm25(lexical, 1.0, 0.0, 0.0) AS score FROM lexical "
                    "WHERE lexical MATCH ? ORDER BY score LIMIT ?",
                    (match, limit),
                ).fetchall()
            except sqlite3.OperationalError:
                return []
        return [LexicalHit(record_id=r[0], bm25=-float(r[1])) for r in rows]

    def coverage(self, query: str, *, user_id: str, cap: int = COVERAGE_CAP) -> dict[str, float]:
        """For each of the user's records holding a query word: the idf-weighted share of the
        query's words it holds, 0..1 (see `word_scores`)."""
        return self.word_scores(query, user_id=user_id, cap=cap).coverage

    def word_scores(self, query: str, *, user_id: str, cap: int = COVERAGE_CAP,
                    related: float = 0.0) -> WordScores:
        """bm25 and coverage of each of the user's records holding a query word, with every word
        weighted by how well it discriminates among the user's own records (its idf there).

        A name said in most of a user's records (their own, a speaker label) is worth almost
        nothing, however rare it is among everyone else's; FTS5's own bm25 would weigh it by the
        whole table. Coverage is the idf-weighted share of the query's words a record holds: near
        1 for a record that answers the whole question, near 0 for one sharing only a common word.
        A record holding a word close in meaning to a query word instead of the word itself earns
        `related` times their similarity of its share (`related_words.py`; 0: none). Names, the
        words capitalised inside the query, lend nothing. bm25 adds how long the record is (a word
        in a short record says more; lengths in characters, each word counted once: turns rarely
        repeat a word). A word in more than `cap` records is counted as in `cap`: it is
        common, its weight small, and listing every record would cost more than it says.
        """
        terms = query_terms(query)
        if not terms:
            return WordScores({}, {}, 0)
        token = self.owner(user_id)
        postings: list[dict[str, int]] = []
        with self._lock:
            try:
                total = self._count(token)
                postings = [self._postings(token, term, cap) for term in terms]
            except sqlite3.OperationalError:
                return WordScores({}, {}, 0)
        if total == 0:
            return WordScores({}, {}, 0)
        # Two forms of one word ("dance", "dancing") match the same records through the porter
        # stemmer: count them once. A word no record holds still counts: the records answer less
        # of the question.
        kept: list[tuple[str, dict[str, int], float]] = []
        for term, found in zip(terms, postings, strict=True):
            if found and any(found.keys() == other.keys() and shared_prefix(term, word) >= 4
                             for word, other, _ in kept):
                continue
            df = len(found)
            kept.append((term, found, math.log((total - df + 0.5) / (df + 0.5) + 1.0)))
        whole = sum(weight for _, _, weight in kept)
        if whole <= 0:
            return WordScores({}, {}, total)
        lengths = {rid: size for _, found, _ in kept for rid, size in found.items()}
        mean_length = sum(lengths.values()) / len(lengths) if lengths else 1.0
        bm25: dict[str, float] = {}
        shares: dict[str, float] = {}
        for _, found, weight in kept:
            for record_id, size in found.items():
                norm = 1.0 - BM25_B + BM25_B * size / max(mean_length, 1.0)
                bm25[record_id] = bm25.get(record_id, 0.0) + weight * (BM25_K1 + 1.0) / (1.0 + BM25_K1 * norm)
                shares[record_id] = shares.get(record_id, 0.0) + weight / whole
        lent: dict[str, list[tuple[str, str]]] = {}
        names = capitalised_words(query)
        # Each word costs a few more index reads: a long query (a pasted document) lends through
        # its most telling words only.
        telling = heapq.nlargest(MAX_RELATED_TERMS, kept, key=lambda item: item[2])
        for term, found, weight in telling:
            if term in names:
                continue
            # Another form of the word ("bought" for "buy") is the word: full credit. A related
            # word earns `related` times their similarity.
            lenders = [(form, 1.0) for form in other_forms(term)]
            if related > 0:
                lenders += [(word, related * similarity) for word, similarity in related_words(term)]
            holders = self._related_holders(token, terms, found, cap, lenders)
            for record_id, (credit, word) in holders.items():
                shares[record_id] = shares.get(record_id, 0.0) + weight / whole * credit
                lent.setdefault(record_id, []).append((term, word))
        return WordScores(bm25, shares, total, lent)

    def _postings(self, owner: str, word: str, cap: int) -> dict[str, int]:
        """The owner's records holding a word (by its porter stem), with their lengths; under the lock."""
        return dict(self._db.execute(
            "SELECT record_id, length(body) FROM lexical WHERE lexical MATCH ? LIMIT ?",
            ("owner : " + owner + ' AND body : "' + word.replace('"', '""') + '"', cap),
        ).fetchall())

    def _related_holders(self, owner: str, terms: Sequence[str], holding: Mapping[str, int], cap: int,
                         lenders: Sequence[tuple[str, float]]) -> dict[str, tuple[float, str]]:
        """Records that lack a query word (hold none of `holding`) but hold one of its `lenders`
        (word, credit): record id -> (the best credit, that word). A lender that is itself a query
        word (or a form of one) earns its own share instead."""
        found: dict[str, tuple[float, str]] = {}
        for word, credit in lenders:
            if any(shared_prefix(word, other) >= min(4, len(other)) for other in terms):
                continue
            with self._lock:
                try:
                    holders = self._postings(owner, word, cap)
                except sqlite3.OperationalError:
                    continue
            for record_id in holders:
                if record_id not in holding and credit > found.get(record_id, (0.0, ""))[0]:
                    found[record_id] = (credit, word)
        return found

    def linked(self, seeds: Iterable[str], *, user_id: str, records: int | None = None) -> list[Link]:
        """The user's records linked to the seeds by a rare word they share (see `links.py`);
        `records` is how many records the user has, when known (`WordScores.records`)."""
        owner = self.owner(user_id)
        with self._lock:
            try:
                count = self._count(owner) if records is None else records
            except sqlite3.OperationalError:
                return []
            return link_table.linked(self._db, owner=owner, seeds=seeds, records=count)

    def _count(self, owner: str) -> int:
        return int(self._db.execute("SELECT count(*) FROM lexical WHERE lexical MATCH ?",
                                    ("owner : " + owner,)).fetchone()[0])

    def turn_ids(self, collection: str, wanted: Mapping[str, Iterable[int]]) -> list[str]:
        """Ids of the records at the given turns of the given sessions (as last indexed)."""
        found: list[str] = []
        with self._lock:
            for session, turns in wanted.items():
                numbers = sorted(set(turns))
                if not numbers:
                    continue
                marks = ",".join("?" * len(numbers))
                found += [r[0] for r in self._db.execute(
                    f"SELECT record_id FROM indexed WHERE collection = ? AND session_id = ? AND turn IN ({marks})",
                    (collection, session, *numbers))]
        return found

    def collections_of(self, record_id: str) -> list[str]:
        """The collections whose rows carry `record_id` (of any namespace sharing the file)."""
        with self._lock:
            return [str(r[0]) for r in self._db.execute(
                "SELECT collection FROM indexed WHERE record_id = ?", (record_id,))]

    def versions(self, collection: str) -> dict[str, int]:
        with self._lock:
            return dict(self._db.execute(
                "SELECT record_id, version FROM indexed WHERE collection = ?", (collection,)).fetchall())

    def watermark(self, collection: str) -> float | None:
        with self._lock:
            row = self._db.execute(
                "SELECT watermark FROM sync_state WHERE collection = ?", (collection,)).fetchone()
        return None if row is None else float(row[0])

    def set_watermark(self, collection: str, value: float) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO sync_state(collection, watermark) VALUES (?, ?) "
                "ON CONFLICT(collection) DO UPDATE SET watermark = excluded.watermark",
                (collection, value),
            )

    def collections(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT DISTINCT collection FROM indexed")]

    def known(self, record_ids: Sequence[str]) -> set[str]:
        """Which of `record_ids` the index holds (in any namespace sharing the file: a hint that
        saves a Chroma read for ids it lacks, never a reason to serve)."""
        found: set[str] = set()
        with self._lock:
            for start in range(0, len(record_ids), 500):
                chunk = list(record_ids[start:start + 500])
                marks = ",".join("?" * len(chunk))
                found.update(r[0] for r in self._db.execute(
                    f"SELECT record_id FROM indexed WHERE record_id IN ({marks})", chunk))
        return found

    def scrub(self) -> None:
        """After an erasure: rewrite the full-text index without the deleted rows' postings (FTS5
        keeps a deleted row's words in its older segments until they merge), then scrub the file."""
        with self._local.transaction():
            self._db.execute("INSERT INTO lexical(lexical) VALUES ('optimize')")
        self._local.scrub()

    def close(self) -> None:
        if self._owns_database:
            self._local.close()


def matched_terms(query: str, text: str) -> list[str]:
    """Query words that appear in the text (by a shared stem-ish prefix), for explanations."""
    folded = text.casefold()
    words: set[str] | None = None
    found = []
    for term in query_terms(query):
        stem = term[: max(4, len(term) - 3)] if len(term) > 5 else term
        if stem not in folded:  # a prefix of no word then: skips the word scan for most terms
            continue
        if words is None:
            words = set(_TOKEN.findall(folded))
        if any(w.startswith(stem) for w in words):
            found.append(term)
    return found


def capitalised_words(text: str) -> set[str]:
    """Words written with a capital inside a sentence (names, places), case-folded: a capital at
    the start of the text or after a full stop, question or exclamation mark says nothing."""
    starts = {match.start(1) for match in _SENTENCE_START.finditer(text)}
    return {match.group().casefold() for match in _TOKEN.finditer(text)
            if match.group()[0].isupper() and match.start() not in starts}


def unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def shared_prefix(a: str, b: str) -> int:
    """How many leading characters two words share: a crude same-word test for stemmed matches."""
    return sum(1 for _ in takewhile(lambda pair: pair[0] == pair[1], zip(a, b, strict=False)))
