"""Write throughput of this tree against another (e.g. main before a change), measured in one run.

    python bench/bench_write_throughput.py --base /tmp/mnemic-main --rounds 3
    python bench/bench_write_throughput.py --embedder minilm --records 1000

Each round loads the same generated records into a fresh store, once with this tree and once with
the base tree (alternating which goes first, each in its own process so neither's imports leak into
the other), and reports records/s per tree and the median ratio. Two write shapes, as callers use
them: conversation turns (one `remember_many` call per turn, session and turn set, as the LoCoMo
bench loads) and facts in batches of 50; and the lexical index alone (5 x as many records, one
per `upsert`), where links are made. The hash embedder (default) leaves the embedding out, so
what is measured is mnemic's own write path: Chroma, the audit log and the lexical index.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load(records: int, embedder: str, users: int) -> dict[str, float]:
    """Runs inside the tree under test (its mnemic is first on sys.path)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_memory_latency import sentence

    from mnemic import Memory
    from mnemic.core.lexical import LexicalIndex

    rng = random.Random(11)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="mnemic-writes-") as workdir:
        with Memory(Path(workdir) / "turns", embedder=embedder) as memory:
            began = time.perf_counter()
            for i in range(records):
                user = f"user-{i % users}"
                memory.remember_many([sentence(rng)], user_id=user, session_id=f"{user}-s{i // (users * 20)}",
                                     turn=i // users % 20 + 1, created_at=start + timedelta(minutes=i))
            memory.drain_writes()
            out["turns_per_s"] = records / (time.perf_counter() - began)
        with Memory(Path(workdir) / "facts", embedder=embedder) as memory:
            began = time.perf_counter()
            for i in range(0, records, 50):
                memory.remember_many([sentence(rng) for _ in range(min(50, records - i))],
                                     user_id=f"user-{i // 50 % users}")
            memory.drain_writes()
            out["facts_per_s"] = records / (time.perf_counter() - began)
        # The lexical index alone (where links are made), one record per call as the writer
        # indexes a turn, on disk as a store keeps it.
        index = LexicalIndex(Path(workdir) / "lexical.sqlite3")
        texts = [sentence(rng) for _ in range(records * 5)]
        began = time.perf_counter()
        for i, text in enumerate(texts):
            index.upsert([(f"r{i}", "c", f"user-{i % users}", text, 1)])
        out["index_per_s"] = len(texts) / (time.perf_counter() - began)
        index.close()
    return out


def run_tree(tree: Path, args: argparse.Namespace) -> dict[str, float]:
    code = (f"import sys; sys.path.insert(0, {str(tree)!r}); sys.path.insert(1, {str(REPO / 'bench')!r}); "
            f"import json, bench_write_throughput as b; "
            f"print(json.dumps(b.load({args.records}, {args.embedder!r}, {args.users})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tree)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the other tree (a checkout of main)")
    parser.add_argument("--records", type=int, default=600)
    parser.add_argument("--users", type=int, default=3)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees = {"this": REPO, "base": args.base.resolve()}
    results: dict[str, list[dict[str, float]]] = {"this": [], "base": []}
    for round_no in range(args.rounds):
        order = ["this", "base"] if round_no % 2 == 0 else ["base", "this"]
        for name in order:
            results[name].append(run_tree(trees[name], args))
            print(f"round {round_no + 1} {name}: {json.dumps(results[name][-1])}", flush=True)
    for key in ("turns_per_s", "facts_per_s", "index_per_s"):
        this = statistics.median(r[key] for r in results["this"])
        base = statistics.median(r[key] for r in results["base"])
        print(f"{key}: this {this:.1f}, base {base:.1f}, this/base {this / base:.3f}")


if __name__ == "__main__":
    main()
