"""Scopes are subtrees: `/a/b` includes `/a/b/c` and never `/a/bc`; views are confined."""

from __future__ import annotations

import pytest

from mnemic import Memory
from mnemic.core.scopes import ancestors, join_scope, normalise_scope


def test_scope_paths_are_normalised_and_checked() -> None:
    assert normalise_scope(None) == "/"
    assert normalise_scope("project/alpha/") == "/project/alpha"
    assert normalise_scope("//a//b") == "/a/b"
    assert ancestors("/a/b") == ["/", "/a", "/a/b"]
    for bad in ("/a/../b", "/a/./b", "/a b", "/" + "x" * 600, "/a/\tb", "/a/b\x00"):
        with pytest.raises(ValueError):
            normalise_scope(bad)
    with pytest.raises(TypeError):
        normalise_scope(5)  # type: ignore[arg-type]
    assert join_scope("/a", "/b") == "/a/b"


def test_subtree_never_matches_a_sibling_with_the_same_prefix(memory: Memory) -> None:
    memory.remember("in b", user_id="u", scope="/a/b")
    memory.remember("in b child", user_id="u", scope="/a/b/c")
    memory.remember("in bc", user_id="u", scope="/a/bc")
    found = {m.record.text for m in memory.recall("in", user_id="u", scope="/a/b", limit=10)}
    assert found == {"in b", "in b child"}
    assert {r.text for r in memory.list(user_id="u", scope="/a/b")} == {"in b", "in b child"}
    assert memory.forget(user_id="u", scope="/a/b") == 2
    assert [r.text for r in memory.list(user_id="u")] == ["in bc"]


def test_scope_view_is_relative_and_confined(memory: Memory) -> None:
    memory.remember("outside", user_id="u", scope="/other")
    view = memory.scope("/project/alpha")
    record = view.remember("inside", user_id="u", scope="/notes")
    assert record is not None and record.scope == "/project/alpha/notes"
    assert [m.record.text for m in view.recall("inside outside", user_id="u")] == ["inside"]
    outsider = memory.list(user_id="u", scope="/other")[0]
    with pytest.raises(KeyError):
        view.get(outsider.id)
    with pytest.raises(KeyError):
        view.delete(outsider.id)
    with pytest.raises(ValueError):
        view.remember("escape", user_id="u", scope="/../other")
    assert view.forget(user_id="u") == 1
    assert [r.text for r in memory.list(user_id="u")] == ["outside"]


def test_read_only_slice_refuses_every_write(memory: Memory) -> None:
    kept = memory.remember("shared decision", user_id="u", scope="/team/a")
    memory.remember("other team", user_id="u", scope="/team/b")
    memory.remember("private notes", user_id="u", scope="/me")
    assert kept is not None
    view = memory.slice(["/team/a", "/team/b"])
    assert {m.record.text for m in view.recall("team decision", user_id="u")} <= {"shared decision", "other team"}
    assert "private notes" not in {r.text for r in view.list(user_id="u")}
    writes = [
        lambda: view.remember("x", user_id="u"),
        lambda: view.remember_many(["x"], user_id="u"),
        lambda: view.update(kept.id, text="y"),
        lambda: view.invalidate(kept.id, reason="r"),
        lambda: view.confirm(kept.id),
        lambda: view.delete(kept.id),
        lambda: view.forget(user_id="u"),
        view.reset,
    ]
    for write in writes:
        with pytest.raises(PermissionError, match="read-only"):
            write()
    assert len(memory.list(user_id="u")) == 3


def test_writable_slice_writes_into_its_first_path(memory: Memory) -> None:
    view = memory.slice(["/x", "/y"], read_only=False)
    record = view.remember("note", user_id="u")
    assert record is not None and record.scope == "/x"
    view.reset()
    assert memory.list(user_id="u") == []
