"""Checks on caller input. Each error names the argument, what was wrong and what would be right,
and is raised before anything is written, so bad input never changes what is stored.

Every string that is stored must be valid Unicode without NUL characters (a lone surrogate makes
Chroma fail halfway through a write; NUL truncates text in SQLite's C layer) and fit its limit:

- text (remember, update, notes) and queries: MAX_TEXT_CHARS (16,000), or the Memory's max_text_chars
- reason (invalidate, update, delete): MAX_REASON_CHARS (2,000); source: MAX_SOURCE_CHARS (1,000)
- user_id, session_id, actor, namespace, record ids: MAX_NAME_CHARS (256)
- categories: at most MAX_CATEGORIES (32), each at most MAX_CATEGORY_CHARS (64)
- metadata: at most MAX_METADATA_KEYS (32) keys of up to 64 characters; string values up to
  MAX_METADATA_VALUE_CHARS (4,000); numbers finite, integers within 64 bits
- ttl_seconds: 0 (never) or up to MAX_TTL_SECONDS (100 years); turn: a 64-bit integer
- created_at: a datetime from EARLIEST_CREATED_AT up to (not including) LATEST_CREATED_AT, in UTC

A naive datetime (created_at, older_than) is read as UTC (see records.as_utc).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .identity import InternalUserId, reserved_prefix
from .records import KINDS, as_utc
from .safety import SecretRefusedError, secret_fields, shows_nothing

MAX_TEXT_CHARS = 16_000
MAX_REASON_CHARS = 2_000
MAX_SOURCE_CHARS = 1_000
MAX_NAME_CHARS = 256
MAX_USER_ID_CHARS = MAX_NAME_CHARS
MAX_CATEGORY_CHARS = 64
MAX_CATEGORIES = 32
MAX_METADATA_KEYS = 32
MAX_METADATA_VALUE_CHARS = 4_000
MAX_TTL_SECONDS = 100 * 365.25 * 86_400
_INT64 = 2**63
# A record's created_at is read back into date arithmetic (its age for recency, a query's time
# window stretched by weeks, the 9999-12-31 "never expires" sentinel beside it): a moment near
# either end of datetime's range (years 1..9999), once in UTC, overflowed there and left the
# record unreadable, its user unerasable. These bounds are centuries inside both ends and hold
# any moment a memory can really date from.
EARLIEST_CREATED_AT = datetime(1900, 1, 1, tzinfo=timezone.utc)
LATEST_CREATED_AT = datetime(9000, 1, 1, tzinfo=timezone.utc)
_META_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_clean(value: str, *, name: str) -> str:
    """`value` if it is text every store can keep: valid Unicode (no lone surrogate), no NUL."""
    if "\x00" in value:
        raise ValueError(f"{name} contains a NUL character (\\x00) at position {value.index(chr(0))}; remove it")
    found = None if value.isascii() else _SURROGATE.search(value)
    if found is not None:
        raise ValueError(
            f"{name} contains a lone surrogate (\\u{ord(found.group()):04x}) at position {found.start()}: "
            "it is not valid Unicode text. Decode the input properly (e.g. bytes.decode(errors='replace'))."
        )
    return value


def scrub(text: str) -> str:
    """Text from a conversation or a model made storable: lone surrogates become U+FFFD, NUL goes.
    (Caller arguments are refused instead, by check_clean: they can be fixed at the source.)"""
    return _SURROGATE.sub("\ufffd", text.replace("\x00", ""))


# What to say when a text argument is empty, by argument name (the default suits a statement).
_EMPTY_HINTS = {"query": "give a question or keywords to search for", "reason": "say why"}


def check_min_score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"min_score must be a number (0 keeps every match), got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"min_score must be a finite number, got {value!r}")
    return float(value)


def check_text(text: Any, *, name: str = "text", max_chars: int = MAX_TEXT_CHARS) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string, got {type(text).__name__}")
    check_clean(text, name=name)
    stripped = text.strip()
    if not stripped:
        raise ValueError(f"{name} is empty: {_EMPTY_HINTS.get(name, 'give the statement to remember')}")
    if len(stripped) > max_chars:
        raise ValueError(
            f"{name} is {len(stripped)} characters; the limit is {max_chars}. Store a shorter fact, "
            "or put long documents in the knowledge store, which chunks them."
        )
    return stripped


# Stripped from the ends of an id: the spaces and line ends a form or a header leaves.
ASCII_WHITESPACE = " \t\n\r\f\v"


def invisible_character(value: str) -> str | None:
    """A character that would make an id look like another: a control, format (zero-width) or
    line-separator character anywhere, or Unicode whitespace at either end ("alice\u3000")."""
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            return char
    return next((char for char in (value[:1], value[-1:]) if char.isspace()), None)


# A variation selector after a symbol picks how the symbol is drawn ("❤️" is U+2764 U+FE0F, as
# emoji keyboards type it): it shows as part of the symbol, not as nothing.
_EMOJI_PRESENTATION = frozenset("\ufe0e\ufe0f")


def blank_character(value: str) -> str | None:
    """A character of an id that shows nothing although it is no format character
    (safety/invisible.py: the combining grapheme joiner, a Hangul filler, a Khmer inherent vowel,
    the Braille blank, a variation selector that follows no symbol). Marks that show (a virama, an
    accent) are kept."""
    for position, char in enumerate(value):
        if not shows_nothing(char):
            continue
        if char in _EMOJI_PRESENTATION and position and unicodedata.category(value[position - 1]) == "So":
            continue
        return char
    return None


def check_new_user_id(user_id: Any) -> str:
    """A user id a write names (`check_user_id`), refused too when it holds a character that
    shows nothing (`blank_character`): "alice\u3164" would print like alice's id. Only new writes
    refuse it: an older mnemic stored such ids, and their owners must still read and erase."""
    owner = check_user_id(user_id)
    hidden = None if isinstance(owner, InternalUserId) else blank_character(owner)
    if hidden is not None:
        raise ValueError(
            f"user_id {owner[:60]!r} contains a character that shows nothing (U+{ord(hidden):04X}) and would "
            "make it look like another user's id; pass the id without it")
    return owner


def check_user_id(user_id: Any) -> str:
    """A caller's user id, stripped of ASCII whitespace at its ends. An id with an invisible
    character is refused, not cleaned: stripping Unicode spaces made "alice\u3000" (an account
    name another user could register) read alice's memories. Ids under a prefix mnemic reserves
    for owners it makes itself (see identity.py) are refused, unless mnemic made them (an
    InternalUserId)."""
    if isinstance(user_id, InternalUserId):
        return user_id
    if not isinstance(user_id, str):
        raise TypeError(f"user_id must be a string, got {type(user_id).__name__}")
    cleaned = user_id.strip(ASCII_WHITESPACE)
    if not cleaned:
        raise ValueError("user_id is empty: every memory belongs to one user")
    hidden = invisible_character(cleaned)
    if hidden is not None:
        raise ValueError(
            f"user_id {cleaned[:60]!r} contains an invisible character (U+{ord(hidden):04X}) that would make it "
            "look like another user's id; pass the id without it")
    if len(cleaned) > MAX_USER_ID_CHARS:
        raise ValueError(f"user_id is {len(cleaned)} characters; the limit is {MAX_USER_ID_CHARS}")
    check_clean(cleaned, name="user_id")
    prefix = reserved_prefix(cleaned)
    if prefix is not None:
        raise ValueError(
            f"user_id {cleaned[:60]!r} starts with {prefix!r}, which mnemic reserves for owners it makes "
            f"itself (anonymous sessions, store namespaces that name no user, erased records); "
            f"use a user id without that prefix")
    return cleaned


def check_items(value: Any, *, name: str, what: str, example: str) -> list[Any]:
    """A list argument as a list, whatever iterable held it. One string is one item: `kinds="fact"`
    means the kind fact, not the letters f, a, c, t that iterating the string gives. A mapping is
    refused, not iterated: that gives its keys (`remember_many({"user_id": ..., "text": ...})`
    stored the words user_id and text as facts). So are bytes (iterating gives numbers) and
    anything that is not iterable. `what` and `example` say what to pass instead."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        keys = ", ".join(repr(key)[:40] for key in list(value)[:4])
        raise TypeError(f"{name} must be {what}, got a {type(value).__name__}{f' with keys {keys}' if keys else ''}: "
                        f"a mapping is not a list (going through it gives its keys, not its values). "
                        f"Pass a list, e.g. {example}")
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}: decode it to text first "
                        f"(value.decode('utf-8')), e.g. {example}")
    if not isinstance(value, Iterable):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r:.60}; e.g. {example}")
    return list(value)


def check_kinds(kinds: Any) -> list[str]:
    """The kinds a read narrows to ([] for none given); one name is one kind."""
    if kinds is None:
        return []
    items = check_items(kinds, name="kinds", what=f"a kind ({', '.join(KINDS)}) or a list of them",
                        example="kinds=['fact'] or kinds='fact'")
    return [check_choice(kind, name="kinds", choices=KINDS) for kind in items]


def check_categories(categories: Any) -> list[str]:
    if categories is None:
        return []
    items = check_items(categories, name="categories", what="a category name or a list of them",
                        example="categories=['food', 'travel']")
    cleaned: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"categories must hold strings, got {type(item).__name__}")
        value = check_clean(item, name="a category").strip()
        if not value:
            raise ValueError("categories holds an empty string")
        if len(value) > MAX_CATEGORY_CHARS:
            raise ValueError(f"category {value[:20]!r}… is longer than {MAX_CATEGORY_CHARS} characters")
        if value not in cleaned:
            cleaned.append(value)
        if len(cleaned) > MAX_CATEGORIES:
            raise ValueError(f"categories holds more than {MAX_CATEGORIES} names, the limit; keep the ones that matter")
    return cleaned


def check_importance(importance: Any, default: float = 0.5) -> float:
    if importance is None:
        return default
    if isinstance(importance, bool) or not isinstance(importance, (int, float)):
        raise TypeError(f"importance must be a number between 0 and 1, got {type(importance).__name__}")
    if not 0.0 <= float(importance) <= 1.0:
        raise ValueError(f"importance must be between 0 and 1, got {importance}")
    return float(importance)


def check_choice(value: Any, *, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return str(value)


def check_flag(value: Any, *, name: str) -> bool:
    """A True/False switch. Any other value is refused rather than read by its truthiness:
    `include_invalid="no"` listed invalidated facts, `read_only=""` made a writable view."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return value


def check_optional_str(value: Any, *, name: str, max_chars: int = MAX_NAME_CHARS) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if len(value) > max_chars:
        raise ValueError(f"{name} is {len(value)} characters; the limit is {max_chars}")
    return check_clean(value, name=name)


def check_name(value: Any, *, name: str) -> str:
    """A short non-empty label that is stored (an actor, an author of a change): in the audit
    trail for good, so it is screened for secrets like any other stored field."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string naming who acts, got {value!r}")
    checked = check_optional_str(value.strip(), name=name)
    assert checked is not None
    found = secret_fields({name: checked})
    if found:
        raise SecretRefusedError(found, what=f"this {name}")
    return checked


def check_reason(value: Any, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    return check_text(value, name="reason", max_chars=MAX_REASON_CHARS)


def check_turn(turn: Any) -> int | None:
    if turn is None:
        return None
    if isinstance(turn, bool) or not isinstance(turn, int):
        raise TypeError(f"turn must be an integer, got {type(turn).__name__}")
    if not -_INT64 <= turn < _INT64:
        raise ValueError(f"turn {turn} does not fit in 64 bits")
    return turn


def check_metadata(metadata: Any) -> dict[str, str | int | float | bool]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
    if len(metadata) > MAX_METADATA_KEYS:
        raise ValueError(f"metadata has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}")
    cleaned: dict[str, str | int | float | bool] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not _META_KEY.match(key):
            raise ValueError(
                f"metadata key {key!r} is not allowed: use up to 64 letters, digits, _ . - starting with a letter"
            )
        if not isinstance(value, (str, int, float, bool)):
            raise TypeError(
                f"metadata[{key!r}] is {type(value).__name__}; values must be str, int, float or bool"
            )
        if isinstance(value, str):
            check_optional_str(value, name=f"metadata[{key!r}]", max_chars=MAX_METADATA_VALUE_CHARS)
        elif isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"metadata[{key!r}] is {value}; numbers must be finite")
        elif isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
            raise ValueError(f"metadata[{key!r}] is {value}, which does not fit in 64 bits")
        cleaned[key] = value
    return cleaned


def check_ttl(ttl_seconds: Any) -> float | None:
    if ttl_seconds is None:
        return None
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float)):
        raise TypeError(f"ttl_seconds must be a number of seconds, got {type(ttl_seconds).__name__}")
    if not math.isfinite(ttl_seconds) or not 0 <= ttl_seconds <= MAX_TTL_SECONDS:
        raise ValueError(
            f"ttl_seconds must be 0 (never expires) or a positive number of seconds up to "
            f"{MAX_TTL_SECONDS:.0f} (100 years), got {ttl_seconds}")
    return float(ttl_seconds) or None


M = TypeVar("M", bound=BaseModel)


def model_from_fields(model: type[M], fields: Mapping[str, Any], *, name: str) -> M:
    """`model` built from a caller's dict of its fields, failing in the caller's words: unknown
    fields listed beside the fields there are, each invalid one with pydantic's reason."""
    unknown = sorted(str(key) for key in fields if key not in model.model_fields)
    if unknown:
        raise ValueError(f"{name} has unknown field(s) {', '.join(unknown)}; the fields are "
                         f"{', '.join(model.model_fields)}")
    try:
        return model.model_validate(dict(fields))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or name}: {err['msg']}" for err in exc.errors())
        raise ValueError(f"bad {name}: {problems}") from None


def check_max_text_chars(value: Any) -> int:
    """`Memory(max_text_chars=)`: checked when the Memory is opened, not at the first write."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_text_chars must be a whole number of characters, got {type(value).__name__} "
                        f"{value!r:.60}; leave it out for the default, {MAX_TEXT_CHARS}")
    if value < 1:
        raise ValueError(f"max_text_chars={value} would refuse every statement: give a positive number of "
                         f"characters, or leave it out for the default, {MAX_TEXT_CHARS}")
    return value


def check_path(value: Any, *, name: str) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (a str or pathlib.Path), got {type(value).__name__} {value!r:.60}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name}={value!r:.60} is empty: give a path (a str or pathlib.Path)")
    return Path(text)


def check_limit(limit: Any, *, name: str = "limit", maximum: int = 1000) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"{name} must be an integer, got {type(limit).__name__}")
    if not 1 <= limit <= maximum:
        raise ValueError(f"{name} must be between 1 and {maximum}, got {limit}")
    return limit


def check_created_at(value: Any) -> datetime | None:
    """When a memory was made, in UTC (a naive datetime is read as UTC); None means now."""
    if value is None:
        return None
    if isinstance(value, str):  # as pydantic read it before this check: "2024-05-01T09:30:00Z"
        with contextlib.suppress(ValueError):
            value = datetime.fromisoformat(value.strip())
    if not isinstance(value, datetime):
        raise TypeError(f"created_at must be a datetime or an ISO 8601 string (a naive one is read as UTC), got "
                        f"{type(value).__name__} {value!r:.60}; e.g. datetime(2024, 5, 1, 9, 30, tzinfo=timezone.utc)")
    try:
        moment = as_utc(value)
    except OverflowError:
        moment = None
    if moment is None or not EARLIEST_CREATED_AT <= moment < LATEST_CREATED_AT:
        raise ValueError(
            f"created_at={value.isoformat()} is out of range: give a moment from "
            f"{EARLIEST_CREATED_AT.year} up to (not including) the year {LATEST_CREATED_AT.year}, in UTC")
    return moment


def check_older_than(value: Any) -> datetime | None:
    """A datetime (a naive one is read as UTC), or a timedelta/number of seconds meaning "older
    than this long ago"."""
    if value is None:
        return None
    now = datetime.now(timezone.utc)
    if isinstance(value, datetime):
        # Compared as given: converting a moment at the very end of the range to UTC can overflow.
        return value if value.utcoffset() is not None else value.replace(tzinfo=timezone.utc)
    try:
        if isinstance(value, timedelta):
            if value < timedelta(0):
                raise ValueError(f"older_than={value!r} is negative: it would reach every record, even "
                                 "those made just now; give how long ago, as a positive duration")
            return now - value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise OverflowError
            if value < 0:
                raise ValueError(f"older_than={value!r} is negative: it would reach every record, even "
                                 "those made just now; give how many seconds ago, as a positive number")
            return now - timedelta(seconds=float(value))
    except OverflowError:
        raise ValueError(
            f"older_than={value!r} reaches before the year 1: give a datetime, or a shorter timedelta "
            "or number of seconds") from None
    raise TypeError("older_than must be a datetime, a timedelta or a number of seconds")


_SCOPE_WHAT = "a path such as '/project/atlas' or a list of paths"


def scope_paths(scope: Any, *, name: str = "scope") -> list[str]:
    """One path or several as a list of strings (not yet normalised); a TypeError names the rest."""
    paths = check_items(scope, name=name, what=_SCOPE_WHAT, example=f"{name}=['/project/atlas']")
    if not all(isinstance(path, str) for path in paths):
        raise TypeError(f"{name} must be {_SCOPE_WHAT}, got {scope!r:.200}")
    return paths


def check_erasure_scope(scope: Any) -> None:
    """Refuse a scope that names nothing: read as the root it would erase every record in reach."""
    if scope is None:
        return
    items = check_items(scope, name="scope", what=_SCOPE_WHAT, example="scope='/project/atlas'")
    if not items or any(not isinstance(item, str) or not item.strip() for item in items):
        raise ValueError(f"scope={scope!r} names no scope: forget() would erase every record in reach. Pass "
                         "the scope to erase (a path such as '/project/atlas'; '/' for all of them)")


def check_ids(ids: Any, *, name: str = "ids") -> list[str]:
    items = check_items(ids, name=name, what="a record id or a list of record ids", example=f"{name}=[record.id]")
    cleaned = []
    for item in items:
        if not isinstance(item, str) or not item:
            raise TypeError(f"record ids are non-empty strings, got {item!r}")
        if len(item) > MAX_NAME_CHARS:
            raise ValueError(f"record id {item[:40]!r}... is {len(item)} characters; ids are at most {MAX_NAME_CHARS}")
        cleaned.append(check_clean(item, name="record id"))
    return cleaned
