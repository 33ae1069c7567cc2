"""Write pipeline: observe() latency while extraction runs behind it, and LLM calls per turn and per recall.

    python bench/bench_write_pipeline.py --embedder minilm --turns 60 --llm-ms 50 --repeats 3

A scripted model stands in for the LLM: it sleeps --llm-ms (a fast hosted model) and answers in the
extraction schema with the facts of the turn. Two cadences are measured:

- paced: one turn every --interval-ms, as when an agent replies between turns;
- busy: one turn every --busy-interval-ms, faster than the writer can extract, so every observe()
  call lands while extraction, embedding and Chroma writes are running behind it.

observe() only captures the messages and queues the turn; the policy gate, secret redaction,
extraction, embedding, reconciliation and writes all run on the background writer.

Figures are medians over --repeats runs. LLM calls per auto-extracted turn = extract calls / turns
extracted (target exactly 1); per recall = model calls during N recalls / N (target 0), cross-checked
with `memory.stats.llm_calls["recall"]`.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.extraction import deterministic_extract, normalise_messages
from mnemic.core.fences import unfenced

CITIES = ["Austin", "Denver", "Lisbon", "Osaka", "Berlin", "Toronto", "Nairobi", "Lima", "Oslo", "Perth"]
THINGS = ["bullet points", "short answers", "tea", "jazz", "hiking", "chess", "sushi", "sci-fi novels"]
PETS = ["dog", "cat", "parrot", "rabbit"]
NAMES = ["Rex", "Luna", "Kiwi", "Max", "Olive", "Pixel"]


def make_turns(count: int, seed: int = 7) -> list[list[dict[str, str]]]:
    rng = random.Random(seed)
    turns = []
    for i in range(count):
        user = rng.choice([
            f"I live in {rng.choice(CITIES)} and I prefer {rng.choice(THINGS)}.",
            f"My {rng.choice(PETS)} is named {rng.choice(NAMES)}. Can you suggest a toy?",
            f"I work as a {rng.choice(['nurse', 'pilot', 'chef', 'teacher'])} and I have {i % 5 + 1} kids.",
            f"What's the weather in {rng.choice(CITIES)}? I'm flying there on day {i}.",
        ])
        turns.append([{"role": "user", "content": user},
                      {"role": "assistant", "content": "Thanks, noted. Here is what I found for you."}])
    return turns


class ScriptedModel:
    """Sleeps like a model, answers like one: the turn's facts in the extraction schema."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        with self._lock:
            self.calls += 1
        time.sleep(self.delay_s)
        conversation = messages[-1]["content"].split("Conversation turn:\n", 1)[-1]
        turn = [{"role": role, "content": text} for role, text in unfenced(conversation)
                if role in ("user", "assistant")]
        facts = [{"text": f.text, "topic": f.topic, "author": f.author, "from_tool": False,
                  "decision": "insert", "targets": [], "reason": "new"}
                 for f in deterministic_extract(normalise_messages(turn))]
        return json.dumps({"facts": facts})


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_once(args: argparse.Namespace, *, interval_ms: float) -> dict[str, float]:
    model = ScriptedModel(args.llm_ms / 1000)
    embedder = HashEmbedder() if args.embedder == "hash" else None
    with tempfile.TemporaryDirectory(prefix="mnemic-bench-") as tmp, \
            Memory(Path(tmp) / "m", embedder=embedder, policy="auto", llm=model) as memory:
        users = [f"user{i}" for i in range(args.users)]
        memory.observe([{"role": "user", "content": "I like warm-ups."}], user_id="warmup")
        memory.drain_writes()  # thread start, model load and first collection are not observe()'s cost
        base_calls, base_turns = memory.stats.llm_calls["extract"], memory.stats.turns_extracted
        latencies = []
        for i, turn in enumerate(make_turns(args.turns, seed=args.seed)):
            started = time.perf_counter()
            memory.observe(turn, user_id=users[i % len(users)], session_id=f"s{i % len(users)}", turn=i)
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(interval_ms / 1000)
        drain_started = time.perf_counter()
        memory.drain_writes()
        drain_s = time.perf_counter() - drain_started
        extract_calls = memory.stats.llm_calls["extract"] - base_calls
        turns_extracted = memory.stats.turns_extracted - base_turns
        before = model.calls
        for i in range(args.recalls):
            memory.recall(f"where does the user live {CITIES[i % len(CITIES)]}", user_id=users[i % len(users)])
        recall_calls = model.calls - before
        return {
            "p50_ms": statistics.median(latencies),
            "p95_ms": percentile(latencies, 0.95),
            "max_ms": max(latencies),
            "llm_per_turn": extract_calls / max(1, turns_extracted),
            "llm_per_recall": recall_calls / max(1, args.recalls),
            "stats_recall_calls": float(memory.stats.llm_calls["recall"]),
            "facts": float(len(memory.list(limit=100_000))),
            "drain_s": drain_s,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--users", type=int, default=6)
    parser.add_argument("--interval-ms", type=float, default=250.0,
                        help="time between turns in the paced run (the agent's reply time)")
    parser.add_argument("--busy-interval-ms", type=float, default=10.0,
                        help="time between turns in the busy run (faster than the writer drains)")
    parser.add_argument("--llm-ms", type=float, default=50.0, help="the scripted model's latency")
    parser.add_argument("--recalls", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print("command:", shlex.join(["python", "bench/bench_write_pipeline.py", *sys.argv[1:]]))
    print(f"embedder={args.embedder} turns={args.turns} users={args.users} llm={args.llm_ms:.0f} ms "
          f"interval={args.interval_ms:.0f} ms (busy {args.busy_interval_ms:.0f} ms) repeats={args.repeats}")
    for label, interval in (("paced", args.interval_ms), ("busy", args.busy_interval_ms)):
        runs = [run_once(args, interval_ms=interval) for _ in range(args.repeats)]
        for i, run in enumerate(runs, start=1):
            print(f"  {label:6} run {i}: observe p50 {run['p50_ms']:.3f} ms  p95 {run['p95_ms']:.3f} ms  "
                  f"max {run['max_ms']:.2f} ms  | drain {run['drain_s']:.2f} s  facts {run['facts']:.0f}")

        def median(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        print(f"{label:6} median: observe p50 {median('p50_ms'):.3f} ms, p95 {median('p95_ms'):.3f} ms; "
              f"LLM calls per auto-extracted turn {median('llm_per_turn'):.2f}; "
              f"per recall {median('llm_per_recall'):.2f} (stats.llm_calls['recall'] = "
              f"{median('stats_recall_calls'):.0f})")


if __name__ == "__main__":
    main()
