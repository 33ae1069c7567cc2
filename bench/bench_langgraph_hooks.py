"""Added latency per LangGraph agent turn from mnemic's hooks, against the same agent without them.

    python bench/bench_langgraph_hooks.py                    # all-MiniLM-L6-v2 (the default embedder)
    python bench/bench_langgraph_hooks.py --embedder hash    # the hashing test embedder
    python bench/bench_langgraph_hooks.py --turns 200 --facts 1000 --json out.json

One Memory on disk holds --facts facts for the user the agent talks to (and as many spread over
--others other users). Two `create_react_agent` graphs share a scripted chat model that answers
at once, so a turn's time is LangGraph plus whatever memory adds:

- plain: the memory tools, no hooks;
- hooks: the same, plus `prompt=hooks.prompt` (recall for the user's message, and the profile when
  --profile) and `post_model_hook=hooks.post_model_hook` (the turn handed to extraction, policy auto).

Turns alternate plain/hooks in one run, so machine load hits both alike; each is timed around
`invoke()`, in two shapes: the model answers directly (one model call), or calls search_memory
first (two model calls, so the prompt hook runs twice). After each hooked turn the background
extraction is waited for, outside the timing, and timed on its own: it is what `invoke()` does not
wait for. (Recall is a read barrier: a turn that starts while the previous turn's extraction is
still running waits for it; see the note printed at the end.)
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.prebuilt import create_react_agent

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.langgraph import MemoryHooks, memory_tools

SUBJECTS = ["coffee", "tea", "sailing", "chess", "Lisbon", "Austin", "jazz", "Python", "Rust", "hiking", "sushi",
            "the beta launch", "PostgreSQL", "Kubernetes", "bullet points", "window seats", "marathons",
            "the atlas project", "vegetarian food", "early meetings"]
TEMPLATES = ["Prefers {s}.", "Is learning about {s}.", "Mentioned {s} last week.", "Dislikes {s}.",
             "Asked about {s} for the team.", "Has strong opinions on {s}.", "Wants reminders about {s}."]
QUESTIONS = ["What do I think about {s}?", "Did I mention {s}?", "Remind me what I said about {s}.",
             "Should we use {s}?", "I was reading about {s} today, what do you know about my views?"]
STATEMENTS = ["I live in {city} and I prefer {s}.", "I work as a {job}.", "Actually I started learning {s}.",
              "My favourite drink is {drink}."]


class InstantModel(BaseChatModel):
    """Answers at once: directly, or after one search_memory call when `tool_round`."""

    tool_round: bool = False

    @property
    def _llm_type(self) -> str:
        return "bench-instant"

    def bind_tools(self, tools: Any, **kwargs: Any) -> InstantModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if self.tool_round and isinstance(last, HumanMessage):
            reply = AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": str(last.content)},
                                               "id": f"c{len(messages)}"}])
        elif isinstance(last, ToolMessage):
            reply = AIMessage("Here is what I remember.")
        else:
            reply = AIMessage("Thanks, noted.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def seed(memory: Memory, user: str, facts: int, others: int, rng: random.Random) -> None:
    def texts(n: int) -> list[str]:
        made = {rng.choice(TEMPLATES).format(s=rng.choice(SUBJECTS)) + f" (note {i})" for i in range(n)}
        return sorted(made)

    memory.remember_many(texts(facts), user_id=user)
    for other in range(others):
        memory.remember_many(texts(max(1, facts // max(1, others))), user_id=f"other-{other}")
    memory.drain_writes()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(pct(values, 0.5) * 1000, 2), "p95_ms": round(pct(values, 0.95) * 1000, 2),
            "mean_ms": round(statistics.fmean(values) * 1000, 2)}


def run_shape(memory: Memory, hooks: MemoryHooks, *, tool_round: bool, turns: int, warmup: int,
              user: str, rng: random.Random) -> dict[str, Any]:
    model = InstantModel(tool_round=tool_round)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = create_react_agent(model, tools=memory_tools(memory))
        hooked = create_react_agent(model, tools=memory_tools(memory), prompt=hooks.prompt,
                                    post_model_hook=hooks.post_model_hook)
    times: dict[str, list[float]] = {"plain": [], "hooks": []}
    extraction: list[float] = []
    for n in range(warmup + turns):
        subject = rng.choice(SUBJECTS)
        if n % 3 == 2:
            text = rng.choice(STATEMENTS).format(s=subject, city=rng.choice(["Lisbon", "Austin", "Oslo"]),
                                                 job=rng.choice(["nurse", "pilot", "chef"]),
                                                 drink=rng.choice(["tea", "coffee", "kefir"]))
        else:
            text = rng.choice(QUESTIONS).format(s=subject)
        config = {"configurable": {"user_id": user, "thread_id": f"bench-{n}"}}
        order = [("plain", plain), ("hooks", hooked)]
        if n % 2:
            order.reverse()
        for name, graph in order:
            started = time.perf_counter()
            graph.invoke({"messages": [HumanMessage(text)]}, config)
            elapsed = time.perf_counter() - started
            if name == "hooks":
                waited = time.perf_counter()
                hooks.flush()
                if n >= warmup:
                    extraction.append(time.perf_counter() - waited)
            if n >= warmup:
                times[name].append(elapsed)
    added = [h - p for h, p in zip(times["hooks"], times["plain"], strict=True)]
    return {
        "model_calls_per_turn": 2 if tool_round else 1,
        "plain": summary(times["plain"]),
        "hooks": summary(times["hooks"]),
        "added_per_turn": summary(added),
        "extraction_after_return": summary(extraction),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--facts", type=int, default=500, help="facts of the user under test")
    parser.add_argument("--others", type=int, default=10, help="other users (sharing as many facts again)")
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="also inject the profile (policy inject=profile)")
    parser.add_argument("--store", type=Path, default=None, help="store folder (default: a temporary one)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here too")
    args = parser.parse_args()

    rng = random.Random(7)
    folder = args.store or Path(tempfile.mkdtemp(prefix="mnemic-bench-lg-"))
    embedder = HashEmbedder() if args.embedder == "hash" else None
    try:
        results = measure(args, folder, embedder, rng)
    finally:
        if args.store is None:
            shutil.rmtree(folder, ignore_errors=True)
    report(args, results)


def measure(args: argparse.Namespace, folder: Path, embedder: Any, rng: random.Random) -> dict[str, Any]:
    with Memory(folder, embedder=embedder) as memory:
        user = "bench-user"
        if not memory.list(user_id=user, limit=1):
            started = time.perf_counter()
            seed(memory, user, args.facts, args.others, rng)
            print(f"seeded {args.facts} facts for {user} and {args.others} other users "
                  f"in {time.perf_counter() - started:.1f}s")
        memory.set_policy(mode="auto", inject="profile" if args.profile else "none")
        hooks = MemoryHooks(memory)
        results: dict[str, Any] = {
            "embedder": memory.embedder.name, "facts": args.facts, "others": args.others, "turns": args.turns,
            "profile": args.profile,
        }
        for shape, tool_round in (("direct_answer", False), ("one_tool_call", True)):
            results[shape] = run_shape(memory, hooks, tool_round=tool_round, turns=args.turns,
                                       warmup=args.warmup, user=user, rng=rng)
        # The floor under the hooks' cost: one bare recall for the same kind of message.
        bare = []
        for _ in range(args.turns):
            question = rng.choice(QUESTIONS).format(s=rng.choice(SUBJECTS))
            started = time.perf_counter()
            memory.recall(question, user_id=user, limit=hooks.recall_limit, kinds=["fact", "note"])
            bare.append(time.perf_counter() - started)
        results["recall_alone"] = summary(bare)
    return results


def report(args: argparse.Namespace, results: dict[str, Any]) -> None:
    print(f"\nLangGraph agent turn latency, {results['embedder']}, {args.facts} facts for the user, "
          f"{args.turns} turns per shape, profile={'on' if args.profile else 'off'}")
    print(f"{'shape':<16}{'plain p50':>11}{'hooks p50':>11}{'added p50':>11}{'added p95':>11}"
          f"{'added mean':>12}{'extract p50':>13}")
    for shape in ("direct_answer", "one_tool_call"):
        r = results[shape]
        print(f"{shape:<16}{r['plain']['p50_ms']:>9.1f}ms{r['hooks']['p50_ms']:>9.1f}ms"
              f"{r['added_per_turn']['p50_ms']:>9.1f}ms{r['added_per_turn']['p95_ms']:>9.1f}ms"
              f"{r['added_per_turn']['mean_ms']:>10.1f}ms{r['extraction_after_return']['p50_ms']:>11.1f}ms")
    print(f"{'recall alone':<16}{results['recall_alone']['p50_ms']:>31.1f}ms (p50 of Memory.recall, limit 5)")
    print("\nextract = the background extraction of the turn, after invoke() returned (not in 'hooks').\n"
          "Note: recall drains pending writes first, so a turn that starts before the previous turn's\n"
          "extraction has finished waits for the rest of it.")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
