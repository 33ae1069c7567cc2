"""What a LangGraph review step reads from a node's output and writes back.

A node returns a state update (a dict, or a `Command` carrying one). The human reviews one value
of it: text as it is, a message's content, or the last message of a list (a "messages" key); a
revised or edited text goes back into the same shape, and a message keeps its id so that the
messages reducer replaces it instead of adding a second one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from langgraph.types import Command


def is_message(value: Any) -> bool:
    return hasattr(value, "content") and hasattr(value, "type") and not isinstance(value, (str, Mapping))


def _message_text(message: Any) -> str | None:
    content = message.content
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text", "") for p in content
                 if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text")]
        return "\n".join(parts)
    return None


def text_of(value: Any) -> str | None:
    """The text a reviewer reads and a model may revise: a string, a message's content, or the
    last message of a list of messages. None for anything else (it is shown as it is)."""
    if isinstance(value, str):
        return value
    if is_message(value):
        return _message_text(value)
    if isinstance(value, (list, tuple)) and value and is_message(value[-1]):
        return _message_text(value[-1])
    return None


def with_text(value: Any, text: str) -> Any:
    """`value` carrying `text` instead of its own (a message keeps its id, so a messages reducer
    replaces it rather than adding a second one)."""
    if isinstance(value, str):
        return text
    if is_message(value):
        if hasattr(value, "model_copy"):
            return value.model_copy(update={"content": text})
        return dataclasses.replace(value, content=text)
    if isinstance(value, (list, tuple)) and value and is_message(value[-1]):
        changed = [*value[:-1], with_text(value[-1], text)]
        return type(value)(changed) if isinstance(value, tuple) else changed
    return text


def update_parts(update: Any, key: str | None) -> tuple[dict[str, Any], str]:
    """The dict of state values a node returned (inside a Command too) and the key under review."""
    values = update.update if isinstance(update, Command) else update
    if not isinstance(values, Mapping):
        raise TypeError(
            f"human_feedback reviews a value the node writes to the state, but the node returned "
            f"{type(update).__name__}; return a dict such as {{'draft': text}} (or a Command with update=)"
        )
    if key is not None:
        if key not in values:
            raise KeyError(f"human_feedback(key={key!r}): the node's update has no {key!r} "
                           f"(it wrote {', '.join(map(repr, values)) or 'nothing'})")
        return dict(values), key
    if len(values) == 1:
        return dict(values), next(iter(values))
    if "messages" in values:
        return dict(values), "messages"
    raise ValueError(f"human_feedback: the node wrote {', '.join(map(repr, values))}; say which one the "
                     "human reviews with key=...")


def rebuilt(update: Any, values: dict[str, Any]) -> Any:
    return dataclasses.replace(update, update=values) if isinstance(update, Command) else values


__all__ = ["is_message", "rebuilt", "text_of", "update_parts", "with_text"]
