"""Conversation messages as extraction sees them: (role, text), with reasoning removed.

mnemic accepts the message shapes agent frameworks use (dicts, LangChain and CrewAI message
objects, `(role, content)` pairs, or one string) and reduces each to a role and its text. A model's
private reasoning (`<think>` blocks, reasoning content parts) is dropped here, before anything
else sees the text, so it can never be stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..safety import CUT_MARGIN
from ..validation import scrub

ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
_ROLE_ALIASES = {
    "human": "user", "user": "user",
    "ai": "assistant", "assistant": "assistant", "aimessagechunk": "assistant", "model": "assistant",
    "system": "system", "developer": "system",
    "tool": "tool", "function": "tool",
}
# Keys that hold a model's private reasoning in the message formats mnemic accepts.
# Keys that hold a model's private reasoning in the message formats mnemic accepts.
_REASONING_KEYS = frozenset({"reasoning", "reasoning_content", "thinking", "thought", "thoughts"})
_REASONING_PART_TYPES = frozenset({"thinking", "reasoning", "redacted_thinking", "thought"})
_THINK_BLOCK = re.compile(
    r"<(think|thinking|reasoning|reflection|scratchpad)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE
)
MAX_MESSAGE_CHARS = 8000


@dataclass(frozen=True)
class Message:
    role: str
    content: str


def strip_reasoning(text: str) -> str:
    """`text` without <think>…</think> (and similar) blocks: reasoning is never stored."""
    return _THINK_BLOCK.sub(" ", text).strip()


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        if str(content.get("type", "")).lower() in _REASONING_PART_TYPES:
            return ""
        text = content.get("text", content.get("content", ""))
        return text if isinstance(text, str) else ""
    if isinstance(content, (list, tuple)):
        return "\n".join(part for part in (_content_text(item) for item in content) if part)
    return ""


def normalise_messages(messages: Any, *, name: str = "messages") -> list[Message]:
    """Messages as (role, content) with reasoning removed.

    Accepts dicts `{"role", "content"}`, objects with `.type`/`.role` and `.content` (LangChain and
    CrewAI messages), `(role, content)` pairs, or one string (a user message).
    """
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping) or not isinstance(messages, Iterable):
        raise TypeError(
            f"{name} must be a list of messages such as [{{'role': 'user', 'content': '...'}}], "
            f"got {type(messages).__name__}"
        )
    result: list[Message] = []
    for position, item in enumerate(messages):
        if isinstance(item, Mapping):
            role_value = item.get("role", item.get("type"))
            content = item.get("content")
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            role_value, content = item
        elif hasattr(item, "content") and (hasattr(item, "type") or hasattr(item, "role")):
            role_value = getattr(item, "role", None) or getattr(item, "type", None)
            content = item.content
        else:
            raise TypeError(
                f"{name}[{position}] is {type(item).__name__}; each message must be a dict with 'role' "
                "and 'content', an object with .type and .content, or a (role, content) pair"
            )
        role = _ROLE_ALIASES.get(str(role_value).lower()) if role_value is not None else None
        if role is None:
            raise ValueError(
                f"{name}[{position}] has role {role_value!r}; use one of {', '.join(ROLES)} "
                "(LangChain's human/ai/tool are accepted too)"
            )
        # A conversation is taken as it comes: text no store can keep is repaired, not refused.
        text = scrub(strip_reasoning(_content_text(content)))
        if text:
            # Cut to the limit only once redacted (Conversations._redacted): cut here, a key
            # straddling the limit would leave a prefix no rule knows.
            result.append(Message(role=role, content=text[:MAX_MESSAGE_CHARS + CUT_MARGIN]))
    return result


__all__ = [
    "MAX_MESSAGE_CHARS",
    "ROLES",
    "Message",
    "normalise_messages",
    "strip_reasoning",
]
