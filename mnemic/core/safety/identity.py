"""Numbers that identify a person or an account: payment cards (Luhn, any separator: spaces,
dashes, dots; a tab or line break between printed groups; commas, slashes, pipes, colons, quotes
between printed groups, or between any groups where the text says card), IBANs (mod-97), US SSNs, UK NI numbers,
Canadian SINs (Luhn), and identity, tax and account numbers named by their context ("my passport
number is X1234567").

Checksums and issuer prefixes let order numbers, IMEIs, ISBNs, phone numbers and dates pass.
"""

from __future__ import annotations

import itertools
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
# A card's groups split by other marks, or by a mark between spaces: "4539,1488,0343,6467",
# "4539 / 1488 / 0343 / 6467", "3782:822463:10005", a JSON list of the groups. Marks also separate
# lists of numbers ("4, 8, 15, 16, 23, 42", "40.712776, -74.005974", "1,234,567", "10:30, 11:45"),
# so the groups must be printed as a card's are (4-4-4-4[-3], 4-6-5, 4-6-4, 4-3-3-3: equal groups of
# four or more, the last shorter), or the text must say card, and the digits pass Luhn and an issuer
# prefix as always. Spaces, dashes and dots alone are `_CARD`'s to judge.
_MARKED_GROUPS = re.compile(
    r"(?<![\w.\-])\d{1,8}(?:[ \u00a0\u2009,;:|/\\\-.\u2013\u2014_'\"+*~#]{1,5}\d{1,8}){1,18}(?![\w])")
_PLAIN_SEPARATOR = re.compile(r"[ \-.\u00a0\u2009\u2013/_]{1,2}")
_PRINTED = frozenset({(4, 6, 5), (4, 6, 4), (4, 3, 3, 3)})
_SAYS_CARD = re.compile(
    r"(?i)(?<![a-z])(?:card|visa|master\s?card|amex|american\s+express|discover|maestro|jcb|diners|union\s?pay|"
    r"credit|debit|kreditkarte|karte|carte|tarjeta|carta|cartão)(?![a-z])")
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


def _printed_groups(lengths: list[int]) -> bool:
    """Digit groups as a card is printed: equal groups of four or more with the last one shorter
    or equal (4-4-4-4, 4-4-4-4-3, 4-4-4-1, 8-8), or Amex's, Diners' or a 13-digit Visa's grouping."""
    first = lengths[0]
    return tuple(lengths) in _PRINTED or (
        first >= 4 and all(n == first for n in lengths[:-1]) and 1 <= lengths[-1] <= first)


def _marked_card_hits(text: str) -> Iterator[SecretHit]:
    says_card: bool | None = None
    for match in _MARKED_GROUPS.finditer(text):
        written = match.group()
        groups = [(m.start(), m.end()) for m in re.finditer(r"\d+", written)]
        separators = [written[a[1]:b[0]] for a, b in itertools.pairwise(groups)]
        if all(_PLAIN_SEPARATOR.fullmatch(sep) for sep in separators) or len(written) - sum(map(len, separators)) < 13:
            continue  # spaces, dashes, dots: `_CARD` judged it
        lengths = [end - start for start, end in groups]
        if says_card is None:
            says_card = _SAYS_CARD.search(text) is not None
        for first, last in _card_runs(lengths, says_card):
            runs = [written[a:b] for a, b in groups[first:last + 1]]
            if _is_card("".join(runs)) and not all(len(run) == 4 and run[:2] in ("19", "20") for run in runs):
                yield SecretHit("payment_card", match.start() + groups[first][0], match.start() + groups[last][1])
                break


def _card_runs(lengths: list[int], says_card: bool) -> Iterator[tuple[int, int]]:
    """The runs of groups (first, last) that may be a card, in `lengths` of digit groups split by marks.
    Printed groups from the first, whole or but for short groups after them (an expiry, a CVV:
    "4539,1488,0343,6467,12,27,123"). Where the text says card, also any grouping read whole ("my
    card: 45,39,14,88,...") and printed groups anywhere ("card 12/27, 4539,1488,0343,6467, 1234").
    Without that word, trying groups in front or dropping longer ones would try many runs of a list
    of numbers, each a one-in-twenty chance of passing Luhn and an issuer prefix."""
    for last in _printed_ends(lengths, 0):
        if all(n <= 3 for n in lengths[last + 1:]):
            yield 0, last
    if not says_card:
        return
    if 13 <= sum(lengths) <= 19:
        yield 0, len(lengths) - 1
    for first in range(len(lengths)):
        yield from ((first, last) for last in _printed_ends(lengths, first))


def _printed_ends(lengths: list[int], first: int) -> Iterator[int]:
    """Each `last` such that the groups first..last hold 13-19 digits printed as a card's are."""
    total = 0
    for last in range(first, len(lengths)):
        total += lengths[last]
        if total > 19:
            return
        if total >= 13 and _printed_groups(lengths[first:last + 1]):
            yield last


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
        yield from _marked_card_hits(text)
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
