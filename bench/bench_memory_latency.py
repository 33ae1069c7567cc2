"""Latency and memory of remember/recall at 10k and 100k records across 100 users.

    python bench/bench_memory_latency.py --records 10000            # a few minutes
    nohup python bench/bench_memory_latency.py --records 10000,100000 > bench/results/latency.log 2>&1 &
    python bench/bench_memory_latency.py --path STORE --measure-only --remember-only   # remember vs its floor

The store grows to each size in turn (remember_many in batches, one user per batch) until it holds
that many records (repeated statements merge, so it takes more statements than records), then:
- remember: single `remember()` calls, embedding included, spread over the users, each followed by
  its reference: embedding another sentence and one plain Chroma `add` of it into a collection of
  the same database (the floor a durable remember can reach); the ratio of the two is printed;
- recall: `recall(query, user_id=..., limit=10)` across users, query embedding included;
- references measured on the same data in the same run, so a busy machine moves both alike:
  the query embedding alone, a raw query on mnemic's own per-user Chroma collection, and plain
  Chroma (one collection holding every user's records, dense top-10 with a `user_id` filter);
- peak RSS of the process (resource.getrusage) after each phase.

A tenth of the records are conversation turns (session and turn set, one `remember_many` call
per turn), so recall's neighbour fetch is exercised; the rest are standalone facts. Sentences and
queries are generated from a fixed seed. Medians and p95 are over the samples; compare ratios
against the references rather than absolute figures when other work shares the CPUs.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import json
import os
import random
import resource
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

NAMES = ("Alice Bruno Chen Dana Elif Farid Greta Hiro Ines Jonas Kemal Lena Mateo Nadia Omar Priya Quinn Rosa "
         "Sven Tariq Uma Viktor Wen Ximena Yusuf Zoe").split()
RELATIONS = "sister brother mother father cousin neighbour manager colleague friend daughter son partner".split()
VERBS = ("booked visited cancelled finished started recommended bought sold repaired painted cooked planned "
         "reviewed rescheduled joined left organised forgot mentioned borrowed returned").split()
OBJECTS = ("a flight to Lisbon|the quarterly report|a pottery class|a vegetarian lasagna|the team offsite|"
           "a second-hand bicycle|the kitchen shelves|a piano lesson|the marathon training plan|a birthday party|"
           "the database migration|a camping trip|the insurance claim|a guitar|the garden fence|a yoga retreat|"
           "the onboarding checklist|a concert ticket|the budget spreadsheet|a dentist appointment|"
           "the apartment lease|a watercolour painting|the customer demo|a hiking route|"
           "the book club meeting").split("|")
PLACES = ("in Berlin|at the office|near the station|in the old town|at home|at the community centre|in Tokyo|"
          "by the lake|at the library|in the mountains|at the café on Main Street|in Madrid|at the gym").split("|")
TIMES = ("last Monday|yesterday|two weeks ago|this morning|over the weekend|in March|on Friday evening|"
         "before the holidays|after lunch|last summer|next Tuesday|at the end of the month").split("|")
FOODS = ("sushi|lentil soup|dark chocolate|oat milk|spicy ramen|green tea|sourdough|peanuts|shellfish|"
         "espresso").split("|")
TOPICS = "budgets|hiring|the roadmap|security reviews|travel|pricing|documentation|on-call|accessibility".split("|")
TEMPLATES: tuple[Callable[[random.Random], str], ...] = (
    lambda r: f"{r.choice(NAMES)} {r.choice(VERBS)} {r.choice(OBJECTS)} {r.choice(PLACES)} {r.choice(TIMES)}.",
    lambda r: f"My {r.choice(RELATIONS)} {r.choice(NAMES)} {r.choice(VERBS)} {r.choice(OBJECTS)} {r.choice(TIMES)}.",
    lambda r: f"{r.choice(NAMES)} prefers {r.choice(FOODS)} over {r.choice(FOODS)}, allergic to {r.choice(FOODS)}.",
    lambda r: f"The meeting about {r.choice(TOPICS)} moved to {r.choice(TIMES)}; {r.choice(NAMES)} owns the notes.",
    lambda r: f"I {r.choice(VERBS)} {r.choice(OBJECTS)} with {r.choice(NAMES)} {r.choice(PLACES)}.",
    lambda r: f"{r.choice(NAMES)} said the plan for {r.choice(TOPICS)} needs {r.choice(OBJECTS)} first.",
)
QUERIES: tuple[Callable[[random.Random], str], ...] = (
    lambda r: f"What did {r.choice(NAMES)} do {r.choice(PLACES)}?",
    lambda r: f"When is {r.choice(OBJECTS)}?",
    lambda r: f"What food does {r.choice(NAMES)} like?",
    lambda r: f"Who owns the notes about {r.choice(TOPICS)}?",
    lambda r: f"what happened with my {r.choice(RELATIONS)}",
    lambda r: f"{r.choice(OBJECTS)} {r.choice(TIMES)}",
)
TURN_SHARE = 10  # one record in this many is a conversation turn


def sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES)(rng)


def query(rng: random.Random) -> str:
    return rng.choice(QUERIES)(rng)


# --words zipf: the templates hold a few hundred words, so one user's store stops growing at ~20k
# records (every statement is said again); a chat kept for years uses thousands. These texts draw
# from the ~17,000 English words of mnemic's related-words table (no user data) with Zipf's law
# (a word's share falls with its rank), function words between them.
FUNCTION_WORDS = "i you we the a to and of in on for with my it is was that this at so but just".split()


@functools.cache
def zipf_vocabulary() -> tuple[list[str], list[float]]:
    from mnemic.core.related_words import TABLE_PATH

    with gzip.open(TABLE_PATH, "rt", encoding="utf-8") as table:
        words = [line.split("\t", 1)[0] for line in table]
    random.Random(3).shuffle(words)
    return words, [1.0 / (rank + 10) for rank in range(len(words))]


def zipf_sentence(rng: random.Random) -> str:
    words, weights = zipf_vocabulary()
    content = rng.choices(words, weights, k=rng.randint(6, 28) // 2)
    return " ".join(f"{rng.choice(FUNCTION_WORDS)} {word}" for word in content).capitalize() + "."


def zipf_query(rng: random.Random) -> str:
    words, weights = zipf_vocabulary()
    asked = " ".join(rng.choices(words, weights, k=rng.randint(2, 5)))
    return f"{rng.choice(['what', 'when', 'who', 'where', 'how'])} {asked}?"


TEXTS: dict[str, tuple[Callable[[random.Random], str], Callable[[random.Random], str]]] = {
    "templates": (sentence, query), "zipf": (zipf_sentence, zipf_query)}


def percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))]


def summary_ms(samples: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": 1000 * statistics.median(samples), "p95_ms": 1000 * percentile(samples, 95),
            "mean_ms": 1000 * statistics.fmean(samples), "n": len(samples)}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def current_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


class Loader:
    """Grows a mnemic store deterministically: the same seed always yields the same records."""

    def __init__(self, memory: Any, users: int, seed: int, batch: int, words: str = "templates") -> None:
        self.memory = memory
        self.sentence, self.query = TEXTS[words]
        self.users = [f"user-{i:03d}" for i in range(users)]
        self.rng = random.Random(seed)
        self.batch = batch
        self.count = 0  # statements remembered
        self._grew_from = 0
        self.sessions = 0
        self.start = datetime(2024, 1, 1, tzinfo=timezone.utc)

    def stored(self) -> int:
        """Records in the store (invalidated ones included): repeated statements merge, so it
        holds fewer records than statements were remembered."""
        return sum(self.memory._store.count(u) for u in self.users)

    def grow_to(self, target: int, log: Callable[[str], None]) -> float:
        """Remember statements until the store holds `target` records."""
        began = time.perf_counter()
        self._grew_from = self.count
        goal = self.count + target - self.stored()
        while goal > self.count:
            self._remember_up_to(goal, began, log)
            goal = self.count + target - self.stored()
        return time.perf_counter() - began

    def _remember_up_to(self, goal: int, began: float, log: Callable[[str], None]) -> None:
        while self.count < goal:
            user = self.users[(self.count // self.batch) % len(self.users)]
            size = min(self.batch, goal - self.count)
            turns = size // TURN_SHARE
            when = self.start + timedelta(hours=self.count // 50)
            self.memory.remember_many([self.sentence(self.rng) for _ in range(size - turns)], user_id=user,
                                      created_at=when, source_kind="conversation")
            self.sessions += 1
            session = f"{user}-s{self.sessions}"
            for turn in range(1, turns + 1):
                self.memory.remember_many([self.sentence(self.rng)], user_id=user, session_id=session, turn=turn,
                                          created_at=when)
            self.count += size
            if self.count % 5_000 < size:
                self.memory.drain_writes()
                rate = (self.count - self._grew_from) / (time.perf_counter() - began)
                log(f"  remembered {self.count} statements ({rate:.0f}/s), {self.stored()} records stored, "
                    f"rss {current_rss_mb():.0f} MB")
        self.memory.drain_writes()


def plain_chroma(memory: Any, path: Path, users: Sequence[str]) -> Any:
    """One collection with every user's records (vectors read back from mnemic), user_id in metadata."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    with contextlib.suppress(Exception):  # left over from an earlier size
        client.delete_collection("plain")
    collection = client.create_collection("plain", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    store = memory._store  # the benchmark reads vectors back; nothing is written through it
    for user in users:
        handle = store.user_collection(user, create=False)
        if handle is None:
            continue
        got = handle.get(include=["embeddings", "documents"])
        for start in range(0, len(got["ids"]), 5000):
            collection.add(ids=got["ids"][start:start + 5000], embeddings=got["embeddings"][start:start + 5000],
                           documents=got["documents"][start:start + 5000],
                           metadatas=[{"user_id": user}] * len(got["ids"][start:start + 5000]))
    return collection


def measure(memory: Any, loader: Loader, args: argparse.Namespace, workdir: Path, size: int,
            log: Callable[[str], None]) -> dict[str, Any]:
    rng = random.Random(args.seed * 31 + size)
    users = loader.users
    result: dict[str, Any] = {"records": size, "users": len(users)}

    users = [u for u in users if memory._store.count(u) > 0]
    queries = [(rng.choice(users), loader.query(rng)) for _ in range(args.recall_samples)]
    if args.remember_only:
        queries = []
    if not queries:
        measure_remember(memory, users, rng, args, size, result, log, loader.sentence)
        result["peak_rss_mb"] = peak_rss_mb()
        result["rss_mb"] = current_rss_mb()
        return result
    for user, text in queries[:20]:  # warm-up: caches, lazy collection handles, allocator growth
        memory.recall(text, user_id=user, limit=10)
    samples = []
    for user, text in queries:
        began = time.perf_counter()
        memory.recall(text, user_id=user, limit=10)
        samples.append(time.perf_counter() - began)
    result["recall"] = summary_ms(samples)
    log(f"  recall p50 {result['recall']['p50_ms']:.1f} ms, p95 {result['recall']['p95_ms']:.1f} ms")

    embedder = memory.embedder
    embed_samples, raw_samples = [], []
    for user, text in queries:
        began = time.perf_counter()
        vector = embedder.embed([text])[0]
        embed_samples.append(time.perf_counter() - began)
        collection = memory._store.user_collection(user, create=False)  # the reference bypasses mnemic on purpose
        began = time.perf_counter()
        collection.query(query_embeddings=[vector], n_results=10, include=["documents", "metadatas", "distances"])
        raw_samples.append(time.perf_counter() - began)
    result["query_embedding"] = summary_ms(embed_samples)
    result["raw_user_collection_query"] = summary_ms(raw_samples)
    log(f"  references: embedding p50 {result['query_embedding']['p50_ms']:.1f} ms, raw per-user Chroma query "
        f"p50 {result['raw_user_collection_query']['p50_ms']:.1f} ms")

    if args.plain_chroma:
        began = time.perf_counter()
        plain = plain_chroma(memory, workdir / f"plain-{size}", users)
        load_s = time.perf_counter() - began
        plain_samples = []
        for user, text in queries:
            began = time.perf_counter()
            vector = embedder.embed([text])
            plain.query(query_embeddings=vector, n_results=10, where={"user_id": user},
                        include=["documents", "metadatas", "distances"])
            plain_samples.append(time.perf_counter() - began)
        result["plain_chroma_filtered_query_with_embedding"] = summary_ms(plain_samples)
        result["plain_chroma_load_s"] = load_s
        log(f"  plain Chroma (one collection, where user_id, embedding included) p50 "
            f"{result['plain_chroma_filtered_query_with_embedding']['p50_ms']:.1f} ms, "
            f"p95 {result['plain_chroma_filtered_query_with_embedding']['p95_ms']:.1f} ms")
        del plain

    measure_remember(memory, users, rng, args, size, result, log, loader.sentence)
    result["peak_rss_mb"] = peak_rss_mb()
    result["rss_mb"] = current_rss_mb()
    return result


def measure_remember(memory: Any, users: Sequence[str], rng: random.Random, args: argparse.Namespace, size: int,
                     result: dict[str, Any], log: Callable[[str], None],
                     sentence: Callable[[random.Random], str] = sentence) -> None:
    embedder = memory.embedder
    # remember() against its floor, measured in turns so a busy machine moves both alike: embedding
    # the text and one plain Chroma add of it (document, vector, the user in metadata) into a
    # collection of the same database.
    reference = memory._store.client.get_or_create_collection(  # bypasses mnemic on purpose
        f"bench-plain-add-{size}", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    remember_samples, reference_samples = [], []
    for i in range(args.remember_samples):
        user = users[i % len(users)]
        text = sentence(rng) + f" (note {size}-{i})"
        began = time.perf_counter()
        memory.remember(text, user_id=user)
        remember_samples.append(time.perf_counter() - began)
        text = sentence(rng) + f" (plain {size}-{i})"
        began = time.perf_counter()
        vector = embedder.embed([text])
        reference.add(ids=[f"plain-{size}-{i}"], documents=[text], embeddings=vector, metadatas=[{"user_id": user}])
        reference_samples.append(time.perf_counter() - began)
    result["remember"] = summary_ms(remember_samples)
    result["embed_plus_plain_add"] = summary_ms(reference_samples)
    result["remember_ratio_p50"] = result["remember"]["p50_ms"] / result["embed_plus_plain_add"]["p50_ms"]
    result["remember_ratio_p95"] = result["remember"]["p95_ms"] / result["embed_plus_plain_add"]["p95_ms"]
    log(f"  remember p50 {result['remember']['p50_ms']:.1f} ms, p95 {result['remember']['p95_ms']:.1f} ms; "
        f"embed + plain Chroma add p50 {result['embed_plus_plain_add']['p50_ms']:.1f} ms, "
        f"p95 {result['embed_plus_plain_add']['p95_ms']:.1f} ms; ratio p50 {result['remember_ratio_p50']:.2f}, "
        f"p95 {result['remember_ratio_p95']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", default="10000,100000", help="comma-separated store sizes, grown in turn")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--user-ids", default="",
                        help="comma-separated user ids to measure (with --measure-only: a store grown elsewhere)")
    parser.add_argument("--words", choices=sorted(TEXTS), default="templates",
                        help="templates: a few hundred words (one user saturates at ~20k records); zipf: "
                             "~17,000 English words drawn by Zipf's law, for a single user with 100k records")
    parser.add_argument("--batch", type=int, default=50,
                        help="records per user per round while loading (facts in one remember_many call)")
    parser.add_argument("--remember-samples", type=int, default=200)
    parser.add_argument("--recall-samples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-plain-chroma", dest="plain_chroma", action="store_false")
    parser.add_argument("--remember-only", action="store_true",
                        help="measure remember() and its reference (embed + one plain Chroma add) only")
    parser.add_argument("--path", type=Path, default=None,
                        help="store folder, kept afterwards (default: a temporary one, removed)")
    parser.add_argument("--measure-only", action="store_true",
                        help="measure an existing --path store as it is (grown by an earlier run with the same seed)")
    parser.add_argument("--resume", action="store_true",
                        help="grow an existing --path store from its current size (an interrupted run); the "
                             "new records come from the same generator seeded with --seed and that size")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--set", action="append", default=[], metavar="WEIGHT=VALUE",
                        help="a recall weight to change (e.g. related=0), to compare a signal's cost")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.records.split(",") if s.strip())

    command = "python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *sys.argv[1:]])

    def log(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)

    log(f"$ {command}")
    log(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    from mnemic import Memory, RecallWeights

    workdir = args.path or Path(tempfile.mkdtemp(prefix="mnemic-latency-"))
    changes = {key: float(value) for key, _, value in (item.partition("=") for item in args.set)}
    memory = Memory(workdir / "mnemic", weights=RecallWeights(**changes))
    memory.embedder.embed(["warm-up"])
    log(f"store {workdir}; after start rss {current_rss_mb():.0f} MB")
    loader = Loader(memory, args.users, args.seed, args.batch, args.words)
    if args.user_ids:
        loader.users = [u.strip() for u in args.user_ids.split(",") if u.strip()]
    if args.resume or args.measure_only:
        loader.count = loader.stored()  # seeds the generator: statements are not records, but any count will do
        loader.rng = random.Random(args.seed * 1_000_003 + loader.count)
        log(f"the store holds {loader.count} records")
        sizes = [loader.count] if args.measure_only else [s for s in sizes if s > loader.count]
    results = []
    try:
        for size in sizes:
            if args.measure_only:
                load_s = float("nan")
            else:
                log(f"growing to {size} records")
                load_s = loader.grow_to(size, log)
                log(f"  loaded in {load_s:.0f} s, load average {os.getloadavg()[0]:.2f}")
            result = measure(memory, loader, args, workdir, loader.stored(), log)
            result["load_s"] = load_s
            result["load_average"] = os.getloadavg()[0]
            results.append(result)
            loader.count += args.remember_samples
    finally:
        memory.close()
        if args.path is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(results)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"latency-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"command": command, "cpus": os.cpu_count(), "results": results}, indent=2))
    log(f"results written to {path}")


def print_table(results: Sequence[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="mnemic remember/recall latency (ms) and memory")
    for column in ("records", "remember p50/p95", "embed+add p50/p95", "ratio p50/p95", "recall p50/p95",
                   "embed p50", "raw Chroma p50", "plain Chroma+embed p50/p95", "peak RSS"):
        table.add_column(column, justify="right")

    def cell(r: dict[str, Any], key: str) -> str:
        found = r.get(key)
        return f"{found['p50_ms']:.1f} / {found['p95_ms']:.1f}" if found else "—"

    for r in results:
        table.add_row(
            f"{r['records']:,}",
            cell(r, "remember"),
            cell(r, "embed_plus_plain_add"),
            f"{r['remember_ratio_p50']:.2f} / {r['remember_ratio_p95']:.2f}",
            cell(r, "recall"),
            f"{r['query_embedding']['p50_ms']:.1f}" if "query_embedding" in r else "—",
            f"{r['raw_user_collection_query']['p50_ms']:.1f}" if "raw_user_collection_query" in r else "—",
            cell(r, "plain_chroma_filtered_query_with_embedding"),
            f"{r['peak_rss_mb']:.0f} MB",
        )
    Console().print(table)


if __name__ == "__main__":
    main()
