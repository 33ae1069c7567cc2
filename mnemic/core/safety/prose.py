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

from . import logins
from .hits import SecretHit
from .values import (
    TRAILING,
    UNIT_FOLLOWS,
    describes_rather_than_gives,
    is_placeholder,
    looks_like_password,
    looks_like_token,
    value_at,
)

# Keywords whose value counts only when it looks chosen (a digit, a symbol, a case change): in these
# languages the words after them are checked against no list of ordinary words ("şifre: aynı",
# "كلمة السر هي الصبر"), and a password is typed in Latin letters and digits anyway.
_CHOSEN_ONLY = (r"(?<!淘)口令|(?:ş|s)ifre(?:m|miz|n|si)?|पासवर्ड|कूटशब्द|كلمة\s+(?:ال)?مرور(?:\s+الخاصة\s+ب\S{1,3})?|"
                r"كلمة\s+السر|الرقم\s+السري")
# Keywords whose value is a credential at any length.
_STRONG = (
    r"pass\s?words?|passwd|pwd|pw|pass\s?phrase|pass\s?code|passwort|kennwort|mot\s+de\s+passe|"
    r"p[a@4][s5$][s5$][\s\-]?w[o0]rds?|"
    r"contrase(?:ñ|n)a|senha|wachtwoord|parola(?:\s+d'ordine)?|has(?:ł|l)o|l(?:ö|o)senord|salasana|"
    r"adgangskode|пароль|密码|密碼|パスワード|비밀번호|비번|암호|kata\s+sandi|"
    r"clave\s+(?:del\s+banco|bancaria|de\s+acceso|secreta)|"
    rf"{_CHOSEN_ONLY}|"
    r"pin(?:\s?(?:code|number|no\.?|#))?|"
    r"(?:wi[\-‐‑‒–]?fi|wlan|wpa2?|network|router|hotspot|bitlocker|recovery|encryption|master|product|license|licence|"
    r"activation)\s+(?:key|code)|"
    r"(?:wi[\-‐‑‒–]?fi|wlan|netzwerk|router)[\s\-]?(?:schlüssel|schluessel|passwort|kennwort)|"
    r"(?:clé|cle|clave|chiave)\s+(?:du\s+|del\s+|de\s+|de\s+la\s+|della\s+)?(?:wi[\-]?fi|wlan|réseau|reseau|red)|"
    r"(?:door|gate|alarm|garage|lock|safe|entry|access|building|keypad|security|verification|confirmation|"
    r"one[\s\-]?time|2fa|mfa|otp|sms|login|unlock|backup|recovery|vault|locker|padlock|house|front\s+door|"
    r"lockbox|key\s?box|apartment|suite|elevator)(?:\s+[a-z]+)?\s+(?:code|pin|combination|combo)s?|"
    r"otp|totp|cvv2?|cvc2?|csc|security\s+answer|secret\s+(?:answer|word|phrase)|safe\s?word|unlock\s+pattern|"
    r"(?:code|pin|combination|combo)\s+(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+|his\s+|her\s+|their\s+)?"
    r"(?:front\s+|back\s+|side\s+|main\s+)?(?:door|gate|lockbox|safe|alarm|garage|building|house|apartment|flat|"
    r"locker|padlock|lock|keypad|office|shed|storage\s+unit|key\s?box|vault)"
)
# Keywords that name many things: their value must look like a credential.
_WEAK = r"pass|key|combination|combo"
# Who or what the credential is for: "password for gmail", "the code to the front door".
_FOR = (r"(?:\s+(?:for|to|on|of|at|from|in|do|da|de|del|du|des|für|zum|zur|pour|per|voor|para)\s+"
        r"(?:my\s+|the\s+|our\s+|your\s+|his\s+|her\s+|their\s+)?"
        r"[\w.@&'’\- ]{1,32}?)?")
_CONNECT = (
    r"\s*(?:(?:(?<![A-Za-z])(?:is|was|are|be|es|ist|est|é|è|era|lautet)(?![A-Za-z])|'s|’s|=|:(?!//)|：|-|–|—|->|→|=>|"
    r"是|为|は|는|은|هي|هو)\s*"
    r"(?:(?:now|still|just|actually|currently|set\s+to|changed\s+to|updated\s+to|simply|literally)(?![A-Za-z]))?"
    r"\s*(?:[:\-]\s*)?|"
    r"\s+(?:is|was|has\s+been|will\s+be|got)\s+(?:changed|set|updated|reset)\s+to\s+)"
)
# A credential named before a possessive or a qualifier: "my gmail password is", "the pin for".
_STATED = re.compile(
    rf"(?i)(?<![A-Za-z0-9_\-])(?P<kw>{_STRONG}|{_WEAK})(?![A-Za-z0-9_\-]){_FOR}{_CONNECT}"
)
# Said without a verb: "door code 2580#", "cvv 482", "machine x login y password z".
_BARE = re.compile(rf"(?i)(?<![A-Za-z0-9_\-])(?P<kw>{_STRONG}|pass)[ \t]+(?=\S)")
_NUMERIC_KEYWORD = re.compile(
    r"(?i)^(?:pin|cvv|cvc|csc|otp|totp|code|combination|combo)|(?:code|pin|combination|combo)$"
)
_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_SPELLED_DIGITS = re.compile(rf"(?i){_DIGIT_WORD}(?:[\s,\-]+{_DIGIT_WORD}){{3,11}}\b(?![\s,]*(?:or|digits?)\b)")
_SPELLED_KEYWORD = re.compile(r"(?i)pin|code|pass")
# Part of a password is a secret too: "my bank password starts with Sunf", "... ends with 42".
_PART_OF = re.compile(
    rf"(?i)(?<![A-Za-z0-9_\-])(?P<kw>{_STRONG})(?![A-Za-z0-9_\-])\s+(?:starts|begins|ends|start|begin|end)\s+"
    r"(?:with|in)\s+")
_NOT_A_PART = frozenset(
    """a an the my your our his her their some one two three capital capitals uppercase lowercase upper lower
    number numbers letter letters digit digits symbol symbols special character characters word same
    different""".split())
# A code said digit by digit: "1 2 3 4", "8-2-4-1", "4.4.1.7".
_SPACED_DIGITS = re.compile(r"\d(?:[ \-.]\d){2,11}#?(?![\w\-.]?\d)")
_NOT_SECRET_BEFORE = re.compile(
    r"(?i)\b(?:primary|foreign|sort|partition|public|publishable|music|piano|answer|map|legend|hot|short|"
    r"mountain|bus|boarding|season|ski|day|press|backstage|hall|free|guest|visitor|transit|rail|park)\s+$"
)
_SET_TO = re.compile(
    rf"(?i)\b(?:set|changed?|reset|updated?|made|chose|picked)\s+(?:my|the|our|his|her|their|your)\s+"
    rf"(?:[\w\-]+\s+){{0,2}}?(?P<kw>{_STRONG})\s+(?:to|as|into)\s+"
)
_USE_AS = re.compile(
    rf"(?i)\b(?:use|using|used|try|tried|enter|type|typed)\s+(?P<value>\S+)\s+(?:as|for)\s+"
    rf"(?:my|the|our|his|her|their|your)\s+(?:[\w\-]+\s+){{0,2}}?(?:{_STRONG})\b"
)
# "hunter2 is my password": found from its verb, the value is the word before it.
_REVERSED = re.compile(
    rf"(?i)[\"'”]?\s+(?:is|was|=)\s+(?:my|the|our|his|her|their|your)\s+"
    rf"(?:new\s+|current\s+|old\s+|real\s+)?(?:[\w\-]+\s+)?(?:{_STRONG})\b"
)
_WORD_BEFORE = re.compile(r"[^\s\"'“”]{3,}$")
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
    rf"s?(?![\w\-]){_FOR}(?:\s*\([^()\n]{{0,40}}\))?"
    r"(?:\s*(?:is|was|are|=|:|：|->|→|'s|’s|-)\s*(?:now\s+|still\s+)?|\s+(?=\S{16}))"
    r"[\"'`“]?(?P<value>[A-Za-z0-9_\-./+=~:%@!#$*&^;]{8,})"
)
# "Login for staging: admin / S3cure!Pass", "creds: svc-report, Xk9!...", "my login is jo@x.com / Pw#1"
_LOGIN_PAIR = re.compile(
    r"(?i)\b(?:login|log-in|sign[\s\-]?in|credentials?|creds|account)\b[^.\n]{0,40}?"
    r"(?:[:=]|\s(?:is|are|was)(?![A-Za-z]))\s*"
    r"(?P<user>[\w.@+\-]{2,60})\s*(?:/|\||,|:)\s*(?P<value>[^\s,;\"'{}]{4,})"
)
# A user and a password with no keyword at all: "Spotify: mike88 / BassDrop!99", "log in with
# jo@corp.com and Spring#2025". Only a value with upper and lower case, a digit and a symbol a
# password uses counts, after a slash or bar, or after an email address: "TCP / IP", "Q3 / FY24-Q1"
# and "alice@corp.com and Room-42" are not credentials.
_USER_PASSWORD = re.compile(
    r"(?<![\w.@+\-/:])(?P<user>(?P<email>[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+)|[A-Za-z][\w.\-]{1,40})"
    r"(?:\s*[/|]\s*|(?(email)\s*,\s*|(?!))|(?(email)\s+(?:and|with|pw|password)\s+|(?!)))"
    r"(?P<value>[^\s,;\"'{}()]{6,64})"
)
_PASSWORD_SYMBOLS = frozenset("!@#$%^&*?~+=_")
_BASE64_WORD = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
# "the server room door opens with 9021"
_OPENS_WITH = re.compile(
    r"(?i)\b(?:door|gate|lock|safe|locker|padlock|garage|lockbox|keypad|alarm)\b[^.\n]{0,40}?"
    r"\b(?:opens?|unlocks?|disarms?)\s+with\s+(?:the\s+)?(?:code\s+|pin\s+)?(?P<value>\d{3,10}#?)(?!\d)"
)
_USER_PASS_PAIR = re.compile(r"^[^\s:/]{2,40}[:/][^\s:/]{3,}$")


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
        read = value_at(text, match.end())
        if read is None:
            continue
        value, start, end = read
        if "phrase" in keyword:
            phrase = _passphrase(text, start)
            if phrase is not None:
                yield SecretHit("password", start, start + len(phrase))
                continue
        spelled = _SPELLED_DIGITS.match(text, start) if _SPELLED_KEYWORD.search(keyword) else None
        if spelled is not None:  # "my PIN is four eight two one"
            yield SecretHit("password", start, spelled.end())
            continue
        after = text[end:end + 24]
        if describes_rather_than_gives(value, after) or is_placeholder(value):
            continue
        connector = text[match.start("kw") + len(keyword):match.end()].strip().lower()
        chosen_only = re.fullmatch(_CHOSEN_ONLY, keyword) is not None
        if chosen_only and not (_chosen(value) and any(ch.isascii() and ch.isalnum() for ch in value)):
            continue  # "şifre: aynı", "口令：芝麻开门", "पासवर्ड: एडमिन से पूछें"
        weak = re.fullmatch(_WEAK, keyword) is not None or chosen_only
        possessive = re.search(r"(?i)\b(?:my|our|his|her|their)\s+(?:\S+\s+){0,2}$",
                               text[max(0, match.start() - 30):match.start()])
        if keyword.endswith("s") and connector.startswith("are") and not weak and not possessive:
            continue  # "PIN codes are four digits": about PINs in general; "my backup codes are" is not
        if weak and _NOT_SECRET_BEFORE.search(text, max(0, match.start() - 20), match.start()):
            continue  # "the primary key is user_id", "the bus pass is ..."
        if weak and not _is_quoted(text, start):
            chosen = looks_like_token(value) if keyword == "key" else looks_like_password(value)
            if not chosen:
                continue
        numeric_kind = _NUMERIC_KEYWORD.search(keyword) is not None
        if numeric_kind and not any(ch.isdigit() for ch in value):
            continue  # PINs and door codes hold digits: "the pin is located ..." is prose
        yield SecretHit("password", start, end)


def _part_hits(text: str) -> Iterator[SecretHit]:
    for match in _PART_OF.finditer(text):
        read = value_at(text, match.end())
        if read is None or len(read[0]) < 3 or read[0].lower() in _NOT_A_PART or is_placeholder(read[0]):
            continue
        if any(ch.isdigit() or ch.isupper() for ch in read[0]):  # "Sunf", "…42", not "whatever"
            yield SecretHit("password", read[1], read[2])


def _bare_hits(text: str) -> Iterator[SecretHit]:
    """A keyword and its value with no verb between: only values that cannot be words."""
    for match in _BARE.finditer(text):
        keyword = match.group("kw").lower()
        read = value_at(text, match.end())
        if read is None:
            continue
        value, start, end = read
        if _NOT_SECRET_BEFORE.search(text, max(0, match.start() - 20), match.start()):
            continue
        if _NUMERIC_KEYWORD.search(keyword):
            spaced = _SPACED_DIGITS.match(text, start)
            if spaced is not None and not UNIT_FOLLOWS.match(text, spaced.end()):
                yield SecretHit("password", start, spaced.end())
                continue
            digits = sum(ch.isdigit() for ch in value)
            if 3 <= digits <= 12 and digits >= len(value) - 2 and not UNIT_FOLLOWS.match(text, end):
                yield SecretHit("password", start, end)
            continue
        if len(value) >= 6 and _chosen(value) and not is_placeholder(value) \
                and not describes_rather_than_gives(value, text[end:end + 24]):
            yield SecretHit("password", start, end)




def _chosen(value: str) -> bool:
    """A value a person made up: letters with digits or symbols (not a version, a date, a URL)."""
    letters = sum(ch.isalpha() for ch in value)
    digits = sum(ch.isdigit() for ch in value)
    symbols = sum(not ch.isalnum() for ch in value)
    if not letters or "://" in value or value.count(".") >= 2 or "@" in value[1:-1]:
        return False
    return digits >= 1 and (symbols >= 1 or digits >= 2 or letters >= 4)


# The credential said later in the sentence: "the VPN password hasn't changed, it's still X".
_CLAUSE_KEYWORD = re.compile(
    r"(?i)(?<![A-Za-z0-9_\-])(?:pass\s?words?|passwd|pwd|pw|pass\s?phrase|pass\s?code|passwort|"
    r"mot\s+de\s+passe|contrase(?:ñ|n)a|senha|wachtwoord|wi-?fi\s+key)(?![A-Za-z0-9_\-])"
)
_SENTENCE_END = re.compile(r"[.!?\n](?:\s|$)")


# A quoted value right after the keyword or after the clause's verb: "use passphrase 'a b c d'",
# "the password we agreed on is 'bananas-in-pajamas'".
_QUOTED_LATER = re.compile(r"""^(?:\s*|[^.!?\n"'“‘]{0,60}?(?<![A-Za-z])(?:is|was|=|:)\s*)(?=["'“‘])""", re.I)


# "... is my dog's name: Biscuit": the value named by what it is, then given.
_HINT_THEN_VALUE = re.compile(r"(?i)^\s*(?:is|was|'s|’s)\s+(?:my|our|his|her|their|the)\s+[^:：.!?\n]{1,40}$")
_HINT_THEN_DIGITS = re.compile(
    r"(?i)\s*(?:for|to|on|of)?[\w'’ ]{0,30}?\s*(?:is|was|'s|’s)\s+(?:my|our|his|her|their)\s+"
    r"(?!(?:same|usual|old|new|like|as)\b)(?:[A-Za-z'’]+\s+){1,3}(?P<value>\S*\d\S*?)[.!]?\s*$"
)
# The sentence's last word after a colon, when it is the only word there.
_COLON_LAST_WORD = re.compile(r"""[:：]\s*["'“‘]?(?P<value>[^\s"'”’:：]{3,40}?)["'”’]?[.!]?\s*$""")


def _sentence_hits(text: str) -> Iterator[SecretHit]:
    for match in _CLAUSE_KEYWORD.finditer(text):
        end_match = _SENTENCE_END.search(text, match.end())
        stop = end_match.start() if end_match else len(text)
        dated = _HINT_THEN_DIGITS.match(text, match.end(), stop)
        if dated is not None and not is_placeholder(dated.group("value")):
            # "the password to my laptop is my birthday 12/04/1988": the hint, then the value.
            yield SecretHit("password", dated.start("value"), dated.end("value"))
        last = _COLON_LAST_WORD.search(text, match.end(), stop)
        if last is not None and _HINT_THEN_VALUE.match(text[match.end():last.start()]):
            value = last.group("value")
            if not describes_rather_than_gives(value, "") and not is_placeholder(value):
                # "my password is my dog's name: Biscuit" gives the value after the hint.
                yield SecretHit("password", last.start("value"), last.end("value"))
        quoted = _QUOTED_LATER.match(text[match.end():stop])
        if quoted is not None:
            read = value_at(text, match.end() + quoted.end())
            if read is not None and _quoted_credential(read[0], "phrase" in match.group().lower()) \
                    and not _EXAMPLE_AFTER.match(text, read[2] + 1):
                yield SecretHit("password", read[1], read[2])
        for word in re.finditer(r"\S+", text[match.end():stop]):
            value = word.group().strip(TRAILING + "\"'“‘«„(")
            if len(value) >= 6 and _chosen(value) and _strong_password(value) and not is_placeholder(value):
                start = match.end() + word.start() + word.group().find(value)
                yield SecretHit("password", start, start + len(value))


# "'four random words' is an example from the guide", "'Password1!' is a bad password".
_EXAMPLE_AFTER = re.compile(
    r"(?i)\s*(?:is|was|are|as)\s+(?:an?\s+|the\s+)?(?:example|sample|illustration|bad|weak|common|terrible|"
    r"classic|typical)\b|\s*\(?(?:e\.g\.|for example|for instance)"
)


def _quoted_credential(value: str, phrase: bool) -> bool:
    """A quoted password is one word that looks chosen; a quoted passphrase may be several plain
    words. "the password field says 'Enter your password'" quotes a label, not a value."""
    if is_placeholder(value) or describes_rather_than_gives(value, ""):
        return False
    words = value.split()
    if phrase and 3 <= len(words) <= 12:
        return value.lower().split()[0] not in _PASSPHRASE_STOP
    return len(words) == 1 and len(value) >= 4 and looks_like_password(value)


def _strong_password(value: str) -> bool:
    """A symbol with letters and digits ("copper_6667"), or digits between letters ("Kittens4ever"),
    or mixed case and digits that is not a name with a number ("Xk9vTq22", not "iPhone15")."""
    if not any(ch.isdigit() for ch in value) or not any(ch.isalpha() for ch in value):
        return False
    if any(not ch.isalnum() for ch in value):
        return True
    if _DIGIT_INSIDE.search(value):
        return True
    has_upper = any(ch.isupper() for ch in value)
    has_lower = any(ch.islower() for ch in value)
    return has_upper and has_lower and not _NAME_WITH_NUMBER.fullmatch(value)


_DIGIT_INSIDE = re.compile(r"[A-Za-z]{2,}\d+[A-Za-z]{2,}")
_NAME_WITH_NUMBER = re.compile(r"[a-z]?[A-Z]?[a-z]+\d+|[A-Z]+\d+[a-z]?|\d+[A-Z]?[a-z]+")


def _phrase_hits(text: str) -> Iterator[SecretHit]:
    for pattern in (_SET_TO,):
        for match in pattern.finditer(text):
            read = value_at(text, match.end())
            if read is None:
                continue
            value, start, end = read
            if not describes_rather_than_gives(value, text[end:end + 24]) and not is_placeholder(value):
                yield SecretHit("password", start, end)
    for match in _USE_AS.finditer(text):
        value = match.group("value").strip(TRAILING + "\"'“‘«„")
        if len(value) >= 3 and not describes_rather_than_gives(value, "") and not is_placeholder(value):
            yield SecretHit("password", match.start("value"), match.end("value"))
    for match in _REVERSED.finditer(text):
        before = _WORD_BEFORE.search(text, max(0, match.start() - 80), match.start())
        if before is None:
            continue
        value = before.group().strip(TRAILING + "\"'“‘«„")
        if len(value) < 3 or describes_rather_than_gives(value, "") or is_placeholder(value):
            continue
        if looks_like_password(value) or _is_quoted(text, before.start() + 1):
            # Only chosen-looking values: "That is my password", "Sunday is the code" are prose.
            yield SecretHit("password", before.start(), before.end())


def _pair_hits(text: str) -> Iterator[SecretHit]:
    for match in _LOGIN_PAIR.finditer(text):
        value = match.group("value").rstrip(TRAILING)
        chosen = _chosen(value) or (looks_like_password(value) and any(not ch.isalnum() and ch != "_" for ch in value))
        if not is_placeholder(value) and chosen and not describes_rather_than_gives(value, ""):
            yield SecretHit("password", match.start("value"), match.start("value") + len(value))
    for match in _OPENS_WITH.finditer(text):
        yield SecretHit("password", match.start("value"), match.end("value"))


def _user_password_hits(text: str) -> Iterator[SecretHit]:
    for match in _USER_PASSWORD.finditer(text):
        value = match.group("value").rstrip(".,;:!?)]}")
        word_start = max(text.rfind(" ", 0, match.start()), text.rfind("\n", 0, match.start())) + 1
        if "://" in text[word_start:match.end()] or text.startswith("www.", word_start):
            continue  # a URL's path ("youtube.com/watch?v=dQw4w9WgXcQ") is no user and password
        separator = text[match.end("user"):match.start("value")]
        if separator in ("/", "|"):
            word_end = next((i for i in range(match.end(), len(text)) if text[i].isspace()), len(text))
            word = text[word_start:word_end]
            if word.count("/") + word.count("|") > 1 or len(word) > 64 or _BASE64_WORD.fullmatch(word):
                continue  # a path or base64 ("a/b/Xy+9=..."), not "user/Passw0rd!"
        if _typed_password(value) and not is_placeholder(value):
            yield SecretHit("password", match.start("value"), match.start("value") + len(value))


def _typed_password(value: str) -> bool:
    """All four kinds of character a password policy asks for: upper, lower, digit, symbol."""
    return (any(ch.isupper() for ch in value) and any(ch.islower() for ch in value)
            and any(ch.isdigit() for ch in value) and any(ch in _PASSWORD_SYMBOLS for ch in value))


def _named_token_hits(text: str) -> Iterator[SecretHit]:
    for match in _NAMED_TOKEN.finditer(text):
        value = match.group("value").rstrip(TRAILING)
        if is_placeholder(value) or value.lower().startswith(("http://", "https://", "www.")):
            continue
        if looks_like_token(value) or _USER_PASS_PAIR.match(value):
            yield SecretHit("credential", match.start("value"), match.start("value") + len(value))


# Substrings of the lower-cased text without which a family cannot match: cheap gates, since a
# case-insensitive alternation costs far more per character than `in` on the lowered text.
PASSWORD_CUES = (
    "pass", "pwd", "pw", "wort", "mot de", "contrase", "senha", "wachtwoord", "parola", "hasło", "haslo",
    "lösen", "losen", "salasana", "adgangskode", "пароль", "密码", "密碼", "パスワード", "비밀번호", "비번", "암호",
    "sandi", "fi key", "fi code", "wlan key", "network key", "wpa", "schlüssel", "schluessel", "clé", "cle ",
    "clave", "chiave", "w0rd", "55w", "$$w", "@ssw", "s5w", "口令", "ifre", "पासवर्ड", "कूटशब्द", "مرور",
    "كلمة السر", "الرقم السري",
)
CODE_CUES = ("pin", "code", "combination", "combo", "otp", "cvv", "cvc", "csc", "safeword", "safe word",
             "answer", "secret word", "secret phrase", "key", "pattern")
PAIR_CUES = ("login", "log-in", "sign-in", "sign in", "signin", "cred", "account", "opens with", "unlocks with",
             "disarms with", "open with")
TOKEN_CUES = ("key", "secret", "token", "auth", "cred", "session", "sas", "connection", "recovery")


def find(text: str, lowered: str) -> Iterator[SecretHit]:
    password = any(cue in lowered for cue in PASSWORD_CUES)
    if password or any(cue in lowered for cue in CODE_CUES):
        yield from _stated_hits(text)
        yield from _part_hits(text)
        yield from _bare_hits(text)
        yield from _phrase_hits(text)
    if any(cue in lowered for cue in PAIR_CUES):
        yield from _pair_hits(text)
    if any(cue in lowered for cue in logins.CUES):
        yield from logins.find(text)
    if "/" in text or "|" in text or "@" in text:
        yield from _user_password_hits(text)
    if password:
        yield from _sentence_hits(text)
    if any(cue in lowered for cue in TOKEN_CUES):
        yield from _named_token_hits(text)
