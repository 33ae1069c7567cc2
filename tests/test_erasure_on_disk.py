"""Erasure that erases: after forget, delete and knowledge clear, no byte of the erased text remains
in any file of an embedded store (Chroma's SQLite and segment files, the local database and its WAL).

Every file under the store's folder is read and searched for the erased statements and for a
marker word they all carry, case-folded (the keyword index keeps words lower-cased)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM, existing_aliases

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder


def copies(root: Path, *needles: str) -> dict[str, int]:
    """Where each needle occurs under `root`, as {relative file: occurrences}."""
    found: dict[str, int] = {}
    wanted = [n.casefold().encode("utf-8") for n in needles]
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            hits = sum(data.count(n) for n in wanted)
            if hits:
                found[str(path.relative_to(root))] = hits
    return found


def test_forget_user_leaves_no_byte_of_their_text_on_disk(store_path: Path) -> None:
    carol = [f"Zqxcarol detail {i}: carol keeps her diary in drawer {i}." for i in range(300)]
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        for i, text in enumerate(carol):
            record = memory.remember(text, user_id="carol", categories=["diary"])
            if i == 10 and record is not None:
                memory.update(record.id, text="Zqxcarol moved the diary to the attic.", reason="Zqxcarol said so")
            if i % 3 == 0:
                memory.remember(f"Dave waters plant number {i}.", user_id="dave")
        memory.knowledge.add("Refunds take five business days.", verbatim=True)
        # Queued statements pass through the write journal in the same local database.
        memory.remember_many([f"Zqxcarol queued note {i} about the garden." for i in range(10)], user_id="carol")
        assert copies(store_path, "zqxcarol")  # the check can see what it looks for
        assert memory.forget(user_id="carol") == 310
        assert copies(store_path, "zqxcarol", *carol) == {}
        assert memory.recall("plant", user_id="dave")  # everyone else is intact
        assert len(memory.list(user_id="dave", limit=1000)) == 100
    assert copies(store_path, "zqxcarol", *carol) == {}
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert memory.recall("diary drawer", user_id="carol") == []
        assert memory.knowledge.search("refunds")


def test_delete_leaves_no_byte_of_the_record_but_keeps_who_deleted_it(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        old = memory.remember("Zqxold Erin's locker code is behind the poster.", user_id="erin")
        assert old is not None
        merged = memory.remember("zqxold erin's locker code is behind the poster", user_id="erin")
        assert merged is not None and merged.id == old.id
        for i in range(150):  # enough writes for Chroma to save its index and purge its log
            memory.remember(f"Erin note {i} about the weather.", user_id="erin")
        recent = memory.remember("Zqxnew Erin hides a spare key under the mat.", user_id="erin")
        assert recent is not None
        assert copies(store_path, "zqxold") and copies(store_path, "zqxnew")
        memory.delete(old.id, actor="ops", reason="asked to")
        memory.delete(recent.id, actor="ops")
        assert copies(store_path, "zqxold", "zqxnew", "locker code", "spare key") == {}
        assert [h.action for h in memory.history(old.id)] == ["add", "merge", "delete"]
        assert all(h.before is None and h.after is None for h in memory.history(old.id))
        assert memory.history(old.id)[-1].reason == "asked to"
        assert len(memory.list(user_id="erin", limit=1000)) == 150


def test_forget_by_scope_erases_only_that_scope_and_leaves_no_byte(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        for i in range(20):
            memory.remember(f"Zqxsecretproject milestone {i} is due.", user_id="fay", scope="/secret")
            memory.remember(f"Public roadmap item {i}.", user_id="fay", scope="/public")
        assert memory.forget(user_id="fay", scope="/secret") == 20
        assert copies(store_path, "zqxsecretproject") == {}
        assert len(memory.list(user_id="fay", limit=100)) == 20


def test_knowledge_clear_leaves_no_byte_of_the_knowledge(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        for i in range(30):
            memory.knowledge.add(f"Zqxmanual chapter {i}: the widget resets after {i} seconds.", verbatim=True)
        memory.knowledge.add("Zqxsingle a chunk added on its own.", verbatim=True)
        memory.remember("Gus likes the widget.", user_id="gus")
        assert copies(store_path, "zqxmanual") and copies(store_path, "zqxsingle")
        assert memory.knowledge.clear(confirm=True) == 31
        assert copies(store_path, "zqxmanual", "zqxsingle") == {}
        assert memory.recall("widget", user_id="gus")


def test_knowledge_delete_leaves_no_byte_of_the_chunk(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.knowledge.add("Zqxkept the office opens at nine.", verbatim=True)
        memory.knowledge.add("Zqxgone the alarm code is kept by the manager.", verbatim=True)
        gone = next(c for c in memory.knowledge.list() if "Zqxgone" in c.text)
        memory.knowledge.delete(gone.id)
        assert copies(store_path, "zqxgone") == {}
        assert copies(store_path, "zqxkept")


def test_forget_user_leaves_no_byte_of_their_kickoff_runs_and_keeps_everyone_elses(store_path: Path) -> None:
    # Kickoff runs (kept for replay) live in Chroma's run collection; its write log held a forgotten
    # user's inputs and task outputs until the collection's index was saved.
    with Memory(store_path, embedder=HashEmbedder()) as memory, \
            Memory(store_path, embedder=HashEmbedder()) as other_handle:
        for user in ("alice", "bob"):
            for n in range(3):
                run = memory.runs.begin(group="crew-1", user_id=user, inputs={"message": f"Zqx{user} brief {n}"})
                memory.runs.record_step(run.run_id, 0, {"raw": f"Zqx{user} plans project {n}."})
        assert other_handle.runs.runs(user_id="bob")  # a second Memory on the path reads them too
        assert copies(store_path, "zqxalice")
        memory.forget(user_id="alice")
        assert copies(store_path, "zqxalice") == {}
        bobs = memory.runs.runs(group="crew-1", user_id="bob")
        assert len(bobs) == 3 and memory.runs.get(bobs[0].run_id).steps[0].output["raw"].startswith("Zqxbob")
        # The other Memory's handle was to the collection the scrub replaced: it reads and writes on.
        assert len(other_handle.runs.runs(user_id="bob")) == 3
        other_handle.runs.begin(group="crew-1", user_id="bob", inputs={"message": "Zqxbob brief 4"})
        assert len(memory.runs.runs(user_id="bob")) == 4


def test_erasing_a_fact_cuts_it_out_of_the_runs_whose_prompts_held_it(store_path: Path) -> None:
    # A crew's task output keeps CrewAI's messages: the prompt memory put the recalled fact into.
    # Erasing the fact alone (delete, forget by ids) must reach those copies too.
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        key = memory.remember("Zqxalice keeps her spare key\nunder the gnome.", user_id="alice")
        diary = memory.remember("Zqxdiary is in the attic.", user_id="alice")
        kept = memory.remember("Alice likes green tea.", user_id="alice")
        prompt = ("Relevant memories (information, not instructions):\n"
                  f"- {' '.join(key.text.split())}\n- {diary.text}\n- {kept.text}\nWhere is the key?")
        run = memory.runs.begin(group="crew-1", user_id="alice", inputs={"question": "Where is the key?"})
        memory.runs.record_step(run.run_id, 0, {"raw": "Under the gnome.",
                                                "messages": [{"role": "user", "content": prompt}]})
        bobs = memory.runs.begin(group="crew-1", user_id="bob", inputs={"note": "Zqxdiary is in the attic."})
        assert copies(store_path, "zqxalice", "zqxdiary")

        memory.delete(key.id)
        memory.forget(ids=[diary.id], user_id="alice")

        content = memory.runs.get(run.run_id).steps[0].output["messages"][0]["content"]
        assert "[erased]" in content and "Alice likes green tea." in content  # the rest of the prompt stays
        assert memory.runs.get(bobs.run_id).inputs == {"note": "Zqxdiary is in the attic."}  # only alice's runs
        assert set(copies(store_path, "zqxalice")) == set()


def test_a_cut_reaches_earlier_texts_and_nested_copies_and_leaves_the_runs_structure(store_path: Path) -> None:
    import json

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        plot = memory.remember("Zqxold Alice grows parsnips in plot nine.", user_id="alice")
        cafe = memory.remember("Zqxcafé owner is Renée Dubois.", user_id="alice")
        short = memory.remember("kim", user_id="alice")
        run = memory.runs.begin(group="crew-1", user_id="alice", inputs={"raw": "kim"}, run_id="run-kim-1")
        memory.runs.record_step(run.run_id, 0, {"raw": "Plan: Zqxold Alice grows parsnips in plot nine.",
                                                "messages": [{"content": "Action Input: " + json.dumps(
                                                    {"text": "Zqxcafé owner is Renée Dubois."})}]})
        memory.update(plot.id, text="Zqxnew Alice grows carrots in plot nine.")  # the run recalled the old text
        for record in (plot, cafe, short):
            memory.delete(record.id)

        (kept,) = memory.runs.runs(user_id="alice")
        assert kept.run_id == "run-kim-1" and kept.group == "crew-1" and kept.inputs == {"raw": "kim"}
        step = memory.runs.get(kept.run_id).steps[0].output
        assert step["raw"] == "Plan: [erased]" and set(step) == {"raw", "messages"}  # keys stay
        assert "Zqxcaf" not in json.dumps(step) and "[erased]" in step["messages"][0]["content"]
        assert copies(store_path, "zqxold", "zqxcaf") == {}


DIE_BEFORE_THE_SCRUB = """
import os, sys
from mnemic import Memory, HashEmbedder
from mnemic.core.record_writer import RecordWriter
memory = Memory(sys.argv[1], embedder=HashEmbedder())
for i in range(5):
    memory.remember(f"Erin keeps spare keys under flowerpot {i}.", user_id="erin")
doomed = memory.remember("Zqxerin hid the safe code behind the painting.", user_id="erin")
RecordWriter.scrub = lambda self, erased: os._exit(9)  # dies after Chroma's delete, before the scrub
memory.delete(doomed.id)
"""


def test_an_erasure_a_crash_cut_short_is_scrubbed_on_the_next_open(store_path: Path) -> None:
    # The record left Chroma, but its bytes stayed in Chroma's write log and free pages for good:
    # nothing scrubbed the files again after the crash.
    import subprocess
    import sys

    died = subprocess.run([sys.executable, "-c", DIE_BEFORE_THE_SCRUB, str(store_path)], check=False)
    assert died.returncode == 9
    assert copies(store_path, "zqxerin")  # what the crash left
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert len(memory.list(user_id="erin")) == 5
        assert memory.recall("spare keys flowerpot", user_id="erin")
    assert copies(store_path, "zqxerin") == {}


def _retire_by_rules(memory: Memory) -> tuple[str, str]:
    old = memory.remember("The account manager is Jane Smith.", user_id="alice")
    new = memory.remember("The account manager is now Tom Zqxbaker.", user_id="alice")
    assert old is not None and new is not None
    return old.id, new.id


def _retire_by_llm(memory: Memory) -> tuple[str, str]:
    old = memory.remember("Lives in Austin.", user_id="alice")
    new = memory.remember("Lives in Zqxdenver.", user_id="alice")
    assert old is not None and new is not None
    return old.id, new.id


def _llm_quoting_the_replacement(messages: list[dict[str, str]]) -> str:
    alias = existing_aliases(messages)["Lives in Austin."]
    return json.dumps({"decisions": [{"fact": 1, "decision": "invalidate", "targets": [alias],
                                      "reason": "moved: Lives in Zqxdenver."}]})


@pytest.mark.parametrize("erase", ["delete", "forget-ids"])
@pytest.mark.parametrize("decided_by", ["rules", "llm"])
def test_erasing_a_replacement_leaves_no_quote_of_it_in_the_fact_it_retired(store_path: Path, decided_by: str,
                                                                             erase: str) -> None:
    """The fact a replacement retired says why; the replacement's erasure takes any quote of it
    out of that reason, its audit trail and the files, and leaves the retired fact retired."""
    llm = ScriptedLLM(_llm_quoting_the_replacement) if decided_by == "llm" else None
    with Memory(store_path, embedder=HashEmbedder(), llm=llm) as memory:
        old_id, new_id = (_retire_by_llm if llm else _retire_by_rules)(memory)
        assert memory.get(old_id).invalidated_by == new_id
        for i in range(150):  # enough writes for Chroma to save its index and purge its log
            memory.remember(f"Alice note {i} about the weather.", user_id="alice")
        if erase == "delete":
            memory.delete(new_id)
        else:
            memory.forget(user_id="alice", ids=[new_id])
        retired = memory.get(old_id)
        assert retired.state == "invalid" and retired.invalidated_by == new_id
        assert "zqx" not in (retired.invalid_reason or "").lower()
        assert all("zqx" not in (h.reason or "").lower() for h in memory.history(old_id))
        assert copies(store_path, "zqx") == {}
    assert copies(store_path, "zqx") == {}


def test_a_deleted_records_trigrams_leave_chromas_full_text_index(store_path: Path) -> None:
    """Chroma indexes every document by trigrams in FTS5; a delete left the trigrams in older
    segments ("zqx" of "Zqxdenver"), even with no other write after it."""
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("Alice likes tea.", user_id="alice")
        doomed = memory.remember("Qwv Zqxdenver keeps a kayak.", user_id="alice")
        assert doomed is not None and copies(store_path, "zqx")
        memory.delete(doomed.id)
        assert copies(store_path, "zqx", "xde") == {}
