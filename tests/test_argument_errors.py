"""A wrong argument is named in the error, with what to pass instead, and changes nothing: these
calls used to fail inside mnemic with Python's own words ("'int' object is not iterable",
"'<' not supported between instances of 'float' and 'NoneType'") or with advice for another call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.remember("I prefer tea over coffee.", user_id="alice")
        yield mem


CASES: list[tuple[str, Callable[[Memory], Any], type[Exception], str]] = [
    ("min_score None", lambda m: m.recall("tea", user_id="alice", min_score=None), TypeError, "min_score must be"),
    ("min_score text", lambda m: m.recall("tea", user_id="alice", min_score="0.5"), TypeError, "min_score must be"),
    ("min_score nan", lambda m: m.recall("tea", user_id="alice", min_score=float("nan")), ValueError, "finite"),
    ("recall scope int", lambda m: m.recall("tea", user_id="alice", scope=1), TypeError, "must be a path"),
    ("recall scope [int]", lambda m: m.recall("tea", user_id="alice", scope=["/a", 2]), TypeError, "must be a path"),
    ("list scope int", lambda m: m.list(scope=1), TypeError, "must be a path"),
    ("remember_many None", lambda m: m.remember_many(None, user_id="alice"), TypeError, "list of statements"),
    ("slice int", lambda m: m.slice(1), TypeError, "must be a path"),
    ("empty query", lambda m: m.recall("  ", user_id="alice"), ValueError, "question or keywords"),
    ("empty knowledge query", lambda m: m.knowledge.search(""), ValueError, "question or keywords"),
    # Found by an attack: each answered silently with nothing, or in Python's own words.
    ("knowledge min_score nan", lambda m: m.knowledge.search("tea", min_score=float("nan")), ValueError, "finite"),
    ("knowledge list source int", lambda m: m.knowledge.list(source=5), TypeError, "source must be a string"),
    ("remember_many unknown option", lambda m: m.remember_many(["Likes green tea."], user_id="alice", colour="red"),
     TypeError, r"remember_many\(\) got unknown option\(s\) colour"),
    ("read-only view knowledge add", lambda m: m.slice("/a", read_only=True).knowledge.add("Refunds take 5 days."),
     PermissionError, "read-only: knowledge.add"),
    ("read-only view knowledge clear", lambda m: m.slice("/a", read_only=True).knowledge.clear(confirm=True),
     PermissionError, "read-only: knowledge.clear"),
    ("store search limit text", lambda m: _store(m).search(("memories", "alice"), limit="3"), TypeError,
     "limit must be an integer"),
    ("store search limit negative", lambda m: _store(m).search(("memories", "alice"), limit=-1), ValueError,
     "limit must be 0 or more"),
    ("policy ttl infinite", lambda m: m.set_policy(ttl_seconds=float("inf")), ValueError, "ttl_seconds"),
    ("policy ttl past 100 years", lambda m: m.set_policy(ttl_seconds=1e12), ValueError, "ttl_seconds"),
    ("store put index int", lambda m: _store(m).put(("memories", "alice"), "k", {"text": "x"}, index=5), TypeError,
     "index must be False, None or a list"),
    # Past the year 9999 or before the year 1 once in UTC: accepted, such a record could not be read
    # back, and its user could no longer be recalled, listed or erased.
    ("created_at max", lambda m: m.remember(
        "Tea.", user_id="alice", created_at=datetime.max.replace(tzinfo=timezone.utc)),
     ValueError, "created_at=.* is out of range: give a moment from 1900"),
    ("created_at past 9999 in UTC", lambda m: m.remember(
        "Tea.", user_id="alice", created_at=datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-2)))),
     ValueError, "created_at=.* is out of range"),
    ("created_at before year 1 in UTC", lambda m: m.remember_many(
        ["Tea."], user_id="alice", created_at=datetime(1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))),
     ValueError, "created_at=.* is out of range"),
    ("created_at text", lambda m: m.remember("Tea.", user_id="alice", created_at="yesterday"),
     TypeError, "created_at must be a datetime or an ISO 8601 string"),
    # Flags any truthy value turned on ("no" listed invalidated facts) and a source of any type.
    ("list include_invalid text", lambda m: m.list(user_id="alice", include_invalid="no"), TypeError,
     "include_invalid must be True or False, got str"),
    ("list include_pending int", lambda m: m.list(include_pending=0), TypeError,
     "include_pending must be True or False"),
    ("list include_expired None", lambda m: m.list(include_expired=None), TypeError,
     "include_expired must be True or False"),
    ("slice read_only empty", lambda m: m.slice("/a", read_only=""), TypeError, "read_only must be True or False"),
    ("lessons background text", lambda m: _lessons(m).learn(["Cite a source."], user_id="alice",
                                                             place=_place(), background="no"),
     TypeError, "background must be True or False"),
    ("recall source int", lambda m: m.recall("tea", user_id="alice", source=5), TypeError, "source must be a string"),
    ("profile source int", lambda m: m.profile("alice", source=5), TypeError, "source must be a string"),
    ("invalidate replaced by itself", lambda m: m.invalidate(
        (own := m.list(user_id="alice")[0].id), reason="moved", replaced_by=own),
     ValueError, "cannot be replaced by itself"),
]


def _lessons(memory: Memory) -> Any:
    from mnemic.core.lessons import LessonStore

    return LessonStore(memory)


def _place() -> Any:
    from mnemic.core.lessons import LessonPlace

    return LessonPlace("writer", "draft")


def _store(memory: Memory) -> Any:
    from mnemic.integrations.langgraph import MnemicStore

    return MnemicStore(memory)


@pytest.mark.parametrize(("call", "error", "says"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_wrong_argument_is_named_and_nothing_changes(memory: Memory, call: Callable[[Memory], Any],
                                                         error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        call(memory)
    assert [r.text for r in memory.list(user_id="alice")] == ["I prefer tea over coffee."]


SETTINGS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"weights": "fast"}, TypeError, "weights must be a RecallWeights"),
    ({"weights": {"recency": -1}}, ValueError, "bad weights: recency"),
    ({"weights": {"speed": 1}}, ValueError, "weights has unknown field.*speed"),
    ({"max_text_chars": "big"}, TypeError, "max_text_chars must be a whole number"),
    ({"max_text_chars": 0}, ValueError, "max_text_chars=0 would refuse every statement"),
    ({"max_text_chars": True}, TypeError, "max_text_chars must be a whole number"),
    ({"lexical_path": 5}, TypeError, "lexical_path must be a path"),
    ({"lexical_path": "index.sqlite3"}, ValueError, "lexical_path is for a Chroma server"),
]


@pytest.mark.parametrize(("setting", "error", "says"), SETTINGS, ids=[repr(case[0]) for case in SETTINGS])
def test_a_setting_memory_cannot_use_is_refused_when_it_is_opened(tmp_path: Path, setting: dict[str, Any],
                                                                  error: type[Exception], says: str) -> None:
    # These were accepted, and failed later in another call, in Python's words (or refused every write).
    with pytest.raises(error, match=says):
        Memory(tmp_path / "m", embedder=HashEmbedder(), **setting)
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:  # nothing was left locked
        assert memory.list() == []


def test_a_wrong_store_location_is_named(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="path must be a path"):
        Memory(123, embedder=HashEmbedder())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="client must be a Chroma client"):
        Memory(client=object(), embedder=HashEmbedder())


def test_weights_may_be_given_as_a_dict_of_their_fields(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), weights={"recency": 0.2}) as memory:
        assert memory.weights.recency == 0.2
        assert memory.weights.semantic == 0.5  # the others keep their tuned value
