"""Recall of long records: LoCoMo's turns stored several to a record, read whole or cut at the model's window.

    python bench/bench_long_records.py                      # 12 turns a record (~300 tokens)
    python bench/bench_long_records.py --turns 20 --data locomo10.json

A memory can be much longer than MiniLM's 256-token window (a crew's task output, an assistant's
answer, a pasted note); MiniLM ignores everything past it. This stores each LoCoMo session's turns
in consecutive groups of --turns as one record (no session or turn: standalone texts), once with
mnemic's default embedder (long texts read whole, `core/embeddings/whole_texts.py`) and once with
the same MiniLM cutting them, and asks each question of categories 1-4 against both. A record counts
as found when it holds an evidence turn; R@k is the share of a question's evidence turns held by
the top k records, per half (conversations 0-4 tuning, 5-9 held out). LoCoMo (CC BY-NC 4.0) is
read from --data for evaluation only; only aggregate figures are printed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_locomo import Conversation, load_locomo  # noqa: E402

KS = (1, 3, 5)


class Cut:
    """MiniLM as sentence-transformers runs it: everything past 256 tokens ignored."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dimension = inner, inner.name, inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed(texts)


def blocks(conv: Conversation, size: int) -> list[list[Any]]:
    grouped: list[list[Any]] = []
    for turn in conv.turns:
        if not grouped or len(grouped[-1]) == size or grouped[-1][-1].session != turn.session:
            grouped.append([])
        grouped[-1].append(turn)
    return grouped


def run(conversations: list[Conversation], size: int, embedder: Any,
        where: Path) -> tuple[dict[str, list[float]], float]:
    from mnemic import Memory

    memory = Memory(where, embedder=embedder)
    start = time.perf_counter()
    holds: dict[str, set[str]] = {}
    for conv in conversations:
        for block in blocks(conv, size):
            record = memory.remember("\n".join(t.text for t in block), user_id=conv.conv_id, created_at=block[0].when)
            if record is not None:
                holds.setdefault(record.id, set()).update(t.dia_id for t in block)
    loading = time.perf_counter() - start
    scores: dict[str, list[float]] = {}
    for position, conv in enumerate(conversations):
        half = "tuning" if position < 5 else "held-out"
        for q in conv.questions:
            if q.category not in (1, 2, 3, 4):
                continue
            ids = [m.record.id for m in memory.recall(q.text, user_id=conv.conv_id, limit=max(KS))]
            for k in KS:
                found = set().union(*(holds.get(i, set()) for i in ids[:k]))
                scores.setdefault(f"{half} R@{k}", []).append(len(found & set(q.evidence)) / len(q.evidence))
    memory.close()
    return scores, loading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "locomo10.json")
    parser.add_argument("--turns", type=int, default=12, help="turns stored together as one record")
    args = parser.parse_args()

    from mnemic.core.embeddings import default_embedder

    conversations, _ = load_locomo(args.data)
    model = default_embedder()
    texts = ["\n".join(t.text for t in block) for conv in conversations for block in blocks(conv, args.turns)]
    over = sum(model.exceeds_window(texts))
    print(f"{len(texts)} records of {args.turns} turns; {over} ({100 * over / len(texts):.0f}%) exceed MiniLM's "
          "256-token window")
    with tempfile.TemporaryDirectory() as tmp:
        for label, embedder in (("cut at 256 tokens", Cut(model)), ("read whole (default)", model)):
            scores, loading = run(conversations, args.turns, embedder, Path(tmp) / label.split()[0])
            cells = "  ".join(f"{name} {100 * float(np.mean(v)):5.1f}" for name, v in scores.items())
            print(f"{label:<22} {cells}   (stored in {loading:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
