"""Numbers that identify a person or an account: payment cards (Luhn, any separator: spaces,
dashes, dots; a tab or line break between printed groups), IBANs (mod-97), US SSNs, UK NI numbers,
Canadian SINs (Luhn), and identity, tax and account numbers named by their context ("my passport
number is X1234567").

Checksums and issuer prefixes let order numbers, IMEIs, ISBNs, phone numbers and dates pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .checksums import IBAN_LENGTHS, iban_valid, luhn_valid
from .hits import SecretHit

_SEPARATOR = r"[ \-.\u00a0\u2009\u2013/_]"
_CARD = re.compile(rf"(?<![\w.\-])\d(?:{_SEPARATOR}{{0,2}}\d){{12,18}}(?![\w])")
# A card's printed groups split by a tab or a line break ("4111 1111\n1111 1111", a form pasted
# cell by cell). Only the printed groupings count (4-4-4-4[-3], Amex 4-6-5, Diners 4-6-4): a column
# of numbers one per line is not a card, and a column of years is excluded outright.
_BREAK = r"(?:[ \t]*[\t\n][ \t]*|[ ]|\r\n)"
_BROKEN_CARD = re.compile(
    rf"(?<![\w.\-])\d{{4}}(?:(?:{_BREAK}\d{{4}}){{3}}(?:{_BREAK}\d{{3}})?|{_BREAK}\d{{6}}{_BREAK}\d{{4,5}})(?![\w])")
_ALL_YEARS = re.compile(r"(?:(?:19|20)\d\d\s*)+")
_US_SSN = re.compile(r"(?<![\w\-])(?!000|666|9\d\d)\d{3}([\- .])(?!00)\d{2}\1(?!0000)\d{4}(?![\w\-])")
_UK_NINO = re.compile(
    r"\b(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b"
)
_SIN = re.compile(r"(?<![\w\-])\d{3}([\- ])\d{3}\1\d{3}(?![\w\-])")
_IBAN_START = re.compile(r"(?i)\b[A-Z]{2}\d{2}(?=[ ]?[A-Z0-9])")
_ID_CONTEXT = re.compile(
    r"(?i)\b(?:ssn|social\s+security(?:\s+number|\s+no\.?|\s+#)?|sin|social\s+insurance\s+number|"
    r"national\s+(?:id|identity|identification|insurance)(?:\s+(?:card\s+)?(?:number|no\.?|#))?|ni\s+number|nino|"
    r"passport(?:\s+(?:number|no\.?|#))?|driver'?s?\s+licen[cs]e(?:\s+(?:number|no\.?|#))?|"
    r"driving\s+licen[cs]e(?:\s+(?:number|no\.?|#))?|tax\s+(?:id|identification\s+number|file\s+number|number)|"
    r"tin|itin|ein|aadhaa?r(?:\s+(?:number|no\.?|#))?|pan(?:\s+(?:card|number))+|nhs\s+number|"
    r"medicare\s+number|health\s+insurance\s+number|personnummer|bsn|dni|nie|nif|codice\s+fiscale|cpf|curp|rut|"
    r"steuer[\- ]?id|steuernummer|id\s+(?:card\s+)?(?:number|no\.?|#)|identity\s+(?:card\s+)?number|"
    r"personal\s+(?:id|identity|identification)\s+number|citizen\s+(?:id|number)|voter\s+id|"
    r"residence\s+permit\s+number|green\s+card\s+number|alien\s+(?:registration\s+)?number|"
    r"(?:bank\s+)?account\s+(?:number|no\.?|#)|routing\s+number|sort\s+code|bsb)\b"
    r"[^\n\d]{0,24}?(?<![A-Za-z0-9])"
    r"(?P<value>[A-Z0-9][A-Z0-9.\-/]*\d[A-Z0-9.\-/]*(?:[ ][A-Z0-9.\-/]*\d[A-Z0-9.\-/]*){0,4})"
)
# "account 000123456789", "acct #: 4402-1193-88": an account named without "number", so only a
# long run of digits counts ("account 2023 review" is a year).
_BARE_ACCOUNT = re.compile(r"(?i)\b(?:bank\s+)?(?:account|acct|konto|compte|cuenta|conto)\b\s*(?:#|no\.?)?\s*:?\s*"
                           r"(?P<value>\d(?:[\d\- ]{6,22})\d)(?![\d\-])")
_YEARS = re.compile(r"(?:19|20)\d\d(?:\s*[-– ]\s*(?:19|20)\d\d)+")
_PARTIAL = re.compile(r"(?i)\b(?:end(?:s|ed|ing)?\s+(?:in|with)|last\s+(?:four|4|few|two|2|three|3)\b)")
_ID_TRIGGERS = (
    "ssn", "social", "sin", "national", "ni number", "nino", "passport", "licen", "tax", "tin", "ein",
    "aadha", "pan", "nhs", "medicare", "insurance", "personnummer", "bsn", "dni", "nie", "nif", "codice",
    "cpf", "curp", "rut", "steuer", "id", "identity", "citizen", "voter", "permit", "green card", "alien",
    "account", "routing", "sort code", "bsb",
)


def _card_issuer(digits: str) -> bool:
    """An issuer prefix that fits the length: Visa, Mastercard, Amex, Discover, JCB, Diners,
    UnionPay, Maestro, Mir. IMEIs (15 digits, Luhn, often 35/86...) and ISBNs (978...) fail it."""
    length = len(digits)
    if length == 13:
        return digits[0] == "4"
    if length == 14:
        return digits[:2] in {"30", "36", "38", "39"}
    if length == 15:
        return digits[:2] in {"34", "37"}
    return digits[0] in "23456"


def _card_hits(text: str) -> Iterator[SecretHit]:
    for match in _CARD.finditer(text):
        if _is_card(match.group()):
            yield SecretHit("payment_card", match.start(), match.end())
    if "\t" in text or "\n" in text:
        for match in _BROKEN_CARD.finditer(text):
            if not _ALL_YEARS.fullmatch(match.group()) and _is_card(match.group()):
                yield SecretHit("payment_card", match.start(), match.end())


def _is_card(written: str) -> bool:
    digits = "".join(ch for ch in written if ch.isdigit())
    return 13 <= len(digits) <= 19 and _card_issuer(digits) and luhn_valid(digits)


def _iban_hits(text: str) -> Iterable[SecretHit]:
    for match in _IBAN_START.finditer(text):
        start = match.start()
        chars: list[str] = []
        ends: list[int] = []
        pos = start
        # Gather up to 34 alphanumerics, allowing single spaces between groups.
        while pos < len(text) and len(chars) < 34:
            ch = text[pos]
            if ch.isalnum() and ch.isascii():
                chars.append(ch.upper())
                ends.append(pos + 1)
            elif not (ch == " " and pos + 1 < len(text) and text[pos + 1].isalnum()):
                break
            pos += 1
        country = "".join(chars[:2])
        if country not in IBAN_LENGTHS and not text[start:start + 2].isupper():
            # A code outside the registry counts only as written in capitals: in lower case, such
            # a start is a hex digest or an id ("rf04dbc3…" passes mod-97 for one length in ~50).
            continue
        lengths = [IBAN_LENGTHS[country]] if country in IBAN_LENGTHS else list(range(15, 35))
        for length in lengths:
            if length <= len(chars) and iban_valid("".join(chars[:length])):
                end = ends[length - 1]
                if end < len(text) and text[end].isalnum():
                    continue
                yield SecretHit("iban", start, end)
                break


def find(text: str, lowered: str, digits: int) -> Iterator[SecretHit]:
    if digits >= 13:
        yield from _card_hits(text)
    if digits >= 8:
        yield from _iban_hits(text)
    if digits >= 9:
        for match in _US_SSN.finditer(text):
            yield SecretHit("national_id", match.start(), match.end())
        for match in _SIN.finditer(text):
            if luhn_valid(re.sub(r"\D", "", match.group())):
                yield SecretHit("national_id", match.start(), match.end())
    if digits >= 6:
        for match in _UK_NINO.finditer(text):
            yield SecretHit("national_id", match.start(), match.end())
    if digits >= 8 and any(word in lowered for word in ("account", "acct", "konto", "compte", "cuenta", "conto")):
        for match in _BARE_ACCOUNT.finditer(text):
            value = match.group("value")
            if _YEARS.fullmatch(value):
                continue  # "the account 2023-2024 budget"
            if sum(ch.isdigit() for ch in value) >= 8 and not _PARTIAL.search(text, max(0, match.start() - 30),
                                                                              match.start("value")):
                yield SecretHit("national_id", match.start("value"), match.end("value"))
    if digits >= 4 and any(trigger in lowered for trigger in _ID_TRIGGERS):
        for match in _ID_CONTEXT.finditer(text):
            value = match.group("value").rstrip(" .-/")
            if _PARTIAL.search(text, max(0, match.start() - 30), match.start("value")):
                continue  # "the account number ends in 4242": the last digits name it, they give nothing away
            if sum(ch.isdigit() for ch in value) >= 4:
                start = match.start("value")
                yield SecretHit("national_id", start, start + len(value))
