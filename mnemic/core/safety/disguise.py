"""Secrets written so that the rules do not read them: in full-width forms ("ｐａｓｓｗｏｒｄ＝…"),
mathematical letters ("𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝"), other scripts' digits ("４１１１ …", "٤١١١ …"), look-alike letters from
another script ("pаssword", "ghр_…" with a Cyrillic "а" or "р"), with invisible or blank-rendering
characters inside ("pass\u200bword", "pass\u3164word"), or encoded (base64, hex, URL percent-escapes).

The text is folded once (`folded`): each character replaced by its compatibility form (NFKC), digits
of any script by ASCII ones, invisible and blank characters dropped, look-alikes mapped inside a word
that also holds ASCII letters or digits or is made of look-alikes only (a word in one script is just
Cyrillic or Greek). Every rule runs on that copy, and each hit is mapped back to the span of the
original text it came from, so redaction removes the disguised characters too. A base64 or hex run
counts when it decodes to text that holds a secret (the whole run is the hit: a digest decodes to
bytes, not text); percent-escapes are undone on the whole text, and each escaped word is a hit when
the result holds one.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Iterator
from urllib.parse import unquote

from .hits import SecretHit
from .invisible import INVISIBLE, shows_nothing

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


# Characters dropped from the folded copy: what shows nothing (invisible.py: the default-ignorable
# characters, among them the Hangul fillers, which NFKC turns into U+1160, and the Braille blank),
# and inside a word every format character, combining mark and unassigned code point too.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Mn", "Me", "Cn"})
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_ALNUM_RUN = re.compile(r"[^\W_]+")
_HAS_LOOK_ALIKE = re.compile("[" + "".join(map(chr, _LOOK_ALIKES)) + "]")


def _folded_char(char: str) -> str:
    """What `char` reads as: "" when it shows nothing, its NFKC form, ASCII for any decimal digit."""
    if shows_nothing(char) or unicodedata.category(char) in _INVISIBLE_CATEGORIES:
        return ""
    form = unicodedata.normalize("NFKC", char)
    if form.isascii():
        return form
    return "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() else "" if shows_nothing(ch) else ch for ch in form)


def folded(text: str) -> tuple[str, list[int]]:
    """`text` with every disguise above undone, and for each of its characters the index of the
    character of `text` it comes from (a hit at [s, e) on the copy covers [origin[s], origin[e-1]+1))."""
    parts: list[str] = []
    origin: list[int] = []
    cursor = 0
    for run in _NON_ASCII.finditer(text):
        parts.append(text[cursor:run.start()])
        origin.extend(range(cursor, run.start()))
        cursor = run.end()
        letters = run.group()
        if letters.isalpha() and unicodedata.is_normalized("NFKC", letters) and not INVISIBLE.search(letters):
            # A word of another script as it is (letters only: no mark, format character or digit),
            # checked at C speed: most non-ASCII text is this, and looking at each character is not free.
            parts.append(letters)
            origin.extend(range(run.start(), run.end()))
            continue
        for index in range(run.start(), run.end()):
            form = _folded_char(text[index])
            parts.append(form)
            origin.extend([index] * len(form))
    parts.append(text[cursor:])
    origin.extend(range(cursor, len(text)))
    plain = "".join(parts)
    if _HAS_LOOK_ALIKE.search(plain):
        plain = _ALNUM_RUN.sub(_latin_if_disguised, plain)
    return plain, origin


def _latin_if_disguised(word: re.Match[str]) -> str:
    """A word with look-alikes in Latin letters when it mixes them with ASCII ("pаssword") or is
    made of them only ("ΡΙΝ"): a word in one script that has other letters stays as written."""
    value = word.group()
    if value.isascii():
        return value
    mapped = value.translate(_LOOK_ALIKES)
    return mapped if mapped.isascii() or _ASCII_ALNUM.search(value) else value


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


def find(text: str, longest: int, rules: Callable[[str], list[SecretHit]]) -> Iterator[SecretHit]:
    """Secrets found once each disguise is undone (`rules` runs every family of rules on a text)."""
    if not text.isascii():
        plain, origin = folded(text)
        if plain != text:
            for hit in rules(plain):
                yield SecretHit(hit.kind, origin[hit.start], origin[hit.end - 1] + 1)
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
