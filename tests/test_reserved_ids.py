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


# Account names another user could register that looked like alice's once Unicode spaces were
# stripped (U+3000 ideographic space, no-break space, line separator, an ASCII unit separator), or
# that differ from it only by an invisible (format) character: refused on every path.
LOOK_ALIKES = ["alice\u3000", "\u00a0alice", "alice\u2028", "alice\x1f", "ali\u200bce", "alice\u2003"]
# Default-ignorable marks (combining grapheme joiner, variation selectors, Mongolian free variation
# selector) and the letters and symbols that render blank (Khmer inherent vowel, Hangul fillers,
# Braille blank): each prints exactly like "alice". Refused where a write names a user; an older
# mnemic stored them, so their owners can still read and erase (below).
BLANK_LOOK_ALIKES = ["alice\u034f", "alice\ufe0f", "alice\U000e0100", "ali\u180bce", "alice\u17b4", "alice\u115f",
                     "alice\u1160", "alice\u3164", "alice\uffa0", "alice\u2800"]


@pytest.mark.parametrize("look_alike", LOOK_ALIKES)
def test_an_id_that_only_looks_like_another_users_is_refused_on_every_path(memory: Memory, look_alike: str) -> None:
    memory.remember("Alice's bank is Northwind Savings.", user_id="alice")
    with pytest.raises(ValueError, match="invisible character"):
        memory.recall("bank", user_id=look_alike)
    with pytest.raises(ValueError, match="invisible character"):
        memory.remember("Mallory's note.", user_id=look_alike)
    with pytest.raises(ValueError, match="invisible character"):
        MnemicStore(memory).put(("memories", look_alike), "k", {"text": "planted"})
    assert "Northwind" not in tools.search_memory(memory, "bank", user_id=look_alike)
    answer = search_memory_tool(memory).invoke({"query": "bank"}, config={"configurable": {"user_id": look_alike}})
    assert "Northwind" not in str(answer) and "invisible character" in str(answer)
    assert [r.text for r in memory.list(user_id="alice")] == ["Alice's bank is Northwind Savings."]
    assert memory.profile("alice").count("\n- ") == 1


@pytest.mark.parametrize("look_alike", BLANK_LOOK_ALIKES)
def test_an_id_that_prints_like_another_users_names_no_new_owner(memory: Memory, look_alike: str) -> None:
    memory.remember("Alice's bank is Northwind Savings.", user_id="alice")
    with pytest.raises(ValueError, match="shows nothing"):
        memory.remember("Mallory's note.", user_id=look_alike)
    with pytest.raises(ValueError, match="shows nothing"):
        memory.remember_many(["Mallory's note."], user_id=look_alike)
    with pytest.raises(ValueError, match="shows nothing"):
        memory.observe([{"role": "user", "content": "I am Mallory."}], user_id=look_alike)
    with pytest.raises(ValueError, match="shows nothing"):
        MnemicStore(memory).put(("memories", look_alike), "k", {"text": "planted"})
    with pytest.raises(ValueError, match="shows nothing"):
        memory.runs.begin(group="crew", user_id=look_alike)
    assert "Northwind" not in tools.search_memory(memory, "bank", user_id=look_alike)
    memory.drain_writes()
    assert look_alike not in memory.users()


def test_an_owner_an_older_mnemic_stored_with_a_blank_character_can_still_read_and_erase(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Such ids were accepted before they were refused: refusing them on reads too would lock their
    owners out of their own memories, and out of erasure."""
    import mnemic.core.intake as intake
    from mnemic.core.validation import check_user_id

    old = "sam\u3164"
    with monkeypatch.context() as older_mnemic:
        older_mnemic.setattr(intake, "check_new_user_id", check_user_id)
        kept = memory.remember("Sam's home address is 4 Elm Row.", user_id=old)
        memory.remember("Sam keeps bees.", user_id=old)
    assert kept is not None
    assert [m.record.id for m in memory.recall("home address", user_id=old)][:1] == [kept.id]
    assert len(memory.list(user_id=old)) == 2
    memory.delete(kept.id)
    assert memory.forget(user_id=old) == 1
    assert memory.list(user_id=old) == []


def test_ascii_spaces_around_an_id_are_still_the_same_user(memory: Memory) -> None:
    memory.remember("Alice's bank is Northwind Savings.", user_id="  alice\n")
    assert [r.text for r in memory.list(user_id="alice")] == ["Alice's bank is Northwind Savings."]


def test_every_default_ignorable_character_is_refused_in_a_new_id() -> None:
    regex = pytest.importorskip("regex")
    from mnemic.core.validation import blank_character, invisible_character

    def refused(value: str) -> bool:
        return invisible_character(value) is not None or blank_character(value) is not None

    ignorable = [chr(c) for c in range(0x110000)
                 if not 0xD800 <= c < 0xE000 and regex.fullmatch(r"\p{Default_Ignorable_Code_Point}", chr(c))]
    assert len(ignorable) > 4000
    assert [f"U+{ord(ch):04X}" for ch in ignorable if not refused(f"al{ch}ice")] == []


# Names people have: combining marks that show (a virama, a vowel sign, an accent), other scripts,
# emoji. None of them is invisible, so none may be refused as a look-alike.
NAMES = ["अर्जुन", "প্রিয়া", "张伟", "山田太郎", "محمد", "Ольга", "Zoe\u0301", "José", "ひらがな", "fox🦊", "한국어",
         "\u2764\ufe0fsam", "\U0001f3f3\ufe0f fan"]  # an emoji as keyboards type it: symbol, variation selector


def test_names_in_any_script_are_still_user_ids(memory: Memory) -> None:
    for name in NAMES:
        assert memory.remember(f"{name} likes tea.", user_id=name) is not None, name
        assert [r.text for r in memory.list(user_id=name)] == [f"{name} likes tea."]
    assert set(NAMES) <= set(memory.users())
