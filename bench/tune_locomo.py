"""Tuning harness for recall on LoCoMo: one stored copy, many weightings, both halves kept apart.

    python bench/tune_locomo.py --store /tmp/locomo-store                 # loads once, then reuses it
    python bench/tune_locomo.py --store /tmp/locomo-store --ablate        # each signal off in turn
    python bench/tune_locomo.py --store /tmp/locomo-store --set links=0.3 --set session=0.4

Conversations 0-4 are the tuning half, 5-9 the held-out half: a change is kept only when it helps
both. Turns are stored exactly as `bench_locomo.py` stores them (through the public API); each
question is recalled once with limit 10 (R@5 is the top five of that call: mnemic sizes its pools
by max(2 x limit, 20), so limits 5 and 10 rank alike). Query embeddings are cached across variants.
Only aggregate figures are printed; no LoCoMo text is written anywhere.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_locomo import CATEGORIES, Conversation, MnemicSystem, load_locomo  # noqa: E402

# Each ablation turns one signal off (weights set to 0), as listed in the closing note.
ABLATIONS: dict[str, dict[str, float]] = {
    "full": {},
    "-coverage": {"coverage": 0.0},
    "-bm25": {"lexical": 0.0},
    "-semantic": {"semantic": 0.0},
    "-related": {"related": 0.0},
    "-context": {"context": 0.0, "context_far": 0.0},
    "-context_far": {"context_far": 0.0},
    "-session": {"session": 0.0},
    "-links": {"links": 0.0},
    "-temporal": {"temporal": 0.0},
    "-recency": {"recency": 0.0},
    "-importance": {"importance": 0.0},
}


class CachedEmbedder:
    """The store's embedder, with query vectors kept between variants (recall embeds one text)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) != 1:
            return self.inner.embed(texts)
        key = texts[0]
        if key not in self.cache:
            self.cache[key] = self.inner.embed([key])
        return self.cache[key]


def evaluate(memory: Any, conversations: Sequence[Conversation]) -> dict[str, dict[str, float]]:
    """R@5/R@10 per half and category: {"tune"|"held": {"all"|category: R@k}}."""
    out: dict[str, dict[str, list[float]]] = {}
    for position, conv in enumerate(conversations):
        half = "tune" if position < 5 else "held"
        for q in conv.questions:
            matches = memory.recall(q.text, user_id=conv.conv_id, limit=10)
            found = [f"D{(m.record.session_id or '').rsplit('-s', 1)[-1]}:{m.record.turn}" for m in matches]
            wanted = set(q.evidence)
            for k in (5, 10):
                hit = len(wanted & set(found[:k])) / len(wanted)
                for label in ("all", CATEGORIES[q.category]):
                    out.setdefault(half, {}).setdefault(f"{label}@{k}", []).append(hit)
    return {half: {key: 100.0 * sum(v) / len(v) for key, v in table.items()} for half, table in out.items()}


def row(name: str, scores: dict[str, dict[str, float]]) -> str:
    cells = []
    for half in ("tune", "held"):
        s = scores.get(half, {})
        cells.append(f"{s.get('all@5', 0):5.1f} {s.get('all@10', 0):5.1f} | "
                     + " ".join(f"{s.get(c + '@5', 0):4.1f}/{s.get(c + '@10', 0):4.1f}" for c in CATEGORIES.values()))
    return f"{name:<14} " + " || ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "locomo10.json",
                        help="locomo10.json (a worktree's parent may not hold shared/: pass it)")
    parser.add_argument("--store", type=Path, required=True, help="where the stored copy lives (made if missing)")
    parser.add_argument("--set", action="append", default=[], help="weight=value for every variant")
    parser.add_argument("--ablate", action="store_true", help="each signal off in turn")
    parser.add_argument("--variant", action="append", default=[],
                        help="name:weight=value,weight=value (repeatable), run beside the base")
    args = parser.parse_args()

    from mnemic import Memory
    from mnemic.core.embeddings import default_embedder

    conversations, _ = load_locomo(args.data)
    embedder = CachedEmbedder(default_embedder())
    fresh = not (args.store / "mnemic").exists()
    if fresh:
        start = time.perf_counter()
        system = MnemicSystem(args.store, embedder)
        for conv in conversations:
            system.load(conv)
        system.finish_loading()
        system.close()
        print(f"stored {sum(len(c.turns) for c in conversations)} turns in {time.perf_counter() - start:.0f} s")
    memory = Memory(args.store / "mnemic", embedder=embedder)
    base = memory.weights.model_dump()
    for item in args.set:
        key, value = item.split("=", 1)
        base[key] = float(value)
    variants: dict[str, dict[str, float]] = {"base": {}}
    if args.ablate:
        variants.update({k: v for k, v in ABLATIONS.items() if k != "full" and all(w in base for w in v)})
    for spec in args.variant:
        name, _, pairs = spec.partition(":")
        variants[name] = {k: float(v) for k, v in (p.split("=", 1) for p in pairs.split(",") if p)}
    cats = " ".join(f"{c[:9]:>9}" for c in CATEGORIES.values())  # each R@5/R@10
    print(f"{'variant':<14} {'R@5':>5} {'R@10':>5} | {cats} || {'R@5':>5} {'R@10':>5} | {cats}")
    print(f"{'':<14} {'tuning half (conversations 0-4)':<{12 + len(cats)}} || held-out half (5-9)")
    try:
        for name, change in variants.items():
            memory.weights = type(memory.weights)(**{**base, **change})
            start = time.perf_counter()
            scores = evaluate(memory, conversations)
            print(row(name, scores), f"  ({time.perf_counter() - start:.0f} s)", flush=True)
    finally:
        memory.close()


if __name__ == "__main__":
    main()
