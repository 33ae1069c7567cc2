"""One user's memory never reaches another user, through any read path."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder

SECRET_FACT = "Alice's therapist appointment is on Tuesday at Harbor Clinic."


@pytest.fixture
def two_users(memory: Memory) -> Memory:
    memory.remember(SECRET_FACT, user_id="alice", scope="/health", categories=["calendar"])
    memory.remember("Alice's favourite colour is teal.", user_id="alice")
    memory.remember("Bob plays the cello.", user_id="bob")
    return memory


@pytest.mark.parametrize("query", [SECRET_FACT, "therapist appointment Tuesday", "Alice", "Harbor Clinic",
                                   "colour", "*", '" OR 1=1 --', "alice NEAR therapist"])
def test_recall_never_returns_another_users_fact(two_users: Memory, query: str) -> None:
    for scope in (None, "/", "/health"):
        for categories in (None, ["calendar"]):
            matches = two_users.recall(query, user_id="bob", scope=scope, categories=categories, limit=50)
            assert all(m.record.user_id == "bob" for m in matches)
            assert SECRET_FACT not in [m.record.text for m in matches]


def test_list_for_a_user_only_lists_that_user(two_users: Memory) -> None:
    assert {r.user_id for r in two_users.list(user_id="bob")} == {"bob"}
    assert {r.text for r in two_users.list(user_id="bob", scope="/health")} == set()


def test_user_ids_that_look_alike_are_different_users(memory: Memory) -> None:
    memory.remember("belongs to user 1", user_id="user1")
    for other in ("user10", "User1", "user1/..", "user", "1"):
        assert memory.recall("belongs to user", user_id=other) == []
        assert memory.list(user_id=other) == []


def test_views_keep_users_apart(two_users: Memory) -> None:
    view = two_users.scope("/health")
    assert view.recall("therapist", user_id="bob") == []
    assert view.recall("therapist", user_id="alice")


def test_forgetting_one_user_leaves_the_other(two_users: Memory) -> None:
    assert two_users.forget(user_id="alice") == 2
    assert two_users.list(user_id="alice") == []
    assert [r.text for r in two_users.list(user_id="bob")] == ["Bob plays the cello."]


def test_anonymous_callers_get_a_session_bound_id(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as first:
        record = first.remember("anonymous visitor likes jazz", user_id=None)
        assert record is not None
        assert record.user_id == first.anonymous_user_id
        assert record.user_id.startswith("anonymous:")
        assert first.recall("jazz", user_id=None)
    with Memory(store_path, embedder=HashEmbedder()) as second:
        assert second.anonymous_user_id != record.user_id
        assert second.recall("jazz", user_id=None) == []


def test_user_id_must_be_a_string(memory: Memory) -> None:
    with pytest.raises(TypeError, match="user_id"):
        memory.remember("x", user_id=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="user_id"):
        memory.recall("x", user_id="   ")


def test_a_namespace_that_prefixes_another_never_sees_its_users(store_path: Path) -> None:
    """Namespace "a" is a textual prefix of namespace "a-m"'s collection names."""
    with Memory(store_path, namespace="a", embedder=HashEmbedder()) as short, \
            Memory(store_path, namespace="a-m", embedder=HashEmbedder()) as long:
        record = long.remember("lives only in a-m", user_id="zed")
        assert record is not None
        assert short.users() == []
        assert short.list() == []
        with pytest.raises(KeyError):
            short.get(record.id)
        short.reset()
        assert long.get(record.id).text == "lives only in a-m"
        assert long.users() == ["zed"]
