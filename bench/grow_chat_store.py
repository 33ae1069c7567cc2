"""Grow one user's store of conversation turns, the way a chat agent stores them over years.

    python bench/grow_chat_store.py --path STORE --turns 100000
    python bench/bench_memory_latency.py --path STORE --measure-only --user-ids solo --words zipf

Every turn is one `remember_many([text], session_id=..., turn=...)` call, twenty turns a session,
for the user "solo"; the texts are `bench_memory_latency.zipf_sentence` (~17,000 English words drawn
by Zipf's law, no user data), from a fixed seed, so the same command grows the same store. The
latency bench's own loader spreads records over users and saturates one user at ~20k records; a
single user with 100k records is what makes the per-user side of recall (word postings, links)
work hardest.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_memory_latency import zipf_sentence  # noqa: E402

TURNS_PER_SESSION = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", type=Path, required=True, help="store folder (the store is PATH/mnemic)")
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    from mnemic import Memory

    rng = random.Random(args.seed)
    began = time.perf_counter()
    with Memory(args.path / "mnemic") as memory:
        for i in range(args.turns):
            memory.remember_many([zipf_sentence(rng)], user_id="solo", session_id=f"s{i // TURNS_PER_SESSION}",
                                 turn=i % TURNS_PER_SESSION, author="user", source_kind="conversation")
            if (i + 1) % 5000 == 0:
                memory.drain_writes()
                print(f"{i + 1} turns in {time.perf_counter() - began:.0f} s", flush=True)
        memory.drain_writes()
        print(f"records stored: {memory.tree(user_id='solo')['count']}")


if __name__ == "__main__":
    main()
