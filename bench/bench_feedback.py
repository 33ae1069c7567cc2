"""Added latency of mnemic's LangGraph review step (`mnemic.flows.human_feedback`), against a plain
human-in-the-loop node (`interrupt()` and nothing else) measured in the same run.

    python bench/bench_feedback.py                     # all-MiniLM-L6-v2 (the default embedder)
    python bench/bench_feedback.py --embedder hash     # the hashing test embedder
    python bench/bench_feedback.py --rounds 100 --facts 2000 --json out.json

Every graph has one node that writes a draft and stops for review; a review cycle is timed from
`invoke(input)` to the interrupt plus `invoke(Command(resume=...))` to the end, on InMemorySaver.
The model is a scripted callable that answers at once, so the figures are what mnemic adds around
the model: a real model adds its own time to the calls counted in the last column.

- plain: `interrupt()` in the node, no mnemic (the reference);
- review, 0 lessons: the node wrapped by `human_feedback`, answered with an approval (lessons are
  looked up, none found: no model call);
- review, 20 lessons: the same with 20 lessons at the node for this user (the pre-review ranks them,
  takes the 10 most relevant, and makes one model call);
- learn 1 lesson: no lessons, answered with feedback that is distilled into one stored lesson (one
  model call; the lesson is deleted again outside the timing);
- remember 1 fact: `Memory.remember` of one fact, no graph (deleted again outside the timing): what
  storing one record costs on this store, for scale against "learn 1 lesson".

The user also holds --facts ordinary facts, and other users hold lessons of the same node, so the
lookups run on a store that is not empty. Rounds interleave the variants, so machine load hits all
alike; medians and the difference from plain are printed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from mnemic import LessonPlace, LessonStore, Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.flows import human_feedback, unfenced

TOPICS = ["databases", "caching", "pricing", "onboarding", "security", "billing", "search", "mobile"]
LESSONS = [
    "Cite a source for every claim.", "Open with the conclusion.", "Keep paragraphs under four sentences.",
    "Use metric units.", "Spell out acronyms on first use.", "End with the support address.",
    "Mention the release date.", "Avoid the passive voice.", "Name the owner of each action.",
    "Link to the changelog.", "Use British spelling.", "Put prices in euros.", "Add a one-line summary first.",
    "Never promise delivery dates.", "Write numbers below ten as words.", "Address the reader as you.",
    "Keep the title under eight words.", "List risks before benefits.", "Quote customers by first name only.",
    "Close with a question.",
]


class State(TypedDict, total=False):
    topic: str
    draft: str


class InstantModel:
    """Both calls of the review step, answered at once; counts them."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        prompt = messages[-1]["content"]
        if "applied" in schema["properties"]:
            output = dict(unfenced(prompt))["output"]
            return {"output": output + " Sources: internal survey.", "applied": [1]}
        return {"lessons": ["Cite a source for every claim you make."], "rejected": False}


def draft(state: State) -> dict[str, Any]:
    return {"draft": f"Our {state['topic']} work shipped this week and customers like it."}


def plain_review(state: State) -> dict[str, Any]:
    answer = interrupt({"output": draft(state)["draft"]})
    return {"draft": draft(state)["draft"] if answer else ""}


def compile_graph(node: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("draft", node)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", END)
    return builder.compile(checkpointer=InMemorySaver())


def cycle(graph: Any, user: str, thread: str, topic: str, answer: Any) -> float:
    config = {"configurable": {"thread_id": thread, "user_id": user}}
    started = time.perf_counter()
    stopped = graph.invoke({"topic": topic}, config)
    assert "__interrupt__" in stopped
    graph.invoke(Command(resume=answer), config)
    return (time.perf_counter() - started) * 1000


def seed(memory: Memory, *, facts: int, others: int) -> None:
    place = LessonPlace("bench", "draft")
    store = LessonStore(memory)
    store.learn(LESSONS, user_id="with-lessons", place=place, reviewer="seed")
    for n in range(others):
        store.learn(LESSONS[n % len(LESSONS):][:5], user_id=f"other-{n}", place=place, reviewer="seed")
    texts = [f"Fact {n}: prefers {TOPICS[n % len(TOPICS)]} reports on {['Mondays', 'Fridays'][n % 2]}."
             for n in range(facts)]
    for user in ("no-lessons", "with-lessons", "learner"):
        memory.remember_many(texts, user_id=user)
    memory.drain_writes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--facts", type=int, default=500, help="ordinary facts each user holds")
    parser.add_argument("--others", type=int, default=20, help="other users with lessons at the same node")
    parser.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="mnemic-bench-feedback-"))
    try:
        embedder = HashEmbedder() if args.embedder == "hash" else None
        with Memory(folder / "store", embedder=embedder) as memory:
            memory.set_policy(mode="explicit")
            seed(memory, facts=args.facts, others=args.others)
            model = InstantModel()
            plain = compile_graph(plain_review)
            reviewed = compile_graph(human_feedback(draft, memory=memory, llm=model, graph="bench", name="draft"))
            store = LessonStore(memory)

            def learn_one(thread: str, topic: str) -> float:
                elapsed = cycle(reviewed, "learner", thread, topic, "Please cite a source for every claim.")
                for lesson in store.list(user_id="learner"):
                    memory.delete(lesson.id)  # back to no lessons, outside the timing
                return elapsed

            def remember_one(thread: str, topic: str) -> float:
                started = time.perf_counter()
                record = memory.remember(f"Asked for a source on every {topic} claim in {thread}.",
                                         user_id="learner")
                elapsed = (time.perf_counter() - started) * 1000
                if record is not None:
                    memory.delete(record.id)
                return elapsed

            variants: dict[str, Callable[[str, str], float]] = {
                "plain interrupt (reference)": lambda thread, topic: cycle(plain, "no-lessons", thread, topic, True),
                "review, 0 lessons": lambda thread, topic: cycle(reviewed, "no-lessons", thread, topic, True),
                "review, 20 lessons": lambda thread, topic: cycle(reviewed, "with-lessons", thread, topic, True),
                "learn 1 lesson": learn_one,
                "remember 1 fact (no graph)": remember_one,
            }
            calls_per_cycle: dict[str, float] = {}
            times: dict[str, list[float]] = {name: [] for name in variants}
            for n in range(args.warmup + args.rounds):
                for name, run in variants.items():
                    before = model.calls
                    elapsed = run(f"{name}-{n}", TOPICS[n % len(TOPICS)])
                    calls_per_cycle[name] = model.calls - before
                    if n >= args.warmup:
                        times[name].append(elapsed)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    reference = statistics.median(times["plain interrupt (reference)"])
    print(f"review cycle (invoke to interrupt + resume), {args.rounds} rounds, embedder {args.embedder}, "
          f"{args.facts} facts per user, {args.others} other users with lessons")
    print(f"{'variant':<30}{'median ms':>11}{'p90 ms':>9}{'added ms':>10}{'ratio':>8}{'model calls':>13}")
    results = {}
    for name, values in times.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        results[name] = {"median_ms": median, "p90_ms": p90, "added_ms": median - reference,
                         "ratio": median / reference, "model_calls": calls_per_cycle[name]}
        print(f"{name:<30}{median:>11.1f}{p90:>9.1f}{median - reference:>10.1f}{median / reference:>8.2f}"
              f"{calls_per_cycle[name]:>13.0f}")
    if args.json is not None:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "results": results},
                                        indent=2))


if __name__ == "__main__":
    main()
