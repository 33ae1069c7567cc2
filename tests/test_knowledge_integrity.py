"""Knowledge that stays what its operator wrote: each source owns its chunks, an edited file
replaces its old version, a correction is never refused as "already stored", a credential cut by a
chunk boundary is still refused, a file's bad characters are refused with its name, and a removal
a crash cut short is finished on the next open."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_erasure_on_disk import copies
from test_knowledge import make_pdf

from mnemic import Memory
from mnemic.core.documents import DocumentError, chunk_text
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.safety import find_secrets
from mnemic.tools import core as tools

CONTACT = "Write to help@acme.example for anything."


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.set_policy(knowledge=True)
        yield memory


def texts(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.text for h in hits]


# -- each source owns its chunks ------------------------------------------------------------------


def test_a_passage_in_two_files_belongs_to_both(mem: Memory, tmp_path: Path) -> None:
    returns, shipping = tmp_path / "returns.md", tmp_path / "shipping.md"
    returns.write_text(f"# Returns\nItems can be returned within 30 days.\n\n# Contact\n{CONTACT}\n")
    shipping.write_text(f"# Shipping\nWe ship worldwide in 3 days.\n\n# Contact\n{CONTACT}\n")
    mem.knowledge.add_file(returns)
    mem.knowledge.add_file(shipping)
    assert mem.knowledge.sources() == {str(returns): 2, str(shipping): 2}
    assert any(CONTACT in t for t in texts(mem.knowledge.search("contact write help", source=str(shipping))))
    # Shown once, though two sources hold it.
    assert sum(CONTACT in t for t in texts(mem.knowledge.search("contact write help", limit=10))) == 1

    assert mem.knowledge.delete_source(str(returns)) == 2
    assert any(CONTACT in t for t in texts(mem.knowledge.search("contact write help")))
    assert mem.knowledge.delete_source(str(shipping)) == 2
    assert mem.knowledge.count() == 0


def test_the_same_text_under_two_sources_is_removed_with_each_alone(mem: Memory) -> None:
    mem.knowledge.add("Refunds take 5 business days.", verbatim=True, source="policy-2024")
    again = mem.knowledge.add("Refunds take 5 business days.", verbatim=True, source="policy-2025")
    assert len(again.added) == 1 and again.duplicates == []
    assert mem.knowledge.delete_source("policy-2024") == 1
    assert texts(mem.knowledge.search("refunds", source="policy-2025")) == ["Refunds take 5 business days."]
    assert mem.knowledge.delete_source("policy-2025") == 1


def test_a_source_filter_finds_its_chunk_however_many_others_rank_higher(mem: Memory, tmp_path: Path) -> None:
    mem.knowledge.add("Refunds for gift cards are processed by the partner bank.", verbatim=True,
                      source="giftcards.md")
    orders = tmp_path / "orders.csv"
    orders.write_text("rule\n" + "".join(f"Refunds for order class {i} are processed within {i % 9 + 1} business "
                                         "days.\n" for i in range(600)))
    mem.knowledge.add_file(orders)
    assert texts(mem.knowledge.search("refunds processed business days", source="giftcards.md")) == [
        "Refunds for gift cards are processed by the partner bank."]


# -- identity: a correction is new knowledge; names are one name ------------------------------------


@pytest.mark.parametrize(("old", "new"), [
    ("The API rate limit is 10⁵ requests per day.", "The API rate limit is 105 requests per day."),
    ("The coupon code is SAVE10.", "The coupon code is save10."),
    ("Doors open at 9!", "Doors open at 9"),
])
def test_a_correction_that_changes_case_or_characters_is_stored(mem: Memory, old: str, new: str) -> None:
    mem.knowledge.add(old, verbatim=True, source="faq")
    result = mem.knowledge.add(new, verbatim=True, source="faq")
    assert [c.text for c in result.added] == [new] and result.duplicates == []
    assert {c.text for c in mem.knowledge.list(source="faq")} == {old, new}


def test_source_names_are_one_name_on_every_path(mem: Memory) -> None:
    decomposed = unicodedata.normalize("NFD", "café-menu")
    mem.knowledge.add("Espresso costs 2 euros.", verbatim=True, source=decomposed)
    mem.knowledge.add("Tea costs 1 euro.", verbatim=True, source=" tea-menu ")
    assert set(mem.knowledge.sources()) == {"café-menu", "tea-menu"}
    assert texts(mem.knowledge.search("espresso", source="café-menu")) == ["Espresso costs 2 euros."]
    assert [c.text for c in mem.knowledge.list(source=" café-menu")] == ["Espresso costs 2 euros."]
    assert mem.knowledge.delete_source(" tea-menu ") == 1
    assert mem.knowledge.delete_source(decomposed) == 1


def test_two_files_whose_names_differ_only_in_unicode_form_stay_two_sources(mem: Memory, tmp_path: Path) -> None:
    # Both spellings of "café.md" can live in one folder; normalised to one source, re-adding one
    # file erased the other file's passages.
    folder = tmp_path / "docs"
    folder.mkdir()
    composed = folder / unicodedata.normalize("NFC", "café.md")
    decomposed = folder / unicodedata.normalize("NFD", "café.md")
    composed.write_text("The café opens at eight in the morning.\n")
    decomposed.write_text("Espresso costs two euros at the bar.\n")
    mem.knowledge.add_files(folder)
    assert mem.knowledge.sources() == {str(composed): 1, str(decomposed): 1}
    composed.write_text("The café opens at nine in the morning.\n")
    again = mem.knowledge.add_file(composed)
    assert [c.text for c in again.removed] == ["The café opens at eight in the morning."]
    assert texts(mem.knowledge.search("espresso bar")) == ["Espresso costs two euros at the bar."]
    assert mem.knowledge.delete_source(str(decomposed)) == 1  # the name exactly as given wins
    assert mem.knowledge.sources() == {str(composed): 1}


# -- re-adding an edited file --------------------------------------------------------------------


def test_readding_an_edited_file_replaces_its_old_version(mem: Memory, tmp_path: Path) -> None:
    faq = tmp_path / "faq.md"
    faq.write_text("# Refunds\nRefunds are processed within 5 business days.\n\n# Hours\nWe open at 9.\n")
    first = mem.knowledge.add_file(faq)
    faq.write_text("# Refunds\nRefunds are processed within 30 business days.\n\n# Hours\nWe open at 9.\n")
    second = mem.knowledge.add_file(faq)
    assert [c.text for c in second.added] == ["Refunds\nRefunds are processed within 30 business days."]
    assert [c.text for c in second.duplicates] == ["Hours\nWe open at 9."]
    assert [c.text for c in second.removed] == ["Refunds\nRefunds are processed within 5 business days."]
    answer = tools.search_knowledge(mem, "how long do refunds take")
    assert "30 business days" in answer and "5 business days" not in answer
    assert mem.knowledge.sources() == {str(faq): 2}
    removed = next(c for c in first.added if "5 business" in c.text)
    assert [e.action for e in mem.knowledge.history(removed.id)] == ["add", "delete"]


def test_several_files_and_plain_text_accumulate(mem: Memory, tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("Alpha opens at 8.")
    b.write_text("Beta opens at 10.")
    mem.knowledge.add_files([a, b])
    mem.knowledge.add_file(a)
    assert mem.knowledge.sources() == {str(a): 1, str(b): 1}
    mem.knowledge.add("Gamma opens at 7.", verbatim=True, source="notes")
    mem.knowledge.add("Delta opens at 6.", verbatim=True, source="notes")
    assert mem.knowledge.sources()["notes"] == 2


# -- credentials across a chunk boundary -------------------------------------------------------------


def test_a_password_split_across_pdf_pages_is_refused(mem: Memory, tmp_path: Path) -> None:
    filler = " ".join(f"Step {i}: check the router cabling and the power supply." for i in range(13))
    pdf = make_pdf(tmp_path / "guide.pdf", [filler + " Log in to the console with the admin password:",
                                           "Tr0ub4dor&3 then reboot the router twice."])
    result = mem.knowledge.add_file(pdf)
    assert [(r.page, r.kinds) for r in result.refused] == [(2, ["password"])]
    assert copies(mem.path, "Tr0ub4dor&3") == {}  # type: ignore[arg-type]


def test_a_password_split_by_an_unoverlapped_csv_chunk_is_refused(mem: Memory, tmp_path: Path) -> None:
    filler = " ".join(f"step{i} check the router cabling" for i in range(23))
    cell = filler + " " + "a" * 10 + " then log in with password: Tr0ub4dor&3 and reboot the unit twice"
    runbook = tmp_path / "runbook.csv"
    runbook.write_text('task,notes\nreset router,"' + cell + '"\n')
    result = mem.knowledge.add_file(runbook)
    assert [r.kinds for r in result.refused] == [["password"]]
    assert "Tr0ub4dor" not in tools.search_knowledge(mem, "router password reboot")
    assert copies(mem.path, "Tr0ub4dor&3") == {}  # type: ignore[arg-type]


def test_a_password_split_inside_added_text_is_refused(mem: Memory) -> None:
    text = "Check the cable. " * 23 + "admin password:\n\nTr0ub4dor&3 is for the console only. " + "Then reboot. " * 80
    passages = chunk_text(text)
    assert passages[0].text.endswith("password:") and not any(find_secrets(p.text) for p in passages)
    result = mem.knowledge.add(text)
    assert [r.position for r in result.refused] == [1]
    assert all("Tr0ub4dor" not in c.text for c in mem.knowledge.list())


# -- a file's characters get add()'s check --------------------------------------------------------


@pytest.mark.parametrize(("name", "content", "what"), [
    ("late_nul.txt", b"Opening hours are nine to five. " * 300 + b"before\x00after", "NUL"),
    ("nul.json", b'{"faq": "refunds\\u0000take five days"}', "NUL"),
    ("surrogate.json", b'{"faq": "refunds \\ud800 take five days"}', "surrogate"),
])
def test_bad_characters_in_a_file_are_refused_naming_it(mem: Memory, tmp_path: Path, name: str,
                                                        content: bytes, what: str) -> None:
    mem.knowledge.add("The office is in Paris.", verbatim=True)
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DocumentError, match=rf"{name} holds .*{what}.* at character \d+"):
        mem.knowledge.add_file(path)
    with pytest.raises(DocumentError, match=name):
        mem.knowledge.add_files([path])
    assert mem.knowledge.count() == 1


# -- a removal cut short by a crash ----------------------------------------------------------------

_CHILD = textwrap.dedent('''
    import os, sys
    from mnemic import Memory
    from mnemic.core.embeddings import HashEmbedder
    from mnemic.core import knowledge_erasure
    with Memory(sys.argv[1], embedder=HashEmbedder()) as m:
        m.knowledge.add("Zqxkept the office opens at nine.", verbatim=True)
        doomed = m.knowledge.add("Zqxgone the vault opens at noon.", verbatim=True).added[0]
        m.knowledge.add("Zqxmanual the safe opens at ten. " * 60, source="manual")
        print(doomed.id, flush=True)
        def die(*args, **kwargs):  # the process dies once the chunks left Chroma, before the rest
            os._exit(9)
        knowledge_erasure.KnowledgeEraser.erase_traces = die
        if sys.argv[2] == "delete":
            m.knowledge.delete(doomed.id)
        elif sys.argv[2] == "source":
            m.knowledge.delete_source("manual")
        else:
            m.knowledge.clear(confirm=True)
''')


@pytest.mark.parametrize("how", ["delete", "source", "clear"])
@pytest.mark.parametrize("finisher", ["open", "repair"])
def test_a_removal_cut_short_by_a_crash_is_finished(tmp_path: Path, how: str, finisher: str) -> None:
    store = tmp_path / "store"
    child = subprocess.run([sys.executable, "-c", _CHILD, str(store), how], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=300)
    assert child.returncode == 9, child.stderr
    doomed = child.stdout.split()[0]
    with Memory(store, embedder=HashEmbedder()) as memory:
        if finisher == "repair":
            memory.repair()
    # The open (or repair) alone finished it: no file holds the removed text any more.
    removed = {"delete": ["zqxgone"], "source": ["zqxmanual"], "clear": ["zqxgone", "zqxmanual", "zqxkept"]}[how]
    assert copies(store, *removed) == {}
    with Memory(store, embedder=HashEmbedder()) as memory:
        kept = {c.text.split()[0] for c in memory.knowledge.list()}
        assert kept == {"delete": {"Zqxkept", "Zqxmanual"}, "source": {"Zqxkept", "Zqxgone"}, "clear": set()}[how]
        if how == "delete":
            entries = memory.knowledge.history(doomed)
            assert [e.action for e in entries] == ["add", "delete"] and all(e.after is None for e in entries)


def test_a_store_written_before_source_owned_chunks_keeps_working(tmp_path: Path) -> None:
    from mnemic.core.knowledge_identity import legacy_chunk_id
    from mnemic.core.store import KnowledgeCollection, StoredRow

    text = "Espresso costs 2 euros."
    old_id = legacy_chunk_id(text)
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        # As an older mnemic wrote it: the id from the text alone, the source name as given (NFD).
        legacy = KnowledgeCollection(memory._store.client, memory.namespace)
        legacy.add([StoredRow(id=old_id, document=text, embedding=memory.embedder.embed([text])[0],
                              metadata={"hash": old_id[1:], "kind": "verbatim", "position": 0, "added_by": "operator",
                                        "added_at": 0.0, "source": unicodedata.normalize("NFD", "café-menu")})])
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        assert memory.knowledge.sources() == {"café-menu": 1}
        again = memory.knowledge.add(text, verbatim=True, source="café-menu")
        assert again.added == [] and [c.id for c in again.duplicates] == [old_id]
        assert [h.chunk.id for h in memory.knowledge.search("espresso", source="café-menu")] == [old_id]
        assert memory.knowledge.get(old_id).text == text
        assert memory.knowledge.delete_source("café-menu") == 1
        assert memory.knowledge.count() == 0


@pytest.mark.parametrize("how", ["delete", "clear"])
def test_a_removal_that_failed_part_way_never_reaches_knowledge_added_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    # The removal's mark outlived its failure (the scrub hit a full disk); the passage added again
    # afterwards was deleted by the next open, which finished the old removal.
    import sqlite3

    from mnemic.core.store import upkeep

    faq = tmp_path / "faq.md"
    faq.write_text("Refunds are processed within five business days.\n")
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        chunk = memory.knowledge.add_file(faq).added[0]

        def full_disk(path: Path) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(upkeep, "scrub_files", full_disk)
        with pytest.raises(sqlite3.OperationalError):
            memory.knowledge.delete(chunk.id) if how == "delete" else memory.knowledge.clear(confirm=True)
        monkeypatch.undo()  # the disk has room again
        assert [c.text for c in memory.knowledge.add_file(faq).added] == [chunk.text]
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        assert texts(memory.knowledge.search("refunds")) == [chunk.text]
