"""LoCoMo side by side: mnemic and every memory a user would pick instead, in one run.

    python bench/bench_peers.py                # every system, every question of categories 1-4
    python bench/bench_peers.py --sample 150   # 150 questions spread evenly over the ten conversations
    python bench/bench_peers.py --systems mnemic,mem0-qdrant --limit-conversations 2
    make bench-peers                           # installs the `peers` extra, then the full run

Systems (bench/peer_systems.py): mnemic with its defaults; plain Chroma dense top-k; crewai's
Memory (shallow, explicit fields); Mem0 OSS with `infer=False` on local Qdrant (BM25 keyword signal
on, from a fastembed model folder made offline), on Qdrant without BM25 (what offline Mem0 does by
itself) and on Chroma; LangGraph's InMemoryStore and SqliteStore with their semantic index. All of
them embed with the same MiniLM (mnemic's numpy one, through each peer's embedder hook).

Each system runs in its own child process, one after another in the same run, so its peak RSS is
its own and none inherits another's caches. A child refuses every connection that leaves the machine
and counts the attempts; systems with an LLM slot get one that counts calls and refuses them.
Scoring, data loading and the mnemic/Chroma/crewai systems are bench_locomo's (see its docstring):
R@k is the share of a question's evidence turns among k results; latency is the k=10 search.

LoCoMo (snap-research/LoCoMo) is CC BY-NC 4.0: read from --data, never written into the repository;
bench/results/ holds aggregate figures only.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import ipaddress
import json
import os
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_locomo import CATEGORIES, KS, REPO, Conversation, _quiet_stdout, evaluate, load_locomo  # noqa: E402
from peer_systems import PEERS, LangGraphStoreSystem, Mem0System, offline_environment  # noqa: E402

# shared/ sits beside the repository, or beside the folder that holds this worktree.
_DATA_CANDIDATES = [p / "shared" / "bench" / "locomo10.json" for p in REPO.parents]
TUNING_CONVERSATIONS = 5  # mnemic's weights are tuned on the file's first five (see bench_locomo.HALVES)
DEFAULT_DATA = next((p for p in _DATA_CANDIDATES if p.exists()), _DATA_CANDIDATES[0])


# -- what one system costs and finds (runs inside the child) --------------------------------------


def measure(name: str, conversations: Sequence[Conversation], workdir: Path, embedder: Any) -> dict[str, Any]:
    """Build one system, ingest every turn, ask every question; recall, latency, ingest rate, LLM calls."""
    started = time.perf_counter()
    system = PEERS[name].build(workdir, embedder)
    setup_s = time.perf_counter() - started
    try:
        started = time.perf_counter()
        for conv in conversations:
            system.load(conv)
        system.finish_loading()
        ingest_s = time.perf_counter() - started
        result = evaluate(system, conversations)
        turns = sum(len(c.turns) for c in conversations)
        result.update(
            setup_s=setup_s,
            ingest_s=ingest_s,
            turns=turns,
            ingest_turns_per_s=turns / ingest_s if ingest_s > 0 else None,
            llm_calls=int(getattr(system, "llm_calls", 0)),
            llm_slot=hasattr(system, "llm_calls"),
        )
        if isinstance(system, Mem0System):
            result["keyword_search"] = system.keyword_search_works(conversations[0])
        if isinstance(system, LangGraphStoreSystem):
            result["backend"] = system.backend
        return result
    finally:
        system.close()


class NetworkGuard:
    """Refuse, and count, every connection or name lookup that would leave this machine."""

    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()

    @staticmethod
    def _is_local(host: object) -> bool:
        if host in (None, "", "localhost"):
            return True
        try:
            return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
        except ValueError:
            return False

    @contextlib.contextmanager
    def installed(self) -> Iterator[NetworkGuard]:
        real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
        real_getaddrinfo = socket.getaddrinfo
        guard = self

        def check(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not guard._is_local(address[0]):
                guard.attempts[str(address[0])] += 1
                raise ConnectionRefusedError(f"benchmark runs offline: connection to {address[0]} refused")

        def connect(sock: socket.socket, address: Any) -> None:
            check(sock, address)
            real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            check(sock, address)
            return real_connect_ex(sock, address)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if not guard._is_local(host.decode() if isinstance(host, bytes) else host):
                guard.attempts[str(host)] += 1
                raise socket.gaierror(socket.EAI_NONAME, f"benchmark runs offline: {host} not looked up")
            return real_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo
        try:
            yield self
        finally:
            socket.socket.connect, socket.socket.connect_ex = real_connect, real_connect_ex  # type: ignore[method-assign]
            socket.getaddrinfo = real_getaddrinfo


def embed_query_times(embedder: Any, conversations: Sequence[Conversation], n: int = 40) -> list[float]:
    """Seconds to embed one question, n times: the cost every system pays per search, timed in the
    same process just before and after it runs, so its searches can be read in units of it whatever
    the machine's load was at the time."""
    questions = [q.text for c in conversations for q in c.questions][:n] or ["warm-up"]
    times = []
    for i in range(n):
        started = time.perf_counter()
        embedder.embed([questions[i % len(questions)]])
        times.append(time.perf_counter() - started)
    return times


def _rss_mb() -> float:
    """This process's resident set now (Linux /proc; the peak is getrusage's ru_maxrss)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_child(args: argparse.Namespace) -> None:
    """One system in this process: the parent reads the JSON it leaves at --result."""
    out = Path(args.result)
    guard = NetworkGuard()
    try:
        with guard.installed():
            conversations, _ = select_questions(args)
            from mnemic.core.embeddings import default_embedder

            embedder = default_embedder()
            embedder.embed(["warm-up"])  # weights loaded before the baseline, as every system needs them
            baseline_mb = _rss_mb()
            reference = embed_query_times(embedder, conversations)
            with _quiet_stdout(args.child == "crewai"):
                result = measure(args.child, conversations, Path(args.workdir), embedder)
            reference += embed_query_times(embedder, conversations)
        result["embed_query_ms_p50"] = 1000 * statistics.median(reference)
        result["rss_baseline_mb"] = baseline_mb
        result["rss_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["network_attempts"] = dict(guard.attempts)
    out.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")


# -- which questions ------------------------------------------------------------------------------


def select_questions(args: argparse.Namespace) -> tuple[list[Conversation], Any]:
    """The conversations asked about, with the questions kept; every turn of them is still stored."""
    conversations, notes = load_locomo(Path(args.data), captions=args.captions)
    args.tuning = {c.conv_id for c in conversations[:TUNING_CONVERSATIONS]}
    if args.conversations:
        wanted = {c.strip() for c in args.conversations.split(",")}
        conversations = [c for c in conversations if c.conv_id in wanted]
    if args.limit_conversations:
        conversations = conversations[: args.limit_conversations]
    if args.sample:
        conversations = sample_evenly(conversations, args.sample)
    return conversations, notes


def sample_evenly(conversations: Sequence[Conversation], n: int) -> list[Conversation]:
    """`n` questions at even steps through all of them, so every conversation and category keeps its share."""
    flat = [(ci, qi) for ci, c in enumerate(conversations) for qi in range(len(c.questions))]
    if n >= len(flat):
        return list(conversations)
    keep = {flat[(i * len(flat)) // n] for i in range(n)}
    return [
        dataclasses.replace(c, questions=[q for qi, q in enumerate(c.questions) if (ci, qi) in keep])
        for ci, c in enumerate(conversations)
    ]


# -- the run: one child per system ----------------------------------------------------------------


def run_all(args: argparse.Namespace, names: Sequence[str], workdir: Path) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        system_dir = workdir / name
        system_dir.mkdir(parents=True)
        result_path, log_path = system_dir / "result.json", system_dir / "log.txt"
        command = [
            sys.executable, str(Path(__file__).resolve()), "--child", name, "--result", str(result_path),
            "--workdir", str(system_dir), "--data", str(args.data),
        ]
        selection = {"--conversations": args.conversations, "--limit-conversations": args.limit_conversations,
                     "--sample": args.sample}
        for flag, value in selection.items():
            if value:
                command += [flag, str(value)]
        if args.captions:
            command.append("--captions")
        env = {**os.environ, **offline_environment(system_dir), **PEERS[name].env(system_dir)}
        print(f"running {name}: {PEERS[name].about} ...", flush=True)
        started = time.perf_counter()
        with open(log_path, "w", encoding="utf-8") as log:
            code = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        if result_path.exists():
            results[name] = json.loads(result_path.read_text(encoding="utf-8"))
        else:
            results[name] = {"error": f"child exited {code} without a result"}
        if "error" in results[name]:
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
            results[name]["log_tail"] = tail
            print(f"  {name} failed: {results[name]['error']}\n    " + "\n    ".join(tail), flush=True)
        else:
            overall = results[name]["overall"]
            print(f"  {name}: R@10 {overall['R@10']:.1f} in {time.perf_counter() - started:.0f} s", flush=True)
    return results


# -- report ---------------------------------------------------------------------------------------


def _fmt(value: Any, spec: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def _ratio(result: dict[str, Any], reference: dict[str, Any], key: str) -> float | None:
    """A figure over plain Chroma's, measured in the same run: the machine's load shifts both alike."""
    mine, theirs = result.get(key), reference.get(key)
    return mine / theirs if mine and theirs else None


def _per_embedding(result: dict[str, Any]) -> float | None:
    """Search p50 over the p50 of embedding one question in the same process (see embed_query_times)."""
    search, embed = result.get("query_ms_p50"), result.get("embed_query_ms_p50")
    return search / embed if search and embed else None


def _halves(result: dict[str, Any], tuning: set[str]) -> list[str]:
    """R@10 over the conversations mnemic's weights were tuned on, and over the held-out ones."""
    cells = []
    for held_out in (False, True):
        parts = [s for c, s in result["per_conversation"].items() if (c not in tuning) is held_out and s.get("n")]
        n = sum(s["n"] for s in parts)
        cells.append(f"{sum(s['R@10'] * s['n'] for s in parts) / n:.1f}  (n={int(n)})" if n else "—")
    return cells


def print_tables(results: dict[str, dict[str, Any]], questions: int, tuning: set[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=200)
    main = Table(title=f"LoCoMo evidence recall (%) and cost, {questions} questions of categories 1-4, MiniLM for all")
    reference = results.get("chroma", {})
    for column in ("system", *(f"R@{k}" for k in KS), "all@10", "search p50", "p95", "p50 / embed",
                   "ingest turns/s", "×chroma", "peak RSS", "LLM calls"):
        main.add_column(column, justify="left" if column == "system" else "right")
    by_category = Table(title="R@5 / R@10 / R@20 per category (%)")
    by_category.add_column("system")
    for label in CATEGORIES.values():
        by_category.add_column(label, justify="right")
    tuned_on = ", ".join(sorted(tuning))
    by_half = Table(title=f"R@10 (%) on the conversations mnemic is tuned on ({tuned_on}) and on the rest")
    for column in ("system", "tuning conversations", "held-out conversations"):
        by_half.add_column(column, justify="left" if column == "system" else "right")
    for name, res in results.items():
        if "error" in res:
            main.add_row(name, *["—"] * 11)
            continue
        overall = res["overall"]
        main.add_row(
            name,
            *(f"{overall[f'R@{k}']:.1f}" for k in KS),
            f"{overall['all@10']:.1f}",
            _fmt(res.get("query_ms_p50"), ".1f", " ms"),
            _fmt(res.get("query_ms_p95"), ".1f", " ms"),
            _fmt(_per_embedding(res), ".1f", "×"),
            _fmt(res.get("ingest_turns_per_s"), ".0f"),
            _fmt(_ratio(res, reference, "ingest_turns_per_s"), ".2f", "×"),
            _fmt(res.get("rss_peak_mb"), ".0f", " MB"),
            str(res["llm_calls"]) if res.get("llm_slot") else "0 (none)",
        )
        by_category.add_row(
            name,
            *(
                " / ".join(f"{s[f'R@{k}']:.1f}" for k in KS) + f"  (n={int(s['n'])})" if s.get("n") else "—"
                for s in res["per_category"].values()
            ),
        )
        by_half.add_row(name, *_halves(res, tuning))
    console.print(main)
    console.print(by_category)
    console.print(by_half)
    for name, res in results.items():
        notes = [PEERS[name].about]
        if "keyword_search" in res:
            notes.append("keyword search answered" if res["keyword_search"] else "keyword search off")
        if "backend" in res:
            notes.append(res["backend"])
        if res.get("network_attempts"):
            notes.append(f"network attempts refused: {res['network_attempts']}")
        if res.get("embed_query_ms_p50"):
            notes.append(f"one query embedding p50 {res['embed_query_ms_p50']:.1f} ms")
        if "rss_baseline_mb" in res:
            notes.append(f"RSS before the system: {res['rss_baseline_mb']:.0f} MB")
        if "error" in res:
            notes.append(f"FAILED: {res['error']}")
        console.print(f"[bold]{name}[/bold]: " + "; ".join(notes))


# -- command line ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--systems", default=",".join(PEERS), help=f"comma-separated, from {', '.join(PEERS)}")
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--conversations", default=None, help="comma-separated sample ids; default all")
    parser.add_argument("--sample", type=int, default=None, help="ask only N questions, spread evenly")
    parser.add_argument("--captions", action="store_true", help="append image captions to turns (as bench_locomo)")
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    parser.add_argument("--keep", action="store_true", help="keep the stores and child logs (their folder is printed)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = [n for n in args.names + ([args.child] if args.child else []) if n not in PEERS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(PEERS)}")
    if not Path(args.data).exists():
        parser.error(f"no LoCoMo data at {args.data}; pass --data")
    return args


def main() -> None:
    args = parse_args()
    if args.child:
        run_child(args)
        return
    conversations, notes = select_questions(args)
    questions = sum(len(c.questions) for c in conversations)
    command = "python " + " ".join(shlex.quote(a) for a in [str(Path(sys.argv[0])), *sys.argv[1:]])
    print(f"$ {command}")
    print(
        f"LoCoMo: {len(conversations)} conversations, {sum(len(c.turns) for c in conversations)} turns stored, "
        f"{questions} questions asked (categories 1-4 in the file: {notes.questions}, {notes.no_evidence} of "
        f"them name no usable evidence turn); {os.cpu_count()} CPUs"
    )
    workdir = Path(tempfile.mkdtemp(prefix="mnemic-peers-"))
    try:
        results = run_all(args, args.names, workdir)
    finally:
        if args.keep:
            print(f"stores and logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print_tables(results, questions, args.tuning)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"peers-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    report = {
        "command": command,
        "conversations": [c.conv_id for c in conversations],
        "questions": questions,
        "tuning_conversations": sorted(args.tuning),
        "cpus": os.cpu_count(),
        "systems": {name: PEERS[name].about for name in args.names},
        "results": results,
    }
    path.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    print(f"results written to {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


if __name__ == "__main__":
    main()
