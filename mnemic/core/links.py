"""Linked memories: a user's records joined by the rare words they share, for recall to follow.

A question whose answer is told over several turns often shares its words with only one of them;
the others share a name or a rare word with that one ("Rex", "pottery", "Sweden"), not with the
question (A-MEM links notes the same way, with an LLM; Mem0 boosts records that share an entity).
So when a record is indexed it is linked to the user's earlier records that hold one of its rare
words, and recall follows the links from its strongest matches.

"Rare" is within the user's own records. `link_terms` counts, per user, how many records hold
each word; `link_postings` lists the records holding each word held by at most `MAX_LINK_DF` of
them, and two records listed under one word are linked. When a word gets past the cap its list is
dropped, so the tables hold only links that can still say something and stay bounded (at most
`MAX_LINK_DF` partners per word of a record). At recall a link counts by how well
its word discriminates among the user's records now (`specificity`, log(N/df) / log(N)): a word
said in every record of a small user (their own name, a speaker label) counts for nothing however
few records there are.

Words are compared as written (case-folded), not stemmed: counting them in plain tables costs a
few index look-ups per word, where asking FTS5 per word cost ~0.1 ms each (~1.5 ms per record).

Everything lives in the lexical index's database, written in the same transaction as the record's
FTS row and removed with it: each row is tagged with its owner's token, so a link never joins two
users' records, and a record's words are counted out again when it is deleted, so nothing of an
erased record stays behind. A word that falls back under the cap after deletions keeps no links to
the records indexed while it was common; repair (a rebuild from Chroma) restores them.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .word_scores import rough_stem

# A word in more of a user's records than this links nothing (tuned on LoCoMo conversations 0-4).
MAX_LINK_DF = 8
MIN_LINK_WORD = 3
_WORD = re.compile(r"\w+", re.UNICODE)

SCHEMA = (
    # How many of a user's records hold each word.
    "CREATE TABLE IF NOT EXISTS link_terms (owner TEXT NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL, "
    "PRIMARY KEY (owner, term)) WITHOUT ROWID",
    # The records holding each word that is still rare for its user: two records sharing a
    # word here are linked (a pair table would cost ~7 times the rows and writes).
    "CREATE TABLE IF NOT EXISTS link_postings (owner TEXT NOT NULL, term TEXT NOT NULL, record_id TEXT NOT NULL, "
    "PRIMARY KEY (owner, term, record_id)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS link_postings_by_record ON link_postings(record_id)",
)
TABLES = ("link_terms", "link_postings")


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
    """Count a just-indexed record's words, and list it under those still rare for its owner (which
    links it to the records listed there). Runs inside the caller's transaction; the record must
    not be counted already."""
    for word in words:
        # One statement per word: most words are common, and this is all they cost.
        held = int(db.execute("INSERT INTO link_terms(owner, term, df) VALUES (?, ?, 1) "
                              "ON CONFLICT(owner, term) DO UPDATE SET df = df + 1 RETURNING df",
                              (owner, word)).fetchone()[0])
        if held <= MAX_LINK_DF:
            db.execute("INSERT OR IGNORE INTO link_postings(owner, term, record_id) VALUES (?, ?, ?)",
                       (owner, word, record_id))
        elif held == MAX_LINK_DF + 1:
            # The word is no longer rare for this user: what it linked says nothing any more.
            db.execute("DELETE FROM link_postings WHERE owner = ? AND term = ?", (owner, word))


def drop_links(db: sqlite3.Connection, *, owner: str, record_id: str, words: Sequence[str]) -> None:
    """Count a record's words out again and remove its links (inside the caller's transaction);
    `words` are the ones `add_links` counted for it."""
    for word in words:
        db.execute("UPDATE link_terms SET df = df - 1 WHERE owner = ? AND term = ?", (owner, word))
        db.execute("DELETE FROM link_terms WHERE owner = ? AND term = ? AND df <= 0", (owner, word))
    db.execute("DELETE FROM link_postings WHERE owner = ? AND record_id = ?", (owner, record_id))


def linked(db: sqlite3.Connection, *, owner: str, seeds: Iterable[str], records: int) -> list[Link]:
    """Every record linked to one of the seeds (the owner's only), with the word that links them,
    weighted by how well that word discriminates among the owner's `records` records."""
    ids = list(dict.fromkeys(seeds))
    if not ids or records < 2:
        return []
    marks = ",".join("?" * len(ids))
    held_by_seeds = db.execute(
        f"SELECT record_id, term FROM link_postings WHERE owner = ? AND record_id IN ({marks})", (owner, *ids),
    ).fetchall()
    terms = sorted({term for _, term in held_by_seeds})
    if not terms:
        return []
    marks = ",".join("?" * len(terms))
    holders: dict[str, list[str]] = {}
    for term, record_id in db.execute(
            f"SELECT term, record_id FROM link_postings WHERE owner = ? AND term IN ({marks})", (owner, *terms)):
        holders.setdefault(term, []).append(record_id)
    found = []
    for via, term in held_by_seeds:
        others = [rid for rid in holders.get(term, ()) if rid != via]
        specificity = math.log(records / max(len(others) + 1, 2)) / math.log(records)
        if specificity > 0:
            found += [Link(record_id=other, via=via, term=term, specificity=specificity) for other in others]
    return found


def records_holding(db: sqlite3.Connection, *, owner: str, word: str) -> int:
    """About how many of the owner's records hold a word in any of its forms: the counts of the
    words it begins ("visit" for "visiting": visit, visits, visited...), for a word too common to
    list its holders. Records holding two forms are counted twice; a word of another stem with the
    same beginning is counted too; both make a common word count as commoner, which is safe."""
    stem = rough_stem(word)
    held = db.execute("SELECT sum(df) FROM link_terms WHERE owner = ? AND term >= ? AND term < ?",
                      (owner, stem, stem + "\U0010ffff")).fetchone()[0]
    return int(held or 0)
