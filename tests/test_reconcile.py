"""Reconciliation: duplicates merge, contradictions invalidate (kept, linked, never served), pending
facts wait for confirmation, expired facts are never served, on every read path."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM, existing_aliases, fact, facts_json

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.records import MemoryRecord


def served(memory: Memory, user_id: str, query: str) -> dict[str, set[str]]:
    """What every read path serves to `user_id`."""
    return {
        "recall": {m.record.text for m in memory.recall(query, user_id=user_id, limit=50)},
        "list": {r.text for r in memory.list(user_id=user_id, include_pending=False)},
        "profile": {line[2:].rsplit(" (remembered", 1)[0]
                    for line in memory.profile(user_id, limit=50).splitlines()[1:]},
        "view": {m.record.text for m in memory.scope("/").recall(query, user_id=user_id, limit=50)},
    }


def assert_never_served(memory: Memory, user_id: str, query: str, text: str) -> None:
    for path, texts in served(memory, user_id, query).items():
        assert text not in texts, f"{text!r} served by {path}"


def assert_served(memory: Memory, user_id: str, query: str, text: str) -> None:
    for path, texts in served(memory, user_id, query).items():
        assert text in texts, f"{text!r} not served by {path}"


def only(memory: Memory, text: str, user_id: str = "alice") -> MemoryRecord:
    (record,) = [r for r in memory.list(user_id=user_id, include_invalid=True, include_expired=True)
                 if r.text == text]
    return record


# -- duplicates ------------------------------------------------------------------------------


def test_near_duplicates_merge_with_the_wording_in_history(memory: Memory) -> None:
    first = memory.remember("Is a vegetarian.", user_id="alice", categories=["diet"])
    second = memory.remember("Is vegetarian.", user_id="alice", categories=["food"])
    assert first is not None and second is not None and second.id == first.id
    assert [r.text for r in memory.list(user_id="alice", include_invalid=True)] == ["Is a vegetarian."]
    assert sorted(memory.get(first.id).categories) == ["diet", "food"]
    merge = memory.history(first.id)[-1]
    assert merge.action == "merge" and "'Is vegetarian.'" in (merge.reason or "")


@pytest.mark.parametrize(("a", "b"), [
    ("Has 2 kids.", "Has 3 kids."),
    ("Has 2 dogs and 3 cats.", "Has 3 dogs and 2 cats."),
    ("Writer 1 wrote fact 2.", "Writer 2 wrote fact 1."),
    ("Has a dog named Rex.", "Has a dog named Max."),
    ("Works at Google.", "Works at Microsoft."),
    ("Likes coffee.", "Likes tea."),
    ("Lives in Austin.", "Lives in Austin, Texas."),
])
def test_different_facts_that_look_alike_are_both_kept(memory: Memory, a: str, b: str) -> None:
    memory.remember(a, user_id="alice")
    memory.remember(b, user_id="alice")
    assert {r.text for r in memory.list(user_id="alice")} == {a, b}


def test_a_long_memory_said_again_with_one_word_changed_is_kept_as_said(memory: Memory) -> None:
    # One word is one of hundreds in a long memory, so the two vectors agree (found by an attack:
    # the edit merged into the old text and was stored nowhere).
    notes = " ".join(f"On day {i} the team reviewed budget plans and vendor schedules." for i in range(40))
    first = memory.remember(f"{notes} Alice keeps her bicycle in the basement.", user_id="u")
    second = memory.remember(f"{notes} Alice keeps her scooter in the basement.", user_id="u")
    assert first is not None and second is not None and first.id != second.id
    assert {r.text.rsplit(" ", 4)[-4] for r in memory.list(user_id="u")} == {"bicycle", "scooter"}
    again = memory.remember(f"{notes} Alice keeps her bicycle in the basement.", user_id="u")
    assert again is not None and again.id == first.id  # the same text is still one record


def test_duplicates_within_one_batch_and_one_turn_merge(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        mem.remember_many(["Prefers tea.", "prefers TEA", "Is a vegetarian.", "Is vegetarian."], user_id="alice")
        mem.observe([{"role": "user", "content": "I prefer tea. I'm a vegetarian."}], user_id="alice")
        mem.drain_writes()
        assert sorted(r.text for r in mem.list(user_id="alice", include_invalid=True)) == [
            "Is a vegetarian.", "Prefers tea."]


def test_a_contradiction_inside_one_batch(memory: Memory) -> None:
    filler = [f"Visited museum number {i}." for i in range(40)]
    memory.remember_many(["I have a boat.", *filler, "Actually I sold the boat.", "I have a boat"],
                         user_id="alice")
    memory.drain_writes()
    boat = only(memory, "I have a boat.")
    assert boat.state == "invalid" and boat.invalidated_by == only(memory, "Actually I sold the boat.").id
    # Said again after it was invalidated: a new fact, not a revival of the old record.
    assert only(memory, "I have a boat").state == "valid"
    assert len(memory.list(user_id="alice")) == 42


def test_a_more_detailed_statement_supersedes_the_short_one(memory: Memory) -> None:
    short = memory.remember("Enjoys hiking in the mountains.", user_id="alice")
    longer = memory.remember("Enjoys hiking in the mountains on weekends.", user_id="alice")
    assert short is not None and longer is not None and longer.supersedes == short.id
    assert memory.get(short.id).state == "invalid"
    assert memory.get(short.id).invalidated_by == longer.id


def test_privacy_must_match_for_a_merge(memory: Memory) -> None:
    private = memory.remember("Prefers tea.", user_id="alice", private=True, source="planner")
    public = memory.remember("Prefers tea.", user_id="alice")
    assert private is not None and public is not None and public.id != private.id
    assert [m.record.id for m in memory.recall("tea", user_id="alice")] == [public.id]


# -- contradictions without an LLM ------------------------------------------------------------


def test_i_have_a_boat_then_actually_i_sold_the_boat(memory: Memory) -> None:
    boat = memory.remember("I have a boat.", user_id="alice")
    sold = memory.remember("Actually I sold the boat.", user_id="alice")
    assert boat is not None and sold is not None
    old = memory.get(boat.id)
    assert old.state == "invalid" and old.invalidated_by == sold.id
    # The reason names the kind of change; the replacement is named by id (invalidated_by), never
    # quoted, so its erasure leaves no copy of it here (test_erasure_on_disk).
    assert old.invalid_reason == "an explicit change about the same thing"
    assert memory.get(sold.id).supersedes == boat.id
    assert old.text == "I have a boat."  # kept, not overwritten
    history = memory.history(boat.id)
    assert [h.action for h in history] == ["add", "invalidate"]
    assert history[-1].reason == old.invalid_reason
    assert memory.history(sold.id)[0].details["decision"] == "invalidate"
    assert_never_served(memory, "alice", "boat", "I have a boat.")
    assert_served(memory, "alice", "boat", "Actually I sold the boat.")
    assert "I have a boat." in {r.text for r in memory.list(user_id="alice", include_invalid=True)}


@pytest.mark.parametrize(("old", "new"), [
    ("Likes coffee.", "No longer likes coffee."),
    ("Likes coffee.", "Does not like coffee anymore."),
    ("Works at Google.", "I don't work at Google anymore."),
    ("Is a vegetarian.", "I'm not vegetarian anymore."),
    ("Has a cat.", "I gave away the cat."),
])
def test_explicit_negations_invalidate(memory: Memory, old: str, new: str) -> None:
    memory.remember(old, user_id="alice")
    memory.remember(new, user_id="alice")
    assert only(memory, old).state == "invalid"
    assert only(memory, new).state == "valid"


@pytest.mark.parametrize(("old", "new"), [
    ("Has a boat.", "My boat is not red."),
    ("Has a boat.", "No longer wants a bigger boat."),
    ("Lives in Austin.", "Moved to Denver."),  # a contradiction only a model can see
    ("Owns a Mastercraft Maristar 245.", "Sold the boat."),
    ("Does not eat meat.", "No longer eats meat."),
])
def test_the_rules_stay_conservative(memory: Memory, old: str, new: str) -> None:
    memory.remember(old, user_id="alice")
    memory.remember(new, user_id="alice")
    assert only(memory, old).state == "valid"


@pytest.mark.parametrize(("old", "new"), [
    ("The customer's warehouse is in Rotterdam.", "The customer's warehouse is in Antwerp now."),
    ("The account manager is Jane Smith.", "The account manager is now Tom Baker."),
    ("The warehouse is in Rotterdam.", "The warehouse moved to Antwerp."),
    ("The budget is 1.2M EUR.", "The budget is now 1.5M EUR."),
])
def test_the_same_thing_said_to_have_a_new_value_retires_the_old_value(memory: Memory, old: str, new: str) -> None:
    memory.remember(old, user_id="alice", author="agent")
    memory.remember(new, user_id="alice", author="agent")
    assert only(memory, old).state == "invalid"
    assert "new value" in (only(memory, old).invalid_reason or "")
    assert_never_served(memory, "alice", old.split()[1], old)
    assert_served(memory, "alice", old.split()[1], new)


@pytest.mark.parametrize(("old", "new"), [
    ("The office is in Rotterdam.", "The office is now also in Antwerp."),  # a second office
    ("Alice's manager is Bob.", "Carol's manager is now Dave."),  # another subject
    ("The head of sales is Ann.", "The head of marketing is now Bob."),
    ("The warehouse is in Rotterdam and they ship on Tuesdays.", "The warehouse is in Antwerp now."),
    ("Acme ships on Tuesdays.", "Acme ships on Fridays now."),  # maybe on both days: only a model can tell
    ("The budget is 1.2M EUR.", "The budget is 1.5M EUR."),  # no word of a change
])
def test_a_new_value_without_a_change_or_for_something_else_retires_nothing(memory: Memory, old: str,
                                                                             new: str) -> None:
    memory.remember(old, user_id="alice", author="agent")
    memory.remember(new, user_id="alice", author="agent")
    assert only(memory, old).state == "valid"


def test_contradiction_through_observe(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        mem.observe([{"role": "user", "content": "I have a boat."}], user_id="alice", session_id="s", turn=1)
        mem.observe([{"role": "user", "content": "Actually I sold the boat."}], user_id="alice", session_id="s",
                    turn=2)
        mem.drain_writes()
        assert only(mem, "Has a boat.").state == "invalid"
        assert only(mem, "Sold the boat.").turn == 2
        assert_never_served(mem, "alice", "boat", "Has a boat.")


def test_a_replacement_keeps_the_old_facts_privacy(memory: Memory) -> None:
    memory.remember("Likes coffee.", user_id="alice", private=True, source="planner")
    memory.remember("No longer likes coffee.", user_id="alice")
    new = only(memory, "No longer likes coffee.")
    assert (new.private, new.source) == (True, "planner")
    assert memory.recall("coffee", user_id="alice") == []
    assert [m.record.text for m in memory.recall("coffee", user_id="alice", source="planner")] == [
        "No longer likes coffee."]


def test_reconciliation_never_crosses_users_or_scopes(memory: Memory) -> None:
    memory.remember("Has a boat.", user_id="alice")
    memory.remember("Has a boat.", user_id="bob", scope="/trips")
    memory.remember("Sold the boat.", user_id="bob")
    assert only(memory, "Has a boat.", "alice").state == "valid"
    assert only(memory, "Has a boat.", "bob").state == "valid"


# -- pending ---------------------------------------------------------------------------------


def test_tool_facts_are_pending_until_confirmed_on_every_path(memory: Memory) -> None:
    record = memory.remember("Customer tier is Gold.", user_id="alice", source_kind="tool_result",
                             author="agent")
    assert record is not None and record.state == "pending"
    assert_never_served(memory, "alice", "customer tier", "Customer tier is Gold.")
    assert [r.text for r in memory.list(user_id="alice")] == ["Customer tier is Gold."]  # operator view
    memory.confirm(record.id)
    assert_served(memory, "alice", "customer tier", "Customer tier is Gold.")


def test_a_pending_fact_never_retires_a_known_one(memory: Memory) -> None:
    memory.remember("Likes coffee.", user_id="alice")
    memory.remember("No longer likes coffee.", user_id="alice", source_kind="document")
    assert only(memory, "Likes coffee.").state == "valid"
    assert only(memory, "No longer likes coffee.").state == "pending"


def test_tool_messages_in_a_turn_land_pending(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        mem.observe([{"role": "user", "content": "What tier am I on?"},
                     {"role": "tool", "content": "Customer tier: Gold."},
                     {"role": "assistant", "content": "You are on the Gold tier."}], user_id="alice")
        mem.drain_writes()
        tool = only(mem, "Customer tier: Gold.")
        assert (tool.state, tool.source_kind, tool.author) == ("pending", "tool_result", "agent")
        assert only(mem, "Is on the Gold tier.").state == "valid"  # what the assistant said


# -- expiry ----------------------------------------------------------------------------------


def test_expired_facts_are_never_served_and_do_not_block_new_ones(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy={"mode": "auto", "ttl_seconds": 0.5}) as mem:
        mem.observe([{"role": "user", "content": "I'm in Lisbon this week."}], user_id="alice")
        mem.drain_writes()
        assert_served(mem, "alice", "Lisbon", "Is in Lisbon this week.")
        first = only(mem, "Is in Lisbon this week.")
        assert first.expires_at is not None
        time.sleep(0.7)
        assert_never_served(mem, "alice", "Lisbon", "Is in Lisbon this week.")
        assert mem.get(first.id).is_expired()  # still there for an operator
        mem.set_policy(ttl_seconds=0)
        again = mem.remember("Is in Lisbon this week.", user_id="alice")
        assert again is not None and again.id != first.id and again.expires_at is None
        assert_served(mem, "alice", "Lisbon", "Is in Lisbon this week.")


# -- with an LLM -----------------------------------------------------------------------------


def invalidate_shown(text: str, *, new: str) -> ScriptedLLM:
    """A model that answers the reconcile prompt by invalidating the existing fact `text`."""
    def answer(messages: list[dict[str, str]]) -> str:
        alias = existing_aliases(messages)[text]
        return json.dumps({"decisions": [{"fact": 1, "decision": "invalidate", "targets": [alias],
                                          "reason": f"moved: {new}"}]})
    return ScriptedLLM(answer)


def test_the_llm_decides_a_contradiction_the_rules_cannot_see(tmp_path: Path) -> None:
    llm = invalidate_shown("Lives in Austin.", new="Lives in Denver.")
    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as mem:
        mem.remember("Lives in Austin.", user_id="alice")
        assert mem.stats.llm_calls["reconcile"] == 0  # nothing related yet: no call
        denver = mem.remember("Lives in Denver.", user_id="alice")
        assert denver is not None
        austin = only(mem, "Lives in Austin.")
        assert (austin.state, austin.invalidated_by, austin.invalid_reason) == (
            "invalid", denver.id, "moved: Lives in Denver.")
        assert mem.history(austin.id)[-1].reason == "moved: Lives in Denver."
        assert mem.history(denver.id)[0].details["decided_by"] == "llm"
        assert mem.stats.llm_calls["reconcile"] == 1
        assert_never_served(mem, "alice", "where does she live", "Lives in Austin.")


def test_an_llm_keep_merges_and_an_llm_insert_cannot_duplicate(tmp_path: Path) -> None:
    def keep(messages: list[dict[str, str]]) -> str:
        alias = existing_aliases(messages)["Prefers replies in bullet points."]
        return json.dumps({"decisions": [{"fact": 1, "decision": "keep", "targets": [alias], "reason": "same"}]})

    llm = ScriptedLLM(keep, default=json.dumps({"decisions": [{"fact": 1, "decision": "insert", "targets": [],
                                                                "reason": "new"}]}))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as mem:
        first = mem.remember("Prefers replies in bullet points.", user_id="alice")
        kept = mem.remember("Likes answers as bullet lists.", user_id="alice")
        assert first is not None and kept is not None and kept.id == first.id
        again = mem.remember("Prefers replies in bullet points.", user_id="alice")
        assert again is not None and again.id == first.id
        assert [r.text for r in mem.list(user_id="alice", include_invalid=True)] == [
            "Prefers replies in bullet points."]


def test_llm_update_supersedes(tmp_path: Path) -> None:
    def update(messages: list[dict[str, str]]) -> str:
        alias = existing_aliases(messages)["Has a dog."]
        return json.dumps({"decisions": [{"fact": 1, "decision": "update", "targets": [alias],
                                          "reason": "now with the name"}]})

    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=ScriptedLLM(update)) as mem:
        dog = mem.remember("Has a dog.", user_id="alice", importance=0.9)
        named = mem.remember("Has a dog named Rex.", user_id="alice")
        assert dog is not None and named is not None
        assert named.supersedes == dog.id and named.importance == pytest.approx(0.9)
        assert only(mem, "Has a dog.").invalid_reason == "now with the name"


def test_a_failing_reconcile_llm_falls_back_to_the_rules(tmp_path: Path) -> None:
    llm = ScriptedLLM("garbage", RuntimeError("down"))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as mem:
        mem.remember("I have a boat.", user_id="alice")
        mem.remember("Actually I sold the boat.", user_id="alice")
        assert only(mem, "I have a boat.").state == "invalid"
        assert (mem.stats.llm_calls["reconcile"], mem.stats.llm_fallbacks) == (2, 1)


def test_extraction_decisions_from_the_llm_invalidate(tmp_path: Path) -> None:
    def sold(messages: list[dict[str, str]]) -> str:
        alias = existing_aliases(messages)["Owns a Mastercraft Maristar 245."]
        return facts_json(fact("Sold the boat.", decision="invalidate", targets=[alias], reason="sold it"))

    llm = ScriptedLLM(facts_json(fact("Owns a Mastercraft Maristar 245.")), sold)
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe([{"role": "user", "content": "I own a Mastercraft Maristar 245."}], user_id="alice")
        mem.observe([{"role": "user", "content": "Actually I sold the boat."}], user_id="alice")
        mem.drain_writes()
        boat = only(mem, "Owns a Mastercraft Maristar 245.")
        assert (boat.state, boat.invalid_reason) == ("invalid", "sold it")
        assert mem.stats.llm_calls["extract"] == 2 and mem.stats.llm_calls["reconcile"] == 0
        assert_never_served(mem, "alice", "boat", "Owns a Mastercraft Maristar 245.")


def test_recall_makes_no_llm_call(tmp_path: Path) -> None:
    llm = ScriptedLLM(facts_json(fact("Lives in Austin.", topic="personal_info")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe([{"role": "user", "content": "I live in Austin."}], user_id="alice")
        mem.drain_writes()
        calls = len(llm.calls)
        for query in ("Austin", "where does the user live", "boat"):
            mem.recall(query, user_id="alice")
        mem.profile("alice")
        assert len(llm.calls) == calls
        assert mem.stats.llm_calls["recall"] == 0


# -- the real embedder -------------------------------------------------------------------------


@pytest.mark.minilm
def test_minilm_boat_contradiction_and_austin(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", policy="auto") as mem:
        mem.observe([{"role": "user", "content": "I moved to Austin last year and I prefer replies in "
                                                 "bullet points."}], user_id="alice")
        mem.observe([{"role": "user", "content": "I have a boat."}], user_id="alice")
        mem.observe([{"role": "user", "content": "Actually I sold the boat."}], user_id="alice")
        mem.drain_writes()
        assert only(mem, "Has a boat.").state == "invalid"
        assert only(mem, "Has a boat.").invalidated_by == only(mem, "Sold the boat.").id
        assert mem.recall("where does the user live?", user_id="alice")[0].record.text == \
            "Moved to Austin last year."
        assert mem.recall("how should answers be formatted?", user_id="alice")[0].record.text == \
            "Prefers replies in bullet points."
        assert_never_served(mem, "alice", "boat", "Has a boat.")


@pytest.mark.minilm
def test_minilm_near_duplicates_merge_and_distinct_facts_do_not(tmp_path: Path) -> None:
    with Memory(tmp_path / "m") as mem:
        mem.remember("Prefers replies in bullet points.", user_id="alice")
        mem.remember("Prefers bullet-point replies.", user_id="alice")
        mem.remember("Has a dog named Rex.", user_id="alice")
        mem.remember("Has a dog named Max.", user_id="alice")
        assert sorted(r.text for r in mem.list(user_id="alice")) == [
            "Has a dog named Max.", "Has a dog named Rex.", "Prefers replies in bullet points."]


def test_the_llm_never_sees_or_retires_records_of_another_kind(tmp_path: Path) -> None:
    """A conversation fact must not merge into or invalidate a lesson or a LangGraph store item."""
    llm = invalidate_shown("Lives in Austin.", new="Lives in Denver.")
    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as mem:
        note = mem.remember("Lives in Austin.", user_id="alice", kind="note")
        lesson = mem.remember("Lives in Austin.", user_id="alice", kind="lesson")
        assert note is not None and lesson is not None
        mem.remember("Lives in Denver.", user_id="alice")
        assert mem.stats.llm_calls["reconcile"] == 0  # no related fact of the same kind: nothing to ask
        assert mem.get(note.id).state == "valid" and mem.get(lesson.id).state == "valid"
        assert not any("Austin" in prompt for prompt in llm.prompts)


def _boat_model(seen: list[str]) -> Any:
    """A model that retires every boat fact it is shown, in either call (extraction or reconcile)."""

    def answer(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        prompt = messages[-1]["content"]
        seen.append(prompt)
        shown = [int(alias) for alias, text in re.findall(r"^\[(\d+)\] (.+)$", prompt, re.M) if "boat" in text]
        if "decisions" in schema["properties"]:
            return json.dumps({"decisions": [{"fact": 1, "decision": "invalidate", "targets": shown,
                                              "reason": "sold it"}]})
        return facts_json(fact("Sold the boat.", decision="invalidate", targets=shown, reason="sold it"))

    return answer


@pytest.mark.parametrize("path", ["observe", "scoped view"])
def test_a_model_reconciles_within_the_new_facts_scope_only(tmp_path: Path, path: str) -> None:
    # The rules compare within a scope; with an LLM the extraction prompt showed the user's facts
    # of every scope, and the model's decision retired a /trips fact from a turn in /work, even
    # through a view confined to /work (which may not invalidate it directly).
    seen: list[str] = []
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=_boat_model(seen)) as mem:
        mem.remember("Has a boat.", user_id="bob", scope="/trips")
        if path == "observe":
            mem.observe([{"role": "user", "content": "I sold the boat."}], user_id="bob", scope="/work")
            mem.drain_writes()
        else:
            mem.scope("/work").remember("Sold the boat.", user_id="bob")
        assert not any("Has a boat." in prompt for prompt in seen)
        (kept,) = [r for r in mem.list(user_id="bob", include_invalid=True) if r.text == "Has a boat."]
        assert kept.state == "valid"
        assert [m.record.text for m in mem.recall("boat", user_id="bob", scope="/trips")] == ["Has a boat."]
        assert any(r.text == "Sold the boat." and r.scope == "/work" for r in mem.list(user_id="bob"))


def test_a_model_naming_a_fact_of_another_scope_retires_nothing(tmp_path: Path) -> None:
    # The model is shown /work's facts only; an answer that names a fact by another route (here: a
    # model whose alias points at /trips because the same text lives in both) changes only /work.
    seen: list[str] = []
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=_boat_model(seen)) as mem:
        mem.remember("Has a boat.", user_id="bob", scope="/trips")
        mem.remember("Has a boat.", user_id="bob", scope="/work")
        mem.remember("Sold the boat.", user_id="bob", scope="/work")
        states = {(r.scope, r.state) for r in mem.list(user_id="bob", include_invalid=True) if r.text == "Has a boat."}
        assert states == {("/trips", "valid"), ("/work", "invalid")}
