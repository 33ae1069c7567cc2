"""Cost of the secret screen per statement: it runs on every write and every observed message.

Times `find_secrets` over conversation turns (LoCoMo when its file is given, otherwise generated
chat lines) and over 1,000-character document chunks, as medians of several rounds. With
`--against REV` the detector of an older revision (the package `mnemic/core/safety/` at REV, or
the single module `mnemic/core/safety.py` it replaced) is timed in the same run, round for round
with this one, so the ratio holds on a noisy machine.

    python bench/bench_safety.py --locomo ../shared/bench/locomo10.json --against main
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mnemic.core.safety import find_secrets

ROUNDS = 7


def turns(locomo: Path | None) -> list[str]:
    if locomo is not None and locomo.exists():
        data = json.loads(locomo.read_text())
        return [t["text"] for conv in data for key, session in conv["conversation"].items()
                if key.startswith("session_") and isinstance(session, list) for t in session]
    rng = random.Random(7)
    words = ("we went to the lake on saturday and my sister brought her new dog which loves swimming "
             "I think the project deadline moved to friday because the client asked for more time").split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(8, 40))) for _ in range(5000)]


def older_detector(revision: str) -> Callable[[str], object]:
    """`find_secrets` as it was at `revision`, loaded under another name beside today's."""
    folder = Path(tempfile.mkdtemp(prefix="older_safety_"))
    listed = subprocess.run(["git", "ls-tree", "--name-only", revision, "mnemic/core/safety/"], check=True,
                            capture_output=True, text=True).stdout.split()
    if listed:
        for path in listed:
            blob = subprocess.run(["git", "show", f"{revision}:{path}"], check=True, capture_output=True).stdout
            (folder / Path(path).name).write_bytes(blob)
        spec = importlib.util.spec_from_file_location("older_safety", folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
    else:
        source = subprocess.run(["git", "show", f"{revision}:mnemic/core/safety.py"], check=True,
                                capture_output=True, text=True).stdout
        (folder / "safety.py").write_text(source)
        spec = importlib.util.spec_from_file_location("older_safety", folder / "safety.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["older_safety"] = module
    spec.loader.exec_module(module)
    return module.find_secrets  # type: ignore[no-any-return]


def medians_us(detectors: dict[str, Callable[[str], object]], texts: list[str]) -> dict[str, float]:
    """Per-text CPU time of each detector, median over rounds that run them in turn."""
    rounds: dict[str, list[float]] = {name: [] for name in detectors}
    for _ in range(ROUNDS):
        for name, detect in detectors.items():
            start = time.process_time()
            for text in texts:
                detect(text)
            rounds[name].append((time.process_time() - start) / len(texts) * 1e6)
    return {name: statistics.median(times) for name, times in rounds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=None, help="LoCoMo JSON for real conversation turns")
    parser.add_argument("--against", default=None, help="a git revision whose secret detector to compare")
    args = parser.parse_args()
    statements = turns(args.locomo)
    joined = "\n".join(statements)
    chunks = [joined[i:i + 1000] for i in range(0, min(len(joined), 300_000), 1000)]
    detectors: dict[str, Callable[[str], object]] = {"now": find_secrets}
    if args.against:
        detectors[args.against] = older_detector(args.against)
    print(f"{len(statements)} statements, {len(chunks)} chunks of 1,000 characters; median of {ROUNDS} rounds")
    per_statement, per_chunk = medians_us(detectors, statements), medians_us(detectors, chunks)
    results = {name: (per_statement[name], per_chunk[name]) for name in detectors}
    for name, (per_statement, per_chunk) in results.items():
        print(f"{name:>10}: {per_statement:8.1f} µs/statement  {per_chunk:9.1f} µs/chunk")
    if args.against:
        now, before = results["now"], results[args.against]
        print(f"     ratio now/{args.against}: {now[0] / before[0]:.2f} per statement, "
              f"{now[1] / before[1]:.2f} per chunk")


if __name__ == "__main__":
    main()
