"""What names a value in structured data, beyond its own key: the name its entry holds
(`{"name": "DB_PASSWORD", "value": X}`: Kubernetes env, AWS tags and parameters, HAR headers) and
its nearest ancestor key naming a credential (`{"secret": {"value": X}}` reads as "secret.value"),
unless a key between says what the value describes (`{"secret": {"region": ...}}`).

Shared by the screening of structured fields (`fields`) and by the detector, which reads JSON written
in a text as the data it holds: `{"secret": {"value": X}}` written out is the same secret.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .names import Strength, name_strength, pair_name, pair_slot

# Deeper than any data an agent keeps: every reader of structured data (this screen, JSON, the
# codecs) walks it recursively, and past Python's recursion limit one of them fails mid-write.
MAX_NESTING = 100


class NestedTooDeeplyError(ValueError):
    """Structured data nested past MAX_NESTING levels (refused before any of it is written)."""


def nesting(value: Any, *, stop: int = MAX_NESTING + 1) -> int:
    """How many levels of mappings, lists, tuples and sets `value` has, counted without recursion
    up to `stop`. A container met twice on one level is walked once: data that holds itself
    (`d["a"] = d; d["b"] = d`) then costs one walk per level, and reaches `stop`."""
    deepest, level = 0, [value]
    while level and deepest < stop:
        containers = list({id(v): v for v in level if isinstance(v, (Mapping, list, tuple, set, frozenset))}.values())
        if not containers:
            break
        deepest += 1
        level = [inner for v in containers for inner in (v.values() if isinstance(v, Mapping) else v)]
    return deepest


def check_nesting(value: Any, *, what: str) -> None:
    """Refuse data nested past MAX_NESTING levels, naming it and the way out."""
    if nesting(value) > MAX_NESTING:
        raise NestedTooDeeplyError(
            f"{what} is nested more than {MAX_NESTING} levels deep, or holds itself; mnemic keeps structured data "
            "up to that depth. Flatten it, or keep the deep part as one string.")


def entry_name(mapping: Mapping[Any, Any]) -> str | None:
    """The credential a name/value entry names (`{"name": "DB_PASSWORD", "value": ...}`), if any."""
    for key, inner in mapping.items():
        if isinstance(key, str) and isinstance(inner, str) and pair_slot(key) == "name":
            found = pair_name(inner)
            if found is not None:
                return found
    return None


def names_of(key: str, parent: str | None, entry: str | None) -> tuple[tuple[str, ...], str | None]:
    """The names a value under `key` is read under, and the credential name its children inherit.
    `parent` is the nearest ancestor key naming a credential, `entry` the name its entry holds."""
    names = [key]
    if entry is not None and pair_slot(key) == "value":
        names.append(entry)
    own = name_strength(key) is not Strength.NONE
    below = as_name(key) if own else None
    if not own and parent is not None:
        joined = f"{parent}.{as_name(key)}"
        if name_strength(joined) is not Strength.NONE:  # "secret.value", not "secret.region"
            names.append(joined)
            below = parent
    return tuple(names), below


def as_name(key: str) -> str:
    """`key` as one name the assignment rules read ("DB Password" -> "DB_Password")."""
    return re.sub(r"[^\w.\-]+", "_", key).strip("_")[-60:] or "_"


def named_values(value: Any, names: tuple[str, ...] = (), parent: str | None = None) -> Iterator[tuple[str, str]]:
    """(name, value) for each scalar of `value` and each name other than its own key that reads it:
    the rules already read "key: value" as written, these are what they cannot see."""
    if isinstance(value, Mapping):
        entry = entry_name(value)
        for key, inner in value.items():
            inner_names, below = names_of(str(key), parent, entry)
            yield from named_values(inner, inner_names, below)
    elif isinstance(value, list):
        for item in value:
            yield from named_values(item, names, parent)
    elif value is not None and not isinstance(value, bool):
        yield from ((name, str(value)) for name in names[1:])


def digit_groups(items: Any) -> str | None:
    """A list of short all-digit items (`["4539", "1488", "0343", "6467"]`) as the one number it
    may spell, its items joined by commas the way the card rule reads printed groups; None for
    any other list. Each item alone is too short to be anything."""
    if not isinstance(items, (list, tuple)) or not 2 <= len(items) <= 19:
        return None
    written = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            return None
        text = str(item)
        if not (1 <= len(text) <= 8 and text.isascii() and text.isdigit()):
            return None
        written.append(text)
    return ",".join(written) if 13 <= sum(map(len, written)) <= 19 * 2 else None


_DECODER = json.JSONDecoder()
_OPENING = re.compile(r"[{\[](?=\s*[\"{\[])")
_MAX_ATTEMPTS = 32


def json_blocks(text: str) -> Iterator[tuple[int, int, Any]]:
    """(start, end, data) for each JSON object or array written in `text`, alone or inside prose
    ("my config: {...}", a file's chunk). An opening brace not followed by a quote or another
    bracket is no JSON object worth reading; a bounded number of attempts keeps braces in code cheap."""
    attempts = 0
    position = 0
    while attempts < _MAX_ATTEMPTS and (opening := _OPENING.search(text, position)) is not None:
        attempts += 1
        try:
            data, end = _DECODER.raw_decode(text, opening.start())
        except (ValueError, RecursionError):  # nested past Python's limit: read as text only
            position = opening.start() + 1
            continue
        if isinstance(data, (Mapping, list)) and nesting(data) <= MAX_NESTING:  # deeper: read as text
            yield opening.start(), end, data
        position = end


def written_spans(text: str, start: int, end: int, value: str) -> list[tuple[int, int]]:
    """Where `value` is written in the JSON at text[start:end] (as JSON escapes it, either way
    non-ASCII is written); the whole block when it cannot be found, so that a secret is never kept."""
    spans: list[tuple[int, int]] = []
    for form in {json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}:
        if form:
            spans += [(m.start(), m.end()) for m in re.compile(re.escape(form)).finditer(text, start, end)]
    return spans or [(start, end)]


__all__ = ["MAX_NESTING", "NestedTooDeeplyError", "as_name", "check_nesting", "digit_groups", "entry_name",
           "json_blocks", "named_values", "names_of", "nesting", "written_spans"]
