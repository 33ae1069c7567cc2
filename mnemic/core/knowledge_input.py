"""What the knowledge store accepts from an operator (checked before anything is written), and the
LLM step that turns an operator's text into standalone facts."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .knowledge_identity import normalise_source, source_spellings
from .llm import complete_json
from .validation import MAX_SOURCE_CHARS, check_clean, check_items, check_name

log = logging.getLogger("mnemic")

Progress = Callable[[int, int], None]
MAX_FACT_CHARS = 2000

DISTIL_PROMPT = (
    "You turn an operator's text into knowledge an assistant will tell every user. Rewrite the "
    "text below as short, standalone facts: each must make sense on its own (name the subject, no "
    "'it' or 'this'), keep every number, name, date and condition exactly, and add nothing the "
    "text does not say. Answer with JSON only: {\"facts\": [\"...\", ...]}."
)
DISTIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
    "additionalProperties": False,
}


# -- input checks ------------------------------------------------------------------------------


def check_source(source: Any) -> str | None:
    """A source name as stored and compared (see knowledge_identity.normalise_source)."""
    if source is None:
        return None
    if not isinstance(source, str):
        raise TypeError(f"source must be a string, got {type(source).__name__}")
    return _checked_source(normalise_source(source))


def check_file_source(path_text: str) -> str:
    """A file's path as its source: checked like any source name, but kept as it is (a path
    names one file; see knowledge_identity)."""
    return _checked_source(path_text)


def _checked_source(name: str) -> str:
    if not name.strip():
        raise ValueError("source is empty: name where the knowledge comes from, or leave it out")
    if len(name) > MAX_SOURCE_CHARS:
        raise ValueError(f"source is {len(name)} characters; the limit is {MAX_SOURCE_CHARS}")
    return check_clean(name, name="source")


def check_sources(source: Any) -> frozenset[str] | None:
    if source is None:
        return None
    items = check_items(source, name="source", what="a source name or a list of them, as shown by sources()",
                        example="source=['handbook.md']")
    if not all(isinstance(s, str) and s.strip() for s in items):
        raise TypeError("source must be a source name or a list of them, as shown by sources()")
    chosen = frozenset(spelling for s in items for spelling in source_spellings(s))
    if not chosen:
        raise ValueError("source is an empty list: give at least one source, or leave it out")
    return chosen


def check_actor(actor: Any) -> str:
    if not isinstance(actor, str) or not actor.strip():
        raise ValueError("added_by/actor must be a non-empty string naming the operator")
    return check_name(actor, name="added_by/actor")


def check_progress(progress: Any) -> Progress | None:
    if progress is not None and not callable(progress):
        raise TypeError("progress must be a callable taking (done, total)")
    return progress


def check_path(path: Any) -> Path:
    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise TypeError(f"path must be a file path (str or Path), got {path!r}")
    target = Path(path).expanduser()
    if not target.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    return target


def check_chunk_id(chunk_id: Any) -> str:
    if not isinstance(chunk_id, str) or not chunk_id:
        raise TypeError(f"knowledge ids are non-empty strings, got {chunk_id!r}")
    return chunk_id


# -- LLM distillation --------------------------------------------------------------------------


def distil_with_llm(llm: Any, passage: str) -> list[str]:
    """Facts the model finds in one passage; [] when it fails (the passage is then kept as is)."""
    messages = [
        {"role": "system", "content": DISTIL_PROMPT},
        {"role": "user", "content": passage},
    ]
    try:
        answer = complete_json(llm, messages, DISTIL_SCHEMA, name="knowledge_facts")
    except Exception as exc:
        log.warning("knowledge distillation failed (%s); keeping the passage as written", exc)
        return []
    facts = answer.get("facts")
    if not isinstance(facts, list):
        log.warning("knowledge distillation returned no fact list; keeping the passage as written")
        return []
    cleaned = []
    for fact in facts:
        if isinstance(fact, str) and fact.strip() and len(fact.strip()) <= MAX_FACT_CHARS:
            cleaned.append(fact.strip())
    return cleaned
