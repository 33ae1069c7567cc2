"""Owner ids mnemic makes itself (store namespaces that name no user, anonymous sessions, erased
records) are not user ids: a caller who names one is refused on every path, and reads nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base")

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.langgraph import MnemicStore
from mnemic.tools import core as tools
from mnemic.tools.langchain import search_memory_tool

SECRET_CONFIG = "The launch code name is Bluebird."
ANONYMOUS_FACT = "The visitor likes Bluebird jazz records."


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="explicit") as mem:
        MnemicStore(mem).put(("org-config",), "launch", {"text": SECRET_CONFIG})
        assert mem.remember(ANONYMOUS_FACT, user_id=None) is not None
        yield mem


def forged_ids(memory: Memory) -> list[str]:
    store_owner = MnemicStore(memory).user_for(("org-config",))
    return [
        "".join(store_owner),  # the same characters, as a caller would send them
        "".join(memory.anonymous_user_id),
        'LangGraph-NS:["org-config"]',
        "  anonymous:0123",
        "erased:0123456789abcdef",
    ]


def test_the_owners_themselves_still_work(memory: Memory) -> None:
    store = MnemicStore(memory)
    item = store.get(("org-config",), "launch")
    assert item is not None and item.value == {"text": SECRET_CONFIG}
    assert [m.record.text for m in memory.recall("jazz records", user_id=None)] == [ANONYMOUS_FACT]
    owners = memory.users()
    assert store.user_for(("org-config",)) in owners and memory.anonymous_user_id in owners
    for owner in owners:  # an operator can still erase them
        memory.forget(user_id=owner)
    assert store.get(("org-config",), "launch") is None


def test_a_reserved_id_is_refused_on_every_read_path(memory: Memory) -> None:
    for forged in forged_ids(memory):
        with pytest.raises(ValueError, match="reserves"):
            memory.recall("launch code name Bluebird", user_id=forged)
        with pytest.raises(ValueError, match="reserves"):
            memory.profile(forged)
        with pytest.raises(ValueError, match="reserves"):
            memory.list(user_id=forged)
        with pytest.raises(ValueError, match="reserves"):
            memory.revision(forged)
        with pytest.raises(ValueError, match="reserves"):
            memory.notes.scan(user_id=forged)
        with pytest.raises(ValueError, match="reserves"):
            MnemicStore(memory).search(("memories", forged), query="launch code")
        with pytest.raises(ValueError, match="reserves"):
            MnemicStore(memory).get(("memories", forged), "launch")
        answer = tools.search_memory(memory, "launch code name Bluebird", user_id=forged)
        assert "Bluebird" not in answer and "reserves" in answer
        tool = search_memory_tool(memory)
        answer = tool.invoke({"query": "Bluebird"}, config={"configurable": {"user_id": forged}})
        assert "Bluebird" not in str(answer)


def test_a_reserved_id_is_refused_on_every_write_path(memory: Memory) -> None:
    owners = set(memory.users())
    for forged in forged_ids(memory):
        with pytest.raises(ValueError, match="reserves"):
            memory.remember("I am someone else.", user_id=forged)
        with pytest.raises(ValueError, match="reserves"):
            memory.remember_many(["I am someone else."], user_id=forged)
        with pytest.raises(ValueError, match="reserves"):
            memory.observe([{"role": "user", "content": "I am someone else."}], user_id=forged)
        with pytest.raises(ValueError, match="reserves"):
            memory.forget(user_id=forged)
        assert "Nothing was saved" in tools.remember(memory, "I am someone else.", user_id=forged)
    memory.drain_writes()
    assert set(memory.users()) == owners and len(memory.list(limit=100)) == 2
