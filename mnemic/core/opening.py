"""What a `Memory` is opened with, checked before anything is opened.

Every argument of `Memory(...)` is checked here, so a wrong one fails at once with a message that
names it, and leaves no lock, no directory and no namespace behind (a bad weight or text limit used
to fail only at the first recall or write, with Python's own words).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .llm import check_llm
from .policy import MemoryPolicy, coerce_policy, refuse_secrets
from .ranking import RecallWeights, check_weights
from .validation import check_max_text_chars, check_optional_str, check_path


@dataclass(frozen=True)
class OpeningArguments:
    path: Path | None
    namespace: str
    client: Any
    lexical_path: Path | None
    llm: Any
    policy: MemoryPolicy | None
    weights: RecallWeights
    max_text_chars: int


def check_opening(*, path: Any, namespace: Any, client: Any, llm: Any, policy: Any,
                  weights: RecallWeights | Mapping[str, Any] | None, lexical_path: Any,
                  max_text_chars: Any) -> OpeningArguments:
    if path is not None and client is not None:
        raise ValueError("give either path (embedded Chroma) or client (e.g. chromadb.HttpClient), not both")
    if not isinstance(namespace, str) or not namespace.strip():
        raise ValueError("namespace must be a non-empty string, e.g. the agent's name")
    checked_path = check_path(path, name="path")
    checked_lexical = check_path(lexical_path, name="lexical_path")
    if client is None and checked_lexical is not None:
        raise ValueError("lexical_path is for a Chroma server (client=...); an embedded store keeps its keyword "
                         "index in its own directory: leave lexical_path out")
    if client is not None and not callable(getattr(client, "get_or_create_collection", None)):
        raise TypeError(f"client must be a Chroma client (e.g. chromadb.HttpClient(host=...)), got "
                        f"{type(client).__name__}; for an embedded store pass path instead")
    name = namespace.strip()
    check_optional_str(name, name="namespace")
    return OpeningArguments(
        path=checked_path, namespace=name, client=client, lexical_path=checked_lexical, llm=check_llm(llm),
        policy=refuse_secrets(coerce_policy(policy)) if policy is not None else None,
        weights=check_weights(weights), max_text_chars=check_max_text_chars(max_text_chars))
