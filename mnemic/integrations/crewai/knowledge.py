"""CrewAI knowledge sources stored in mnemic's knowledge store.

    use_mnemic_knowledge(memory)          # once, before the Crew or Agent is built
    Crew(..., knowledge_sources=[StringKnowledgeSource(content="...")])

CrewAI builds the storage of every `Knowledge` through a process-wide factory; registering mnemic's
makes sources land in `memory.knowledge` (mnemic's embedder, no OpenAI key) and task-time
knowledge queries read it back with mnemic's hybrid search. Each CrewAI collection ("crew" for a
crew's sources, the agent's role for an agent's) is kept apart as the chunks' `source`
("crewai:crew", "crewai:Researcher"), and each storage searches its own source only (CrewAI asks
the agent's storage and the crew's in turn), so an agent reads its own and its crew's knowledge,
not another agent's. The same passage saved by two collections belongs to both: resetting one
leaves the other's. Knowledge is written by the application (an operator act) and read by every
user; CrewAI's embedder setting does not apply (mnemic's embedder does).

Reads follow the memory policy's `knowledge` switch: with it off, searches return nothing (and
say so once in the log): `memory.set_policy(knowledge=True)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from crewai.knowledge.storage import factory as knowledge_factory
from crewai.knowledge.storage.base_knowledge_storage import BaseKnowledgeStorage
from pydantic import PrivateAttr

from ...core.memory import Memory as MnemicMemory
from ...core.records import one_line
from ...core.validation import check_items

log = logging.getLogger("mnemic.crewai")

SOURCE_PREFIX = "crewai:"
_warned_off: set[int] = set()


def _core(memory: Any) -> MnemicMemory:
    if isinstance(memory, MnemicMemory):
        return memory
    core = getattr(memory, "mnemic", None)  # a CrewMemory
    if isinstance(core, MnemicMemory):
        return core
    raise TypeError(f"expected a mnemic Memory or a CrewMemory, got {type(memory).__name__}")


class MnemicKnowledgeStorage(BaseKnowledgeStorage):
    """CrewAI's knowledge storage interface over a mnemic knowledge store."""

    collection_name: str | None = None
    _mnemic: MnemicMemory = PrivateAttr()

    def __init__(self, memory: Any, collection_name: str | None = None, **data: Any) -> None:
        super().__init__(collection_name=collection_name, **data)
        self._mnemic = _core(memory)

    @property
    def source(self) -> str:
        return SOURCE_PREFIX + (self.collection_name or "default")

    def _enabled(self) -> bool:
        if self._mnemic.effective_policy().knowledge:
            return True
        key = id(self._mnemic)
        if key not in _warned_off:
            _warned_off.add(key)
            log.warning("CrewAI knowledge search returns nothing: the knowledge store is off for namespace %r; "
                        "turn it on with memory.set_policy(knowledge=True)", self._mnemic.namespace)
        return False

    def save(self, documents: list[str]) -> None:
        """Add CrewAI's chunks (re-adding text already stored adds nothing)."""
        store = self._mnemic.knowledge
        for document in check_items(documents, name="documents", what="a list of texts",
                                    example="save(['Refunds take 5 days.'])"):
            if isinstance(document, str) and document.strip():
                store.add(document, source=self.source, added_by="operator")

    def search(
        self,
        query: list[str],
        limit: int = 5,
        metadata_filter: dict[str, Any] | None = None,
        score_threshold: float = 0.6,
    ) -> list[Any]:
        """The best chunks of this collection for the queries. CrewAI's `score_threshold` is a cosine
        cut-off; mnemic's fused score is not a cosine, so `limit` bounds the answer instead.

        Each `content` is on one line: CrewAI pastes it into the task prompt as is, where a
        document line such as "Current Task: ..." would otherwise pose as a section of the prompt."""
        if not self._enabled():
            return []
        queries = [q for q in check_items(query, name="query", what="a list of query texts",
                                          example="search(['refund policy'])") if isinstance(q, str) and q.strip()]
        best: dict[str, dict[str, Any]] = {}
        store = self._mnemic.knowledge
        for text in queries:
            # The store searches this collection's chunks only; a metadata filter narrows further.
            for hit in store.search(text, limit=max(limit * 4, 20) if metadata_filter else limit, source=self.source):
                chunk = hit.chunk
                metadata = {"source": chunk.source, "position": chunk.position}
                if metadata_filter and any(metadata.get(k) != v for k, v in metadata_filter.items()):
                    continue
                known = best.get(chunk.id)
                if known is None or hit.score > known["score"]:
                    best[chunk.id] = {"id": chunk.id, "content": one_line(chunk.text), "metadata": metadata,
                                      "score": hit.score}
        return sorted(best.values(), key=lambda r: -r["score"])[:limit]

    def reset(self) -> None:
        with contextlib.suppress(KeyError):  # KeyError: nothing was stored for this collection
            self._mnemic.knowledge.delete_source(self.source, actor="crewai", reason="CrewAI knowledge reset")

    async def asearch(
        self,
        query: list[str],
        limit: int = 5,
        metadata_filter: dict[str, Any] | None = None,
        score_threshold: float = 0.6,
    ) -> list[Any]:
        return await asyncio.to_thread(self.search, query, limit, metadata_filter, score_threshold)

    async def asave(self, documents: list[str]) -> None:
        await asyncio.to_thread(self.save, documents)

    async def areset(self) -> None:
        await asyncio.to_thread(self.reset)


class KnowledgeRegistration:
    """The registered factory; `close()` (or leaving the `with` block) restores the previous one."""

    def __init__(self, memory: Any, previous: Callable[..., Any] | None) -> None:
        self.memory = _core(memory)
        self._previous = previous

    def factory(self, embedder: Any, collection_name: str | None) -> MnemicKnowledgeStorage:
        return MnemicKnowledgeStorage(self.memory, collection_name=collection_name)

    def close(self) -> None:
        knowledge_factory.set_knowledge_storage_factory(self._previous)

    def __enter__(self) -> KnowledgeRegistration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def use_mnemic_knowledge(memory: Any) -> KnowledgeRegistration:
    """Store every CrewAI knowledge source built from now on in `memory`'s knowledge store
    (a mnemic Memory or a CrewMemory). Process-wide, as CrewAI's factory is."""
    previous = getattr(knowledge_factory, "_factory", None)
    registration = KnowledgeRegistration(memory, previous)
    knowledge_factory.set_knowledge_storage_factory(registration.factory)
    return registration


__all__ = ["SOURCE_PREFIX", "KnowledgeRegistration", "MnemicKnowledgeStorage", "use_mnemic_knowledge"]
