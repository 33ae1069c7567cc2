"""Sentences: segmentation and the tests every rule-based extractor applies to a sentence.

Splitting text into sentences (and first-person clauses), expanding contractions, and telling
questions, requests, filler and code from statements. Shared by the rule-based extractors.
"""

from __future__ import annotations

import re

_ABBREVIATIONS = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e|approx|Inc|Ltd|Co|No)\.", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:;|,?\s+(?:and|but|so|plus|while|although|though|whereas)\s+(?=(?:I|my|we|our)\b))\s*"
)
_BULLET = re.compile(r"^\s*(?:[-*•▪‣]|\d{1,2}[.)])\s+")
_CONTRACTIONS = (
    (r"\bI'm\b", "I am"), (r"\bI've\b", "I have"), (r"\bI'd\b", "I would"), (r"\bI'll\b", "I will"),
    (r"\bwe're\b", "we are"), (r"\bwe've\b", "we have"), (r"\bwe'll\b", "we will"), (r"\bwe'd\b", "we would"),
    (r"\byou're\b", "you are"), (r"\byou've\b", "you have"), (r"\byou'll\b", "you will"),
    (r"\byou'd\b", "you would"), (r"\bcan't\b", "cannot"), (r"\bwon't\b", "will not"),
    (r"\bain't\b", "am not"), (r"\b(\w+)n't\b", r"\1 not"),
)
_QUESTION_START = re.compile(
    r"^(?:what|why|how|when|where|who|whom|whose|which|is|are|am|was|were|does|did|can|could|would|will|"
    r"should|shall|may|might|has|had|isn't|aren't|doesn't|didn't|won't|wouldn't|couldn't|shouldn't|"
    r"any idea|do (?!not\b)|have you|have I)\b",
    re.I,
)
REQUEST_START = re.compile(
    r"^(?:please\s+)?(?:can|could|would|will)\s+you\b|^(?:please\s+)?(?:help|tell|show|give|write|explain|"
    r"summari[sz]e|find|make|create|check|fix|generate|draft|list|translate|compare|describe|calculate|book|"
    r"send|search|look|remind|suggest|recommend|try|let's|let me|go|read|review|rewrite|edit|plan|build|run|"
    r"add|update|delete|remove|open|continue|start|stop|imagine|pretend|act|answer|reply|respond)\b|^please\b",
    re.I,
)
_FILLERS = frozenset(
    """thanks|thank you|thank you so much|thanks a lot|thanks so much|many thanks|ok|okay|ok thanks|
    okay thanks|sure|yes|no|yeah|yep|nope|great|cool|nice|awesome|perfect|got it|sounds good|no problem|
    lol|haha|hmm|alright|all right|right|fine|of course|good|good morning|good afternoon|good evening|
    good night|hi|hello|hey|hiya|hi there|hello there|hey there|bye|goodbye|see you|see you later|
    have a nice day|have a good day|have a great day|take care|cheers|you're welcome|welcome|please|indeed|
    exactly|agreed|makes sense|that makes sense|that's great|that's helpful|that helps|that's it|
    that is all|that's all|never mind|nevermind|wow|oh|ah|well|interesting|me too|same here|not really|
    sorry|my bad|oops|understood|noted|will do|go ahead|continue|done|next|thx|ty|np|k|kk""".replace(
        "\n", "").replace("    ", "").split("|")
)
CODE_LIKE = re.compile(r"[{}<>\[\]=;]|^\s*(?:def|class|import|return|SELECT|INSERT)\b|https?://")
_WORD = re.compile(r"[A-Za-z0-9']+")


def _normalise_raw(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    # Lower-case "i" as a pronoun is common in chat and must still count as first person.
    text = re.sub(r"(?<![\w'])i(?=(?:\s|'m|'ve|'d|'ll|[,.!?]|$))", "I", text)
    return text


def segment(text: str) -> list[str]:
    """Sentences and first-person clauses of `text`, in order."""
    text = _normalise_raw(text)
    protected = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\x00"), text)
    pieces: list[str] = []
    for line in re.split(r"\n+", protected):
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        for sentence in _SENTENCE_END.split(line):
            for clause in _CLAUSE_SPLIT.split(sentence):
                clause = clause.replace("\x00", ".").strip(" \t\"'")
                if clause:
                    pieces.append(clause)
    return pieces


def expand_contractions(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text, flags=re.I if not pattern.startswith(r"\bI") else 0)
    return text


def finish_statement(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:-")
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    text = text.rstrip(".!…")
    if not text:
        return ""
    return text[0].upper() + text[1:] + "."


_SUBSTANCE_STOP = frozenset(
    """a an the and or but if of to in on at for with from by as is am are was were be been being do does
    did have has had having it its this that these those there here they them their theirs he she him her
    i me my we us our you your thing things stuff something anything everything one some any much many
    like likes love loves want wants need needs think thinks know knows see sees get gets got go goes make
    makes say says tell tells feel feels not no so too very just really also again now then still well
    yes yeah ok okay sure wants the assistant""".split()
)


def has_substance(text: str) -> bool:
    words = [w.lower() for w in _WORD.findall(text)]
    return len(words) >= 2 and any(len(w) > 1 and w not in _SUBSTANCE_STOP for w in words)


def is_question(sentence: str) -> bool:
    stripped = sentence.strip()
    return stripped.endswith("?") or bool(_QUESTION_START.match(stripped))


def is_filler(sentence: str) -> bool:
    key = re.sub(r"[^\w' ]+", "", sentence.lower()).strip()
    key = re.sub(r"\s+", " ", key)
    return not key or key in _FILLERS


__all__ = [
    "CODE_LIKE",
    "REQUEST_START",
    "expand_contractions",
    "finish_statement",
    "has_substance",
    "is_filler",
    "is_question",
    "segment",
]
