"""The knowledge store: shared by every user of a namespace, written only through the operator API."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemic import Memory
from mnemic.core import knowledge_audit, knowledge_ingest
from mnemic.core.documents import DocumentError, UnsupportedDocumentError, chunk_text
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.knowledge import KNOWLEDGE_OWNER, KnowledgeStore
from mnemic.core.store import KnowledgeCollection, make_persistent_client
from mnemic.core.validation import check_user_id

REFUND = "Refunds are processed within 5 business days of the return arriving at the warehouse."
HOURS = "The shop is open from 9am to 6pm on weekdays and closed on Sundays."
PRODUCTS = "Our products are the Widget Pro, the Gadget Max and the Sprocket Mini."


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        yield memory


def snapshot(store: KnowledgeStore) -> list[tuple[str, str]]:
    return [(c.id, c.text) for c in store.list(limit=100_000)]


def lexical_ids(mem: Memory) -> set[str]:
    return set(mem._lexical.versions(mem.knowledge.collection_name))


def make_pdf(path: Path, pages: list[str]) -> Path:
    """A minimal valid PDF with one line of Helvetica text per page, built byte by byte."""
    objects: list[bytes] = []
    page_ids = [3 + 2 * i for i in range(len(pages))]
    font_id = 3 + 2 * len(pages)
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids).encode()
    objects.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(len(pages)).encode() + b" >>")
    for i, text in enumerate(pages):
        content_id = page_ids[i] + 1
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_id} 0 R "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode()
        )
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode()
        objects.append(b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def long_text(paragraphs: int = 6, sentences: int = 12) -> str:
    words = "refund warehouse shipping label customer order business policy return parcel".split()
    out = []
    for p in range(paragraphs):
        sent = []
        for s in range(sentences):
            picked = " ".join(words[(p * 7 + s * 3 + k) % len(words)] for k in range(9))
            sent.append(f"Paragraph {p} sentence {s} says {picked}.")
        out.append(" ".join(sent))
    return "\n\n".join(out)


# -- shared by every user, written only by operators --------------------------------------------


def test_every_user_of_the_namespace_sees_knowledge(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.knowledge.add(REFUND, verbatim=True)
        mem.remember("I am allergic to peanuts.", user_id="alice")
        # Search takes no user: every caller reads the same knowledge.
        assert mem.knowledge.search("refunds processed warehouse")[0].text == REFUND
        # Memory stays per user.
        assert mem.recall("peanuts", user_id="alice")
        assert mem.recall("peanuts", user_id="bob") == []
        # Knowledge never shows up as anybody's memory.
        assert all(m.record.text != REFUND for m in mem.recall("refunds warehouse", user_id="alice"))
        assert all(m.record.text != REFUND for m in mem.recall("refunds warehouse", user_id="bob"))
    # Another process opening the namespace later sees it too (lexical index rebuilt or reused).
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as again:
        hits = again.knowledge.search("refunds warehouse")
        assert hits and hits[0].text == REFUND
        assert hits[0].breakdown.bm25 is not None


def test_remember_kind_knowledge_stays_in_the_users_memory(mem: Memory) -> None:
    before = mem.knowledge.count()
    record = mem.remember("The refund window is 90 days.", user_id="alice", kind="knowledge")
    assert record is not None and record.user_id == "alice" and record.kind == "knowledge"
    ids = mem.remember_many(["Store opens at 7am.", "Closed on Mondays."], user_id="mallory", kind="knowledge")
    mem.drain_writes()
    assert mem.knowledge.count() == before == 0
    assert mem.knowledge.search("refund window 90 days") == []
    assert mem.knowledge.search("store opens closed Mondays") == []
    assert mem.recall("refund window", user_id="alice")[0].record.id == record.id
    assert mem.recall("refund window", user_id="bob") == []
    assert {r.id for r in mem.list(user_id="mallory")} == set(ids)


def test_no_conversation_path_touches_the_knowledge_collection(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    mem.knowledge.add(REFUND, verbatim=True)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a conversation path wrote to the knowledge store")

    for name in ("add", "delete", "clear", "set_generation", "add_history"):
        monkeypatch.setattr(KnowledgeCollection, name, refuse)
    mem.remember("I like green tea.", user_id="alice", kind="knowledge", author="user")
    mem.remember("Use the staging server.", user_id="alice", source_kind="remember_tool", author="agent")
    mem.remember_many(["Fact one.", "Fact two."], user_id="bob", kind="knowledge")
    mem.drain_writes()
    mem.forget(user_id="alice")
    mem.reset()
    assert mem.knowledge.count() == 1


def test_knowledge_collection_is_not_a_user_and_survives_reset(mem: Memory) -> None:
    mem.knowledge.add(REFUND, verbatim=True)
    mem.remember("I like tea.", user_id="alice")
    assert mem.users() == ["alice"]
    names = {c if isinstance(c, str) else c.name for c in mem._store.client.list_collections()}
    assert mem.knowledge.collection_name in names
    assert mem.knowledge.collection_name == "mnemic-default-knowledge"
    mem.reset()
    assert mem.users() == []
    assert mem.knowledge.count() == 1
    assert mem.knowledge.search("refunds warehouse")[0].text == REFUND


def test_namespaces_with_look_alike_names_stay_apart(tmp_path: Path) -> None:
    client = make_persistent_client(tmp_path / "chroma")
    plain = Memory(client=client, namespace="shop", embedder=HashEmbedder())
    suffixed = Memory(client=client, namespace="shop-knowledge", embedder=HashEmbedder())
    try:
        plain.knowledge.add(REFUND, verbatim=True)
        suffixed.remember("I like tea.", user_id="alice")
        suffixed.knowledge.add(HOURS, verbatim=True)
        assert [c.text for c in plain.knowledge.list()] == [REFUND]
        assert [c.text for c in suffixed.knowledge.list()] == [HOURS]
        assert [e.action for e in plain.knowledge.history(plain.knowledge.list()[0].id)] == ["add"]
    finally:
        plain.close()
        suffixed.close()


def test_lexical_owner_cannot_be_a_user_id() -> None:
    assert check_user_id(KNOWLEDGE_OWNER) != KNOWLEDGE_OWNER


def test_memory_get_and_delete_cannot_reach_knowledge(mem: Memory) -> None:
    chunk = mem.knowledge.add(REFUND, verbatim=True).added[0]
    with pytest.raises(KeyError):
        mem.get(chunk.id)
    with pytest.raises(KeyError):
        mem.delete(chunk.id)
    assert mem.knowledge.get(chunk.id).text == REFUND


# -- verbatim and distilled ---------------------------------------------------------------------


def test_verbatim_stores_one_fact_exactly_as_written(mem: Memory) -> None:
    text = "Refund policy:\n\n- 5 business days.\n- Original packaging required.  Really."
    result = mem.knowledge.add(text, verbatim=True, source="policy-v2", added_by="carol")
    assert len(result.added) == 1
    chunk = result.added[0]
    assert chunk.text == text and chunk.kind == "verbatim" and chunk.source == "policy-v2"
    assert chunk.added_by == "carol" and chunk.position == 0
    assert mem.knowledge.get(chunk.id) == chunk


def test_default_add_without_llm_chunks_into_passages(mem: Memory) -> None:
    text = long_text()
    result = mem.knowledge.add(text, source="manual")
    chunks = result.added
    assert len(chunks) > 3
    assert all(c.kind == "passage" and c.source == "manual" for c in chunks)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert len(chunk.text) <= 800
        assert chunk.char_start is not None and chunk.char_end is not None
        assert text[chunk.char_start:chunk.char_end] == chunk.text
        assert chunk.text[0].isupper()  # windows begin at a sentence, not mid-word
    # Consecutive windows inside a paragraph overlap; across a paragraph break they need not.
    overlapping = [a for a, b in itertools.pairwise(chunks) if b.char_start is not None
                   and a.char_end is not None and b.char_start < a.char_end]
    assert overlapping


def test_short_text_becomes_one_passage(mem: Memory) -> None:
    result = mem.knowledge.add(f"{HOURS}\n\n{PRODUCTS}")
    assert len(result.added) == 1 and result.added[0].kind == "passage"


def test_llm_distils_facts(tmp_path: Path) -> None:
    calls: list[list[dict[str, str]]] = []

    def llm(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        assert schema["required"] == ["facts"]
        calls.append(messages)
        return json.dumps({"facts": ["The shop opens at 9am on weekdays.", "The shop is closed on Sundays.", ""]})

    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as mem:
        result = mem.knowledge.add(HOURS, source="faq")
        assert [c.text for c in result.added] == ["The shop opens at 9am on weekdays.",
                                                  "The shop is closed on Sundays."]
        assert all(c.kind == "fact" and c.source == "faq" for c in result.added)
        assert calls and calls[0][-1]["content"] == HOURS
        # verbatim never asks the model
        mem.knowledge.add(REFUND, verbatim=True)
        assert len(calls) == 1
        # files are chunked, not distilled
        (tmp_path / "a.txt").write_text(PRODUCTS, encoding="utf-8")
        assert mem.knowledge.add_file(tmp_path / "a.txt").added[0].kind == "passage"
        assert len(calls) == 1


@pytest.mark.parametrize("answer", [RuntimeError("model down"), "not json", {"facts": "nope"}, {"facts": []}])
def test_llm_failure_keeps_the_text_as_passages(tmp_path: Path, answer: Any) -> None:
    def llm(messages: list[dict[str, str]], schema: dict[str, Any]) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as mem:
        result = mem.knowledge.add(HOURS)
        assert [c.text for c in result.added] == [HOURS]
        assert result.added[0].kind == "passage"


# -- files --------------------------------------------------------------------------------------


def test_txt_file_keeps_source_position_and_offsets(mem: Memory, tmp_path: Path) -> None:
    text = long_text()
    path = tmp_path / "manual.txt"
    path.write_text(text, encoding="utf-8")
    chunks = mem.knowledge.add_file(path).added
    assert len(chunks) > 3
    assert all(c.source == str(path) for c in chunks)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert all(text[c.char_start:c.char_end] == c.text for c in chunks if c.char_start is not None)
    assert mem.knowledge.sources() == {str(path): len(chunks)}
    named = tmp_path / "other.txt"
    named.write_text(REFUND, encoding="utf-8")
    assert mem.knowledge.add_file(named, source="refund-policy").added[0].source == "refund-policy"


def test_markdown_strips_markup_and_keeps_headings(mem: Memory, tmp_path: Path) -> None:
    path = tmp_path / "faq.md"
    path.write_text(
        "---\ntitle: FAQ\n---\n# Returns\n\nSee the **refund** rules.\n\n## Timing\n\n"
        "Refunds take [five days](https://example.com/refunds) after `arrival`.\n\n"
        "## Products\n\n* Widget Pro\n* Gadget _Max_\n\n| size | price |\n|---|---|\n| S | 5 |\n",
        encoding="utf-8",
    )
    chunks = mem.knowledge.add_file(path).added
    texts = [c.text for c in chunks]
    assert texts[0] == "Returns\nSee the refund rules."
    assert texts[1] == "Returns > Timing\nRefunds take five days after arrival."
    assert texts[2].startswith("Returns > Products\n- Widget Pro\n- Gadget Max")
    assert "size | price" in texts[2] and "---" not in texts[2]
    assert [c.section for c in chunks] == ["Returns", "Returns > Timing", "Returns > Products"]
    assert not any("title: FAQ" in t or "**" in t or "](" in t for t in texts)


def test_json_is_flattened_into_key_value_passages(mem: Memory, tmp_path: Path) -> None:
    path = tmp_path / "shop.json"
    path.write_text(json.dumps({
        "name": "Acme", "hours": {"weekdays": "9-18", "sunday": None},
        "faq": [{"q": "How long do refunds take?", "a": "5 business days"}, {"q": "Gift wrap?", "a": "Yes"}],
    }), encoding="utf-8")
    texts = [c.text for c in mem.knowledge.add_file(path).added]
    assert texts == [
        "name: Acme\nhours.weekdays: 9-18",
        "faq[0].q: How long do refunds take?\nfaq[0].a: 5 business days",
        "faq[1].q: Gift wrap?\nfaq[1].a: Yes",
    ]
    records = tmp_path / "products.json"
    records.write_text(json.dumps([{"name": "Widget Pro", "price": 5}, {"name": "Gadget Max", "price": 7}]))
    assert [c.text for c in mem.knowledge.add_file(records).added] == [
        "name: Widget Pro\nprice: 5", "name: Gadget Max\nprice: 7"]


def test_csv_gives_one_passage_per_row_with_header_names(mem: Memory, tmp_path: Path) -> None:
    path = tmp_path / "products.csv"
    path.write_text("product,price,notes\nWidget Pro,5,\"small, blue\"\nGadget Max,7,\n", encoding="utf-8")
    chunks = mem.knowledge.add_file(path).added
    assert [c.text for c in chunks] == ["product: Widget Pro\nprice: 5\nnotes: small, blue",
                                        "product: Gadget Max\nprice: 7"]
    assert [c.section for c in chunks] == ["row 1", "row 2"]
    semi = tmp_path / "semi.csv"
    semi.write_text("city;opens\nAustin;9am\nBoston;10am\n", encoding="utf-8")
    assert mem.knowledge.add_file(semi).added[0].text == "city: Austin\nopens: 9am"


def test_pdf_pages_are_read_with_page_numbers(mem: Memory, tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    path = make_pdf(tmp_path / "policy.pdf", [REFUND, HOURS])
    chunks = mem.knowledge.add_file(path).added
    assert len(chunks) == 1  # two short pages fit in one window
    assert "Refunds are processed" in chunks[0].text and "closed on Sundays" in chunks[0].text
    assert chunks[0].page == 1
    big = make_pdf(tmp_path / "big.pdf", [long_text(1, 10)[:700], long_text(1, 10)[:700].replace("0", "1")])
    pages = [c.page for c in mem.knowledge.add_file(big).added]
    assert pages[0] == 1 and pages[-1] == 2
    assert mem.knowledge.search("refunds processed warehouse", limit=1)[0].chunk.source == str(path)


def test_pdf_without_pypdf_names_the_extra(mem: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = make_pdf(tmp_path / "policy.pdf", [REFUND])
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(ImportError, match=r"pip install 'mnemic\[pdf\]'"):
        mem.knowledge.add_file(path)
    assert mem.knowledge.count() == 0


def test_add_files_takes_directories(mem: Memory, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text(REFUND, encoding="utf-8")
    (docs / "sub" / "b.md").write_text(f"# Hours\n\n{HOURS}", encoding="utf-8")
    (docs / "image.png").write_bytes(b"\x89PNG")
    result = mem.knowledge.add_files([docs])
    assert sorted(c.source or "" for c in result.added) == [str(docs / "a.txt"), str(docs / "sub" / "b.md")]


# -- bad input leaves the store unchanged -------------------------------------------------------


@pytest.fixture
def seeded(mem: Memory) -> Memory:
    mem.knowledge.add(REFUND, verbatim=True)
    mem.knowledge.add(HOURS, source="hours")
    return mem


def bad_files(tmp_path: Path) -> dict[str, tuple[Path, type[Exception], str]]:
    cases: dict[str, tuple[Path, type[Exception], str]] = {}
    cases["missing"] = (tmp_path / "nope.txt", FileNotFoundError, "no such file")
    unsupported = tmp_path / "deck.pptx"
    unsupported.write_bytes(b"PK\x03\x04")
    cases["unsupported"] = (unsupported, UnsupportedDocumentError, "unsupported file type '.pptx'")
    empty = tmp_path / "empty.txt"
    empty.write_text("   \n\n  ", encoding="utf-8")
    cases["empty"] = (empty, DocumentError, "is empty")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Café crème brûlée".encode("latin-1"))
    cases["not utf-8"] = (latin, DocumentError, "not UTF-8")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x00\x01\x02 binary")
    cases["binary"] = (binary, DocumentError, "binary")
    corrupt = tmp_path / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    cases["corrupt pdf"] = (corrupt, DocumentError, "not a readable PDF")
    blank_pdf = make_pdf(tmp_path / "blank.pdf", [""])
    cases["pdf without text"] = (blank_pdf, DocumentError, "no extractable text")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"a": 1,', encoding="utf-8")
    cases["bad json"] = (bad_json, DocumentError, "not valid JSON")
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b,c\n", encoding="utf-8")
    cases["header-only csv"] = (header_only, DocumentError, "header row and at least one data row")
    folder = tmp_path / "folder.md"
    folder.mkdir()
    cases["directory"] = (folder, DocumentError, "is a directory")
    return cases


def test_bad_files_raise_clear_errors_and_write_nothing(seeded: Memory, tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    store = seeded.knowledge
    before = snapshot(store)
    indexed = lexical_ids(seeded)
    for name, (path, error, message) in bad_files(tmp_path).items():
        with pytest.raises(error, match=message):
            store.add_file(path)
        assert snapshot(store) == before, name
    # One bad file in a batch spoils the batch: the good files before it are not written either.
    good = tmp_path / "good.txt"
    good.write_text(PRODUCTS, encoding="utf-8")
    with pytest.raises(DocumentError):
        store.add_files([good, tmp_path / "corrupt.pdf"])
    assert snapshot(store) == before
    assert lexical_ids(seeded) == indexed


@pytest.mark.parametrize("text, error", [("", ValueError), ("   \n ", ValueError), (None, TypeError), (42, TypeError)])
def test_bad_text_raises_and_writes_nothing(seeded: Memory, text: Any, error: type[Exception]) -> None:
    before = snapshot(seeded.knowledge)
    with pytest.raises(error):
        seeded.knowledge.add(text)
    with pytest.raises(error):
        seeded.knowledge.add(text, verbatim=True)
    assert snapshot(seeded.knowledge) == before


def test_bad_arguments(seeded: Memory) -> None:
    store = seeded.knowledge
    with pytest.raises(ValueError, match="source is empty"):
        store.add(PRODUCTS, source="  ")
    with pytest.raises(ValueError, match="added_by"):
        store.add(PRODUCTS, added_by="")
    with pytest.raises(TypeError, match="progress"):
        store.add(PRODUCTS, progress="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit"):
        store.search("refunds", limit=0)
    with pytest.raises(ValueError, match="query is empty"):
        store.search("  ")
    with pytest.raises(ValueError, match="limit is"):
        store.add("x" * (seeded.max_text_chars + 1), verbatim=True)
    assert store.count() == 2


def test_a_failed_chroma_write_is_rolled_back(seeded: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    store = seeded.knowledge
    before = snapshot(store)
    indexed = lexical_ids(seeded)
    collection = store._collection
    handle = collection._handle(create=True)
    assert handle is not None
    real_add = handle.add
    calls = {"n": 0}

    class FlakyCollection:
        def __getattr__(self, name: str) -> Any:
            return getattr(handle, name)

        def add(self, **kwargs: Any) -> None:
            calls["n"] += 1
            if calls["n"] == 3:
                real_add(**{k: v[:2] for k, v in kwargs.items()})  # half a batch lands, then it fails
                raise RuntimeError("disk full")
            real_add(**kwargs)

    monkeypatch.setattr(collection, "_collection", FlakyCollection())
    monkeypatch.setattr(collection, "batch_size", lambda: 4)
    with pytest.raises(RuntimeError, match="disk full"):
        store.add(long_text(8, 12))
    assert calls["n"] == 3
    assert snapshot(store) == before
    assert lexical_ids(seeded) == indexed
    monkeypatch.undo()
    # The store still works, and the same text goes in cleanly afterwards.
    assert len(store.add(long_text(8, 12)).added) > 8


def test_a_failing_embedder_writes_nothing(seeded: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(seeded.knowledge)
    monkeypatch.setattr(knowledge_ingest, "EMBED_BATCH", 4)
    real = seeded.embedder.embed
    calls = {"n": 0}

    def flaky(texts: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("embedding service unavailable")
        return real(texts)

    monkeypatch.setattr(seeded.embedder, "embed", flaky)
    with pytest.raises(RuntimeError, match="unavailable"):
        seeded.knowledge.add(long_text(3, 12))
    assert snapshot(seeded.knowledge) == before


def test_a_failed_index_write_is_rolled_back(seeded: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    store = seeded.knowledge
    before = snapshot(store)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("database is locked")

    monkeypatch.setattr(seeded._lexical, "upsert", broken)
    with pytest.raises(OSError):
        store.add(PRODUCTS, verbatim=True)
    monkeypatch.undo()
    assert snapshot(store) == before
    added = store.add(PRODUCTS, verbatim=True).added
    assert len(added) == 1
    assert [e.action for e in store.history(added[0].id)] == ["add"]


# -- delete, clear, dedup -----------------------------------------------------------------------


def test_delete_removes_for_everyone_and_keeps_history(seeded: Memory) -> None:
    store = seeded.knowledge
    chunk = store.search("refunds warehouse")[0].chunk
    removed = store.delete(chunk.id, actor="carol", reason="policy changed")
    assert removed.id == chunk.id
    assert all(h.chunk.id != chunk.id for h in store.search("refunds warehouse"))
    assert chunk.id not in lexical_ids(seeded)
    with pytest.raises(KeyError):
        store.get(chunk.id)
    with pytest.raises(KeyError):
        store.delete(chunk.id)
    assert [(e.action, e.actor) for e in store.history(chunk.id)] == [("add", "operator"), ("delete", "carol")]
    assert store.count() == 1


def test_delete_source(seeded: Memory, tmp_path: Path) -> None:
    path = tmp_path / "manual.txt"
    path.write_text(long_text(), encoding="utf-8")
    added = seeded.knowledge.add_file(path).added
    assert seeded.knowledge.delete_source(str(path)) == len(added)
    assert seeded.knowledge.count() == 2
    with pytest.raises(KeyError):
        seeded.knowledge.delete_source(str(path))


@pytest.mark.parametrize("confirm", [False, "yes", 1])
def test_clear_needs_explicit_confirmation(seeded: Memory, confirm: Any) -> None:
    with pytest.raises(ValueError, match="confirm=True"):
        seeded.knowledge.clear(confirm=confirm)
    assert seeded.knowledge.count() == 2


def test_clear_empties_the_store(seeded: Memory) -> None:
    seeded.remember("I like tea.", user_id="alice")
    chunk_ids = [c.id for c in seeded.knowledge.list()]
    assert seeded.knowledge.clear(confirm=True) == 2
    assert seeded.knowledge.count() == 0 and seeded.knowledge.list() == []
    assert seeded.knowledge.search("refunds warehouse") == []
    assert lexical_ids(seeded) == set()
    assert seeded.recall("tea", user_id="alice")  # memory untouched
    assert [e.action for e in seeded.knowledge.history(chunk_ids[0])] == ["add", "delete"]
    assert len(seeded.knowledge.add(REFUND, verbatim=True).added) == 1  # usable again


def test_readding_the_same_text_adds_nothing(seeded: Memory, tmp_path: Path) -> None:
    store = seeded.knowledge
    # The same words, whitespace aside, are the same knowledge.
    again = store.add("  " + REFUND.replace(" ", "\n  ", 2) + " ", verbatim=True)
    assert again.added == [] and [c.text for c in again.duplicates] == [REFUND]
    path = tmp_path / "manual.txt"
    path.write_text(long_text(), encoding="utf-8")
    first = store.add_file(path)
    second = store.add_file(path)
    assert second.added == [] and len(second.duplicates) == len(first.added)
    # The same passage twice in one text is stored once.
    assert len(store.add(f"{PRODUCTS}\n\n{'x ' * 400}\n\n{PRODUCTS}").added) == 2
    assert store.count() == 2 + len(first.added) + 2


def test_history_records_ingests_and_removals(mem: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knowledge_audit, "HISTORY_IDS_PER_ENTRY", 3)
    path = tmp_path / "manual.txt"
    path.write_text(long_text(), encoding="utf-8")
    chunks = mem.knowledge.add_file(path, added_by="dana").added
    assert len(chunks) > 3  # more chunks than one entry lists
    for chunk in (chunks[0], chunks[-1]):
        (added,) = mem.knowledge.history(chunk.id)
        assert added.action == "add" and added.actor == "dana" and added.record_id == chunk.id
        assert added.details["chunks"] == len(chunks) and added.details["sources"] == [str(path)]
    single = mem.knowledge.add(REFUND, verbatim=True).added[0]
    assert mem.knowledge.history(single.id)[0].after == REFUND
    mem.knowledge.delete(single.id, reason="outdated")
    removed = mem.knowledge.history(single.id)[-1]
    # A removal erases the chunk's text, from the audit trail too; who removed it and why stay.
    assert (removed.action, removed.before, removed.reason) == ("delete", None, "outdated")
    assert mem.knowledge.history(single.id)[0].after is None
    mem.knowledge.delete_source(str(path), actor="erin")
    assert [(e.action, e.actor) for e in mem.knowledge.history(chunks[-1].id)] == [("add", "dana"), ("delete", "erin")]
    with pytest.raises(KeyError):
        mem.knowledge.history("k-unknown")


def test_knowledge_property_is_one_store(mem: Memory) -> None:
    assert mem.knowledge is mem.knowledge
    assert "mnemic-default-knowledge" in repr(mem.knowledge)


# -- progress, listing, search ------------------------------------------------------------------


def test_progress_callback_reports_chunks(mem: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knowledge_ingest, "EMBED_BATCH", 16)
    path = tmp_path / "big.txt"
    path.write_text(long_text(20, 12), encoding="utf-8")
    calls: list[tuple[int, int]] = []
    result = mem.knowledge.add_file(path, progress=lambda done, total: calls.append((done, total)))
    total = len(result.added)
    assert total > 32  # several embedding batches
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert len(calls) >= 3
    repeat: list[tuple[int, int]] = []
    mem.knowledge.add_file(path, progress=lambda done, total: repeat.append((done, total)))
    assert repeat == [(0, 0)]


def test_list_orders_by_insertion_and_filters_by_source(seeded: Memory) -> None:
    seeded.knowledge.add(PRODUCTS, source="products")
    assert [c.text for c in seeded.knowledge.list()] == [REFUND, HOURS, PRODUCTS]
    assert [c.text for c in seeded.knowledge.list(source="hours")] == [HOURS]
    assert [c.text for c in seeded.knowledge.list(limit=1, offset=1)] == [HOURS]
    assert seeded.knowledge.sources() == {"": 1, "hours": 1, "products": 1}


def test_search_is_hybrid_and_explained(seeded: Memory) -> None:
    seeded.knowledge.add(PRODUCTS, source="products")
    hits = seeded.knowledge.search("Sprocket Mini", limit=2)
    assert hits[0].text == PRODUCTS
    top = hits[0]
    assert top.breakdown.bm25 is not None and top.breakdown.cosine is not None
    assert "sprocket" in top.breakdown.matched_terms
    assert "lexical" in top.explanation
    assert top.format().startswith(f"- {PRODUCTS} (source: products")
    assert seeded.knowledge.search("zzz qqq xxyyzz") == []
    assert len(seeded.knowledge.search("the shop refunds products", limit=2)) <= 2


def test_search_can_keep_to_sources(seeded: Memory) -> None:
    store = seeded.knowledge
    store.add("The Widget Pro opens at 9am, after the shop.", source="products")
    assert {h.chunk.source for h in store.search("opens 9am shop", source="hours")} == {"hours"}
    assert {h.chunk.source for h in store.search("opens 9am shop", source=["hours", "products"])} == {
        "hours", "products"}
    assert store.search("opens 9am shop", source="nowhere") == []
    with pytest.raises(ValueError, match="empty list"):
        store.search("opens", source=[])


def test_closed_memory_refuses_knowledge_calls(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "m", embedder=HashEmbedder())
    store = mem.knowledge
    mem.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.search("refunds")
    with pytest.raises(RuntimeError, match="closed"):
        _ = mem.knowledge


def test_client_mode_processes_share_knowledge(tmp_path: Path) -> None:
    client = make_persistent_client(tmp_path / "chroma")
    writer = Memory(client=client, embedder=HashEmbedder())
    reader = Memory(client=client, embedder=HashEmbedder())
    try:
        assert reader.knowledge.search("refunds warehouse") == []
        writer.knowledge.add(REFUND, verbatim=True)
        reader.knowledge._last_sync = 0.0  # as if the sync interval had passed
        hits = reader.knowledge.search("refunds warehouse")
        assert hits and hits[0].breakdown.bm25 is not None
    finally:
        writer.close()
        reader.close()


def test_lexical_index_is_repaired_from_chroma(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        chunk = mem.knowledge.add(REFUND, verbatim=True).added[0]
        mem._lexical.delete(mem.knowledge.collection_name, [chunk.id])  # as if the process died before indexing it
        mem._lexical.set_watermark(mem.knowledge.collection_name, -1.0)
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        assert chunk.id in lexical_ids(mem)
        assert mem.knowledge.repair() == 0


# -- policy switch ------------------------------------------------------------------------------


def test_enabled_for_agents_follows_the_policy(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    assert mem.knowledge.enabled_for_agents() is False
    from mnemic.core.policy import MemoryPolicy

    monkeypatch.setattr(mem, "policy", MemoryPolicy(knowledge=True), raising=False)
    if not hasattr(type(mem), "effective_policy"):
        assert mem.knowledge.enabled_for_agents() is True
    monkeypatch.setattr(mem, "effective_policy", lambda **kw: MemoryPolicy(knowledge=False), raising=False)
    assert mem.knowledge.enabled_for_agents() is False
    monkeypatch.setattr(mem, "effective_policy", lambda **kw: MemoryPolicy(knowledge=True), raising=False)
    assert mem.knowledge.enabled_for_agents(user_id="alice") is True

    def broken(**kw: Any) -> None:
        raise RuntimeError("policy store unreachable")

    monkeypatch.setattr(mem, "effective_policy", broken, raising=False)
    assert mem.knowledge.enabled_for_agents() is False


# -- chunker --------------------------------------------------------------------------------------


def test_chunker_hard_splits_text_without_breaks() -> None:
    text = "x" * 2000
    passages = chunk_text(text, size=800, overlap=100)
    assert all(len(p.text) <= 800 for p in passages)
    assert passages[0].char_start == 0 and passages[-1].char_end == 2000


# -- real embeddings ------------------------------------------------------------------------------


@pytest.mark.minilm
def test_semantic_search_with_minilm(tmp_path: Path) -> None:
    with Memory(tmp_path / "m") as mem:
        mem.knowledge.add(REFUND, verbatim=True)
        mem.knowledge.add(HOURS, verbatim=True)
        mem.knowledge.add(PRODUCTS, verbatim=True)
        assert mem.knowledge.search("how long until I get my money back?", limit=1)[0].text == REFUND
        assert mem.knowledge.search("when can I visit the store?", limit=1)[0].text == HOURS


def test_knowledge_scores_do_not_depend_on_another_namespaces_records(tmp_path: Path) -> None:
    # Knowledge took its bm25 from FTS5, which weighs words by the whole table: every namespace's
    # records. Whether another namespace's users wrote "kiln" changed this namespace's scores and
    # explanations, which agents read.
    def scores(other_writes: bool) -> list[tuple[str, float, float | None]]:
        path = tmp_path / ("with" if other_writes else "without")
        with Memory(path, namespace="b", embedder=HashEmbedder()) as b:
            b.knowledge.add("The ceramics kiln guide: fire slowly.", source="kiln.md", verbatim=True)
            b.knowledge.add("Garden pottery tips for spring.", source="garden.md", verbatim=True)
            if other_writes:
                with Memory(path, namespace="a", embedder=HashEmbedder()) as a:
                    for i in range(30):
                        a.remember(f"My kiln number {i} is private.", user_id="someone")
            return [(hit.chunk.text, hit.score, hit.breakdown.bm25) for hit in b.knowledge.search("kiln pottery")]

    assert scores(other_writes=True) == scores(other_writes=False)
