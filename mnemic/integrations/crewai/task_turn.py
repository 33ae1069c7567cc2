"""A finished CrewAI task as a turn for mnemic's write pipeline, with provenance.

After each task CrewAI calls `extract_memories("Task: …\\nAgent: …\\nExpected result: …\\nResult: …")`
(and `"Input: …\\nAgent: …\\nResult: …"` from `Agent.kickoff`, a conversation with a user). A crew
task becomes a task turn (`Memory.observe(task=...)`):

- the task is the instruction the developer wrote: its template (placeholders unfilled) and the
  expected result, shown to the extractor and never stored;
- the user's side is what this run's own kickoff inputs put into the task (the values of the
  template's placeholders), read from the run's inputs, never from the task text: CrewAI's copies
  (`kickoff_for_each`) and concurrent runs on one crew can leave another run's text in a task;
- the agent's side is the result after the last "Final Answer:" (the "Thought:" part is private
  reasoning and never stored), and the agent's LLM may extract it (`agent_llm`).

Each turn keeps agent role, task, crew and kickoff as provenance.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...core.llm import check_llm
from . import context
from .convert import label

log = logging.getLogger("mnemic.crewai")

_FINAL_ANSWER = re.compile(r"Final Answer:\s*", re.IGNORECASE)
# An agent's role may hold line breaks (YAML's folded `role: >` ends one with "\n"): a role read as
# one line missed the kickoff's shape, and the text was taken for a direct call (whose statements
# CrewAI then stores, under `explicit` too).
_TASK_BLOB = re.compile(
    r"\ATask: (?P<task>.*?)\nAgent: (?P<agent>.*?)\nExpected result: (?P<expected>.*?)\nResult: (?P<result>.*)\Z",
    re.DOTALL,
)
_KICKOFF_BLOB = re.compile(r"\AInput: (?P<input>.*?)\nAgent: (?P<agent>.*?)\nResult: (?P<result>.*)\Z", re.DOTALL)
# CrewAI's own placeholder syntax (crewai.utilities.string_utils.interpolate_only).
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-]*)}")


@dataclass(frozen=True)
class TaskTurn:
    """What `Memory.observe` is handed for one `extract_memories` call."""

    messages: list[dict[str, str]]
    provenance: dict[str, Any]
    task: str | None = None  # set for a crew task; None for a conversation (Agent.kickoff)
    agent_llm: Any = None
    after_work: bool = True  # the text CrewAI writes after a task or kickoff; False: any other text


def with_result(content: str, result: str) -> str:
    """`content` (what CrewAI hands `extract_memories` after a task) with its result replaced: the
    answer a guardrail rewrote is what the task teaches. Unchanged when `content` has no result."""
    blob = _TASK_BLOB.match(content) or _KICKOFF_BLOB.match(content)
    return content if blob is None else content[:blob.start("result")] + result


def final_answer(text: str) -> str:
    """What the model said: the text after the last "Final Answer:", never a "Thought:" line."""
    found = list(_FINAL_ANSWER.finditer(text))
    if found:
        return text[found[-1].end():].strip()
    kept = [line for line in text.splitlines() if not line.lstrip().lower().startswith("thought:")]
    return "\n".join(kept).strip()


def template_of(task: Any) -> str | None:
    """A task's description as written, before CrewAI filled in the kickoff inputs."""
    original = getattr(task, "_original_description", None)
    return original if isinstance(original, str) else getattr(task, "description", None)


def _expected_of(task: Any, given: str | None) -> str | None:
    original = getattr(task, "_original_expected_output", None)
    return original if isinstance(original, str) else given


def _inputs_used(template: str | None, description: str | None, inputs: Mapping[str, Any],
                 user_key: str) -> list[tuple[str, str]]:
    """(name, value) of this run's text inputs that the task uses: its template's placeholders,
    or, with no template, the inputs whose text the description holds."""
    names = list(dict.fromkeys(_PLACEHOLDER.findall(template or "")))
    if not names and description:
        names = [k for k, v in inputs.items() if isinstance(v, str) and v.strip() and v in description]
    return [(name, inputs[name]) for name in names
            if name != user_key and isinstance(inputs.get(name), str) and inputs[name].strip()]


def _llm_of(agent: Any) -> Any:
    value = getattr(agent, "llm", None)
    try:
        return check_llm(value)
    except (TypeError, ValueError):
        log.debug("the agent's llm (%s) cannot extract memories; the rules will", type(value).__name__)
        return None


def task_turn(content: str, *, user_key: str) -> TaskTurn:
    """The turn for what CrewAI hands `extract_memories` in the current task step."""
    step = context.current_task_step()
    task = step.task if step is not None else None
    agent = step.agent if step is not None else None
    role = getattr(agent, "role", None)
    description: str | None = None
    expected: str | None = None
    result: str | None = None
    conversation = False
    if task is not None:
        prefix = (f"Task: {task.description}\nAgent: {role}\nExpected result: {task.expected_output}\n"
                  "Result: ")
        if content.startswith(prefix):
            description, expected, result = task.description, task.expected_output, content[len(prefix):]
        else:
            # Not the step the hooks recorded (a task run where they could not see it): neither its
            # template nor its agent's LLM belongs to this text.
            task = agent = role = None
    if result is None:
        blob = _TASK_BLOB.match(content) or _KICKOFF_BLOB.match(content)
        if blob is not None:
            parts = blob.groupdict()
            description = parts.get("task") or parts.get("input")
            expected = parts.get("expected")
            result = parts["result"]
            role = role or parts.get("agent")
            conversation = "input" in parts
    kick = context.current_crew_kickoff()
    task_label = (getattr(task, "name", None) or description) if task is not None else description
    provenance = {
        "framework": "crewai",
        "agent_role": label(role),
        "task": label(task_label),
        "crew": label(kick.name) if kick is not None else None,
        "kickoff_id": kick.kickoff_id if kick is not None else None,
    }
    provenance = {k: v for k, v in provenance.items() if v}
    if result is None:
        # Not a shape CrewAI writes: keep it as something the user said, as a conversation.
        messages = [{"role": "user", "content": content}] if content.strip() else []
        return TaskTurn(messages=messages, provenance=provenance, after_work=False)
    answer = final_answer(result)
    if conversation:
        messages = [{"role": "user", "content": description or ""}, {"role": "assistant", "content": answer}]
        return TaskTurn(messages=[m for m in messages if m["content"].strip()], provenance=provenance,
                        agent_llm=_llm_of(agent))
    template = template_of(task) if task is not None else description
    instruction = template or ""
    expected_text = _expected_of(task, expected)
    if expected_text and expected_text.strip():
        instruction += f"\nExpected result: {expected_text.strip()}"
    used = _inputs_used(template, description, kick.inputs if kick is not None else {}, user_key)
    messages = [{"role": "user", "content": value} for _, value in used]
    if answer:
        messages.append({"role": "assistant", "content": answer})
    return TaskTurn(messages=messages, provenance=provenance, task=instruction.strip() or None,
                    agent_llm=_llm_of(agent))


__all__ = ["TaskTurn", "final_answer", "task_turn", "template_of", "with_result"]
