"""Screening every free-text field of a write, not only its text: metadata keys and values,
source, session id, categories, scope, note data. A secret in any of them is stored (and served)
as surely as one in the text.

Structured values are read the way a person reads them: `{"password": "hunter2"}` is screened as
"password: hunter2", since the key is what says the value is a credential. So is a value whose
ancestor key says so (`{"secret": {"value": X}}` reads as "secret.value: X", unless a key between
says what the value describes: `{"secret": {"region": ...}}`), and the value of a name/value entry
under the name it holds (`{"name": "DB_PASSWORD", "value": X}` reads as "DB_PASSWORD: X"). `secret_fields` names
the fields holding one (for writes that refuse); `redact_data` returns the data with each secret
replaced (for records that must be kept, such as a run's inputs and outputs).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from .detector import REDACTED, find_secrets, redact
from .hits import SecretHit, merge
from .names import Strength, name_strength
from .structure import check_nesting, digit_groups, entry_name, names_of


class SecretRefusedError(ValueError):
    """A write refused because a field holds what looks like a secret. The message names the
    fields and the kinds of secret, never the text."""

    def __init__(self, fields: Mapping[str, list[str]], *, what: str = "this write") -> None:
        self.fields = {name: sorted(set(kinds)) for name, kinds in fields.items()}
        listed = "; ".join(f"{name} ({', '.join(kinds)})" for name, kinds in self.fields.items())
        super().__init__(
            f"mnemic refused {what}: {listed} holds what looks like a secret, and memory never stores "
            "secrets. Nothing was written. Remove the credential (store where to find it, not the "
            "credential itself) and try again."
        )


def _lines(value: Any, names: tuple[str, ...] = (), parent: str | None = None, *,
           identifier: bool = False) -> Iterator[tuple[str, bool]]:
    """The texts a value shows a reader: each string, each key, and "name: value" for each name the
    value is read under (see `structure.names_of`); each with whether it is an id (one word under a key that
    names an id, or in an identifier field)."""
    if value is None:
        return
    if isinstance(value, Mapping):
        entry = entry_name(value)
        for inner_key, inner in value.items():
            name = str(inner_key)
            yield name, True
            inner_names, below = names_of(name, parent, entry)
            yield from _lines(inner, inner_names, below, identifier=identifier or _names_an_id(name))
        return
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _lines(item, names, parent, identifier=identifier)
        if (groups := digit_groups(value)) is not None:  # ["4539", "1488", "0343", "6467"]: one card
            yield groups, False
            for name in names:
                yield f"{name}: {groups}", False
        return
    if isinstance(value, bool):
        return
    text = str(value)
    is_id = identifier and len(text.split()) == 1
    yield text, is_id
    for name in names:
        yield f"{name}: {text}", is_id


_ID_WORDS = frozenset({"id", "ids", "uid", "uuid", "guid", "ref", "reference", "slug", "handle", "number", "no",
                       "sha", "hash", "digest", "etag", "checksum", "fingerprint", "thread", "run", "trace", "span"})


def _names_an_id(name: str) -> bool:
    """`user_id`, `threadId`, `order-ref`: a key whose value is an identifier (unless the name says
    credential, as `session_token` does)."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)
    return bool(words) and words[-1].lower() in _ID_WORDS and name_strength(name) is Strength.NONE


# Identifiers (a session id, a thread id, an order ref) are often random strings by design: the
# context-free randomness rule does not apply to them; every named and shaped rule does.
_NOT_FOR_IDENTIFIERS = frozenset({"high_entropy_token"})


def secret_fields(fields: Mapping[str, Any], *, identifiers: Collection[str] = ()) -> dict[str, list[str]]:
    """For each named field holding a secret, the kinds found. Empty when every field is clean.
    Values may be strings, numbers, lists, or mappings (their keys are screened too). Fields named
    in `identifiers`, and values under keys that name an id (`user_id`, `orderRef`), are ids: one
    random-looking word there is an id, not a secret (a sentence is no id)."""
    found: dict[str, list[str]] = {}
    for name, value in fields.items():
        check_nesting(value, what=f"the value of {name!r}")
        kinds = [hit.kind
                 for line, is_id in _lines(value, identifier=name in identifiers)
                 for hit in find_secrets(line)
                 if not (is_id and hit.kind in _NOT_FOR_IDENTIFIERS)]
        if kinds:
            found[name] = sorted(set(kinds))  # one secret shown twice ("k: v" and "v") counts once
    return found


def _hits_in(text: str, names: tuple[str, ...], identifier: bool) -> list[SecretHit]:
    """The secrets in `text`, read alone and as "name: text" for each name it is read under (the
    part of a hit that falls on the value, so `password: hunter2` redacts "hunter2" and leaves the key)."""
    found = find_secrets(text)
    for name in names:
        prefix = len(name) + 2
        found += [SecretHit(hit.kind, max(hit.start - prefix, 0), hit.end - prefix)
                  for hit in find_secrets(f"{name}: {text}") if hit.end > prefix]
    is_id = identifier and len(text.split()) == 1
    return merge([hit for hit in found if not (is_id and hit.kind in _NOT_FOR_IDENTIFIERS)])


def _redacted(value: Any, names: tuple[str, ...], parent: str | None, identifier: bool, kinds: list[str],
              verbatim: Collection[str] = ()) -> Any:
    if isinstance(value, Mapping):
        kept: dict[Any, Any] = {}
        entry = entry_name(value)
        for inner_key, inner in value.items():
            if inner_key in verbatim:
                kept[inner_key] = inner
                continue
            name = str(inner_key)
            new_key = inner_key
            if isinstance(inner_key, str):
                key_hits = _hits_in(inner_key, (), True)
                if key_hits:
                    kinds.extend(hit.kind for hit in key_hits)
                    new_key = base = redact(inner_key, key_hits)[0]
                    count = 1
                    while new_key in kept or new_key in value:  # two redacted keys must not collide
                        count += 1
                        new_key = f"{base} ({count})"
            inner_names, below = names_of(name, parent, entry)
            kept[new_key] = _redacted(inner, inner_names, below, identifier or _names_an_id(name), kinds)
        return kept
    if isinstance(value, (list, tuple, set, frozenset)):
        groups = digit_groups(value)
        if groups is not None and (hits := _hits_in(groups, names, False)):
            kinds.extend(hit.kind for hit in hits)
            return [REDACTED] * len(value)  # the groups of one card: each is a part of it
        return [_redacted(item, names, parent, identifier, kinds) for item in value]
    if value is None or isinstance(value, bool):
        return value
    text = value if isinstance(value, str) else str(value)
    hits = _hits_in(text, names, identifier)
    if not hits:
        return value
    kinds.extend(hit.kind for hit in hits)
    return redact(text, hits)[0] if isinstance(value, str) else REDACTED


def redact_data(value: Any, *, verbatim: Collection[str] = ()) -> tuple[Any, list[str]]:
    """`value` (JSON-like data: mappings, sequences, strings, numbers) with every secret replaced
    by `REDACTED`, read as `secret_fields` reads a write: a value under a key that says password
    is one, keys holding a secret are redacted too, and a number that is a secret becomes the
    marker. Returns the data (mappings as dicts, sequences as lists) and the kind of each secret
    replaced; redacting redacted data finds nothing more.

    `verbatim` names top-level keys of a mapping whose values are kept as they are: identifiers
    a program computed (a task's key is a hash, and `task_key: <hex>` reads as a credential), never
    text from a user or a model."""
    check_nesting(value, what="this data")
    kinds: list[str] = []
    return _redacted(value, (), None, False, kinds, verbatim), kinds


__all__ = ["SecretRefusedError", "redact_data", "secret_fields"]
