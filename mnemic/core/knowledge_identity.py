"""What makes two pieces of knowledge the same: the chunk's source and its exact words.

Knowledge is what an operator tells every user, so its identity is stricter than memory's
(`records.text_hash` folds case, compatibility characters and trailing punctuation, right for
"did the user say this again?"): a correction from "SAVE10" to "save10", from "10⁵" to "105" or
from "9!" to "9" says something else and must be stored, not refused as already there. Only
whitespace and Unicode's canonical equivalence (NFC: one "é" written two ways) are folded.

A chunk belongs to its source: the id hashes both, so the same passage in two documents is two
chunks, and removing one document leaves the other whole. Source names given to `add()` (or as
`add_file(source=...)`) are normalised (NFC, surrounding whitespace stripped); a file's path is
kept as it is, since two files whose names differ only in Unicode form are two files (normalised,
re-adding one replaced the other's passages). Lookups (search, list, delete_source) take a name in
any of these forms, the name exactly as given first.

Stores written before this kept ids derived from `text_hash` alone (`legacy_chunk_id`); those
rows keep their ids, and an ingest still recognises them as the chunk it would write.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata

from .records import text_hash


def normalise_source(source: str) -> str:
    return unicodedata.normalize("NFC", source).strip()


def source_spellings(source: str) -> list[str]:
    """The stored sources a name given to a lookup may stand for, the name as given first: a name
    given to `add()` is stored normalised, a file's path as it is (two files whose names differ
    only in Unicode form are two files), and either may be named in any form."""
    given = source.strip()
    return list(dict.fromkeys([given, unicodedata.normalize("NFC", given), unicodedata.normalize("NFD", given)]))


def text_identity(text: str) -> str:
    """The words of a chunk as identity sees them: NFC, runs of whitespace as one space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def content_digest(text: str) -> str:
    return hashlib.sha256(text_identity(text).encode("utf-8")).hexdigest()[:32]


def chunk_id(source: str | None, text: str) -> str:
    # The "k" prefix keeps knowledge ids apart from memory's uuid hex ids in the shared lexical
    # index; a JSON pair cannot be read two ways, whatever the source name holds.
    key = json.dumps(["knowledge", source or "", text_identity(text)], ensure_ascii=False)
    return "k" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def legacy_chunk_id(text: str) -> str:
    """The id a store written before source-owned chunks gave this text (under any source)."""
    return "k" + text_hash(text)
