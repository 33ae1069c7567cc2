"""LoCoMo turn-level retrieval: mnemic beside plain Chroma and crewai's own Memory, in one run.

    python bench/bench_locomo.py                                  # all systems, all 10 conversations
    python bench/bench_locomo.py --systems mnemic,chroma --limit-conversations 2

Every turn of a conversation is stored as one memory ("Speaker: text", the session's date kept),
one user per conversation. Each question of categories 1-4 (1,540 questions; category 5,
adversarial, is left out as usual) is the query, asked once per k in 5, 10, 20 with that limit; a
turn counts as found when its dia_id is among the k results. R@k of a question is the share of its
evidence turns found, reported as the mean over questions, overall and per category, with the
share of questions whose evidence is all in the top 10. Nothing about the questions, answers or
evidence is given to a system at query time.

The data (snap-research/LoCoMo) is CC BY-NC 4.0: evaluation only. It is read from --data and no
part of it is written into the repository; results in bench/results/ hold only aggregate figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)
HALVES = ("tuning (conversations 0-4)", "held out (5-9)")
_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    index: int  # 1-based position in its session, as in the dia_id
    text: str  # "Speaker: text"
    when: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    conv_id: str
    turns: list[Turn]
    questions: list[Question]


@dataclass
class DataNotes:
    questions: int = 0
    no_evidence: int = 0
    refs_repaired: int = 0
    refs_dropped: list[str] = field(default_factory=list)


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware UTC datetime (LoCoMo gives no time zone)."""
    match = _DATE.search(text)
    if match is None:
        raise ValueError(f"unrecognised LoCoMo session date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    h = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    month_no = datetime.strptime(month[:3].title(), "%b").month
    return datetime(int(year), month_no, int(day), h, int(minute), tzinfo=timezone.utc)


def normalise_evidence(refs: Sequence[str], known: set[str], notes: DataNotes) -> list[str]:
    """Split and repair malformed refs ('D8:6; D9:17', 'D:11:26', 'D30:05'); drop what names no turn."""
    found: list[str] = []
    for ref in refs:
        parts = [p for p in re.split(r"[;,\s]+", ref) if p]
        for part in parts:
            match = _DIA_ID.fullmatch(part)
            if match is None:
                notes.refs_dropped.append(part)
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id != part or len(parts) > 1:
                notes.refs_repaired += 1
            if dia_id not in known:
                notes.refs_dropped.append(part)
                continue
            if dia_id not in found:
                found.append(dia_id)
    return found


def load_locomo(path: Path, *, captions: bool = False) -> tuple[list[Conversation], DataNotes]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    notes = DataNotes()
    conversations = []
    for sample in raw:
        conv = sample["conversation"]
        turns: list[Turn] = []
        sessions = sorted(int(m[1]) for k in conv if (m := _SESSION_KEY.fullmatch(k)) and isinstance(conv[k], list))
        for n in sessions:
            when = parse_session_date(conv[f"session_{n}_date_time"])
            for i, turn in enumerate(conv[f"session_{n}"], start=1):
                text = f"{turn['speaker']}: {turn['text']}"
                if captions and turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                turns.append(Turn(dia_id=turn["dia_id"], session=n, index=i, text=text, when=when))
        known = {t.dia_id for t in turns}
        questions = []
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            notes.questions += 1
            evidence = normalise_evidence(qa.get("evidence") or [], known, notes)
            if not evidence:
                notes.no_evidence += 1
                continue
            questions.append(Question(text=str(qa["question"]), category=int(qa["category"]), evidence=evidence))
        conversations.append(Conversation(conv_id=sample["sample_id"], turns=turns, questions=questions))
    return conversations, notes


# -- systems ------------------------------------------------------------------------------------


class System(Protocol):
    name: str

    def load(self, conv: Conversation) -> None: ...

    def finish_loading(self) -> None: ...

    def search(self, conv: Conversation, query: str, k: int) -> list[str]: ...

    def close(self) -> None: ...


class MnemicSystem:
    """mnemic's public API, default settings: `remember_many` per turn, `recall` per question."""

    name = "mnemic"

    def __init__(self, workdir: Path, embedder: Any) -> None:
        from mnemic import Memory

        self.memory = Memory(workdir / "mnemic", embedder=embedder)

    def load(self, conv: Conversation) -> None:
        for t in conv.turns:
            # One call per turn: `turn` is a per-call option. The background writer queues them.
            self.memory.remember_many(
                [t.text],
                user_id=conv.conv_id,
                session_id=f"{conv.conv_id}-s{t.session}",
                turn=t.index,
                created_at=t.when,
                author="user",
                source_kind="conversation",
            )

    def finish_loading(self) -> None:
        self.memory.drain_writes()

    def search(self, conv: Conversation, query: str, k: int) -> list[str]:
        matches = self.memory.recall(query, user_id=conv.conv_id, limit=k)
        found = []
        for m in matches:
            session = (m.record.session_id or "").rsplit("-s", 1)[-1]
            found.append(f"D{session}:{m.record.turn}")
        return found

    def close(self) -> None:
        self.memory.close()


class ChromaSystem:
    """Plain Chroma: one collection, the same MiniLM vectors, dense top-k with a user filter."""

    name = "chroma"

    def __init__(self, workdir: Path, embedder: Any) -> None:
        import chromadb
        from chromadb.config import Settings

        self.embedder = embedder
        self.client = chromadb.PersistentClient(
            path=str(workdir / "chroma"), settings=Settings(anonymized_telemetry=False)
        )
        self.collection = self.client.create_collection(
            "locomo", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )

    def load(self, conv: Conversation) -> None:
        vectors = self.embedder.embed([t.text for t in conv.turns])
        self.collection.add(
            ids=[f"{conv.conv_id}:{t.dia_id}" for t in conv.turns],
            documents=[t.text for t in conv.turns],
            metadatas=[
                {"user_id": conv.conv_id, "dia_id": t.dia_id, "created_at": t.when.timestamp()} for t in conv.turns
            ],
            embeddings=vectors,
        )

    def finish_loading(self) -> None:
        pass

    def search(self, conv: Conversation, query: str, k: int) -> list[str]:
        vector = self.embedder.embed([query])
        result = self.collection.query(
            query_embeddings=vector, n_results=k, where={"user_id": conv.conv_id}, include=["metadatas"]
        )
        return [str(m["dia_id"]) for m in (result["metadatas"] or [[]])[0] if m]

    def close(self) -> None:
        pass


class CrewAISystem:
    """crewai's unified Memory (LanceDB), shallow recall, explicit fields: no LLM on either path.

    crewai has no user: each conversation is a scope (`/locomo/<conv>`), recalled with that scope.
    `remember_many` per session (one call per turn costs ~120 ms of flow overhead); crewai keeps no
    caller id per item, so hits are mapped back to turns by their text. An LLM stub that raises
    stands in for the model: crewai only reaches for it to consolidate near-duplicate turns
    (similarity ≥ 0.85), and on failure it inserts, which is what it does offline anyway.
    """

    name = "crewai"

    def __init__(self, workdir: Path, embedder: Any) -> None:
        for key, value in (
            ("CREWAI_DISABLE_TELEMETRY", "true"),
            ("OTEL_SDK_DISABLED", "true"),
            ("CREWAI_TRACING_ENABLED", "false"),
        ):
            os.environ.setdefault(key, value)
        from crewai.events.event_listener import event_listener
        from crewai.llms.base_llm import BaseLLM
        from crewai.memory.storage.lancedb_storage import LanceDBStorage
        from crewai.memory.unified_memory import Memory

        event_listener.formatter.verbose = False  # one console panel per save otherwise
        logging.getLogger("crewai.memory.analyze").setLevel(logging.ERROR)
        self.llm_calls = 0
        owner = self

        class NoLLM(BaseLLM):
            def call(self, *args: Any, **kwargs: Any) -> Any:
                owner.llm_calls += 1
                raise RuntimeError("offline benchmark: no LLM")

            def supports_function_calling(self) -> bool:
                return False

        def embed(texts: Sequence[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in embedder.embed(list(texts))]

        self.memory = Memory(
            storage=LanceDBStorage(path=str(workdir / "crewai"), vector_dim=int(embedder.dimension)),
            embedder=embed,
            llm=NoLLM(model="offline-none"),
        )
        self.by_text: dict[tuple[str, str], list[str]] = {}

    def load(self, conv: Conversation) -> None:
        by_session: dict[int, list[Turn]] = {}
        for t in conv.turns:
            by_session.setdefault(t.session, []).append(t)
            self.by_text.setdefault((conv.conv_id, t.text), []).append(t.dia_id)
        for turns in by_session.values():
            self.memory.remember_many(
                [t.text for t in turns], scope=f"/locomo/{conv.conv_id}", categories=["conversation"], importance=0.5
            )

    def finish_loading(self) -> None:
        self.memory.drain_writes()

    def search(self, conv: Conversation, query: str, k: int) -> list[str]:
        matches = self.memory.recall(query, scope=f"/locomo/{conv.conv_id}", limit=k, depth="shallow")
        found: list[str] = []
        for m in matches:
            found.extend(self.by_text.get((conv.conv_id, m.record.content), []))
        return found

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.memory.close()


SYSTEMS: dict[str, Callable[[Path, Any], System]] = {
    "mnemic": MnemicSystem, "chroma": ChromaSystem, "crewai": CrewAISystem,
}


# -- scoring ------------------------------------------------------------------------------------


@dataclass
class Tally:
    n: int = 0
    recall: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))
    all_at_10: int = 0

    def add(self, found: dict[int, Sequence[str]], evidence: Sequence[str]) -> None:
        """`found[k]`: what a search for k results returned."""
        self.n += 1
        wanted = set(evidence)
        for k in KS:
            self.recall[k] += len(wanted & set(found[k][:k])) / len(wanted)
        self.all_at_10 += wanted <= set(found[10][:10])

    def summary(self) -> dict[str, float]:
        if not self.n:
            return {"n": 0}
        out: dict[str, float] = {"n": self.n}
        for k in KS:
            out[f"R@{k}"] = 100.0 * self.recall[k] / self.n
        out["all@10"] = 100.0 * self.all_at_10 / self.n
        return out


def evaluate(system: System, conversations: Sequence[Conversation]) -> dict[str, Any]:
    overall = Tally()
    per_category = {c: Tally() for c in CATEGORIES}
    per_conversation: dict[str, Tally] = {}
    # Conversations 0-4 tune mnemic's weights, 5-9 are held out: each half is reported apart.
    per_half = {half: {c: Tally() for c in (0, *CATEGORIES)} for half in HALVES}
    latencies: list[float] = []
    for position, conv in enumerate(conversations):
        tally = per_conversation.setdefault(conv.conv_id, Tally())
        half = per_half[HALVES[0] if position < 5 else HALVES[1]]
        for q in conv.questions:
            # One search per k, as a caller asking for k results would make it: a system may size
            # its candidate pools by the limit (mnemic does).
            found: dict[int, Sequence[str]] = {}
            for k in KS:
                start = time.perf_counter()
                found[k] = system.search(conv, q.text, k)
                if k == 10:
                    latencies.append(time.perf_counter() - start)
            for t in (overall, per_category[q.category], tally, half[0], half[q.category]):
                t.add(found, q.evidence)
    return {
        "overall": overall.summary(),
        "per_category": {CATEGORIES[c]: t.summary() for c, t in per_category.items()},
        "per_conversation": {c: t.summary() for c, t in per_conversation.items()},
        "per_half": {half: {("all" if c == 0 else CATEGORIES[c]): t.summary() for c, t in tallies.items()}
                     for half, tallies in per_half.items()},
        "query_ms_p50": 1000 * statistics.median(latencies) if latencies else None,
        "query_ms_p95": 1000 * _percentile(latencies, 95) if latencies else None,
    }


def _percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))]


def run_system(name: str, conversations: Sequence[Conversation], workdir: Path, embedder: Any) -> dict[str, Any]:
    start = time.perf_counter()
    system: System = SYSTEMS[name](workdir, embedder)
    try:
        for conv in conversations:
            system.load(conv)
        system.finish_loading()
        load_s = time.perf_counter() - start
        result = evaluate(system, conversations)
        result["load_s"] = load_s
        if isinstance(system, CrewAISystem):
            result["llm_calls_attempted"] = system.llm_calls
        return result
    finally:
        system.close()


# -- report -------------------------------------------------------------------------------------


def print_table(results: dict[str, dict[str, Any]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("system")
    table.add_column("questions", justify="right")
    for k in KS:
        table.add_column(f"R@{k}", justify="right")
    table.add_column("all@10", justify="right")
    table.add_column("query p50 (k=10)", justify="right")
    table.add_column("load", justify="right")
    for name, res in results.items():
        if "error" in res:
            table.add_row(name, "—", "—", "—", "—", "—", "—", res["error"][:60])
            continue
        rows = [("all", res["overall"])] + [(f"  {c}", s) for c, s in res["per_category"].items()]
        for label, s in rows:
            if not s.get("n"):
                continue
            extra = (f"{res['query_ms_p50']:.1f} ms", f"{res['load_s']:.0f} s") if label == "all" else ("", "")
            table.add_row(
                f"{name} {label}" if label == "all" else label,
                str(int(s["n"])),
                *(f"{s[f'R@{k}']:.1f}" for k in KS),
                f"{s['all@10']:.1f}",
                *extra,
            )
        table.add_section()
    Console().print(table)
    halves = Table(title="R@5 / R@10 per half (mnemic is tuned on the first half only)")
    halves.add_column("system")
    halves.add_column("half")
    for label in ("all", *CATEGORIES.values()):
        halves.add_column(label, justify="right")
    labels = ("all", *CATEGORIES.values())
    for name, res in results.items():
        for half, tallies in res.get("per_half", {}).items():
            halves.add_row(name, half, *(f"{tallies[label]['R@5']:.1f} / {tallies[label]['R@10']:.1f}"
                                         if tallies[label].get("n") else "—" for label in labels))
    Console().print(halves)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "locomo10.json")
    parser.add_argument("--systems", default="mnemic,chroma,crewai")
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument(
        "--conversations", default=None, help="comma-separated sample ids (e.g. a tuning subset); default all"
    )
    parser.add_argument(
        "--captions",
        action="store_true",
        help="append the image caption to turns that share an image (off: 'Speaker: text' only)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--keep", action="store_true", help="keep the stores (their folder is printed)")
    args = parser.parse_args()

    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {sorted(SYSTEMS)}")
    if not args.data.exists():
        parser.error(f"no LoCoMo data at {args.data}; pass --data")
    conversations, notes = load_locomo(args.data, captions=args.captions)
    if args.conversations:
        wanted = {c.strip() for c in args.conversations.split(",")}
        conversations = [c for c in conversations if c.conv_id in wanted]
    if args.limit_conversations:
        conversations = conversations[: args.limit_conversations]

    command = "python " + " ".join(shlex.quote(a) for a in [str(Path(sys.argv[0])), *sys.argv[1:]])
    scored = sum(len(c.questions) for c in conversations)
    print(f"$ {command}")
    print(
        f"LoCoMo: {len(conversations)} conversations, {sum(len(c.turns) for c in conversations)} turns, "
        f"{scored} questions scored (categories 1-4 in the whole file: {notes.questions}, of which "
        f"{notes.no_evidence} name no usable evidence turn and are left out; {notes.refs_repaired} refs "
        f"repaired, dropped {notes.refs_dropped})"
    )

    from mnemic.core.embeddings import default_embedder

    embedder = default_embedder()
    embedder.embed(["warm-up"])
    workdir = Path(tempfile.mkdtemp(prefix="mnemic-locomo-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        for name in names:
            print(f"running {name} ...", flush=True)
            try:
                with _quiet_stdout(name == "crewai"):
                    results[name] = run_system(name, conversations, workdir, embedder)
            except ImportError as exc:
                results[name] = {"error": f"not installed ({exc}); pip install 'mnemic[crewai]'"}
            except Exception as exc:  # a system that cannot run offline is reported, not fatal
                results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"  {name}: {json.dumps(results[name].get('overall', results[name].get('error')))}", flush=True)
    finally:
        if args.keep:
            print(f"stores kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    print_table(results, f"LoCoMo turn-level evidence recall (%), {scored} questions, MiniLM embeddings")
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = args.out / f"locomo-{stamp}.json"
    path.write_text(
        json.dumps(
            {
                "command": command,
                "conversations": [c.conv_id for c in conversations],
                "questions_scored": scored,
                "data_notes": {
                    "questions_cat_1_4": notes.questions,
                    "no_evidence": notes.no_evidence,
                    "refs_repaired": notes.refs_repaired,
                    "refs_dropped": notes.refs_dropped,
                },
                "captions": args.captions,
                "cpus": os.cpu_count(),
                "results": results,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    print(f"results written to {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


@contextlib.contextmanager
def _quiet_stdout(enabled: bool) -> Iterator[None]:
    """crewai's flows print banners to stdout; the benchmark's own lines go to the real stream."""
    if not enabled:
        yield
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


if __name__ == "__main__":
    main()
