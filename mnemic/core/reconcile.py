"""What a new fact does to what is already known: merge it, let it replace something, or add it.

Without an LLM the rules are conservative, because a wrong merge or a wrong invalidation hides a
true fact from every later read:

- exact duplicates (same normalised text) and near duplicates merge;
- a new fact invalidates an old one only when it carries an explicit change or negation
  ("no longer", "not anymore", "sold", "does not") and is about the same thing (similar vectors
  *and* the old fact's content words reappear in the new one), or when it gives the same subject
  a new value and says so ("The account manager is Jane Smith." → "... is now Tom Baker.");
- anything else is inserted.

Similarity thresholds depend on the embedder: MiniLM cosines and hashed-trigram cosines live on
different scales, so each has its own (`thresholds_for`). With an LLM the model decides (see
`build_reconcile_messages`), and only exact duplicates are still merged by rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .extraction import DECISIONS, content_words, format_existing, model_reason, resolve_targets
from .records import MemoryRecord


@dataclass(frozen=True)
class Thresholds:
    """Cosine levels for one embedder.

    near_duplicate: a merge, when the content words agree too; same_statement: a merge on the
    vectors alone; related: worth comparing at all (contradiction rules, candidates for the LLM).
    """

    near_duplicate: float
    same_statement: float
    related: float


def thresholds_for(embedder_name: str) -> Thresholds:
    name = embedder_name.lower()
    if "minilm" in name:
        return Thresholds(near_duplicate=0.85, same_statement=0.95, related=0.45)
    if name.startswith("mnemic/hash"):
        # Hashed trigrams score unrelated short texts around 0.2-0.4 and rewordings lower than
        # MiniLM does, so the lexical checks carry more of the decision.
        return Thresholds(near_duplicate=0.8, same_statement=0.97, related=0.25)
    return Thresholds(near_duplicate=0.88, same_statement=0.96, related=0.5)


@dataclass(frozen=True)
class Similar:
    """An existing record and its cosine similarity to the new fact."""

    record: MemoryRecord
    cosine: float


@dataclass(frozen=True)
class Decision:
    action: str  # insert | keep | update | invalidate
    targets: tuple[str, ...] = ()
    reason: str = ""
    by: str = "rules"  # rules | llm


INSERT = Decision("insert", reason="new fact")

_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|without|cannot)\b|n't\b", re.I)
_CHANGE = re.compile(
    r"\b(?:no longer|not anymore|any ?more|any longer|used to|stopped|quit|sold|gave up|gave away|"
    r"got rid of|moved (?:away|out)|left|formerly|former|divorced|broke up|retired|switched from|"
    r"no more|not \w+ but)\b|\bex-",
    re.I,
)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
# "X is Y" said again with a new value: "... is now Z", "... is Z now", "... moved to Z".
_NEW_VALUE = re.compile(
    r"\b(?:is now|are now|now is|now are|has changed to|have changed to|changed to|moved to|relocated to|"
    r"switched to)\b|\bnow[.!]?\s*$",
    re.I,
)
_ADDITIVE = re.compile(r"\b(?:also|too|as well|another|additional|second|both|in addition|besides|plus)\b", re.I)
_COPULA = re.compile(r"\b(?:is|are|was|were)\b", re.I)
_SUBJECT_END = re.compile(r"\b(?:is|are|was|were|has changed|have changed|changed|moved|relocated|switched)\b",
                          re.I)
_VALUE = re.compile(r"\b[A-Z][\w'-]*|\d+(?:[.,:]\d+)*\w*")
_NOW = re.compile(r"\bnow\b", re.I)
# Words a moved value's predicate may add: "is in Rotterdam" -> "moved to Antwerp".
_MOVE_WORDS = frozenset(content_words("in at located based"))
_WORDS = re.compile(r"[A-Za-z][\w'-]*")


# Features of a text are cached: a batch compares each text with many candidates.
@lru_cache(maxsize=8192)
def negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


@lru_cache(maxsize=8192)
def has_change_marker(text: str) -> bool:
    return bool(_CHANGE.search(text))


@lru_cache(maxsize=8192)
def numbers(text: str) -> tuple[str, ...]:
    """The numbers in order: "2 dogs and 3 cats" and "3 dogs and 2 cats" are different facts."""
    return tuple(_NUMBER.findall(text))


@lru_cache(maxsize=8192)
def proper_nouns(text: str) -> frozenset[str]:
    """Capitalised words after the first: names, places, products ("Austin", "Maristar")."""
    words = _WORDS.findall(text)
    return frozenset(w.lower().removesuffix("'s") for w in words[1:] if w[:1].isupper() and w.lower() != "i")


@lru_cache(maxsize=8192)
def _content(text: str) -> frozenset[str]:
    return frozenset(content_words(text))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


LONG_STATEMENT_WORDS = 30


def is_near_duplicate(new_text: str, old_text: str, cosine: float, th: Thresholds) -> bool:
    """The same statement in other words. Numbers, names and polarity must agree exactly: "Has 2
    kids" and "Has 3 kids", or "Works at Google" and "Works at Microsoft", are not duplicates."""
    if cosine < th.near_duplicate:
        return False
    if negated(new_text) != negated(old_text) or has_change_marker(new_text) != has_change_marker(old_text):
        return False
    if numbers(new_text) != numbers(old_text) or proper_nouns(new_text) != proper_nouns(old_text):
        return False
    if max(len(new_text.split()), len(old_text.split())) > LONG_STATEMENT_WORDS:
        # One changed word is one of hundreds in a long memory: its vector barely moves (cosine
        # 1.00 for "likes" -> "hates" in a 16,000-character note), so an edit would merge into the
        # old text and be lost. A long statement is a repeat only when it is the same text (the
        # hash check before this), never by its vector.
        return False
    if cosine >= th.same_statement:
        return True
    return _jaccard(_content(new_text), _content(old_text)) >= 0.5


def _values(predicate: str) -> frozenset[str]:
    return frozenset(v.lower().removesuffix("'s") for v in _VALUE.findall(predicate))


def replaced_value(new_text: str, old_text: str) -> bool:
    """Whether `new_text` gives `old_text`'s subject a new value and says it changed: "The account
    manager is Jane Smith." then "The account manager is now Tom Baker.", "The warehouse is in
    Rotterdam." then "The warehouse moved to Antwerp.". The subjects must be the same words, the
    old predicate nothing but its value (a name or a number), and the new one a different value;
    "The office is now also in Antwerp" adds an office and retires nothing."""
    if not _NEW_VALUE.search(new_text) or _ADDITIVE.search(new_text) or negated(new_text) or negated(old_text):
        return False
    old_split, new_split = _COPULA.search(old_text), _SUBJECT_END.search(new_text)
    if old_split is None or new_split is None:
        return False
    old_subject = _content(old_text[:old_split.start()])
    if not old_subject or old_subject != _content(_NOW.sub(" ", new_text[:new_split.start()])):
        return False
    old_predicate, new_predicate = old_text[old_split.end():], _NOW.sub(" ", new_text[new_split.end():])
    old_values, new_values = _values(old_predicate), _values(new_predicate)
    if not old_values or not new_values or not (old_values - new_values) or not (new_values - old_values):
        return False
    # Beyond its value, the old predicate says nothing the new one drops ("... and ships on Tuesdays").
    return _content(_VALUE.sub(" ", old_predicate)) <= _content(_VALUE.sub(" ", new_predicate)) | _MOVE_WORDS


def contradiction(new_text: str, old_text: str, cosine: float, th: Thresholds) -> str | None:
    """Why `new_text` makes `old_text` no longer true, or None when the rules cannot tell. The
    reason never quotes `new_text`: the retired record names its replacement (`invalidated_by`),
    and a quote would outlive the replacement's erasure inside the record it retired."""
    if cosine >= th.related and replaced_value(new_text, old_text):
        return "a new value for the same thing"
    if cosine < th.related or not (has_change_marker(new_text) or negated(new_text) or negated(old_text)):
        return None
    old_words, new_words = _content(old_text), _content(new_text)
    if not old_words or proper_nouns(old_text) - proper_nouns(new_text):
        return None
    coverage = len(old_words & new_words) / len(old_words)
    # Coverage alone would let "No longer wants a bigger boat" retire "Has a boat": the new fact
    # must be mostly about what the old one said, not merely mention it.
    if has_change_marker(new_text) and not has_change_marker(old_text) and not negated(old_text) \
            and coverage >= 0.6 and _jaccard(old_words, new_words) >= 0.4:
        return "an explicit change about the same thing"
    if negated(new_text) != negated(old_text) and _jaccard(old_words, new_words) >= 0.6:
        return "an explicit negation of the same statement"
    return None


def decide(new: MemoryRecord, pool: Sequence[Similar], th: Thresholds) -> Decision:
    """The rule-based decision for `new` against similar existing records (any order)."""
    comparable = sorted(
        # A stored record may carry the new one's id: ids derive from owner and text
        # (records.record_id_for), so that one is the statement said again.
        (s for s in pool if s.record.state != "invalid"
         and s.record.kind == new.kind and s.record.scope == new.scope),
        key=lambda s: -s.cosine,
    )
    for similar in comparable:
        if similar.record.hash == new.hash:
            return Decision("keep", (similar.record.id,), "the same statement was remembered again")
    for similar in comparable:
        old = similar.record
        if not is_near_duplicate(new.text, old.text, similar.cosine, th):
            continue
        new_words, old_words = _content(new.text), _content(old.text)
        if new_words > old_words and new.state == "valid" and old.state == "valid":
            return Decision("update", (old.id,), "a more detailed statement of the same fact")
        return Decision("keep", (old.id,), f"a near duplicate (cosine {similar.cosine:.2f})")
    if new.state != "valid":
        return INSERT  # an unconfirmed fact (from a tool or document) never retires a known one
    if not (has_change_marker(new.text) or negated(new.text) or _NEW_VALUE.search(new.text)) \
            and not any(negated(s.record.text) for s in comparable):
        return INSERT  # no change or negation on either side: nothing the rules may invalidate
    targets: list[str] = []
    reasons: list[str] = []
    for similar in comparable:
        reason = contradiction(new.text, similar.record.text, similar.cosine, th)
        if reason is not None:
            targets.append(similar.record.id)
            reasons.append(reason)
        if len(targets) == 3:
            break
    if targets:
        return Decision("invalidate", tuple(targets), reasons[0])
    return INSERT


# -- LLM reconciliation ------------------------------------------------------------------------

RECONCILE_SYSTEM_PROMPT = """You keep one user's long-term memory consistent.
You get new facts, numbered (1), (2), ..., and the user's existing facts, numbered [1], [2], ....
For every new fact decide:
  "keep" when an existing fact already says the same (targets: its number),
  "update" when it refines or changes an existing fact (targets: the numbers it replaces),
  "invalidate" when it makes existing facts no longer true (targets: their numbers),
  "insert" when it is unrelated to every existing fact (targets: []).
Never invalidate a fact the new one does not contradict. Give a short reason for every decision.
Answer with one JSON object only."""


def reconcile_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "fact": {"type": "integer"},
                        "decision": {"type": "string", "enum": list(DECISIONS)},
                        "targets": {"type": "array", "items": {"type": "integer"}},
                        "reason": {"type": "string"},
                    },
                    "required": ["fact", "decision", "targets", "reason"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["decisions"],
        "additionalProperties": False,
    }


def build_reconcile_messages(new_texts: Sequence[str], existing: Sequence[tuple[int, str]]
                             ) -> list[dict[str, str]]:
    listed = "\n".join(f"({i}) {' '.join(text.split())}" for i, text in enumerate(new_texts, start=1))
    user = f"New facts:\n{listed}\n\nExisting facts:\n{format_existing(existing)}"
    return [{"role": "system", "content": RECONCILE_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_reconcile(payload: Mapping[str, Any], *, count: int, aliases: Mapping[int, str]
                    ) -> dict[int, Decision]:
    """Decisions by new-fact index (0-based). Facts the model left out get none (rules apply).
    Raises ValueError for a malformed answer, so the call is retried."""
    items = payload.get("decisions")
    if not isinstance(items, list):
        raise ValueError("the answer must be an object with a 'decisions' list")
    decisions: dict[int, Decision] = {}
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"decisions[{position}] must be an object")
        try:
            number = int(item.get("fact"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"decisions[{position}].fact must be a new-fact number") from None
        if not 1 <= number <= count:
            raise ValueError(f"decisions[{position}].fact is {number}; new facts are numbered 1 to {count}")
        action = str(item.get("decision") or "").lower()
        if action not in DECISIONS:
            raise ValueError(f"decisions[{position}].decision must be one of {', '.join(DECISIONS)}")
        targets = resolve_targets(item.get("targets"), aliases)
        reason_text = model_reason(item.get("reason"))
        if action != "insert" and not targets:
            action = "insert"
        decisions[number - 1] = Decision(action, tuple(targets), reason_text or f"LLM decided {action}",
                                         by="llm")
    return decisions


__all__ = [
    "INSERT",
    "Decision",
    "Similar",
    "Thresholds",
    "build_reconcile_messages",
    "contradiction",
    "decide",
    "has_change_marker",
    "is_near_duplicate",
    "negated",
    "parse_reconcile",
    "proper_nouns",
    "reconcile_schema",
    "thresholds_for",
]
