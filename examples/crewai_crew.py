"""A CrewAI crew that remembers each customer, with mnemic as its memory.

Two agents, two tasks: an intake specialist reads the customer's message, a planner recommends a
trip. After the first task mnemic distils facts about the customer (with provenance: agent, task,
crew, kickoff); before the second it recalls them. The same crew object then serves a second
customer, who sees none of the first one's facts. Knowledge shared by every customer (the refund
policy) goes into mnemic's knowledge store through CrewAI's knowledge sources.

Offline by default: a deterministic model stands in for the LLM and the embeddings are computed
on this machine, so no key and no network are needed. To use a real model, name it (a litellm
model string) and give its key as usual:

    python examples/crewai_crew.py [STORE_DIR]
    MNEMIC_CREWAI_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=... python examples/crewai_crew.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# CrewAI phones home for telemetry and tracing unless told not to (and then waits on DNS offline).
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from crewai import LLM, Agent, Crew, Task
from crewai.knowledge.source.string_knowledge_source import StringKnowledgeSource
from crewai.llms.base_llm import BaseLLM

from mnemic import HashEmbedder, Memory, WeightsNotFoundError
from mnemic.integrations.crewai import CrewMemory, SearchKnowledge, use_mnemic_knowledge

STORE = Path(sys.argv[1] if len(sys.argv) > 1 else ".mnemic-crewai-demo")
MODEL = os.environ.get("MNEMIC_CREWAI_MODEL", "").strip()

INTAKE = "Read the customer's message and write down what matters about them."
PLAN = "Recommend a weekend trip for the customer."
CUSTOMERS = {
    "alice": "I live in Lisbon. I prefer train travel and I am vegetarian. I work as a nurse.",
    "bob": "I live in Oslo. I prefer hiking trips and I travel with my dog.",
}


class OfflineLLM(BaseLLM):
    """Deterministic stand-in for a model: acknowledges the intake task and recommends from the
    memories CrewAI put in the prompt for the planning task."""

    def __init__(self, **data: Any) -> None:
        super().__init__(model="offline-demo", **data)

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> str:
        text = messages if isinstance(messages, str) else "\n".join(str(m.get("content", "")) for m in messages)
        if "Current Task:" not in text:
            return "refund policy"  # CrewAI asks for a knowledge search query
        task = text.split("Current Task:", 1)[1]
        if task.lstrip().startswith(INTAKE):
            return "Thought: I note the facts.\nFinal Answer: Noted, thank you."
        remembered = [line[2:].split(" (remembered", 1)[0] for line in task.splitlines() if line.startswith("- ")]
        basis = "; ".join(remembered) or "nothing remembered yet"
        return f"Thought: I use what I know.\nFinal Answer: A weekend trip chosen from what I know: {basis}."

    def supports_function_calling(self) -> bool:
        return False


def open_store() -> Memory:
    try:
        return Memory(STORE)
    except WeightsNotFoundError:
        print("(the MiniLM weights are not fetched yet - `mnemic models fetch`; using the hash embedder)")
        return Memory(STORE.with_name(STORE.name + "-hash"), embedder=HashEmbedder())


def main() -> None:
    llm: BaseLLM = LLM(model=MODEL) if MODEL else OfflineLLM()
    print(f"model: {MODEL or 'offline deterministic stand-in'}; store: {STORE}")
    with open_store() as memory:
        memory.set_policy(mode="auto", knowledge=True)
        crew_memory = CrewMemory(memory)  # the user comes with each kickoff
        with use_mnemic_knowledge(memory):
            intake = Agent(role="Intake Specialist", goal="Understand the customer", backstory="A careful listener.",
                           llm=llm)
            planner = Agent(role="Travel Planner", goal="Plan trips customers love",
                            backstory="Knows every train line in Europe.", llm=llm, tools=[SearchKnowledge()])
            crew = Crew(
                name="travel-desk",
                agents=[intake, planner],
                tasks=[
                    Task(description=INTAKE + "\n\n{message}", expected_output="Notes.",
                         agent=intake),
                    # No task context: what the planner knows about the customer comes from memory.
                    Task(description=PLAN, expected_output="One recommendation.", agent=planner, context=[]),
                ],
                memory=crew_memory,
                knowledge_sources=[StringKnowledgeSource(
                    content="Refunds for cancelled trips are paid within 5 business days.")],
            )
            for user, message in CUSTOMERS.items():
                result = crew.kickoff(inputs={"user_id": user, "message": message})
                print(f"\n== {user} ==\n{result.raw}")
                for record in memory.list(user_id=user):
                    where = ", ".join(f"{k}={v}" for k, v in sorted(record.metadata.items())
                                      if k in ("agent_role", "crew", "kickoff_id"))
                    print(f"  remembered: {record.text}  [{record.author}; {where}]")
        print("\nknowledge sources:", memory.knowledge.sources())


if __name__ == "__main__":
    main()
