"""Which policy topic a rule-extracted fact belongs to (the LLM extractor names its own)."""

from __future__ import annotations

import re

_TOPIC_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("explicit_instructions", re.compile(r"^Wants the assistant\b|^Wants to be called\b", re.I)),
    ("preferences", re.compile(
        r"\b(?:prefers?|preferred|preference|likes?|liked|loves?|loved|enjoys?|enjoyed|hates?|hated|dislikes?|"
        r"favou?rite|rather|fan of|into|can ?not stand|interested in|vegetarian|vegan|pescatarian|wants?|"
        r"would like|wish(?:es)?|avoid|avoids|allerg\w*|style|tone)\b", re.I)),
    ("personal_info", re.compile(
        r"\b(?:name|named|called|lives?|lived|living|moved|relocated|from|born|birthday|age|years old|"
        r"married|wife|husband|partner|spouse|fianc[eé]e?|girlfriend|boyfriend|kids?|children|son|daughter|"
        r"family|mother|father|mom|mum|dad|parents?|brother|sister|siblings?|grand\w+|pets?|dog|cat|"
        r"works?|worked|working|job|employer|profession|occupation|engineer|developer|designer|manager|"
        r"teacher|student|studies|studied|studying|graduated|degree|university|college|school|hometown|"
        r"native|speaks?|languages?|city|country|address|email|phone|retired|nationality)\b", re.I)),
)


def classify_topic(text: str) -> str:
    for topic, pattern in _TOPIC_RULES:
        if pattern.search(text):
            return topic
    return "key_details"


__all__ = [
    "classify_topic",
]
