"""Erasure that erases: after records are removed, remove what the files of an embedded store still hold.

Deleting a record through Chroma's API leaves its bytes on disk: in Chroma's write log until the
collection's index is saved (up to `sync_threshold` writes later), and in the free space of
`chroma.sqlite3` (Chroma does not set `secure_delete`). The keyword index keeps a deleted row's
words in older FTS5 segments. So after every erasure (`forget`, `delete`, knowledge `delete` and
`clear`) the scrubber:

1. rebuilds a collection that still exists and whose write log holds an erased record (a fresh
   collection has a fresh log; a dropped collection's log is dropped with it);
2. merges the segments of Chroma's full-text (trigram) index, which keep a deleted document's
   trigrams, and VACUUMs `chroma.sqlite3` (the file is rewritten without free space);
3. zeroes the unused room of saved HNSW files, which hnswlib saves uninitialised (it held other
   collections' texts from the process heap in tests);
4. merges the keyword index's segments, rewrites the local database and truncates its WAL.

Against a Chroma server the server owns its files: erasure there removes the records, their log
entries once the server saves its index, and their audit texts through the API; the bytes in the
server's files are the server operator's to scrub (`chroma vacuum`), which this scrubber cannot
reach. The local database (when there is one) is still scrubbed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .lexical import LexicalIndex
from .store import ChromaStore, upkeep
from .store.runs import RunCollection

log = logging.getLogger("mnemic")


class Scrubber:
    def __init__(self, store: ChromaStore, lexical: LexicalIndex, embed: Callable[[Sequence[str]], np.ndarray],
                 chroma_path: Path | None) -> None:
        self._store = store
        self._lexical = lexical
        self._embed = embed
        self._chroma_path = chroma_path  # None: a server owns the files

    @property
    def owns_files(self) -> bool:
        return self._chroma_path is not None

    def after_records_erased(self, erased: Mapping[str, Sequence[str]]) -> None:
        """`erased`: per user, the ids removed from a collection the user still has."""
        if self._chroma_path is not None:
            for user_id, ids in erased.items():
                collection = self._store.user_collection(user_id, create=False)
                if collection is not None and upkeep.log_holds(self._chroma_path, collection, ids):
                    upkeep.rebuild_user(self._store, user_id, self._embed)
        self.finish()

    def rebuild_if_logged(self, collection: Any, name: str, ids: Sequence[str]) -> None:
        """For a collection other than a user's (knowledge, its audit trail)."""
        if self._chroma_path is not None and collection is not None \
                and upkeep.log_holds(self._chroma_path, collection, ids):
            upkeep.rebuild_collection(self._store.client, collection, name, self._embed)

    def runs_erased(self, runs: RunCollection, ids: Sequence[str]) -> None:
        """After a user's kickoff runs were removed: the run collection is rebuilt when its write
        log still holds them (the VACUUM of `finish` then drops the old pages)."""
        collection = runs.handle()
        if collection is None:
            return
        self.rebuild_if_logged(collection, runs.name, ids)
        runs.reopen()

    def after_crash(self) -> None:
        """What an erasure a crash cut short (after Chroma's delete, before this scrub) left in the
        files: the write log of every user collection that logged a delete is rebuilt (the erased
        ids are not known any more; a fresh collection holds only what is live), then `finish`.
        Against a server only the local database is this process's to scrub."""
        if self._chroma_path is None:
            self.finish()
            return
        logged = upkeep.logged_deletions(self._chroma_path)
        if logged:
            for user_id in self._store.users():
                collection = self._store.user_collection(user_id, create=False)
                if collection is not None and str(collection.id) in logged:
                    upkeep.rebuild_user(self._store, user_id, self._embed)
        self.finish()

    def finish(self) -> None:
        if self._chroma_path is not None:
            upkeep.scrub_files(self._chroma_path)
        self._lexical.scrub()
