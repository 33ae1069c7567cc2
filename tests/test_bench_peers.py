"""bench/bench_peers.py is wired right: every system it compares stores, searches and keeps users apart.

A tiny synthetic conversation per user goes through each system with the fast HashEmbedder; no LoCoMo
data is needed. mnemic and plain Chroma always run; a peer whose package is missing is skipped with
the install command in the reason. Nothing here may reach the network: a guard refuses and counts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from mnemic.core.embeddings import HashEmbedder

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import bench_peers  # noqa: E402
from bench_locomo import Conversation, Question, Turn  # noqa: E402
from peer_systems import PEERS, Mem0System, PeerUnavailable, offline_environment  # noqa: E402

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def _conversation(conv_id: str, session: int, lines: list[str], questions: list[Question]) -> Conversation:
    turns = [Turn(dia_id=f"D{session}:{i}", session=session, index=i, text=t, when=WHEN)
             for i, t in enumerate(lines, start=1)]
    return Conversation(conv_id=conv_id, turns=turns, questions=questions)


# Two users whose turns sit in different sessions: any of A's dia_ids in B's results is a leak.
ALICE = _conversation(
    "conv-a",
    1,
    [
        "Ana: I adopted a grey kitten called Pixel from the shelter.",
        "Ben: My sister moved to Lisbon to work at the aquarium.",
        "Ana: Our choir sings Brahms at the cathedral in December.",
        "Ben: I am training for the Porto marathon in the autumn.",
    ],
    [
        Question("Which kitten did Ana adopt from the shelter?", 4, ["D1:1"]),
        Question("Where does Ben's sister work in Lisbon?", 4, ["D1:2"]),
    ],
)
BOB = _conversation(
    "conv-b",
    7,
    [
        "Cleo: I repaired the old sailing boat with my uncle.",
        "Dev: We are planting tomatoes on the allotment this weekend.",
        "Cleo: The kitten next door keeps climbing our fence.",
    ],
    [Question("What did Cleo repair with her uncle?", 4, ["D7:1"])],
)
CONVERSATIONS = [ALICE, BOB]


def _build(name: str, workdir: Path) -> Any:
    """The system, or a skip that says what to install when a peer cannot run here."""
    try:
        return PEERS[name].build(workdir, HashEmbedder(384))
    except PeerUnavailable as exc:
        pytest.skip(str(exc))


def _requirement(name: str) -> str | None:
    """Why a peer cannot run here (its package is missing), or None."""
    needs = {"crewai": ["crewai"], "langgraph-memory": ["langgraph"], "langgraph-sqlite": ["langgraph", "sqlite_vec"]}
    if name.startswith("mem0"):
        needs[name] = ["mem0", "langchain"]  # Mem0 takes the embedder and the refusing LLM through langchain
    for module in needs.get(name, []):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: pip install 'mnemic[peers]'"
    return None


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The environment bench_peers gives a child, plus the guard that refuses any outside connection."""
    for key, value in offline_environment(tmp_path).items():
        monkeypatch.setenv(key, value)
    guard = bench_peers.NetworkGuard()
    with guard.installed():
        yield guard
    assert not guard.attempts, f"a system tried to reach the network: {dict(guard.attempts)}"


@pytest.mark.parametrize("name", list(PEERS))
def test_each_system_finds_the_turn_and_keeps_users_apart(
    name: str, tmp_path: Path, offline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = _requirement(name)
    if reason:
        pytest.skip(reason)
    for key, value in PEERS[name].env(tmp_path).items():
        monkeypatch.setenv(key, value)
    system = _build(name, tmp_path)
    try:
        for conv in CONVERSATIONS:
            system.load(conv)
        system.finish_loading()
        for conv in CONVERSATIONS:
            own = {t.dia_id for t in conv.turns}
            for q in conv.questions:
                found = system.search(conv, q.text, 3)
                assert 0 < len(found) <= 3
                assert set(found) <= own, f"{name} served another user's turns: {found}"
                assert q.evidence[0] in found, f"{name} missed {q.evidence} for {q.text!r}: {found}"
        assert getattr(system, "llm_calls", 0) == 0
    finally:
        system.close()


def test_measure_reports_recall_latency_ingest_and_llm_calls(tmp_path: Path, offline: Any) -> None:
    result = bench_peers.measure("chroma", CONVERSATIONS, tmp_path, HashEmbedder(384))
    assert result["overall"]["n"] == 3
    assert result["overall"]["R@5"] == pytest.approx(100.0)
    assert result["per_category"]["single-hop"]["n"] == 3
    assert result["turns"] == 7 and result["ingest_turns_per_s"] > 0
    assert result["query_ms_p50"] > 0 and result["query_ms_p95"] >= result["query_ms_p50"]
    assert result["llm_calls"] == 0 and result["llm_slot"] is False


def test_mem0_counts_an_llm_call_so_zero_means_none_was_made(tmp_path: Path, offline: Any) -> None:
    """The refusing LLM sees Mem0's extraction call when `infer=True`: the benchmark's 0 is a real count."""
    if _requirement("mem0-qdrant"):
        pytest.skip(_requirement("mem0-qdrant"))
    system = _build("mem0-qdrant", tmp_path)
    assert isinstance(system, Mem0System)
    try:
        system.load(ALICE)
        assert system.llm_calls == 0
        with pytest.raises(Exception, match="no LLM"):
            system.memory.add("Ana: I also like jazz.", user_id="conv-a", infer=True)
        assert system.llm_calls == 1
    finally:
        system.close()


@pytest.mark.parametrize(("name", "keyword"), [("mem0-qdrant", True), ("mem0-qdrant-dense", False)])
def test_mem0_keyword_search_runs_offline_only_from_the_generated_model(
    name: str, keyword: bool, tmp_path: Path, offline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if _requirement(name) or importlib.util.find_spec("fastembed") is None:
        pytest.skip("mem0ai and fastembed are not installed: pip install 'mnemic[peers]'")
    for key, value in PEERS[name].env(tmp_path).items():
        monkeypatch.setenv(key, value)
    system = _build(name, tmp_path)
    assert isinstance(system, Mem0System)
    try:
        system.load(ALICE)
        assert system.keyword_search_works(ALICE) is keyword
    finally:
        system.close()


def test_network_guard_refuses_the_outside_and_lets_loopback_through() -> None:
    guard = bench_peers.NetworkGuard()
    real = (socket.socket.connect, socket.getaddrinfo)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with guard.installed():
            with pytest.raises(OSError, match="offline"):
                socket.create_connection(("203.0.113.7", 80), timeout=1)  # TEST-NET-3: never routed
            with socket.create_connection(server.getsockname(), timeout=1):
                pass
    assert guard.attempts == {"203.0.113.7": 1}
    assert (socket.socket.connect, socket.getaddrinfo) == real  # put back on the way out


def test_sample_spreads_questions_over_every_conversation() -> None:
    many = [_conversation(f"c{i}", 1, ["x"], [Question(f"q{i}-{j}", 4, ["D1:1"]) for j in range(10)])
            for i in range(4)]
    picked = bench_peers.sample_evenly(many, 8)
    assert [len(c.questions) for c in picked] == [2, 2, 2, 2]
    assert [q.text for q in picked[1].questions] == ["q1-0", "q1-5"]
    assert all(len(c.turns) == 1 for c in picked)  # every turn is still stored
    assert bench_peers.sample_evenly(many, 100) == many


@pytest.mark.minilm
def test_child_process_writes_its_result(tmp_path: Path) -> None:
    """The parent's side of one system: a child on a LoCoMo-shaped file leaves figures and a clean guard."""
    data = tmp_path / "tiny-locomo.json"
    sample = {
        "sample_id": "conv-a",
        "conversation": {
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": t.text.split(":")[0], "text": t.text.split(": ", 1)[1], "dia_id": t.dia_id}
                          for t in ALICE.turns],
        },
        "qa": [{"question": q.text, "category": q.category, "evidence": q.evidence, "answer": "-"}
               for q in ALICE.questions],
    }
    data.write_text(json.dumps([sample]), encoding="utf-8")
    result = tmp_path / "result.json"
    completed = subprocess.run(
        [sys.executable, str(BENCH / "bench_peers.py"), "--child", "chroma", "--result", str(result),
         "--workdir", str(tmp_path), "--data", str(data)],
        env={**os.environ, **offline_environment(tmp_path)},
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    figures = json.loads(result.read_text(encoding="utf-8"))
    assert "error" not in figures, figures
    assert figures["overall"]["n"] == 2 and figures["overall"]["R@5"] == pytest.approx(100.0)
    assert figures["rss_peak_mb"] >= figures["rss_baseline_mb"] > 0
    assert figures["embed_query_ms_p50"] > 0  # the in-process reference search latency is read against
    assert figures["network_attempts"] == {}


@pytest.mark.parametrize("name", ["langgraph-memory", "langgraph-sqlite"])
def test_langgraph_stores_embed_the_turn_text_itself(name: str, tmp_path: Path, offline: Any) -> None:
    """Same vectors for all: SqliteStore reads `text_fields`, and given only `fields` embeds the whole JSON value."""
    if _requirement(name):
        pytest.skip(_requirement(name))
    system = _build(name, tmp_path)
    try:
        system.load(ALICE)
        turn = ALICE.turns[2]
        best = system.store.search(("locomo", ALICE.conv_id), query=turn.text, limit=1)[0]  # type: ignore[attr-defined]
        assert (best.key, best.score) == (turn.dia_id, pytest.approx(1.0, abs=1e-4))
    finally:
        system.close()
