"""The one module that talks to litellm, so provider quirks and the heavy import stay in one place.

litellm is imported lazily: importing mnemic must stay fast and must work offline.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal


def embed_texts(model: str, texts: list[str], **kwargs: Any) -> list[list[float]]:
    """Embed `texts` with a litellm embedding model string, returning one vector per text, in order."""
    import litellm

    response = litellm.embedding(model=model, input=texts, **kwargs)
    data = response["data"] if isinstance(response, dict) else response.data
    items: list[tuple[int, list[float]]] = []
    for position, item in enumerate(data):
        if isinstance(item, dict):
            index, vector = item.get("index", position), item["embedding"]
        else:
            index, vector = getattr(item, "index", position), item.embedding
        items.append((int(index if index is not None else position), list(vector)))
    # Providers may answer out of order; `index` says which input each vector belongs to.
    items.sort(key=lambda pair: pair[0])
    return [vector for _, vector in items]


class LLMOutputError(ValueError):
    """The model answered, but not with the JSON object that was asked for."""


_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*(.*?)\s*```\s*$", re.DOTALL)


def complete_json(
    llm: Any,
    messages: list[dict[str, str]],
    schema: dict[str, Any],
    *,
    name: str = "mnemic_output",
    **kwargs: Any,
) -> dict[str, Any]:
    """Ask `llm` for a JSON object that follows `schema` and return it parsed.

    `llm` is any of the kinds `check_llm` accepts: a litellm model string (called with a strict
    JSON-schema `response_format`), a LangChain chat model (`.invoke(messages)`), a CrewAI LLM
    (`.call(messages)`), or a callable `(messages, schema) -> str | dict`. Framework models cannot
    be handed a response format per call, so they get the schema in the system message. Raises
    LLMOutputError when the answer is not a JSON object; whatever the model or provider raises
    passes through.
    """
    kind = llm_kind(llm)
    if kind == "litellm":
        import litellm

        response = litellm.completion(
            model=llm,
            messages=messages,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            },
            **kwargs,
        )
        choice = response["choices"][0] if isinstance(response, dict) else response.choices[0]
        message = choice["message"] if isinstance(choice, dict) else choice.message
        # Only the answer is read: a reasoning model's `reasoning_content` is never looked at.
        content = message.get("content") if isinstance(message, dict) else message.content
    elif kind == "chat_model":
        content = answer_text(llm.invoke(with_schema(messages, schema)))
    elif kind == "crewai":
        content = answer_text(llm.call(with_schema(messages, schema)))
    else:
        content = llm(messages, schema)
    return parse_json_object(content)


LLMKind = Literal["litellm", "chat_model", "crewai", "callable"]


def llm_kind(llm: Any) -> LLMKind:
    """Which kind of LLM `llm` is, by duck typing (core imports no agent framework):

    - "litellm": a model string such as "gpt-4o-mini";
    - "chat_model": a LangChain chat model or any Runnable (`.invoke(messages)` → message or str);
    - "crewai": a CrewAI `BaseLLM`/`LLM` (`.call(messages)` → str);
    - "callable": any other callable `(messages, schema) -> str | dict`.
    """
    if isinstance(llm, str):
        return "litellm"
    if callable(getattr(llm, "invoke", None)) and not isinstance(llm, type):
        return "chat_model"
    if callable(getattr(llm, "call", None)) and not callable(llm) and not isinstance(llm, type):
        return "crewai"
    if callable(llm):
        return "callable"
    raise TypeError(f"llm must be {_KINDS}, got {type(llm).__name__}")


_KINDS = ("a litellm model string (e.g. 'gpt-4o-mini'), a LangChain chat model, a CrewAI LLM, or a "
          "callable (messages, schema) -> str | dict")


def with_schema(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """`messages` with the JSON schema spelled out in the system message, for models that cannot
    be given a response format per call."""
    rule = ("Answer with one JSON object, and nothing else, that follows this JSON schema:\n"
            + json.dumps(schema, separators=(",", ":")))
    if messages and messages[0].get("role") == "system":
        return [{"role": "system", "content": f"{messages[0]['content']}\n\n{rule}"}, *messages[1:]]
    return [{"role": "system", "content": rule}, *messages]


def answer_text(answer: Any) -> Any:
    """The text of a framework model's answer: a string as it is, a message's `content` (text
    parts only: a reasoning part is never read), a dict as it is (already structured)."""
    if isinstance(answer, (str, dict)):
        return answer
    content = getattr(answer, "content", answer)
    if isinstance(content, list):
        parts = [part if isinstance(part, str) else part.get("text", "") for part in content
                 if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")]
        return "".join(parts)
    return content


def parse_json_object(content: Any) -> dict[str, Any]:
    """The JSON object in a model's answer, tolerating code fences and <think> blocks around it."""
    if isinstance(content, dict):
        return content
    if not isinstance(content, str):
        raise LLMOutputError(f"expected a JSON object as text, got {type(content).__name__}")
    text = _THINK_BLOCK.sub("", content).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise LLMOutputError(f"the answer is not JSON ({exc.msg} at position {exc.pos})") from None
        try:
            value = json.loads(text[start:end + 1])
        except json.JSONDecodeError as inner:
            raise LLMOutputError(f"the answer is not JSON ({inner.msg} at position {inner.pos})") from None
    if not isinstance(value, dict):
        raise LLMOutputError(f"the answer is JSON but not an object (got {type(value).__name__})")
    return value


def check_llm(llm: Any) -> Any:
    """`llm` as given to Memory (or per call), checked: None, or one of the kinds `llm_kind` names."""
    if llm is None:
        return None
    if isinstance(llm, str):
        if not llm.strip():
            raise ValueError("llm is empty: give a litellm model name such as 'gpt-4o-mini', or None for no LLM")
        return llm.strip()
    try:
        llm_kind(llm)
    except TypeError:
        raise TypeError(f"llm must be None, {_KINDS}, got {type(llm).__name__}") from None
    return llm
