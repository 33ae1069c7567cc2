"""Passwords named by what they open rather than by a keyword: "I log into Gmail with Xk9#mP2$vL",
"the thing I log in with at work is Tr0ub4dor&3", "NAS login admin:Sunflower#77", "my Gmail login
is Xk9#mP2$vL", "my phone unlocks with 4821", "to unlock my laptop I type correct horse battery
staple".

With no keyword to say a value is a password, it must hold a password's symbol beside letters and
digits ("Auth0", "SAML-2.0", "GPT-4o", "jsmith42", "localhost:8080" are not), or, for one's own
device, be a PIN or a passphrase of plain words ("to unlock the screen, type anything and press
Enter" is an instruction, not one). A second attack on the first version of these rules wrote 524
ordinary sentences about logging in and unlocking; these rules refuse none of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .hits import SecretHit
from .values import TRAILING, UNIT_FOLLOWS, is_placeholder, value_at

# Substrings of the lower-cased text without which no rule here can match (a cheap gate).
CUES = ("log in", "log into", "login", "log-in", "logon", "log on", "sign in", "sign into", "sign-in", "unlock",
        "opens with")

_LOG_IN = r"(?i)\b(?:log(?:ging|ged|s)?|sign(?:ing|ed|s)?)[\s\-]?(?:in|on)(?:to)?\b"
_LOG_IN_WITH = (
    re.compile(_LOG_IN + r"[^.\n]{0,40}?\bwith\s+(?:the\s+password\s+|password\s+)?(?P<value>\S+)"),
    re.compile(_LOG_IN + r"\s+with\b[^.\n]{0,30}?\s(?:is|=|:)\s+(?P<value>\S+)"),
)
_LOGIN_USER_PASS = re.compile(r"(?i)\b(?:login|log-in|logon)\s+(?P<user>[\w.@+\-]{2,40}):(?P<value>[^\s:/]{4,})")
_LOGIN_IS = re.compile(r"(?i)\b(?:login|log-in|logon|sign-in)\s+(?:is|was|=|:)\s+(?P<value>\S+)")
# One's own device, perhaps named ("my work laptop").
_DEVICES = r"laptop|computer|pc|mac|macbook|phone|iphone|tablet|ipad|desktop|workstation|wallet|vault|safe|drive|disk"
# "my phone unlocks with 4821": a PIN may follow as well as a password or passphrase.
_MINE_UNLOCKS_WITH = re.compile(
    rf"(?i)\b(?:my|our)\s+(?:[\w\-]+\s+)?(?:{_DEVICES})\s+(?:unlocks|opens)\s+with\s+")
# "to unlock my laptop I type ...": a password or a passphrase.
_UNLOCK_MINE = re.compile(
    rf"(?i)\bunlock(?:s|ed|ing)?\s+(?:my|our)\s+(?:[\w\-]+\s+)?(?:{_DEVICES}|account)\b[^.\n]{{0,20}}?"
    r"\b(?:i\s+)?(?:type|types|typed|enter|enters|entered|key\s+in)\s+")
_PIN_DIGITS = re.compile(r"\d{4,8}(?![\w.,:/\-]*\d)")
_PASSWORD_MARKS = frozenset("!@#$%^&*?~+=<>|;")
_FUNCTION_WORDS = frozenset(
    """a an the and or but if then than so as to into onto in on at by of for from with without up down out
    over it its this that these those my your our his her their me him them us is are was were be been
    press click tap hold wait see again twice once until when while""".split())
_PLAIN_WORD = re.compile(r"[a-z]{2,}")
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")


def _marked_password(value: str) -> bool:
    """Letters, digits and a symbol only passwords carry (not "-", ".", "/", "_" of names and
    versions, nor the "@" of an email address)."""
    if _EMAIL.fullmatch(value):
        return False
    return (any(ch.isalpha() for ch in value) and any(ch.isdigit() for ch in value)
            and any(ch in _PASSWORD_MARKS for ch in value) and not is_placeholder(value))


def _plain_passphrase(text: str, start: int) -> str | None:
    """Three to eight plain lower-case words ending the clause, none of them a function word."""
    clause = re.split(r"[.;,!?\n]", text[start:start + 120], maxsplit=1)[0].strip()
    words = clause.split()
    if 3 <= len(words) <= 8 and all(_PLAIN_WORD.fullmatch(w) and w not in _FUNCTION_WORDS for w in words):
        return clause
    return None


def find(text: str) -> Iterator[SecretHit]:
    for pattern in (*_LOG_IN_WITH, _LOGIN_USER_PASS, _LOGIN_IS):
        for match in pattern.finditer(text):
            value = match.group("value").rstrip(TRAILING)
            if _marked_password(value):
                yield SecretHit("password", match.start("value"), match.start("value") + len(value))
    for pattern, pins in ((_MINE_UNLOCKS_WITH, True), (_UNLOCK_MINE, False)):
        for match in pattern.finditer(text):
            start = match.end()
            phrase = _plain_passphrase(text, start)
            pin = _PIN_DIGITS.match(text, start) if pins else None
            read = value_at(text, start)
            if phrase is not None:
                yield SecretHit("password", start, start + len(phrase))
            elif pin is not None and not UNIT_FOLLOWS.match(text, pin.end()):
                yield SecretHit("password", pin.start(), pin.end())
            elif read is not None and _marked_password(read[0]):
                yield SecretHit("password", read[1], read[2])
