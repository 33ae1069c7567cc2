"""Rewriting what someone said about themselves as a standalone statement about them.

"I moved to Austin last year" → "Moved to Austin last year."; "You prefer tea" (the assistant to
the user) → "Prefers tea.". The subject is dropped (the memory is the user's) and the verb is put
in the third person.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .sentences import expand_contractions, finish_statement

_ADVERBS = frozenset(
    """really also usually always never often sometimes still just recently currently now actually mostly
    generally definitely truly absolutely rarely typically even only already finally primarily mainly
    personally normally occasionally frequently seldom kind sort totally honestly barely hardly mostly
    probably certainly especially regularly""".split()
)
_MODALS = frozenset(
    "can cannot could will would should must might may shall used had did need ought".split()
)
_IRREGULAR_PAST = frozenset(
    """sold went bought got made took had was were did saw gave met left began became came ran wrote grew
    knew thought told said found felt kept lost paid put sent spent stood taught won broke chose drove ate
    drank flew forgot held hurt led lent quit rode rang sang sat slept spoke stole swam threw understood woke
    wore built caught dealt dug fed fought fled forgave froze hid hung heard laid lay lit meant rose sought
    shot shut sank slid split spread stuck stung struck swore swept swung tore wept wound brought bent bet
    bit bled blew bred burnt cast clung cost crept cut dreamt dwelt fell fit flung ground hit knelt leapt
    learnt let overcame rid set shed shone shook spat spun sprang strode strove thrust trod upset withdrew
    became read""".split()
)


def third_person(verb: str) -> str:
    """The third-person singular present of a base verb: prefer → prefers, go → goes."""
    lower = verb.lower()
    special = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is", "are": "is"}
    if lower in special:
        out = special[lower]
    elif lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = lower + "es"
    elif len(lower) > 1 and lower.endswith("y") and lower[-2] not in "aeiou":
        out = lower[:-1] + "ies"
    else:
        out = lower + "s"
    return out


def _is_past_or_modal(word: str) -> bool:
    lower = word.lower()
    return (
        lower in _MODALS or lower in _IRREGULAR_PAST or (lower.endswith("ed") and len(lower) > 3)
        or lower in {"was", "were", "is", "has", "does"}
    )


def _conjugate_lead(words: list[str]) -> list[str]:
    """Rewrite `<subject> [adverbs] verb ...` (subject already removed) as a subject-less
    third-person statement: [adverbs] verb(3sg) ..."""
    out: list[str] = []
    index = 0
    while index < len(words):
        lower = words[index].lower()
        if lower in _ADVERBS:
            out.append(words[index])
            index += 1
            continue
        if lower == "no" and index + 1 < len(words) and words[index + 1].lower() == "longer":
            out.extend(words[index:index + 2])
            index += 2
            continue
        break
    if index >= len(words):
        return out
    verb = words[index]
    lower = verb.lower()
    if lower in {"am", "are"}:
        out.append("is")
    elif lower == "were":
        out.append("was")
    elif _is_past_or_modal(verb) or not verb.isalpha():
        out.append(verb)
    else:
        out.append(third_person(verb))
    out.extend(words[index + 1:])
    return out


MID_FIRST_PERSON = (
    (r"\bI am\b", "they are"), (r"\bI was\b", "they were"), (r"\bI\b", "they"), (r"\bmyself\b", "themselves"),
    (r"\bmine\b", "theirs"), (r"\bmy\b", "their"), (r"\bme\b", "them"), (r"\bwe\b", "they"),
    (r"\bourselves\b", "themselves"), (r"\bours\b", "theirs"), (r"\bour\b", "their"), (r"\bus\b", "them"),
)
_MID_SECOND_PERSON_USER = (  # in a user's message "you" is the assistant
    (r"\byourself\b", "the assistant"), (r"\byours\b", "the assistant's"), (r"\byour\b", "the assistant's"),
    (r"\byou\b", "the assistant"),
)
_MID_SECOND_PERSON_ASSISTANT = (  # in the assistant's message "you" is the user
    (r"\byou are\b", "they are"), (r"\byou were\b", "they were"), (r"\byourself\b", "themselves"),
    (r"\byours\b", "theirs"), (r"\byour\b", "their"), (r"\byou\b", "they"),
)


def replace_all(text: str, table: Sequence[tuple[str, str]], *, ignore_case: bool) -> str:
    for pattern, replacement in table:
        flags = re.I if ignore_case and not pattern.startswith(r"\bI") else 0
        text = re.sub(pattern, replacement, text, flags=flags)
    return text


def rewrite_user_statement(sentence: str) -> str:
    """A user's first-person sentence as a standalone statement about them."""
    text = expand_contractions(sentence.strip())
    text = re.sub(r"\bmy (\w+) and I\b", r"they and their \1", text, flags=re.I)
    words = text.split()
    if not words:
        return ""
    head = words[0]
    if head == "I":
        body = " ".join(_conjugate_lead(words[1:]))
    elif head.lower() in {"my", "our"} and len(words) > 1:
        # "My dog is named Rex" → "Dog is named Rex.": the memory is the user's, the owner is implied.
        body = " ".join(words[1:])
    elif head.lower() == "we":
        body = "They " + " ".join(words[1:])
    else:
        body = text
    body = replace_all(body, MID_FIRST_PERSON, ignore_case=True)
    body = replace_all(body, _MID_SECOND_PERSON_USER, ignore_case=True)
    return finish_statement(body)


def rewrite_assistant_statement(sentence: str) -> str:
    """An assistant's second-person statement about the user as a standalone statement."""
    text = expand_contractions(sentence.strip())
    words = text.split()
    if not words:
        return ""
    head = words[0].lower()
    if head == "you":
        body = " ".join(_conjugate_lead(words[1:]))
    elif head == "your" and len(words) > 1:
        body = " ".join(words[1:])
    else:
        body = text
    body = replace_all(body, _MID_SECOND_PERSON_ASSISTANT, ignore_case=True)
    # What the assistant says about itself is not a fact about the user.
    body = re.sub(r"\bI\b", "the assistant", body)
    body = re.sub(r"\bmy\b", "the assistant's", body, flags=re.I)
    return finish_statement(body)


__all__ = [
    "MID_FIRST_PERSON",
    "replace_all",
    "rewrite_assistant_statement",
    "rewrite_user_statement",
    "third_person",
]
