"""Credentials said in a sentence: "my password is hunter2", "the wifi key's Tr0ub4dor",
"pw - s3cret!", "the pass is blue-fish-42", "hunter2 is my password", "use X as the password",
"I changed my PIN to 4821", "the door code is 7731", "my Stripe key is sk_...", "Passwort: X",
"mot de passe : X".

Talking *about* a credential is not one: "reset your password at https://...", "PIN codes are four
digits", "my password is too short", "the key is to stay calm". A value is refused when it reads as
a value: not an ordinary word that continues the sentence (see `values.describes_rather_than_gives`),
and, after a weak keyword ("pass", "key", "code"), only when it looks chosen (a digit, a symbol, a
case change) or is quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .hits import SecretHit
from .values import describes_rather_than_gives, is_placeholder, looks_like_password, looks_like_token

# Keywords whose value is a credential at any length.
_STRONG = (
    r"pass\s?words?|passwd|pwd|pw|pass\s?phrase|pass\s?code|passwort|kennwort|mot\s+de\s+passe|"
    r"contrase(?:ñ|n)a|senha|wachtwoord|parola(?:\s+d'ordine)?|has(?:ł|l)o|l(?:ö|o)senord|salasana|"
    r"adgangskode|пароль|密码|密碼|パスワード|비밀번호|kata\s+sandi|"
    r"pin(?:\s?(?:code|number|no\.?|#))?|"
    r"(?:wi-?fi|wlan|wpa2?|network|router|hotspot|bitlocker|recovery|encryption|master|product|license|licence|"
    r"activation)\s+(?:key|code)|"
    r"(?:door|gate|alarm|garage|lock|safe|entry|access|building|keypad|security|verification|confirmation|"
    r"one[\s\-]?time|2fa|mfa|otp|sms|login|unlock|backup|recovery|vault|locker|padlock|house|front\s+door|"
    r"lockbox|key\s?box|apartment|suite|elevator)\s+(?:code|pin|combination|combo)|"
    r"otp|totp|cvv2?|cvc2?|csc|security\s+answer|secret\s+(?:answer|word|phrase)|safe\s?word|unlock\s+pattern"
)
# Keywords that name many things: their value must look like a credential.
_WEAK = r"pass|key|combination|combo"
# Who or what the credential is for: "password for gmail", "the code to the front door".
_FOR = (r"(?:\s+(?:for|to|on|of|at|from|in)\s+(?:my\s+|the\s+|our\s+|your\s+|his\s+|her\s+|their\s+)?"
        r"[\w.@&'’\- ]{1,32}?)?")
_CONNECT = (
    r"\s*(?:(?:is|was|are|be|'s|’s|=|:(?!//)|：|-|–|—|->|→|=>)\s*(?:now|still|just|actually|currently|set\s+to|"
    r"changed\s+to|updated\s+to|simply|literally)?\s*(?:[:\-]\s*)?|"
    r"\s+(?:is|was|has\s+been|will\s+be|got)\s+(?:changed|set|updated|reset)\s+to\s+)"
)
# A credential named before a possessive or a qualifier: "my gmail password is", "the pin for".
_STATED = re.compile(
    rf"(?i)(?<![\w\-])(?P<kw>{_STRONG}|{_WEAK})(?![\w\-]){_FOR}{_CONNECT}"
)
_SET_TO = re.compile(
    rf"(?i)\b(?:set|changed?|reset|updated?|made|chose|picked)\s+(?:my|the|our|his|her|their|your)\s+"
    rf"(?:[\w\-]+\s+){{0,2}}?(?P<kw>{_STRONG})\s+(?:to|as|into)\s+"
)
_USE_AS = re.compile(
    rf"(?i)\b(?:use|using|used|try|tried|enter|type|typed)\s+(?P<value>\S+)\s+(?:as|for)\s+"
    rf"(?:my|the|our|his|her|their|your)\s+(?:[\w\-]+\s+){{0,2}}?(?:{_STRONG})\b"
)
_REVERSED = re.compile(
    rf"(?i)(?P<value>[^\s\"'“”]{{3,}})[\"'”]?\s+(?:is|was|=)\s+(?:my|the|our|his|her|their|your)\s+"
    rf"(?:new\s+|current\s+|old\s+|real\s+)?(?:[\w\-]+\s+)?(?:{_STRONG})\b"
)
# "my api key is ...", "the webhook secret for prod: ...": a named machine credential and a
# token-shaped value. Values must look machine-made: "the secret is patience" is no credential.
_NAMED_TOKEN = re.compile(
    r"(?i)(?<![\w\-])(?:api[\s_\-]?key|apikey|secret(?:[\s_\-]?(?:access[\s_\-]?)?key)?|access[\s_\-]?(?:key|token)|"
    r"auth(?:entication|orization)?[\s_\-]?(?:token|key|code)|refresh[\s_\-]?token|bearer[\s_\-]?token|"
    r"client[\s_\-]?(?:secret|key)|private[\s_\-]?key|priv[\s_\-]?key|session[\s_\-]?(?:id|key|token|cookie)|"
    r"(?:webhook|signing)[\s_\-]?(?:secret|key)|encryption[\s_\-]?key|license[\s_\-]?key|"
    r"recovery[\s_\-]?(?:code|key)s?|token|credentials?|creds|sas[\s_\-]?token|connection[\s_\-]?string|"
    r"account[\s_\-]?key|storage[\s_\-]?key|master[\s_\-]?key|deploy[\s_\-]?key|app[\s_\-]?secret|"
    r"consumer[\s_\-]?(?:secret|key))"
    rf"s?(?![\w\-]){_FOR}"
    r"\s*(?:is|was|are|=|:|：|->|→|'s|’s|-)\s*(?:now\s+|still\s+)?[\"'`“]?(?P<value>[A-Za-z0-9_\-./+=~:%@!#$*&^]{8,})"
)
_USER_PASS_PAIR = re.compile(r"^[^\s:/]{2,40}[:/][^\s:/]{3,}$")
_TRAILING = ".,;:!?)]}\"'`”’»"


def _value_at(text: str, start: int) -> tuple[str, int, int] | None:
    """The credential right after a connector: a quoted phrase, or one word."""
    if start >= len(text):
        return None
    opening = text[start]
    closing = {"\"": "\"", "'": "'", "`": "`", "“": "”", "‘": "’", "«": "»", "„": "“", "「": "」"}.get(opening)
    if closing is not None:
        end = text.find(closing, start + 1)
        if end != -1 and end - start <= 200:
            return text[start + 1:end], start + 1, end
        start += 1
    end = start
    while end < len(text) and not text[end].isspace():
        end += 1
    word = text[start:end].rstrip(_TRAILING)
    if not word:
        return None
    return word, start, start + len(word)


def _passphrase(text: str, start: int) -> str | None:
    """A passphrase said unquoted: the rest of the clause, when it is three words or more that do
    not start like a description ("my passphrase is long and hard to guess")."""
    clause = re.split(r"[.;,!?\n]", text[start:start + 200], maxsplit=1)[0].rstrip()
    words = clause.split()
    if len(words) < 3 or words[0].lower() in _PASSPHRASE_STOP:
        return None
    return clause


_PASSPHRASE_STOP = frozenset(
    """not too very the a an my your our in on at stored saved written kept long short weak strong
    something what whatever same different easy hard being still now also just only""".split()
)


def _is_quoted(text: str, start: int) -> bool:
    return start > 0 and text[start - 1] in "\"'`“‘«„「"


def _stated_hits(text: str) -> Iterator[SecretHit]:
    for match in _STATED.finditer(text):
        keyword = match.group("kw").lower()
        read = _value_at(text, match.end())
        if read is None:
            continue
        value, start, end = read
        if "phrase" in keyword:
            phrase = _passphrase(text, start)
            if phrase is not None:
                yield SecretHit("password", start, start + len(phrase))
                continue
        after = text[end:end + 24]
        if describes_rather_than_gives(value, after) or is_placeholder(value):
            continue
        connector = text[match.start("kw") + len(keyword):match.end()].strip().lower()
        weak = re.fullmatch(_WEAK, keyword) is not None
        if keyword.endswith("s") and connector.startswith("are") and not weak:
            continue  # "PIN codes are four digits": about PINs in general
        if weak and not (_is_quoted(text, start) or looks_like_password(value) or looks_like_token(value)):
            continue
        numeric_kind = keyword.startswith("pin") or keyword.endswith(("code", "combination", "combo"))
        if numeric_kind and not any(ch.isdigit() for ch in value):
            continue  # PINs and door codes hold digits: "the pin is located ..." is prose
        yield SecretHit("password", start, end)


def _phrase_hits(text: str) -> Iterator[SecretHit]:
    for pattern in (_SET_TO,):
        for match in pattern.finditer(text):
            read = _value_at(text, match.end())
            if read is None:
                continue
            value, start, end = read
            if not describes_rather_than_gives(value, text[end:end + 24]) and not is_placeholder(value):
                yield SecretHit("password", start, end)
    for pattern in (_USE_AS, _REVERSED):
        for match in pattern.finditer(text):
            value = match.group("value").strip(_TRAILING + "\"'“‘«„")
            start = match.start("value")
            if len(value) < 3 or describes_rather_than_gives(value, "") or is_placeholder(value):
                continue
            if pattern is _REVERSED and not (looks_like_password(value) or _is_quoted(text, start + 1)):
                continue  # "That is my password" / "Sunday is the code": only chosen-looking values
            yield SecretHit("password", start, start + len(match.group("value")))


def _named_token_hits(text: str) -> Iterator[SecretHit]:
    for match in _NAMED_TOKEN.finditer(text):
        value = match.group("value").rstrip(_TRAILING)
        if is_placeholder(value) or value.lower().startswith(("http://", "https://", "www.")):
            continue
        if looks_like_token(value) or _USER_PASS_PAIR.match(value):
            yield SecretHit("credential", match.start("value"), match.start("value") + len(value))


def find(text: str, lowered: str) -> Iterator[SecretHit]:
    yield from _stated_hits(text)
    yield from _phrase_hits(text)
    yield from _named_token_hits(text)


# Substrings of the lower-cased text without which no prose rule can match: a cheap gate.
TRIGGERS = (
    "pass", "pw", "pin", "code", "key", "secret", "token", "otp", "cvv", "cvc", "csc", "cred", "auth",
    "session", "combination", "combo", "safe", "word", "wort", "mot de", "contrase", "senha", "parola",
    "has", "sandi", "пароль", "密", "パスワード", "비밀번호", "sas", "connection", "salasana", "lösen",
    "losen",
)
