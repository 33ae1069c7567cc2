"""The store contract (tests/store_contract.py) against LangGraph's InMemoryStore and MnemicStore.

Both stores search with the same embedder (mnemic's HashEmbedder), so rankings compare. Where a
store breaks the contract, `known_differences` says how; those tests are strict xfails, so the
list stays true.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import BaseStore, IndexConfig
from langgraph.store.memory import InMemoryStore
from store_contract import MakeStore, StoreContract

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.langgraph import MnemicStore

EMBEDDER = HashEmbedder()


def hash_embed(texts: Sequence[str]) -> list[list[float]]:
    return [list(map(float, row)) for row in EMBEDDER.embed(texts)]


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A store folder on tmpfs when there is one: Chroma syncs every write to disk, and the
    contract suite makes hundreds of them. Behaviour does not depend on where the folder is."""
    shm = Path("/dev/shm")
    if shm.is_dir():
        try:
            path = Path(tempfile.mkdtemp(prefix="mnemic-test-", dir=shm))
        except OSError:
            yield tmp_path
            return
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
    else:
        yield tmp_path


class TestInMemoryStore(StoreContract):
    known_differences: ClassVar[dict[str, str]] = {
        "test_put_keeps_created_at_and_moves_updated_at":
            "InMemoryStore replaces the Item on every put, so created_at is the time of the last put",
        "test_stored_values_do_not_alias_the_callers_objects":
            "InMemoryStore keeps a shallow copy and returns its own Item: nested objects are shared",
        "test_batch_validates_namespaces_too":
            "InMemoryStore.batch runs ops without validate_op_namespace (only the put/get/... methods check)",
        "test_a_comparison_on_a_missing_field_does_not_match":
            "InMemoryStore applies float() to a missing field: a $gt filter raises TypeError",
        "test_a_namespace_emptied_by_deletes_is_not_listed":
            "InMemoryStore keeps an empty dict for the namespace, so it is still listed",
        "test_a_read_in_a_batch_sees_earlier_writes_of_that_batch":
            "InMemoryStore answers every read of a batch before applying its writes",
    }

    @pytest.fixture
    def make_store(self) -> MakeStore:
        def make(**kwargs: Any) -> BaseStore:
            if kwargs.get("ttl"):
                pytest.skip("InMemoryStore does not support TTLs")
            index: IndexConfig = {"dims": EMBEDDER.dimension, "embed": hash_embed, "fields": ["text"]}
            return InMemoryStore(index=index)

        return make


class TestMnemicStore(StoreContract):
    known_differences: ClassVar[dict[str, str]] = {}

    @pytest.fixture
    def make_store(self, fast_dir: Path) -> Iterator[MakeStore]:
        memories: list[Memory] = []

        def make(**kwargs: Any) -> BaseStore:
            memory = Memory(fast_dir / f"m{len(memories)}", embedder=EMBEDDER)
            memories.append(memory)
            return MnemicStore(memory, index={"fields": ["text"]}, **kwargs)

        yield make
        for memory in memories:
            memory.close()
