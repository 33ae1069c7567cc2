"""Pending, invalid and expired records are never served; invalid ones are kept with history."""

from __future__ import annotations

from datetime import timedelta

import pytest

import mnemic.core.organisation as organisation_module
import mnemic.core.serving as serving_module
from mnemic import Memory
from mnemic.core.records import utcnow


def test_tool_results_and_documents_wait_for_confirmation(memory: Memory) -> None:
    for kind in ("tool_result", "document"):
        record = memory.remember(f"The shop opens at nine ({kind}).", user_id="u", source_kind=kind,
                                 author="agent")
        assert record is not None and record.state == "pending"
        assert memory.recall("shop opens", user_id="u") == []
    pending = memory.list(user_id="u")
    assert len(pending) == 2
    assert memory.list(user_id="u", include_pending=False) == []
    memory.confirm(pending[0].id, actor="ops")
    assert [m.record.id for m in memory.recall("shop opens", user_id="u")] == [pending[0].id]
    assert memory.history(pending[0].id)[-1].action == "confirm"


def test_a_confirmed_change_retires_the_value_it_replaces(memory: Memory) -> None:
    # Said by the user, "…is now Tom Baker" retires "…is Ann Lee" at once; from a tool it waits as
    # pending, and must retire the old value when confirmed, or both are served as current.
    old = memory.remember("The account manager is Ann Lee.", user_id="u")
    new = memory.remember("The account manager is now Tom Baker.", user_id="u", source_kind="tool_result")
    assert old is not None and new is not None and new.state == "pending"
    assert memory.get(old.id).state == "valid"  # an unconfirmed fact retires nothing
    memory.confirm(new.id, actor="ops")
    retired = memory.get(old.id)
    assert retired.state == "invalid" and retired.invalidated_by == new.id
    assert [m.record.id for m in memory.recall("who is the account manager", user_id="u")] == [new.id]
    assert memory.history(old.id)[-1].actor == "ops"


def test_confirming_what_needs_no_confirmation_retires_nothing(memory: Memory) -> None:
    # A valid fact confirmed again changes nothing, whatever a newer fact says; a note is a value
    # under its key, never reconciled with another note.
    tom = memory.remember("The account manager is now Tom Baker.", user_id="u")
    ann = memory.remember("The account manager is Ann Lee.", user_id="u")
    assert tom is not None and ann is not None
    memory.confirm(tom.id)
    assert memory.get(ann.id).state == "valid" and memory.get(tom.id).state == "valid"
    memory.notes.put("a", "The account manager is Ann Lee.", user_id="w")
    memory.notes.put("b", "The account manager is now Tom Baker.", user_id="w")
    memory.confirm(memory.notes.note_id("w", "b"))
    assert set(memory.notes.get(["a", "b"], user_id="w")) == {"a", "b"}


def test_invalidated_fact_is_kept_but_never_served(memory: Memory) -> None:
    record = memory.remember("Ken owns a sailing boat.", user_id="ken")
    assert record is not None
    memory.invalidate(record.id, reason="Ken sold the boat", actor="ops")
    assert memory.recall("boat", user_id="ken") == []
    assert memory.recall("Ken owns a sailing boat.", user_id="ken") == []
    assert memory.list(user_id="ken") == []
    kept = memory.get(record.id)
    assert kept.state == "invalid" and kept.invalid_reason == "Ken sold the boat"
    assert [r.id for r in memory.list(user_id="ken", include_invalid=True)] == [record.id]
    with pytest.raises(ValueError, match="cannot be confirmed"):
        memory.confirm(record.id)


def test_invalidated_fact_links_to_its_replacement(memory: Memory) -> None:
    old = memory.remember("Lena lives in Berlin.", user_id="lena")
    new = memory.remember("Lena lives in Munich.", user_id="lena")
    assert old is not None and new is not None
    memory.invalidate(old.id, reason="moved", replaced_by=new.id)
    assert memory.get(old.id).invalidated_by == new.id
    assert [m.record.id for m in memory.recall("where does Lena live", user_id="lena")] == [new.id]


def test_a_restated_invalid_fact_becomes_a_new_record(memory: Memory) -> None:
    old = memory.remember("Mo has a cat.", user_id="mo")
    assert old is not None
    memory.invalidate(old.id, reason="the cat went to a friend")
    again = memory.remember("Mo has a cat.", user_id="mo")
    assert again is not None and again.id != old.id and again.state == "valid"
    assert memory.get(old.id).state == "invalid"


def test_expired_facts_are_never_served(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    lasting = memory.remember("Nia's favourite tea is sencha.", user_id="nia")
    fleeting = memory.remember("Nia is in a meeting about tea.", user_id="nia", ttl_seconds=60)
    assert lasting is not None and fleeting is not None
    assert fleeting.expires_at is not None
    assert {m.record.id for m in memory.recall("tea", user_id="nia")} == {lasting.id, fleeting.id}

    later = utcnow() + timedelta(minutes=5)
    for reading in (serving_module, organisation_module):
        monkeypatch.setattr(reading, "utcnow", lambda: later)
    assert [m.record.id for m in memory.recall("tea", user_id="nia")] == [lasting.id]
    assert [r.id for r in memory.list(user_id="nia")] == [lasting.id]
    assert {r.id for r in memory.list(user_id="nia", include_expired=True)} == {lasting.id, fleeting.id}
    assert memory.info(user_id="nia")["states"]["expired"] == 1


def test_delete_removes_the_record_but_keeps_a_tombstone(memory: Memory) -> None:
    record = memory.remember("Omar's locker is number 12.", user_id="omar")
    assert record is not None
    memory.delete(record.id, actor="ops", reason="asked to")
    with pytest.raises(KeyError):
        memory.get(record.id)
    assert memory.recall("locker", user_id="omar") == []
    assert [h.action for h in memory.history(record.id)] == ["add", "delete"]


def test_update_of_unknown_id_is_a_key_error(memory: Memory) -> None:
    for call in (lambda: memory.update("nope", text="x"), lambda: memory.invalidate("nope", reason="r"),
                 lambda: memory.confirm("nope"), lambda: memory.delete("nope"), lambda: memory.get("nope"),
                 lambda: memory.history("nope")):
        with pytest.raises(KeyError, match="nope"):
            call()
