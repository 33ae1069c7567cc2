"""Why mnemic keeps one Chroma collection per user and avoids `where` on hot paths.

    python bench/bench_chroma_layout.py                      # 100k records, 100 users
    python bench/bench_chroma_layout.py --records 20000

Builds two layouts of the same random records (384-d unit vectors, mnemic-like metadata; no
embedding model involved) in one embedded Chroma database:
- shared: one collection with every user's records, `user_id` in metadata;
- per-user: one collection per user (mnemic's layout).
Then times, per layout, a dense top-20 query with and without metadata filters, and a `get` of a
few conversation turns by `where` (session and turn) against a `get` by ids. Medians and p95 over
`--samples` calls, each case interleaved with the others so a busy machine moves them alike.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build(client: Any, records: int, users: int, rng: np.random.Generator) -> tuple[Any, list[Any]]:
    shared = client.create_collection("shared", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    per_user = [client.create_collection(f"user-{u:03d}", embedding_function=None,
                                         configuration={"hnsw": {"space": "cosine"}}) for u in range(users)]
    per = records // users
    for u, collection in enumerate(per_user):
        vectors = _unit(rng, per)
        ids = [f"u{u}-r{i}" for i in range(per)]
        metadatas = [{"user_id": f"user-{u:03d}", "state": "valid", "expires_at": 4102444800.0,
                      "session_id": f"user-{u:03d}-s{i // 20}", "turn": i % 20 + 1} for i in range(per)]
        documents = [f"record {i} of user {u}" for i in range(per)]
        for start in range(0, per, 1000):
            window = slice(start, start + 1000)
            for target in (shared, collection):
                target.add(ids=ids[window], embeddings=vectors[window], metadatas=metadatas[window],
                           documents=documents[window])
    return shared, per_user


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--samples", type=int, default=100)
    args = parser.parse_args()

    import chromadb
    from chromadb.config import Settings

    rng = np.random.default_rng(7)
    workdir = Path(tempfile.mkdtemp(prefix="mnemic-layout-"))
    try:
        client = chromadb.PersistentClient(path=str(workdir), settings=Settings(anonymized_telemetry=False))
        began = time.perf_counter()
        shared, per_user = build(client, args.records, args.users, rng)
        print(f"built {args.records} records x 2 layouts, {args.users} users, in {time.perf_counter() - began:.0f} s")
        per = args.records // args.users
        cases: dict[str, Callable[[int, np.ndarray], Any]] = {
            "per-user query, no filter": lambda u, v: per_user[u].query(
                query_embeddings=[v], n_results=20, include=["metadatas", "documents", "distances"]),
            "shared query, where user_id": lambda u, v: shared.query(
                query_embeddings=[v], n_results=20, where={"user_id": f"user-{u:03d}"},
                include=["metadatas", "documents", "distances"]),
            "shared query, where user_id+state+expiry": lambda u, v: shared.query(
                query_embeddings=[v], n_results=20,
                where={"$and": [{"user_id": f"user-{u:03d}"}, {"state": "valid"}, {"expires_at": {"$gt": 0.0}}]},
                include=["metadatas", "documents", "distances"]),
            "per-user get 5 turns by ids": lambda u, v: per_user[u].get(
                ids=[f"u{u}-r{i}" for i in range(40, 45)], include=["metadatas", "documents", "embeddings"]),
            "per-user get 5 turns by where": lambda u, v: per_user[u].get(
                where={"$and": [{"session_id": f"user-{u:03d}-s2"}, {"turn": {"$in": [1, 2, 3, 4, 5]}}]},
                include=["metadatas", "documents", "embeddings"]),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        queries = _unit(rng, args.samples)
        for i in range(args.samples):
            user = int(rng.integers(args.users))
            for name, case in cases.items():
                samples[name].append(timed(lambda case=case, user=user, vector=queries[i]: case(user, vector)))
        print(f"{'case':45} {'p50 ms':>8} {'p95 ms':>8}   ({per} records per user)")
        for name, values in samples.items():
            values.sort()
            p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
            print(f"{name:45} {statistics.median(values):8.1f} {p95:8.1f}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
