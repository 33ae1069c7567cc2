"""A finished CrewAI task as a conversation turn for mnemic's write pipeline, with provenance.

After each task CrewAI calls `extract_memories("Task: …\\nAgent: …\\nExpected result: …\\nResult: …")`
(and `"Input: …\\nAgent: …\\nResult: …"` from `Agent.kickoff`). The task description is the user's side
of the turn and the final answer the assistant's. CrewAI's result text is the model's whole reply;
only what follows the last "Final Answer:" was said: the "Thought:" part is private reasoning and
never stored. Each turn keeps agent role, task, crew and kickoff as provenance.
"""

from __future__ import annotations

import re
from typing import Any

from . import context
from .convert import label

_FINAL_ANSWER = re.compile(r"Final Answer:\s*", re.IGNORECASE)
_TASK_BLOB = re.compile(
    r"\ATask: (?P<task>.*?)\nAgent: (?P<agent>[^\n]*)\nExpected result: (?P<expected>.*?)\nResult: (?P<result>.*)\Z",
    re.DOTALL,
)
_KICKOFF_BLOB = re.compile(r"\AInput: (?P<input>.*?)\nAgent: (?P<agent>[^\n]*)\nResult: (?P<result>.*)\Z", re.DOTALL)


def final_answer(text: str) -> str:
    """What the model said: the text after the last "Final Answer:", never a "Thought:" line."""
    found = list(_FINAL_ANSWER.finditer(text))
    if found:
        return text[found[-1].end():].strip()
    kept = [line for line in text.splitlines() if not line.lstrip().lower().startswith("thought:")]
    return "\n".join(kept).strip()


def task_turn(content: str) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """(messages, provenance) for what CrewAI hands `extract_memories` in the current task step."""
    step = context.current_task_step()
    task = step.task if step is not None else None
    agent = step.agent if step is not None else None
    role = getattr(agent, "role", None)
    description: str | None = None
    result: str | None = None
    if task is not None:
        prefix = (f"Task: {task.description}\nAgent: {role}\nExpected result: {task.expected_output}\n"
                  "Result: ")
        if content.startswith(prefix):
            description, result = task.description, content[len(prefix):]
    if result is None:
        blob = _TASK_BLOB.match(content) or _KICKOFF_BLOB.match(content)
        if blob is not None:
            parts = blob.groupdict()
            description = parts.get("task") or parts.get("input")
            result = parts["result"]
            role = role or parts.get("agent")
    messages: list[dict[str, str]] = []
    if result is None:
        if content.strip():
            messages.append({"role": "user", "content": content})
    else:
        if description and description.strip():
            messages.append({"role": "user", "content": description})
        answer = final_answer(result)
        if answer:
            messages.append({"role": "assistant", "content": answer})
    kick = context.current_crew_kickoff()
    task_label = (getattr(task, "name", None) or description) if task is not None else description
    provenance = {
        "framework": "crewai",
        "agent_role": label(role),
        "task": label(task_label),
        "crew": label(kick.name) if kick is not None else None,
        "kickoff_id": kick.kickoff_id if kick is not None else None,
    }
    return messages, {k: v for k, v in provenance.items() if v}


__all__ = ["final_answer", "task_turn"]
