"""The memory policy: stored per namespace, persistent, changeable at run time, and enforced."""

from __future__ import annotations

import logging
from pathlib import Path

import chromadb
import pytest

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.policy import DEFAULT_TOPICS, POLICY_SETTING, MemoryPolicy, PolicyError


def test_default_is_explicit_from_the_default_source(memory: Memory) -> None:
    effective = memory.effective_policy()
    assert (effective.mode, effective.source) == ("explicit", "default")
    assert effective.policy == MemoryPolicy()
    assert effective.policy.topics == DEFAULT_TOPICS
    assert (effective.inject, effective.ttl_seconds, effective.exclude_sensitive) == ("none", 0, True)
    assert (effective.instructions, effective.knowledge) == ("", False)
    assert memory.policy.mode == "explicit"


def test_set_policy_is_sparse_and_stored(memory: Memory) -> None:
    memory.set_policy(mode="auto", instructions="record which product tier the user is on")
    changed = memory.set_policy(inject="profile")
    assert changed.source == "stored"
    assert (changed.mode, changed.inject) == ("auto", "profile")
    assert changed.instructions == "record which product tier the user is on"
    assert memory.effective_policy() == changed


def test_set_policy_with_a_whole_policy_replaces_it(memory: Memory) -> None:
    memory.set_policy(mode="auto", ttl_seconds=60, inject="profile")
    replaced = memory.set_policy(MemoryPolicy(mode="explicit"))
    assert replaced.policy == MemoryPolicy(mode="explicit")
    assert memory.set_policy("off").mode == "off"
    assert memory.set_policy({"mode": "auto", "topics": ["preferences"]}).topics == ("preferences",)


def test_policy_persists_across_restarts(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.set_policy(mode="auto", ttl_seconds=3600, topics="preferences, key details")
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        effective = mem.effective_policy()
        assert effective.source == "stored"
        assert (effective.mode, effective.ttl_seconds) == ("auto", 3600)
        assert effective.topics == ("preferences", "key_details")


def test_a_policy_given_to_the_constructor_is_stored(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        assert (mem.effective_policy().mode, mem.effective_policy().source) == ("auto", "stored")
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        assert mem.effective_policy().mode == "auto"
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy={"mode": "off", "inject": "profile"}) as mem:
        assert (mem.policy.mode, mem.policy.inject) == ("off", "profile")


def test_the_policy_attribute_can_be_assigned(memory: Memory) -> None:
    memory.policy = MemoryPolicy(mode="auto", knowledge=True)
    assert memory.effective_policy().knowledge is True
    memory.policy = "off"
    assert memory.policy.mode == "off"


def test_a_change_in_another_process_applies_at_once() -> None:
    client = chromadb.EphemeralClient()
    first = Memory(client=client, namespace="shared-agent", embedder=HashEmbedder())
    second = Memory(client=client, namespace="shared-agent", embedder=HashEmbedder())
    try:
        first.set_policy(mode="off")
        assert second.effective_policy().mode == "off"
        with pytest.raises(PolicyError):
            second.remember("Prefers tea.", user_id="alice")
        first.set_policy(mode="explicit")
        assert second.remember("Prefers tea.", user_id="alice") is not None
    finally:
        first.close()
        second.close()


def test_policies_are_per_namespace(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", namespace="a", embedder=HashEmbedder(), policy="off") as mem:
        assert mem.policy.mode == "off"
    with Memory(tmp_path / "m", namespace="b", embedder=HashEmbedder()) as mem:
        assert mem.effective_policy().source == "default"


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"mode": "sometimes"}, "mode"),
    ({"inject": "system_prompt"}, "inject"),
    ({"ttl_seconds": -5}, "ttl_seconds"),
    ({"topics": []}, "topics"),
    ({"topics": [""]}, "topics"),
    ({"colour": "blue"}, "colour"),
    ({"instructions": "x" * 5000}, "instructions"),
])
def test_bad_policy_fields_are_refused_by_name(memory: Memory, changes: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        memory.set_policy(**changes)
    assert memory.effective_policy().source == "default"  # nothing was stored


def test_bad_policy_arguments(memory: Memory, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="set_policy"):
        memory.set_policy()
    with pytest.raises(TypeError, match="policy must be"):
        memory.set_policy(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="off, auto, explicit"):
        Memory(tmp_path / "bad", embedder=HashEmbedder(), policy="on")
    with pytest.raises(TypeError, match="llm must be"):
        Memory(tmp_path / "bad", embedder=HashEmbedder(), llm=42)
    with pytest.raises(ValueError, match="llm is empty"):
        Memory(tmp_path / "bad", embedder=HashEmbedder(), llm="  ")
    # A refused argument left nothing locked: the same path opens.
    Memory(tmp_path / "bad", embedder=HashEmbedder()).close()


def test_an_unreadable_stored_policy_falls_back_to_the_default(memory: Memory,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    memory._store.put_setting(POLICY_SETTING, {"mode": "sideways"})
    with caplog.at_level(logging.WARNING, logger="mnemic.policy"):
        assert memory.effective_policy().source == "default"
    assert "unreadable stored memory policy" in caplog.text
    # Fields from a newer mnemic are ignored, not fatal.
    memory._store.put_setting(POLICY_SETTING, {"mode": "auto", "future_field": 1})
    assert memory.effective_policy().mode == "auto"


def test_off_refuses_every_explicit_write_and_names_the_setting(memory: Memory) -> None:
    memory.remember("Lives in Austin.", user_id="alice")
    memory.set_policy(mode="off")
    for write in (
        lambda: memory.remember("Prefers tea.", user_id="alice"),
        lambda: memory.remember_many(["Prefers tea."], user_id="alice"),
        lambda: memory.memorize("s1", user_id="alice"),
        lambda: memory.memorize(user_id="alice", messages=[{"role": "user", "content": "I prefer tea."}]),
    ):
        with pytest.raises(PolicyError) as caught:
            write()
        assert isinstance(caught.value, PermissionError)
        message = str(caught.value)
        assert "mode=off" in message and "explicit or auto" in message and "set_policy" in message
        assert caught.value.setting == "mode" and caught.value.namespace == "default"
    memory.drain_writes()
    assert [r.text for r in memory.list(user_id="alice")] == ["Lives in Austin."]


def test_off_still_reads_and_erases(memory: Memory) -> None:
    record = memory.remember("Lives in Austin.", user_id="alice")
    assert record is not None
    memory.set_policy(mode="off")
    assert memory.recall("Austin", user_id="alice")
    assert memory.profile("alice")
    assert memory.forget(user_id="alice") == 1


def test_explicit_and_auto_allow_remember(memory: Memory) -> None:
    assert memory.remember("Prefers tea.", user_id="alice") is not None
    memory.set_policy(mode="auto")
    assert memory.remember("Lives in Austin.", user_id="alice") is not None


def test_policy_ttl_applies_to_remember_unless_given(memory: Memory) -> None:
    memory.set_policy(ttl_seconds=3600)
    timed = memory.remember("Is in Lisbon this week.", user_id="alice")
    assert timed is not None and timed.expires_at is not None
    assert 3590 < (timed.expires_at - timed.updated_at).total_seconds() <= 3600
    forever = memory.remember("Was born in Porto.", user_id="alice", ttl_seconds=0)
    assert forever is not None and forever.expires_at is None


def test_a_policy_set_by_another_memory_after_a_reset_is_honoured(tmp_path: Path) -> None:
    # Settings were cached by the settings collection's id: reset() gives the namespace a new one,
    # and the other Memory object kept writing under the policy it had read before.
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as first, \
            Memory(tmp_path / "m", embedder=HashEmbedder()) as second:
        assert second.effective_policy().mode == "explicit"
        first.reset()
        first.set_policy(mode="off")
        assert second.effective_policy().mode == "off"
        with pytest.raises(PolicyError):
            second.remember("I like tea.", user_id="bob")
        assert first.list(user_id="bob") == []


SET_POLICY_OFF = ("import sys\nfrom mnemic import Memory, HashEmbedder\n"
                  "Memory(sys.argv[1], embedder=HashEmbedder(), policy='off').close()\n")


def test_a_policy_another_process_set_while_the_store_was_closed_is_honoured(tmp_path: Path) -> None:
    # What this process read stayed cached after it closed the store: an operator's
    # `mnemic policy set --mode off` between two runs of an agent was never seen by it.
    import subprocess
    import sys

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.remember("I like jazz.", user_id="bob")
    subprocess.run([sys.executable, "-c", SET_POLICY_OFF, str(tmp_path / "m")], check=True)
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        assert memory.effective_policy().mode == "off"
        with pytest.raises(PolicyError):
            memory.remember("I like tea.", user_id="bob")
