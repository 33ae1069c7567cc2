"""Knowledge store: ingest throughput for a 1 MB text corpus and search latency at 10k chunks.

    python bench/bench_knowledge.py                      # real all-MiniLM-L6-v2 (the default embedder)
    python bench/bench_knowledge.py --embedder hash      # the hashing test embedder: storage costs only
    python bench/bench_knowledge.py --store /tmp/kb10k   # keep the 10k-chunk store and reuse it next run

Ingest: a generated, deterministic 1 MB .txt file (Zipf-distributed English words in paragraphs) goes through
`memory.knowledge.add_file` into a fresh store, --repeats times; chunks/s is the median, split into
reading+chunking, embedding, and writing (Chroma + audit trail + FTS5). With MiniLM the embedding
of ~800-character passages is nearly all of it.

Search: a store of 10,000 chunks (the same generator, more text), then --queries searches of 3–8
words, limit 5, after a warm-up; p50/p95 of the whole `search()` call (query embedding, Chroma
dense query, FTS5 bm25, fusion), and the p50 of the query embedding alone.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mnemic import Memory
from mnemic.core.documents import chunk_text, read_document
from mnemic.core.embeddings import Embedder, resolve_embedder

# Text with the statistics of prose: English words drawn with Zipf's law (the MiniLM tokenizer's
# vocabulary is in rough frequency order), so common words are common, most words are rare, and
# a query word matches a realistic share of chunks. A tiny vocabulary would make every query word
# match every chunk, and bm25 cost grows with the number of matching chunks.
_FALLBACK_WORDS = (
    "refund return warehouse delivery express shipping international voucher member card opening hours "
    "support widget gadget sprocket tracking damaged parcel price student discount loyalty bulk invoice "
    "warranty spare parts app password account days receipt fee month policy order customer store"
).split()


def load_words() -> tuple[list[str], str]:
    try:
        from mnemic.core.embeddings import find_weights

        vocab = find_weights() / "vocab.txt"
        lines = vocab.read_text(encoding="utf-8").split("\n")
    except Exception:
        return _FALLBACK_WORDS, "a 40-word fallback vocabulary (no MiniLM vocab.txt found): bm25 costs are inflated"
    # Entries before ~2000 are special tokens and single characters; whole words follow.
    words = [w for w in lines[1996:] if w.isascii() and w.isalpha() and len(w) > 1]
    return words, f"{len(words)} English words from {vocab.name}, Zipf-distributed"


class Corpus:
    def __init__(self, words: list[str], seed: int) -> None:
        self.words = words
        self.rng = random.Random(seed)
        total = 0.0
        self.cumulative = []
        for rank in range(len(words)):
            total += 1.0 / (rank + 3) ** 1.05
            self.cumulative.append(total)

    def sentence(self) -> str:
        picked = self.rng.choices(self.words, cum_weights=self.cumulative, k=self.rng.randint(8, 24))
        text = " ".join(picked)
        return text[0].upper() + text[1:] + "."

    def text(self, target_chars: int) -> str:
        paragraphs: list[str] = []
        size = 0
        while size < target_chars:
            paragraph = " ".join(self.sentence() for _ in range(self.rng.randint(3, 8)))
            paragraphs.append(paragraph)
            size += len(paragraph) + 2
        return "\n\n".join(paragraphs)[:target_chars]

    def query(self) -> str:
        # Content words: past the function words at the top, not so rare nothing holds them.
        pool = self.words[100:8000] or self.words
        return " ".join(self.rng.choice(pool) for _ in range(self.rng.randint(3, 8)))


class TimedEmbedder:
    """Passes embedding through and keeps the time it took, to split an ingest into its parts."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start


def bench_ingest(embedder: TimedEmbedder, corpus: Path, repeats: int) -> dict[str, float]:
    runs: list[dict[str, float]] = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="mnemic-bench-kn-") as tmp:
            start = time.perf_counter()
            read_document(corpus)
            read_s = time.perf_counter() - start
            with Memory(Path(tmp) / "m", embedder=embedder) as memory:
                memory.knowledge.count()  # opening the collection is not ingest
                embedder.seconds = 0.0
                start = time.perf_counter()
                result = memory.knowledge.add_file(corpus)
                total_s = time.perf_counter() - start
            chunks = len(result.added)
            runs.append(
                {
                    "chunks": chunks,
                    "total_s": total_s,
                    "chunks_per_s": chunks / total_s,
                    "read_s": read_s,
                    "embed_s": embedder.seconds,
                    "write_s": max(0.0, total_s - read_s - embedder.seconds),
                }
            )
        print(
            f"  ingest run: {runs[-1]['chunks']:.0f} chunks in {runs[-1]['total_s']:.1f} s "
            f"({runs[-1]['chunks_per_s']:.1f} chunks/s)",
            flush=True,
        )
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def build_search_store(path: Path, embedder: Embedder, chunks: int, corpus: Corpus) -> tuple[Memory, int]:
    memory = Memory(path, embedder=embedder)
    have = memory.knowledge.count()
    if have >= chunks:
        print(f"  reusing {path} ({have} chunks)", flush=True)
        return memory, have
    if have:
        memory.knowledge.clear(confirm=True)
    text = corpus.text(int(chunks * 760))
    passages = chunk_text(text)
    while len(passages) < chunks:
        text += "\n\n" + corpus.text(200_000)
        passages = chunk_text(text)
    text = text[: passages[chunks - 1].char_end]
    corpus = path / "corpus-10k.txt"
    corpus.write_text(text, encoding="utf-8")
    start = time.perf_counter()
    last = [0.0]

    def report(done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 30 or done == total:
            last[0] = time.perf_counter()
            print(
                f"  building search store: {done}/{total} chunks embedded ({time.perf_counter() - start:.0f} s)",
                flush=True,
            )

    memory.knowledge.add_file(corpus, progress=report)
    return memory, memory.knowledge.count()


def bench_search(memory: Memory, embedder: Embedder, queries: int, corpus: Corpus) -> dict[str, float]:
    texts = [corpus.query() for _ in range(queries)]
    for text in texts[:10]:
        memory.knowledge.search(text, limit=5)
    latencies = []
    hits = 0
    for text in texts:
        start = time.perf_counter()
        found = memory.knowledge.search(text, limit=5)
        latencies.append((time.perf_counter() - start) * 1000)
        hits += bool(found)
    embeds = []
    for text in texts:
        start = time.perf_counter()
        embedder.embed([text])
        embeds.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies),
        "p95_ms": latencies[min(len(latencies) - 1, round(0.95 * len(latencies)) - 1)],
        "embed_p50_ms": statistics.median(embeds),
        "answered": hits / len(texts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="minilm", help="minilm (default), hash, or any mnemic embedder spec")
    parser.add_argument("--corpus-mb", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3, help="ingest runs (median reported); 0 skips ingest")
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks in the search store")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--store", type=Path, help="directory for the search store, kept and reused")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    load = getattr(os, "getloadavg", lambda: (float("nan"),) * 3)()
    print("command: python bench/bench_knowledge.py " + shlex.join(sys.argv[1:]))
    print(f"cpus {os.cpu_count()}, load average before start {load[0]:.2f}")
    inner = resolve_embedder(args.embedder)
    if hasattr(inner, "load"):
        inner.load()
    embedder = TimedEmbedder(inner)
    print(f"embedder {inner.name} ({inner.dimension} dims)\n")

    words, described = load_words()
    print(f"text: {described}")
    ingest: dict[str, float] | None = None
    size_mb = args.corpus_mb
    if args.repeats > 0:
        with tempfile.TemporaryDirectory(prefix="mnemic-bench-corpus-") as tmp:
            corpus_file = Path(tmp) / "corpus-1mb.txt"
            text = Corpus(words, args.seed).text(int(args.corpus_mb * 1_000_000))
            corpus_file.write_text(text, encoding="utf-8")
            size_mb = corpus_file.stat().st_size / 1_000_000
            print(f"ingest: {size_mb:.2f} MB text, {args.repeats} runs")
            ingest = bench_ingest(embedder, corpus_file, args.repeats)

    print(f"\nsearch: {args.chunks} chunks, {args.queries} queries, limit 5")
    store_dir = args.store or Path(tempfile.mkdtemp(prefix="mnemic-bench-kn-search-"))
    store_dir.mkdir(parents=True, exist_ok=True)
    memory, count = build_search_store(store_dir, embedder, args.chunks, Corpus(words, args.seed + 1))
    try:
        search = bench_search(memory, inner, args.queries, Corpus(words, args.seed + 2))
    finally:
        memory.close()
        if args.store is None:
            import shutil

            shutil.rmtree(store_dir, ignore_errors=True)

    print("\nresults (medians)")
    if ingest is not None:
        print(
            f"  ingest  {ingest['chunks']:.0f} chunks of ≤800 chars from {size_mb:.2f} MB: "
            f"{ingest['chunks_per_s']:.1f} chunks/s ({ingest['total_s']:.1f} s: read+chunk "
            f"{ingest['read_s']:.2f} s, embed {ingest['embed_s']:.1f} s, write {ingest['write_s']:.2f} s)"
        )
        write_rate = ingest["chunks"] / ingest["write_s"] if ingest["write_s"] else float("nan")
        print(f"          storage alone (Chroma + audit + FTS5): {write_rate:.0f} chunks/s")
    print(
        f"  search  {count} chunks: p50 {search['p50_ms']:.1f} ms, p95 {search['p95_ms']:.1f} ms "
        f"(query embedding p50 {search['embed_p50_ms']:.1f} ms; {search['answered']:.0%} of queries answered)"
    )
    load = getattr(os, "getloadavg", lambda: (float("nan"),) * 3)()
    print(f"load average after run {load[0]:.2f} (other processes on the machine skew all figures alike)")


if __name__ == "__main__":
    main()
