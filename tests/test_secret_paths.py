"""No secret is stored through any write path, and look-alikes still are.

Every secret of the corpus (tests/secret_corpus.py: 180+ secrets of 60+ kinds) goes through every
write path: remember (text and every other free-text field), remember_many, update (text and
fields), the lifecycle calls' reasons, observe (auto extraction, deterministic and LLM), memorize,
knowledge add / add(verbatim=True) / add_file / add_files, notes, the LangGraph store, the memory
tools. Each path is then read back every way there is (list, recall, history, knowledge list and
search, store get and search) and must hold no secret. One Memory per path keeps the suite fast.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM, fact, facts_json
from secret_corpus import LOOK_ALIKES, SECRETS, store_bytes

from mnemic import IngestResult, Memory, SecretRefusedError
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.notes import NoteRefusedError
from mnemic.core.safety import REDACTED, contains_secret, find_secrets, redact
from mnemic.tools import core as tools

SECRET_TEXTS = [text for _, text in SECRETS]
# The part of each text that is the secret itself, as the detector delimits it: what must appear
# nowhere in a store after the text went through a path that redacts rather than refuses. Short
# numbers (a 4-digit PIN) also occur by chance in ids and hashes: those are covered by the paths'
# record counts instead.
SECRET_SPANS = sorted({span for text in SECRET_TEXTS for h in find_secrets(text)
                       if len(span := text[h.start:h.end]) >= 6 and not (span.isdigit() and len(span) < 9)},
                      key=len)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        yield memory


def _everything_stored(memory: Memory, user_id: str | None = None) -> str:
    """Every text a reader can get back from the store, joined: records with their metadata and
    history, knowledge chunks, note data."""
    parts: list[str] = []
    users = [user_id] if user_id else memory.users()
    for who in users:
        for record in memory.list(user_id=who, include_invalid=True, include_expired=True, limit=1000):
            parts.append(record.model_dump_json())
            for entry in memory.history(record.id):
                parts.append(entry.model_dump_json())
    knowledge = memory.knowledge
    for chunk in knowledge.list(limit=1000):
        parts.append(chunk.model_dump_json())
        parts.extend(entry.model_dump_json() for entry in knowledge.history(chunk.id))
    return "\n".join(parts)


def _assert_holds_no_secret(stored: str) -> None:
    # JSON escapes quotes and newlines: compare against the decoded form too.
    decoded = stored.encode().decode("unicode_escape", errors="ignore")
    leaked = [span for span in SECRET_SPANS if span in stored or span in decoded]
    assert not leaked, f"{len(leaked)} secret(s) stored, e.g. {leaked[0][:12]}…"


# -- the detector ----------------------------------------------------------------------------


def test_the_corpus_is_large_and_varied() -> None:
    assert len(SECRETS) >= 150
    assert len({kind for kind, _ in SECRETS}) >= 40
    assert len(LOOK_ALIKES) >= 50


@pytest.mark.parametrize(("kind", "text"), SECRETS, ids=[f"{i}-{k}" for i, (k, _) in enumerate(SECRETS)])
def test_every_secret_is_found_and_redacted_whole(kind: str, text: str) -> None:
    assert find_secrets(text), f"missed a {kind}"
    redacted, _ = redact(text)
    assert REDACTED in redacted and not contains_secret(redacted)


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == [], [text[h.start:h.end] for h in find_secrets(text)]


# -- remember and remember_many ----------------------------------------------------------------


def test_remember_refuses_every_secret_and_keeps_every_look_alike(mem: Memory) -> None:
    for text in SECRET_TEXTS:
        assert mem.remember(text, user_id="alice") is None
    assert mem.list(user_id="alice", include_invalid=True, include_expired=True) == []
    assert mem.stats.secrets_refused >= len(SECRET_TEXTS)
    for text in LOOK_ALIKES:  # stored, or merged into a look-alike saying the same: never refused
        assert mem.remember(text, user_id="bob") is not None, text


def test_remember_many_drops_every_secret_in_one_batch(mem: Memory) -> None:
    ids = mem.remember_many([*SECRET_TEXTS, *LOOK_ALIKES], user_id="alice")
    mem.drain_writes()
    assert len(ids) == len(LOOK_ALIKES)  # an id for every look-alike, none for a secret
    _assert_holds_no_secret(_everything_stored(mem))


@pytest.mark.parametrize("field", ["metadata_value", "metadata_key", "source", "session_id", "categories",
                                   "scope", "actor"])
def test_remember_refuses_a_secret_in_any_other_field(mem: Memory, field: str) -> None:
    refused = 0
    for text in SECRET_TEXTS:
        options: dict[str, object] = {
            "metadata_value": {"metadata": {"note": text}},
            "metadata_key": {"metadata": {"x": 1}},
            "source": {"source": text},
            "session_id": {"session_id": text},
            "categories": {"categories": [text]},
            "scope": {"scope": "/" + text[:200]},
            "actor": {"actor": text},
        }[field]
        if field == "metadata_key":
            # Keys are identifiers (letters, digits, _ . -): the secrets that fit one.
            key = next((text[h.start:h.end] for h in find_secrets(text)), "")
            if not key.replace("_", "").replace("-", "").replace(".", "").isalnum() or len(key) > 64 \
                    or not key[:1].isalpha() or not find_secrets(key):
                continue  # only secrets that are secrets on their own (a password is one in context)
            options = {"metadata": {key: "x"}}
        if field == "categories" and len(text) > 64:
            continue  # longer than a category may be: refused as malformed before any screening
        try:
            stored = mem.remember("Prefers window seats.", user_id="alice", **options)  # type: ignore[arg-type]
        except SecretRefusedError as exc:
            assert text not in str(exc)
            refused += 1
            continue
        except (ValueError, TypeError):
            refused += 1  # refused as malformed (a category too long, say): nothing stored either
            continue
        assert stored is None or not contains_secret(stored.model_dump_json()), field
    assert refused > 0
    _assert_holds_no_secret(_everything_stored(mem))


def test_a_field_refusal_names_the_field_and_writes_nothing(mem: Memory) -> None:
    with pytest.raises(SecretRefusedError, match="metadata") as caught:
        mem.remember("Uses the staging cluster.", user_id="alice", metadata={"db_password": "Tr0ub4dor&3"})
    assert "Tr0ub4dor" not in str(caught.value) and isinstance(caught.value, ValueError)
    with pytest.raises(SecretRefusedError, match="source"):
        mem.remember_many(["Uses the staging cluster."], user_id="alice",
                          source="https://ci:hunter2pass@ci.acme.io")
    mem.drain_writes()
    assert mem.list(user_id="alice") == []
    assert mem.stats.secrets_refused == 2


# -- update and the lifecycle calls --------------------------------------------------------------


def test_update_refuses_a_secret_in_text_and_every_field(mem: Memory) -> None:
    record = mem.remember("Prefers window seats.", user_id="alice")
    assert record is not None
    for text in SECRET_TEXTS:
        for change in ({"text": text}, {"metadata": {"note": text}}, {"source": text}, {"reason": text}):
            with pytest.raises(SecretRefusedError) as caught:
                mem.update(record.id, **({"importance": 0.6} | change))  # type: ignore[arg-type]
            assert text not in str(caught.value)
    assert mem.get(record.id).text == "Prefers window seats."
    assert [e.action for e in mem.history(record.id)] == ["add"]
    for text in SECRET_TEXTS[:20]:
        with pytest.raises(SecretRefusedError):
            mem.invalidate(record.id, reason=text)
        with pytest.raises(SecretRefusedError):
            mem.delete(record.id, reason=text)
    _assert_holds_no_secret(_everything_stored(mem))
    assert mem.get(record.id).state == "valid"


# -- conversations -----------------------------------------------------------------------------


def test_observe_stores_no_secret_and_keeps_the_rest_of_the_turn(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as memory:
        for i in range(0, len(SECRET_TEXTS), 6):  # six secrets a turn: every one seen, fewer writes
            turn = SECRET_TEXTS[i:i + 6]
            messages = [{"role": "user", "content": f"I live in Austin. {text}"} for text in turn]
            messages += [{"role": "assistant", "content": f"Noted: {text}"} for text in turn]
            memory.observe(messages, user_id="alice", session_id="s", turn=i,
                           metadata={"task": f"t{i}", "ref": turn[0]})
        memory.drain_writes()
        stored = _everything_stored(memory)
        _assert_holds_no_secret(stored)
        assert REDACTED not in stored
        assert "Lives in Austin." in [r.text for r in memory.list(user_id="alice")]
        assert memory.stats.secrets_refused >= len(SECRET_TEXTS)


def test_llm_extraction_never_sees_nor_stores_a_secret(tmp_path: Path) -> None:
    # A model that answers with the secrets (as if it had seen them) must still store none.
    llm = ScriptedLLM(default=facts_json(*(fact(t) for t in SECRET_TEXTS[:60]),
                                         fact("Lives in Austin.", topic="personal_info")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as memory:
        for i in range(0, len(SECRET_TEXTS), 8):
            memory.observe([{"role": "user", "content": text} for text in SECRET_TEXTS[i:i + 8]], user_id="alice")
        memory.drain_writes()
        _assert_holds_no_secret(_everything_stored(memory))
        assert [r.text for r in memory.list(user_id="alice")] == ["Lives in Austin."]
    for prompt in llm.prompts:
        turn = prompt.split("Conversation turn:")[-1]
        assert not any(span in turn for span in SECRET_SPANS)


def test_memorize_stores_no_secret(mem: Memory) -> None:
    stored = mem.memorize(user_id="alice", messages=[{"role": "user", "content": t} for t in SECRET_TEXTS])
    assert all(not contains_secret(r.text) for r in stored)
    _assert_holds_no_secret(_everything_stored(mem))


# -- knowledge ---------------------------------------------------------------------------------


def _assert_knowledge_clean(memory: Memory) -> None:
    _assert_holds_no_secret(_everything_stored(memory))
    for text in SECRET_TEXTS[::7]:
        for hit in memory.knowledge.search(text, limit=10):
            assert not contains_secret(hit.text)


def test_knowledge_add_verbatim_refuses_each_secret_and_reports_it(mem: Memory) -> None:
    for text in SECRET_TEXTS:
        result = mem.knowledge.add(text, verbatim=True)
        assert isinstance(result, IngestResult)
        assert result.added == [] and len(result.refused) == 1 and result.refused[0].kinds
        assert text not in result.model_dump_json()
    assert mem.knowledge.count() == 0
    for text in LOOK_ALIKES[::3]:  # all of them go in through add() and add_files() below
        assert mem.knowledge.add(text, verbatim=True).added, text
    _assert_knowledge_clean(mem)


def test_knowledge_add_distilled_skips_chunks_holding_a_secret(tmp_path: Path) -> None:
    document = "\n\n".join([*LOOK_ALIKES, *SECRET_TEXTS, *LOOK_ALIKES[::-1]])
    llm = ScriptedLLM(default=json.dumps({"facts": ["Refunds take 5 days."]}))
    for model in (None, llm):
        with Memory(tmp_path / f"k{model is None}", embedder=HashEmbedder(), llm=model) as memory:
            result = memory.knowledge.add(document)
            assert result.refused and result.added
            _assert_knowledge_clean(memory)
    for prompt in llm.prompts:
        assert not any(span in prompt for span in SECRET_SPANS)


def test_knowledge_files_skip_chunks_holding_a_secret(mem: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, text in enumerate(SECRET_TEXTS):
        (folder / f"secret{i:03d}.txt").write_text(f"Setup {i}\n\n{text}\n")
    (folder / "faq.md").write_text("\n\n".join(LOOK_ALIKES))
    result = mem.knowledge.add_files([folder])
    assert len({r.source for r in result.refused}) == len(SECRET_TEXTS)
    single = tmp_path / "one.txt"
    single.write_text("\n\n".join(SECRET_TEXTS[:30]))
    assert mem.knowledge.add_file(single).refused
    _assert_knowledge_clean(mem)
    assert any("bank" in c.text for c in mem.knowledge.list(limit=1000))  # the look-alikes went in


def test_knowledge_refuses_a_secret_source_or_actor(mem: Memory) -> None:
    with pytest.raises(SecretRefusedError, match="source"):
        mem.knowledge.add("Refunds take 5 days.", source=f"https://u:{'Zq9!vX2#pL'}@wiki.acme.io/faq")
    with pytest.raises(SecretRefusedError, match="added_by"):
        mem.knowledge.add("Refunds take 5 days.", added_by="sk_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2")
    assert mem.knowledge.count() == 0


# -- notes, the LangGraph store, the tools -----------------------------------------------------


def test_notes_refuse_a_secret_in_text_data_key_and_scope(mem: Memory) -> None:
    for i, text in enumerate(SECRET_TEXTS):
        for kwargs in ({"text": text}, {"text": "config", "data": {"value": text}},
                       {"text": "config", "data": {"nested": [{"deep": text}]}}):
            with pytest.raises(NoteRefusedError):
                mem.notes.put(f"k{i}", user_id="alice", **kwargs)  # type: ignore[arg-type]
    assert mem.notes.scan(user_id="alice") == []
    _assert_holds_no_secret(_everything_stored(mem))


def test_the_langgraph_store_keeps_no_secret(mem: Memory) -> None:
    pytest.importorskip("langgraph")
    from mnemic.integrations.langgraph import MnemicStore

    store = MnemicStore(mem)
    for i, text in enumerate(SECRET_TEXTS):
        for value in ({"text": text}, {"text": "config", "env": {"line": text}}):
            with contextlib.suppress(Exception):  # how a refused put answers is the store's to decide
                store.put(("memories", "alice"), f"item{i}", value)
            assert store.get(("memories", "alice"), f"item{i}") is None
    assert store.search(("memories", "alice"), limit=1000) == []
    _assert_holds_no_secret(_everything_stored(mem))


def test_the_remember_tool_refuses_honestly(mem: Memory) -> None:
    for text in SECRET_TEXTS:
        answer = tools.remember(mem, text, user_id="alice")
        assert answer.startswith("Nothing was saved") and text not in answer
    answer = tools.remember(mem, "Prefers tea.", user_id="alice", source="token=" + "Zx81kQ9vLm27Tq4W")
    assert answer.startswith("Nothing was saved") and "source" in answer
    assert mem.list(user_id="alice") == []
    # A look-alike is never refused as a secret; one that is an instruction ("Reset your password
    # at …") is refused as that, which says so.
    for text in LOOK_ALIKES[:10]:
        answer = tools.remember(mem, text, user_id="alice")
        assert answer.startswith(("Saved", "Nothing was saved: that is an instruction")), answer
        assert "secret" not in answer


def test_the_run_log_keeps_no_secret_and_every_look_alike(mem: Memory) -> None:
    """Kickoff inputs and task outputs are kept for replay: redacted, not refused (the run happened)."""
    run = mem.runs.begin(group="crew", user_id="alice", inputs={f"input_{i}": t for i, t in enumerate(SECRET_TEXTS)})
    mem.runs.record_step(run.run_id, 0, {"output": {"raw": "\n".join(SECRET_TEXTS),
                                                    "messages": [{"content": t} for t in SECRET_TEXTS]}})
    kept = mem.runs.begin(group="crew", user_id="alice", inputs={"message": LOOK_ALIKES[0]})
    mem.runs.record_step(kept.run_id, 0, {"output": {"raw": "\n".join(LOOK_ALIKES), "messages": LOOK_ALIKES}})

    stored = mem.runs.get(run.run_id)
    assert stored is not None and REDACTED in stored.steps[0].output["output"]["raw"]
    _assert_holds_no_secret(json.dumps(stored.to_dict(), ensure_ascii=False))
    assert mem.stats.secrets_refused >= 2 * len(SECRET_TEXTS)  # each one in the inputs and the messages
    looked = mem.runs.get(kept.run_id)
    assert looked is not None and looked.steps[0].output["output"]["messages"] == LOOK_ALIKES
    assert looked.inputs == {"message": LOOK_ALIKES[0]}


def test_refusals_never_log_the_secret(mem: Memory, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("DEBUG", logger="mnemic"):
        for text in SECRET_TEXTS[:40]:
            mem.remember(text, user_id="alice")
            with pytest.raises(SecretRefusedError):
                mem.remember("x y z", user_id="alice", metadata={"note": text})
            mem.knowledge.add(text, verbatim=True)
    logged = caplog.text
    assert "secret" in logged
    assert not any(span in logged for span in SECRET_SPANS)


# -- framework adapters (they call core: one pass each shows the screen is reached) ---------------


def test_crewai_memory_stores_no_secret(mem: Memory) -> None:
    pytest.importorskip("crewai")
    from mnemic.integrations.crewai import CrewMemory

    crew_memory = CrewMemory(mem, user_id="alice")
    for text in SECRET_TEXTS:
        assert crew_memory.remember(text) is None
    crew_memory.remember_many([*SECRET_TEXTS, "Prefers window seats."], agent_role="Researcher")
    crew_memory.drain_writes()
    # The adapter redacts provenance labels itself; either way the token is not stored.
    with contextlib.suppress(SecretRefusedError):
        crew_memory.remember("Uses the staging cluster.",
                             metadata={"token": "ghp_" + "Zx81kQ9vLm27Tq4WaB3cD5eF6gH7iJ8kL9mN"})
    assert "Prefers window seats." in [r.text for r in mem.list(user_id="alice")]
    stored = _everything_stored(mem)
    _assert_holds_no_secret(stored)
    assert "Zx81kQ9v" not in stored


def test_the_langchain_remember_tool_stores_no_secret(mem: Memory) -> None:
    pytest.importorskip("langchain_core")
    from mnemic.tools.langchain import remember_tool

    tool = remember_tool(mem)
    config = {"configurable": {"user_id": "alice", "thread_id": "thread-7"}}
    for text in SECRET_TEXTS:
        answer = tool.invoke({"fact": text}, config=config)
        assert answer.startswith("Nothing was saved") and text not in answer
    assert mem.list(user_id="alice") == []


# -- fields that are not a record's text (found by an attack: each was stored) ------------------


def test_a_policy_holding_a_secret_is_refused_and_the_store_keeps_none_of_it(tmp_path: Path) -> None:
    # A policy sits in the namespace settings (and Chroma's write log, for good) and goes into
    # every extraction prompt.
    secret = "Admin login: root, my password is Sunflower#77"
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.set_policy(mode="auto", instructions="Keep facts short.")
        with pytest.raises(SecretRefusedError, match="instructions"):
            memory.set_policy(instructions=secret)
        with pytest.raises(SecretRefusedError, match="instructions"):
            memory.policy = {"mode": "auto", "instructions": secret}
        assert memory.policy.instructions == "Keep facts short."  # the stored policy is unchanged
    with pytest.raises(SecretRefusedError, match="instructions"):
        Memory(tmp_path / "other", embedder=HashEmbedder(), policy={"mode": "auto", "instructions": secret})
    assert b"Sunflower#77" not in store_bytes(tmp_path)


def test_a_models_reason_is_kept_without_the_secret_it_quotes(tmp_path: Path) -> None:
    # The secret answers the assistant's question, so no message holds it in a form the screen can
    # single out; the model saw it and quotes it while explaining why it stored nothing.
    llm = ScriptedLLM(default=facts_json(fact(
        "Has a home wifi network called HomeNet.", topic="personal_info",
        reason="new fact; the password the user gave (Sunflower#77) is a credential and was not recorded")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as memory:
        memory.observe([{"role": "user", "content": "My home wifi network is called HomeNet."},
                        {"role": "assistant", "content": "What is the password for HomeNet?"},
                        {"role": "user", "content": "Sunflower#77"}], user_id="alice")
        memory.drain_writes()
        (record,) = memory.list(user_id="alice")
        reasons = [entry.details.get("reason", "") for entry in memory.history(record.id)]
        assert any("was not recorded" in reason and REDACTED in reason for reason in reasons)
    assert b"Sunflower#77" not in store_bytes(tmp_path)


def test_a_secret_in_a_models_update_reason_neither_stores_it_nor_loses_the_turn(tmp_path: Path) -> None:
    # The replacement used to land with the reason in its history, then the retirement of the
    # old fact was refused: the secret stored, both facts served, the turn reported lost.
    llm = ScriptedLLM(default=facts_json(fact("Lives in Dallas.", topic="personal_info", decision="update",
                                              targets=[1], reason="moved; my password is Sunflower#77")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as memory:
        memory.remember("Lives in Austin.", user_id="alice")
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as memory:
        memory.observe([{"role": "user", "content": "I moved to Dallas."}], user_id="alice")
        memory.drain_writes()
        assert [r.text for r in memory.list(user_id="alice")] == ["Lives in Dallas."]
    assert b"Sunflower#77" not in store_bytes(tmp_path)


def test_a_secret_actor_is_refused_by_forget_and_note_deletion(mem: Memory) -> None:
    token = "ghp_Zx81kQ9vLm27Tq4WaB3cD5eF6gH7iJ8kL9mA"
    record = mem.remember("Likes tea.", user_id="alice")
    mem.notes.put("k", "Prefers window seats.", user_id="bob")
    with pytest.raises(SecretRefusedError, match="actor"):
        mem.forget(ids=[record.id], user_id="alice", actor=token)
    with pytest.raises(SecretRefusedError, match="actor"):
        mem.notes.delete("k", user_id="bob", actor=token)
    assert [r.text for r in mem.list(user_id="alice")] == ["Likes tea."]  # nothing erased either
    assert "k" in mem.notes.get(["k"], user_id="bob")
    assert token not in _everything_stored(mem)


def test_a_runs_labels_holding_a_secret_are_refused(mem: Memory) -> None:
    token = "ghp_Zx81kQ9vLm27Tq4WaB3cD5eF6gH7iJ8kL9mA"
    with pytest.raises(SecretRefusedError, match="kind"):
        mem.runs.begin(group="crew", user_id="alice", kind="my password is Sunflower#77")
    with pytest.raises(SecretRefusedError, match="run_id"):
        mem.runs.begin(group="crew", user_id="alice", run_id=token)
    run = mem.runs.begin(group="crew", user_id="alice", run_id="9f1c2b7e4d5a6f708192a3b4c5d6e7f8")
    with pytest.raises(SecretRefusedError, match="step_id"):
        mem.runs.record_step(run.run_id, 0, {"raw": "done"}, step_id="AKIA2E0A8F3B244C9986")
    mem.runs.record_step(run.run_id, 0, {"raw": "done"}, step_id="5d41402abc4b2a76b9719d911017c592")  # ids pass
    assert [r.run_id for r in mem.runs.runs(group="crew")] == [run.run_id]


# -- a credential given as the user id -------------------------------------------------------------

USER_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_a_secret_user_id_is_refused_up_front_on_every_write_path(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # remember() refused it, but remember_many() acknowledged it, journaled the statement on disk
    # and logged the token when the writer refused it later; observe() queued it the same way.
    with caplog.at_level("DEBUG", logger="mnemic"), Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.remember("Likes tea.", user_id="alice")
        with pytest.raises(SecretRefusedError, match="user_id") as caught:
            memory.remember_many(["I like coffee."], user_id=USER_TOKEN)
        assert USER_TOKEN not in str(caught.value)
        with pytest.raises(SecretRefusedError, match="user_id"):
            memory.remember("I like coffee.", user_id=USER_TOKEN)
        with pytest.raises(SecretRefusedError, match="user_id"):
            memory.observe([{"role": "user", "content": "I like coffee."}], user_id=USER_TOKEN)
        with pytest.raises(SecretRefusedError, match="user_id"):
            memory.memorize(user_id=USER_TOKEN, messages=[{"role": "user", "content": "I like coffee."}])
        memory.drain_writes()  # nothing was queued, so nothing fails later
        assert memory.users() == ["alice"]
    assert USER_TOKEN not in caplog.text
    assert USER_TOKEN.encode() not in store_bytes(tmp_path)


def test_a_secret_user_id_is_refused_by_runs_and_never_logged_by_the_langgraph_store(
        mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    # A crew kicked off with a credential as user_id stored it as its run's owner; the store's
    # refusal of an item filed under it quoted the namespace, credential and all, in its warning.
    from mnemic.integrations.langgraph import MnemicStore

    with pytest.raises(SecretRefusedError, match="user_id"):
        mem.runs.begin(group="crew", user_id=USER_TOKEN)
    with caplog.at_level("DEBUG", logger="mnemic"):
        MnemicStore(mem).put(("memories", USER_TOKEN), "seat", {"text": "Prefers window seats."})
    assert "did not store" in caplog.text and USER_TOKEN not in caplog.text
    assert mem.runs.runs() == []


def test_a_failed_queued_write_names_its_user_without_quoting_the_id(
        mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    # The description of a failed background write goes to the log and into BackgroundWriteError:
    # a user id there could be a credential a screen did not recognise.
    from mnemic import BackgroundWriteError

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError("No space left on device")

    mem.remember("Seed.", user_id="mallory-9f2k")
    mem._store.add = disk_full  # type: ignore[method-assign]
    with caplog.at_level("ERROR", logger="mnemic"):
        mem.remember_many(["I like coffee."], user_id="mallory-9f2k")
        mem.observe([{"role": "user", "content": "I like tea."}], user_id="mallory-9f2k")
        with pytest.raises(BackgroundWriteError) as raised:
            mem.drain_writes()
    assert "for a user (" in str(raised.value) and "No space left" in str(raised.value)
    assert "mallory-9f2k" not in str(raised.value) and "mallory-9f2k" not in caplog.text


def test_a_journaled_statement_a_secret_refusal_stops_is_dropped_on_open_not_kept_forever(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A journal an older mnemic wrote may hold a statement for a credential as user id: each open
    # replayed it, was refused, and kept it for the next open, so the credential stayed on disk.
    from mnemic.core.local_db import LocalDatabase
    from mnemic.core.records import MemoryRecord, record_id_for, text_hash, utcnow
    from mnemic.core.write_journal import WriteJournal

    path = tmp_path / "m"
    with Memory(path, embedder=HashEmbedder()) as memory:
        memory.remember("Likes tea.", user_id="alice")

    def statement(user: str, text: str) -> MemoryRecord:
        return MemoryRecord(id=record_id_for("default", user, "fact", text_hash(text)), text=text,
                            hash=text_hash(text), kind="fact", user_id=user, namespace="default",
                            created_at=utcnow(), updated_at=utcnow())

    database = LocalDatabase(path / "lexical.sqlite3", audit_trail=True)
    try:
        WriteJournal(database, "default").append(
            [statement(USER_TOKEN, "I like coffee."), statement("alice", "Alice likes green tea.")], actor="user")
    finally:
        database.close()
    with caplog.at_level("WARNING", logger="mnemic"), Memory(path, embedder=HashEmbedder()) as memory:
        assert sorted(r.text for r in memory.list(user_id="alice")) == ["Alice likes green tea.", "Likes tea."]
        assert memory.users() == ["alice"]
    assert "dropping 1 queued statement(s)" in caplog.text and USER_TOKEN not in caplog.text
    assert USER_TOKEN.encode() not in store_bytes(tmp_path)
    with Memory(path, embedder=HashEmbedder()) as memory:  # nothing left to replay
        assert len(memory.list(user_id="alice")) == 2


def test_lessons_store_no_secret(mem: Memory) -> None:
    # What a human-feedback node distils goes in through `learn` (a lesson quoting a card was stored).
    from mnemic.core.lessons import LessonPlace, LessonStore

    lessons = LessonStore(mem)
    place = LessonPlace("invoices", "draft")
    refused = [text for text in SECRET_TEXTS if not lessons.learn([text], user_id="alice", place=place)]
    assert refused == SECRET_TEXTS
    for text in ["Bill in amounts like 1,234,567; never round 4 / 5 stars up.", "Call 512-555-0199, 512-555-0123.",
                 "Years active: 2019, 2020, 2021, 2022, 2023."]:
        assert lessons.learn([text], user_id="bob", place=place), text
    assert lessons.list(user_id="alice", include_invalid=True) == []
    _assert_holds_no_secret(_everything_stored(mem))
