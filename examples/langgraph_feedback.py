"""Human feedback that learns, in a LangGraph graph: a reviewer's feedback becomes a lesson that
revises the next draft before the reviewer sees it, and a rejection withdraws it.

Offline by default: the "model" is a small scripted stand-in that applies the two lessons it
knows, and the reviewer's answers are scripted too. With a real model, the same graph runs on it:

    python examples/langgraph_feedback.py [STORE_DIR]
    MNEMIC_LLM=gpt-4o-mini python examples/langgraph_feedback.py     # any litellm model; needs its key

What happens: alice's reviewer asks for the support address at the end of every announcement;
the next draft arrives with it already added (and says which lesson added it); when a later
reviewer rejects a draft that lesson shaped, the lesson is withdrawn with the reason. bob, running
the same graph, gets none of alice's lessons. `mnemic lessons list --user alice --include-invalid
--store STORE_DIR` shows the same thing from the command line.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from mnemic import LessonPlace, LessonStore, Memory
from mnemic.flows import human_feedback, rule_lessons, unfenced

SUPPORT_LINE = "Questions? support@example.com"


def offline_model(messages: list[dict[str, str]], schema: dict[str, Any]) -> dict[str, Any]:
    """Stands in for an LLM in both calls of the review step (see mnemic.flows.feedback)."""
    prompt = messages[-1]["content"]
    if "applied" in schema["properties"]:  # pre-review: revise the output against the lessons
        lessons = [line for line in prompt.split("\n\nOutput:")[0].splitlines() if line.startswith("[")]
        output = dict(unfenced(prompt))["output"]
        applied = []
        for line in lessons:
            number, text = line[1:].split("] ", 1)
            if "support address" in text.lower() and SUPPORT_LINE not in output:
                output += f"\n{SUPPORT_LINE}"
                applied.append(int(number))
        return {"output": output, "applied": applied}
    feedback = dict(unfenced(prompt))["feedback"]
    return {"lessons": rule_lessons(feedback), "rejected": feedback.lower().startswith("no")}


class State(TypedDict, total=False):
    product: str
    draft: str
    review: dict[str, Any]


def build(memory: Memory, llm: Any) -> Any:
    @human_feedback(memory=memory, llm=llm, graph="announcements", review_key="review",
                    message="Review this announcement before it goes out.")
    def draft(state: State) -> dict[str, Any]:
        return {"draft": f"{state['product']} is now available to every customer."}

    builder = StateGraph(State)
    builder.add_node(draft)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", END)
    return builder.compile(checkpointer=InMemorySaver())


def review(graph: Any, user: str, thread: str, product: str, answer: Any) -> dict[str, Any]:
    config = {"configurable": {"user_id": user, "thread_id": thread}}
    stopped = graph.invoke({"product": product}, config)
    payload = stopped["__interrupt__"][0].value
    print(f"\n[{user} / {thread}] the reviewer sees:\n  {payload['output']!r}")
    for lesson in payload["lessons_applied"]:
        print(f"  (changed by the lesson: {lesson['text']})")
    print(f"  the reviewer answers: {answer!r}")
    state = graph.invoke(Command(resume=answer), config)
    outcome = state["review"]
    print(f"  approved={outcome['approved']}  learned={len(outcome['lessons_learned'])}  "
          f"withdrawn={len(outcome['lessons_withdrawn'])}")
    return state


def main(store: Path) -> None:
    llm: Any = os.environ.get("MNEMIC_LLM") or offline_model
    with Memory(store) as memory:
        graph = build(memory, llm)
        review(graph, "alice", "t1", "Atlas 2.0", "Looks fine. Always end with the support address.")
        review(graph, "alice", "t2", "Atlas 2.1", {"approved": True})
        review(graph, "bob", "t3", "Atlas 2.1", "Fine.")
        review(graph, "alice", "t4", "Atlas 3.0",
               {"approved": False, "feedback": "No: this one is for partners, they have their own contact."})

        print("\nalice's lessons for announcements/draft:")
        for lesson in LessonStore(memory).list(user_id="alice", place=LessonPlace("announcements", "draft"),
                                               include_invalid=True):
            why = f" (withdrawn: {lesson.invalid_reason})" if lesson.state == "invalid" else ""
            print(f"  [{lesson.state}] {lesson.text}  taught by {lesson.reviewer} in {lesson.thread}{why}")
        print(f"bob's lessons: {LessonStore(memory).list(user_id='bob')}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        folder = Path(tempfile.mkdtemp(prefix="mnemic-feedback-"))
        try:
            main(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
