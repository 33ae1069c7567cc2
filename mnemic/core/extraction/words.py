"""The content words of a fact, to compare two facts about the same thing ("Has a boat" and
"Sold the boat" share "boat"): used by same-turn corrections and by reconciliation."""

from __future__ import annotations

import re

# Words that carry no subject matter for comparing two facts: function words, possession and the
# change markers themselves ("sold", "no longer"), so "Has a boat" and "Sold the boat" share "boat".
CONTENT_STOPWORDS = frozenset(
    """a an the and or but if of to in on at for with from by as into onto about over under than then
    is am are was were be been being do does did doing have has had having own owns owned owning
    it its this that these those there here they them their theirs he she him her his hers i me my mine
    we us our you your yours user user's users who whom which what when where why how
    not no never none nothing nobody without longer anymore any more ever again
    actually really just also still now currently today recently anyway well so very too quite
    will would can could should shall may might must used get got gets getting
    sold sell sells selling stopped stop stops quit quits left leave leaves gave give gives away rid
    former formerly ex changed switched instead rather moved some one thing things
    last week weeks month months year years day days ago yesterday tonight earlier lately recent""".split()
)
_CONTENT_WORD = re.compile(r"[a-z0-9]+", re.I)


def stem(word: str) -> str:
    """A crude English stem so that works/worked/working and likes/like compare equal."""
    lower = word.lower()
    if len(lower) > 4 and lower.endswith("ies"):
        return lower[:-3] + "y"
    if len(lower) > 5 and lower.endswith("ing"):
        return lower[:-3]
    if len(lower) > 4 and lower.endswith("ed"):
        return lower[:-2] if not lower.endswith("eed") else lower[:-1]
    if len(lower) > 4 and lower.endswith("es") and lower[-3] in "aeiou":
        return lower[:-2]
    if len(lower) > 4 and lower.endswith(("ches", "shes", "sses", "xes")):
        return lower[:-2]
    if len(lower) > 3 and lower.endswith("s") and not lower.endswith("ss"):
        lower = lower[:-1]
    # live/lives/lived/living all end up as "liv".
    if len(lower) > 3 and lower.endswith("e"):
        lower = lower[:-1]
    return lower


def content_words(text: str) -> set[str]:
    text = text.replace("\u2019", "'")
    text = re.sub(r"\bcan't\b|\bcannot\b", "can not", text, flags=re.I)
    text = re.sub(r"\bwon't\b", "will not", text, flags=re.I)
    text = re.sub(r"n't\b", " not", text, flags=re.I)
    text = re.sub(r"'(?:s|m|re|ve|d|ll)\b", "", text, flags=re.I)
    return {stem(w) for w in _CONTENT_WORD.findall(text) if w.lower() not in CONTENT_STOPWORDS}


__all__ = [
    "CONTENT_STOPWORDS",
    "content_words",
    "stem",
]
