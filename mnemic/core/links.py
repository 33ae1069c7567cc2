"""Linked memories: a user's records joined by the rare words they share, for recall to follow.

A question whose answer is told over several turns often shares its words with only one of them;
the others share a name or a rare word with that one ("Rex", "pottery", "Sweden"), not with the
question (A-MEM links notes the same way, with an LLM; Mem0 boosts records that share an entity).
So when a record is indexed it is linked to the user's earlier records that hold one of its rare
words, and recall follows the links from its strongest matches.

"Rare" is within the user's own records. A word held by more than `MAX_LINK_DF` of them links
nothing: when a word stops being rare its links are dropped, so the table holds only links that
can still say something and stays bounded (at most `MAX_LINK_DF` partners per word of a record).
At recall a link counts by how well its word discriminates among the user's records now
(`specificity`, log(N/df) / log(N)): a word said in every record of a small user (their own name,
a speaker label) counts for nothing however few records there are.

The links live in the lexical index's database (table `links`), written in the same transaction
as the record's FTS row and deleted with it; each row is one direction of a link, tagged with its
owner's token, so a link can never join two users' records. Like the rest of that database it is
a cache rebuilt from Chroma by repair.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# A word in more of a user's records than this links nothing (tuned on LoCoMo conversations 0-4).
MAX_LINK_DF = 8
_WORD = re.compile(r"\w+", re.UNICODE)
MIN_LINK_WORD = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS links (
    owner TEXT NOT NULL,
    record_id TEXT NOT NULL,
    other_id TEXT NOT NULL,
    term TEXT NOT NULL,
    PRIMARY KEY (record_id, other_id, term)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_by_other ON links(other_id);
CREATE INDEX IF NOT EXISTS links_by_term ON links(owner, term);
"""


@dataclass(frozen=True)
class Link:
    record_id: str  # the record reached
    via: str  # the seed it was reached from
    term: str  # the rare word they share
    specificity: float = 1.0  # 0..1: how well the word singles records out among the user's


def link_words(text: str, stopwords: frozenset[str]) -> list[str]:
    """The words of a text that may link it: not function words, not numbers, not too short."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.casefold()):
        if len(word) >= MIN_LINK_WORD and word not in stopwords and not word.isdigit():
            seen.setdefault(word, None)
    return list(seen)


def add_links(db: sqlite3.Connection, *, owner: str, record_id: str, words: Sequence[str]) -> None:
    """Link a just-indexed record to the owner's other records that share one of its rare words.

    Runs inside the caller's transaction, after the record's own FTS row was written.
    """
    for word in words:
        rows = db.execute(
            "SELECT record_id FROM lexical WHERE lexical MATCH ? LIMIT ?",
            (f'owner : {owner} AND body : "{word}"', MAX_LINK_DF + 2),
        ).fetchall()
        others = [r[0] for r in rows if r[0] != record_id]
        if len(others) > MAX_LINK_DF:
            # The word is no longer rare for this user: what it linked says nothing any more.
            db.execute("DELETE FROM links WHERE owner = ? AND term = ?", (owner, word))
            continue
        db.executemany(
            "INSERT OR IGNORE INTO links(owner, record_id, other_id, term) VALUES (?, ?, ?, ?)",
            [pair for other in others
             for pair in ((owner, record_id, other, word), (owner, other, record_id, word))],
        )


def drop_links(db: sqlite3.Connection, record_id: str) -> None:
    """Both directions of every link of a record (inside the caller's transaction)."""
    db.execute("DELETE FROM links WHERE record_id = ?", (record_id,))
    db.execute("DELETE FROM links WHERE other_id = ?", (record_id,))


def linked(db: sqlite3.Connection, *, owner: str, seeds: Iterable[str], records: int) -> list[Link]:
    """Every record linked to one of the seeds (the owner's only), with the word that links them,
    weighted by how well that word discriminates among the owner's `records` records."""
    ids = list(dict.fromkeys(seeds))
    if not ids or records < 2:
        return []
    marks = ",".join("?" * len(ids))
    rows = db.execute(
        f"SELECT other_id, record_id, term FROM links WHERE owner = ? AND record_id IN ({marks})",
        (owner, *ids),
    ).fetchall()
    terms = sorted({r[2] for r in rows})
    if not terms:
        return []
    marks = ",".join("?" * len(terms))
    held = dict(db.execute(
        f"SELECT term, count(DISTINCT record_id) FROM links WHERE owner = ? AND term IN ({marks}) GROUP BY term",
        (owner, *terms),
    ).fetchall())
    found = []
    for other, via, term in rows:
        specificity = math.log(records / max(held.get(term, 2), 2)) / math.log(records)
        if specificity > 0:
            found.append(Link(record_id=other, via=via, term=term, specificity=specificity))
    return found


def by_record(links: Iterable[Link]) -> Mapping[str, list[Link]]:
    grouped: dict[str, list[Link]] = {}
    for link in links:
        grouped.setdefault(link.record_id, []).append(link)
    return grouped
