"""Judging a candidate value once a rule has found one: is it a real credential, a placeholder
(`<your-api-key>`, `${API_KEY}`, `xxxx`, `sk-...`), or ordinary words (`the password is wrong`)?

Shared by the assignment, prose and token rules so that they agree on what a value is.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import pairwise

# Opening quote -> closing quote, in the scripts people type: a quoted value is read whole.
QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "«": "»", "„": "“", "「": "」"}

# Documented defaults and template markers: an example of where a secret goes, not a secret.
# "changeme" is one: it is what a template ships with, and refusing it would refuse every
# setup guide; a user's real password that happens to be "changeme" is the rare loss.
PLACEHOLDER_WORDS = frozenset(
    """changeme change-me change_me placeholder example redacted dummy sample todo tbd fixme
    null none nil undefined empty true false yes no xxx secret_here key_here token_here
    your_api_key your-api-key yourapikey your_token your-token your_password your-password
    yourpassword your_secret your-secret mypassword my_password string str text int integer bool boolean
    required optional hidden masked env var""".split()
)
_TEMPLATE = re.compile(
    r"""^(?:<[^<>]*>?|\{\{?[^{}]*\}?\}?|\$\{[^}]*\}?|\$\(?[A-Za-z_][\w]*\)?|%\(?[\w]*\)?s|\[[^\]]*\]|%[A-Z_]+%|
        (?:your|insert|enter|put|add|paste|replace)[_\-.\s]?(?:[a-z]+[_\-.\s]?)?
        (?:api[_\-.\s]?)?(?:key|token|secret|password|pass|pwd|passphrase|value|id|name|user|username|
        db|database|host|pin|code|credentials?)(?:[_\-.\s]?here)?|
        [\w\-]*[_\-](?:here|goes[_\-]here))$""",
    re.IGNORECASE | re.VERBOSE,
)
_FILLER = re.compile(r"^(?:[A-Za-z0-9]{1,12}[_\-.]){0,3}(?:x+|X+|\*+|•+|\.+|…+|#+|-+|_+)(?:\.\.\.|…)?$")
_REFERENCE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\(|os\.(?:environ|getenv)|process\.env|env\(|getenv|System\.getenv|ENV\[|vault:|secretsmanager|ssm:|"
    r"arn:aws|file:|@Value|settings\.|config\.|secrets\.)",
    re.IGNORECASE,
)

# Words that follow "the password is" without being one: "my password is not working",
# "the PIN is stored in the app". Checked against the lower-cased first word of the value.
NOT_A_VALUE = frozenset(
    """a an the not too very so quite really also just still now then already always never
    wrong incorrect invalid expired expiring required missing same different weak strong long short
    secure insecure stored saved changed reset set needed forgotten lost new old being case
    sensitive case-sensitive managed hidden encrypted hashed protected empty blank my your our their
    his her its it in on at for of to from with by as into onto under inside behind near that this
    these those there here ok okay fine stolen compromised leaked safe unsafe easy hard simple
    complex complicated correct right good bad great terrible awful same what whatever which who
    whom whose where when why how something anything nothing everything someone somebody
    written taped kept located listed shown printed sent emailed texted shared noted mentioned
    available valid active inactive locked unlocked disabled enabled working broken ready done
    due about like unknown private personal public confidential important necessary mandatory
    optional four five six seven eight nine ten twelve digits characters chars letters numbers
    symbols minimum maximum least most only exactly either neither both all any some more less
    please thanks thank sorry yes no maybe probably definitely expires expire temporary temp one
    two three none null generated random automatic auto default usual standard normal typical
    obvious unique again gone whatever's ask see check contact call refer""".split()
    # The same small words in the languages the prose rules read: "la clé wifi est sur le routeur",
    # "das WLAN-Passwort ist auf dem Router", "la contraseña está en el cajón".
    + """sur sous dans derrière derriere chez au aux à en le la les un une pas toujours encore
    auf unter hinter neben im am in an der die das ein eine nicht noch immer
    sobre bajo debajo detrás detras en el los las un una no está esta
    sul sulla sotto dietro nel nella il lo gli non ancora""".split()
)
_UNIT_AFTER = re.compile(
    r"^\s*(?:digits?|characters?|chars?|letters?|numbers?|symbols?|words?|long|or\s+more|minimum|max(?:imum)?|"
    r"min|at\s+least|days?|weeks?|months?|years?|hours?|minutes?|times?)\b",
    re.IGNORECASE,
)
# "PINは4桁です", "密码是6位数字", "비밀번호는 8자리": a count of digits or characters in Chinese,
# Japanese or Korean, where no space separates the number from its counter.
_CJK_COUNT = re.compile(r"^\d{1,3}\s*(?:桁|文字|字|位|个|個|자리|글자|자|개)")
_PREPOSITION_AFTER = re.compile(r"^\s*(?:in|on|at|by|to|with|under|inside|into|behind|from|for|via|through)\b",
                                re.IGNORECASE)


# "example" as a word of its own in a value, not glued to letters or digits of a key.
_EXAMPLE_WORD = re.compile(r"(?i)(?<![A-Za-z0-9])example")


def is_placeholder(value: str) -> bool:
    """A template or documentation stand-in rather than a credential."""
    bare = value.strip("\"'`“”‘’«»„")
    if not bare:
        return True
    lower = bare.lower()
    if lower in PLACEHOLDER_WORDS or "redacted" in lower:
        return True
    if _EXAMPLE_WORD.search(bare) and (len(lower) >= 16 or (lower.strip("_-.").startswith("example") and
                                                         not any(ch.isdigit() for ch in lower))):
        # "your_example_token_here", "example_password"; "example123" is a chosen password. The
        # AWS documentation keys (AKIAIOSFODNN7EXAMPLE) glue the word to a real key's shape: people
        # paste them as if real and a corpus of secrets uses them, so they are refused like keys.
        return True
    if lower.endswith(("...", "…")) and len(bare.rstrip(".…")) <= 12:
        return True  # "sk-...", "ghp_…": a prefix shown to say which kind, not the key
    if _TEMPLATE.match(bare) or _FILLER.match(bare) or _REFERENCE.match(bare):
        return True
    return bare.isalpha() and len(bare) >= 3 and len(set(lower)) == 1  # "aaaa"


def describes_rather_than_gives(value: str, after: str) -> bool:
    """True when `value` reads as part of a sentence about the credential: "the password is stored
    in the app", "the PIN is 4 digits", "the password is wrong"."""
    lower = value.lower().rstrip(".,;:!?)")
    if lower in NOT_A_VALUE or not lower:
        return True
    if lower.startswith(("http://", "https://", "www.")):
        return True
    if _UNIT_AFTER.match(after) or _CJK_COUNT.match(value):
        return True
    # "is stored in ...", "is kept under ...", "is expiring on ...": a participle then a place.
    return lower.isalpha() and lower.endswith(("ed", "ing")) and bool(_PREPOSITION_AFTER.match(after))


def looks_like_token(value: str) -> bool:
    """A machine-made credential rather than a word: mixed letters and digits, or long with symbols."""
    letters = sum(ch.isalpha() for ch in value)
    digits = sum(ch.isdigit() for ch in value)
    if len(value) >= 24 and letters and (digits or any(ch in "_-+/=.~" for ch in value)):
        return True
    if len(value) >= 6 and letters and digits:
        return True
    # A long run of random-looking letters: case flips inside the word ("kQvTzWnRpY...").
    return len(value) >= 16 and letters == len(value) and _case_flips(value) >= len(value) // 4


def looks_like_password(value: str) -> bool:
    """Something a person picks as a password, said after a weak keyword ("the pass is ...",
    "the key is ..."): a digit, a symbol or a case change inside the word; plain words are not."""
    bare = value.strip("\"'`“”‘’«»„")
    if len(bare) < 4:
        return False
    has_digit = any(ch.isdigit() for ch in bare)
    has_symbol = any(not ch.isalnum() for ch in bare.rstrip(".,;:!?"))
    inner_case = any(ch.isupper() for ch in bare[1:]) and any(ch.islower() for ch in bare)
    return has_digit or has_symbol or inner_case


def _case_flips(value: str) -> int:
    return sum(1 for a, b in pairwise(value) if a.isupper() != b.isupper())


def shannon_entropy(value: str) -> float:
    if not value:
        return 0.0
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


__all__ = [
    "NOT_A_VALUE",
    "PLACEHOLDER_WORDS",
    "QUOTES",
    "describes_rather_than_gives",
    "is_placeholder",
    "looks_like_password",
    "looks_like_token",
    "shannon_entropy",
]


# What ends a value said in a sentence, not part of it.
TRAILING = ".,;:!?)]}\"'`”’»"
# A count, not a code: "the PIN is 4 digits".
UNIT_FOLLOWS = re.compile(r"\s*(?:digits?|characters?|chars?|times|attempts|tries|minutes?|seconds?)\b", re.I)


def value_at(text: str, start: int) -> tuple[str, int, int] | None:
    """The credential right after a connector: a quoted phrase, or one word."""
    if start >= len(text):
        return None
    opening = text[start]
    closing = QUOTES.get(opening)
    if closing is not None:
        end = text.find(closing, start + 1)
        if end != -1 and end - start <= 200:
            return text[start + 1:end], start + 1, end
        start += 1
    end = start
    while end < len(text) and not text[end].isspace():
        end += 1
    word = text[start:end].rstrip(TRAILING)
    if not word:
        return None
    return word, start, start + len(word)
