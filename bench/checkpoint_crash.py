"""Kill a process with SIGKILL while it writes CrewAI checkpoints, and count unreadable checkpoints.

    python bench/checkpoint_crash.py --trials 60                     # mnemic's JSON and SQLite providers
    python bench/checkpoint_crash.py --trials 60 --providers crewai-json   # CrewAI's JsonProvider, for reference

For each trial a child process (forked from this one, so CrewAI is imported once) writes
checkpoints in a loop with the provider under test, varying sizes around `--payload-kb`; the
parent kills it with SIGKILL after a random delay, then reads back every checkpoint the location
holds the way a restore would (each `*.json` file, or each row of the SQLite file after an
integrity check) and counts those that are not whole JSON documents. Temporary files a killed
write leaves are counted separately: no reader takes them for checkpoints. Prints one JSON object.
Linux or macOS (fork).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROVIDERS = ("json", "sqlite", "crewai-json")


def make_provider(name: str) -> Any:
    if name == "json":
        from mnemic.checkpoints.crewai_json import JsonCheckpointProvider

        return JsonCheckpointProvider()
    if name == "sqlite":
        from mnemic.checkpoints.crewai_sqlite import SqliteCheckpointProvider

        return SqliteCheckpointProvider()
    if name == "crewai-json":
        from crewai.state.provider.json_provider import JsonProvider

        return JsonProvider()
    raise SystemExit(f"unknown provider {name!r}; one of {', '.join(PROVIDERS)}")


def payload(size_kb: int, serial: int, rng: random.Random) -> str:
    """A checkpoint-shaped JSON document of about `size_kb` KiB."""
    chunk = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(1000))
    tasks = [{"description": f"task {i}", "output": {"raw": chunk}} for i in range(max(1, size_kb))]
    return json.dumps({"crewai_version": "bench", "serial": serial, "entities": [{"entity_type": "crew",
                                                                                   "tasks": tasks}],
                       "event_record": {"nodes": {}}})


def write_forever(provider: Any, location: str, size_kb: int, seed: int) -> None:
    rng = random.Random(seed)
    serial = 0
    parent: str | None = None
    while True:
        serial += 1
        written = provider.checkpoint(payload(rng.randint(max(1, size_kb // 4), size_kb * 2), serial, rng),
                                      location, parent_id=parent, branch="main")
        parent = provider.extract_id(written)


def read_back(name: str, location: str) -> tuple[int, int, int]:
    """(checkpoints, unreadable, leftover temporary files) at `location`."""
    if name == "sqlite":
        if not Path(location).exists():
            return 0, 0, 0
        connection = sqlite3.connect(location)
        try:
            if connection.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                return 1, 1, 0
            if connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoints'").fetchone() is None:
                return 0, 0, 0  # killed before its first transaction committed
            rows = connection.execute("SELECT data FROM checkpoints").fetchall()
        finally:
            connection.close()
        unreadable = 0
        for (data,) in rows:
            try:
                json.loads(data)
            except (TypeError, ValueError):
                unreadable += 1
        return len(rows), unreadable, 0
    root = Path(location)
    files = [p for p in root.rglob("*.json") if not p.name.startswith(".")]
    unreadable = 0
    for path in files:
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            unreadable += 1
    temps = [p for p in root.rglob(".*.tmp")]
    return len(files), unreadable, len(temps)


def trial(name: str, provider: Any, workdir: Path, number: int, size_kb: int, rng: random.Random,
          max_delay_s: float) -> dict[str, Any]:
    location = str(workdir / f"{name}-{number}" / ("checkpoints.db" if name == "sqlite" else "checkpoints"))
    Path(location).parent.mkdir(parents=True, exist_ok=True)
    seed = rng.randrange(1 << 30)
    pid = os.fork()
    if pid == 0:  # the child writes until it is killed
        try:
            write_forever(provider, location, size_kb, seed)
        finally:
            os._exit(1)
    time.sleep(rng.uniform(0.002, max_delay_s))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    checkpoints, unreadable, temps = read_back(name, location)
    return {"checkpoints": checkpoints, "unreadable": unreadable, "leftover_temp_files": temps}


def run(providers: list[str], trials: int, size_kb: int, seed: int, max_delay_s: float) -> dict[str, Any]:
    from mnemic.checkpoints.owners import set_owner_resolver

    set_owner_resolver(lambda user_key: None)  # no user here: what is measured is the write itself
    rng = random.Random(seed)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mnemic-crash-") as work:
        for name in providers:
            provider = make_provider(name)
            outcomes = [trial(name, provider, Path(work), n, size_kb, rng, max_delay_s) for n in range(trials)]
            results[name] = {
                "trials": trials,
                "checkpoints_read": sum(o["checkpoints"] for o in outcomes),
                "unreadable_checkpoints": sum(o["unreadable"] for o in outcomes),
                "trials_with_an_unreadable_checkpoint": sum(1 for o in outcomes if o["unreadable"]),
                "trials_with_a_leftover_temp_file": sum(1 for o in outcomes if o["leftover_temp_files"]),
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--providers", nargs="+", default=["json", "sqlite"], choices=PROVIDERS)
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--payload-kb", type=int, default=256, help="typical checkpoint size (KiB)")
    parser.add_argument("--max-delay", type=float, default=0.25, help="longest wait before the kill (s)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps({"sqlite_version": sqlite3.sqlite_version, "payload_kb": args.payload_kb,
                      "results": run(args.providers, args.trials, args.payload_kb, args.seed, args.max_delay)},
                     indent=2))


if __name__ == "__main__":
    main()
