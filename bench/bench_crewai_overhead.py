"""What memory costs a CrewAI kickoff, per task: the same crew with no memory, with CrewMemory and
with CrewAI's own built-in memory.

    python bench/bench_crewai_overhead.py                       # MiniLM embeddings, ~3 minutes
    python bench/bench_crewai_overhead.py --embedder hash --kickoffs 20
    python bench/bench_crewai_overhead.py --keep-kickoffs 0     # without the kickoffs kept for replay

The crews run on the same deterministic fake LLM (it answers at once, so what is left is framework
and memory time; each crew has its own instance, to count its calls) and run interleaved in the same
process: no memory, CrewMemory, CrewAI's memory, for one user after another, after warm-up kickoffs
that are not counted. CrewAI's memory gets the same embedder (as a callable) and its LanceDB store
in the run's temporary directory. The mnemic store is first filled with `--prefill` facts per user
so recall has something to rank. The mnemic Memory has no LLM of its own: the crew's LLM extracts
(one call per task), and the fake answers every request with prose, so mnemic falls back to its
rules and CrewAI's memory to storing the raw task text, as each does when an answer is not JSON.
Reported:

- overhead per task: (kickoff with memory - kickoff without) / tasks, median over kickoffs, and
  the kickoff time with memory as a multiple of the kickoff time without;
- LLM calls per task each memory adds (calls with memory - calls without, per task);
- its parts, timed inside CrewMemory: the recall before each task (query embedding, hybrid search,
  conversion), of which the wait for the previous task's background extraction to land (recall is
  a read barrier, so task 2 sees what task 1 taught); the extraction hand-off after each task
  (parsing the task, queueing `observe`); and the drain CrewAI waits for before a kickoff
  completes (what is left of the last task's extraction).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from mnemic import HashEmbedder, Memory  # noqa: E402
from mnemic.integrations.crewai import CrewMemory  # noqa: E402

CITIES = "Lisbon Oslo Austin Kyoto Lima Accra Hanoi Tallinn Quito Perth".split()
HOBBIES = "hiking cycling pottery chess sailing climbing jazz baking birding rowing".split()
TASKS = [
    ("Intake Specialist", "Write down what matters about the customer.\n\n{message}"),
    ("Travel Planner", "Recommend a weekend trip for the customer."),
    ("Intake Specialist", "Note any new preference the customer states.\n\n{followup}"),
    ("Travel Planner", "Suggest a restaurant for the customer's trip."),
]


ANSWER = "The customer would enjoy a quiet weekend by the sea."


class InstantLLM(BaseLLM):
    """Answers every request at once with the same prose final answer, and counts the requests."""

    _calls: list[int] = PrivateAttr(default_factory=lambda: [0])
    _answer: str = PrivateAttr(default=ANSWER)

    def __init__(self, answer: str = ANSWER, **data: Any) -> None:
        super().__init__(model="bench-instant", **data)
        self._answer = answer

    @property
    def calls(self) -> int:
        return self._calls[0]

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> str:
        self._calls[0] += 1
        return f"Thought: I have what I need.\nFinal Answer: {self._answer}"

    def supports_function_calling(self) -> bool:
        return False


class TimedCrewMemory(CrewMemory):
    """CrewMemory that records how long each call CrewAI makes takes."""

    _bench_timings: dict[str, list[float]] = PrivateAttr(
        default_factory=lambda: {"recall": [], "recall_wait": [], "extract": [], "drain": []})

    def timings(self) -> dict[str, list[float]]:
        return self._bench_timings

    def _timed(self, name: str, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.timings()[name].append(time.perf_counter() - start)

    def recall(self, query: str, *args: Any, **kwargs: Any) -> Any:
        def both() -> Any:
            # Recall is a read barrier: it first waits for the previous task's extraction.
            self._timed("recall_wait", self.mnemic.drain_writes)
            return super(TimedCrewMemory, self).recall(query, *args, **kwargs)

        return self._timed("recall", both)

    def extract_memories(self, content: str) -> list[str]:
        return self._timed("extract", lambda: super(TimedCrewMemory, self).extract_memories(content))  # type: ignore[no-any-return]

    def drain_writes(self) -> None:
        self._timed("drain", lambda: super(TimedCrewMemory, self).drain_writes())


def build_crew(llm: BaseLLM, memory: Any) -> Crew:
    roles = {role: Agent(role=role, goal="Help customers", backstory="Experienced.", llm=llm)
             for role in dict.fromkeys(r for r, _ in TASKS)}
    tasks = [Task(description=text, expected_output="A short answer.", agent=roles[role], context=[])
             for role, text in TASKS]
    return Crew(agents=list(roles.values()), tasks=tasks, memory=memory, name="bench-crew")


def crewai_memory(llm: BaseLLM, memory: Memory, path: Path) -> Any:
    """CrewAI's own unified Memory, offline: mnemic's embedder as its embedding callable."""
    from crewai.memory.unified_memory import Memory as CrewAIMemory

    return CrewAIMemory(llm=llm, embedder=lambda texts: memory.embedder.embed(list(texts)), storage=str(path))


def inputs_for(index: int) -> dict[str, str]:
    city, hobby = CITIES[index % len(CITIES)], HOBBIES[(index * 3) % len(HOBBIES)]
    return {
        "user_id": f"user-{index}",
        "message": f"I live in {city}. I prefer {hobby} trips and I am vegetarian.",
        "followup": f"I also like {HOBBIES[(index * 7 + 1) % len(HOBBIES)]} and I travel with my sister.",
    }


def prefill(memory: Memory, users: int, per_user: int) -> None:
    for index in range(users):
        facts = [f"Visited {CITIES[(index + k) % len(CITIES)]} in {2000 + k % 24} for a {HOBBIES[k % len(HOBBIES)]} "
                 f"weekend number {k}." for k in range(per_user)]
        memory.remember_many(facts, user_id=f"user-{index}", source_kind="operator", author="operator")
    memory.drain_writes()


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(p95 * 1000, 2), "mean_ms": round(statistics.fmean(ordered) * 1000, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kickoffs", type=int, default=12, help="measured kickoffs per crew")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--prefill", type=int, default=50, help="facts stored per user before the run")
    parser.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--answer", default=ANSWER,
                        help="the fake LLM's final answer to every task (a statement is a fact to learn)")
    parser.add_argument("--keep-kickoffs", type=int, default=None,
                        help="CrewMemory(keep_kickoffs=...): kickoffs kept per crew for replay (default: "
                             "CrewMemory's; 0 keeps none, to see what keeping them costs)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()

    total = args.warmup + args.kickoffs
    workdir = Path(tempfile.mkdtemp(prefix="mnemic-bench-crewai-"))
    embedder = HashEmbedder() if args.embedder == "hash" else None
    with Memory(workdir / "store", embedder=embedder) as memory:
        memory.set_policy(mode="auto")
        prefill(memory, total, args.prefill)
        kept = {} if args.keep_kickoffs is None else {"keep_kickoffs": args.keep_kickoffs}
        crew_memory = TimedCrewMemory(memory, **kept)
        llms = {name: InstantLLM(args.answer) for name in ("none", "mnemic", "crewai")}
        crews = {
            "none": build_crew(llms["none"], False),
            "mnemic": build_crew(llms["mnemic"], crew_memory),
            "crewai": build_crew(llms["crewai"], crewai_memory(llms["crewai"], memory, workdir / "crewai-memory")),
        }
        seconds: dict[str, list[float]] = {name: [] for name in crews}
        calls: dict[str, int] = dict.fromkeys(crews, 0)
        for index in range(total):
            for name, crew in crews.items():
                before = llms[name].calls
                start = time.perf_counter()
                crew.kickoff(inputs=inputs_for(index))
                elapsed = time.perf_counter() - start
                if name == "crewai":
                    crew._memory.drain_writes()  # its saves run in the background: count them all
                if index >= args.warmup:
                    seconds[name].append(elapsed)
                    calls[name] += llms[name].calls - before
            if index == args.warmup - 1:
                for values in crew_memory.timings().values():
                    values.clear()
        tasks = len(TASKS)
        without = seconds["none"]
        with_memory = seconds["mnemic"]
        per_task = [(m - p) / tasks for m, p in zip(with_memory, without, strict=True)]
        crewai_per_task = [(m - p) / tasks for m, p in zip(seconds["crewai"], without, strict=True)]
        timings = crew_memory.timings()
        measured_tasks = tasks * args.kickoffs
        base = statistics.median(without)
        result = {
            "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "embedder": memory.embedder.name,
            "tasks_per_kickoff": tasks,
            "kickoffs": args.kickoffs,
            "prefill_per_user": args.prefill,
            "answer": args.answer,
            "keep_kickoffs": crew_memory.keep_kickoffs,
            "kickoff_without_memory": quantiles(without),
            "kickoff_with_memory": quantiles(with_memory),
            "kickoff_with_crewai_memory": quantiles(seconds["crewai"]),
            "kickoff_time_vs_no_memory": {"mnemic": round(statistics.median(with_memory) / base, 2),
                                          "crewai": round(statistics.median(seconds["crewai"]) / base, 2)},
            "overhead_per_task": quantiles(per_task),
            "crewai_memory_overhead_per_task": quantiles(crewai_per_task),
            "llm_calls_per_task": {name: round(count / measured_tasks, 2) for name, count in calls.items()},
            "memory_llm_calls_per_task": {name: round((calls[name] - calls["none"]) / measured_tasks, 2)
                                          for name in ("mnemic", "crewai")},
            "recall_per_task": quantiles(timings["recall"]),
            "recall_waiting_for_previous_writes": quantiles(timings["recall_wait"]),
            "extraction_handoff_per_task": quantiles(timings["extract"]),
            "drain_per_call": quantiles(timings["drain"]),
            "stored_facts_per_user": round(len(memory.list(limit=100_000)) / total, 1),
            "cpus": os.cpu_count(),
        }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"crewai-overhead-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
