"""Find every secret in a text, and redact them.

Each family of rules lives in its own module; this one runs them behind cheap gates (a substring,
a count of digits, a long word) so that an ordinary sentence costs a few microseconds: the screen
runs on every write and on every observed message. Detection is biased towards refusing: a false
positive costs one fact, a false negative stores a credential.
"""

from __future__ import annotations

from . import assignments, disguise, entropy, identity, prose, structure, vendors, wallets
from .hits import SecretHit, merge

REDACTED = "[redacted secret]"
_WITHOUT_DIGITS = str.maketrans("", "", "0123456789")


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret found in `text`, by kind and position (overlaps merged, in order)."""
    if not text or len(text) < 3:
        return []
    hits = _rule_hits(text)
    hits.extend(disguise.find(text, _longest_word(text), _rule_hits))
    if "{" in text or "[" in text:
        hits.extend(_json_hits(text))
    return merge(hits)


def _json_hits(text: str) -> list[SecretHit]:
    """JSON written in a text read as the data it holds: `{"secret": {"value": X}}` and
    `{"name": "DB_PASSWORD", "value": X}` hold a secret the rules cannot see in the text as written."""
    hits: list[SecretHit] = []
    for start, end, data in structure.json_blocks(text):
        for name, value in structure.named_values(data):
            prefix = len(name) + 2
            kinds = [hit.kind for hit in find_secrets(f"{name}: {value}") if hit.end > prefix]
            if kinds:
                hits.extend(SecretHit(kinds[0], a, b) for a, b in structure.written_spans(text, start, end, value))
    return hits


def _longest_word(text: str) -> int:
    return max(map(len, text.split()), default=0)


def _rule_hits(text: str) -> list[SecretHit]:
    """What every family of rules finds in `text` as written."""
    if len(text) < 3:
        return []
    hits: list[SecretHit] = []
    lowered = text.lower()
    longest = _longest_word(text)
    hits.extend(vendors.find(text, lowered, longest))
    hits.extend(assignments.find(text))
    hits.extend(prose.find(text, lowered))
    digits = len(text) - len(text.translate(_WITHOUT_DIGITS))
    if digits >= 4:
        hits.extend(identity.find(text, lowered, digits))
    hits.extend(wallets.find(text, lowered, longest))
    if longest >= entropy.MIN_LENGTH:
        hits.extend(entropy.find(text))
    return hits


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def redact(text: str, hits: list[SecretHit] | None = None) -> tuple[str, list[SecretHit]]:
    """`text` with every secret replaced by a marker, and the hits that were replaced."""
    found = find_secrets(text) if hits is None else hits
    if not found:
        return text, []
    parts: list[str] = []
    cursor = 0
    for hit in found:
        parts.append(text[cursor:hit.start])
        parts.append(REDACTED)
        cursor = hit.end
    parts.append(text[cursor:])
    return "".join(parts), found


# Longer than any secret the rules match whole (a private key block aside, which its header names):
# text kept this much past a limit can be redacted first and cut after.
CUT_MARGIN = 4096


def redacted_prefix(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, redacted before it is cut: cut first, a key straddling
    the cut left a prefix too short for any rule to know (up to 19 characters of a GitHub token)."""
    clean, _ = redact(text[:limit + CUT_MARGIN])
    return clean[:limit]
