"""Build mnemic/core/related_words.tsv.gz: each English word's nearest words by MiniLM's own judgement.

    python bench/build_related_words.py            # rewrites the shipped table (~15 s)
    python bench/build_related_words.py --check    # exits 1 if the shipped table differs

The words are the whole words of MiniLM's vocabulary (lower-case letters, three or more, not a
function word): ~21,000, nothing from any user or benchmark. Each is embedded alone with the
default MiniLM, and keeps at most `NEIGHBOURS` words whose cosine with it is at least `THRESHOLD`,
leaving out its own forms (words sharing its first four letters: the porter stemmer already joins
"hike" and "hiking" where it can). The table is derived from all-MiniLM-L6-v2 (Apache-2.0) and is
written byte for byte the same on every run (sorted, rounded, gzip without a timestamp).

Why these numbers: on LoCoMo's tuning half (conversations 0-4), thresholds 0.55-0.65 and 3-10
neighbours all moved recall@5/@10 within 0.4 points of each other; 0.6 and 5 were the first tried
and were kept rather than picking the best cell (see `core/related_words.py`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from shipped_tables import deterministic_gzip  # noqa: E402

from mnemic.core.embeddings import default_embedder, find_weights  # noqa: E402
from mnemic.core.lexical import STOPWORDS  # noqa: E402
from mnemic.core.related_words import TABLE_PATH  # noqa: E402
from mnemic.core.word_scores import shared_prefix  # noqa: E402

THRESHOLD = 0.6
NEIGHBOURS = 5
SAME_WORD_PREFIX = 4
_WHOLE_WORD = re.compile(r"[a-z]{3,}")


def vocabulary() -> list[str]:
    pieces = (find_weights() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    return sorted({p for p in pieces if _WHOLE_WORD.fullmatch(p) and p not in STOPWORDS})


def is_own_form(word: str, other: str) -> bool:
    return shared_prefix(word, other) >= min(SAME_WORD_PREFIX, len(word), len(other))


def neighbours(words: list[str], vectors: np.ndarray) -> dict[str, list[tuple[str, float]]]:
    table: dict[str, list[tuple[str, float]]] = {}
    for start in range(0, len(words), 2048):
        sims = vectors[start:start + 2048] @ vectors.T
        for offset, row in enumerate(sims):
            word = words[start + offset]
            row[start + offset] = -1.0
            top = np.argpartition(-row, 4 * NEIGHBOURS)[:4 * NEIGHBOURS]
            # Ties broken by the word, so the table is the same on every machine.
            ranked = sorted(top, key=lambda j: (-round(float(row[j]), 3), words[j]))
            kept = [(words[j], round(float(row[j]), 3)) for j in ranked
                    if row[j] >= THRESHOLD and not is_own_form(word, words[j])][:NEIGHBOURS]
            if kept:
                table[word] = kept
    return table


def render(table: dict[str, list[tuple[str, float]]]) -> bytes:
    text = "".join(word + "\t" + " ".join(f"{other}:{sim:.3f}" for other, sim in found) + "\n"
                   for word, found in sorted(table.items()))
    return deterministic_gzip(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the shipped table, write nothing")
    args = parser.parse_args()
    words = vocabulary()
    embedder = default_embedder()
    vectors = np.concatenate([embedder.embed(words[i:i + 512]) for i in range(0, len(words), 512)])
    data = render(neighbours(words, np.asarray(vectors, dtype=np.float32)))
    if args.check:
        same = TABLE_PATH.exists() and TABLE_PATH.read_bytes() == data
        print("the shipped table is current" if same else "the shipped table differs: rebuild it")
        sys.exit(0 if same else 1)
    TABLE_PATH.write_bytes(data)
    print(f"{len(words)} words, wrote {TABLE_PATH.relative_to(REPO)} ({len(data) / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
