"""What a LangGraph review step reads from a node's output and writes back.

A node returns a state update (a dict, or a `Command` carrying one). The human reviews one value
of it: text as it is, a message's content, or the last message of a list (a "messages" key); a
revised or edited text goes back into the same shape, and a message keeps its id so that the
messages reducer replaces it instead of adding a second one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from numbers import Real
from typing import Any

from langchain_core.messages import convert_to_messages
from langgraph.types import Command

from .feedback import AnswerError


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


_MESSAGE_EXAMPLE = "{'role': 'assistant', 'content': '...'}"


def _shape(value: Any) -> str:
    return "text" if isinstance(value, str) else type(value).__name__


def _messages(output: Any) -> list[Any] | None:
    """`output` as LangChain messages (one message, a role/content dict, or a list of them), or None."""
    items = list(output) if isinstance(output, (list, tuple)) else [output]
    if not items or any(isinstance(item, str) for item in items):  # a bare string would become a user's message
        return None
    try:
        return list(convert_to_messages(items))
    except (NotImplementedError, ValueError, TypeError):  # LangChain's ways of saying "not a message"
        return None


def _in_place_of(reviewed: Any, message: Any) -> Any:
    # The reviewer's message takes the reviewed one's id, so a messages reducer replaces it.
    if getattr(message, "id", None) is None and getattr(reviewed, "id", None) is not None:
        return message.model_copy(update={"id": reviewed.id})
    return message


def edited(value: Any, text: str | None, output: Any, key: str) -> Any:
    """What the state key holds once the reviewer's own version `output` replaces the reviewed
    `value`; AnswerError when `output` does not fit it, so that the reviewer is asked again.

    Written unchecked, a misfit failed only after the review: the messages reducer, given 123,
    raised once LangGraph had saved the node's write as pending, and every later read or resume of
    the thread raised the same, for good. So text stays text, a message (or the last of a list of
    messages, the one reviewed) takes text or message(s) in its place, and any other value takes
    a value of its own kind.
    """
    if isinstance(value, str):
        if isinstance(output, str):
            return output
        raise AnswerError(f"'output' must be text, as the reviewed {key!r} is (or leave 'output' out to keep "
                          f"it); got {_shape(output)}")
    if text is not None:  # a message, or a list whose last message is reviewed
        if isinstance(output, str):
            return with_text(value, output)
        messages = _messages(output)
        single = is_message(value)
        if messages is None or (single and len(messages) != 1):
            what = "one message" if single else "one message or a list of messages"
            raise AnswerError(f"'output' must be text (the new content of the reviewed message in {key!r}) or "
                              f"{what} such as {_MESSAGE_EXAMPLE}; got {_shape(output)}")
        reviewed = value if single else value[-1]
        messages[0] = _in_place_of(reviewed, messages[0])
        if single:
            return messages[0]
        replaced = [*value[:-1], *messages]
        return type(value)(replaced) if isinstance(value, tuple) else replaced
    if value is None or _same_kind(value, output):
        return output
    raise AnswerError(f"'output' must be a {_shape(value)}, as the reviewed {key!r} is (or leave 'output' out "
                      f"to keep it); got {_shape(output)}")


def _same_kind(value: Any, output: Any) -> bool:
    """Whether the reviewer's `output` can stand where `value` stood (JSON's kinds: a client
    sends a list for a tuple, an int for a float)."""
    for kind in (bool, Mapping, (list, tuple)):
        if isinstance(value, kind):
            return isinstance(output, kind)
    if isinstance(value, Real):
        return isinstance(output, Real) and not isinstance(output, bool)
    return isinstance(output, type(value))


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


__all__ = ["edited", "is_message", "rebuilt", "text_of", "update_parts", "with_text"]
