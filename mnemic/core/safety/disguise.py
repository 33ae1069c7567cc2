"""Secrets written so that the rules do not read them: in full-width forms ("ｇｈｐ_…"), with
look-alike letters from another script ("ghр_…" with a Cyrillic "р"), with invisible characters
inside ("pass\u200bword", a zero-width space), or encoded (base64, hex, URL percent-escapes).

Each disguise is undone on a copy of the text and rules run on it again, with hits mapped back to
the original. Invisible characters (format characters, combining marks) are dropped and every rule
runs. Full-width forms are folded and look-alikes mapped one character for one (look-alikes only
inside a word that also holds ASCII letters or digits: a word in one script is just Cyrillic or
Greek), and only the token shapes run on that copy: the prose rules would read folded Japanese
("ＰＩＮは４桁です", "the PIN is four digits") as a PIN given. A base64 or hex run counts when it
decodes to text that holds a secret (the whole run is the hit: a digest decodes to bytes, not text);
percent-escapes are undone on the whole text, and each escaped word is a hit when the result holds one.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Iterator
from urllib.parse import unquote

from .hits import SecretHit

# Cyrillic and Greek letters drawn like Latin ones (Unicode's confusables, the common ones).
_LOOK_ALIKES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "һ": "h",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Ү": "Y",
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
})
_WORD = re.compile(r"\S+")
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{24,}={0,2}(?![A-Za-z0-9+/=_\-])")
MIN_BASE64 = 24
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){12,}(?![0-9A-Fa-f])")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _fold(char: str) -> str:
    folded = unicodedata.normalize("NFKC", char)
    return folded if len(folded) == 1 else char


def undisguised(text: str) -> str:
    """`text` with full-width forms folded and look-alike letters mapped, one character for one."""
    if unicodedata.is_normalized("NFKC", text):
        folded = text
    else:
        folded = "".join(_fold(char) if not char.isascii() else char for char in text)
    parts: list[str] = []
    cursor = 0
    for word in _WORD.finditer(folded):
        value = word.group()
        if not value.isascii() and _ASCII_ALNUM.search(value):
            parts.append(folded[cursor:word.start()])
            parts.append(value.translate(_LOOK_ALIKES))
            cursor = word.end()
    parts.append(folded[cursor:])
    return "".join(parts)


def _decoded(run: str) -> str | None:
    """The text a base64 (or hex) run stands for, if it decodes to mostly printable ASCII."""
    padded = run + "=" * (-len(run) % 4)
    try:
        if _HEX_RUN.fullmatch(run):
            raw = bytes.fromhex(run)
        else:
            raw = base64.b64decode(padded, altchars=b"-_" if ("-" in run or "_" in run) else None, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) < 12:
        return None
    printable = sum(32 <= byte < 127 or byte in (9, 10, 13) for byte in raw)
    return raw.decode("ascii", errors="replace") if printable >= 0.9 * len(raw) else None


_INVISIBLE = frozenset({"Cf", "Mn"})


def find(text: str, longest: int, rules: Callable[[str], list[SecretHit]],
         tokens: Callable[[str], list[SecretHit]]) -> Iterator[SecretHit]:
    """Secrets found once each disguise is undone (`rules` runs every family on a text, `tokens`
    the token shapes only)."""
    if not text.isascii():
        kept = [i for i, char in enumerate(text) if unicodedata.category(char) not in _INVISIBLE]
        if len(kept) < len(text):
            for hit in rules("".join(text[i] for i in kept)):
                yield SecretHit(hit.kind, kept[hit.start], kept[hit.end - 1] + 1)
        plain = undisguised(text)
        if plain != text:
            yield from tokens(plain)
    if longest >= MIN_BASE64:
        for run in _BASE64_RUN.finditer(text):
            decoded = _decoded(run.group())
            if decoded is not None and rules(decoded):
                yield SecretHit("encoded_secret", run.start(), run.end())
    if "%" in text and _PERCENT_ESCAPE.search(text):
        unescaped = unquote(text)
        if unescaped != text and rules(unescaped):
            for word in _WORD.finditer(text):
                if _PERCENT_ESCAPE.search(word.group()):
                    yield SecretHit("encoded_secret", word.start(), word.end())
