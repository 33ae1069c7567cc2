"""Removing knowledge so that nothing of it remains, even when a crash cuts the removal short.

A removal is several writes: the audit entry saying who removed what, the chunks' deletion from
Chroma and from the keyword index, the redaction of their texts from the audit trail, and the
scrub of the store's files (scrub.py). A process that dies between them used to leave the removed
text in the trail and on disk for good. So, as memory's records write their tombstone before the
record leaves Chroma (record_writer.remove), the removal's audit entries are written first, marked
`erasing`; the mark is lifted only when every step is done. Finding a mark means an erasure was cut
short: `finish_unfinished()` does it again from the start (every step may safely run twice) and is
run by `KnowledgeStore.repair()`, which every open of the knowledge store runs and which
`Memory.repair()` and the full check after a crash (recovery.py) reach.
"""

from __future__ import annotations

from collections.abc import Sequence

from .knowledge_audit import audit_entries, new_generation, undo
from .knowledge_chunks import KnowledgeChunk
from .lexical import LexicalIndex
from .scrub import Scrubber
from .store.knowledge import KnowledgeCollection


class KnowledgeEraser:
    def __init__(self, collection: KnowledgeCollection, lexical: LexicalIndex, scrubber: Scrubber | None) -> None:
        self._collection = collection
        self._lexical = lexical
        self._scrubber = scrubber

    def remove(self, chunks: Sequence[KnowledgeChunk], *, actor: str, reason: str | None,
               group: str | None = None) -> None:
        """Remove these chunks for every user; their texts leave the trail and the files."""
        entries = audit_entries("delete", chunks, actor=actor, reason=reason, group=group)
        for item in entries:
            item["erasing"] = "chunks"
        ids = [c.id for c in chunks]
        self._collection.set_generation(new_generation())
        self._collection.add_history(entries)
        try:
            self._collection.delete(ids)
        except BaseException:
            undo("drop the audit entries of a failed delete",
                 lambda: self._collection.delete_history([e["entry_id"] for e in entries]))
            raise
        self._unindex(ids)
        self.erase_traces(ids)
        self._collection.erasure_finished([e["entry_id"] for e in entries])

    def clear(self, chunks: Sequence[KnowledgeChunk], *, actor: str) -> None:
        """Remove every chunk (`chunks`: what the collection holds, for the audit trail)."""
        entries = audit_entries("delete", chunks, actor=actor, reason="cleared", group="clear") if chunks else []
        for item in entries:
            item["erasing"] = "all"
        self._collection.set_generation(new_generation())
        self._collection.add_history(entries)
        self._drop_all()
        self._collection.erasure_finished([e["entry_id"] for e in entries])

    def finish_unfinished(self) -> int:
        """Finish every erasure a crash interrupted; returns how many chunk ids they named."""
        unfinished = self._collection.unfinished_erasures()
        if not unfinished:
            return 0
        if any(kind == "all" for _, kind, _ in unfinished):
            self._drop_all()
        else:
            ids = list(dict.fromkeys(rid for _, _, record_ids in unfinished for rid in record_ids))
            self._collection.delete(ids)  # the operator asked for it: a crash does not undo it
            self._unindex(ids)
            self.erase_traces(ids)
        self._collection.erasure_finished([entry_id for entry_id, _, _ in unfinished])
        return sum(len(record_ids) for _, _, record_ids in unfinished)

    def _drop_all(self) -> None:
        self._collection.clear()
        self._lexical.drop_collection(self._collection.name)
        self._sync_watermark()
        self.erase_traces(None)

    def _unindex(self, ids: Sequence[str]) -> None:
        self._lexical.delete(self._collection.name, ids)
        self._sync_watermark()

    def _sync_watermark(self) -> None:
        generation = self._collection.generation()
        if generation is not None:
            self._lexical.set_watermark(self._collection.name, generation)

    def erase_traces(self, chunk_ids: Sequence[str] | None) -> None:
        """The removed chunks' texts leave the audit trail (None: every entry's) and the store's
        files (see scrub.py)."""
        redacted = self._collection.redact_history(chunk_ids)
        if self._scrubber is None:
            return
        chunks, audit = self._collection.handles()
        if chunk_ids:
            self._scrubber.rebuild_if_logged(chunks, self._collection.name, chunk_ids)
        self._scrubber.rebuild_if_logged(audit, self._collection.history_name, redacted)
        self._collection.forget_handles()
        self._scrubber.finish()
