"""Is LoCoMo's remaining recall gap in how mnemic weighs its signals, or in the signals themselves?

    pip install scikit-learn      # this script's own need; mnemic never uses it
    python bench/learned_fusion.py --store /tmp/locomo-store   # the store bench/tune_locomo.py made

Every question of LoCoMo is recalled once at limit 10, as `tune_locomo.py` does, and every
candidate recall scored for it is kept (its pool: the dense and word matches, the turns around the
best and the records linked to them), with 23 features built from what recall computed: cosine,
word coverage, saturated bm25, matched and related words, the relevance of the turns before and
after, two away and of the best turn of the session, link strength, the time factor, ranks and
gaps to the pool's best, length, whether the record is a question, whether the query names a time.

Printed, R@5/R@10 per half and category as in `tune_locomo.py`:
- `mnemic`: recall as shipped;
- `pool ceiling`: a perfect re-ranking of the same pool (evidence that is in no pool cannot be
  reached by any weighting);
- re-rankers fitted on one half's pools and applied to the other's (logistic regression and
  gradient-boosted trees): what any re-weighting of these signals can gain on conversations it
  was not fitted on. The figures on the half a model was fitted on are in-sample: read them as
  how much of LoCoMo these signals can memorise, not as recall.

Recall's fusion step is wrapped to see the whole pool (read-only: rankings are unchanged).
Nothing of LoCoMo is written anywhere.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_locomo import CATEGORIES, load_locomo  # noqa: E402
from tune_locomo import CachedEmbedder  # noqa: E402

Pool = list[dict[str, Any]]


def capture_pools(store: Path, data: Path) -> list[dict[str, Any]]:
    """Each question with the candidates recall fused for it and their features."""
    import mnemic.core.recall as recall_module
    from mnemic import Memory
    from mnemic.core.embeddings import default_embedder

    seen: dict[str, Any] = {}
    fuse = recall_module.fuse

    def watching(candidates: Any, weights: Any, now: Any, **options: Any) -> Any:
        fused = fuse(candidates, weights, now, **options)
        seen.update(pool=list(candidates), fused=fused, window=options.get("window"), links=options.get("links"))
        return fused

    recall_module.fuse = watching  # type: ignore[assignment]
    conversations, _ = load_locomo(data)
    memory = Memory(store / "mnemic", embedder=CachedEmbedder(default_embedder()))
    questions = []
    try:
        for position, conv in enumerate(conversations):
            for q in conv.questions:
                seen.clear()
                memory.recall(q.text, user_id=conv.conv_id, limit=10)
                rank = {c.record.id: i for i, (_, c, _) in enumerate(seen.get("fused", []))}
                breakdown = {c.record.id: b for _, c, b in seen.get("fused", [])}
                pool = []
                for c in seen.get("pool", []):
                    record, parts = c.record, breakdown.get(c.record.id)
                    pool.append({
                        "key": f"D{(record.session_id or '').rsplit('-s', 1)[-1]}:{record.turn}",
                        "session": record.session_id, "turn": record.turn or 0, "text": record.text,
                        "cos": c.cosine or 0.0, "cov": c.coverage or 0.0, "bm25": c.bm25 or 0.0,
                        "terms": len(c.matched_terms), "related": len(c.related_words),
                        "linked": parts.linked if parts else 0.0, "time": parts.recency if parts else 0.0,
                        "links": len((seen.get("links") or {}).get(record.id, ())),
                        "rank": rank.get(record.id, 10**6),
                    })
                questions.append({"half": "tune" if position < 5 else "held", "category": q.category,
                                  "evidence": set(q.evidence), "pool": pool,
                                  "names_a_time": seen.get("window") is not None})
    finally:
        recall_module.fuse = fuse  # type: ignore[assignment]
        memory.close()
    return questions


def features(question: dict[str, Any]) -> np.ndarray:
    pool: Pool = question["pool"]
    if not pool:
        return np.zeros((0, 23))
    own = {}
    for c in pool:
        relevant = c["cov"] > 0 or c["bm25"] > 0 or c["cos"] >= 0.2
        c["own"] = 0.5 * max(c["cos"], 0.0) + 0.5 * c["cov"] if relevant else 0.0
        own[(c["session"], c["turn"])] = c["own"]
    best_in_session: dict[str, float] = defaultdict(float)
    for (session, _), value in own.items():
        best_in_session[session] = max(best_in_session[session], value)
    cos = np.array([c["cos"] for c in pool])
    cov = np.array([c["cov"] for c in pool])
    cos_rank, cov_rank = (-cos).argsort().argsort(), (-cov).argsort().argsort()
    best_own = max(c["own"] for c in pool)
    rows = []
    for i, c in enumerate(pool):
        s, t = c["session"], c["turn"]
        before, after = own.get((s, t - 1), 0.0), own.get((s, t + 1), 0.0)
        two_away = max(own.get((s, t - 2), 0.0), own.get((s, t + 2), 0.0))
        rows.append([
            c["cos"], c["cov"], c["bm25"] / (c["bm25"] + 16.0), c["terms"], c["related"], c["own"],
            before, after, max(before, after), two_away, best_in_session[s], c["linked"], c["time"], c["links"],
            math.log1p(cos_rank[i]), math.log1p(cov_rank[i]), c["cos"] - cos.max(), c["cov"] - cov.max(),
            c["own"] - best_own, math.log1p(len(c["text"].split())), float(c["text"].rstrip().endswith("?")),
            float(question["names_a_time"]), c["cos"] * c["cov"],
        ])
    return np.array(rows, dtype=float)


def report(name: str, questions: list[dict[str, Any]], score: Callable[[dict[str, Any]], np.ndarray]) -> None:
    found: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for q in questions:
        order = np.argsort(-score(q), kind="stable") if q["pool"] else []
        keys = [q["pool"][i]["key"] for i in order]
        for k in (5, 10):
            share = len(q["evidence"] & set(keys[:k])) / len(q["evidence"])
            for label in ("all", CATEGORIES[q["category"]]):
                found[(q["half"], label, k)].append(share)
    cells = []
    for half in ("tune", "held"):
        def r(label: str, k: int, half: str = half) -> float:
            return 100.0 * float(np.mean(found[(half, label, k)]))
        cells.append(f"{r('all', 5):5.1f} {r('all', 10):5.1f} | "
                     + " ".join(f"{r(c, 5):4.1f}/{r(c, 10):4.1f}" for c in CATEGORIES.values()))
    print(f"{name:<26} " + " || ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "locomo10.json")
    parser.add_argument("--store", type=Path, required=True, help="a store bench/tune_locomo.py made")
    args = parser.parse_args()
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        sys.exit("this analysis fits re-rankers with scikit-learn: pip install scikit-learn")
    if not (args.store / "mnemic").exists():
        sys.exit(f"no store at {args.store}: run bench/tune_locomo.py --store {args.store} first")

    questions = capture_pools(args.store, args.data)
    for q in questions:
        q["x"] = features(q)
        q["y"] = np.array([c["key"] in q["evidence"] for c in q["pool"]], dtype=float)
    print(f"{len(questions)} questions, {np.mean([len(q['pool']) for q in questions]):.0f} candidates each")
    cats = " ".join(f"{c[:9]:>9}" for c in CATEGORIES.values())
    print(f"{'':<26} {'R@5':>5} {'R@10':>5} | {cats} || {'R@5':>5} {'R@10':>5} | {cats}")
    print(f"{'':<26} {'tuning half (conversations 0-4)':<{12 + len(cats)}} || held-out half (5-9)")
    report("mnemic", questions, lambda q: -np.array([c["rank"] for c in q["pool"]], dtype=float))
    report("pool ceiling", questions, lambda q: q["y"])
    for fitted_on in ("tune", "held"):
        half = [q for q in questions if q["half"] == fitted_on and q["pool"]]
        x, y = np.vstack([q["x"] for q in half]), np.concatenate([q["y"] for q in half])
        scaler = StandardScaler().fit(x)
        linear = LogisticRegression(C=1.0, max_iter=2000).fit(scaler.transform(x), y)
        report(f"logistic, fitted on {fitted_on}", questions,
               lambda q, m=linear, s=scaler: m.decision_function(s.transform(q["x"])) if q["pool"] else np.array([]))
        for leaves, rounds, least in ((4, 300, 400), (8, 100, 100)):
            trees = HistGradientBoostingClassifier(max_iter=rounds, learning_rate=0.05, max_leaf_nodes=leaves,
                                                   min_samples_leaf=least, l2_regularization=1.0,
                                                   early_stopping=False, random_state=0).fit(x, y)
            report(f"trees {leaves}x{rounds}, fitted on {fitted_on}", questions,
                   lambda q, m=trees: m.predict_proba(q["x"])[:, 1] if q["pool"] else np.array([]))


if __name__ == "__main__":
    main()
