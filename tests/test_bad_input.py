"""Bad input gets a clear error naming the problem, and nothing stored changes."""

from __future__ import annotations

from typing import Any

import pytest

from mnemic import Memory


def _snapshot(memory: Memory) -> list[tuple[str, str, str, int]]:
    return sorted((r.id, r.text, r.state, r.version)
                  for r in memory.list(include_invalid=True, include_expired=True, limit=100_000))


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"text": ""}, ValueError, "empty"),
        ({"text": "   \n"}, ValueError, "empty"),
        ({"text": None}, TypeError, "text must be a string"),
        ({"text": 12}, TypeError, "text must be a string"),
        ({"text": "x" * 20_000}, ValueError, "limit"),
        ({"scope": "/a/../b"}, ValueError, "relative"),
        ({"scope": 3}, TypeError, "scope"),
        ({"categories": [1]}, TypeError, "categories"),
        ({"categories": [""]}, ValueError, "empty"),
        ({"importance": "high"}, TypeError, "importance"),
        ({"importance": 1.5}, ValueError, "between 0 and 1"),
        ({"author": "martian"}, ValueError, "author must be one of"),
        ({"source_kind": "rumour"}, ValueError, "source_kind must be one of"),
        ({"kind": "thought"}, ValueError, "kind must be one of"),
        ({"turn": "3"}, TypeError, "turn"),
        ({"private": "yes"}, TypeError, "private"),
        ({"metadata": {"nested": {"a": 1}}}, TypeError, "metadata"),
        ({"metadata": {"$bad": 1}}, ValueError, "metadata key"),
        ({"metadata": []}, TypeError, "metadata must be a dict"),
        ({"ttl_seconds": -1}, ValueError, "ttl_seconds"),
        ({"user_id": ""}, ValueError, "user_id"),
    ],
)
def test_remember_rejects_bad_input_without_side_effects(
        memory: Memory, kwargs: dict[str, Any], error: type[Exception], words: str) -> None:
    memory.remember("existing fact", user_id="u")
    before = _snapshot(memory)
    call: dict[str, Any] = {"text": "a valid fact", "user_id": "u", **kwargs}
    text = call.pop("text")
    with pytest.raises(error, match=words):
        memory.remember(text, **call)
    with pytest.raises(error, match=words):
        memory.remember_many([text], **call)
    memory.drain_writes()
    assert _snapshot(memory) == before


def test_recall_rejects_bad_input(memory: Memory) -> None:
    with pytest.raises(ValueError, match="query"):
        memory.recall("", user_id="u")
    with pytest.raises(ValueError, match="limit"):
        memory.recall("x", user_id="u", limit=0)
    with pytest.raises(TypeError, match="limit"):
        memory.recall("x", user_id="u", limit="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kinds"):
        memory.recall("x", user_id="u", kinds=["gossip"])
    with pytest.raises(ValueError):
        memory.recall("x", user_id="u", scope="/../../etc")


def test_updates_with_bad_input_change_nothing(memory: Memory) -> None:
    record = memory.remember("Pia sings.", user_id="u")
    assert record is not None
    before = _snapshot(memory)
    with pytest.raises(ValueError, match="at least one field"):
        memory.update(record.id)
    with pytest.raises(ValueError, match="empty"):
        memory.update(record.id, text="")
    with pytest.raises(ValueError, match="reason"):
        memory.invalidate(record.id, reason="")
    with pytest.raises(TypeError):
        memory.forget(ids=[3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="older_than"):
        memory.forget(older_than="yesterday")
    assert _snapshot(memory) == before


def test_path_and_client_together_are_refused(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="either path"):
        Memory(tmp_path, client=object())


def test_closed_memory_says_so(memory: Memory) -> None:
    run = memory.runs.begin(group="crew", user_id="u")
    memory.close()
    with pytest.raises(RuntimeError, match="closed"):
        memory.recall("x", user_id="u")
    # The run log and repair answered with Chroma's "'RustBindingsAPI' object has no attribute".
    for call in (memory.repair, memory.runs.runs, lambda: memory.runs.get(run.run_id),
                 lambda: memory.runs.begin(group="crew", user_id="u"), lambda: memory.runs.erase_user("u")):
        with pytest.raises(RuntimeError, match="this Memory is closed"):
            call()


def _nested(depth: int) -> dict[str, Any]:
    top = inner = {}  # type: ignore[var-annotated]
    for _ in range(depth):
        inner["k"] = {}
        inner = inner["k"]
    return top


@pytest.mark.parametrize("depth", [990, 5000])
def test_a_text_holding_json_nested_past_pythons_limit_is_stored_as_text(memory: Memory, depth: int) -> None:
    # The secret screen reads JSON written in a text as data: nested ~1,000 deep, decoding it or
    # walking it raised RecursionError out of remember().
    text = "cfg " + '{"a":' * depth + "1" + "}" * depth
    record = memory.remember(text[:15000], user_id="u")
    assert memory.get(record.id).text == text[:15000]


def test_structured_data_nested_too_deeply_is_refused_by_name_and_nothing_is_kept(memory: Memory) -> None:
    from mnemic import NestedTooDeeplyError

    pytest.importorskip("langgraph")
    from mnemic.integrations.langgraph import MnemicStore

    store = MnemicStore(memory)
    with pytest.raises(NestedTooDeeplyError, match=r"'deep'.*nested more than 100 levels.*Flatten it"):
        store.put(("memories", "u"), "deep", _nested(990))
    assert store.get(("memories", "u"), "deep") is None
    with pytest.raises(NestedTooDeeplyError):
        memory.runs.begin(group="crew", user_id="u", inputs={"payload": _nested(400)})
    assert memory.runs.runs(user_id="u") == []
    store.put(("memories", "u"), "shallow", _nested(50))  # what any agent keeps still fits
    assert store.get(("memories", "u"), "shallow") is not None


def test_data_that_holds_itself_or_nests_sets_is_refused_at_once(memory: Memory) -> None:
    # The depth check walked a cycle with two branches level by level, doubling each level until
    # memory ran out; and counted no set, so a deep frozenset still raised RecursionError.
    from mnemic import NestedTooDeeplyError

    cyclic: dict[str, Any] = {}
    cyclic["a"] = cyclic
    cyclic["b"] = cyclic
    deep_set: frozenset[Any] = frozenset()
    for _ in range(3000):
        deep_set = frozenset([deep_set])
    for inputs in ({"payload": cyclic}, {"payload": deep_set}):
        with pytest.raises(NestedTooDeeplyError, match="holds itself"):
            memory.runs.begin(group="crew", user_id="u", inputs=inputs)
    assert memory.runs.runs(user_id="u") == []
