"""Every write is checked before its first byte is written, and a change that fails leaves no trace
of success: bad strings (lone surrogates, NUL), numbers that overflow and oversized fields get a
clear ValueError, and `history()` shows only versions that landed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from mnemic import Memory
from mnemic.core.validation import MAX_METADATA_KEYS, MAX_REASON_CHARS, MAX_SOURCE_CHARS

BAD_STRINGS = ["lone \ud800 surrogate", "a NUL \x00 inside"]


def snapshot(memory: Memory, record_id: str) -> tuple[Any, ...]:
    return (memory.get(record_id).model_dump(), [h.model_dump() for h in memory.history(record_id)],
            len(memory.list(include_invalid=True, include_pending=True, limit=1000)), memory.knowledge.count())


def test_a_change_that_failed_in_the_store_never_shows_as_applied(memory: Memory,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    record = memory.remember("Ana works in Lisbon.", user_id="ana")
    assert record is not None
    original = memory._store.replace_metadata

    def fails_once(*args: Any, **kwargs: Any) -> None:
        monkeypatch.setattr(memory._store, "replace_metadata", original)
        raise RuntimeError("the store refused the write")

    monkeypatch.setattr(memory._store, "replace_metadata", fails_once)
    with pytest.raises(RuntimeError, match="refused"):
        memory.update(record.id, text="Ana works in Porto.", categories=["work"])
    assert [h.action for h in memory.history(record.id)] == ["add"]
    memory.update(record.id, text="Ana works in Faro.")
    trail = memory.history(record.id)
    assert [(h.action, h.after, h.version) for h in trail] == [
        ("add", "Ana works in Lisbon.", 1), ("update", "Ana works in Faro.", 2)]
    assert memory.get(record.id).categories == []


def test_an_entry_left_by_a_crash_is_not_shown_once_its_version_is_reached(memory: Memory,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    record = memory.remember("Ana works in Lisbon.", user_id="ana")
    assert record is not None
    # As if the process died between the audit entry and the record: the entry stays behind.
    monkeypatch.setattr(memory._records, "_withdraw", lambda *args, **kwargs: None)
    monkeypatch.setattr(memory._store, "replace_metadata", lambda *a, **k: (_ for _ in ()).throw(OSError("gone")))
    with pytest.raises(OSError):
        memory.update(record.id, text="Ana works in Porto.")
    monkeypatch.undo()
    memory.update(record.id, text="Ana works in Faro.")
    assert [h.after for h in memory.history(record.id)] == ["Ana works in Lisbon.", "Ana works in Faro."]


@pytest.mark.parametrize("bad", BAD_STRINGS)
def test_bad_strings_are_refused_before_anything_is_written(memory: Memory, bad: str) -> None:
    record = memory.remember("Bo likes tea.", user_id="bo", categories=["drinks"])
    assert record is not None
    before = snapshot(memory, record.id)
    calls: list[Callable[[], Any]] = [
        lambda: memory.remember(bad, user_id="bo"),
        lambda: memory.remember("Bo likes cake.", user_id="bo", categories=[bad]),
        lambda: memory.remember("Bo likes cake.", user_id="bo", source=bad),
        lambda: memory.remember("Bo likes cake.", user_id="bo", session_id=bad),
        lambda: memory.remember("Bo likes cake.", user_id="bo", metadata={"note": bad}),
        lambda: memory.remember("Bo likes cake.", user_id="bo", actor=bad),
        lambda: memory.remember("Bo likes cake.", user_id=bad),
        lambda: memory.remember_many(["Bo likes cake.", bad], user_id="bo"),
        lambda: memory.remember_many(["Bo likes cake."], user_id="bo", categories=[bad]),
        lambda: memory.update(record.id, text=bad),
        lambda: memory.update(record.id, categories=[bad]),
        lambda: memory.update(record.id, source=bad),
        lambda: memory.update(record.id, metadata={"note": bad}),
        lambda: memory.update(record.id, text="Bo likes coffee.", reason=bad),
        lambda: memory.update(record.id, text="Bo likes coffee.", actor=bad),
        lambda: memory.invalidate(record.id, reason=bad),
        lambda: memory.delete(record.id, reason=bad),
        lambda: memory.confirm(record.id, actor=bad),
        lambda: memory.observe([{"role": "user", "content": "I like cake."}], user_id="bo", metadata={"k": bad}),
        lambda: memory.observe([{"role": "user", "content": "I like cake."}], user_id="bo", session_id=bad),
        lambda: memory.knowledge.add("Opening hours are nine to five.", source=bad),
        lambda: memory.knowledge.add(f"Opening hours are nine to five. {bad}"),
        lambda: memory.knowledge.add(bad, verbatim=True),
        lambda: memory.knowledge.add("Opening hours are nine to five.", added_by=bad),
        lambda: memory.notes.put(bad, "Bo's note", user_id="bo"),
        lambda: memory.notes.put("k", bad, user_id="bo"),
        lambda: memory.history(bad),
        lambda: memory.get(bad),
        lambda: memory.recall(bad, user_id="bo"),
    ]
    for position, call in enumerate(calls):
        with pytest.raises(ValueError) as refused:
            call()
        assert ("surrogate" in str(refused.value) or "NUL" in str(refused.value)), (position, refused.value)
    if "\ud800" in bad:  # (JSON escapes a NUL in a note's data, so that one is storable)
        with pytest.raises(ValueError, match="surrogate"):
            memory.notes.put("k", "Bo's note", user_id="bo", data={"v": bad})
    memory.drain_writes()
    assert snapshot(memory, record.id) == before


def test_numbers_that_overflow_get_a_clear_value_error(memory: Memory) -> None:
    record = memory.remember("Cy swims on Mondays.", user_id="cy")
    assert record is not None
    for ttl in (1e16, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="ttl_seconds"):
            memory.remember("Cy swims on Fridays.", user_id="cy", ttl_seconds=ttl)
        with pytest.raises(ValueError, match="ttl_seconds"):
            memory.update(record.id, ttl_seconds=ttl)
    for older in (timedelta.max, float("inf"), 1e300):
        with pytest.raises(ValueError, match="older_than"):
            memory.forget(user_id="cy", older_than=older)
    with pytest.raises(ValueError, match="64 bits"):
        memory.remember("Cy swims on Fridays.", user_id="cy", turn=2**70)
    with pytest.raises(ValueError, match="64 bits"):
        memory.remember("Cy swims on Fridays.", user_id="cy", metadata={"n": 2**70})
    with pytest.raises(ValueError, match="finite"):
        memory.remember("Cy swims on Fridays.", user_id="cy", metadata={"x": float("nan")})
    assert [r.id for r in memory.list(user_id="cy")] == [record.id]
    assert [h.action for h in memory.history(record.id)] == ["add"]


def test_every_free_text_field_has_a_size_limit(memory: Memory) -> None:
    record = memory.remember("Di reads novels.", user_id="di")
    assert record is not None
    huge = "x" * 10_000_000
    calls: list[Callable[[], Any]] = [
        lambda: memory.remember("Di reads poems.", user_id="di", metadata={"blob": huge}),
        lambda: memory.remember("Di reads poems.", user_id="di",
                                metadata={f"k{i}": i for i in range(MAX_METADATA_KEYS + 1)}),
        lambda: memory.remember("Di reads poems.", user_id="di", source="s" * (MAX_SOURCE_CHARS + 1)),
        lambda: memory.remember("Di reads poems.", user_id="di", session_id="s" * 300),
        lambda: memory.remember("Di reads poems.", user_id="di", categories=[f"c{i}" for i in range(33)]),
        lambda: memory.remember(huge, user_id="di"),
        lambda: memory.update(record.id, metadata={"blob": huge}),
        lambda: memory.invalidate(record.id, reason="r" * (MAX_REASON_CHARS + 1)),
        lambda: memory.observe([{"role": "user", "content": "hi"}], user_id="di", metadata={"blob": huge}),
        lambda: memory.notes.put("k", "Di's note", user_id="di", data={"blob": huge}),
        lambda: memory.notes.put("k" * 2000, "Di's note", user_id="di"),
        lambda: memory.knowledge.add(huge),
    ]
    for position, call in enumerate(calls):
        with pytest.raises(ValueError, match="limit"):
            call()
        assert position >= 0
    memory.drain_writes()
    assert [r.id for r in memory.list(user_id="di")] == [record.id]
    assert memory.knowledge.count() == 0


def test_text_from_a_conversation_is_repaired_not_lost(memory: Memory) -> None:
    memory.set_policy(mode="auto")
    memory.observe([{"role": "user", "content": "My name is Eve and I live in Oslo \ud83d."}], user_id="eve")
    memory.drain_writes()  # no background failure
    texts = [r.text for r in memory.list(user_id="eve")]
    assert texts and all("\ud83d" not in t for t in texts)
