"""SIGKILL trials for `remember_many()`: is every acknowledged statement there after a restart?

    python bench/bench_remember_many_kill.py --trials 30
    python bench/bench_remember_many_kill.py --trials 30 --server     # through a `chroma run` it starts

Each trial starts a writer process that calls `remember_many()` in a loop (10 statements a call)
and prints the ids each call returned: those statements were acknowledged. It is killed with
SIGKILL at a random moment (0.3 to 3 s after its first acknowledgement), usually with batches still
queued for the background writer. The store is then opened again (which replays the write journal)
and every acknowledged id is looked up. The count printed is acknowledged-and-lost: statements the
caller was told were accepted that a restart does not find.

Embedded stores journal each call before it returns (bench default). `--server` writes through a
Chroma server with no `lexical_path`: the journal is then in memory, and this measures what is lost.
`--lexical-path` gives the server-mode writer a local journal file.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WRITER = textwrap.dedent(
    """
    import sys
    from mnemic import Memory, HashEmbedder
    target, trial, journal = sys.argv[1], sys.argv[2], sys.argv[3]
    if target.isdigit():
        import chromadb
        from chromadb.config import Settings
        client = chromadb.HttpClient(host="127.0.0.1", port=int(target), settings=Settings(anonymized_telemetry=False))
        memory = Memory(client=client, namespace="kill" + trial, embedder=HashEmbedder(),
                        lexical_path=journal or None)
    else:
        memory = Memory(target, embedder=HashEmbedder())
    call = 0
    while True:
        ids = memory.remember_many([f"Trial {trial} call {call} statement {j}: the parcel {call}-{j} left depot {j}."
                                    for j in range(10)], user_id="u")
        print(" ".join(ids), flush=True)
        call += 1
    """
)


def open_memory(target: str, trial: int, journal: str) -> Any:
    from mnemic import HashEmbedder, Memory

    if target.isdigit():
        import chromadb
        from chromadb.config import Settings

        client = chromadb.HttpClient(host="127.0.0.1", port=int(target), settings=Settings(anonymized_telemetry=False))
        return Memory(client=client, namespace=f"kill{trial}", embedder=HashEmbedder(), lexical_path=journal or None)
    return Memory(target, embedder=HashEmbedder())


def trial(target: str, number: int, journal: str, rng: random.Random) -> tuple[int, int, int]:
    """(acknowledged, acknowledged-and-lost, stored twice) for one kill."""
    proc = subprocess.Popen([sys.executable, "-c", WRITER, target, str(number), journal],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    time.sleep(rng.uniform(0.3, 3.0))
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate()
    output = first + rest
    # Only whole lines count: a line the kill cut short was not fully acknowledged.
    whole = output.splitlines()[:-1] if not output.endswith("\n") else output.splitlines()
    acknowledged = [i for line in whole for i in line.split()]
    memory = open_memory(target, number, journal)
    try:
        records = memory.list(user_id="u", limit=100_000)
    finally:
        memory.close()
    stored = {r.id for r in records}
    twice = len(records) - len({r.text for r in records})
    return len(acknowledged), len([i for i in acknowledged if i not in stored]), twice


def start_server(workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    chroma = Path(sys.executable).parent / "chroma"
    proc = subprocess.Popen([str(chroma), "run", "--path", str(workdir / "server"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("chroma server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--server", action="store_true", help="write through a chroma server this script starts")
    parser.add_argument("--lexical-path", action="store_true", help="server mode: give each writer a journal file")
    args = parser.parse_args()
    print("command:", shlex.join(["python", "bench/bench_remember_many_kill.py", *sys.argv[1:]]), flush=True)
    rng = random.Random(args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="mnemic-kill-"))
    server = None
    try:
        if args.server:
            server, port = start_server(workdir)
        total_acked = total_lost = bad_trials = total_twice = 0
        for number in range(args.trials):
            if args.server:
                target = str(port)
                journal = str(workdir / f"journal-{number}.sqlite3") if args.lexical_path else ""
            else:
                target, journal = str(workdir / f"store-{number}"), ""
            acked, lost, twice = trial(target, number, journal, rng)
            total_acked += acked
            total_lost += lost
            total_twice += twice
            bad_trials += lost > 0
            print(f"trial {number:2d}: acknowledged {acked:4d}, acknowledged and lost {lost}, stored twice {twice}",
                  flush=True)
        mode = "server, journal file" if args.server and args.lexical_path else "server, no journal file" \
            if args.server else "embedded"
        print(f"{mode}: {args.trials} SIGKILL trials, {total_acked} statements acknowledged, "
              f"{total_lost} acknowledged and lost (in {bad_trials} trials), {total_twice} stored twice")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
