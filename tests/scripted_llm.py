"""A scripted stand-in for an LLM: a plain callable `(messages, schema) -> str | dict` that answers
from a script (strings, dicts, exceptions, or functions of the prompt) and records every call.
Nothing here touches the network."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any

Answer = str | dict[str, Any] | BaseException | Callable[[list[dict[str, str]]], Any]


def fact(text: str, *, topic: str = "key_details", author: str = "user", from_tool: bool = False,
         decision: str = "insert", targets: list[int] | None = None, reason: str = "") -> dict[str, Any]:
    return {"text": text, "topic": topic, "author": author, "from_tool": from_tool, "decision": decision,
            "targets": targets or [], "reason": reason}


def facts_json(*items: dict[str, Any]) -> str:
    return json.dumps({"facts": list(items)})


class ScriptedLLM:
    """Answers in order; the last answer repeats when the script runs out (or `default`)."""

    def __init__(self, *answers: Answer, default: Answer | None = None, delay: float = 0.0) -> None:
        self.answers = list(answers)
        self.default = default
        self.delay = delay
        self.calls: list[tuple[list[dict[str, str]], dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> Any:
        with self._lock:
            self.calls.append((messages, schema))
            if self.answers:
                answer = self.answers.pop(0)
            elif self.default is not None:
                answer = self.default
            else:
                answer = facts_json()
        if self.delay:
            time.sleep(self.delay)
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer(messages)
        return answer

    @property
    def prompts(self) -> list[str]:
        return ["\n".join(m["content"] for m in messages) for messages, _ in self.calls]


def existing_aliases(messages: list[dict[str, str]]) -> dict[str, int]:
    """The existing facts a prompt showed, text → alias."""
    found = {}
    for line in messages[-1]["content"].splitlines():
        match = re.match(r"^\[(\d+)\] (.+)$", line)
        if match:
            found[match.group(2)] = int(match.group(1))
    return found
