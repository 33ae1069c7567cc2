"""Word stems: the form in which the keyword index holds and looks up a word ("hiking" -> "hike").

The index used to leave tokenizing and stemming to FTS5 (unicode61 and porter). It now holds each
word tagged with its owner (see lexical.py), so that looking a word up walks only that owner's
records; FTS5 would stem the tag with the word, and its Unicode 6.1 tables split some words
Python's do not. So words are split, folded and stemmed here, the same way for a record and for
a query, with snowballstemmer's Porter algorithm (the one FTS5's porter tokenizer implements);
like that tokenizer, a word shorter than three letters is kept whole ("us" is not "u").

A word is a run of letters, digits and combining marks (a Devanagari vowel sign or virama belongs
to its word). Folding lower-cases it, reads compatibility forms as their plain letters (full-width
"ｃａｆｅ", the ligature "ﬁ") and drops Latin, Greek and Cyrillic accents ("café" is "cafe"), as
FTS5's `remove_diacritics` did; the marks of other scripts are kept (Japanese "ガス" is not "カス").
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata

import snowballstemmer

# The blocks of combining accents (Latin, Greek, Cyrillic): dropped by folding.
_ACCENTS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_stemmer = snowballstemmer.stemmer("porter")
_stemmer_lock = threading.Lock()  # a snowballstemmer stemmer keeps the word it works on in itself


@functools.cache
def _word() -> re.Pattern[str]:
    """Letters and digits (not the underscore) and every combining mark, built once from Python's
    own Unicode tables (~0.1 s, on the first text). Past U+1FFFF the only marks are the variation
    selectors of U+E0100-E01EF."""
    ranges: list[str] = ["\U000e0100-\U000e01ef"]
    start = None
    for code in range(0x300, 0x20000):
        mark = unicodedata.category(chr(code))[0] == "M"
        if mark and start is None:
            start = code
        elif not mark and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(code - 1))}")
            start = None
    return re.compile(r"(?:[^\W_]|[" + "".join(ranges) + "])+")


_ASCII_WORD = re.compile(r"[^\W_]+")


def folded_words(text: str) -> list[str]:
    """The words of a text as the index holds them before stemming, in order."""
    folded = fold(text)
    return (_ASCII_WORD if folded.isascii() else _word()).findall(folded)


def fold(text: str) -> str:
    """Lower-cased, compatibility forms read as plain letters, Latin/Greek/Cyrillic accents dropped."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text).casefold()
    return unicodedata.normalize("NFC", _ACCENTS.sub("", decomposed))


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a folded word (as `folded_words` gives them)."""
    if len(word) < 3:
        return word
    with _stemmer_lock:
        return str(_stemmer.stemWord(word))
