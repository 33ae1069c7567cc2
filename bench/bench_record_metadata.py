"""What the shape of a record's Chroma metadata costs on every read.

    python bench/bench_record_metadata.py                  # 2,000 records, 300 samples per case

Stores the same records (mnemic's own codec, a typical conversation fact with categories, a
session turn and one user metadata field) twice in one embedded Chroma database:
- compact: mnemic's form, the record as one JSON key plus the three keys `where` filters read;
- spread: every field a metadata key of its own (~20 keys; what mnemic wrote before).
Then times a `get` of 20 records by id, a dense top-20 query, and an update that rewrites a
record's metadata. Medians and p95, the cases interleaved so a busy machine moves them alike.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def spread(compact: dict[str, Any]) -> dict[str, Any]:
    from mnemic.core.codec import RECORD_FIELD

    return {**json.loads(compact[RECORD_FIELD]), "scope_path": compact["scope_path"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=300)
    args = parser.parse_args()

    import chromadb
    from chromadb.config import Settings

    from mnemic.core.codec import to_metadata
    from mnemic.core.records import MemoryRecord, text_hash, utcnow

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(args.records, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = utcnow()
    records = [MemoryRecord(id=f"r{i}", text=f"Ana: fact number {i} about the garden and the bees",
                            hash=text_hash(str(i)), user_id="ana", scope="/home/garden", categories=["hobby", "home"],
                            session_id="ana-s3", turn=i, created_at=now, updated_at=now, metadata={"source_turn": i})
               for i in range(args.records)]
    compact = [to_metadata(r) for r in records]
    forms = {"compact": compact, "spread": [spread(m) for m in compact]}
    print(f"metadata keys per record: compact {len(compact[0])}, spread {len(forms['spread'][0])}")

    client = chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="mnemic-meta-"),
                                       settings=Settings(anonymized_telemetry=False))
    collections = {}
    for name, metadatas in forms.items():
        collection = client.create_collection(name, embedding_function=None,
                                              configuration={"hnsw": {"space": "cosine"}})
        for start in range(0, args.records, 500):
            window = slice(start, start + 500)
            collection.add(ids=[r.id for r in records[window]], embeddings=vectors[window],
                           documents=[r.text for r in records[window]], metadatas=metadatas[window])
        collections[name] = collection

    picker = random.Random(1)
    ids = [r.id for r in records]
    cases: dict[str, Callable[[Any, str], Any]] = {
        "get 20 by id": lambda c, _: c.get(ids=picker.sample(ids, 20), include=["documents", "metadatas"]),
        "query top 20": lambda c, _: c.query(query_embeddings=[vectors[picker.randrange(args.records)]], n_results=20,
                                             include=["documents", "metadatas", "distances"]),
        "update 1 record": lambda c, name: c.update(ids=[f"r{(i := picker.randrange(args.records))}"],
                                                    metadatas=[forms[name][i]]),
    }
    samples: dict[tuple[str, str], list[float]] = {(case, name): [] for case in cases for name in forms}
    for _ in range(args.samples):
        for case, call in cases.items():
            for name, collection in collections.items():
                began = time.perf_counter()
                call(collection, name)
                samples[(case, name)].append(time.perf_counter() - began)

    def p(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    for case in cases:
        compact_p50 = statistics.median(samples[(case, "compact")]) * 1000
        spread_p50 = statistics.median(samples[(case, "spread")]) * 1000
        print(f"{case:16s} compact p50 {compact_p50:5.2f} ms (p95 {p(samples[(case, 'compact')], .95):5.2f}), "
              f"spread p50 {spread_p50:5.2f} ms (p95 {p(samples[(case, 'spread')], .95):5.2f}), "
              f"spread/compact {spread_p50 / compact_p50:.2f}x")


if __name__ == "__main__":
    main()
