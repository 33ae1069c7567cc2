"""A deterministic CrewAI LLM and small builders for the CrewAI tests (no network anywhere)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from crewai.llms.base_llm import BaseLLM
from pydantic import Field, PrivateAttr

Responder = Callable[[str], str]
# What mnemic adds to a structured request (core/llm.py `with_schema`): how the fake tells mnemic's
# extraction calls from the agent's own.
STRUCTURED = "that follows this JSON schema"


def prompt_text(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    return "\n".join(str(m.get("content", "")) for m in messages)


def last_message(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    return str(messages[-1].get("content", "")) if messages else ""


def final(answer: str) -> str:
    return f"Thought: I have what I need.\nFinal Answer: {answer}"


def action(tool: str, **arguments: Any) -> str:
    return f"Thought: I should use a tool.\nAction: {tool}\nAction Input: {json.dumps(arguments)}"


class ScriptedLLM(BaseLLM):
    """Answers from `answers` ({text in the current task: reply}) or a responder, and records
    every prompt it was sent, so tests can check what memory put in front of the model.

    mnemic's extraction requests (when the crew's LLM extracts memories) are answered by
    `extraction` (a reply or a function of the prompt; by default the prose `default` reply, which
    is not JSON, as a chat model would give) and recorded in `extraction_calls`, apart from the
    agent's own calls, so that scripted agent replies are never consumed by them."""

    answers: dict[str, str] = Field(default_factory=dict)
    default: str = "Noted."
    _responder: Responder | None = PrivateAttr(default=None)
    _extraction: Responder | str | None = PrivateAttr(default=None)
    _prompts: list[str] = PrivateAttr(default_factory=list)
    _calls: list[list[dict[str, str]]] = PrivateAttr(default_factory=list)
    _extraction_calls: list[list[dict[str, str]]] = PrivateAttr(default_factory=list)

    def __init__(self, answers: dict[str, str] | None = None, *, responder: Responder | None = None,
                 default: str = "Noted.", extraction: Responder | str | None = None, **data: Any) -> None:
        super().__init__(model="mnemic-scripted", answers=answers or {}, default=default, **data)
        self._responder = responder
        self._extraction = extraction

    @property
    def extraction_calls(self) -> list[list[dict[str, str]]]:
        """mnemic's extraction requests, as messages."""
        return self._extraction_calls

    @property
    def prompts(self) -> list[str]:
        return self._prompts

    @property
    def calls(self) -> list[list[dict[str, str]]]:
        """Every request as its messages ({"role", "content"}), to check where text was placed."""
        return self._calls

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> str:
        text = prompt_text(messages)
        as_messages = ([{"role": "user", "content": messages}] if isinstance(messages, str) else
                       [{"role": str(m.get("role", "")), "content": str(m.get("content", ""))} for m in messages])
        if STRUCTURED in text:
            self._extraction_calls.append(as_messages)
            if callable(self._extraction):
                return self._extraction(text)
            return self._extraction if self._extraction is not None else final(self.default)
        self._prompts.append(text)
        self._calls.append(as_messages)
        if self._responder is not None:
            return self._responder(text)
        current = text.split("Current Task:", 1)[-1]
        for key, reply in self.answers.items():
            if key in current:
                return final(reply)
        return final(self.default)

    def supports_function_calling(self) -> bool:
        return False

    def prompts_for(self, task_text: str) -> list[str]:
        return [p for p in self._prompts if f"Current Task: {task_text}" in p]


class ScriptedFeedback:
    """A human-feedback provider that replies from a list, in order."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.seen: list[Any] = []

    def request_feedback(self, context: Any, flow: Any) -> str:
        self.seen.append(context.method_output)
        return self.replies.pop(0) if self.replies else ""
