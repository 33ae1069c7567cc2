"""A contract for LangGraph `BaseStore` implementations, run against any store.

LangGraph ships no conformance suite for stores; its own store tests (copied, with only the store
construction changed, into tests/langgraph_store_suite/) state how LangGraph's stores behave, mostly
through the sync API. This contract adds what a graph may rely on beyond them: what `BaseStore`'s
documentation promises and any persistent store must do (a put keeps the item's creation time, a
value read back is not the caller's object, a read in a batch sees that batch's writes, ...), each
through the sync API and again through the async API. What LangGraph's tests already check is not
repeated here.

Use it by subclassing `StoreContract` in a test module and giving a `make_store` fixture: a
factory `make_store(ttl=None) -> BaseStore`, with semantic search over the "text" field (the
same embedder for every store, so rankings compare). `known_differences` maps a test name to the
reason a store fails it: such tests are marked xfail(strict), so a difference stays visible in
every run, and fixing it (or breaking something else) shows up too.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    PutOp,
    SearchItem,
)

MakeStore = Callable[..., BaseStore]

DOCS = {
    "pizza": "Alice loves pizza with extra cheese",
    "austin": "Alice lives in Austin, Texas",
    "boat": "Alice owns a Mastercraft boat",
    "tea": "Alice drinks green tea every morning",
}


class Api:
    """The store's public API, called synchronously or through its async twins."""

    def __init__(self, store: BaseStore, mode: str) -> None:
        self.store = store
        self.mode = mode

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.mode == "sync":
            return getattr(self.store, name)(*args, **kwargs)
        return asyncio.run(getattr(self.store, "a" + name)(*args, **kwargs))

    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any], index: Any = None,
            **kwargs: Any) -> None:
        self._call("put", namespace, key, value, index, **kwargs)

    def get(self, namespace: tuple[str, ...], key: str, **kwargs: Any) -> Item | None:
        return self._call("get", namespace, key, **kwargs)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        self._call("delete", namespace, key)

    def search(self, prefix: tuple[str, ...], **kwargs: Any) -> list[SearchItem]:
        return self._call("search", prefix, **kwargs)

    def list_namespaces(self, **kwargs: Any) -> list[tuple[str, ...]]:
        return self._call("list_namespaces", **kwargs)

    def batch(self, ops: list[Any]) -> list[Any]:
        if self.mode == "sync":
            return self.store.batch(ops)
        return asyncio.run(self.store.abatch(ops))


def keys(items: list[SearchItem] | list[Item]) -> list[str]:
    return [item.key for item in items]


class StoreContract:
    known_differences: ClassVar[dict[str, str]] = {}

    @pytest.fixture
    def make_store(self) -> MakeStore:
        raise NotImplementedError("a StoreContract subclass gives a make_store fixture")

    @pytest.fixture(params=["sync", "async"])
    def api(self, request: pytest.FixtureRequest, make_store: MakeStore) -> Api:
        return Api(make_store(), request.param)

    @pytest.fixture(autouse=True)
    def _known_difference(self, request: pytest.FixtureRequest) -> None:
        reason = self.known_differences.get(request.node.originalname)
        if reason is not None:
            request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))

    def _docs(self, api: Api, namespace: tuple[str, ...] = ("memories", "alice")) -> None:
        for key, text in DOCS.items():
            api.put(namespace, key, {"text": text, "key": key})

    # -- put / get / delete -------------------------------------------------------------------

    def test_item_carries_namespace_key_and_aware_timestamps(self, api: Api) -> None:
        before = datetime.now().astimezone()
        api.put(("memories", "alice", "prefs"), "theme", {"text": "dark"})
        item = api.get(("memories", "alice", "prefs"), "theme")
        assert item is not None
        assert item.namespace == ("memories", "alice", "prefs")
        assert item.key == "theme"
        assert item.created_at.tzinfo is not None and item.updated_at.tzinfo is not None
        assert item.created_at >= before.replace(microsecond=0)
        assert item.updated_at >= item.created_at

    def test_put_keeps_created_at_and_moves_updated_at(self, api: Api) -> None:
        api.put(("memories", "alice"), "k", {"text": "old"})
        first = api.get(("memories", "alice"), "k")
        time.sleep(0.01)
        api.put(("memories", "alice"), "k", {"text": "new"})
        second = api.get(("memories", "alice"), "k")
        assert first is not None and second is not None
        assert second.created_at == first.created_at
        assert second.updated_at > first.updated_at

    def test_delete_of_a_missing_key_does_nothing(self, api: Api) -> None:
        api.delete(("memories", "alice"), "never-there")
        api.put(("memories", "alice"), "k", {"text": "x"})
        api.delete(("memories", "alice"), "never-there")
        assert api.get(("memories", "alice"), "k") is not None

    def test_a_deleted_key_can_be_written_again(self, api: Api) -> None:
        api.put(("memories", "alice"), "k", {"text": "first"})
        api.delete(("memories", "alice"), "k")
        api.put(("memories", "alice"), "k", {"text": "second"})
        item = api.get(("memories", "alice"), "k")
        assert item is not None and item.value == {"text": "second"}

    def test_the_same_key_in_two_namespaces_is_two_items(self, api: Api) -> None:
        api.put(("memories", "alice"), "k", {"text": "alice's"})
        api.put(("memories", "bob"), "k", {"text": "bob's"})
        api.put(("memories",), "k", {"text": "shared"})
        alice, bob, shared = (api.get(ns, "k") for ns in [("memories", "alice"), ("memories", "bob"), ("memories",)])
        assert alice is not None and alice.value["text"] == "alice's"
        assert bob is not None and bob.value["text"] == "bob's"
        assert shared is not None and shared.value["text"] == "shared"
        api.delete(("memories", "alice"), "k")
        assert api.get(("memories", "bob"), "k") is not None

    def test_values_round_trip_json_types(self, api: Api) -> None:
        value = {"text": "ünïcode ✓ 日本", "int": 7, "big": 2**60, "float": 0.1, "neg": -3.5, "yes": True,
                 "no": False, "none": None, "list": [1, "two", {"three": 3}], "nested": {"a": {"b": [True]}},
                 "empty": {}, "empty_list": []}
        api.put(("memories", "alice"), "k", value)
        item = api.get(("memories", "alice"), "k")
        assert item is not None
        assert item.value == value
        assert type(item.value["int"]) is int and type(item.value["float"]) is float

    def test_an_empty_value_is_an_item(self, api: Api) -> None:
        api.put(("memories", "alice"), "k", {})
        item = api.get(("memories", "alice"), "k")
        assert item is not None and item.value == {}

    def test_stored_values_do_not_alias_the_callers_objects(self, api: Api) -> None:
        value: dict[str, Any] = {"text": "x", "tags": ["a"]}
        api.put(("memories", "alice"), "k", value)
        value["tags"].append("mutated after put")
        got = api.get(("memories", "alice"), "k")
        assert got is not None
        got.value["tags"].append("mutated after get")
        again = api.get(("memories", "alice"), "k")
        assert again is not None and again.value["tags"] == ["a"]

    def test_keys_and_labels_may_hold_any_characters(self, api: Api) -> None:
        namespace = ("user data", "alice@example-com", "a/b", "ü:+-", "日本", "%41")
        odd_keys = ["with space", "slash/key", "dots.in.key", "ü", "", "x" * 300]
        for n, key in enumerate(odd_keys):
            api.put(namespace, key, {"text": f"value {n}"})
        for n, key in enumerate(odd_keys):
            item = api.get(namespace, key)
            assert item is not None and item.value == {"text": f"value {n}"} and item.key == key
        assert sorted(keys(api.search(namespace, limit=50))) == sorted(odd_keys)
        assert namespace in api.list_namespaces()
        assert api.search(("user data", "alice@example-com", "a"), limit=50) == []

    def test_invalid_namespaces_are_refused(self, api: Api) -> None:
        for namespace in [(), ("a.b",), ("ok", ""), ("langgraph", "x")]:
            with pytest.raises(InvalidNamespaceError):
                api.put(namespace, "k", {"text": "x"})
        with pytest.raises(InvalidNamespaceError):
            api.get(("a.b",), "k")
        with pytest.raises(InvalidNamespaceError):
            api.search(("a.b",))
        with pytest.raises(InvalidNamespaceError):
            api.list_namespaces(prefix=("a.b",))

    def test_batch_validates_namespaces_too(self, api: Api) -> None:
        with pytest.raises(InvalidNamespaceError):
            api.batch([PutOp(("a.b",), "k", {"text": "x"})])
        with pytest.raises(InvalidNamespaceError):
            api.batch([GetOp(("ok", ""), "k")])

    def test_concurrent_puts_are_all_kept(self, api: Api) -> None:
        def writer(worker: int) -> None:
            for n in range(5):
                api.store.put(("memories", f"user{worker}"), f"k{n}", {"text": f"{worker}-{n}"})

        async def writers() -> None:
            await asyncio.gather(*(api.store.aput(("memories", f"user{w}"), f"k{n}", {"text": f"{w}-{n}"})
                                   for w in range(4) for n in range(5)))

        if api.mode == "async":
            asyncio.run(writers())
        else:
            threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert len(api.search(("memories",), limit=100)) == 20

    # -- search -------------------------------------------------------------------------------

    def test_search_covers_the_prefix_subtree_only(self, api: Api) -> None:
        api.put(("memories", "alice"), "a", {"text": "1"})
        api.put(("memories", "alice", "prefs"), "b", {"text": "2"})
        api.put(("memories", "bob"), "c", {"text": "3"})
        api.put(("other", "alice"), "d", {"text": "4"})
        assert sorted(keys(api.search(("memories", "alice")))) == ["a", "b"]
        assert sorted(keys(api.search(("memories",)))) == ["a", "b", "c"]
        assert keys(api.search(("memories", "alice", "prefs"))) == ["b"]
        assert api.search(("memories", "carol")) == []

    def test_search_results_carry_namespace_and_value(self, api: Api) -> None:
        api.put(("memories", "alice"), "a", {"text": "1", "n": 1})
        (item,) = api.search(("memories",))
        assert isinstance(item, SearchItem)
        assert item.namespace == ("memories", "alice") and item.value == {"text": "1", "n": 1}

    def test_limit_and_offset_page_through_every_item(self, api: Api) -> None:
        for n in range(13):
            api.put(("memories", "alice"), f"k{n:02}", {"text": f"item {n}"})
        assert len(api.search(("memories", "alice"))) == 10  # the default limit
        pages = [keys(api.search(("memories", "alice"), limit=5, offset=offset)) for offset in (0, 5, 10)]
        assert [len(p) for p in pages] == [5, 5, 3]
        flat = [k for page in pages for k in page]
        assert sorted(flat) == [f"k{n:02}" for n in range(13)]
        assert api.search(("memories", "alice"), limit=5, offset=20) == []

    def test_filter_matches_exact_values(self, api: Api) -> None:
        api.put(("memories", "alice"), "a", {"text": "1", "kind": "pref", "n": 1})
        api.put(("memories", "alice"), "b", {"text": "2", "kind": "fact", "n": 2})
        api.put(("memories", "alice"), "c", {"text": "3", "kind": "pref", "n": 3})
        assert sorted(keys(api.search(("memories",), filter={"kind": "pref"}))) == ["a", "c"]
        assert keys(api.search(("memories",), filter={"kind": "pref", "n": 3})) == ["c"]
        assert api.search(("memories",), filter={"kind": "nope"}) == []
        assert api.search(("memories",), filter={"missing": "x"}) == []

    def test_a_comparison_on_a_missing_field_does_not_match(self, api: Api) -> None:
        api.put(("scores", "alice"), "with", {"text": "1", "score": 5})
        api.put(("scores", "alice"), "without", {"text": "2"})
        assert keys(api.search(("scores",), filter={"score": {"$gt": 1}})) == ["with"]

    def test_filter_on_nested_values_and_lists(self, api: Api) -> None:
        api.put(("memories", "alice"), "a", {"text": "1", "meta": {"lang": "en", "v": 1}, "tags": ["x", "y"]})
        api.put(("memories", "alice"), "b", {"text": "2", "meta": {"lang": "de", "v": 1}, "tags": ["x"]})
        assert keys(api.search(("memories",), filter={"meta": {"lang": "en"}})) == ["a"]
        assert keys(api.search(("memories",), filter={"tags": ["x"]})) == ["b"]
        assert keys(api.search(("memories",), filter={"tags": ["x", "y"]})) == ["a"]

    def test_search_without_a_query_has_no_scores(self, api: Api) -> None:
        self._docs(api)
        assert all(item.score is None for item in api.search(("memories",)))

    def test_a_query_ranks_the_closest_item_first(self, api: Api) -> None:
        self._docs(api)
        assert api.search(("memories", "alice"), query="where does alice live? Austin Texas")[0].key == "austin"
        assert api.search(("memories",), query="pizza with cheese")[0].key == "pizza"

    def test_query_scores_are_given_and_descending(self, api: Api) -> None:
        self._docs(api)
        results = api.search(("memories",), query="green tea in the morning")
        scores = [item.score for item in results]
        assert all(isinstance(s, float) for s in scores)
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]

    def test_a_query_returns_up_to_limit_items_even_when_weak(self, api: Api) -> None:
        self._docs(api)
        assert len(api.search(("memories",), query="zebra quantum")) == len(DOCS)
        assert len(api.search(("memories",), query="zebra quantum", limit=2)) == 2

    def test_a_query_combines_with_a_filter_and_offset(self, api: Api) -> None:
        self._docs(api)
        api.put(("memories", "bob"), "pizza", {"text": "Bob loves pizza with extra cheese", "key": "pizza"})
        results = api.search(("memories",), query="pizza with extra cheese", filter={"key": "pizza"})
        assert sorted(item.namespace[1] for item in results) == ["alice", "bob"]
        first = api.search(("memories", "alice"), query="pizza with cheese", limit=1)
        second = api.search(("memories", "alice"), query="pizza with cheese", limit=1, offset=1)
        assert first[0].key == "pizza" and second and second[0].key != "pizza"

    def test_unindexed_items_are_found_but_not_ranked(self, api: Api) -> None:
        self._docs(api)
        api.put(("memories", "alice"), "raw", {"text": "pizza pizza pizza"}, index=False)
        results = api.search(("memories",), query="pizza", limit=10)
        assert results[0].key == "pizza"
        assert results[-1].key == "raw" and results[-1].score is None
        assert api.get(("memories", "alice"), "raw") is not None

    def test_a_put_can_choose_its_index_fields(self, api: Api) -> None:
        api.put(("memories", "alice"), "a", {"text": "nothing relevant", "title": "sailing the Mastercraft boat"},
                index=["title"])
        api.put(("memories", "alice"), "b", {"text": "about green tea", "title": "x"})
        assert api.search(("memories",), query="sailing boat")[0].key == "a"

    def test_a_new_value_is_found_by_its_new_text_only(self, api: Api) -> None:
        self._docs(api)
        old_text = DOCS["boat"]

        def boat_score() -> float:
            (hit,) = [i for i in api.search(("memories",), query=old_text) if i.key == "boat"]
            assert hit.score is not None
            return hit.score

        before = boat_score()
        api.put(("memories", "alice"), "boat", {"text": "Sold it last spring and bought a tandem bicycle"})
        assert api.search(("memories",), query="tandem bicycle")[0].key == "boat"
        assert boat_score() < before

    # -- namespaces ---------------------------------------------------------------------------

    def _tree(self, api: Api) -> None:
        for namespace in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
                          ("a", "c", "f"), ("x", "y")]:
            api.put(namespace, "k", {"text": "/".join(namespace)})

    def test_list_namespaces_lists_every_namespace_sorted(self, api: Api) -> None:
        self._tree(api)
        assert api.list_namespaces() == [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"),
                                         ("a", "b", "f"), ("a", "c", "f"), ("x", "y")]

    def test_a_namespace_emptied_by_deletes_is_not_listed(self, api: Api) -> None:
        api.put(("memories", "alice"), "k", {"text": "x"})
        api.put(("memories", "bob"), "k", {"text": "y"})
        api.delete(("memories", "alice"), "k")
        assert api.list_namespaces() == [("memories", "bob")]

    # -- batch --------------------------------------------------------------------------------

    def test_a_read_in_a_batch_sees_earlier_writes_of_that_batch(self, api: Api) -> None:
        results = api.batch([
            PutOp(("memories", "alice"), "k", {"text": "x"}),
            GetOp(("memories", "alice"), "k"),
            PutOp(("memories", "alice"), "k", None),
            GetOp(("memories", "alice"), "k"),
        ])
        assert isinstance(results[1], Item) and results[3] is None

    # -- ttl ----------------------------------------------------------------------------------
    # TTLs are minutes; these use seconds-long ones and real time, in the sync API only.

    def test_ttl_is_supported_or_refused(self, make_store: MakeStore) -> None:
        store = make_store()
        if store.supports_ttl:
            store.put(("memories", "alice"), "k", {"text": "x"}, ttl=5)
            assert store.get(("memories", "alice"), "k") is not None
        else:
            with pytest.raises(NotImplementedError):
                store.put(("memories", "alice"), "k", {"text": "x"}, ttl=5)

    def _ttl_store(self, make_store: MakeStore, **kwargs: Any) -> BaseStore:
        store = make_store(**kwargs)
        if not store.supports_ttl:
            pytest.skip(f"{type(store).__name__} does not support TTLs")
        return store

    def test_an_item_expires_after_its_ttl(self, make_store: MakeStore) -> None:
        store = self._ttl_store(make_store)
        store.put(("memories", "alice"), "short", {"text": "x"}, ttl=1 / 60)
        store.put(("memories", "alice"), "forever", {"text": "y"}, ttl=None)
        assert store.get(("memories", "alice"), "short") is not None
        time.sleep(1.4)
        assert store.get(("memories", "alice"), "short") is None
        assert keys(store.search(("memories",))) == ["forever"]

    def test_reading_an_item_restarts_its_ttl(self, make_store: MakeStore) -> None:
        store = self._ttl_store(make_store)
        store.put(("memories", "alice"), "got", {"text": "x"}, ttl=2 / 60)
        store.put(("memories", "alice"), "found", {"text": "y"}, ttl=2 / 60)
        time.sleep(1.2)
        assert store.get(("memories", "alice"), "got") is not None
        assert keys(store.search(("memories", "alice"), filter={"text": "y"})) == ["found"]
        time.sleep(1.2)  # past the first lifetime, within the restarted one
        assert store.get(("memories", "alice"), "got", refresh_ttl=False) is not None
        assert keys(store.search(("memories", "alice"), filter={"text": "y"}, refresh_ttl=False)) == ["found"]

    def test_a_read_without_refresh_leaves_the_ttl(self, make_store: MakeStore) -> None:
        store = self._ttl_store(make_store)
        store.put(("memories", "alice"), "k", {"text": "x"}, ttl=2 / 60)
        time.sleep(1.2)
        assert store.get(("memories", "alice"), "k", refresh_ttl=False) is not None
        time.sleep(1.2)
        assert store.get(("memories", "alice"), "k") is None

    def test_the_configured_default_ttl_applies(self, make_store: MakeStore) -> None:
        store = self._ttl_store(make_store, ttl={"default_ttl": 1 / 60, "refresh_on_read": False})
        store.put(("memories", "alice"), "k", {"text": "x"})
        store.put(("memories", "alice"), "kept", {"text": "y"}, ttl=None)
        assert store.get(("memories", "alice"), "k") is not None
        time.sleep(1.4)
        assert store.get(("memories", "alice"), "k") is None
        assert store.get(("memories", "alice"), "kept") is not None
