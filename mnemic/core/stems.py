"""Word stems: the form in which the keyword index holds and looks up a word ("hiking" -> "hike").

The index used to leave stemming to FTS5's porter tokenizer. It now holds each word tagged with
its owner (see lexical.py), so that looking a word up walks only that owner's records, and FTS5's
tokenizer would stem the tag and the word as one. So words are stemmed here, with
snowballstemmer's Porter algorithm, the one FTS5's porter tokenizer implements; like that
tokenizer, a word shorter than three letters is kept whole ("us" is not "u").

Words are folded before they are stemmed as FTS5's `remove_diacritics` folded them, and more:
case-folded, compatibility-decomposed (full-width letters, ligatures) and without combining
marks, so "Café" and "cafe" are one word.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata

import snowballstemmer

# Letters and digits; an underscore splits a word, as FTS5's unicode61 tokenizer split it.
_WORD = re.compile(r"[^\W_]+")
_stemmer = snowballstemmer.stemmer("porter")
_stemmer_lock = threading.Lock()  # a snowballstemmer stemmer keeps the word it works on in itself


def folded_words(text: str) -> list[str]:
    """The words of a text as the index holds them before stemming, in order."""
    return _WORD.findall(fold(text))


def fold(text: str) -> str:
    """Case-folded, compatibility-decomposed, without combining marks."""
    decomposed = unicodedata.normalize("NFKD", text).casefold()
    if decomposed.isascii():
        return decomposed
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a folded word (as `folded_words` gives them)."""
    if len(word) < 3:
        return word
    with _stemmer_lock:
        return str(_stemmer.stemWord(word))
